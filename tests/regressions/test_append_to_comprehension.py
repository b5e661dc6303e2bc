"""A list comprehension took its items' exact tensor type, so appending a tensor of another shape
to the list it made was rejected ("cannot add a Tensor to a list of Tensor(4)"), although Python
accepts it and a list literal of the same items accepts it too."""

import numpy as np

from script import Tensor, script


def append_other_shape(a: Tensor, x0: Tensor) -> Tensor:
    items = [np.ones(4) * float(k + 1) for k in range(2)]
    items.append(x0)
    return a * items[0] + items[1] * 2.0 + items[2].sum()


def test_append_to_a_comprehension_of_another_tensor_type():
    rng = np.random.default_rng(0)
    a, x0 = rng.standard_normal(4), rng.standard_normal((2, 3))
    np.testing.assert_allclose(script(append_other_shape)(a, x0), append_other_shape(a, x0),
                               rtol=1e-12)
