"""``LSTM``, ``GRU`` and ``RNN``: the ``torch.nn`` front ends over the scripted cells and layers.

Constructor arguments, shapes, parameter names and layouts are PyTorch's::

    lstm = LSTM(input_size, hidden_size, num_layers=2, bidirectional=True, batch_first=False)
    output, (h_n, c_n) = lstm(x)            # x (T, B, I) -> output (T, B, D*H), h_n (D*L, B, H)
    output, h_n = GRU(...)(x, h0)

The parameters are registered on the front end as ``weight_ih_l0`` ``(G*H, I)``,
``weight_hh_l0``, ``bias_ih_l0``, ``bias_hh_l0``, ``weight_ih_l0_reverse``, ... so
``load_state_dict`` takes a PyTorch state dict converted to numpy arrays. The same ``Parameter``
objects are held by the cells inside (``self.rnn.layers[k]...cell``), which is where ``forward``
reads them. ``forward`` takes an optional ``lengths`` (B ints, an integer array) for padded
batches; see ``rnn.layers``. The first call compiles the whole stack (``rnn.compiled``), after
checking the arguments as torch does (``rnn.checks``): an unbatched ``(T, I)`` input with
``(D*L, H)`` states works, a wrong shape or dtype is refused at the call. ``script(lstm)`` still
returns a compiled module of its own.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from rnn import checks
from rnn.cells import GRUCell, LSTMCell, RNNCell
from rnn.compiled import CompiledModule
from rnn.init import DEFAULT_DTYPE, as_dtype, as_generator
from rnn.layers import Bidirectional, Recurrent, StackedRNN
from rnn.varlen import PackedSequence, pad_packed_sequence, repack
from script import Module, Parameter, Tensor, ops


class RNNBase(CompiledModule):
    """The stack of cells behind ``LSTM`` / ``GRU`` / ``RNN`` and its PyTorch parameter names."""

    state_pair = False
    """whether ``hx`` is a pair ``(h0, c0)`` (an LSTM) rather than one array."""

    _private_modules = ("rnn",)  # the cells' weights are state_dict's as weight_ih_l0, ...

    def __init__(self, cell_type: type, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, *, rng: np.random.Generator | int | None = None,
                 dtype: Any = DEFAULT_DTYPE, device: Any = None, **cell_kwargs: Any):
        super().__init__()
        _check_sizes(input_size, hidden_size)
        dtype = as_dtype(dtype)
        if num_layers < 1:
            raise ValueError(f"num_layers must be at least 1, got {num_layers}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.bidirectional = bidirectional
        self.directions = 2 if bidirectional else 1
        self.proj_size = cell_kwargs.get("proj_size", 0)
        self.state_size = self.proj_size or hidden_size
        """the size of ``h`` and of the output per direction (``proj_size`` when projected)."""
        self.dtype = np.dtype(dtype).name
        gen = as_generator(rng)
        layers = []
        for k in range(num_layers):
            size = input_size if k == 0 else self.state_size * self.directions
            cells = [cell_type(size, hidden_size, bias, rng=gen, dtype=dtype, **cell_kwargs)
                     for _ in range(self.directions)]
            self._register_cells(k, cells)
            layers.append(_directional_layer(cells))
        self.rnn = StackedRNN(layers, dropout)
        self.dropout = float(dropout)
        if device is not None and str(device) != "cpu":
            self.to(str(device))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A ``PackedSequence`` input runs padded with its lengths and gives a packed output,
        as torch's (``hx`` and the final states in the sequences' own order)."""
        if args and isinstance(args[0], PackedSequence):
            packed = args[0]
            padded, lengths = pad_packed_sequence(packed, self.batch_first)
            output, state = super().__call__(padded, *args[1:], lengths=lengths, **kwargs)
            return repack(output, packed, lengths, self.batch_first), state
        return super().__call__(*args, **kwargs)

    def flatten_parameters(self) -> None:
        """torch's cuDNN weight layout call: a no-op here (the weights are used as they are)."""
    def _on_converted(self) -> None:
        self.dtype = self.weight_ih_l0.dtype.name  # the zeros state follows float()/double()

    def _register_cells(self, k: int, cells: list[Module]) -> None:
        """Expose each cell's parameters under PyTorch's name (``weight_ih_l0_reverse``)."""
        aliases = self.__dict__.setdefault("_cell_params", {})
        for cell, suffix in zip(cells, ("", "_reverse")):
            for name, param in list(cell.named_parameters()):
                aliases[f"{name}_l{k}{suffix}"] = (cell, name)
                self.register_parameter(f"{name}_l{k}{suffix}", param)

    def __setattr__(self, name: str, value: Any) -> None:
        """``lstm.weight_ih_l0 = Parameter(w)`` replaces the parameter the cell computes with
        too, as in torch (the cell holds the same ``Parameter``)."""
        owner = self.__dict__.get("_cell_params", {}).get(name)
        if owner is not None and isinstance(value, Parameter) and \
                owner[0]._parameters.get(owner[1]) is not value:
            setattr(owner[0], owner[1], value)
        if name == "dropout" and "rnn" in self.__dict__.get("_modules", {}):
            self.rnn.dropout = float(value)  # lstm.dropout = 0.5 later on, as torch reads it
        super().__setattr__(name, value)

    def all_weights(self) -> list[list[Any]]:
        """Per layer and direction, the parameter arrays in PyTorch's order."""
        return [[p.data for p in cell.parameters()] for cell in self.cells()]

    def cells(self) -> list[Module]:
        """The cells, layer by layer, forward direction first."""
        found = []
        for layer in self.rnn.layers:
            parts = [layer] if isinstance(layer, Recurrent) else \
                [layer.forward_layer, layer.backward_layer]
            found.extend(part.cell for part in parts)
        return found

    def zero_state(self, batch: int) -> np.ndarray:
        """The default initial ``h`` ``(D * L, batch, H)`` (``H`` is ``proj_size`` when set)."""
        return np.zeros((self.directions * self.num_layers, batch, self.state_size),
                        self.dtype)

    def prepare_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                     ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Check ``input``, ``hx`` and ``lengths`` as ``torch.nn`` does (``rnn.checks``), before
        anything runs; a list of lengths becomes an int64 array."""
        name = type(self).__name__
        x, hx, lengths = checks.bind(name, args, kwargs)
        dtype = self.weight_ih_l0.dtype
        checks.check_input(name, x, self.input_size, dtype)
        unbatched = x.ndim == 2
        batch = 1 if unbatched else x.shape[0 if self.batch_first else 1]
        steps = x.shape[0] if unbatched or not self.batch_first else x.shape[1]
        if steps == 0:
            raise checks.RNNInputError(f"{name}: expected the sequence length to be larger "
                                       "than 0")
        if batch == 0:
            raise checks.RNNInputError(f"{name}: a batch of 0 sequences is not supported")
        rows = self.directions * self.num_layers
        lead = (rows,) if unbatched else (rows, batch)
        if hx is not None:
            checks.check_states(name, hx, self.state_pair, (*lead, self.state_size), dtype,
                                (*lead, self.hidden_size))
        if lengths is not None:
            lengths = checks.check_lengths(name, lengths, batch, steps)
        return (x, hx, lengths), {}

    def time_major(self, input: Tensor, unbatched: bool) -> Tensor:
        """``input`` as ``(T, B, I)``: an unbatched ``(T, I)`` gets a batch of one, a
        ``batch_first`` one is transposed."""
        x = input
        if unbatched:  # the batch axis goes where the layout puts it, so x is 3-D below
            x = ops.expand_dims(input, 0 if self.batch_first else 1)
        if self.batch_first:
            x = ops.transpose(x, (1, 0, 2))
        return x

    def check_compiled(self, x: Tensor, h0: Tensor, c0: Tensor,
                       lengths: Optional[Tensor]) -> None:
        """``prepare_call``'s checks again, in ``forward``: a module that calls this one inside
        its own compiled ``forward`` (``script(model)``) does not run ``prepare_call``. The
        shape and dtype tests fold away where they hold (shapes are static); the lengths are
        read at run time."""
        rows = self.directions * self.num_layers
        if x.shape[0] == 0 or x.shape[1] == 0:
            raise ValueError("the input must have at least one step and one sequence")
        if x.dtype != self.dtype:
            raise ValueError("the input's dtype does not match the parameters' dtype")
        if x.shape[2] != self.input_size:
            raise ValueError("input.shape[-1] must equal input_size")
        if h0.shape != (rows, x.shape[1], self.state_size) or h0.dtype != self.dtype:
            raise ValueError("the initial state h0 must have shape (num_layers * "
                             "num_directions, batch, hidden_size) and the parameters' dtype")
        if c0.shape != (rows, x.shape[1], self.hidden_size) or c0.dtype != self.dtype:
            raise ValueError("the initial cell state c0 must have shape (num_layers * "
                             "num_directions, batch, hidden_size) and the parameters' dtype")
        if lengths is not None:
            if lengths.shape != (x.shape[1],):
                raise ValueError("lengths must hold one length per batch row")
            if np.min(lengths) < 0 or np.max(lengths) > x.shape[0]:
                raise ValueError("every length must be between 0 and the sequence length")

    def batch_layout(self, output: Tensor) -> Tensor:
        """A ``(T, B, D*H)`` output in the caller's layout (``(B, T, D*H)`` with
        ``batch_first``)."""
        if self.batch_first:
            return ops.transpose(output, (1, 0, 2))
        return output


def _check_sizes(input_size: int, hidden_size: int) -> None:
    """torch's checks of the sizes (a zero hidden size compiles to empty matmuls otherwise)."""
    if not isinstance(hidden_size, int) or isinstance(hidden_size, bool) or hidden_size <= 0:
        raise ValueError(f"hidden_size must be an integer greater than zero, got {hidden_size!r}")
    if not isinstance(input_size, int) or isinstance(input_size, bool) or input_size < 0:
        raise ValueError(f"input_size must be a non-negative integer, got {input_size!r}")


def _directional_layer(cells: list[Module]) -> Module:
    if len(cells) == 1:
        return Recurrent(cells[0])
    return Bidirectional(Recurrent(cells[0]), Recurrent(cells[1], reverse=True))


class LSTM(RNNBase):
    """``torch.nn.LSTM``: ``forward(input, (h0, c0)=None, lengths=None) ->
    (output, (h_n, c_n))`` with gates ``i, f, g, o``. With ``proj_size=P > 0`` each layer's
    ``h`` is projected by ``weight_hr_l{k} (P, H)``: the output is ``(T, B, D*P)``, ``h0``/``h_n``
    ``(D*L, B, P)`` and ``c0``/``c_n`` ``(D*L, B, H)``, as torch's."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, *, rng: np.random.Generator | int | None = None,
                 dtype: Any = DEFAULT_DTYPE, device: Any = None):
        _check_sizes(input_size, hidden_size)
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        super().__init__(LSTMCell, input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, rng=rng, dtype=dtype, device=device,
                         proj_size=proj_size)

    state_pair = True

    def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None,
                lengths: Optional[Tensor] = None) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
        unbatched = input.ndim == 2  # static: the rank is part of the specialization
        x = self.time_major(input, unbatched)
        if hx is None:
            h0 = ops.zeros((self.directions * self.num_layers, x.shape[1], self.state_size),
                           self.dtype)
            c0 = h0
            if self.proj_size > 0:  # static: a projected h is smaller than c
                c0 = ops.zeros((self.directions * self.num_layers, x.shape[1],
                                self.hidden_size), self.dtype)
        else:
            h0, c0 = hx
            if unbatched:
                h0 = ops.expand_dims(h0, 1)
                c0 = ops.expand_dims(c0, 1)
        self.check_compiled(x, h0, c0, lengths)
        output, h_n, c_n = self.rnn(x, h0, c0, lengths)
        if unbatched:
            return output[:, 0], (h_n[:, 0], c_n[:, 0])
        return self.batch_layout(output), (h_n, c_n)


class _SingleStateRNN(RNNBase):
    """A front end whose cells step one state tensor: ``forward(input, h0=None, lengths=None)
    -> (output, h_n)``."""

    def forward(self, input: Tensor, hx: Optional[Tensor] = None,
                lengths: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        unbatched = input.ndim == 2  # static: the rank is part of the specialization
        x = self.time_major(input, unbatched)
        if hx is None:
            h0 = ops.zeros((self.directions * self.num_layers, x.shape[1], self.hidden_size),
                           self.dtype)
        else:
            h0 = hx
            if unbatched:
                h0 = ops.expand_dims(h0, 1)
        self.check_compiled(x, h0, h0, lengths)
        output, h_n, _ = self.rnn(x, h0, h0, lengths)
        if unbatched:
            return output[:, 0], h_n[:, 0]
        return self.batch_layout(output), h_n


class GRU(_SingleStateRNN):
    """``torch.nn.GRU``: gates ``r, z, n``; ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 *, rng: np.random.Generator | int | None = None, dtype: Any = DEFAULT_DTYPE,
                 device: Any = None):
        super().__init__(GRUCell, input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, rng=rng, dtype=dtype, device=device)


class RNN(_SingleStateRNN):
    """``torch.nn.RNN`` (Elman): ``h' = act(W_ih x + b_ih + W_hh h + b_hh)`` with
    ``nonlinearity='tanh'`` or ``'relu'``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, *,
                 rng: np.random.Generator | int | None = None, dtype: Any = DEFAULT_DTYPE,
                 device: Any = None):
        super().__init__(RNNCell, input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, rng=rng, dtype=dtype, device=device,
                         nonlinearity=nonlinearity)
        self.nonlinearity = nonlinearity


__all__ = ["GRU", "LSTM", "RNN", "RNNBase"]
