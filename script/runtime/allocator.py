"""Keep freed array memory in the process for reuse (glibc malloc settings).

A training forward allocates every saved activation afresh on each call and frees them all after
the backward. With glibc's defaults that memory goes back to the kernel each time: free memory at
the top of the heap above 128 KiB is trimmed, and arrays above a (dynamic) threshold get an
``mmap`` of their own that ``free`` unmaps. The next call then page-faults every page in again,
and the kernel zeroes each one. Measured on the fastrnns LSTM layer, forward + backward, one
thread: 781 minor page faults per call at T=100, B=8, H=64 (5.0 ms a call instead of 2.7 ms) and
29,000 at T=100, B=64, H=512 (about 11% of the call).

So ``tune()``, on glibc, raises three of malloc's thresholds (``mallopt``):
``M_MMAP_THRESHOLD`` (arrays up to 64 MiB come from the heap, and the threshold stops adapting),
``M_TRIM_THRESHOLD`` (up to 256 MiB of free memory at the top of the heap is kept) and
``M_TOP_PAD`` (the heap grows 16 MiB at a time). The process keeps freed memory for its next
allocations instead of returning it at once; ``release()`` returns it on demand
(``malloc_trim``). The settings are process-wide, so every library in the process (numpy, torch)
allocates under them alike: importing rnnscript changes nothing; the runtime calls ``tune()`` when
it first compiles a function (``script.runtime.pipelines.register``), and
``RNNSCRIPT_MALLOC=default`` in the environment makes it a no-op.
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


def tune() -> bool:
    """Apply ``SETTINGS`` unless ``RNNSCRIPT_MALLOC=default``; True when malloc was changed."""
    global tuned
    if os.environ.get("RNNSCRIPT_MALLOC", "") == "default":
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
