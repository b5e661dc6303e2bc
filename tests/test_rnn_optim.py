"""Optimizers: PyTorch's update rules (checked against hand-computed steps and, when installed,
torch.optim), in-place updates seen by ScriptModules, gradient clipping."""

from __future__ import annotations

import numpy as np
import pytest

import rnn
from script import Parameter, script, vjp


def params(seed=0):
    rng = np.random.default_rng(seed)
    return [Parameter(rng.standard_normal((3, 2))), Parameter(rng.standard_normal(4))]


def grads_for(ps, step):
    rng = np.random.default_rng(100 + step)
    for p in ps:
        p.grad = rng.standard_normal(p.shape)


def test_sgd_momentum_nesterov_weight_decay_by_hand():
    p = Parameter(np.array([1.0, -2.0]))
    opt = rnn.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)
    p.grad = np.array([0.5, 0.5])
    opt.step()
    g = np.array([0.5, 0.5]) + 0.01 * np.array([1.0, -2.0])
    want = np.array([1.0, -2.0]) - 0.1 * (g + 0.9 * g)
    np.testing.assert_allclose(p.data, want)
    opt.zero_grad()
    assert p.grad is None
    opt.step()  # no gradient: no change
    np.testing.assert_allclose(p.data, want)


def test_adam_first_step_moves_by_lr():
    p = Parameter(np.array([1.0, -2.0, 3.0]))
    opt = rnn.Adam([p], lr=0.01)
    p.grad = np.array([0.3, -4.0, 1e-3])
    opt.step()
    np.testing.assert_allclose(p.data, [0.99, -1.99, 2.99], rtol=1e-4)


@pytest.mark.parametrize("name", ["sgd", "sgd_momentum", "adam"])
def test_matches_torch_optim(name):
    torch = pytest.importorskip("torch")
    ours = params()
    theirs = [torch.nn.Parameter(torch.tensor(p.data.copy())) for p in ours]
    make = {"sgd": (rnn.SGD, torch.optim.SGD, dict(lr=0.1, weight_decay=0.1)),
            "sgd_momentum": (rnn.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9,
                                                             dampening=0.1)),
            "adam": (rnn.Adam, torch.optim.Adam, dict(lr=0.05, betas=(0.8, 0.99),
                                                      weight_decay=0.01))}[name]
    opt, topt = make[0](ours, **make[2]), make[1](theirs, **make[2])
    for step in range(5):
        grads_for(ours, step)
        for p, t in zip(ours, theirs):
            t.grad = torch.tensor(p.grad.copy())
        opt.step()
        topt.step()
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_clip_grad_norm_returns_the_norm_and_scales():
    ps = params()
    grads_for(ps, 0)
    norm = np.sqrt(sum((p.grad ** 2).sum() for p in ps))
    assert rnn.clip_grad_norm_(ps, 1e9) == pytest.approx(norm)
    assert rnn.clip_grad_norm_(ps, 0.5) == pytest.approx(norm)
    assert np.sqrt(sum((p.grad ** 2).sum() for p in ps)) == pytest.approx(0.5, rel=1e-5)


def test_training_a_scripted_gru_lowers_its_loss():
    """Updates land in place on the shared parameters: the ScriptModule sees every step."""
    m = rnn.GRU(2, 8, rng=0)
    sm = script(m)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 16, 2)).astype("float32")
    h0 = np.zeros((1, 16, 8), "float32")
    target = x.sum(axis=0)[:, :1]  # learn to sum the first feature
    opt = rnn.Adam(m.parameters(), lr=0.05)
    losses = []
    for _ in range(40):
        (out, h_n), backward = vjp(sm, x, h0)
        err = h_n[0, :, :1] - target
        losses.append(float((err ** 2).mean()))
        d_h = np.zeros_like(h_n)
        d_h[0, :, :1] = 2 * err / err.size
        opt.zero_grad()
        backward((np.zeros_like(out), d_h))
        rnn.clip_grad_norm_(m.parameters(), 5.0)
        opt.step()
    assert losses[-1] < 0.5 * losses[0]
    with pytest.raises(ValueError):
        rnn.SGD([], lr=0.1)
