"""Andrej Karpathy's min-char-rnn: "Minimal character-level language model with a Vanilla
Recurrent Neural Network, in Python/numpy" (gist https://gist.github.com/karpathy/
d4dee566867f8291f086, ``min-char-rnn.py``, BSD License).

``lossFun`` as in the gist: the forward pass keeps its steps in dicts ``xs, hs, ys, ps`` keyed by
the step (``hs[-1]`` is the previous state), builds each one-hot with
``xs[t] = np.zeros((vocab_size, 1)); xs[t][inputs[t]] = 1``, accumulates ``loss = 0;
loss += ...``; the hand-written backward pass writes ``dy[targets[t]] -= 1`` into a copy and
clips every gradient in place with ``np.clip(dparam, -5, 5, out=dparam)``. ``sample`` as in the
gist: one-hot inputs written in place and ``np.random.choice(range(vocab_size), p=p.ravel())``,
drawing from numpy's global generator as the plain function does.

Changes: annotations; the model's global arrays (``Wxh, Whh, Why, bh, by``) and the global
``vocab_size`` are parameters; ``xrange`` is ``range`` (Python 3).
"""

from typing import List

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from script import Tensor


def lossFun(inputs: List[int], targets: List[int], hprev: Tensor, Wxh: Tensor, Whh: Tensor,
            Why: Tensor, bh: Tensor, by: Tensor, vocab_size: int):
    """
    inputs,targets are both list of integers.
    hprev is Hx1 array of initial hidden state
    returns the loss, gradients on model parameters, and last hidden state
    """
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    # forward pass
    for t in range(len(inputs)):
        xs[t] = np.zeros((vocab_size, 1))  # encode in 1-of-k representation
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t-1]) + bh)  # hidden state
        ys[t] = np.dot(Why, hs[t]) + by  # unnormalized log probabilities for next chars
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))  # probabilities for next chars
        loss += -np.log(ps[t][targets[t], 0])  # softmax (cross-entropy loss)
    # backward pass: compute gradients going backwards
    dWxh, dWhh, dWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
    dbh, dby = np.zeros_like(bh), np.zeros_like(by)
    dhnext = np.zeros_like(hs[0])
    for t in reversed(range(len(inputs))):
        dy = np.copy(ps[t])
        dy[targets[t]] -= 1  # backprop into y
        dWhy += np.dot(dy, hs[t].T)
        dby += dy
        dh = np.dot(Why.T, dy) + dhnext  # backprop into h
        dhraw = (1 - hs[t] * hs[t]) * dh  # backprop through tanh nonlinearity
        dbh += dhraw
        dWxh += np.dot(dhraw, xs[t].T)
        dWhh += np.dot(dhraw, hs[t-1].T)
        dhnext = np.dot(Whh.T, dhraw)
    for dparam in [dWxh, dWhh, dWhy, dbh, dby]:
        np.clip(dparam, -5, 5, out=dparam)  # clip to mitigate exploding gradients
    return loss, dWxh, dWhh, dWhy, dbh, dby, hs[len(inputs)-1]


def sample(h: Tensor, seed_ix: int, n: int, Wxh: Tensor, Whh: Tensor, Why: Tensor, bh: Tensor,
           by: Tensor, vocab_size: int):
    """
    sample a sequence of integers from the model
    h is memory state, seed_ix is seed letter for first time step
    """
    x = np.zeros((vocab_size, 1))
    x[seed_ix] = 1
    ixes = []
    for t in range(n):  # noqa: B007 -- as the gist writes it
        h = np.tanh(np.dot(Wxh, x) + np.dot(Whh, h) + bh)
        y = np.dot(Why, h) + by
        p = np.exp(y) / np.sum(np.exp(y))
        ix = np.random.choice(range(vocab_size), p=p.ravel())
        x = np.zeros((vocab_size, 1))
        x[ix] = 1
        ixes.append(ix)
    return ixes


SIZES = {"test": (5, 4, 6), "bench": (65, 100, 25)}  # vocab_size, hidden_size, seq_length


def make_args(dtype: str, size: str) -> tuple:
    vocab_size, hidden_size, seq_length = SIZES[size]
    rng = np.random.default_rng(3)
    data = [int(i) for i in rng.integers(0, vocab_size, seq_length + 1)]
    inputs, targets = data[:-1], data[1:]
    Wxh, Whh, Why, bh, by, hprev = arrays(
        dtype, 4, (hidden_size, vocab_size), (hidden_size, hidden_size), (vocab_size, hidden_size),
        (hidden_size, 1), (vocab_size, 1), (hidden_size, 1))
    return inputs, targets, hprev, Wxh, Whh, Why, bh, by, vocab_size


CASES = {"lossFun": Case(lossFun, make_args, grad=True)}
BENCH = "lossFun"
