"""A GRU as modules in this language: a cell (PyTorch's ``GRUCell`` equations), a layer running
it over time, and a stack of layers; parameters standard-normal, states plain arrays."""

from __future__ import annotations

from typing import List, Tuple

import numpy as np

from script import Module, Parameter, Tensor, ops


class GRUCell(Module):
    def __init__(self, input_size: int, hidden_size: int, rng: np.random.Generator,
                 dtype: str = "float64"):
        super().__init__()
        self.hidden_size = hidden_size
        gates = 3 * hidden_size
        self.weight_ih = Parameter(rng.standard_normal((gates, input_size)).astype(dtype))
        self.weight_hh = Parameter(rng.standard_normal((gates, hidden_size)).astype(dtype))
        self.bias_ih = Parameter(rng.standard_normal(gates).astype(dtype))
        self.bias_hh = Parameter(rng.standard_normal(gates).astype(dtype))

    def forward(self, x: Tensor, hidden: Tensor) -> Tensor:
        gi = ops.mm(x, self.weight_ih.T) + self.bias_ih
        gh = ops.mm(hidden, self.weight_hh.T) + self.bias_hh
        i_r, i_i, i_n = ops.chunk(gi, 3, 1)
        h_r, h_i, h_n = ops.chunk(gh, 3, 1)
        resetgate = ops.sigmoid(i_r + h_r)
        inputgate = ops.sigmoid(i_i + h_i)
        newgate = np.tanh(i_n + resetgate * h_n)
        return newgate + inputgate * (hidden - newgate)


class GRULayer(Module):
    def __init__(self, input_size: int, hidden_size: int, rng: np.random.Generator,
                 dtype: str = "float64"):
        super().__init__()
        self.cell = GRUCell(input_size, hidden_size, rng, dtype)

    def forward(self, input: Tensor, hidden: Tensor) -> Tuple[Tensor, Tensor]:
        outputs: List[Tensor] = []
        for x in ops.unbind(input, 0):
            hidden = self.cell(x, hidden)
            outputs += [hidden]
        return ops.stack(outputs), hidden


class StackedGRU(Module):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int, seed: int = 0,
                 dtype: str = "float64"):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.layers = [GRULayer(input_size if k == 0 else hidden_size, hidden_size, rng, dtype)
                       for k in range(num_layers)]

    def forward(self, input: Tensor, states: List[Tensor]) -> Tuple[Tensor, List[Tensor]]:
        finals: List[Tensor] = []
        output = input
        for layer, state in zip(self.layers, states):
            output, final = layer(output, state)
            finals += [final]
        return output, finals


def reference_gru(input: np.ndarray, states: list, weights: list) -> tuple:
    """Plain numpy: ``weights[layer] = (w_ih, w_hh, b_ih, b_hh)``; returns (output, finals)."""
    def sigmoid(x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-x))
    output, finals = input, []
    for (w_ih, w_hh, b_ih, b_hh), h in zip(weights, states):
        steps = []
        for x in output:
            i_r, i_i, i_n = np.split(x @ w_ih.T + b_ih, 3, axis=1)
            h_r, h_i, h_n = np.split(h @ w_hh.T + b_hh, 3, axis=1)
            r, z = sigmoid(i_r + h_r), sigmoid(i_i + h_i)
            n = np.tanh(i_n + r * h_n)
            h = n + z * (h - n)
            steps.append(h)
        output = np.stack(steps)
        finals.append(h)
    return output, finals
