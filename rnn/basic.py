"""The feed-forward pieces a recurrent model is built with, as ``torch.nn``'s: ``Linear``,
``Dropout`` and ``Sequential`` (``MSELoss`` is in ``rnn.losses``), written in the scripting
language like the cells (so ``script(model)`` compiles them into the model's graph and ``vjp``
differentiates them).

``Linear`` is initialised as torch's (``U(-1/sqrt(in), 1/sqrt(in))`` for the weight and the bias)
and its ``weight (out, in)`` / ``bias (out,)`` load from a torch state dict unchanged.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rnn.compiled import CompiledModule
from rnn.init import DEFAULT_DTYPE, as_generator, uniform
from script import Module, ModuleList, Tensor, ops


class Linear(CompiledModule):
    """``torch.nn.Linear(in_features, out_features, bias=True)``: ``x @ weight.T + bias`` over
    the last axis."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 rng: np.random.Generator | int | None = None, dtype: Any = DEFAULT_DTYPE,
                 device: Any = None):
        super().__init__()
        gen = as_generator(rng)
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.in_features = in_features
        self.out_features = out_features
        self.use_bias = bool(bias)
        self.weight = uniform(gen, (out_features, in_features), bound, dtype)
        if bias:
            self.bias = uniform(gen, (out_features,), bound, dtype)
        if device is not None and str(device) != "cpu":
            self.to(str(device))

    def forward(self, input: Tensor) -> Tensor:
        y = input @ self.weight.T
        if self.use_bias:  # static
            y = y + self.bias
        return y

    def __repr__(self) -> str:
        return (f"Linear(in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.use_bias})")


class Dropout(CompiledModule):
    """``torch.nn.Dropout(p=0.5)``: zeroes elements with probability ``p`` and scales the rest
    by ``1 / (1 - p)`` while training (``train()``), the identity in ``eval()``."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = float(p)

    def forward(self, input: Tensor) -> Tensor:
        return ops.dropout(input, self.p, self.training)


class Sequential(CompiledModule):
    """``torch.nn.Sequential(*modules)``: each module's output is the next one's input. The
    modules are ``self.layers``, so state dict keys are ``layers.0.weight`` where torch's are
    ``0.weight``."""

    def __init__(self, *modules: Module):
        super().__init__()
        self.layers = ModuleList(list(modules))

    def __getitem__(self, k: int) -> Module:
        return self.layers[k]

    def __len__(self) -> int:
        return len(self.layers)

    def forward(self, input: Tensor) -> Tensor:
        x = input
        for layer in self.layers:
            x = layer(x)
        return x


__all__ = ["Dropout", "Linear", "Sequential"]
