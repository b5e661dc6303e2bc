"""Ops the generated code spells inline instead of calling ``script.ops`` or a kernel (a float sum
as ``np.add.reduce``, a write along axis 0 of a copy as a copy and one ``__setitem__``, a small
fusion group of numbers as numpy's arithmetic) give the eager results: same values, dtypes,
shapes and Python types, and the copy is the caller's own."""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

from script import Tensor, script
from tests.helpers import assert_same


def sums(x: Tensor, s: Tensor):
    return (np.sum(x), np.sum(x, axis=0), np.sum(x, axis=-1, keepdims=True),
            np.sum(x, axis=(0, 1)), x.sum(axis=1), np.sum(s))


def one_hot(x: Tensor, i: int, v: float):
    y = np.copy(x)
    y[i] = v
    z = np.zeros((3, 2), x.dtype)
    z[i] = 1
    return y, z


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_sums_equal_numpys(dtype):
    x = np.random.default_rng(1).standard_normal((4, 3)).astype(dtype)
    s = np.array(2.5, dtype)
    f = script(sums)
    assert_same(f(x, s), sums(x, s), 0, 0)
    assert "np.add.reduce(" in f.code_for(x, s)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_row_written_into_a_copy_equals_numpys(dtype):
    x = np.arange(6, dtype=dtype).reshape(3, 2)
    kept = x.copy()
    f = script(one_hot)
    for i in (0, 2, -1):
        got, want = f(x, i, 7.5), one_hot(x, i, 7.5)
        assert_same(got, want, 0, 0)
        assert_same(x, kept, 0, 0)
        assert not np.shares_memory(got[0], x)
    with pytest.raises(IndexError):
        one_hot(x, 3, 1.0)
    with pytest.raises(IndexError):
        f(x, 3, 1.0)


def losses(p: Tensor, targets: List[int]):
    loss = 0
    for t in range(len(targets)):
        loss += -np.log(p[t, targets[t]])
    return loss


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_loss_summed_over_steps_is_numpys_number(dtype, native, monkeypatch):
    monkeypatch.setenv("RNNSCRIPT_NATIVE_LOOPS", native)
    p = np.random.default_rng(2).random((5, 3)).astype(dtype)
    targets = [0, 2, 1, 1, 0]
    got, want = script(losses)(p, targets), losses(p, targets)
    assert type(got) is type(want)  # a numpy scalar, as numpy's arithmetic on numbers gives
    assert_same(got, want, 0, 0)


def forward_recursion(A: Tensor, B: Tensor, pi: Tensor, obs: Tensor):
    """An HMM's forward pass over single elements (QSTK's calcalpha): an accumulator that
    starts as a number, and ``B[j][obs[t]]`` of a vector and a 0-d index."""
    alpha = np.zeros((obs.shape[0], A.shape[0]), A.dtype)
    for i in range(A.shape[0]):
        alpha[0][i] = pi[i] * B[i][obs[0]]
    for t in range(1, obs.shape[0]):
        for j in range(A.shape[0]):
            s = 0.0
            for i in range(A.shape[0]):
                s += alpha[t - 1][i] * A[i][j]
            alpha[t][j] = s * B[j][obs[t]]
    return alpha


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scalar_arithmetic_stays_on_numpy_scalars(dtype):
    """The accumulator's start is a numpy scalar in the generated code (not a 0-d array, whose
    arithmetic costs about ten times a scalar's), a vector indexed by a 0-d index is read
    inline, and a few ops on numpy scalars are not a kernel call."""
    rng = np.random.default_rng(2)
    args = tuple(rng.random(s).astype(dtype) for s in ((3, 3), (3, 4), (3,))) + (
        np.array([0, 3, 1, 2]),)
    f = script(forward_recursion)
    assert_same(f(*args), forward_recursion(*args))
    spec = f.specialization(*args)
    held = [v for v in spec.fn.__globals__.values() if type(v) is np.ndarray and v.shape == ()]
    assert not held
    assert "_take" not in spec.source and "_kernel" not in spec.source
