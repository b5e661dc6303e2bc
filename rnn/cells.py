"""Recurrent cells written in the scripting language: one time step each.

Every cell is a ``Module`` whose ``forward`` is ordinary annotated Python over ``script.ops``, so
it runs eagerly, compiles with ``script(cell)``, fuses its elementwise tail into one kernel and
differentiates like user code. Weight layouts, gate orders and initialisation follow PyTorch:

- ``LSTMCell``: gates ``i, f, g, o`` stacked in ``weight_ih (4H, I)``; state ``(h, c)``.
- ``GRUCell``: gates ``r, z, n`` in ``weight_ih (3H, I)``;
  ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h' = (1 - z) * n + z * h``.
- ``RNNCell``: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (or ``relu``).
- ``LayerNormLSTMCell`` / ``LayerNormGRUCell``: layer norm (with ``eps`` and a learnable gain and
  bias) on the input and hidden gate pre-activations, and for the LSTM on the cell state.

A cell with one state tensor has ``state_arity = 1`` and ``forward(input, hx) -> hy``; a cell with
``(h, c)`` has ``state_arity = 2`` and ``forward(input, (hx, cx)) -> (hy, cy)``. Layers
(``rnn.layers``) accept any cell following one of the two conventions.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from rnn.compiled import CompiledModule
from rnn.init import DEFAULT_DTYPE, as_generator, recurrent_bound, uniform
from script import Parameter, Tensor, ops


class _GatedCell(CompiledModule):
    """Weights of a cell with ``gates`` stacked gate blocks, initialised as PyTorch does."""

    state_arity = 1
    gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *,
                 rng: np.random.Generator | int | None = None, dtype: Any = DEFAULT_DTYPE,
                 proj_size: int = 0):
        super().__init__()
        gen = as_generator(rng)
        bound = recurrent_bound(hidden_size)
        rows = self.gates * hidden_size
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.proj_size = proj_size
        """the size of ``h`` when it is projected (an LSTM's ``proj_size``), else 0."""
        self.bias = bias
        self.weight_ih = uniform(gen, (rows, input_size), bound, dtype)
        self.weight_hh = uniform(gen, (rows, proj_size or hidden_size), bound, dtype)
        if bias:
            self.bias_ih = uniform(gen, (rows,), bound, dtype)
            self.bias_hh = uniform(gen, (rows,), bound, dtype)

    def batched(self, input: Tensor, hx: Optional[Tensor], size: int) -> Tuple[Tensor, Tensor]:
        """``input`` and the state as a batch: an unbatched ``(I,)`` input (and ``(size,)``
        state) gets a batch axis, an omitted state is zeros, as torch's cells take them."""
        x = input if input.ndim != 1 else ops.expand_dims(input, 0)
        if hx is None:
            return x, ops.zeros((x.shape[0], size), self.weight_ih.dtype)
        return x, (hx if input.ndim != 1 else ops.expand_dims(hx, 0))

    def check_step(self, input: Tensor, hx: Tensor, size: int) -> None:
        """torch's checks of a step's arguments: ``input (B, I)`` and a state ``(B, size)``, in
        the weights' dtype (numpy would broadcast a ``(1, H)`` state over the batch, or promote
        a float32 cell to float64). In compiled code the tests fold away where they hold."""
        if input.dtype != self.weight_ih.dtype or hx.dtype != self.weight_ih.dtype:
            raise ValueError("the input and state dtypes must match the cell's weights' dtype")
        if input.ndim != 2 or input.shape[1] != self.input_size:
            raise ValueError("the input must have shape (batch, input_size)")
        if hx.shape != (input.shape[0], size):
            raise ValueError("the state must have shape (batch, hidden_size), batch being "
                             "the input's")


class LSTMCell(_GatedCell):
    """``torch.nn.LSTMCell``: ``forward(input (B, I), (hx, cx)) -> (hy, cy)``. With
    ``proj_size=P > 0`` (torch's ``LSTM(proj_size=P)`` per cell) ``h`` is projected to ``P``
    by ``weight_hr (P, H)``: ``hx``/``hy`` are ``(B, P)`` and ``weight_hh`` is ``(4H, P)``."""

    state_arity = 2
    gates = 4

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, *,
                 rng: np.random.Generator | int | None = None, dtype: Any = DEFAULT_DTYPE,
                 proj_size: int = 0):
        if not 0 <= proj_size < hidden_size:
            raise ValueError(f"proj_size must be between 0 and hidden_size ({hidden_size}) "
                             f"exclusive, got {proj_size}")
        gen = as_generator(rng)
        super().__init__(input_size, hidden_size, bias, rng=gen, dtype=dtype,
                         proj_size=proj_size)
        if proj_size:
            self.weight_hr = uniform(gen, (proj_size, hidden_size),
                                     recurrent_bound(hidden_size), dtype)

    def forward(self, input: Tensor, state: Optional[Tuple[Tensor, Tensor]] = None
                ) -> Tuple[Tensor, Tensor]:
        if state is None:
            x, hx = self.batched(input, None, self.weight_hh.shape[1])
            x, cx = self.batched(input, None, self.hidden_size)
        else:
            x, hx = self.batched(input, state[0], self.weight_hh.shape[1])
            x, cx = self.batched(input, state[1], self.hidden_size)
        self.check_step(x, hx, self.weight_hh.shape[1])
        self.check_step(x, cx, self.hidden_size)
        gates = x @ self.weight_ih.T + hx @ self.weight_hh.T
        if self.bias:
            gates = gates + self.bias_ih + self.bias_hh
        ingate, forgetgate, cellgate, outgate = ops.chunk(gates, 4, 1)
        cy = ops.sigmoid(forgetgate) * cx + ops.sigmoid(ingate) * np.tanh(cellgate)
        hy = ops.sigmoid(outgate) * np.tanh(cy)
        if self.proj_size > 0:  # static: a projected LSTM's h is W_hr (o * tanh(c))
            hy = hy @ self.weight_hr.T
        if input.ndim == 1:  # static: an unbatched step gives unbatched states
            return hy[0], cy[0]
        return hy, cy


class GRUCell(_GatedCell):
    """``torch.nn.GRUCell``: ``forward(input (B, I), hx (B, H)) -> hy``."""

    gates = 3

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        x, h = self.batched(input, hx, self.hidden_size)
        self.check_step(x, h, self.hidden_size)
        gi = x @ self.weight_ih.T
        gh = h @ self.weight_hh.T
        if self.bias:
            gi = gi + self.bias_ih
            gh = gh + self.bias_hh
        i_r, i_z, i_n = ops.chunk(gi, 3, 1)
        h_r, h_z, h_n = ops.chunk(gh, 3, 1)
        resetgate = ops.sigmoid(i_r + h_r)
        updategate = ops.sigmoid(i_z + h_z)
        newgate = np.tanh(i_n + resetgate * h_n)
        hy = (1.0 - updategate) * newgate + updategate * h
        return hy[0] if input.ndim == 1 else hy


class RNNCell(_GatedCell):
    """``torch.nn.RNNCell``: ``hy = act(W_ih x + b_ih + W_hh h + b_hh)``, ``act`` being
    ``nonlinearity='tanh'`` or ``'relu'``."""

    gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", *, rng: np.random.Generator | int | None = None,
                 dtype: Any = DEFAULT_DTYPE):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"unknown nonlinearity '{nonlinearity}' (use 'tanh' or 'relu')")
        super().__init__(input_size, hidden_size, bias, rng=rng, dtype=dtype)
        self.nonlinearity = nonlinearity
        self.use_relu = nonlinearity == "relu"

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        x, h = self.batched(input, hx, self.hidden_size)
        self.check_step(x, h, self.hidden_size)
        pre = x @ self.weight_ih.T + h @ self.weight_hh.T
        if self.bias:
            pre = pre + self.bias_ih + self.bias_hh
        hy = ops.relu(pre) if self.use_relu else np.tanh(pre)
        return hy[0] if input.ndim == 1 else hy


class LayerNorm(CompiledModule):
    """Layer norm over the last axis: ``(x - mean) / sqrt(var + eps) * weight + bias`` with the
    biased variance (``torch.nn.LayerNorm``), written out so it fuses with its neighbours."""

    def __init__(self, normalized_shape: int, eps: float = 1e-5, dtype: Any = DEFAULT_DTYPE):
        super().__init__()
        self.eps = eps
        self.weight = Parameter(np.ones(normalized_shape, dtype))
        self.bias = Parameter(np.zeros(normalized_shape, dtype))

    def forward(self, input: Tensor) -> Tensor:
        mu = input.mean(-1, keepdims=True)
        centred = input - mu
        variance = (centred * centred).mean(-1, keepdims=True)
        return centred / np.sqrt(variance + self.eps) * self.weight + self.bias


class _LayerNormCell(CompiledModule):
    """Weights of a layer-normalised cell: the layer norms' biases replace the gate biases."""

    state_arity = 1
    gates = 1

    def __init__(self, input_size: int, hidden_size: int, eps: float = 1e-5, *,
                 rng: np.random.Generator | int | None = None, dtype: Any = DEFAULT_DTYPE):
        super().__init__()
        gen = as_generator(rng)
        bound = recurrent_bound(hidden_size)
        rows = self.gates * hidden_size
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.weight_ih = uniform(gen, (rows, input_size), bound, dtype)
        self.weight_hh = uniform(gen, (rows, hidden_size), bound, dtype)
        self.layernorm_i = LayerNorm(rows, eps, dtype)
        self.layernorm_h = LayerNorm(rows, eps, dtype)


class LayerNormLSTMCell(_LayerNormCell):
    """The custom_lstms layer-norm LSTM (with ``eps``): layer norm on ``W_ih x``, on ``W_hh h``
    and on the new cell state; ``forward(input, (hx, cx)) -> (hy, cy)``."""

    state_arity = 2
    gates = 4

    def __init__(self, input_size: int, hidden_size: int, eps: float = 1e-5, *,
                 rng: np.random.Generator | int | None = None, dtype: Any = DEFAULT_DTYPE):
        super().__init__(input_size, hidden_size, eps, rng=rng, dtype=dtype)
        self.layernorm_c = LayerNorm(hidden_size, eps, dtype)

    def forward(self, input: Tensor, state: Tuple[Tensor, Tensor]) -> Tuple[Tensor, Tensor]:
        hx, cx = state
        igates = self.layernorm_i(input @ self.weight_ih.T)
        hgates = self.layernorm_h(hx @ self.weight_hh.T)
        ingate, forgetgate, cellgate, outgate = ops.chunk(igates + hgates, 4, 1)
        cy = self.layernorm_c(ops.sigmoid(forgetgate) * cx +
                              ops.sigmoid(ingate) * np.tanh(cellgate))
        hy = ops.sigmoid(outgate) * np.tanh(cy)
        return hy, cy


class LayerNormGRUCell(_LayerNormCell):
    """A GRU with layer norm on ``W_ih x`` and on ``W_hh h`` (the gate pre-activations);
    ``forward(input, hx) -> hy`` with PyTorch's GRU update."""

    gates = 3

    def forward(self, input: Tensor, hx: Tensor) -> Tensor:
        i_r, i_z, i_n = ops.chunk(self.layernorm_i(input @ self.weight_ih.T), 3, 1)
        h_r, h_z, h_n = ops.chunk(self.layernorm_h(hx @ self.weight_hh.T), 3, 1)
        resetgate = ops.sigmoid(i_r + h_r)
        updategate = ops.sigmoid(i_z + h_z)
        newgate = np.tanh(i_n + resetgate * h_n)
        return (1.0 - updategate) * newgate + updategate * hx


__all__ = ["GRUCell", "LSTMCell", "LayerNorm", "LayerNormGRUCell", "LayerNormLSTMCell",
           "RNNCell"]
