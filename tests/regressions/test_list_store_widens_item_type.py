"""A list made with specialized items (``unbind(x, 0)``: rows of shape (3,)) and then given an
item of another shape (``append(y)`` with y of shape (5,)) kept the first items' type, so reads
of the new item were folded with the wrong shape: ``l[-1].shape[0]`` compiled to 3, eager gives
5. Shape propagation now widens a new list's item type to cover every item stored into it."""

import numpy as np

from script import Tensor, ops, script


def appended_row_width(x: Tensor, y: Tensor) -> int:
    rows = ops.unbind(x, 0)
    rows.append(y)
    return rows[-1].shape[0]


def replaced_row_sum(x: Tensor, y: Tensor) -> Tensor:
    rows = ops.unbind(x, 0)
    rows[0] = y
    rows.insert(1, y * 2.0)
    return rows[0].sum() + rows[1].sum() + rows[-1].sum()


def extended_rows(x: Tensor, y: Tensor) -> int:
    rows = ops.unbind(x, 0)
    rows.extend(ops.unbind(y, 0))
    return rows[-1].shape[0]


def test_append_of_another_shape():
    x, y = np.zeros((2, 3)), np.zeros(5)
    assert script(appended_row_width)(x, y) == appended_row_width(x, y) == 5


def test_setitem_and_insert_of_another_shape():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal(4)
    np.testing.assert_allclose(script(replaced_row_sum)(x, y), replaced_row_sum(x, y))


def test_extend_with_rows_of_another_shape():
    x, y = np.zeros((2, 3)), np.zeros((4, 7))
    assert script(extended_rows)(x, y) == extended_rows(x, y) == 7
