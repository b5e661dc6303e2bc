"""examples/char_lm.py as a user runs it: the progress bar stays one bar (loss reports print above
it), the size and ``--threads`` flags reach the run, and the model is built from ``rnn.Embedding``
and ``rnn.cross_entropy``."""

from __future__ import annotations

import importlib.util
import io
import os
import sys
from pathlib import Path

import numpy as np

import rnn

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "char_lm.py"


def load_example():
    spec = importlib.util.spec_from_file_location("char_lm", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rendered(text: str) -> list[str]:
    """The lines a terminal shows for ``text`` (``\\r`` returns to the line's start)."""
    lines, col = [""], 0
    for ch in text:
        if ch == "\n":
            lines.append("")
            col = 0
        elif ch == "\r":
            col = 0
        else:
            line = lines[-1]
            lines[-1] = line[:col] + ch + line[col + 1:]
            col += 1
    return [line.rstrip() for line in lines if line.strip()]


def test_loss_reports_print_above_one_bar(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # the plain bar (tqdm draws its own)
    char_lm = load_example()
    stream = io.StringIO()
    bar = char_lm.Progress(20, stream)
    for step in range(20):
        bar.update(3.0 - 0.1 * step)
        if (step + 1) % 10 == 0:
            bar.note(f"step {step + 1}: loss {3.0 - 0.1 * step:.3f}")
    bar.close()
    lines = rendered(stream.getvalue())
    assert lines[:2] == ["step 10: loss 2.100", "step 20: loss 1.100"]
    bars = [line for line in lines if line.startswith("[")]
    assert len(bars) == 1 and lines[-1] == bars[0]
    assert bars[0].startswith("[" + "#" * 30 + "] 20/20") and bars[0].endswith("loss 1.100")


def test_flags_size_the_run_and_the_model_uses_embedding_and_cross_entropy(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    char_lm = load_example()
    seen = {}
    real_train = char_lm.train

    def spy(*args, **kwargs):
        seen["args"], seen["kwargs"] = args, kwargs
        return real_train(*args, **kwargs)

    monkeypatch.setattr(char_lm, "train", spy)
    char_lm.main(["--steps", "3", "--hidden", "8", "--embed", "4", "--layers", "2",
                  "--seq-len", "6", "--batch", "4", "--lr", "0.05", "--threads", "1"])
    assert seen["args"] == (3, 0, 6, 4, 8, 4, 0.05)
    assert seen["kwargs"]["layers"] == 2 and seen["kwargs"]["threads"] == 1
    out, err = capsys.readouterr()
    assert "final loss" in out and "sample: Shall I " in out
    assert len([line for line in rendered(err) if line.startswith("[")]) == 1
    model = char_lm.CharLM(10, 4, 8, layers=2)
    assert isinstance(model.embedding, rnn.Embedding) and model.lstm.num_layers == 2
    tokens = np.random.default_rng(0).integers(0, 10, (5, 3))
    h0 = np.zeros((2, 3, 8), "float32")
    loss = model.forward(tokens, np.roll(tokens, -1, 0), h0, h0, np.full(3, 5))
    hidden, _ = model.lstm(model.embedding(tokens), (h0, h0))
    logits = hidden.reshape(-1, 8) @ model.readout.T + model.readout_bias
    np.testing.assert_allclose(loss, rnn.cross_entropy(logits, np.roll(tokens, -1, 0).ravel()),
                               rtol=1e-6)


def test_threads_flag_is_set_before_numpy_loads(monkeypatch):
    char_lm = load_example()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    char_lm._blas_threads_from(["--steps", "3", "--threads=2"])
    assert os.environ["OPENBLAS_NUM_THREADS"] == "2" and os.environ["OMP_NUM_THREADS"] == "2"
