"""Reading a list literal (or an unbind) at a negative index gave a zero gradient: the read's
cotangent was filed under position -1, which no list item has. Found by the gradient fuzzer
(``l2 = [x0 / (1.0 + x0 * x0)]; ... l2[-1]``). Reading an item appended after the list was made
(``outs.append(h)`` in a loop, then ``outs[-1]`` or ``outs[19]``) lost its gradient the same way;
such reads are now differentiated (the backward keeps the item cotangents in step with the
list)."""

import numpy as np
import pytest

from script import Tensor, ops, script, vjp
from tests.gradcheck import check_vjp


def last_of_literal(x: Tensor, y: Tensor) -> Tensor:
    items = [x * 2.0, y * 3.0]
    return items[-1] + items[-2] * items[0]


def last_row(x: Tensor) -> Tensor:
    rows = ops.unbind(x, 0)
    return rows[-1] * rows[-3]


def appended_then_read(x: Tensor) -> Tensor:
    items = [x]
    items.append(x * 2.0)
    return items[-1]


def test_negative_reads_of_a_literal():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(4), rng.standard_normal(4)
    out, back = vjp(script(last_of_literal), x, y)
    dx, dy = back(np.ones(4))
    np.testing.assert_allclose(dx, 2.0 * 2.0 * x * 2.0)  # d/dx (2x * 2x) = 8x
    np.testing.assert_allclose(dy, np.full(4, 3.0))


def test_negative_reads_of_an_unbind():
    x = np.random.default_rng(1).standard_normal((3, 2))
    out, back = vjp(script(last_row), x)
    (dx,) = back(np.ones(2))
    want = np.zeros((3, 2))
    want[2], want[0] = x[0], x[2]
    np.testing.assert_allclose(dx, want)


def last_step(x: Tensor, w: Tensor) -> Tensor:
    outs = [x[0] * 0.0]
    h = x[0] * 0.0
    for t in range(20):
        h = np.tanh(x[t] + h @ w)
        outs.append(h)
    return outs[0] + outs[20]


@pytest.mark.parametrize("fn", [appended_then_read, last_step])
def test_reading_an_appended_item_is_differentiated(fn):
    rng = np.random.default_rng(2)
    if fn is appended_then_read:
        args = (rng.standard_normal(3),)
    else:
        args = (rng.standard_normal((20, 2, 3)), 0.5 * rng.standard_normal((3, 3)))
    check_vjp(script(fn), args)
