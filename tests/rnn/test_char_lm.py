"""A fast version of examples/char_lm.py: the loss goes down from a fixed seed."""

from __future__ import annotations

import importlib.util

import numpy as np

from tests.helpers import ROOT

EXAMPLE = ROOT / "examples" / "char_lm.py"


def load_example():
    spec = importlib.util.spec_from_file_location("char_lm", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_short_training_run_lowers_the_loss_below_target():
    char_lm = load_example()
    losses = char_lm.train(steps=30, seed=0, seq_len=16, batch=16, hidden=64, embed=16,
                           lr=0.02, show=False)
    vocab = len(char_lm.load_text()[1])
    assert abs(np.mean(losses[:3]) - np.log(vocab)) < 0.3  # starts near a uniform guess
    assert np.mean(losses[-5:]) < 3.2  # the stated target for this short run


def test_sampling_produces_text_from_the_vocabulary():
    char_lm = load_example()
    text, chars = char_lm.load_text()
    model = char_lm.CharLM(len(chars), 8, 16, seed=1)
    out = char_lm.sample(model, chars, "Love ", 40, np.random.default_rng(0))
    assert out.startswith("Love ") and len(out) == 45 and set(out) <= set(chars)
