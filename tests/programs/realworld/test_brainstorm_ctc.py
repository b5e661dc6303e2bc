"""Brainstorm's CTC forward recursion (https://github.com/IDSIA/brainstorm, MIT License,
``brainstorm/layers/ctc_layer.py``, ``calculate_alphas``): log-space alphas over a padded label
sequence, started from ``np.full(..., -inf)``, updated in place with ``np.logaddexp``.

Changes: ``Tensor`` and ``List[int]`` annotations. ``ctc_nll`` is added: the negative log
likelihood read from the last alphas, whose gradient is checked.

Unreachable states stay at -inf, and ``np.logaddexp(-inf, -inf)`` is taken there: its gradient
was nan (the untaken branch of the composite computed ``-inf - -inf``), and every label sequence
with a repeated or unreachable state got a nan gradient.
"""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same

neg_inf = float('-inf')


def calculate_alphas(Y_log: Tensor, T: List[int]):
    """
    Y_log: log of outputs shape=(time, labels)
    T: target sequence shape=(length, )
    """
    N = Y_log.shape[0]
    S = len(T)
    Z = 2 * S + 1

    alpha = np.full((N,Z), neg_inf)
    alpha[0, 0] = Y_log[0, 0]
    alpha[0, 1] = Y_log[0, T[0]]
    for t in range(1, N):
        start = max(-1, 2 * (S - N + t) + 1)
        for s in range(start + 1, Z, 2): #loop for blanks (even)
            alpha[t, s] = np.logaddexp(alpha[t, s], alpha[t - 1, s])
            if s > 0:
                alpha[t,s] = np.logaddexp(alpha[t, s], alpha[t - 1, s - 1])

            alpha[t, s] += Y_log[t, 0]
        previous_label = -1
        if start > 0:
            previous_label = T[start // 2 - 1]
        for s in range(max(1, start), Z, 2): # loop for labels (odd)
            alpha[t, s] = np.logaddexp(alpha[t, s], alpha[t - 1, s])
            alpha[t, s] = np.logaddexp(alpha[t, s], alpha[t - 1, s - 1])
            label = T[s // 2]
            if s > 1:
                alpha[t, s] = np.logaddexp(alpha[t, s], alpha[t - 1, s - 2] + np.log(label != previous_label))  # noqa: E501
            alpha[t, s] += Y_log[t, label]
            previous_label = label

    return alpha


def ctc_nll(Y_log: Tensor, T: List[int]):
    alpha = calculate_alphas(Y_log, T)
    return -np.logaddexp(alpha[-1, -1], alpha[-1, -2])


def log_softmax_rows(n: int, v: int, dtype) -> np.ndarray:
    logits = np.random.default_rng(7).standard_normal((n, v))
    return (logits - np.log(np.exp(logits).sum(1, keepdims=True))).astype(dtype)


@pytest.mark.filterwarnings("ignore:divide by zero")
@pytest.mark.parametrize("T", [[1, 2, 1], [2, 2], [3]])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_alphas_and_nll_as_numpy(T, dtype):
    Y_log = log_softmax_rows(6, 4, dtype)
    with np.errstate(divide="ignore"):
        assert_same(script(calculate_alphas)(Y_log, T), calculate_alphas(Y_log, T))
        assert_same(script(ctc_nll)(Y_log, T), ctc_nll(Y_log, T))


@pytest.mark.filterwarnings("ignore:divide by zero")
@pytest.mark.parametrize("T", [[1, 2, 1], [2, 2], [3]])
def test_nll_gradient_is_finite_differences(T):
    with np.errstate(divide="ignore", invalid="ignore"):
        check_vjp(script(ctc_nll), (log_softmax_rows(6, 4, "float64"), T))
