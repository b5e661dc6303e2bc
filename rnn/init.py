"""Parameter initialisation: PyTorch's defaults, drawn from a numpy ``Generator``.

``torch.nn.LSTM``, ``GRU``, ``RNN`` and their cells draw every weight and bias from
``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``; these helpers do the same, in the order the
parameters are registered, so one seed gives one model.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from script import Parameter

DEFAULT_DTYPE = "float32"
"""The dtype of parameters when none is given (PyTorch's default)."""


def as_generator(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A numpy ``Generator`` from a generator, a seed or None (a fresh, unseeded one)."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


def as_dtype(dtype: Any) -> np.dtype:
    """A numpy dtype from what numpy takes or a torch dtype (``torch.float64``)."""
    if type(dtype).__module__ == "torch":
        dtype = str(dtype).removeprefix("torch.")
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a numpy or torch dtype, got {dtype!r}") from None


def from_torch(x: Any) -> Any:
    """A CPU torch tensor as a numpy array (detached); anything else as it is."""
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return x


def uniform(rng: np.random.Generator, shape: tuple[int, ...], bound: float,
            dtype: Any = DEFAULT_DTYPE) -> Parameter:
    """A Parameter drawn from ``U(-bound, bound)``."""
    return Parameter(rng.uniform(-bound, bound, size=shape).astype(as_dtype(dtype)))


def recurrent_bound(hidden_size: int) -> float:
    """PyTorch's bound for recurrent weights: ``1 / sqrt(hidden_size)``."""
    return 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0


__all__ = ["DEFAULT_DTYPE", "as_dtype", "from_torch", "as_generator", "recurrent_bound", "uniform"]
