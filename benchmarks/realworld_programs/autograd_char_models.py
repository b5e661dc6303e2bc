"""The character-level RNN and LSTM of the autograd examples (HIPS/autograd,
https://github.com/HIPS/autograd, ``examples/rnn.py`` and ``examples/lstm.py``, MIT License),
written again here in their style: the parameters in a dict keyed by name, the step and the
read-out as functions nested in the predictor that read the dict from it, a helper taking the
states to concatenate as ``*args`` (joined with a column of ones for the bias row of the
weight), log-probabilities normalized with ``scipy.special.logsumexp``, the per-step outputs
collected in a list, and a log-likelihood summed from ``0.0``.

Changes: annotations on the two entry points; ``autograd.numpy`` is numpy. scipy is not a
dependency: without it, ``logsumexp`` is the same function written in numpy.
"""

from typing import Dict

import numpy as np

from benchmarks.realworld_programs import Case
from script import Tensor

try:
    from scipy.special import logsumexp
except ImportError:  # the same reduction, in numpy
    def logsumexp(a, axis=None, keepdims=False):
        top = np.max(a, axis=axis, keepdims=True)
        out = np.log(np.sum(np.exp(a - top), axis=axis, keepdims=True)) + top
        return out if keepdims else np.squeeze(out, axis=axis)


def squash(x):
    return 0.5 * (np.tanh(x) + 1.0)  # a sigmoid written with tanh


def affine_of(weights, *states):
    """The states side by side, then a column of ones (the bias row), times ``weights``."""
    joined = np.hstack(states + (np.ones((states[0].shape[0], 1)),))
    return np.dot(joined, weights)


def rnn_outputs(params, inputs):
    def step(x, h):
        return np.tanh(affine_of(params["change"], x, h))

    def log_probs(h):
        scores = affine_of(params["predict"], h)
        return scores - logsumexp(scores, axis=1, keepdims=True)

    batch = inputs.shape[1]
    h = np.repeat(params["init hiddens"], batch, axis=0)
    outputs = [log_probs(h)]
    for x in inputs:
        h = step(x, h)
        outputs.append(log_probs(h))
    return outputs


def rnn_log_likelihood(params: Dict[str, Tensor], inputs: Tensor, targets: Tensor):
    log_p = rnn_outputs(params, inputs)
    total = 0.0
    steps, batch, _ = inputs.shape
    for t in range(steps):
        total += np.sum(log_p[t] * targets[t])
    return total / (steps * batch)


def lstm_outputs(params, inputs):
    def step(x, h, c):
        candidate = np.tanh(affine_of(params["change"], x, h))
        keep = squash(affine_of(params["forget"], x, h))
        write = squash(affine_of(params["ingate"], x, h))
        show = squash(affine_of(params["outgate"], x, h))
        c = c * keep + write * candidate
        h = show * np.tanh(c)
        return h, c

    def log_probs(h):
        scores = affine_of(params["predict"], h)
        return scores - logsumexp(scores, axis=1, keepdims=True)

    batch = inputs.shape[1]
    h = np.repeat(params["init hiddens"], batch, axis=0)
    c = np.repeat(params["init cells"], batch, axis=0)
    outputs = [log_probs(h)]
    for x in inputs:
        h, c = step(x, h, c)
        outputs.append(log_probs(h))
    return outputs


def lstm_log_likelihood(params: Dict[str, Tensor], inputs: Tensor, targets: Tensor):
    log_p = lstm_outputs(params, inputs)
    total = 0.0
    steps, batch, _ = inputs.shape
    for t in range(steps):
        total += np.sum(log_p[t] * targets[t])
    return total / (steps * batch)


# characters (one-hot), state size, sequence length, sequences; "bench" as the examples' training
# run: 128 characters, 40 states, 30 steps, 60 lines
SIZES = {"test": (6, 4, 5, 3), "bench": (128, 40, 30, 60)}


def _one_hot(dtype: str, size: str, seed: int) -> np.ndarray:
    chars, _, steps, batch = SIZES[size]
    codes = np.random.default_rng(seed).integers(0, chars, (steps, batch))
    return np.eye(chars, dtype=dtype)[codes]


def _params(dtype: str, size: str, names: tuple[str, ...]) -> Dict[str, np.ndarray]:
    chars, state, _, _ = SIZES[size]
    rng = np.random.default_rng(17)
    shapes = {"init hiddens": (1, state), "init cells": (1, state),
              "predict": (state + 1, chars)}
    return {name: (0.3 * rng.standard_normal(shapes.get(name, (chars + state + 1, state))))
            .astype(dtype) for name in names}


def rnn_args(dtype: str, size: str) -> tuple:
    x = _one_hot(dtype, size, 5)
    return _params(dtype, size, ("init hiddens", "change", "predict")), x, x


def lstm_args(dtype: str, size: str) -> tuple:
    x = _one_hot(dtype, size, 6)
    names = ("init cells", "init hiddens", "change", "forget", "ingate", "outgate", "predict")
    return _params(dtype, size, names), x, x


CASES = {
    "rnn_log_likelihood": Case(rnn_log_likelihood, rnn_args, grad=True),
    "lstm_log_likelihood": Case(lstm_log_likelihood, lstm_args, grad=True),
}
BENCH = "lstm_log_likelihood"
