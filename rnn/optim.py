"""Optimizers on ``Parameter``s: SGD (momentum, Nesterov, weight decay), Adam, AdamW, gradient
clipping; parameter groups and ``state_dict()`` / ``load_state_dict()`` checkpoints.

The update rules, the group options and the state dict layout are PyTorch's
(``torch.optim.SGD`` / ``Adam`` / ``AdamW``); learning-rate schedules are in
``rnn.lr_scheduler``. Updates happen in place on ``param.data``, so every ``ScriptModule``
sharing the parameters sees them at its next call.
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

from rnn.init import from_torch
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
    """Holds parameter groups and per-parameter state; ``step()`` updates ``.data`` in place.

    ``params`` is an iterable of ``Parameter``s, or of dicts ``{"params": [...], "lr": ...}``
    (parameter groups, torch's): a group's own options override the optimizer's defaults.
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]):
        self.defaults = dict(defaults)
        """the options a group takes when it does not set them."""
        self.param_groups: list[dict[str, Any]] = []
        """each group's ``"params"`` (a list) and options, as torch's."""
        self.state: dict[int, dict[str, Any]] = {}
        """``id(parameter)`` -> its state (momentum buffers, moments, step count)."""
        groups = list(params)
        if not groups:
            raise ValueError("the optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (defaults fill the rest)."""
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError("a parameter group is a dict with a 'params' list")
        params = group["params"]
        params = _as_list([params] if isinstance(params, Parameter) else params)
        taken = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params) or taken & {id(p) for p in params}:
            raise ValueError("some parameters appear in more than one parameter group")
        full = {**self.defaults, **group, "params": params}
        self.check_options(full)
        self.param_groups.append(full)
        for p in params:
            self.state.setdefault(id(p), {})

    def check_options(self, group: dict[str, Any]) -> None:
        """Raise ValueError for a group's invalid options."""
        if group["lr"] < 0.0:
            raise ValueError(f"invalid learning rate {group['lr']}")

    @property
    def params(self) -> list[Parameter]:
        """Every parameter, group by group."""
        return [p for group in self.param_groups for p in group["params"]]

    @property
    def lr(self) -> float:
        """The first group's learning rate; setting it sets every group's."""
        return self.param_groups[0]["lr"]

    @lr.setter
    def lr(self, value: float) -> None:
        for group in self.param_groups:
            group["lr"] = value

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients (``.grad = None``), so the next backward sets them afresh; with
        ``set_to_none=False``, fill them with zeros instead (torch's)."""
        zero_grad(self.params, set_to_none)

    def step(self, closure: Any = None) -> Any:
        """Update every parameter that has a gradient, with its group's options; with a
        ``closure`` (torch's: it recomputes the loss and the gradients), call it first and
        return its loss."""
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.update(p, self.state[id(p)], group)
        return loss

    def update(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        raise NotImplementedError

    # -- checkpoints ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{options, "params": [index, ...]}]}``
        as torch's: parameters by their position over the groups, arrays copied."""
        index = {id(p): k for k, p in enumerate(self.params)}
        state = {index[id(p)]: {k: _copied(v) for k, v in self.state[id(p)].items()}
                 for p in self.params if self.state[id(p)]}
        groups = [{**{k: v for k, v in g.items() if k != "params"},
                   "params": [index[id(p)] for p in g["params"]]} for g in self.param_groups]
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore options and state saved by ``state_dict`` (the groups must hold as many
        parameters as when saved); state arrays take each parameter's dtype and device."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                len(g["params"]) != len(mine["params"])
                for g, mine in zip(groups, self.param_groups)):
            raise ValueError("loaded state dict has a different number of parameter groups or "
                             "of parameters in a group than the optimizer")
        saved = state_dict["state"]
        for group, mine in zip(groups, self.param_groups):
            mine.update({k: v for k, v in group.items() if k != "params"})
            for k, p in zip(group["params"], mine["params"]):
                found = saved.get(k, saved.get(str(k), {}))
                self.state[id(p)] = {name: _restored(v, p.data, name)
                                     for name, v in found.items()}


def _copied(value: Any) -> Any:
    return value.copy() if hasattr(value, "copy") and hasattr(value, "dtype") else value


def _restored(value: Any, like: Any, name: str) -> Any:
    """A saved state value for a parameter like ``like``: arrays as its dtype (floating state;
    the step count stays an int) and on its device, copied."""
    value = from_torch(value)  # torch's own state dict
    if not hasattr(value, "dtype") or name == "step":
        if name == "step" and hasattr(value, "item"):
            value = value.item()
            return int(value) if float(value).is_integer() else value
        return value
    xp = _array_module(like)
    dtype = like.dtype if np.dtype(value.dtype).kind == "f" else value.dtype
    if xp is np:
        return np.array(value, dtype=dtype, copy=True)
    return xp.array(value, dtype=dtype)


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (with dampening, Nesterov) and L2
    weight decay, as ``torch.optim.SGD``."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False, *,
                 maximize: bool = False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def check_options(self, group: dict[str, Any]) -> None:
        super().check_options(group)
        if group["momentum"] < 0.0 or group["weight_decay"] < 0.0:
            raise ValueError("momentum and weight_decay must be non-negative")
        if group["nesterov"] and (group["momentum"] <= 0.0 or group["dampening"] != 0.0):
            raise ValueError("Nesterov momentum needs a momentum and zero dampening")

    def update(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        g = -p.grad if group.get("maximize") else p.grad
        momentum = group["momentum"]
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.data
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = g.astype(p.data.dtype, copy=True)
            else:
                buf *= momentum
                buf += (1.0 - group["dampening"]) * g
            g = g + momentum * buf if group["nesterov"] else buf
        p.data -= (group["lr"] * g).astype(p.data.dtype, copy=False)


class Adam(Optimizer):
    """Adam with bias correction and L2 weight decay added to the gradient, as
    ``torch.optim.Adam``."""

    decoupled = False
    """AdamW: weight decay shrinks the parameter instead of adding to the gradient."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def check_options(self, group: dict[str, Any]) -> None:
        super().check_options(group)
        beta1, beta2 = group["betas"]
        if not (0.0 <= beta1 < 1.0 and 0.0 <= beta2 < 1.0):
            raise ValueError(f"invalid betas {group['betas']}")
        if group["eps"] < 0.0 or group["weight_decay"] < 0.0:
            raise ValueError("eps and weight_decay must be non-negative")

    def update(self, p: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        g = -p.grad if group.get("maximize") else p.grad
        lr, decay = group["lr"], group["weight_decay"]
        if decay and self.decoupled:
            p.data *= 1.0 - lr * decay
        elif decay:
            g = g + decay * p.data
        if not state:
            state["step"] = 0
            state["exp_avg"] = _array_module(p.data).zeros_like(p.data)
            state["exp_avg_sq"] = _array_module(p.data).zeros_like(p.data)
            if group.get("amsgrad"):
                state["max_exp_avg_sq"] = _array_module(p.data).zeros_like(p.data)
        beta1, beta2 = group["betas"]
        state["step"] += 1
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m *= beta1
        m += (1.0 - beta1) * g
        v *= beta2
        v += (1.0 - beta2) * g * g
        step_size = lr / (1.0 - beta1 ** state["step"])
        if group.get("amsgrad"):  # the largest second moment so far (torch's amsgrad)
            v = _array_module(v).maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
        denom = _array_module(v).sqrt(v / (1.0 - beta2 ** state["step"])) + group["eps"]
        p.data -= (step_size * m / denom).astype(p.data.dtype, copy=False)


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the Adam step),
    as ``torch.optim.AdamW`` (whose default ``weight_decay`` is 0.01)."""

    decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01, amsgrad: bool = False, *, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)


def clip_grad_norm_(params: Iterable[Parameter], max_norm: float,
                    norm_type: float = 2.0) -> float:
    """Scale all gradients in place so their joint ``norm_type``-norm (``inf``: the largest
    magnitude) is at most ``max_norm``; returns the norm before clipping
    (``torch.nn.utils.clip_grad_norm_``)."""
    if isinstance(params, Parameter):
        params = [params]
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return np.float64(0.0)
    norm_type = float(norm_type)
    if norm_type == math.inf:
        total = max(float(_array_module(g).abs(g).max()) if g.size else 0.0 for g in grads)
    elif norm_type <= 0.0:
        raise ValueError(f"norm_type must be positive, got {norm_type}")
    else:
        total = sum(float((np.abs(g.astype(np.float64)) ** norm_type).sum())
                    for g in grads) ** (1.0 / norm_type)
    scale = max_norm / (total + 1e-6)
    if scale < 1.0:
        for g in grads:
            g *= scale
    return np.float64(total)  # torch returns a tensor: .item() works on this too


def clip_grad_value_(params: Iterable[Parameter], clip_value: float) -> None:
    """Clip every gradient in place to ``[-clip_value, clip_value]``
    (``torch.nn.utils.clip_grad_value_``)."""
    if isinstance(params, Parameter):
        params = [params]
    for p in params:
        if p.grad is not None:
            _array_module(p.grad).clip(p.grad, -clip_value, clip_value, out=p.grad)


def zero_grad(params: Iterable[Parameter], set_to_none: bool = True) -> None:
    """``.grad = None`` on every parameter (zeros in place with ``set_to_none=False``)."""
    for p in params:
        if set_to_none or p.grad is None:
            p.grad = None
        else:
            p.grad[...] = 0


__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "clip_grad_norm_", "clip_grad_value_",
           "zero_grad"]
