"""The front-end rows: ``rnn.LSTM`` / ``rnn.GRU`` called as users call them, beside the
hand-written scripted layer with the same layers and directions and ``torch.nn``.

- ``rnn_lstm``: ``rnn.LSTM(I, H, numLayers)`` with the harness's weights and states:
  ``vjp(lstm, x, (h0, c0))``, no ``script``. Its twins are ``script`` and ``torch_lstm``; it is
  checked against ``py`` as they are.
- ``rnn_gru``: ``rnn.GRU`` with the weights of ``script_gru`` (its twin, with ``torch_gru``),
  checked as that row is (against the GRU layer compiled without optimization).
- ``rnn_lstm_2l`` / ``rnn_lstm_bidir``: two layers, one bidirectional layer (whatever
  ``--numLayers`` says), with the twins ``script_lstm_2l`` / ``script_lstm_bidir`` (the
  hand-written ``cells.lstm_layer`` run per layer and direction, stacked in Python, as the
  ``script`` row stacks layers) and ``torch_lstm_2l`` / ``torch_lstm_bidir``; checked against the
  ``script_*`` twin. The harness's cotangent has the one-layer shapes, so these rows draw their
  own from one seed.

Outputs are ``(y, h_n, c_n)`` (``(y, h_n)`` for a GRU) and gradients ``(dx, dh0, dc0,
*parameters in torch's order)`` (no ``dc0`` for a GRU), the layouts of ``py`` and ``script_gru``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import rnn
from benchmarks.fastrnns import cells, factory
from benchmarks.fastrnns.factory import ModelDef, RNNInputs, scripted
from script import vjp

CASES = {"lstm": ("LSTM", None, False), "lstm_2l": ("LSTM", 2, False),
         "lstm_bidir": ("LSTM", 1, True), "gru": ("GRU", None, False)}
"""row suffix -> (mode, layers (None: ``--numLayers``), bidirectional)."""


class Case:
    """One configuration's model, input, initial states and (own) cotangent."""

    def __init__(self, inp: RNNInputs, suffix: str):
        s = inp.sizes
        self.mode, layers, bidir = CASES[suffix]
        self.layers = layers or s.num_layers
        self.d = 2 if bidir else 1
        self.pair = self.mode == "LSTM"
        self.model = getattr(rnn, self.mode)(s.input_size, s.hidden_size, self.layers,
                                             bidirectional=bidir, rng=s.seed, dtype=s.dtype)
        if inp.xp is not np:
            self.model.cuda()  # as a user moves a module: the parameters become CuPy arrays
        self.x = inp.x
        rows, batch, hidden = self.layers * self.d, s.mini_batch, s.hidden_size
        self.own_cotangent = suffix not in ("lstm", "gru")
        if not self.own_cotangent:  # the harness's weights and states, checked as its rows
            harness = inp.weights if self.pair else factory.gru_weights(inp)
            for cell, weights in zip(self.model.cells(), harness):
                for param, w in zip(cell.parameters(), weights):
                    param.data[...] = w
            self.h0, self.c0 = inp.hx, inp.cx
        else:
            rng = np.random.default_rng(s.seed + 5)
            self.h0, self.c0 = (inp.xp.asarray(rng.standard_normal((rows, batch, hidden))
                                               .astype(s.dtype)) for _ in range(2))
        self.params = [p for cell in self.model.cells() for p in cell.parameters()]
        self.hidden = hidden
        self.xp = inp.xp

    def cotangent(self, given: Any) -> Any:
        """The cotangent of ``(y, h_n, c_n)``: the harness's, or this case's own."""
        if not self.own_cotangent:
            return given
        rng = np.random.default_rng(7)
        seq, batch = self.x.shape[:2]
        dtype, xp = self.x.dtype, self.xp
        return (xp.asarray(rng.standard_normal((seq, batch, self.d * self.hidden)).astype(dtype)),
                xp.asarray(rng.standard_normal(self.h0.shape).astype(dtype)),
                xp.asarray(rng.standard_normal(self.c0.shape).astype(dtype)) if self.pair
                else None)

    def hx(self) -> Any:
        return (self.h0, self.c0) if self.pair else self.h0


def front_end_creator(suffix: str) -> Callable[[RNNInputs], ModelDef]:
    """``rnn_<suffix>``: the front end called as users call it."""
    def create(inp: RNNInputs) -> ModelDef:
        case = Case(inp, suffix)
        model, hx = case.model, case.hx()

        def forward() -> tuple[Any, Any]:
            # like the torch rows and the hand-written layers: the weights and initial states,
            # not the input sequence (data)
            (y, state), back = vjp(model, case.x, hx, argnums=1)
            return ((y, *state) if case.pair else (y, state)), back

        def backward(back: Callable, ct: Any) -> tuple[Any, ...]:
            model.zero_grad()
            dx, dhx, _ = back((ct[0], (ct[1], ct[2]) if case.pair else ct[1]))
            states = dhx if case.pair else (dhx,)
            return (dx, *states, *[p.grad for p in case.params])

        row = ModelDef(forward, backward, infer=lambda: model(case.x, hx),
                       prepare_cotangent=case.cotangent)
        row.reference = reference_of(suffix, inp)
        return row
    return create


def _hand_run(case: Case) -> tuple[Callable[[], tuple[Any, Any]], Callable[..., Any]]:
    """The hand-written LSTM layer per layer and direction: ``(forward, backward)``."""
    layer = scripted(cells.lstm_layer)
    per = 4  # parameters per layer and direction

    def forward() -> tuple[Any, Any]:
        x, backs, hs, cs = case.x, [], [], []
        for k in range(case.layers):
            outs = []
            for d in range(case.d):
                row = k * case.d + d
                seq = x if d == 0 else x[::-1]
                (y, h, c), back = vjp(layer, seq, case.h0[row], case.c0[row],
                                      *case.params_data[row * per:(row + 1) * per])
                outs.append(y if d == 0 else y[::-1])
                backs.append(back)
                hs.append(h)
                cs.append(c)
            x = outs[0] if case.d == 1 else case.xp.concatenate(outs, -1)
        return (x, case.xp.stack(hs), case.xp.stack(cs)), backs

    def backward(backs: list[Any], ct: Any) -> tuple[Any, ...]:
        dy, dh_n, dc_n = ct
        dh0, dc0, dw = [None] * len(backs), [None] * len(backs), [None] * len(backs)
        for k in reversed(range(case.layers)):
            parts = case.xp.split(dy, case.d, -1)
            dx = 0.0
            for d in range(case.d):
                row = k * case.d + d
                grads = backs[row]((parts[d] if d == 0 else parts[d][::-1], dh_n[row],
                                    dc_n[row]))
                dx = dx + (grads[0] if d == 0 else grads[0][::-1])
                dh0[row], dc0[row], dw[row] = grads[1], grads[2], grads[3:]
            dy = dx
        return (dy, case.xp.stack(dh0), case.xp.stack(dc0), *[g for row in dw for g in row])

    return forward, backward


def hand_creator(suffix: str) -> Callable[[RNNInputs], ModelDef]:
    """``script_<suffix>``: the hand-written twin of ``rnn_<suffix>``."""
    def create(inp: RNNInputs) -> ModelDef:
        case = Case(inp, suffix)
        case.params_data = [p.data for p in case.params]
        forward, backward = _hand_run(case)
        row = ModelDef(forward, backward, reference=None, prepare_cotangent=case.cotangent)
        row.notes.append(f"the reference of rnn_{suffix} and torch_{suffix}")
        return row
    return create


def reference_of(suffix: str, inp: RNNInputs) -> Any:
    """What a front-end row and its torch twin are checked against."""
    if suffix == "lstm":
        return "py"
    if suffix == "gru":
        return factory.unoptimized_reference(cells.gru_layer, factory.gru_weights, 1)(inp)
    return hand_reference(suffix)(inp)


def hand_reference(suffix: str) -> Callable[[RNNInputs], Callable[[Any], tuple[Any, Any]]]:
    """The check of ``rnn_<suffix>`` and ``torch_<suffix>``: the twin's outputs and gradients
    for this case's own cotangent."""
    def create(inp: RNNInputs) -> Callable[[Any], tuple[Any, Any]]:
        case = Case(inp, suffix)
        case.params_data = [p.data for p in case.params]
        forward, backward = _hand_run(case)

        def run(given: Any) -> tuple[Any, Any]:
            outputs, saved = forward()
            return outputs, backward(saved, case.cotangent(given))
        return run
    return create


def torch_creator(suffix: str) -> Callable[[RNNInputs], ModelDef]:
    """``torch_<suffix>``: ``torch.nn.LSTM``/``GRU`` with the case's weights."""
    def create(inp: RNNInputs) -> ModelDef:
        import torch
        case = Case(inp, suffix)
        s = inp.sizes
        device = "cpu" if inp.xp is np else "cuda"

        def tensor(a: Any, **kwargs: Any) -> Any:
            host = a.get() if hasattr(a, "get") else np.asarray(a)
            return torch.tensor(host, device=device, **kwargs)

        net = getattr(torch.nn, case.mode)(s.input_size, s.hidden_size, case.layers,
                                           bidirectional=case.d == 2)
        net = net.to(device, getattr(torch, s.dtype))
        with torch.no_grad():
            for name, p in net.named_parameters():
                p.copy_(tensor(case.model.get_parameter(name).data))
        leaf = [tensor(a, requires_grad=True) for a in (case.x, case.h0, case.c0)]
        params = [net.get_parameter(name) for name, _ in case.model.named_parameters()]

        inputs = leaf if case.pair else leaf[:2]

        def forward() -> tuple[Any, Any]:
            y, state = net(leaf[0], tuple(leaf[1:]) if case.pair else leaf[1])
            outputs = (y, *state) if case.pair else (y, state)
            return outputs, outputs

        def backward(outputs: Any, ct: Any) -> tuple[Any, ...]:
            return torch.autograd.grad(outputs, inputs + params, [tensor(c) for c in ct])

        row = ModelDef(forward, backward, infer=lambda: net(leaf[0]),
                       prepare_cotangent=case.cotangent)
        row.reference = reference_of(suffix, inp)
        return row
    return create


__all__ = ["CASES", "front_end_creator", "hand_creator", "hand_reference", "reference_of",
           "torch_creator"]
