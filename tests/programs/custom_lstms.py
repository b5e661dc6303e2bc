"""The custom_lstms family (TorchScript's ``benchmarks/custom_lstms.py``) as modules in this
language: cells, layers, reversed and bidirectional layers, stacks, a stack with dropout.

Differences from the original are the ones its docstring wished for: states are ``LSTMState``
NamedTuples, ``reverse`` is ``lst[::-1]``, layers of a stack are walked with ``zip`` and
``enumerate`` instead of a manual counter (``StackedLSTM2`` keeps the counter, to test that too).
Parameters are standard-normal like the original's ``torch.randn`` initialisation.
"""

from __future__ import annotations

from typing import Final, List, NamedTuple, Tuple

import numpy as np

from script import Module, ModuleList, Parameter, Tensor, ops


class LSTMState(NamedTuple):
    hx: Tensor
    cx: Tensor


def reverse(lst: List[Tensor]) -> List[Tensor]:
    return lst[::-1]


def _randn(rng: np.random.Generator, dtype: str, *shape: int) -> Parameter:
    return Parameter(rng.standard_normal(shape).astype(dtype))


class LSTMCell(Module):
    def __init__(self, input_size: int, hidden_size: int, rng: np.random.Generator,
                 dtype: str = "float64"):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.weight_ih = _randn(rng, dtype, 4 * hidden_size, input_size)
        self.weight_hh = _randn(rng, dtype, 4 * hidden_size, hidden_size)
        self.bias_ih = _randn(rng, dtype, 4 * hidden_size)
        self.bias_hh = _randn(rng, dtype, 4 * hidden_size)

    def forward(self, input: Tensor, state: LSTMState) -> Tuple[Tensor, LSTMState]:
        hx, cx = state
        gates = (ops.mm(input, self.weight_ih.T) + self.bias_ih +
                 ops.mm(hx, self.weight_hh.T) + self.bias_hh)
        ingate, forgetgate, cellgate, outgate = ops.chunk(gates, 4, 1)
        ingate = ops.sigmoid(ingate)
        forgetgate = ops.sigmoid(forgetgate)
        cellgate = np.tanh(cellgate)
        outgate = ops.sigmoid(outgate)
        cy = (forgetgate * cx) + (ingate * cellgate)
        hy = outgate * np.tanh(cy)
        return hy, LSTMState(hy, cy)


class LayerNorm(Module):
    """The decomposed layer norm of custom_lstms: no epsilon, biased standard deviation."""

    def __init__(self, normalized_shape: int, dtype: str = "float64"):
        super().__init__()
        self.weight = Parameter(np.ones(normalized_shape, dtype))
        self.bias = Parameter(np.zeros(normalized_shape, dtype))

    def forward(self, input: Tensor) -> Tensor:
        mu = input.mean(-1, keepdims=True)
        sigma = input.std(-1, keepdims=True)
        return (input - mu) / sigma * self.weight + self.bias


class LayerNormLSTMCell(Module):
    def __init__(self, input_size: int, hidden_size: int, rng: np.random.Generator,
                 dtype: str = "float64"):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.weight_ih = _randn(rng, dtype, 4 * hidden_size, input_size)
        self.weight_hh = _randn(rng, dtype, 4 * hidden_size, hidden_size)
        self.layernorm_i = LayerNorm(4 * hidden_size, dtype)
        self.layernorm_h = LayerNorm(4 * hidden_size, dtype)
        self.layernorm_c = LayerNorm(hidden_size, dtype)

    def forward(self, input: Tensor, state: LSTMState) -> Tuple[Tensor, LSTMState]:
        hx, cx = state
        igates = self.layernorm_i(ops.mm(input, self.weight_ih.T))
        hgates = self.layernorm_h(ops.mm(hx, self.weight_hh.T))
        gates = igates + hgates
        ingate, forgetgate, cellgate, outgate = ops.chunk(gates, 4, 1)
        ingate = ops.sigmoid(ingate)
        forgetgate = ops.sigmoid(forgetgate)
        cellgate = np.tanh(cellgate)
        outgate = ops.sigmoid(outgate)
        cy = self.layernorm_c((forgetgate * cx) + (ingate * cellgate))
        hy = outgate * np.tanh(cy)
        return hy, LSTMState(hy, cy)


class LSTMLayer(Module):
    def __init__(self, cell: type, *cell_args: object):
        super().__init__()
        self.cell = cell(*cell_args)

    def forward(self, input: Tensor, state: LSTMState) -> Tuple[Tensor, LSTMState]:
        inputs = ops.unbind(input, 0)
        outputs: List[Tensor] = []
        for i in range(len(inputs)):
            out, state = self.cell(inputs[i], state)
            outputs += [out]
        return ops.stack(outputs), state


class ReverseLSTMLayer(Module):
    def __init__(self, cell: type, *cell_args: object):
        super().__init__()
        self.cell = cell(*cell_args)

    def forward(self, input: Tensor, state: LSTMState) -> Tuple[Tensor, LSTMState]:
        inputs = reverse(ops.unbind(input, 0))
        outputs: List[Tensor] = []
        for i in range(len(inputs)):
            out, state = self.cell(inputs[i], state)
            outputs += [out]
        return ops.stack(reverse(outputs)), state


class BidirLSTMLayer(Module):
    __constants__ = ["directions"]

    def __init__(self, cell: type, *cell_args: object):
        super().__init__()
        self.directions = ModuleList([LSTMLayer(cell, *cell_args),
                                      ReverseLSTMLayer(cell, *cell_args)])

    def forward(self, input: Tensor, states: List[LSTMState]
                ) -> Tuple[Tensor, List[LSTMState]]:
        outputs: List[Tensor] = []
        output_states: List[LSTMState] = []
        for i, direction in enumerate(self.directions):
            state = states[i]
            out, out_state = direction(input, state)
            outputs += [out]
            output_states += [out_state]
        return ops.cat(outputs, -1), output_states


def init_stacked_lstm(num_layers: int, layer: type, first_layer_args: list,
                      other_layer_args: list) -> list:
    layers = [layer(*first_layer_args)] + [layer(*other_layer_args)
                                           for _ in range(num_layers - 1)]
    return layers


class StackedLSTM(Module):
    def __init__(self, num_layers: int, layer: type, first_layer_args: list,
                 other_layer_args: list):
        super().__init__()
        self.layers = init_stacked_lstm(num_layers, layer, first_layer_args, other_layer_args)

    def forward(self, input: Tensor, states: List[LSTMState]
                ) -> Tuple[Tensor, List[LSTMState]]:
        output_states: List[LSTMState] = []
        output = input
        for rnn_layer, state in zip(self.layers, states):
            output, out_state = rnn_layer(output, state)
            output_states += [out_state]
        return output, output_states


class StackedLSTM2(Module):
    """A stack of bidirectional layers: one list of two states per layer."""

    def __init__(self, num_layers: int, layer: type, first_layer_args: list,
                 other_layer_args: list):
        super().__init__()
        self.layers = init_stacked_lstm(num_layers, layer, first_layer_args, other_layer_args)

    def forward(self, input: Tensor, states: List[List[LSTMState]]
                ) -> Tuple[Tensor, List[List[LSTMState]]]:
        output_states: List[List[LSTMState]] = []
        output = input
        i = 0
        for rnn_layer in self.layers:
            state = states[i]
            output, out_state = rnn_layer(output, state)
            output_states += [out_state]
            i += 1
        return output, output_states


class Dropout(Module):
    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, input: Tensor) -> Tensor:
        return ops.dropout(input, self.p, self.training)


class StackedLSTMWithDropout(Module):
    num_layers: Final[int]

    def __init__(self, num_layers: int, layer: type, first_layer_args: list,
                 other_layer_args: list):
        super().__init__()
        self.layers = init_stacked_lstm(num_layers, layer, first_layer_args, other_layer_args)
        self.num_layers = num_layers
        self.dropout_layer = Dropout(0.4)

    def forward(self, input: Tensor, states: List[LSTMState]
                ) -> Tuple[Tensor, List[LSTMState]]:
        output_states: List[LSTMState] = []
        output = input
        for i, rnn_layer in enumerate(self.layers):
            state = states[i]
            output, out_state = rnn_layer(output, state)
            # dropout after every layer but the last
            if i < self.num_layers - 1:
                output = self.dropout_layer(output)
            output_states += [out_state]
        return output, output_states


def script_lstm(input_size: int, hidden_size: int, num_layers: int, dropout: bool = False,
                bidirectional: bool = False, seed: int = 0, dtype: str = "float64") -> Module:
    """The module custom_lstms' ``script_lstm`` builds (eager; ``script()`` it to compile)."""
    rng = np.random.default_rng(seed)
    if bidirectional:
        return StackedLSTM2(num_layers, BidirLSTMLayer,
                            first_layer_args=[LSTMCell, input_size, hidden_size, rng, dtype],
                            other_layer_args=[LSTMCell, hidden_size * 2, hidden_size, rng,
                                              dtype])
    stack = StackedLSTMWithDropout if dropout else StackedLSTM
    return stack(num_layers, LSTMLayer,
                 first_layer_args=[LSTMCell, input_size, hidden_size, rng, dtype],
                 other_layer_args=[LSTMCell, hidden_size, hidden_size, rng, dtype])


def script_lnlstm(input_size: int, hidden_size: int, num_layers: int, seed: int = 0,
                  dtype: str = "float64") -> Module:
    """A stack of layer-normalised LSTM layers (custom_lstms' ``script_lnlstm``)."""
    rng = np.random.default_rng(seed)
    return StackedLSTM(num_layers, LSTMLayer,
                       first_layer_args=[LayerNormLSTMCell, input_size, hidden_size, rng, dtype],
                       other_layer_args=[LayerNormLSTMCell, hidden_size, hidden_size, rng,
                                         dtype])


def random_states(num_layers: int, batch: int, hidden_size: int, rng: np.random.Generator,
                  directions: int = 1, dtype: str = "float64") -> list:
    """Initial states: one LSTMState per layer, or per layer a list of one per direction."""
    def state() -> LSTMState:
        return LSTMState(rng.standard_normal((batch, hidden_size)).astype(dtype),
                         rng.standard_normal((batch, hidden_size)).astype(dtype))
    if directions == 1:
        return [state() for _ in range(num_layers)]
    return [[state() for _ in range(directions)] for _ in range(num_layers)]


def reference_lstm(input: np.ndarray, states: list, weights: list) -> tuple:
    """A plain numpy multi-layer LSTM (the role ``nn.LSTM`` plays in custom_lstms' self-test):
    ``weights[layer] = (w_ih, w_hh, b_ih, b_hh)``; returns (output, [(h, c) per layer])."""
    def sigmoid(x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-x))
    output, finals = input, []
    for (w_ih, w_hh, b_ih, b_hh), (h, c) in zip(weights, states):
        steps = []
        for x in output:
            i, f, g, o = np.split(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=1)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
            steps.append(h)
        output = np.stack(steps)
        finals.append((h, c))
    return output, finals
