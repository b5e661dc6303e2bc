"""``rnn.LSTM`` / ``rnn.GRU`` as users call them, against the hand-written scripted layer and
``torch.nn``, side by side in one process.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.frontend [--repeat 20] [--sizes 100,8,64,64]

For each configuration (LSTM 1 layer, 2 layers, bidirectional; GRU) three rows are timed,
forward (a plain call) and forward + backward (``vjp`` then the backward; torch: ``backward()``):

- ``rnn``: the front end exactly as a user calls it: ``out, (h, c) = lstm(x)`` and
  ``vjp(lstm, x)`` (compiled on first call, no ``script``);
- ``hand``: the harness's hand-written scripted layer (``benchmarks.fastrnns.cells``), one call
  per layer and direction, stacked in Python as the fastrnns ``script`` row does;
- ``torch``: ``torch.nn.LSTM``/``GRU`` with the same weights (when torch is installed).

Times are the best of ``--repeat`` calls in ms, the rows interleaved call by call (on a shared
machine the best is the figure other processes disturb least), after the outputs of all three were
checked to agree. Run with one BLAS thread (torch is set to one thread here).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import rnn
from benchmarks.fastrnns import cells
from script import script, vjp

CONFIGS = {"lstm": ("LSTM", 1, False), "lstm_2l": ("LSTM", 2, False),
           "lstm_bidir": ("LSTM", 1, True), "gru": ("GRU", 1, False)}
"""name -> (mode, layers, bidirectional)."""


def hand_layers(mode: str) -> tuple[Any, int]:
    """The scripted one-layer function and its number of states."""
    if mode == "LSTM":
        return script(cells.lstm_layer), 2
    return script(cells.gru_layer), 1


class Hand:
    """The hand-written layer run per layer and direction, stacked in Python."""

    def __init__(self, model: Any, mode: str):
        self.layer, self.states = hand_layers(mode)
        self.model = model
        self.weights = [[p.data for p in cell.parameters()] for cell in model.cells()]
        self.d = model.directions

    def _zeros(self, x: Any) -> tuple[Any, ...]:
        h = np.zeros((x.shape[1], self.model.hidden_size), x.dtype)
        return (h,) * self.states

    def forward(self, x: Any) -> Any:
        for k in range(self.model.num_layers):
            outs = []
            for d in range(self.d):
                seq = x if d == 0 else x[::-1]
                y = self.layer(seq, *self._zeros(x), *self.weights[k * self.d + d])[0]
                outs.append(y if d == 0 else y[::-1])
            x = outs[0] if self.d == 1 else np.concatenate(outs, -1)
        return x

    def forward_backward(self, x: Any, dy: Any) -> Any:
        backs = []
        for k in range(self.model.num_layers):
            outs, layer_backs = [], []
            for d in range(self.d):
                seq = x if d == 0 else x[::-1]
                (y, *_), back = vjp(self.layer, seq, *self._zeros(x),
                                    *self.weights[k * self.d + d])
                outs.append(y if d == 0 else y[::-1])
                layer_backs.append(back)
            backs.append(layer_backs)
            x = outs[0] if self.d == 1 else np.concatenate(outs, -1)
        for layer_backs in reversed(backs):
            parts = np.split(dy, self.d, -1)
            dx = 0.0
            for d, back in enumerate(layer_backs):
                part = parts[d] if d == 0 else parts[d][::-1]
                grads = back((part,) + (None,) * self.states)
                dx = dx + (grads[0] if d == 0 else grads[0][::-1])
            dy = dx
        return dy


def torch_twin(model: Any, mode: str, layers: int, bidir: bool) -> Any:
    """``torch.nn.<mode>`` with the model's weights, or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    t = getattr(torch.nn, mode)(model.input_size, model.hidden_size, num_layers=layers,
                                bidirectional=bidir)
    with torch.no_grad():
        for name, p in t.named_parameters():
            p.copy_(torch.from_numpy(model.get_parameter(name).data))
    return t


def rows(mode: str, layers: int, bidir: bool, x: Any, dy: Any
         ) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """name -> (forward, forward + backward) closures, their outputs checked to agree."""
    model = getattr(rnn, mode)(x.shape[2], dy.shape[2] // (2 if bidir else 1),
                               num_layers=layers, bidirectional=bidir, rng=0)
    hand = Hand(model, mode)

    def rnn_fb() -> Any:
        out, back = vjp(model, x)
        return back((dy, None))[0]

    found = {"rnn": (lambda: model(x)[0], rnn_fb),
             "hand": (lambda: hand.forward(x), lambda: hand.forward_backward(x, dy))}
    t = torch_twin(model, mode, layers, bidir)
    if t is not None:
        import torch
        tx = torch.from_numpy(x)
        tdy = torch.from_numpy(dy)

        def torch_fwd() -> Any:
            with torch.no_grad():
                return t(tx)[0].numpy()

        def torch_fb() -> Any:
            xg = tx.clone().requires_grad_(True)
            t.zero_grad()
            t(xg)[0].backward(tdy)
            return xg.grad.numpy()
        found["torch"] = (torch_fwd, torch_fb)
    for k in (0, 1):
        want = found["hand"][k]()
        for name, fns in found.items():
            np.testing.assert_allclose(fns[k](), want, rtol=1e-3, atol=1e-4,
                                       err_msg=f"{name} disagrees with hand")
    return found


def best_ms(found: dict[str, tuple[Callable[[], Any], Callable[[], Any]]], repeat: int
            ) -> dict[str, list[float]]:
    """name -> [forward, forward + backward] in ms: the best of ``repeat`` calls, the rows
    interleaved call by call so that load from other processes hits them alike."""
    times: dict[str, list[list[float]]] = {n: [[], []] for n in found}
    for _ in range(repeat):
        for name, fns in found.items():
            for k, fn in enumerate(fns):
                start = time.perf_counter()
                fn()
                times[name][k].append(time.perf_counter() - start)
    return {n: [1e3 * min(t) for t in ts] for n, ts in times.items()}


def measure(name: str, sizes: tuple[int, int, int, int], repeat: int) -> list[str]:
    """Table lines for one configuration."""
    mode, layers, bidir = CONFIGS[name]
    seq, batch, inp, hidden = sizes
    rng = np.random.default_rng(0)
    x = rng.standard_normal((seq, batch, inp)).astype(np.float32)
    dy = rng.standard_normal((seq, batch, hidden * (2 if bidir else 1))).astype(np.float32)
    found = rows(mode, layers, bidir, x, dy)
    figures = best_ms(found, repeat)
    lines = []
    for n, (fwd, fb) in figures.items():
        ratio = "" if n == "hand" else \
            f"  x hand {fwd / figures['hand'][0]:5.2f} / {fb / figures['hand'][1]:5.2f}"
        lines.append(f"{name:11} {n:6} fwd {fwd:8.2f} ms  fwd+bwd {fb:8.2f} ms{ratio}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--sizes", default="100,8,64,64", help="T,B,I,H")
    parser.add_argument("--configs", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    opts = parser.parse_args(argv)
    sizes = tuple(map(int, opts.sizes.split(",")))
    for name in opts.configs:
        for line in measure(name, sizes, opts.repeat):  # type: ignore[arg-type]
            print(line, flush=True)


if __name__ == "__main__":
    main()
