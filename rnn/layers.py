"""Layers over time: a cell run along a sequence, forwards or backwards, both directions, stacks.

Every layer has the same call convention, so layers nest and stack freely::

    output, h_n, c_n = layer(input, hx, cx, lengths)

``input`` is ``(T, B, C)``; ``hx`` and ``cx`` are ``(D, B, H)`` with ``D = layer.directions``
(1, or 2 for ``Bidirectional``); ``output`` is ``(T, B, D * H)``. A cell with one state tensor
(``GRUCell``, ``RNNCell``) ignores ``cx`` and returns it unchanged. ``lengths`` is None or a
``(B,)`` integer array: sequence ``b`` occupies ``input[:lengths[b], b]``; its state stops
changing after its last step (so ``h_n`` is its state there), its padded outputs are zero, and a
reversed layer starts at its own end. Lengths only enter as masks (``np.where``), so one compiled
graph serves every set of lengths of a padded shape.
"""

from __future__ import annotations

import inspect
import typing
from typing import List, Optional, Tuple

import numpy as np

from rnn.compiled import CompiledModule
from script import Module, ModuleList, Tensor, ops


def state_arity(cell: Module) -> int:
    """1 for a cell stepping one state tensor, 2 for an ``(h, c)`` cell.

    Read from ``cell.state_arity`` when the cell declares it, otherwise from the annotation of
    its ``forward``'s second parameter (a two-element tuple means ``(h, c)``)."""
    declared = getattr(type(cell), "state_arity", None)
    if declared in (1, 2):
        return declared
    params = list(inspect.signature(type(cell).forward).parameters.values())
    if len(params) < 3:
        raise TypeError(f"{type(cell).__name__}.forward must take (input, state)")
    annotation = params[2].annotation
    if isinstance(annotation, str):
        annotation = eval(annotation, vars(typing) | {"Tensor": Tensor},  # noqa: S307
                          vars(inspect.getmodule(type(cell))))
    return 2 if len(typing.get_args(annotation)) == 2 or hasattr(annotation, "_fields") else 1


def step_mask(steps: int, batch: int, lengths: Optional[Tensor]) -> Tensor:
    """``(steps, batch, 1)`` booleans: whether step ``t`` of sequence ``b`` is inside it (all
    true without ``lengths``)."""
    if lengths is None:
        return ops.ones((steps, batch, 1), "bool")
    inside = ops.expand_dims(ops.arange(0, steps), 1) < ops.expand_dims(lengths, 0)
    return ops.reshape(inside, (steps, batch, 1))


class Recurrent(CompiledModule):
    """One cell run along the time axis; ``reverse=True`` runs from the last step back."""

    def __init__(self, cell: Module, reverse: bool = False):
        super().__init__()
        self.cell = cell
        self.reverse = reverse
        self.pair_state = state_arity(cell) == 2
        self.directions = 1
        self.hidden_size = cell.hidden_size
        self.state_size = getattr(cell, "proj_size", 0) or cell.hidden_size
        """the size of ``h`` and of the output: ``proj_size`` for a projected LSTM cell, else
        ``hidden_size`` (the size of ``c``)."""
        first = next(iter(cell.parameters()), None)
        self.dtype = None if first is None else first.dtype.name
        """the dtype of the cell's parameters: the stacked output is cast to it, which states
        its dtype for the layer above (a list grown in a loop does not carry it)."""

    def _on_converted(self) -> None:
        first = next(iter(self.cell.parameters()), None)
        self.dtype = None if first is None else first.dtype.name  # after float()/double()/...

    def step(self, input: Tensor, h: Tensor, c: Tensor) -> Tuple[Tensor, Tensor]:
        """One step of the cell: ``(h', c')`` (``c`` unchanged for a one-state cell)."""
        if self.pair_state:
            h_new, c_new = self.cell(input, (h, c))
            return h_new, c_new
        return self.cell(input, h), c

    def forward(self, input: Tensor, hx: Tensor, cx: Tensor,
                lengths: Optional[Tensor] = None) -> Tuple[Tensor, Tensor, Tensor]:
        steps = input.shape[0]
        batch = input.shape[1]
        live_steps = step_mask(steps, batch, lengths)
        if self.reverse:
            # step k reads row k of the reversed sequence: the input projection of every step
            # then hoists out of the loop as one matmul, as in the forward direction
            input = input[::-1]
            live_steps = live_steps[::-1]
        # the reshapes state shapes that an Optional argument, a list grown in a loop or a
        # loop-carried value do not carry, so every step's ops have known ranks to differentiate
        h = ops.reshape(hx[0], (batch, self.state_size))
        c = ops.reshape(cx[0], (batch, self.hidden_size))
        outputs: List[Tensor] = []
        for t in range(steps):
            h_new, c_new = self.step(input[t], h, c)
            if lengths is None:  # static: without lengths no step is masked
                h = h_new
                c = c_new
                outputs.append(h_new)
            else:
                # sequences already past their end keep their state and output zeros
                live = live_steps[t]
                h = np.where(live, h_new, h)
                c = np.where(live, c_new, c)
                outputs.append(np.where(live, h_new, 0.0))
        output = ops.reshape(ops.stack(outputs, 0), (steps, batch, self.state_size))
        if self.dtype is not None:
            output = output.astype(self.dtype)
        if self.reverse:
            output = output[::-1]
        return (output, ops.reshape(h, (1, batch, self.state_size)),
                ops.reshape(c, (1, batch, self.hidden_size)))


class Bidirectional(CompiledModule):
    """Two one-directional layers over the same input, the second reversed; outputs are
    concatenated on the feature axis, states stacked as ``(2, B, H)``."""

    def __init__(self, forward_layer: Module, backward_layer: Module):
        super().__init__()
        self.forward_layer = forward_layer
        self.backward_layer = backward_layer
        self.directions = 2
        self.hidden_size = forward_layer.hidden_size

    def forward(self, input: Tensor, hx: Tensor, cx: Tensor,
                lengths: Optional[Tensor] = None) -> Tuple[Tensor, Tensor, Tensor]:
        out_f, h_f, c_f = self.forward_layer(input, hx[0:1], cx[0:1], lengths)
        out_b, h_b, c_b = self.backward_layer(input, hx[1:2], cx[1:2], lengths)
        return ops.cat([out_f, out_b], -1), ops.cat([h_f, h_b], 0), ops.cat([c_f, c_b], 0)


def layer(cell: Module, reverse: bool = False) -> Recurrent:
    """A layer running ``cell`` over time (any cell following one of the two conventions)."""
    return Recurrent(cell, reverse)


def bidirectional(forward_cell: Module, backward_cell: Module) -> Bidirectional:
    """A bidirectional layer from two cells (the second one runs backwards in time)."""
    return Bidirectional(Recurrent(forward_cell), Recurrent(backward_cell, reverse=True))


class StackedRNN(CompiledModule):
    """Layers applied one after the other, with dropout on the input of every layer but the
    first while training (PyTorch's ``dropout`` argument). States are ``(L * D, B, H)``, layer
    ``k`` owning rows ``k * D .. (k + 1) * D``."""

    def __init__(self, layers: list[Module], dropout: float = 0.0):
        super().__init__()
        if not layers:
            raise ValueError("a stack needs at least one layer")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"dropout must be in [0, 1], got {dropout}")
        self.layers = ModuleList(layers)
        self.dropout = float(dropout)
        self.directions = layers[0].directions
        self.num_layers = len(layers)

    def forward(self, input: Tensor, hx: Tensor, cx: Tensor,
                lengths: Optional[Tensor] = None) -> Tuple[Tensor, Tensor, Tensor]:
        d = self.directions
        if self.num_layers == 1:  # static: one layer's states are the stack's
            return self.layers[0](input, hx, cx, lengths)
        # the final states are concatenated once after the last layer (where-ing each layer's
        # rows into place would leave one unfused op per layer, each after its own layer's loop);
        # the reshapes state the row count, which a list grown in a loop does not carry
        hs: List[Tensor] = []
        cs: List[Tensor] = []
        output = input
        for i, rnn_layer in enumerate(self.layers):
            if i > 0 and self.dropout > 0.0:
                output = ops.dropout(output, self.dropout, self.training)
            output, h, c = rnn_layer(output, hx[i * d:(i + 1) * d], cx[i * d:(i + 1) * d],
                                     lengths)
            hs.append(h)
            cs.append(c)
        rows = self.num_layers * d
        return (output, ops.reshape(ops.cat(hs, 0), (rows, hx.shape[1], hx.shape[2])),
                ops.reshape(ops.cat(cs, 0), (rows, cx.shape[1], cx.shape[2])))


__all__ = ["Bidirectional", "Recurrent", "StackedRNN", "bidirectional", "layer", "state_arity"]
