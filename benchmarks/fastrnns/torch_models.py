"""The PyTorch peers (``--peers``): ``torch_lstm``, ``torch_script``, ``torch_eager``,
``torch_layernorm`` (with the layer-norm rows) and the opt-in ``torch_compile``. Imported only when
torch is installed.

``torch_script`` is upstream's custom LSTM (``fastrnns/cells.py`` ``lstm_cell`` and the
``lstm_factory`` loop) under ``torch.jit.script``; ``torch_eager`` is the same code unscripted;
``torch_compile`` is it under ``torch.compile`` (its first call compiles for minutes).
``torch_lstm`` is ``nn.LSTM`` (oneDNN on CPU, cuDNN on GPU). All take the harness's weights, so
their outputs and gradients are checked against ``py`` like ours. ``torch_layernorm`` is
``cells.layernorm_lstm_layer`` written in torch eager, with the weights of ``script_layernorm``
(``factory.layernorm_weights``), and is checked like that row (against the scripted cell compiled
without optimization).

On a GPU the peers compute in full float32, as CuPy's products do: TensorFloat-32 (cuDNN's
default for ``nn.LSTM`` on Ampere and later) rounds products' inputs to 10-bit mantissas, which
is faster but fails the harness's float32 check (errors of 5e-4 where the tolerance is 5e-4).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, List, Tuple

import numpy as np
import torch
from torch import Tensor

from benchmarks.fastrnns import cells, factory, frontend_rows
from benchmarks.fastrnns.factory import ModelDef, RNNInputs

_DTYPES = {"float32": torch.float32, "float64": torch.float64}
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def lstm_cell(input: Tensor, hidden: Tuple[Tensor, Tensor], w_ih: Tensor, w_hh: Tensor,
              b_ih: Tensor, b_hh: Tensor) -> Tuple[Tensor, Tensor]:
    hx, cx = hidden
    gates = torch.mm(input, w_ih.t()) + torch.mm(hx, w_hh.t()) + b_ih + b_hh
    ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
    ingate = torch.sigmoid(ingate)
    forgetgate = torch.sigmoid(forgetgate)
    cellgate = torch.tanh(cellgate)
    outgate = torch.sigmoid(outgate)
    cy = (forgetgate * cx) + (ingate * cellgate)
    hy = outgate * torch.tanh(cy)
    return hy, cy


def lstm_layer(input: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
               b_hh: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    inputs = input.unbind(0)
    outputs: List[Tensor] = []
    for seq_idx in range(len(inputs)):
        hx, cx = lstm_cell(inputs[seq_idx], (hx, cx), w_ih, w_hh, b_ih, b_hh)
        outputs += [hx]
    return torch.stack(outputs), hx, cx


def layernorm_lstm_layer(input: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor,
                         ln_i_w: Tensor, ln_i_b: Tensor, ln_h_w: Tensor, ln_h_b: Tensor,
                         ln_c_w: Tensor, ln_c_b: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """``cells.layernorm_lstm_layer`` in torch: layer norm (eps 1e-5, affine) on both gate
    projections and on the cell state, no LSTM biases."""
    layer_norm = torch.nn.functional.layer_norm
    four_h, h = ln_i_w.shape, ln_c_w.shape
    outputs: List[Tensor] = []
    for x_t in input.unbind(0):
        igates = layer_norm(torch.mm(x_t, w_ih.t()), four_h, ln_i_w, ln_i_b, 1e-5)
        hgates = layer_norm(torch.mm(hx, w_hh.t()), four_h, ln_h_w, ln_h_b, 1e-5)
        i, f, g, o = (igates + hgates).chunk(4, 1)
        cx = layer_norm(torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g), h, ln_c_w,
                        ln_c_b, 1e-5)
        hx = torch.sigmoid(o) * torch.tanh(cx)
        outputs.append(hx)
    return torch.stack(outputs), hx, cx


def _tensor(a: Any, device: str, requires_grad: bool = True) -> Tensor:
    host = a.get() if hasattr(a, "get") else np.asarray(a)
    return torch.tensor(host, device=device, requires_grad=requires_grad)


def _leaves(inp: RNNInputs, device: str) -> tuple[Tensor, Tensor, Tensor, list[Tensor]]:
    """The input sequence (not requiring grad: training does not differentiate its data), the
    initial states and the weights (requiring grad)."""
    return (_tensor(inp.x, device, requires_grad=False), _tensor(inp.hx, device),
            _tensor(inp.cx, device), [_tensor(w, device) for w in inp.flat_weights()])


def _model(forward: Callable[[], tuple[Tensor, ...]], leaves: list[Tensor],
           device: str) -> ModelDef:
    def run() -> tuple[Any, Any]:
        outputs = forward()
        return outputs, outputs

    def backward(outputs: tuple[Tensor, ...], ct: list[Tensor]) -> tuple[Any, ...]:
        # None for a leaf that does not require grad (the input sequence), as in the scripted rows
        wanted = [leaf for leaf in leaves if leaf.requires_grad]
        grads = iter(torch.autograd.grad(outputs, wanted, ct))
        return tuple(next(grads) if leaf.requires_grad else None for leaf in leaves)

    def prepare(ct: tuple[Any, ...]) -> list[Tensor]:
        return [torch.tensor(c.get() if hasattr(c, "get") else np.asarray(c), device=device)
                for c in ct]

    return ModelDef(run, backward, prepare_cotangent=prepare)


def _device(inp: RNNInputs) -> str:
    return "cpu" if inp.xp is np else "cuda"


def lstm_creator(inp: RNNInputs) -> ModelDef:
    """``torch_lstm``: ``nn.LSTM`` with the harness's weights."""
    device = _device(inp)
    s = inp.sizes
    x, hx, cx, _ = _leaves(inp, device)
    lstm = torch.nn.LSTM(s.input_size, s.hidden_size, s.num_layers).to(device, _DTYPES[s.dtype])
    with torch.no_grad():
        for param, w in zip((p for layer in lstm.all_weights for p in layer),
                            inp.flat_weights()):
            param.copy_(torch.from_numpy(w.get() if hasattr(w, "get") else np.asarray(w)))
    params = [p for layer in lstm.all_weights for p in layer]

    def forward() -> tuple[Tensor, ...]:
        y, (h, c) = lstm(x, (hx, cx))
        return y, h, c

    return _model(forward, [x, hx, cx, *params], device)


def custom_creator(layer: Callable[..., Tuple[Tensor, Tensor, Tensor]]
                   ) -> Callable[[RNNInputs], ModelDef]:
    """Upstream's custom LSTM layer, stacked to ``numLayers`` in Python."""
    def create(inp: RNNInputs) -> ModelDef:
        device = _device(inp)
        x, hx, cx, weights = _leaves(inp, device)
        return _model(_stacked(layer, x, hx, cx, weights, 4), [x, hx, cx, *weights], device)
    return create


def _stacked(layer: Callable[..., Tuple[Tensor, Tensor, Tensor]], x: Tensor, hx: Tensor,
             cx: Tensor, weights: list[Tensor], per_layer: int) -> Callable[[], tuple[Tensor, ...]]:
    def forward() -> tuple[Tensor, ...]:
        y, hs, cs = x, [], []
        for k in range(len(weights) // per_layer):
            y, h, c = layer(y, hx[k], cx[k], *weights[per_layer * k:per_layer * (k + 1)])
            hs.append(h)
            cs.append(c)
        return y, torch.stack(hs), torch.stack(cs)
    return forward


def script_creator(inp: RNNInputs) -> ModelDef:
    """``torch_script``: upstream's custom LSTM under ``torch.jit.script``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # still the upstream peer
        scripted = torch.jit.script(lstm_layer)
    return custom_creator(scripted)(inp)


def eager_creator(inp: RNNInputs) -> ModelDef:
    """``torch_eager``: upstream's custom LSTM, unscripted."""
    return custom_creator(lstm_layer)(inp)


def layernorm_creator(inp: RNNInputs) -> ModelDef:
    """``torch_layernorm``: the layer-norm LSTM in torch eager, checked like
    ``script_layernorm``."""
    device = _device(inp)
    x = _tensor(inp.x, device, requires_grad=False)
    hx, cx = (_tensor(a, device) for a in (inp.hx, inp.cx))
    weights = [_tensor(w, device) for layer in factory.layernorm_weights(inp) for w in layer]
    model = _model(_stacked(layernorm_lstm_layer, x, hx, cx, weights, 8),
                   [x, hx, cx, *weights], device)
    model.reference = factory.unoptimized_reference(cells.layernorm_lstm_layer,
                                                    factory.layernorm_weights)(inp)
    model.notes.append("checked against the scripted layer-norm cell compiled without "
                       "optimization passes")
    return model


def compile_creator(inp: RNNInputs) -> ModelDef:
    """``torch_compile``: upstream's custom LSTM under ``torch.compile`` (opt-in: slow to build)."""
    return custom_creator(torch.compile(lstm_layer))(inp)


lstm_2l_creator = frontend_rows.torch_creator("lstm_2l")
lstm_bidir_creator = frontend_rows.torch_creator("lstm_bidir")
gru_creator = frontend_rows.torch_creator("gru")
"""The torch twins of the front-end rows (``frontend_rows``)."""


def to_numpy(a: Any) -> Any:
    """A torch tensor as a numpy array; anything else unchanged."""
    if isinstance(a, Tensor):
        return a.detach().cpu().numpy()
    return a
