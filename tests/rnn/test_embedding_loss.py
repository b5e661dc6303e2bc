"""``rnn.Embedding`` (a gather whose gradient scatter-adds) and ``cross_entropy`` with integer
targets (stable through log_softmax): values and gradients equal a numpy reference and torch (when
installed); bad tokens and targets raise at the call."""

from __future__ import annotations

import numpy as np
import pytest

import rnn
from script import Module, Parameter, Tensor, ops, vjp

VOCAB, DIM, CLASSES = 11, 5, 7
TOKENS = np.array([[1, 3, 0, 3], [10, 3, 2, 0]])
TARGETS = np.array([0, 6, 2, -100, 1, 1, 6])


def _logits(rows=7, scale=1.0, seed=0):
    return (scale * np.random.default_rng(seed).standard_normal((rows, CLASSES))).astype("float32")


def reference_cross_entropy(logits, target, ignore_index=-100):
    """Mean cross-entropy and its gradient, in float64 numpy."""
    x = logits.astype("float64")
    shifted = x - x.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    keep = target != ignore_index
    rows = np.arange(len(target))[keep]
    count = keep.sum()
    loss = -log_probs[rows, target[keep]].sum() / count
    grad = np.exp(log_probs)
    grad[rows, target[keep]] -= 1.0
    grad[~keep] = 0.0
    return loss, grad / count


# -- Embedding -----------------------------------------------------------------------------------
def test_embedding_gathers_rows_and_scatter_adds_its_gradient():
    emb = rnn.Embedding(VOCAB, DIM, rng=0)
    weight = emb.weight.copy()
    out, backward = vjp(emb, TOKENS)
    np.testing.assert_array_equal(out, weight[TOKENS])
    np.testing.assert_array_equal(emb(TOKENS), weight[TOKENS])
    cotangent = np.random.default_rng(2).standard_normal(out.shape).astype("float32")
    backward(cotangent)
    expected = np.zeros_like(weight)
    np.add.at(expected, TOKENS, cotangent)  # token 3 three times: its rows add up
    np.testing.assert_allclose(emb._parameters["weight"].grad, expected, rtol=1e-6)


def test_embedding_padding_row_starts_at_zero_and_gets_no_gradient():
    emb = rnn.Embedding(VOCAB, DIM, padding_idx=0, rng=0)
    assert not emb.weight[0].any()
    emb.weight[0] = 1.0  # a loaded padding row reads as what it holds, as torch's
    out, backward = vjp(emb, TOKENS)
    assert (out[TOKENS == 0] == 1.0).all()
    backward(np.ones_like(out))
    grad = emb._parameters["weight"].grad
    assert not grad[0].any() and grad[3].tolist() == [3.0] * DIM


@pytest.mark.parametrize("tokens,error", [(np.array([[1, VOCAB]]), IndexError),
                                          (np.array([-1, 2]), IndexError),
                                          (np.array([1.0, 2.0]), TypeError)])
def test_embedding_refuses_bad_tokens(tokens, error):
    with pytest.raises(error, match="Embedding"):
        rnn.Embedding(VOCAB, DIM, rng=0)(tokens)


def test_embedding_equals_torch():
    torch = pytest.importorskip("torch")
    t = torch.nn.Embedding(VOCAB, DIM, padding_idx=2)
    with torch.no_grad():
        t.weight[2] = 0.5  # a pretrained table: the padding row is read as it is
    emb = rnn.Embedding(VOCAB, DIM, padding_idx=2)
    emb.load_state_dict({"weight": t.weight.detach().numpy().copy()})
    cotangent = np.random.default_rng(3).standard_normal(TOKENS.shape + (DIM,))
    t_out = t(torch.tensor(TOKENS))
    (t_out * torch.tensor(cotangent, dtype=torch.float32)).sum().backward()
    out, backward = vjp(emb, TOKENS)
    backward(cotangent.astype("float32"))
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(emb._parameters["weight"].grad, t.weight.grad.numpy(), rtol=1e-5,
                               atol=1e-6)


# -- cross-entropy -------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1.0, 1e4])  # 1e4: exp would overflow without the max shift
def test_cross_entropy_value_and_gradient_equal_the_reference(scale):
    logits = _logits(scale=scale)
    loss, backward = vjp(rnn.cross_entropy, logits, TARGETS)
    grad = backward(np.float32(1.0))[0]
    ref_loss, ref_grad = reference_cross_entropy(logits, TARGETS)
    assert np.isfinite(loss) and loss.dtype == np.float32
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(rnn.cross_entropy(logits, TARGETS), ref_loss, rtol=1e-5)


def test_reductions_of_the_module():
    logits = _logits()
    ref_loss, _ = reference_cross_entropy(logits, TARGETS)
    per_row = rnn.CrossEntropyLoss("none")(logits, TARGETS)
    assert per_row.shape == (7,) and per_row[3] == 0.0
    np.testing.assert_allclose(rnn.CrossEntropyLoss("sum")(logits, TARGETS), ref_loss * 6,
                               rtol=1e-5)
    np.testing.assert_allclose(rnn.CrossEntropyLoss()(logits, TARGETS), ref_loss, rtol=1e-5)
    np.testing.assert_allclose(per_row.sum(), ref_loss * 6, rtol=1e-5)


@pytest.mark.parametrize("target,error", [(np.array([0, 7, 1]), IndexError),
                                          (np.array([0, -2, 1]), IndexError),
                                          (np.array([0.0, 1.0, 1.0]), TypeError),
                                          (np.array([0, 1]), ValueError)])
def test_cross_entropy_module_refuses_bad_targets(target, error):
    with pytest.raises(error, match="CrossEntropyLoss"):
        rnn.CrossEntropyLoss()(_logits(3), target)


def test_cross_entropy_equals_torch():
    torch = pytest.importorskip("torch")
    logits = _logits(scale=30.0)
    for reduction in ("mean", "sum", "none"):
        tx = torch.tensor(logits, requires_grad=True)
        t_loss = torch.nn.functional.cross_entropy(tx, torch.tensor(TARGETS),
                                                   reduction=reduction)
        t_loss.sum().backward()
        module = rnn.CrossEntropyLoss(reduction)
        loss, backward = vjp(module, logits, TARGETS)
        grad, _ = backward(np.ones_like(loss))
        np.testing.assert_allclose(loss, t_loss.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(grad, tx.grad.numpy(), rtol=1e-4, atol=1e-6)


# -- a language model: embedding, LSTM, projection, loss ------------------------------------------
class TinyLM(Module):
    def __init__(self):
        super().__init__()
        self.embed = rnn.Embedding(VOCAB, DIM, rng=0)
        self.lstm = rnn.LSTM(DIM, 6, rng=1)
        self.out_w = Parameter(np.random.default_rng(2).standard_normal((VOCAB, 6))
                               .astype("float32") * 0.3)
        self.out_b = Parameter(np.zeros(VOCAB, "float32"))

    def forward(self, tokens: Tensor, targets: Tensor) -> Tensor:
        hidden, _ = self.lstm(self.embed(tokens))
        logits = ops.linear(ops.reshape(hidden, (-1, 6)), self.out_w, self.out_b)
        return rnn.cross_entropy(logits, ops.reshape(targets, (-1,)))


def test_language_model_gradients_equal_torch():
    torch = pytest.importorskip("torch")
    model = TinyLM()
    tokens, targets = TOKENS.T.copy(), np.roll(TOKENS.T, -1, axis=0)  # (T, B)
    loss, backward = vjp(model, tokens, targets)
    backward(np.float32(1.0))
    t_embed = torch.nn.Embedding(VOCAB, DIM)
    t_lstm = torch.nn.LSTM(DIM, 6)
    t_out = torch.nn.Linear(6, VOCAB)
    with torch.no_grad():
        t_embed.weight.copy_(torch.tensor(model.embed.weight))
        for name, p in t_lstm.named_parameters():
            p.copy_(torch.tensor(model.lstm.get_parameter(name).data))
        t_out.weight.copy_(torch.tensor(model.out_w))
        t_out.bias.copy_(torch.tensor(model.out_b))
    hidden, _ = t_lstm(t_embed(torch.tensor(tokens)))
    t_loss = torch.nn.functional.cross_entropy(t_out(hidden.reshape(-1, 6)),
                                               torch.tensor(targets).reshape(-1))
    t_loss.backward()
    np.testing.assert_allclose(loss, t_loss.item(), rtol=1e-5)
    grads = dict(model.named_parameters())
    np.testing.assert_allclose(grads["embed.weight"].grad, t_embed.weight.grad.numpy(),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grads["lstm.weight_hh_l0"].grad, t_lstm.weight_hh_l0.grad.numpy(),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grads["out_w"].grad, t_out.weight.grad.numpy(), rtol=1e-4,
                               atol=1e-6)
