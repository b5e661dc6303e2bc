"""Learning-rate schedules over an optimizer's parameter groups, as ``torch.optim.lr_scheduler``:

    opt = rnn.Adam(model.parameters(), lr=1e-3)
    schedule = rnn.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    for epoch in range(100):
        train_one_epoch(opt)
        schedule.step()            # after opt.step(), as in torch

Each schedule sets ``group["lr"]`` of every group at construction (epoch 0) and at each
``step()``, with torch's recursive formulas, so the learning rates are torch's to the last bit.
``state_dict()`` / ``load_state_dict()`` checkpoint a schedule with its optimizer.
"""

from __future__ import annotations

import math
from typing import Any

from rnn.optim import Optimizer


class LRScheduler:
    """The base of the schedules: ``step()`` advances ``last_epoch`` and sets each group's
    learning rate to ``get_lr()``; ``base_lrs`` are the groups' ``initial_lr``."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        for k, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"param 'initial_lr' is not specified in param_groups[{k}] when "
                               "resuming a schedule (load the optimizer's state first)")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial = True  # the first step keeps the current rates (torch's initial step)
        self.step()
        self._initial = False

    def get_lr(self) -> list[float]:
        """The learning rates for ``last_epoch``, one per group."""
        raise NotImplementedError

    def step(self) -> None:
        """Advance one epoch and set the groups' learning rates."""
        self.last_epoch += 1
        values = self.current_lrs() if self._initial else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = self.current_lrs()

    def current_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (torch's layout)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """Multiply the learning rates by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self.current_lrs()
        return [lr * self.gamma for lr in self.current_lrs()]


class CosineAnnealingLR(LRScheduler):
    """Anneal each learning rate from its base to ``eta_min`` along half a cosine over
    ``T_max`` epochs (then back up, as torch's recursive form does)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        epoch, t_max, low = self.last_epoch, self.T_max, self.eta_min
        if epoch == 0:
            return self.current_lrs()
        if (epoch - 1 - t_max) % (2 * t_max) == 0:
            return [lr + (base - low) * (1 - math.cos(math.pi / t_max)) / 2
                    for base, lr in zip(self.base_lrs, self.current_lrs())]
        return [(1 + math.cos(math.pi * epoch / t_max))
                / (1 + math.cos(math.pi * (epoch - 1) / t_max)) * (lr - low) + low
                for lr in self.current_lrs()]


class ExponentialLR(LRScheduler):
    """Multiply the learning rates by ``gamma`` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return self.current_lrs()
        return [lr * self.gamma for lr in self.current_lrs()]


__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "StepLR"]
