"""A list built from a literal used to take the literal's exact tensor type, so appending any other
tensor was rejected, although Python (and the language's `List[Tensor]`) accepts it."""

import numpy as np

from script import Tensor, ops, script


def append_other_shape(x: Tensor) -> Tensor:
    items = [np.zeros((2, 3))]
    items.append(x)
    return ops.stack(items).sum(axis=0)


def test_append_to_a_list_literal_of_another_tensor_type():
    x = np.ones((2, 3))
    np.testing.assert_array_equal(script(append_other_shape)(x), append_other_shape(x))
