"""Where the arrays of compiled code come from: the function's workspace, and an opt-in malloc
tuning.

A training forward allocates its saved activations, slot buffers and products afresh on each call
and frees them after the backward. With glibc's defaults that memory goes back to the kernel each
time (free memory at the top of the heap above 128 KiB is trimmed, an array above a dynamic
threshold gets an ``mmap`` of its own that ``free`` unmaps), and the next call page-faults every
page in again, zeroed by the kernel: 368 minor faults a call on the fastrnns LSTM layer at
T=100, B=8, H=64 (forward + backward, one thread), 4,671 at T=100, B=64, H=512.

The default is the workspace (``fuser.workspace``): the generated code takes each large array of
static shape (``workspace_array``: a ``tensor::empty`` buffer, a matmul's product written with
``out=`` when ``into_output``) and the native loop takes its slot buffers from allocation sites the
compiled function owns, which hand an array out again once nothing else holds it. Repeated calls
then fault nothing in, and malloc is left as the process set it.

``tune()`` is the former remedy, kept opt-in: with ``RNNSCRIPT_MALLOC=tune`` in the environment the
runtime's first compilation (``script.runtime.pipelines.register``) raises three of glibc's malloc
thresholds (``mallopt``) for the whole process: ``M_MMAP_THRESHOLD`` (arrays up to 64 MiB come
from the heap, and the threshold stops adapting), ``M_TRIM_THRESHOLD`` (up to 256 MiB of free
memory at the top of the heap is kept) and ``M_TOP_PAD`` (the heap grows 16 MiB at a time). It is
off by default because a library must not change malloc for every other library in the process,
and the workspace makes it unnecessary for the arrays compiled code allocates (README, "Memory"
figures). ``release()`` returns free memory malloc keeps (``malloc_trim``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import sys
from typing import Any

import numpy as np

import ir
from fuser.workspace import MIN_BYTES

M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
"""mallopt parameter numbers (glibc's malloc.h)."""

SETTINGS = {M_MMAP_THRESHOLD: 64 << 20, M_TRIM_THRESHOLD: 256 << 20, M_TOP_PAD: 16 << 20}
"""What ``tune`` sets, in bytes."""

tuned = False
"""True once ``tune`` has changed malloc's settings in this process."""


def _libc() -> ctypes.CDLL | None:
    """glibc, when this process runs on it (mallopt/malloc_trim exist nowhere else)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 - present on glibc only (not musl)
        libc.mallopt, libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def requested() -> bool:
    """Whether the environment asks for the malloc tuning (``RNNSCRIPT_MALLOC=tune``)."""
    return os.environ.get("RNNSCRIPT_MALLOC", "").strip().lower() == "tune"


def tune(force: bool = False) -> bool:
    """Apply ``SETTINGS`` when ``RNNSCRIPT_MALLOC=tune`` (or ``force``); True when malloc was
    changed."""
    global tuned
    if not (force or requested()):
        return False
    libc = _libc()
    if libc is None:
        return False
    tuned = all(libc.mallopt(param, value) == 1 for param, value in SETTINGS.items())
    return tuned


def release() -> bool:
    """Give the free memory malloc keeps back to the system (``malloc_trim(0)``); True when some
    was released."""
    libc = _libc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


def workspace_array(value: Any) -> tuple[tuple[int, ...], np.dtype] | None:
    """The static shape and dtype of ``value`` when the generated code takes its array from the
    function's workspace (``fuser.workspace``): a host tensor of known shape and dtype of at least
    ``MIN_BYTES``; None otherwise."""
    t = value.type
    if not isinstance(t, ir.TensorType) or t.device == "cuda" or t.dtype is None:
        return None
    if t.shape is None or not t.shape or any(not isinstance(d, int) or d < 0 for d in t.shape):
        return None
    dtype = np.dtype(t.dtype)
    if math.prod(t.shape) * dtype.itemsize < MIN_BYTES:
        return None
    return tuple(t.shape), dtype


def into_output(node: Any) -> bool:
    """Whether the matmul ``node`` may write into a workspace array (``np.matmul(a, b, out=)``):
    host float tensors of the output's dtype, so numpy computes in that dtype as ``@`` would."""
    out = node.output.type
    if not isinstance(out, ir.TensorType) or out.dtype not in ("float32", "float64"):
        return False
    return all(isinstance(v.type, ir.TensorType) and v.type.dtype == out.dtype
               and v.type.device != "cuda" for v in node.inputs)
