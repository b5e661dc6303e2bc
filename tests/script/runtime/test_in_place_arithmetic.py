"""Arithmetic stored into an array nothing reads again (``acc = acc + g`` as numpy's ``acc += g``,
marked by the inplace-writes pass), outer products summed in the sum's kernel (outer-products)
and one-hot writes spelled inline give plain Python's results,
leave the caller's arrays alone and return arrays no other result shares; a step kept in a dict
keyed by the step reads as Python reads it, a missing key raising Python's KeyError."""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

from script import Tensor, script
from tests.helpers import TOLERANCE, assert_same


def steps(inputs: List[int], W: Tensor, h0: Tensor, back: int):
    xs, hs = {}, {}
    hs[-1] = np.copy(h0)
    for t in range(len(inputs)):
        xs[t] = np.zeros((W.shape[1], 1), W.dtype)
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(W, xs[t]) + hs[t - 1])
    dW, dh = np.zeros_like(W), np.zeros_like(h0)
    for t in reversed(range(len(inputs))):
        dy = np.copy(hs[t])
        dy[inputs[t]] -= 1
        dW += np.dot(dy, xs[t].T)
        dh += hs[t - back]
    return dW, dh, hs[len(inputs) - 1], xs[0]


def shared(x: Tensor, m: Tensor, g: Tensor, n: int):
    y = x @ m
    z = y + g  # y is returned too: z is a new array
    w = x @ m.T
    w = w - g  # nothing reads the product again: stored into it
    acc = g @ m
    for _ in range(n):
        acc = acc + np.dot(x, m)
    return acc, y, z, w


def _args(dtype: str) -> tuple:
    rng = np.random.default_rng(0)
    return ([0, 2, 1, 2], rng.standard_normal((4, 3)).astype(dtype),
            rng.standard_normal((4, 1)).astype(dtype))


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_steps_kept_in_dicts_and_summed_equal_python(dtype, native, monkeypatch):
    monkeypatch.setenv("RNNSCRIPT_NATIVE_LOOPS", native)
    inputs, W, h0 = _args(dtype)
    kept = (list(inputs), W.copy(), h0.copy())
    f = script(steps)
    got, want = f(inputs, W, h0, 1), steps(inputs, W, h0, 1)
    assert_same(got, want, **TOLERANCE[np.dtype(dtype)])
    assert_same((inputs, W, h0), kept, 0, 0)  # the arguments are not written
    code = f.code_for(inputs, W, h0, 1)
    assert "dh_1 += " in code  # the sum is made in place
    assert "np.dot" not in code.split("for i_1")[1]  # the outer products summed in a kernel
    assert_same(f(inputs, W, h0, 1), want, **TOLERANCE[np.dtype(dtype)])  # a second call too


def test_a_missing_key_raises_pythons_key_error():
    inputs, W, h0 = _args("float64")
    with pytest.raises(KeyError) as want:
        steps(inputs, W, h0, 2)
    with pytest.raises(KeyError) as got:
        script(steps)(inputs, W, h0, 2)
    assert got.value.args == want.value.args == (-2,)


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("n", [0, 4])  # (not 3, an axis: that count is compiled in)
def test_results_stored_in_place_share_no_memory(n, native, monkeypatch):
    monkeypatch.setenv("RNNSCRIPT_NATIVE_LOOPS", native)
    x, m, g = np.arange(6.0).reshape(2, 3), np.eye(3) * 2.0, np.full((2, 3), 0.5)
    kept = (x.copy(), m.copy(), g.copy())
    f = script(shared)
    got, want = f(x, m, g, n), shared(x, m, g, n)
    assert_same(got, want, 0, 0)
    assert_same((x, m, g), kept, 0, 0)
    for k, a in enumerate(got):
        assert not any(np.shares_memory(a, b) for b in (x, m, g, *got[k + 1:]))
    assert " -= g" in f.code_for(x, m, g, n)


def clipped(W: Tensor, xs: Tensor, lo: float):
    dW = np.zeros_like(W)
    for t in range(xs.shape[0]):
        dW += np.outer(xs[t], xs[t])
    np.clip(dW, lo, 5.0, out=dW)  # clips the sum in place
    kept = dW
    np.clip(kept, None, 1.0, out=kept)  # through another name: both see it
    return dW, kept


def clipped_after_read(W: Tensor):
    g = W * 2.0
    before = g.sum()
    total = g  # the old array is read after the clip through this list: a clip into a copy
    np.clip(g, -1.0, 1.0, out=g)
    return before, total, g


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_clip_put_back_over_its_array_clips_it_in_place(dtype):
    r = np.random.default_rng(3)
    W = r.standard_normal((4, 4)).astype(dtype)
    xs = (r.standard_normal((3, 4)) * 2).astype(dtype)
    f = script(clipped)
    assert ", out=" in f.code_for(W, xs, -0.5)  # the second clip (the first joins the sum's kernel)
    got, want = f(W, xs, -0.5), clipped(W, xs, -0.5)
    for g, w in zip(got, want):
        assert_same(g, w, **TOLERANCE[np.dtype(dtype)])
    assert got[0] is got[1]  # one array, as numpy's out= gives
    for g, w in zip(script(clipped_after_read)(W), clipped_after_read(W)):
        assert_same(g, w, **TOLERANCE[np.dtype(dtype)])
