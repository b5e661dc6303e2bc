"""Peak memory of one run: how many MB a forward + backward adds at its highest point.

On a CPU (Linux) the process's peak resident set is reset by writing ``5`` to
``/proc/self/clear_refs``; the resident set before the run (``VmRSS``) is subtracted from the peak
after it (``VmHWM``). Garbage is collected, the arrays compiled functions keep for their next call
are let go (``fuser.workspace.clear_all``) and, with glibc, free heap memory is handed back to the
system first (``malloc_trim``), so pages an earlier row (or an earlier call of this row) allocated
and kept do not hide this row's allocations. This works for numpy and torch alike: both allocate
from the process heap.

On a GPU the device allocators are asked instead: CuPy's default memory pool (emptied first, so
the bytes it holds afterwards are what the run needed at its peak) plus torch's
``max_memory_allocated`` when torch uses the GPU.

The smaller of ``repeats`` measurements counts: the allocator's state after an earlier run (a
fragmented heap, glibc's moving mmap threshold) now and then inflates one of them by half or more
(seen with torch), never deflates it.

``None`` (shown as ``-``) where neither works: no ``/proc``, a ``clear_refs`` that cannot be
written, an unknown device.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from collections.abc import Callable
from typing import Any

from fuser import workspace

_MB = 1024 * 1024


def peak_mb(run: Callable[[], Any], device: str = "cpu", repeats: int = 2) -> float | None:
    """Megabytes ``run()`` adds to the process (cpu) or device (cuda) at its peak, the smallest
    of ``repeats`` runs; None when this platform cannot tell."""
    measure = {"cuda": _device_peak, "cpu": _host_peak}.get(device)
    if measure is None:
        return None
    peaks = [measure(run) for _ in range(max(1, repeats))]
    known = [p for p in peaks if p is not None]
    return min(known) if known else None


# -- host ---------------------------------------------------------------------------------------
def _host_peak(run: Callable[[], Any]) -> float | None:
    gc.collect()
    workspace.clear_all()
    _trim_heap()
    if not _reset_peak():
        return None
    before = _status_kb("VmRSS")
    if before is None:
        return None
    was_enabled = gc.isenabled()
    gc.disable()  # a collection inside the run would lower the peak it measures
    try:
        run()
    finally:
        if was_enabled:
            gc.enable()
    peak = _status_kb("VmHWM")
    if peak is None:
        return None
    return max(0.0, (peak - before) / 1024)


def _reset_peak() -> bool:
    """Sets the peak resident set (VmHWM) to the current one; False where that is unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def _status_kb(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key == field:
                    return int(value.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return None


_libc: Any = None


def _trim_heap() -> None:
    """glibc's ``malloc_trim(0)``: returns free heap pages to the system (no-op elsewhere)."""
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c")
        try:
            _libc = ctypes.CDLL(name) if name else False
        except OSError:
            _libc = False
    trim = getattr(_libc, "malloc_trim", None) if _libc else None
    if trim is not None:
        trim(0)


# -- device -------------------------------------------------------------------------------------
def _device_peak(run: Callable[[], Any]) -> float | None:
    gc.collect()
    pool = _cupy_pool()
    torch = sys.modules.get("torch")
    torch_cuda = torch is not None and torch.cuda.is_available()
    if pool is None and not torch_cuda:
        return None
    if pool is not None:
        pool.free_all_blocks()
        pool_before = pool.used_bytes()
    if torch_cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        torch_before = torch.cuda.memory_allocated()
    run()
    total = 0
    if pool is not None:
        import cupy
        cupy.cuda.Device().synchronize()
        total += pool.total_bytes() - pool_before
    if torch_cuda:
        torch.cuda.synchronize()
        total += torch.cuda.max_memory_allocated() - torch_before
    return max(0.0, total / _MB)


def _cupy_pool() -> Any:
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return None
    try:
        return cupy.get_default_memory_pool()
    except Exception:  # noqa: BLE001 - a CuPy without a usable pool: no measurement
        return None
