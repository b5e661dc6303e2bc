"""Classification losses with integer targets: ``cross_entropy`` and ``nll_loss``, as torch's.

    loss = cross_entropy(logits, targets)      # logits (N, C), targets (N,) ints -> mean loss

``cross_entropy`` is ``nll_loss`` of ``log_softmax(logits, 1)``: the log-sum-exp subtracts the
row maximum first, so large logits never overflow, and the gradient is ``softmax - one_hot``
(divided by the count). Targets equal to ``ignore_index`` (torch's -100) add nothing and are not
counted in the mean. The functions are written in the scripting language: they compile inside a
scripted ``forward``, and ``vjp(cross_entropy, logits, targets)`` differentiates them.

torch's ``reduction`` is a string; compiled code cannot branch on one, so the functions give
torch's default (``"mean"``), ``*_losses`` gives ``"none"`` (one loss per row, 0 where ignored),
and ``CrossEntropyLoss(reduction=...)`` takes all three (its choice is a compiled-in constant).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rnn.compiled import CompiledModule
from script import Tensor, ops
from script.module import is_array

REDUCTIONS = ("none", "mean", "sum")
"""torch's ``reduction`` values, in the order of ``CrossEntropyLoss.reduce_kind``."""


def nll_losses(input: Tensor, target: Tensor, ignore_index: int = -100) -> Tensor:
    """``-input[n, target[n]]`` per row of log-probabilities ``(N, C)``, 0 where
    ``target[n] == ignore_index`` (``F.nll_loss(..., reduction="none")``); a target outside
    ``[0, C)`` other than ``ignore_index`` is an IndexError (numpy would wrap a negative one)."""
    keep = target != ignore_index
    outside = np.logical_and(keep, np.logical_or(target < 0, target >= input.shape[1]))
    if input.shape[0] > 0 and np.max(outside):
        raise IndexError("nll_loss: a target is out of bounds for the number of classes")
    rows = ops.arange(0, input.shape[0])
    picked = input[rows, np.where(keep, target, 0)]
    return np.where(keep, -picked, 0.0)


def nll_loss(input: Tensor, target: Tensor, ignore_index: int = -100) -> Tensor:
    """The mean of ``nll_losses`` over the rows not ignored (``F.nll_loss``)."""
    losses = nll_losses(input, target, ignore_index)
    count = float(ops.sum(target != ignore_index))
    return ops.sum(losses) / count


def cross_entropy_losses(input: Tensor, target: Tensor, ignore_index: int = -100) -> Tensor:
    """Per-row cross-entropy of logits ``(N, C)`` and class indices ``(N,)``
    (``F.cross_entropy(..., reduction="none")``)."""
    return nll_losses(ops.log_softmax(input, 1), target, ignore_index)


def cross_entropy(input: Tensor, target: Tensor, ignore_index: int = -100) -> Tensor:
    """The mean cross-entropy of logits ``(N, C)`` and class indices ``(N,)`` over the rows not
    ignored (``F.cross_entropy``), through a stable ``log_softmax``."""
    return nll_loss(ops.log_softmax(input, 1), target, ignore_index)


def check_targets(name: str, logits: Any, target: Any, ignore_index: int) -> Any:
    """``target`` as an integer array of ``logits.shape[0]`` class indices in ``[0, C)`` or
    ``ignore_index`` (a ValueError/IndexError naming the bad one, where numpy would wrap a
    negative index silently)."""
    if not is_array(target):
        target = np.asarray(target)
    if target.dtype.kind not in "iu":
        raise TypeError(f"{name}: target must be an integer array of class indices, got "
                        f"{target.dtype}")
    if logits.ndim != 2 or target.shape != logits.shape[:1]:
        raise ValueError(f"{name}: expected input (N, C) and target (N,), got input "
                         f"{tuple(logits.shape)} and target {tuple(target.shape)}")
    used = target[target != ignore_index]
    classes = logits.shape[1]
    if used.size and (int(used.min()) < 0 or int(used.max()) >= classes):
        bad = int(used.min()) if int(used.min()) < 0 else int(used.max())
        raise IndexError(f"{name}: target {bad} is out of bounds for {classes} classes")
    return target


class CrossEntropyLoss(CompiledModule):
    """``torch.nn.CrossEntropyLoss(reduction="mean", ignore_index=-100)``: ``loss(logits,
    target)`` with targets checked at the call."""

    def __init__(self, reduction: str = "mean", ignore_index: int = -100):
        super().__init__()
        if reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
        self.reduction = reduction
        self.reduce_kind = REDUCTIONS.index(reduction)
        """``reduction`` as an int: compiled in as a constant, its branches fold."""
        self.ignore_index = ignore_index

    def prepare_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                     ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Check the targets (``check_targets``)."""
        if len(args) != 2 or kwargs:
            raise TypeError("CrossEntropyLoss() takes two arguments: input and target")
        logits, target = args
        return (logits, check_targets("CrossEntropyLoss", logits, target,
                                      self.ignore_index)), {}

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        losses = cross_entropy_losses(input, target, self.ignore_index)
        if self.reduce_kind == 0:
            return losses
        if self.reduce_kind == 2:
            return ops.sum(losses)
        return ops.sum(losses) / float(ops.sum(target != self.ignore_index))


__all__ = ["CrossEntropyLoss", "REDUCTIONS", "check_targets", "cross_entropy",
           "cross_entropy_losses", "nll_loss", "nll_losses"]
