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


# -- multi-step references written from PyTorch's documented algorithms (no torch needed) ---------
# torch.optim.SGD and torch.optim.Adam documentation, "Algorithm" pseudo-code
# (https://pytorch.org/docs/stable/generated/torch.optim.SGD.html, .../torch.optim.Adam.html).
def sgd_reference(theta, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                  nesterov=False):
    """theta after one step per gradient in ``grads`` (None: the parameter has no gradient that
    step and is skipped; its momentum buffer waits)."""
    theta, b, t = theta.copy(), None, 0
    for g in grads:
        if g is None:
            continue
        t += 1
        if weight_decay != 0:
            g = g + weight_decay * theta
        if momentum != 0:
            b = g if t == 1 else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        theta = theta - lr * g
    return theta


def adam_reference(theta, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    theta = theta.copy()
    beta1, beta2 = betas
    m, v, t = np.zeros_like(theta), np.zeros_like(theta), 0
    for g in grads:
        if g is None:
            continue
        t += 1
        if weight_decay != 0:
            g = g + weight_decay * theta
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        m_hat = m / (1 - beta1 ** t)
        v_hat = v / (1 - beta2 ** t)
        theta = theta - lr * m_hat / (np.sqrt(v_hat) + eps)
    return theta


STEPS = 7


def gradient_schedule(shapes, seed):
    """Per parameter, the gradient of each step (magnitudes varying by step; the second
    parameter has none at step 2, as a parameter unused by one batch)."""
    rng = np.random.default_rng(seed)
    schedule = [[rng.standard_normal(s) * (0.1 + step) for step in range(STEPS)] for s in shapes]
    if len(schedule) > 1:
        schedule[1][2] = None
    return schedule


def run_optimizer(make, seed=3):
    ps = params(seed)
    start = [p.data.copy() for p in ps]
    schedule = gradient_schedule([p.shape for p in ps], seed)
    opt = make(ps)
    for step in range(STEPS):
        opt.zero_grad()
        for p, gs in zip(ps, schedule):
            if gs[step] is not None:
                p.grad = gs[step].copy()
        opt.step()
    return ps, start, schedule


SGD_OPTIONS = [dict(lr=0.1), dict(lr=0.05, weight_decay=0.3),
               dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.7, dampening=0.4),
               dict(lr=0.1, momentum=0.9, nesterov=True),
               dict(lr=0.02, momentum=0.8, dampening=0.25, weight_decay=0.1),
               dict(lr=0.03, momentum=0.6, weight_decay=0.2, nesterov=True)]


@pytest.mark.parametrize("options", SGD_OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in
                                                                       o.items()))
def test_sgd_matches_the_documented_algorithm_over_many_steps(options):
    ps, start, schedule = run_optimizer(lambda ps: rnn.SGD(ps, **options))
    for p, theta, gs in zip(ps, start, schedule):
        np.testing.assert_allclose(p.data, sgd_reference(theta, gs, **options), rtol=1e-12,
                                   atol=1e-14)


ADAM_OPTIONS = [dict(lr=0.05), dict(lr=0.05, betas=(0.8, 0.99)),
                dict(lr=0.01, betas=(0.5, 0.9), eps=1e-3),
                dict(lr=0.05, betas=(0.95, 0.6), weight_decay=0.2),
                dict(lr=0.02, betas=(0.0, 0.3), eps=0.1, weight_decay=0.05)]


@pytest.mark.parametrize("options", ADAM_OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in
                                                                        o.items()))
def test_adam_matches_the_documented_algorithm_over_many_steps(options):
    ps, start, schedule = run_optimizer(lambda ps: rnn.Adam(ps, **options))
    for p, theta, gs in zip(ps, start, schedule):
        np.testing.assert_allclose(p.data, adam_reference(theta, gs, **options), rtol=1e-12,
                                   atol=1e-14)


@pytest.mark.parametrize("make", [lambda ps: rnn.SGD(ps, lr=0.1, momentum=0.9, nesterov=True,
                                                     weight_decay=0.1),
                                  lambda ps: rnn.Adam(ps, lr=0.05, betas=(0.8, 0.99),
                                                      weight_decay=0.1)])
def test_float32_parameters_stay_float32_and_follow_the_reference(make):
    p = Parameter(np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3))
    reference = Parameter(p.data.astype(np.float64))
    opt, ref_opt = make([p]), make([reference])
    rng = np.random.default_rng(5)
    for _ in range(STEPS):
        g = rng.standard_normal((2, 3)).astype(np.float32)
        p.grad, reference.grad = g, g.astype(np.float64)
        opt.step()
        ref_opt.step()
        assert p.data.dtype == np.float32
    np.testing.assert_allclose(p.data, reference.data, rtol=1e-5, atol=1e-6)


def test_clip_grad_norm_matches_the_documented_formula():
    """torch.nn.utils.clip_grad_norm_: total 2-norm over all gradients; each scaled by
    max_norm / (total + 1e-6) when that is below 1."""
    ps = params(4)
    grads_for(ps, 3)
    given = [p.grad.copy() for p in ps]
    total = np.sqrt(sum(float((g ** 2).sum()) for g in given))
    for max_norm in (10 * total, 0.3 * total):
        for p, g in zip(ps, given):
            p.grad = g.copy()
        assert rnn.clip_grad_norm_(ps, max_norm) == pytest.approx(total, rel=1e-12)
        scale = min(1.0, max_norm / (total + 1e-6))
        for p, g in zip(ps, given):
            np.testing.assert_allclose(p.grad, g * scale, rtol=1e-12)
