"""Products outside loops and the native loop's step product as numpy calls them, through
``fuser.cpu.stepgemm``'s kernel: ``matmul`` (a large product on ``threads()`` threads, the
calling one and ``fuser.cpu.pool``'s helpers, sharing its columns task by task), ``matmul_for``
(which products outside loops take it) and ``step`` (one thread, as a native loop's step)."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from fuser.cpu import blas, pool
from fuser.cpu.kernel import data_address
from fuser.cpu.stepgemm import enabled, job_address, kernel, lanes, use


def threads() -> int:
    """How many threads a product outside a loop uses: BLAS's thread count (``--threads``,
    threadpoolctl and ``OPENBLAS_NUM_THREADS`` set it), at most the CPUs this process may run
    on."""
    count = blas.get_threads()
    return max(1, min(count if count else pool.cpus(), pool.cpus()))


OUTSIDE_MIN_PRODUCT = 1 << 21
"""Products outside loops with fewer multiply-adds than this stay with numpy (the kernel's
Python-side set-up, a few microseconds, would not pay)."""


POOL_MIN_PRODUCT = 1 << 23
"""Products with fewer multiply-adds than this run on the calling thread alone: waking a
helper costs tens of microseconds on a virtual machine whose other vCPU sleeps, as long as such
a product takes on one core (measured, float32: (64, 128) x (128, 256) 27 us alone, 31 us
shared; (64, 128) x (128, 1024), 8.4M multiply-adds, 98 us alone, 61 us shared)."""


def matmul_for(m: int, n: int, k: int, dtype: str) -> Any:
    """The product function for a matmul outside loops of these static sizes, or None when
    numpy's ``@`` should compute it."""
    if dtype not in ("float32", "float64") or not enabled():
        return None
    if m * n * k < OUTSIDE_MIN_PRODUCT or m <= 0 or n <= 0 or k <= 0:
        return None
    return matmul


def _takes(a: Any, b: Any, out: Any) -> bool:
    if (type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim != 2 or b.ndim != 2
            or a.dtype != b.dtype or a.dtype.char not in "fd" or a.shape[1] != b.shape[0]
            or 0 in a.shape or b.shape[1] == 0):
        return False
    item = a.itemsize
    (a0, a1), (b0, b1) = a.strides, b.strides
    if a0 % item or a1 % item or b0 % item or b1 % item:
        return False
    if out is None:
        return True
    if type(out) is not np.ndarray or out.dtype != a.dtype or out.shape != (a.shape[0],
                                                                            b.shape[1]):
        return False
    flags = out.flags
    return (flags.c_contiguous and flags.writeable and not np.may_share_memory(out, a)
            and not np.may_share_memory(out, b))


def _numpy(a: Any, b: Any, out: Any) -> Any:
    return a @ b if out is None else np.matmul(a, b, out=out)


def step(a: Any, b: Any, out: Any) -> Any:
    """``np.matmul(a, b, out=out)`` the way a native loop computes a step's product (one thread,
    k in one block) when ``use`` takes its sizes and B is row-major; numpy's otherwise."""
    if not _takes(a, b, out) or b.strides[1] != b.itemsize or not enabled():
        return _numpy(a, b, out)
    (m, k), n, item = a.shape, b.shape[1], a.itemsize
    if not use(m, n, k, item):
        return _numpy(a, b, out)
    counter = np.zeros(1, np.int64)
    kernel(item == 8)(m, n, k, data_address(a), a.strides[0] // item, a.strides[1] // item,
                      data_address(b), b.strides[0] // item, 1, data_address(out), n, k, None,
                      data_address(counter), n)
    return out


def matmul(a: Any, b: Any, out: Any = None) -> Any:
    """``a @ b`` (into ``out`` when given) for two float matrices of one dtype, through the
    kernel on ``threads()`` threads (this one and the native pool's helpers, ``fuser.cpu.pool``)
    that take the columns of the result task by task (a thread on a busy core takes fewer,
    nobody waits for it); numpy's for anything else."""
    if not _takes(a, b, out):
        return _numpy(a, b, out)
    (m, k), n = a.shape, b.shape[1]
    item = a.itemsize
    if out is None:
        out = np.empty((m, n), a.dtype)
    width = 2 * lanes(item)
    count = threads() if m * n * k >= POOL_MIN_PRODUCT else 1
    # columns per task: a few tasks per thread, a whole number of two-vector panels
    per_task = -(-n // (4 * count)) if count > 1 else n
    task_cols = min(n, max(width, -(-per_task // width) * width, 64 if count > 1 else n))
    count = min(count, -(-n // task_cols))
    kc = min(k, KC_BYTES // item)
    per_pack = kc * task_cols if b.strides[1] != item else 0
    pack = np.empty(max(1, per_pack * count), a.dtype)
    args = np.array([m, n, k, data_address(a), *(st // item for st in a.strides),
                     data_address(b), *(st // item for st in b.strides), data_address(out), n,
                     kc, data_address(pack), per_pack * item, task_cols, count, 0, 0], np.int64)
    job = job_address(a.dtype.char == "d")
    at = data_address(args)
    if count == 1 or not pool.run(job, at):
        fn = _jobs.get(job)
        if fn is None:
            fn = _jobs[job] = _JOB(job)
        fn(at)
    return out


_JOB = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_jobs: dict[int, Any] = {}
"""each job's ctypes function, by address."""


KC_BYTES = 1024
"""A block of k outside loops: this many bytes of a row of A (256 float32 items), so a panel of
B (kc x two vectors) stays in the L1 cache while the rows of a chunk of A sweep it."""
