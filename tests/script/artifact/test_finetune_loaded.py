"""Fine-tuning a model returned by ``script.load``: ``vjp(loaded, ...)`` accumulates the gradients
of its parameters into their ``.grad``, an optimizer trains it exactly as it trains the original
module, and the fine-tuned model saves and loads again."""

from __future__ import annotations

import numpy as np
import pytest

import rnn
from script import Module, Parameter, Tensor, freeze, load, ops, save, script, vjp

VOCAB, DIM, HIDDEN = 9, 4, 5


class TinyLM(Module):
    """Embedding -> LSTM -> projection -> mean cross-entropy of the next token."""

    def __init__(self):
        super().__init__()
        self.embed = rnn.Embedding(VOCAB, DIM, rng=0)
        self.lstm = rnn.LSTM(DIM, HIDDEN, rng=1)
        self.out_w = Parameter(np.random.default_rng(2).standard_normal((VOCAB, HIDDEN))
                               .astype("float32") * 0.3)
        self.out_b = Parameter(np.zeros(VOCAB, "float32"))

    def forward(self, tokens: Tensor, targets: Tensor) -> Tensor:
        hidden, _ = self.lstm(self.embed(tokens))
        logits = ops.linear(ops.reshape(hidden, (-1, HIDDEN)), self.out_w, self.out_b)
        return rnn.cross_entropy(logits, ops.reshape(targets, (-1,)))


def _batch(seed):
    tokens = np.random.default_rng(seed).integers(0, VOCAB, (7, 3))
    return tokens, np.roll(tokens, -1, axis=0)


def _train(model, steps=3):
    opt = rnn.Adam(list(model.parameters()), lr=0.05)
    losses = []
    for k in range(steps):
        opt.zero_grad()
        loss, backward = vjp(model, *_batch(k))
        backward(np.float32(1.0))
        opt.step()
        losses.append(float(loss))
    return losses


def test_vjp_of_a_loaded_model_gives_the_original_s_gradients(tmp_path):
    original = TinyLM()
    save(script(original), tmp_path / "lm.rns")
    loaded = load(tmp_path / "lm.rns")
    loss, backward = vjp(loaded, *_batch(0))
    assert backward(np.float32(1.0)) == (None, None)  # integer arguments: no gradient
    ref_loss, ref_backward = vjp(original, *_batch(0))
    ref_backward(np.float32(1.0))
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-6)
    expected = dict(original.named_parameters())
    found = dict(loaded.named_parameters())
    assert sorted(found) == sorted(expected)
    for name, p in found.items():
        np.testing.assert_allclose(p.grad, expected[name].grad, rtol=1e-5, atol=1e-7,
                                   err_msg=name)


def test_fine_tuning_a_loaded_model_trains_as_the_original(tmp_path):
    original = TinyLM()
    save(script(original), tmp_path / "lm.rns")
    loaded = load(tmp_path / "lm.rns")
    tuned_losses = _train(loaded)
    assert tuned_losses == pytest.approx(_train(original), rel=1e-5)
    assert tuned_losses[-1] < tuned_losses[0]
    for name, p in loaded.named_parameters():
        np.testing.assert_allclose(p.data, original.get_parameter(name).data, rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    save(loaded, tmp_path / "tuned.rns")  # the fine-tuned weights travel on
    again = load(tmp_path / "tuned.rns")
    np.testing.assert_allclose(again(*_batch(5)), loaded(*_batch(5)), rtol=1e-6)


def test_a_frozen_model_differentiates_its_inputs_only(tmp_path):
    class Scale(Module):
        def __init__(self):
            super().__init__()
            self.w = Parameter(np.full((3, 3), 2.0, "float32"))

        def forward(self, x: Tensor) -> Tensor:
            return ops.sum(np.tanh(x @ self.w))

    frozen = freeze(script(Scale()))
    save(frozen, tmp_path / "frozen.rns")
    x = np.ones((2, 3), "float32") * 0.1
    out, backward = vjp(load(tmp_path / "frozen.rns"), x)
    (grad,) = backward(np.float32(1.0))
    expected = (1 - np.tanh(x @ np.full((3, 3), 2.0)) ** 2) @ np.full((3, 3), 2.0).T
    np.testing.assert_allclose(grad, expected, rtol=1e-5)
    assert list(load(tmp_path / "frozen.rns").parameters()) == []
