"""Gradients at the points where max/min-like ops are not differentiable: exact ties.

The convention is documented on each op (``docs/ops.md``, from the registry) and here checked at
exact ties, through compiled ``vjp``:

- ``np.maximum(a, b)`` / ``np.minimum(a, b)``: the cotangent goes to the operand chosen; at a tie
  all of it goes to the first operand ``a``.
- ``x.max()`` / ``x.min()`` (``amax`` / ``amin``): split evenly between the tied elements.
- ``np.clip(x, lo, hi)``: at a bound ``x`` gets the cotangent (a bound only where ``x`` is strictly
  outside it).
- ``relu`` and ``abs`` at 0: zero.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np
import pytest

from ir.registry import op_def
from script import Tensor, ops, script, vjp


def grads(fn, *args, ct=None):
    out, backward = vjp(script(fn), *args)
    return backward(np.ones_like(out) if ct is None else ct)


def maximum(a: Tensor, b: Tensor) -> Tensor:
    return np.maximum(a, b)


def minimum(a: Tensor, b: Tensor) -> Tensor:
    return np.minimum(a, b)


def maximum_swapped(a: Tensor, b: Tensor) -> Tensor:
    return np.maximum(b, a)


def maximum_with_zero_first(a: Tensor) -> Tensor:
    return np.maximum(0.0, a) * 3.0


A = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 5.0]])
B = np.array([[1.0, 0.0, 4.0], [-1.0, 0.0, 2.0]])  # ties at [0, 0], [1, 0], [1, 1]
CT = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


@pytest.mark.parametrize("fn,a_wins", [(maximum, A >= B), (minimum, A <= B)])
def test_maximum_minimum_give_a_tie_to_the_first_operand(fn, a_wins):
    ga, gb = grads(fn, A, B, ct=CT)
    np.testing.assert_array_equal(ga, np.where(a_wins, CT, 0.0))
    np.testing.assert_array_equal(gb, np.where(a_wins, 0.0, CT))
    np.testing.assert_array_equal(ga + gb, CT)  # never counted twice, never lost


def test_the_first_operand_is_the_one_written_first():
    ga, gb = grads(maximum_swapped, A, B, ct=CT)  # np.maximum(b, a)
    np.testing.assert_array_equal(gb, np.where(B >= A, CT, 0.0))
    np.testing.assert_array_equal(ga, np.where(B >= A, 0.0, CT))


def test_a_constant_first_operand_takes_the_tie():
    x = np.array([-1.0, 0.0, 2.0])
    (g,) = grads(maximum_with_zero_first, x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 3.0])


def both_orders(a: Tensor, b: Tensor) -> Tensor:
    return np.maximum(a, b) + np.maximum(b, a) * 10.0 + np.minimum(b, a) * 100.0


def test_swapped_operands_are_separate_computations():
    """maximum(a, b) and maximum(b, a) are not merged as one (common subexpressions): at a tie
    each gives its own first operand the cotangent."""
    a, b = np.array([1.0, 2.0, -1.0]), np.array([1.0, 0.0, 3.0])
    ga, gb = grads(both_orders, a, b)
    np.testing.assert_array_equal(ga, [1.0, 11.0, 100.0])
    np.testing.assert_array_equal(gb, [110.0, 100.0, 11.0])


def max_both_ways(a: Tensor, b: Tensor) -> Tuple[Tensor, Tensor]:
    return np.maximum(a, b), np.maximum(b, a)


def test_maximum_keeps_numpys_signed_zero():
    """numpy gives the second operand of 0.0 and -0.0: the two orders differ in the sign."""
    a, b = np.array([0.0, -0.0]), np.array([-0.0, 0.0])
    got, want = script(max_both_ways)(a, b), max_both_ways(a, b)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


def broadcast_maximum(a: Tensor, b: Tensor) -> Tensor:
    return np.maximum(a, b)


def test_ties_with_broadcasting_sum_per_operand():
    a = np.array([[1.0, 2.0], [3.0, 2.0]])
    b = np.array([1.0, 2.0])  # ties at [0, 0], [0, 1], [1, 1]
    ga, gb = grads(broadcast_maximum, b, a)  # b is first: it takes the ties
    np.testing.assert_array_equal(ga, [1.0, 2.0])
    np.testing.assert_array_equal(gb, [[0.0, 0.0], [1.0, 0.0]])


def amax_all(x: Tensor) -> Tensor:
    return x.max()


def amin_all(x: Tensor) -> Tensor:
    return np.min(x)


def amax_rows(x: Tensor) -> Tensor:
    return x.max(axis=1)


def amin_columns_keepdims(x: Tensor) -> Tensor:
    return x.min(axis=0, keepdims=True)


X = np.array([[3.0, 1.0, 3.0], [-2.0, -2.0, 3.0], [0.5, 3.0, 3.0]])


@pytest.mark.parametrize("fn,ties", [(amax_all, X == 3.0), (amin_all, X == -2.0)])
def test_full_reductions_split_the_cotangent_evenly(fn, ties):
    (g,) = grads(fn, X, ct=np.array(6.0))
    np.testing.assert_allclose(g, np.where(ties, 6.0 / ties.sum(), 0.0), rtol=0, atol=1e-15)


def test_reductions_along_an_axis_split_per_slice():
    ct = np.array([6.0, 4.0, 10.0])
    (g,) = grads(amax_rows, X, ct=ct)
    want = np.array([[3.0, 0.0, 3.0], [0.0, 0.0, 4.0], [0.0, 5.0, 5.0]])
    np.testing.assert_allclose(g, want, rtol=0, atol=1e-15)
    ct = np.array([[1.0, 2.0, 9.0]])
    (g,) = grads(amin_columns_keepdims, X, ct=ct)
    want = np.array([[0.0, 0.0, 3.0], [1.0, 2.0, 3.0], [0.0, 0.0, 3.0]])
    np.testing.assert_allclose(g, want, rtol=0, atol=1e-15)


def test_a_split_is_a_subgradient_that_sums_to_the_cotangent():
    x = np.full((2, 5), 1.5, np.float32)
    (g,) = grads(amax_all, x, ct=np.float32(1.0))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.full((2, 5), 0.1, np.float32))


def clip_const(x: Tensor) -> Tensor:
    return np.clip(x, -1.0, 2.0)


def clip_tensor_bounds(x: Tensor, lo: Tensor, hi: Tensor) -> Tensor:
    return np.clip(x, lo, hi)


def test_clip_at_its_bounds_passes_the_cotangent_to_x():
    x = np.array([-3.0, -1.0, 0.0, 2.0, 5.0])
    (g,) = grads(clip_const, x, ct=np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    np.testing.assert_array_equal(g, [0.0, 2.0, 3.0, 4.0, 0.0])


def test_clip_bounds_get_the_cotangent_only_strictly_outside():
    x = np.array([-3.0, -1.0, 0.0, 2.0, 5.0])
    lo, hi = np.full(5, -1.0), np.full(5, 2.0)
    ct = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    gx, glo, ghi = grads(clip_tensor_bounds, x, lo, hi, ct=ct)
    np.testing.assert_array_equal(gx, [0.0, 2.0, 3.0, 4.0, 0.0])
    np.testing.assert_array_equal(glo, [1.0, 0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(ghi, [0.0, 0.0, 0.0, 0.0, 5.0])


def relu_abs(x: Tensor) -> Tensor:
    return ops.relu(x) + np.abs(x) * 10.0


def test_relu_and_abs_have_zero_gradient_at_zero():
    x = np.array([-2.0, -0.0, 0.0, 3.0])
    (g,) = grads(relu_abs, x)
    np.testing.assert_array_equal(g, [-10.0, 0.0, 0.0, 11.0])


@pytest.mark.parametrize("kind,phrase", [
    ("tensor::maximum", "at a tie the gradient goes to a"),
    ("tensor::minimum", "at a tie the gradient goes to a"),
    ("tensor::amax", "split evenly between tied elements"),
    ("tensor::amin", "split evenly between tied elements"),
    ("tensor::clip", "at a bound the gradient goes to a"),
    ("tensor::relu", "gradient 0 at 0"),
    ("tensor::abs", "gradient 0 at 0"),
])
def test_the_convention_is_documented_on_the_op(kind, phrase):
    assert phrase in op_def(kind).doc
