"""Optimizer checkpoints (``state_dict`` / ``load_state_dict``: a resumed run takes the same
next steps), parameter groups, AdamW, and the learning-rate schedules, against torch (when
installed) and numpy references of the documented algorithms."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest

import rnn
from rnn.lr_scheduler import CosineAnnealingLR, ExponentialLR, StepLR
from script import Parameter

SHAPES = [(3, 4), (4,), (2, 2)]
TARGETS = [np.random.default_rng(9 + k).standard_normal(s) for k, s in enumerate(SHAPES)]


def _params(dtype="float64"):
    rng = np.random.default_rng(0)
    return [Parameter(rng.standard_normal(s).astype(dtype)) for s in SHAPES]


def _set_grads(params):
    """A deterministic gradient: that of sum((p - target)^2 + 0.1 p^4)."""
    for p, t in zip(params, TARGETS):
        p.grad = (2.0 * (p.data - t) + 0.4 * p.data ** 3).astype(p.data.dtype)


def _run(params, opt, steps, schedule=None):
    for _ in range(steps):
        _set_grads(params)
        opt.step()
        if schedule is not None:
            schedule.step()


OPTIMIZERS = {
    "sgd": lambda ps: rnn.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda ps: rnn.Adam(ps, lr=0.05, betas=(0.8, 0.95), weight_decay=0.1),
    "adamw": lambda ps: rnn.AdamW(ps, lr=0.05, weight_decay=0.1),
    "groups": lambda ps: rnn.AdamW([{"params": ps[:1], "lr": 0.2},
                                    {"params": ps[1:], "weight_decay": 0.0}], lr=0.05),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_checkpoint_and_resume_takes_identical_next_steps(name):
    params = _params()
    opt = OPTIMIZERS[name](params)
    schedule = StepLR(opt, step_size=2, gamma=0.5)
    _run(params, opt, 3, schedule)
    saved_params = [p.data.copy() for p in params]
    saved = pickle.loads(pickle.dumps((opt.state_dict(), schedule.state_dict())))
    _run(params, opt, 4, schedule)

    resumed = [Parameter(a.copy()) for a in saved_params]
    fresh = OPTIMIZERS[name](resumed)
    fresh.load_state_dict(saved[0])
    fresh_schedule = StepLR(fresh, step_size=2, gamma=0.5)
    fresh_schedule.load_state_dict(saved[1])
    _run(resumed, fresh, 4, fresh_schedule)
    for p, q in zip(params, resumed):
        np.testing.assert_array_equal(p.data, q.data)
    assert fresh_schedule.get_last_lr() == schedule.get_last_lr()


def test_state_dict_is_a_copy_in_torch_layout():
    params = _params()
    opt = rnn.Adam([{"params": params[:2]}, {"params": params[2:], "lr": 0.5}], lr=0.1)
    _run(params, opt, 1)
    state = opt.state_dict()
    assert [g["params"] for g in state["param_groups"]] == [[0, 1], [2]]
    assert state["param_groups"][1]["lr"] == 0.5 and state["param_groups"][0]["lr"] == 0.1
    assert state["state"][2]["step"] == 1
    state["state"][0]["exp_avg"][...] = 7.0  # the copy, not the optimizer's own moments
    assert not (opt.state[id(params[0])]["exp_avg"] == 7.0).any()


def test_loaded_state_takes_the_parameters_dtype():
    params64 = _params()
    opt = rnn.Adam(params64, lr=0.1)
    _run(params64, opt, 2)
    params32 = _params("float32")
    resumed = rnn.Adam(params32, lr=0.1)
    resumed.load_state_dict(opt.state_dict())
    assert resumed.state[id(params32[0])]["exp_avg"].dtype == np.float32
    assert resumed.state[id(params32[0])]["step"] == 2


def test_mismatched_checkpoints_and_groups_are_refused():
    params = _params()
    opt = rnn.SGD(params, lr=0.1)
    with pytest.raises(ValueError, match="different number"):
        rnn.SGD(params[:2], lr=0.1).load_state_dict(opt.state_dict())
    with pytest.raises(ValueError, match="more than one parameter group"):
        rnn.SGD([{"params": params[:2]}, {"params": params[1:]}], lr=0.1)
    with pytest.raises(ValueError, match="learning rate"):
        rnn.SGD([{"params": params, "lr": -1.0}])


def reference_adamw(params, lr, betas, eps, weight_decay, steps):
    """torch.optim.AdamW's documented algorithm, in numpy."""
    data = [p.data.copy() for p in params]
    m = [np.zeros_like(d) for d in data]
    v = [np.zeros_like(d) for d in data]
    for t in range(1, steps + 1):
        for k, (d, target) in enumerate(zip(data, TARGETS)):
            g = 2.0 * (d - target) + 0.4 * d ** 3
            d *= 1 - lr * weight_decay
            m[k] = betas[0] * m[k] + (1 - betas[0]) * g
            v[k] = betas[1] * v[k] + (1 - betas[1]) * g * g
            m_hat = m[k] / (1 - betas[0] ** t)
            v_hat = v[k] / (1 - betas[1] ** t)
            d -= lr * m_hat / (np.sqrt(v_hat) + eps)
    return data


def test_adamw_follows_the_documented_algorithm():
    params = _params()
    expected = reference_adamw(params, 0.05, (0.9, 0.999), 1e-8, 0.1, 6)
    _run(params, rnn.AdamW(params, lr=0.05, weight_decay=0.1), 6)
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.data, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizers_and_groups_equal_torch(name):
    torch = pytest.importorskip("torch")
    params = _params()
    twins = [torch.nn.Parameter(torch.tensor(p.data.copy())) for p in params]
    torch_groups = {
        "sgd": lambda: torch.optim.SGD(twins, lr=0.05, momentum=0.9, nesterov=True,
                                       weight_decay=0.01),
        "adam": lambda: torch.optim.Adam(twins, lr=0.05, betas=(0.8, 0.95), weight_decay=0.1),
        "adamw": lambda: torch.optim.AdamW(twins, lr=0.05, weight_decay=0.1),
        "groups": lambda: torch.optim.AdamW([{"params": twins[:1], "lr": 0.2},
                                             {"params": twins[1:], "weight_decay": 0.0}],
                                            lr=0.05),
    }
    t_opt = torch_groups[name]()
    t_schedule = torch.optim.lr_scheduler.CosineAnnealingLR(t_opt, T_max=3)
    opt = OPTIMIZERS[name](params)
    schedule = CosineAnnealingLR(opt, T_max=3)
    for _ in range(7):
        _set_grads(params)
        for tp, p in zip(twins, params):
            tp.grad = torch.tensor(p.grad.copy())
        opt.step()
        t_opt.step()
        schedule.step()
        t_schedule.step()
    for tp, p in zip(twins, params):
        np.testing.assert_allclose(p.data, tp.detach().numpy(), rtol=1e-10, atol=1e-12)


# -- schedules ------------------------------------------------------------------------------------
def _lrs(make_schedule, epochs=12):
    params = _params()
    opt = rnn.SGD([{"params": params[:1], "lr": 0.3}, {"params": params[1:]}], lr=0.1)
    schedule = make_schedule(opt)
    seen = [schedule.get_last_lr()]
    for _ in range(epochs):
        opt.step()
        schedule.step()
        seen.append(schedule.get_last_lr())
    return seen


SCHEDULES = {
    "step": (lambda o: StepLR(o, step_size=3, gamma=0.5), "StepLR", dict(step_size=3, gamma=0.5)),
    "cosine": (lambda o: CosineAnnealingLR(o, T_max=4, eta_min=0.01), "CosineAnnealingLR",
               dict(T_max=4, eta_min=0.01)),
    "exponential": (lambda o: ExponentialLR(o, gamma=0.9), "ExponentialLR", dict(gamma=0.9)),
}


def test_schedules_follow_their_formulas():
    step = _lrs(SCHEDULES["step"][0])
    assert [lrs[1] for lrs in step[:7]] == pytest.approx([0.1] * 3 + [0.05] * 3 + [0.025])
    cosine = _lrs(SCHEDULES["cosine"][0], epochs=4)
    expected = [0.01 + (0.3 - 0.01) * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(5)]
    assert [lrs[0] for lrs in cosine] == pytest.approx(expected, rel=1e-12)
    assert _lrs(SCHEDULES["exponential"][0], 2)[2][1] == pytest.approx(0.1 * 0.81)


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_equal_torch(name):
    torch = pytest.importorskip("torch")
    make, torch_name, options = SCHEDULES[name]
    twins = [torch.nn.Parameter(torch.zeros(s, dtype=torch.float64)) for s in SHAPES]
    t_opt = torch.optim.SGD([{"params": twins[:1], "lr": 0.3}, {"params": twins[1:]}], lr=0.1)
    t_schedule = getattr(torch.optim.lr_scheduler, torch_name)(t_opt, **options)
    expected = [t_schedule.get_last_lr()]
    for _ in range(12):
        t_opt.step()
        t_schedule.step()
        expected.append(t_schedule.get_last_lr())
    assert _lrs(make) == expected  # the same recursive formulas: equal to the last bit


def test_resuming_a_schedule_needs_the_optimizer_state():
    params = _params()
    with pytest.raises(KeyError, match="initial_lr"):
        StepLR(rnn.SGD(params, lr=0.1), step_size=2, last_epoch=3)
    opt = rnn.SGD(params, lr=0.1)
    StepLR(opt, step_size=2)
    resumed = rnn.SGD(_params(), lr=0.1)
    resumed.load_state_dict(copy.deepcopy(opt.state_dict()))
    assert StepLR(resumed, step_size=2, last_epoch=3).last_epoch == 4
