"""Adversarial checks of list-of-weights gradients, the batch-by-matrix matmul rewrite, the native
layer norm kernels with their gradient op, and profiled ``vjp`` calls.

Compiled results must equal the eager function's, gradients must equal central finite
differences (``check_vjp``), and input the compiler does not take must get a clear error.
"""

from __future__ import annotations

import warnings
from typing import List, Optional

import numpy as np
import pytest

import script as rnnscript
from script import SignatureError, Tensor, ops, script, vjp
from script.errors import ScriptError
from script.runtime.autodiff import grad
from tests.gradcheck import check_vjp


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def randn(r: np.random.Generator, *shape: int) -> np.ndarray:
    return r.standard_normal(shape)


def assert_same(got, want, rtol: float = 1e-12) -> None:
    """Equal dtype, shape and values (NaNs in the same places)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


# -- lists of weights -------------------------------------------------------------------------
def mlp(x: Tensor, ws: List[Tensor]) -> Tensor:
    for i in range(len(ws)):
        x = np.tanh(x @ ws[i])
    return x


def first_and_last(x: Tensor, ws: List[Tensor]) -> Tensor:
    return x @ ws[-1] + x @ ws[0]


def read_backwards(x: Tensor, ws: List[Tensor]) -> Tensor:
    n = len(ws)
    for i in range(n):
        x = x * ws[n - 1 - i]
    return x


def nested_counters(x: Tensor, ws: List[Tensor]) -> Tensor:
    for layer in range(2):
        for j in range(2):
            x = np.tanh(x * ws[2 * layer + j])
    return x


def read_in_branch(x: Tensor, ws: List[Tensor], flag: bool) -> Tensor:
    for i in range(len(ws)):
        if flag:
            x = x * ws[i]
        else:
            x = x + ws[len(ws) - 1 - i]
    return x


def layer(x: Tensor, ws: List[Tensor], i: int) -> Tensor:
    return np.tanh(x @ ws[i])


def through_a_helper(x: Tensor, ws: List[Tensor]) -> Tensor:
    for i in range(len(ws)):
        x = layer(x, ws, i)
    return x


def weights_and_biases(x: Tensor, ws: List[Tensor], bs: List[Tensor]) -> Tensor:
    for i in range(len(ws)):
        x = np.tanh(x @ ws[i] + bs[i])
    return x


def layers_inside_time(xs: Tensor, ws: List[Tensor]) -> Tensor:
    h = xs[0]
    for t in range(xs.shape[0]):
        for i in range(len(ws)):
            h = np.tanh(xs[t] @ ws[i] + h)
    return h


def for_each_item(x: Tensor, ws: List[Tensor]) -> Tensor:
    for i, w in enumerate(ws):
        x = x * w + ws[i]
    return x


def returns_the_list(x: Tensor, ws: List[Tensor]) -> List[Tensor]:
    return ws


def nested_lists(x: Tensor, ws: List[List[Tensor]]) -> Tensor:
    for i in range(len(ws)):
        for j in range(len(ws[i])):
            x = np.tanh(x @ ws[i][j])
    return x


def while_over_list(x: Tensor, ws: List[Tensor]) -> Tensor:
    i = 0
    while i < len(ws):
        x = x @ ws[i]
        i += 1
    return x


LIST_CASES = [
    (mlp, lambda r: (randn(r, 2, 3), [randn(r, 3, 4), randn(r, 4, 4), randn(r, 4, 2)])),
    (mlp, lambda r: (randn(r, 2, 3), [randn(r, 3, 4)])),
    (first_and_last, lambda r: (randn(r, 2, 3), [randn(r, 3, 4), randn(r, 3, 5), randn(r, 3, 4)])),
    (read_backwards, lambda r: (randn(r, 2, 3), [randn(r, 3), randn(r, 2, 3), randn(r, 1, 3)])),
    (nested_counters, lambda r: (randn(r, 2, 3), [randn(r, 3), randn(r, 2, 3), randn(r, 1, 3),
                                                  randn(r, 3)])),
    (read_in_branch, lambda r: (randn(r, 2, 3), [randn(r, 3), randn(r, 2, 3)], True)),
    (read_in_branch, lambda r: (randn(r, 2, 3), [randn(r, 3), randn(r, 2, 3)], False)),
    (through_a_helper, lambda r: (randn(r, 2, 3), [randn(r, 3, 3), randn(r, 3, 2)])),
    (weights_and_biases, lambda r: (randn(r, 2, 3), [randn(r, 3, 4), randn(r, 4, 2)],
                                    [randn(r, 4), randn(r, 2)])),
    (layers_inside_time, lambda r: (randn(r, 4, 2, 3), [randn(r, 3, 3), randn(r, 3, 3)])),
    (for_each_item, lambda r: (randn(r, 2, 3), [randn(r, 3), randn(r, 2, 3)])),
]


@pytest.mark.parametrize("fn, make", LIST_CASES,
                         ids=[f"{fn.__name__}-{k}" for k, (fn, _) in enumerate(LIST_CASES)])
def test_list_argument_gradients_match_finite_differences(fn, make):
    check_vjp(fn, make(rng(3)))


def test_lists_of_other_lengths_in_consecutive_calls():
    r = rng(1)
    f = script(mlp)
    x = randn(r, 2, 3)
    for ws in ([randn(r, 3, 4), randn(r, 4, 2)], [randn(r, 3, 3)],
               [randn(r, 3, 4), randn(r, 4, 4), randn(r, 4, 2)], [randn(r, 3, 5), randn(r, 5, 2)]):
        out, backward = vjp(f, x, ws)
        assert_same(out, mlp(x, ws))
        _, dws = backward(np.ones_like(out))
        assert isinstance(dws, list) and [g.shape for g in dws] == [w.shape for w in ws]
        assert all(np.abs(g).sum() > 0 for g in dws)


def test_empty_list_of_weights():
    x = randn(rng(), 2, 3)
    out, backward = vjp(script(mlp), x, [])
    assert_same(out, x)
    dx, dws = backward(np.full_like(x, 2.0))
    assert_same(dx, np.full_like(x, 2.0))
    assert dws is None  # nothing flows into an empty list


def test_returned_list_passes_its_cotangent_through():
    r = rng(2)
    x, ws = randn(r, 2, 3), [randn(r, 3, 3), randn(r, 4)]
    out, backward = vjp(script(returns_the_list), x, ws)
    assert isinstance(out, list) and all(a is b or np.array_equal(a, b) for a, b in zip(out, ws))
    cts = [np.full((3, 3), 2.0), np.full(4, 3.0)]
    dx, dws = backward(cts)
    assert_same(dx, np.zeros_like(x))
    assert [g.tolist() for g in dws] == [c.tolist() for c in cts]


@pytest.mark.parametrize("fn, args", [
    (mlp, lambda r: (randn(r, 2, 3), [0.3 * randn(r, 3, 3) for _ in range(20)])),  # > 16 trips
    (while_over_list, lambda r: (randn(r, 2, 3), [randn(r, 3, 4), randn(r, 4, 2)])),
    (nested_lists, lambda r: (randn(r, 2, 3), [[randn(r, 3, 3)], [randn(r, 3, 2)]])),
], ids=["long", "while", "nested"])
def test_unsupported_list_reads_are_refused_clearly(fn, args):
    a = args(rng(4))
    fn(*a)  # eager runs
    assert_same(script(fn)(*a), fn(*a))  # and so does the compiled function
    with pytest.raises(ScriptError, match=r"test_review_today\.py:\d+:\d+: cannot differentiate"):
        vjp(script(fn), *a)


# -- a batch times a matrix -------------------------------------------------------------------
def batch_times_matrix(a: Tensor, w: Tensor) -> Tensor:
    return a @ w


def _transposed(r):
    return randn(r, 4, 3, 2).transpose(2, 1, 0), randn(r, 4, 5)


MATMUL_CASES = {
    "3d": lambda r: (randn(r, 2, 3, 4), randn(r, 4, 5)),
    "4d": lambda r: (randn(r, 2, 2, 3, 4), randn(r, 4, 5)),
    "1d-right": lambda r: (randn(r, 2, 3, 4), randn(r, 4)),
    "float32-by-float64": lambda r: (randn(r, 2, 3, 4).astype(np.float32), randn(r, 4, 5)),
    "float32": lambda r: (randn(r, 2, 3, 4).astype(np.float32),
                          randn(r, 4, 5).astype(np.float32)),
    "int": lambda r: (np.arange(24).reshape(2, 3, 4), np.arange(20).reshape(4, 5)),
    "transposed": _transposed,
    "fortran-weight": lambda r: (randn(r, 2, 3, 4), np.asfortranarray(randn(r, 4, 5))),
    "empty-batch": lambda r: (randn(r, 0, 3, 4), randn(r, 4, 5)),
    "empty-rows": lambda r: (randn(r, 2, 0, 4), randn(r, 4, 5)),
    "empty-columns": lambda r: (randn(r, 2, 3, 4), np.zeros((4, 0))),
    "empty-inner": lambda r: (np.zeros((2, 3, 0)), np.zeros((0, 4))),
}


@pytest.mark.parametrize("name", MATMUL_CASES)
def test_batch_times_matrix_equals_eager(name):
    a, w = MATMUL_CASES[name](rng(5))
    got = script(batch_times_matrix)(a, w)
    assert_same(got, batch_times_matrix(a, w), rtol=1e-5 if got.dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("name", ["3d", "4d", "1d-right", "transposed", "empty-batch",
                                  "empty-columns", "empty-inner"])
def test_batch_times_matrix_gradients(name):
    check_vjp(batch_times_matrix, MATMUL_CASES[name](rng(6)))


def test_batch_times_matrix_of_other_inner_size_is_a_signature_error():
    with pytest.raises(SignatureError, match="inner dimensions differ"):
        script(batch_times_matrix)(np.ones((2, 3, 4)), np.ones((5, 5)))


# -- layer norm ---------------------------------------------------------------------------------
def plain_norm(x: Tensor) -> Tensor:
    return ops.layer_norm(x)


def norm_with_eps(x: Tensor, eps: float) -> Tensor:
    return ops.layer_norm(x, None, None, eps)


def affine_norm(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return ops.layer_norm(x, w, b)


def bias_norm(x: Tensor, b: Tensor) -> Tensor:
    return ops.layer_norm(x, None, b)


def optional_weight_norm(x: Tensor, w: Optional[Tensor]) -> Tensor:
    return ops.layer_norm(x, w)


def affine_norm_with_eps(x: Tensor, w: Tensor, b: Tensor, eps: float) -> Tensor:
    return ops.layer_norm(x, w, b, eps)


def norm_in_a_loop(xs: Tensor, w: Tensor, b: Tensor) -> Tensor:
    h = xs[0] * 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(ops.layer_norm(xs[t] + h, w, b))
    return h


def _unaligned(r):
    raw = b"\0" + randn(r, 15).tobytes()
    return (np.frombuffer(raw, dtype=np.float64, offset=1).reshape(3, 5),)


def _read_only(r):
    x = randn(r, 3, 5)
    x.setflags(write=False)
    return (x,)


FORWARD_CASES = {
    "1d": (plain_norm, lambda r: (randn(r, 5),)),
    "3d-wide": (plain_norm, lambda r: (randn(r, 2, 3, 70),)),
    "empty-last-axis": (plain_norm, lambda r: (np.zeros((3, 0)),)),
    "no-rows": (plain_norm, lambda r: (np.zeros((0, 4)),)),
    "one-column": (plain_norm, lambda r: (randn(r, 3, 1),)),
    "constant-rows": (plain_norm, lambda r: (np.ones((2, 7)),)),
    "nan-and-inf": (plain_norm, lambda r: (np.array([[1.0, np.nan, 2.0], [1.0, np.inf, 3.0]]),)),
    "eps-argument": (norm_with_eps, lambda r: (randn(r, 3, 5), 0.5)),
    "eps-int": (norm_with_eps, lambda r: (randn(r, 3, 5), 1)),
    "eps-zero-constant-rows": (norm_with_eps, lambda r: (np.ones((2, 7)), 0.0)),
    "eps-negative": (norm_with_eps, lambda r: (np.ones((2, 7)), -1.0)),
    "float16": (plain_norm, lambda r: (randn(r, 3, 5).astype(np.float16),)),
    "float32": (plain_norm, lambda r: (randn(r, 3, 5).astype(np.float32),)),
    "int": (plain_norm, lambda r: (np.arange(15).reshape(3, 5),)),
    "bool": (plain_norm, lambda r: (np.eye(3, 5, dtype=bool),)),
    "float32-weight": (affine_norm, lambda r: (randn(r, 3, 5), randn(r, 5).astype(np.float32),
                                               randn(r, 5))),
    "float32-input": (affine_norm, lambda r: (randn(r, 3, 5).astype(np.float32), randn(r, 5),
                                              randn(r, 5))),
    "int-weight": (affine_norm, lambda r: (randn(r, 3, 5), np.arange(5), np.arange(5))),
    "transposed": (plain_norm, lambda r: (randn(r, 5, 3).T,)),
    "reversed-columns": (plain_norm, lambda r: (randn(r, 3, 5)[:, ::-1],)),
    "reversed-rows": (plain_norm, lambda r: (randn(r, 3, 5)[::-1],)),
    "strided": (plain_norm, lambda r: (randn(r, 6, 10)[::2, ::2],)),
    "broadcast-rows": (plain_norm, lambda r: (np.broadcast_to(randn(r, 5), (3, 5)),)),
    "fortran": (plain_norm, lambda r: (np.asfortranarray(randn(r, 4, 5)),)),
    "big-endian": (plain_norm, lambda r: (randn(r, 3, 5).astype(">f8"),)),
    "read-only": (plain_norm, _read_only),
    "unaligned": (plain_norm, _unaligned),
    "weight-adds-rows": (affine_norm, lambda r: (randn(r, 1, 5), randn(r, 3, 5), randn(r, 5))),
    "strided-weight": (affine_norm, lambda r: (randn(r, 3, 5), randn(r, 10)[::2], randn(r, 5))),
    "weight-per-row": (affine_norm, lambda r: (randn(r, 3, 5), randn(r, 3, 1), randn(r, 3, 1))),
    "scalar-like-weight": (affine_norm, lambda r: (randn(r, 3, 5), randn(r, 1), randn(r, 1))),
    "bias-only": (bias_norm, lambda r: (randn(r, 3, 5), randn(r, 5))),
    "optional-weight-given": (optional_weight_norm, lambda r: (randn(r, 3, 5), randn(r, 5))),
    "optional-weight-none": (optional_weight_norm, lambda r: (randn(r, 3, 5), None)),
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
    assert_same(first, want, rtol=tol)
    assert_same(second, want, rtol=tol)


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


def _gradient_args(shapes, r):
    return tuple(randn(r, *s) if isinstance(s, tuple) else s for s in shapes)


@pytest.mark.parametrize("name", GRADIENT_CASES)
def test_layer_norm_gradients_match_finite_differences(name):
    fn, shapes = GRADIENT_CASES[name]
    check_vjp(fn, _gradient_args(shapes, rng(8)), rtol=1e-5, atol=1e-7)


def test_layer_norm_transposed_input_gradient():
    r = rng(9)
    check_vjp(affine_norm, (randn(r, 5, 3).T, randn(r, 5), randn(r, 5)), rtol=1e-5, atol=1e-7)


def test_float32_gradients_equal_float64_gradients():
    r = rng(10)
    args = (randn(r, 4, 2, 70), randn(r, 70), randn(r, 70))
    out64, back64 = vjp(script(norm_in_a_loop), *args)
    out32, back32 = vjp(script(norm_in_a_loop), *(a.astype(np.float32) for a in args))
    ct = randn(r, *out64.shape)
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
    args = _gradient_args(shapes, r)
    first = grad(fn, argnums=argnums)
    out, backward = vjp(first, *args)
    assert isinstance(out, tuple)  # grad returns a tuple of gradients
    ct = tuple(randn(r, *o.shape) for o in out)
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


# -- the profiler with vjp --------------------------------------------------------------------
def no_loop(x: Tensor, w: Tensor) -> Tensor:
    return np.tanh(x @ w) * 2.0 + x @ w


def two_outputs(x: Tensor, w: Tensor):
    return x @ w, np.tanh(x)


def _calls(prof) -> dict[str, int]:
    return {k: s.calls for k, s in prof.stats.items() if s.category == "call"}


@pytest.mark.parametrize("fn, shapes", [
    (no_loop, [(2, 3), (3, 3)]),
    (two_outputs, [(2, 3), (3, 4)]),
    (affine_norm, [(3, 5), (5,), (5,)]),
    (norm_in_a_loop, [(4, 2, 70), (70,), (70,)]),
], ids=lambda v: getattr(v, "__name__", "shapes"))
def test_profiled_vjp_in_nested_blocks_computes_the_same(fn, shapes):
    args = _gradient_args(shapes, rng(12))
    f = script(fn)
    out, backward = vjp(f, *args)
    cts = tuple(np.ones_like(o) for o in out) if isinstance(out, tuple) else np.ones_like(out)
    want = backward(cts)
    name = fn.__name__
    with rnnscript.profile() as outer:
        out_outer, back_outer = vjp(f, *args)
        with rnnscript.profile() as inner:
            out_inner, back_inner = vjp(f, *args)
            got = [back_inner(cts), back_outer(cts)]
        got.append(back_outer(cts))
    got.append(back_inner(cts))  # outside every block: the fast code
    for o in (out_outer, out_inner):
        for a, b in zip(o if isinstance(o, tuple) else (o,), out if isinstance(out, tuple)
                        else (out,)):
            assert_same(a, b)
    for grads in got:
        for a, b in zip(grads, want):
            assert_same(a, b)
    assert _calls(inner) == {f"call {name} (forward)": 1, f"call {name} (backward)": 2}
    assert _calls(outer) == {f"call {name} (forward)": 1, f"call {name} (backward)": 1}
    assert inner.node_seconds > 0 and outer.node_seconds > 0
    assert f"{name} (backward)" in str(inner)


def test_profiled_vjp_of_a_list_of_weights():
    r = rng(13)
    x, ws = randn(r, 2, 3), [randn(r, 3, 4), randn(r, 4, 2)]
    f = script(mlp)
    out, backward = vjp(f, x, ws)
    want = backward(np.ones_like(out))
    with rnnscript.profile() as prof:
        got_out, got_backward = vjp(f, x, ws)
        got = got_backward(np.ones_like(out))
    assert_same(got_out, out)
    assert_same(got[0], want[0])
    for g, w in zip(got[1], want[1]):
        assert_same(g, w)
    assert _calls(prof) == {"call mlp (forward)": 1, "call mlp (backward)": 1}
