"""Small layers that tests of several topics call: an MLP over a list of weights and layer norms."""

from typing import List

import numpy as np

from script import Tensor, ops


def mlp(x: Tensor, ws: List[Tensor]) -> Tensor:
    for i in range(len(ws)):
        x = np.tanh(x @ ws[i])
    return x


def affine_norm(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return ops.layer_norm(x, w, b)


def norm_in_a_loop(xs: Tensor, w: Tensor, b: Tensor) -> Tensor:
    h = xs[0] * 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(ops.layer_norm(xs[t] + h, w, b))
    return h
