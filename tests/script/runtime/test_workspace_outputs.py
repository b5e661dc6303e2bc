"""Large arrays a compiled function makes outside loops come from its workspace
(``fuser.workspace``): an elementwise op that is one ufunc writes ``out=`` a kept array, a fusion
kernel writes into one; results equal Python's, and an array a caller still holds is never
written by a later call."""

import numpy as np

from script import Tensor, script


def shifted(x: Tensor, b: Tensor) -> Tensor:
    return x + b  # one op: its ufunc, into a workspace array


def softmax_rows(x: Tensor) -> Tensor:
    p = np.exp(x - np.max(x, axis=1, keepdims=True))
    p /= np.sum(p, axis=1, keepdims=True)
    return p


def summed_loss(x: Tensor, b: Tensor) -> Tensor:
    z = np.tanh(x + b)  # not returned: its array is the workspace's again after the call
    return np.sum(z * z)


def _args(dtype, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(s).astype(dtype) for s in shapes)


def test_a_large_add_writes_into_a_workspace_array_and_equals_python():
    for dtype, tol in ((np.float32, 1e-5), (np.float64, 1e-12)):
        args = _args(dtype, (128, 300), (300,))
        f = script(shifted)
        assert "np.add(x, b, out=_site" in f.code_for(*args)
        np.testing.assert_allclose(f(*args), shifted(*args), rtol=tol, atol=tol)


def test_a_result_the_caller_holds_is_not_overwritten_by_the_next_call():
    f = script(shifted)
    first = _args(np.float32, (128, 300), (300,), seed=1)
    second = _args(np.float32, (128, 300), (300,), seed=2)
    kept = f(*first)
    want = kept.copy()
    for _ in range(3):
        again = f(*second)
    np.testing.assert_array_equal(kept, want)
    np.testing.assert_allclose(again, shifted(*second), rtol=1e-5, atol=1e-5)


def test_a_kernel_writes_a_large_output_into_a_workspace_array():
    (x,) = _args(np.float64, (256, 100))
    f = script(softmax_rows)
    code = f.code_for(x)
    assert ".into((_site" in code, code
    kept = [f(x + k) for k in range(3)]  # each call's result stays the caller's
    for k, got in enumerate(kept):
        np.testing.assert_allclose(got, softmax_rows(x + k), rtol=1e-12, atol=1e-12)


def test_arrays_used_only_inside_the_call_are_reused_with_the_right_values():
    f = script(summed_loss)
    for seed in range(3):
        x, b = _args(np.float64, (200, 100), (100,), seed=seed)
        np.testing.assert_allclose(f(x, b), summed_loss(x, b), rtol=1e-12)


def test_small_or_mixed_dtype_operands_keep_the_operator():
    small = _args(np.float32, (4, 6), (6,))
    assert "np.add(" not in script(shifted).code_for(*small)
    (x,) = _args(np.float32, (128, 300))
    (b,) = _args(np.float64, (300,))  # float32 + float64: numpy promotes, no out= of one dtype
    f = script(shifted)
    assert "np.add(" not in f.code_for(x, b)
    got = f(x, b)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, shifted(x, b), rtol=1e-12, atol=1e-12)
