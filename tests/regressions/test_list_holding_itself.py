"""``StorageClasses.unite`` recursed without end on a location that is its own items (an
internal compiler error): ``self.v = v`` then ``self.w = [v]`` puts ``v`` and the list holding
it among one object's fields, so the list's items are the list's own location; merging two
locations made a new items location for the merged one, which took the old one's items, which
were the merged one again."""

import numpy as np

from script import script


class Holder:
    def __init__(self):
        self.v = None
        self.w = None

    def keep(self, x):
        v = [x * 2.0]
        self.v = v
        self.w = [v]
        self.w[0].append(x + 1.0)  # through the list holding it: self.v too
        return self.v[1] + self.w[0][0]


def test_a_list_kept_beside_a_list_holding_it_compiles():
    plain, compiled = Holder(), Holder()
    x = np.arange(3.0)
    np.testing.assert_array_equal(script(Holder.keep)(compiled, x), Holder.keep(plain, x))
    assert compiled.w[0] is compiled.v and len(compiled.v) == len(plain.v) == 2
    for a, b in zip(plain.v, compiled.v):
        np.testing.assert_array_equal(b, a)
