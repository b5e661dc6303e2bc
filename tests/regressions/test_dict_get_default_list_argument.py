"""Shape propagation specialized a list argument's items to the shapes passed when every use only
read it, and counted ``d.get(k, xs)`` as a read: the get returns ``xs`` itself when ``k`` is
missing, so appending to its result appends to ``xs``, and ``xs[2].shape[0]`` was folded to the
shape of the items passed (2) instead of the appended one (5). The registry now says the default
may be returned (``ALIASES``), so ``xs`` keeps its declared type."""

from typing import Dict, List

import numpy as np

from script import Tensor, script


def append_through_get(d: Dict[str, List[Tensor]], xs: List[Tensor], y: Tensor) -> int:
    out = d.get("missing", xs)
    out.append(y)
    return xs[2].shape[0]


def test_append_through_dict_get_default_reaches_the_argument():
    xs = [np.ones((2, 3)), np.ones((2, 3))]
    y = np.ones((5,))
    want = append_through_get({}, [a.copy() for a in xs], y)
    assert want == 5
    assert script(append_through_get)({}, [a.copy() for a in xs], y) == want
