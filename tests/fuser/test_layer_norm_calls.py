"""``ops.layer_norm`` in scripted code, run by the native row kernels: equal to eager for every
shape, dtype and layout, bad input a SignatureError, first and second derivatives equal to
finite differences."""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np
import pytest

from script import SignatureError, Tensor, ops, script, vjp
from script.runtime.gradients import grad
from tests.gradcheck import check_vjp
from tests.helpers import assert_same, rand, random_args, rng
from tests.programs.layers import affine_norm, norm_in_a_loop


def plain_norm(x: Tensor) -> Tensor:
    return ops.layer_norm(x)


def norm_with_eps(x: Tensor, eps: float) -> Tensor:
    return ops.layer_norm(x, None, None, eps)


def bias_norm(x: Tensor, b: Tensor) -> Tensor:
    return ops.layer_norm(x, None, b)


def optional_weight_norm(x: Tensor, w: Optional[Tensor]) -> Tensor:
    return ops.layer_norm(x, w)


def affine_norm_with_eps(x: Tensor, w: Tensor, b: Tensor, eps: float) -> Tensor:
    return ops.layer_norm(x, w, b, eps)


def _unaligned(r):
    raw = b"\0" + rand(r, (15,)).tobytes()
    return (np.frombuffer(raw, dtype=np.float64, offset=1).reshape(3, 5),)


def _read_only(r):
    x = rand(r, (3, 5))
    x.setflags(write=False)
    return (x,)


FORWARD_CASES = {
    "1d": (plain_norm, lambda r: (rand(r, (5,)),)),
    "3d-wide": (plain_norm, lambda r: (rand(r, (2, 3, 70)),)),
    "empty-last-axis": (plain_norm, lambda r: (np.zeros((3, 0)),)),
    "no-rows": (plain_norm, lambda r: (np.zeros((0, 4)),)),
    "one-column": (plain_norm, lambda r: (rand(r, (3, 1)),)),
    "constant-rows": (plain_norm, lambda r: (np.ones((2, 7)),)),
    "nan-and-inf": (plain_norm, lambda r: (np.array([[1.0, np.nan, 2.0], [1.0, np.inf, 3.0]]),)),
    "eps-argument": (norm_with_eps, lambda r: (rand(r, (3, 5)), 0.5)),
    "eps-int": (norm_with_eps, lambda r: (rand(r, (3, 5)), 1)),
    "eps-zero-constant-rows": (norm_with_eps, lambda r: (np.ones((2, 7)), 0.0)),
    "eps-negative": (norm_with_eps, lambda r: (np.ones((2, 7)), -1.0)),
    "float16": (plain_norm, lambda r: (rand(r, (3, 5)).astype(np.float16),)),
    "float32": (plain_norm, lambda r: (rand(r, (3, 5)).astype(np.float32),)),
    "int": (plain_norm, lambda r: (np.arange(15).reshape(3, 5),)),
    "bool": (plain_norm, lambda r: (np.eye(3, 5, dtype=bool),)),
    "float32-weight": (affine_norm, lambda r: (rand(r, (3, 5)), rand(r, (5,)).astype(np.float32),
                                               rand(r, (5,)))),
    "float32-input": (affine_norm, lambda r: (rand(r, (3, 5)).astype(np.float32), rand(r, (5,)),
                                              rand(r, (5,)))),
    "int-weight": (affine_norm, lambda r: (rand(r, (3, 5)), np.arange(5), np.arange(5))),
    "transposed": (plain_norm, lambda r: (rand(r, (5, 3)).T,)),
    "reversed-columns": (plain_norm, lambda r: (rand(r, (3, 5))[:, ::-1],)),
    "reversed-rows": (plain_norm, lambda r: (rand(r, (3, 5))[::-1],)),
    "strided": (plain_norm, lambda r: (rand(r, (6, 10))[::2, ::2],)),
    "broadcast-rows": (plain_norm, lambda r: (np.broadcast_to(rand(r, (5,)), (3, 5)),)),
    "fortran": (plain_norm, lambda r: (np.asfortranarray(rand(r, (4, 5))),)),
    "big-endian": (plain_norm, lambda r: (rand(r, (3, 5)).astype(">f8"),)),
    "read-only": (plain_norm, _read_only),
    "unaligned": (plain_norm, _unaligned),
    "weight-adds-rows": (affine_norm, lambda r: (rand(r, (1, 5)), rand(r, (3, 5)), rand(r, (5,)))),
    "strided-weight": (affine_norm, lambda r: (rand(r, (3, 5)), rand(r, (10,))[::2],
                                               rand(r, (5,)))),
    "weight-per-row": (affine_norm, lambda r: (rand(r, (3, 5)), rand(r, (3, 1)), rand(r, (3, 1)))),
    "scalar-like-weight": (affine_norm, lambda r: (rand(r, (3, 5)), rand(r, (1,)), rand(r, (1,)))),
    "bias-only": (bias_norm, lambda r: (rand(r, (3, 5)), rand(r, (5,)))),
    "optional-weight-given": (optional_weight_norm, lambda r: (rand(r, (3, 5)), rand(r, (5,)))),
    "optional-weight-none": (optional_weight_norm, lambda r: (rand(r, (3, 5)), None)),
}


@pytest.mark.parametrize("name", FORWARD_CASES)
def test_layer_norm_equals_eager(name):
    fn, make = FORWARD_CASES[name]
    args = make(rng(7))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # empty rows: a mean of nothing
        want = fn(*args)
        f = script(fn)
        first, second = f(*args), f(*args)  # the second call runs the cached specialization
    tol = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-5}.get(want.dtype, 1e-12)
    assert_same(first, want, rtol=tol, atol=tol)
    assert_same(second, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("args, match", [
    ((np.array(3.0),), "0-d"),
    ((np.ones((3, 5)), np.ones(4), np.ones(5)), "broadcast"),
], ids=["0-d", "weight-of-other-length"])
def test_layer_norm_bad_input_is_a_signature_error(args, match):
    fn = plain_norm if len(args) == 1 else affine_norm
    with pytest.raises(Exception):  # noqa: B017 -- eager raises too (AxisError / ValueError)
        fn(*args)
    with pytest.raises(SignatureError, match=match):
        script(fn)(*args)


GRADIENT_CASES = {
    "1d": (affine_norm, [(5,), (5,), (5,)]),
    "3d": (plain_norm, [(2, 3, 5)]),
    "eps-argument": (affine_norm_with_eps, [(2, 3, 5), (5,), (5,), 2.0]),
    "one-row-weight": (affine_norm, [(3, 5), (1, 5), (1, 5)]),
    "weight-adds-rows": (affine_norm, [(1, 5), (3, 5), (5,)]),
    "weight-per-row": (affine_norm, [(3, 5), (3, 1), (3, 1)]),
    "input-of-one-column": (affine_norm, [(3, 1), (5,), (5,)]),
    "bias-only": (bias_norm, [(3, 5), (5,)]),
    "in-a-loop": (norm_in_a_loop, [(4, 2, 5), (5,), (5,)]),
    "wide": (affine_norm, [(2, 70), (70,), (70,)]),
}


@pytest.mark.parametrize("name", GRADIENT_CASES)
def test_layer_norm_gradients_match_finite_differences(name):
    fn, shapes = GRADIENT_CASES[name]
    check_vjp(fn, random_args(shapes, rng(8)), rtol=1e-5, atol=1e-7)


def test_layer_norm_transposed_input_gradient():
    r = rng(9)
    check_vjp(affine_norm, (rand(r, (5, 3)).T, rand(r, (5,)), rand(r, (5,))), rtol=1e-5, atol=1e-7)


def test_float32_gradients_equal_float64_gradients():
    r = rng(10)
    args = (rand(r, (4, 2, 70)), rand(r, (70,)), rand(r, (70,)))
    out64, back64 = vjp(script(norm_in_a_loop), *args)
    out32, back32 = vjp(script(norm_in_a_loop), *(a.astype(np.float32) for a in args))
    ct = rand(r, out64.shape)
    for g32, g64 in zip(back32(ct.astype(np.float32)), back64(ct)):
        assert g32.dtype == np.float32
        np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-5 * np.abs(g64).max())


def cubed_affine(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return np.sum(ops.layer_norm(x, w, b) ** 3)


def cubed_plain(x: Tensor) -> Tensor:
    return np.sum(ops.layer_norm(x) ** 3)


def sine_of_bias_norm(x: Tensor, b: Tensor) -> Tensor:
    return np.sum(np.sin(ops.layer_norm(x, None, b)) * x)


def cubed_with_eps(x: Tensor, w: Tensor, eps: float) -> Tensor:
    return np.sum(ops.layer_norm(x, w, None, eps) ** 3)


SECOND_CASES = {
    "affine": (cubed_affine, [(3, 5), (5,), (5,)], (0, 1, 2)),
    "affine-only-x": (cubed_affine, [(3, 5), (5,), (5,)], (0,)),
    "plain-3d": (cubed_plain, [(2, 3, 4)], (0,)),
    "bias-only": (sine_of_bias_norm, [(3, 4), (4,)], (0, 1)),
    "one-row-weight": (cubed_affine, [(3, 5), (1, 5), (5,)], (0, 1, 2)),
    "weight-adds-rows": (cubed_affine, [(1, 5), (3, 5), (5,)], (0, 1, 2)),
    "weight-per-row": (cubed_affine, [(3, 5), (3, 1), (3, 1)], (0, 1, 2)),
    "eps-argument": (cubed_with_eps, [(3, 5), (5,), 0.7], (0, 1)),
    "1d-plain": (cubed_plain, [(5,)], (0,)),
    # a 1-D input with weight and bias: tests/regressions/test_fusion_cycle_through_a_third_group
}


@pytest.mark.parametrize("name", SECOND_CASES)
def test_layer_norm_second_derivatives_match_finite_differences(name):
    fn, shapes, argnums = SECOND_CASES[name]
    r = rng(11)
    args = random_args(shapes, r)
    first = grad(fn, argnums=argnums)
    out, backward = vjp(first, *args)
    assert isinstance(out, tuple)  # grad returns a tuple of gradients
    ct = tuple(rand(r, o.shape) for o in out)
    got = backward(ct)
    h = 1e-6
    for k in argnums:
        want = np.zeros_like(args[k])
        for idx in np.ndindex(args[k].shape):
            up, down = list(args), list(args)
            up[k], down[k] = args[k].copy(), args[k].copy()
            up[k][idx] += h
            down[k][idx] -= h
            hi, lo = first(*up), first(*down)
            want[idx] = sum(np.sum(c * (p - m)) for c, p, m in zip(ct, hi, lo)) / (2 * h)
        np.testing.assert_allclose(got[k], want, rtol=1e-5, atol=1e-6, err_msg=f"argument {k}")
