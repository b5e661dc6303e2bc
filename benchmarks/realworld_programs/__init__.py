"""Real-world numpy RNN programs, ported from public, permissively licensed code with type
annotations only (each module's docstring names its source, file and license, and lists exactly
what changed).

Every module defines ``CASES``: name -> :class:`Case` (a function and how to make its arguments),
and ``BENCH``: the case ``python -m benchmarks.realworld`` times (in ``BENCH_DTYPE`` when the
module names the dtype its source computes in, else float64); ``CELLS``, where a program has
them, names its function-style cells (one step of a recurrent layer as a function), which the
benchmark times too. The test suite
(``tests/programs/realworld``) checks every case: compiled equals plain numpy in float32 and
float64, and gradients equal central finite differences where the case is differentiable.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

MODULES = (
    "min_char_rnn",
    "rnnlm_numpy",
    "cs231n_rnn",
    "cs231n_lstm",
    "cs231n_captioning",
    "dlfs2_layers",
    "dlfs2_time_rnn",
    "dlfs2_gru",
    "dlfs2_attention",
    "dlfs2_seq2seq",
    "dlfs2_optimizers",
    "mlfromscratch_rnn",
    "pyesn",
    "mantas_esn",
    "autograd_char_models",
)
"""The programs, one module each."""


@dataclass(frozen=True)
class Case:
    """One function of a program and the arguments it is called with."""

    fn: Callable[..., Any]
    """The ported function, plain numpy."""
    make_args: Callable[[str, str], tuple]
    """``make_args(dtype, size)``: the arguments; size is "test" (tiny) or "bench"."""
    grad: bool = False
    """Whether its gradients are checked against finite differences (float64)."""
    xfail: str = ""
    """Why compiled != plain today (the error), or "" when it passes."""
    grad_xfail: str = ""
    """Why its gradient check fails today, or ""."""
    fd: tuple[float, float, float] = (1e-6, 1e-6, 1e-8)
    """(step, rtol, atol) of the finite-difference check; larger for programs whose outputs are
    float32 by construction (``np.empty(..., dtype='f')``), where a step of 1e-6 is rounding."""


def programs() -> dict[str, ModuleType]:
    """name -> program module, in corpus order."""
    return {name: importlib.import_module(f"{__name__}.{name}") for name in MODULES}


def arrays(dtype: str, seed: int, *shapes: tuple[int, ...], scale: float = 0.5) -> tuple:
    """Normal random arrays of the given shapes, times ``scale``, in ``dtype``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return tuple((rng.standard_normal(s) * scale).astype(dtype) for s in shapes)
