"""Programs for activity analysis: parts that must stay out of the differentiated computation."""

from typing import Dict, Tuple

import numpy as np

from script import Tensor, ops


def carried_decision(x: Tensor, h: Tensor, w: Tensor, w_out: Tensor) -> Tuple[Tensor, Tensor]:
    """An Elman layer whose loop also carries a running maximum of a readout that only feeds a
    comparison: no output's gradient depends on it."""
    best = ops.zeros_like(h)
    for x_t in ops.unbind(x, 0):
        h = np.tanh(x_t @ w.T + h)
        best = np.maximum(best, h @ w_out.T)
    return h, ops.gt(best, 0.5)


def masked_layer(x: Tensor, lengths: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor,
                 b: Tensor) -> Tuple[Tensor, int]:
    """A recurrence masked by integer sequence lengths, counting its steps."""
    steps = 0
    for t in range(x.shape[0]):
        mask = np.expand_dims(ops.astype(ops.gt(lengths, t), "float64"), 1)
        new = np.tanh(x[t] @ w_ih.T + h @ w_hh.T + b)
        h = mask * new + (1.0 - mask) * h
        steps += 1
    return h, steps


def overwritten_in_loop(x: Tensor, w: Tensor, n: int) -> Tensor:
    """A carried value the body overwrites without reading it: after no iteration it is ``x``."""
    acc = x
    for _ in range(n):
        acc = np.tanh(w)
    return acc


def dict_started_with_zeros(xs: Tensor, w: Tensor, w_hh: Tensor) -> Tensor:
    """A dict whose first entry is a constant: the read of it comes before any stored value
    depends on an argument."""
    hs: Dict[int, Tensor] = {}
    hs[-1] = np.zeros((2, 4))
    for t in range(xs.shape[0]):
        hs[t] = np.tanh(xs[t] @ w + hs[t - 1] @ w_hh)
    return (hs[xs.shape[0] - 1] ** 2).sum()
