"""Denny Britz's "Recurrent Neural Networks Tutorial, Part 2 - Implementing a RNN with Python,
Numpy and Theano" (https://github.com/dennybritz/rnn-tutorial-rnnlm, ``RNNLM.ipynb`` class
``RNNNumpy`` and ``utils.py``; Apache License 2.0, per the repository's NOTICE).

``forward_propagation`` keeps every state in a preallocated ``s = np.zeros((T, hidden_dim))``
written row by row (``s[t] = np.tanh(self.U[:, x[t]] + self.W.dot(s[t-1]))``, the step before
the first reading ``s[-1]``, set to zeros), looping over ``np.arange(T)``;
``calculate_total_loss`` gathers ``o[np.arange(len(y[i])), y[i]]``; the hand-written ``bptt``
writes ``delta_o[np.arange(len(y)), y] -= 1.``, accumulates ``np.outer`` products and scatters
``dLdU[:, x[bptt_step]] += delta_t`` over ``np.arange(max(0, t-self.bptt_truncate), t+1)[::-1]``.

Changes: annotations; each method is a function taking what it read from ``self`` (``U, V, W``,
``hidden_dim``, ``word_dim``, ``bptt_truncate``) as parameters, and calling the other methods
as functions (``self.forward_propagation(x)`` is ``forward_propagation(x, U, V, W, ...)``).
"""

from typing import List

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from script import Tensor


def softmax(x: Tensor) -> Tensor:
    xt = np.exp(x - np.max(x))
    return xt / np.sum(xt)


def forward_propagation(x: List[int], U: Tensor, V: Tensor, W: Tensor, hidden_dim: int,
                        word_dim: int):
    # The total number of time steps
    T = len(x)
    # During forward propagation we save all hidden states in s because need them later.
    # We add one additional element for the initial hidden, which we set to 0
    s = np.zeros((T, hidden_dim))
    s[-1] = np.zeros(hidden_dim)
    # The outputs at each time step. Again, we save them for later.
    o = np.zeros((T, word_dim))
    # For each time step...
    for t in np.arange(T):
        # Note that we are indxing U by x[t]. This is the same as multiplying U with a one-hot
        # vector.
        s[t] = np.tanh(U[:, x[t]] + W.dot(s[t-1]))
        o[t] = softmax(V.dot(s[t]))
    return [o, s]


def calculate_total_loss(x: List[List[int]], y: List[List[int]], U: Tensor, V: Tensor,
                         W: Tensor, hidden_dim: int, word_dim: int):
    L = 0
    # For each sentence...
    for i in np.arange(len(y)):
        o, s = forward_propagation(x[i], U, V, W, hidden_dim, word_dim)
        # We only care about our prediction of the "correct" words
        correct_word_predictions = o[np.arange(len(y[i])), y[i]]
        # Add to the loss based on how off we were
        L += -1 * np.sum(np.log(correct_word_predictions))
    return L


def bptt(x: List[int], y: List[int], U: Tensor, V: Tensor, W: Tensor, hidden_dim: int,
         word_dim: int, bptt_truncate: int):
    T = len(y)
    # Perform forward propagation
    o, s = forward_propagation(x, U, V, W, hidden_dim, word_dim)
    # We accumulate the gradients in these variables
    dLdU = np.zeros(U.shape)
    dLdV = np.zeros(V.shape)
    dLdW = np.zeros(W.shape)
    delta_o = o
    delta_o[np.arange(len(y)), y] -= 1.
    # For each output backwards...
    for t in np.arange(T)[::-1]:
        dLdV += np.outer(delta_o[t], s[t].T)
        # Initial delta calculation
        delta_t = V.T.dot(delta_o[t]) * (1 - (s[t] ** 2))
        # Backpropagation through time (for at most self.bptt_truncate steps)
        for bptt_step in np.arange(max(0, t-bptt_truncate), t+1)[::-1]:
            dLdW += np.outer(delta_t, s[bptt_step-1])
            dLdU[:, x[bptt_step]] += delta_t
            # Update delta for next step
            delta_t = W.T.dot(delta_t) * (1 - s[bptt_step-1] ** 2)
    return [dLdU, dLdV, dLdW]


SIZES = {"test": (6, 4, 5, 2), "bench": (400, 50, 30, 4)}  # word_dim, hidden_dim, T, sentences


def _sentence(rng: np.random.Generator, word_dim: int, T: int) -> List[int]:
    return [int(i) for i in rng.integers(0, word_dim, T)]


def weights(dtype: str, size: str) -> tuple:
    word_dim, hidden_dim, _, _ = SIZES[size]
    U, V, W = arrays(dtype, 7, (hidden_dim, word_dim), (word_dim, hidden_dim),
                     (hidden_dim, hidden_dim))
    return U, V, W, hidden_dim, word_dim


def forward_args(dtype: str, size: str) -> tuple:
    word_dim, _, T, _ = SIZES[size]
    return (_sentence(np.random.default_rng(1), word_dim, T), *weights(dtype, size))


def loss_args(dtype: str, size: str) -> tuple:
    word_dim, _, T, n = SIZES[size]
    rng = np.random.default_rng(2)
    xs = [_sentence(rng, word_dim, T - k) for k in range(n)]
    ys = [sentence[1:] + [0] for sentence in xs]
    return (xs, ys, *weights(dtype, size))


def bptt_args(dtype: str, size: str) -> tuple:
    word_dim, _, T, _ = SIZES[size]
    x = _sentence(np.random.default_rng(3), word_dim, T)
    return (x, x[1:] + [0], *weights(dtype, size), 3)


CASES = {
    "forward_propagation": Case(forward_propagation, forward_args, grad=True),
    "calculate_total_loss": Case(calculate_total_loss, loss_args, grad=True),
    "bptt": Case(bptt, bptt_args),
}
BENCH = "calculate_total_loss"
