"""Optimizers on ``Parameter``s: SGD (momentum, Nesterov, weight decay), Adam, gradient clipping.

The update rules are PyTorch's (``torch.optim.SGD`` / ``Adam``). Updates happen in place on
``param.data``, so every ``ScriptModule`` sharing the parameters sees them at its next call.
Gradients come from ``vjp(script_module, ...)``, whose backward accumulates into ``param.grad``::

    opt = Adam(model.parameters(), lr=1e-3)
    loss, backward = vjp(scripted, x, y)
    opt.zero_grad()
    backward(1.0)
    clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from script import Parameter


def _as_list(params: Iterable[Parameter]) -> list[Parameter]:
    found = list(params)
    if not found:
        raise ValueError("the optimizer got an empty parameter list")
    if not all(isinstance(p, Parameter) for p in found):
        raise TypeError("optimizers take Parameters (module.parameters())")
    return found


def _array_module(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        return np
    import cupy  # a CuPy array: its own module
    return cupy


class Optimizer:
    """Holds the parameters and per-parameter state; ``step()`` updates ``.data`` in place."""

    def __init__(self, params: Iterable[Parameter], lr: float):
        if lr < 0.0:
            raise ValueError(f"invalid learning rate {lr}")
        self.params = _as_list(params)
        self.lr = lr
        self.state: dict[int, dict[str, Any]] = {id(p): {} for p in self.params}

    def zero_grad(self) -> None:
        """Forget the gradients (``.grad = None``), so the next backward sets them afresh."""
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        """Update every parameter that has a gradient."""
        for p in self.params:
            if p.grad is not None:
                self.update(p, self.state[id(p)])

    def update(self, p: Parameter, state: dict[str, Any]) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (with dampening, Nesterov) and L2
    weight decay, as ``torch.optim.SGD``."""

    def __init__(self, params: Iterable[Parameter], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False):
        super().__init__(params, lr)
        if momentum < 0.0 or weight_decay < 0.0:
            raise ValueError("momentum and weight_decay must be non-negative")
        if nesterov and (momentum <= 0.0 or dampening != 0.0):
            raise ValueError("Nesterov momentum needs a momentum and zero dampening")
        self.momentum = momentum
        self.dampening = dampening
        self.weight_decay = weight_decay
        self.nesterov = nesterov

    def update(self, p: Parameter, state: dict[str, Any]) -> None:
        g = p.grad
        if self.weight_decay:
            g = g + self.weight_decay * p.data
        if self.momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = g.astype(p.data.dtype, copy=True)
            else:
                buf *= self.momentum
                buf += (1.0 - self.dampening) * g
            g = g + self.momentum * buf if self.nesterov else buf
        p.data -= (self.lr * g).astype(p.data.dtype, copy=False)


class Adam(Optimizer):
    """Adam with bias correction and L2 weight decay added to the gradient, as
    ``torch.optim.Adam``."""

    def __init__(self, params: Iterable[Parameter], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        super().__init__(params, lr)
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"invalid betas {betas}")
        self.betas = betas
        self.eps = eps
        self.weight_decay = weight_decay

    def update(self, p: Parameter, state: dict[str, Any]) -> None:
        g = p.grad
        if self.weight_decay:
            g = g + self.weight_decay * p.data
        if not state:
            state["step"] = 0
            state["exp_avg"] = _array_module(p.data).zeros_like(p.data)
            state["exp_avg_sq"] = _array_module(p.data).zeros_like(p.data)
        beta1, beta2 = self.betas
        state["step"] += 1
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m *= beta1
        m += (1.0 - beta1) * g
        v *= beta2
        v += (1.0 - beta2) * g * g
        step_size = self.lr / (1.0 - beta1 ** state["step"])
        denom = _array_module(v).sqrt(v / (1.0 - beta2 ** state["step"])) + self.eps
        p.data -= (step_size * m / denom).astype(p.data.dtype, copy=False)


def clip_grad_norm_(params: Iterable[Parameter], max_norm: float) -> float:
    """Scale all gradients in place so their joint 2-norm is at most ``max_norm``; returns the
    norm before clipping (``torch.nn.utils.clip_grad_norm_``)."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return 0.0
    total = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads))
    scale = max_norm / (total + 1e-6)
    if scale < 1.0:
        for g in grads:
            g *= scale
    return total


def zero_grad(params: Iterable[Parameter]) -> None:
    """``.grad = None`` on every parameter."""
    for p in params:
        p.grad = None


__all__ = ["SGD", "Adam", "Optimizer", "clip_grad_norm_", "zero_grad"]
