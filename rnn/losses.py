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
``cross_entropy`` and ``CrossEntropyLoss`` also take torch's ``weight`` (one per class) and
``label_smoothing``, and ``(N, C, T)`` logits with ``(N, T)`` targets.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

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


def cross_entropy(input: Tensor, target: Tensor, ignore_index: int = -100,
                  weight: Optional[Tensor] = None, label_smoothing: float = 0.0) -> Tensor:
    """The mean cross-entropy of logits ``(N, C)`` (or ``(N, C, T)``) and class indices ``(N,)``
    (``(N, T)``) over the targets not ignored (``F.cross_entropy``), through a stable
    ``log_softmax``; ``weight`` (C,) weighs each class (the mean is over the targets'
    weights) and ``label_smoothing`` mixes in the uniform target, as torch's."""
    losses, weights = weighted_cross_entropy(input, target, ignore_index, weight,
                                             label_smoothing)
    return ops.sum(losses) / ops.sum(weights)


def weighted_cross_entropy(input: Tensor, target: Tensor, ignore_index: int,
                           weight: Optional[Tensor], label_smoothing: float
                           ) -> Tuple[Tensor, Tensor]:
    """Per-target losses and the weights a mean divides by (0 where ignored), shaped as
    ``target``: ``(1 - e) * w[y] * nll + e / C * sum_c w[c] * -log p_c`` (torch's
    ``label_smoothing`` ``e``; ``w`` ones without ``weight``)."""
    classes = input.shape[1]
    x = input
    t = target
    if input.ndim == 3:  # (N, C, T): the classes last, one row per (n, t)
        x = ops.transpose(input, (0, 2, 1)).reshape(-1, classes)
        t = target.reshape(-1)
    logp = ops.log_softmax(x, 1)
    keep = t != ignore_index
    nll = nll_losses(logp, t, ignore_index)
    w_t = keep.astype(logp.dtype)
    if weight is not None:
        w = weight.astype(logp.dtype)
        w_t = np.where(keep, w[np.where(keep, t, 0)], 0.0)
        nll = nll * w_t
    losses = nll
    if label_smoothing > 0.0:
        spread = logp * weight.astype(logp.dtype) if weight is not None else logp
        smooth = np.where(keep, -ops.sum(spread, 1), 0.0)
        losses = (1.0 - label_smoothing) * nll + (label_smoothing / classes) * smooth
    return losses.reshape(target.shape), w_t.reshape(target.shape)


def check_targets(name: str, logits: Any, target: Any, ignore_index: int) -> Any:
    """``target`` as an integer array of class indices in ``[0, C)`` or ``ignore_index``,
    shaped as ``logits`` without its class axis (``(N,)`` for ``(N, C)``, ``(N, T)`` for
    ``(N, C, T)``): a ValueError/IndexError naming the bad one, where numpy would wrap a
    negative index silently."""
    if not is_array(logits):
        raise TypeError(f"{name}: input must be an array of logits, got "
                        f"{type(logits).__name__}")
    if not is_array(target):
        target = np.asarray(target)
    if target.dtype.kind not in "iu":
        raise TypeError(f"{name}: target must be an integer array of class indices, got "
                        f"{target.dtype}")
    if logits.ndim not in (2, 3) or target.shape != logits.shape[:1] + logits.shape[2:]:
        raise ValueError(f"{name}: expected input (N, C) and target (N,), or input (N, C, T) "
                         f"and target (N, T), got input {tuple(logits.shape)} and target "
                         f"{tuple(target.shape)}")
    used = target[target != ignore_index]
    classes = logits.shape[1]
    if used.size and (int(used.min()) < 0 or int(used.max()) >= classes):
        bad = int(used.min()) if int(used.min()) < 0 else int(used.max())
        raise IndexError(f"{name}: target {bad} is out of bounds for {classes} classes")
    return target


class ReducedLoss(CompiledModule):
    """A loss with torch's ``reduction``: ``reduce_kind`` is its index in ``REDUCTIONS`` (a
    compiled-in constant), kept in step when ``reduction`` is assigned later, as torch reads it
    at each call."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "reduction":
            if value not in REDUCTIONS:
                raise ValueError(f"reduction must be one of {REDUCTIONS}, got {value!r}")
            super().__setattr__("reduce_kind", REDUCTIONS.index(value))
        super().__setattr__(name, value)


class CrossEntropyLoss(ReducedLoss):
    """``torch.nn.CrossEntropyLoss(weight=None, ignore_index=-100, reduction="mean",
    label_smoothing=0.0)``: ``loss(logits, target)`` with targets checked at the call; logits
    ``(N, C)`` or ``(N, C, T)``."""

    def __init__(self, weight: Any = None, size_average: Any = None, ignore_index: int = -100,
                 reduce: Any = None, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__()
        if isinstance(weight, str):  # the former signature, CrossEntropyLoss("sum", -1)
            weight, reduction = None, weight
            if isinstance(size_average, int) and not isinstance(size_average, bool):
                ignore_index, size_average = size_average, None
        if size_average is not None or reduce is not None:
            raise ValueError("size_average and reduce are deprecated in torch: use reduction")
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"label_smoothing must be between 0.0 and 1.0, got "
                             f"{label_smoothing}")
        self.reduction = reduction  # (and reduce_kind: ReducedLoss)
        self.ignore_index = ignore_index
        self.label_smoothing = float(label_smoothing)
        self.weight = None if weight is None else np.asarray(weight)

    def prepare_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                     ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Check the targets (``check_targets``)."""
        if len(args) != 2 or kwargs:
            raise TypeError("CrossEntropyLoss() takes two arguments: input and target")
        logits, target = args
        target = check_targets("CrossEntropyLoss", logits, target, self.ignore_index)
        if self.weight is not None and self.weight.shape != (logits.shape[1],):
            raise ValueError(f"CrossEntropyLoss: weight must have one value per class "
                             f"({logits.shape[1]}), got shape {self.weight.shape}")
        return (logits, target), {}

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        weight = None if self.weight is None else self.weight.astype(input.dtype)
        losses, weights = weighted_cross_entropy(input, target, self.ignore_index, weight,
                                                 self.label_smoothing)
        if self.reduce_kind == 0:
            return losses
        if self.reduce_kind == 2:
            return ops.sum(losses)
        return ops.sum(losses) / ops.sum(weights)


class MSELoss(ReducedLoss):
    """``torch.nn.MSELoss(reduction="mean")``: the squared differences, their mean or sum."""

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        squared = (input - target) ** 2
        if self.reduce_kind == 0:
            return squared
        if self.reduce_kind == 2:
            return ops.sum(squared)
        return ops.mean(squared)


__all__ = ["CrossEntropyLoss", "MSELoss", "REDUCTIONS", "ReducedLoss", "check_targets",
           "cross_entropy", "cross_entropy_losses", "nll_loss", "nll_losses",
           "weighted_cross_entropy"]
