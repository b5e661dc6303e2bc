"""Products outside loops and the native loop's step product as numpy calls them, through
``fuser.cpu.stepgemm``'s kernel: ``matmul`` (a large product on ``threads()`` threads, the
calling one and numpy's OpenBLAS threads (``blas.share``) or else ``fuser.cpu.pool``'s
helpers, sharing its columns task by task), ``matmul_for``
(which products outside loops take it) and ``step`` (one thread, as a native loop's step)."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from fuser.cpu import blas, pool
from fuser.cpu.kernel import data_address
from fuser.cpu.stepgemm import enabled, job_address, kernel, lanes, sum_job_address, use


def threads() -> int:
    """How many threads a product outside a loop uses: BLAS's thread count (``--threads``,
    threadpoolctl and ``OPENBLAS_NUM_THREADS`` set it), at most the CPUs this process may run
    on."""
    count = blas.get_threads()
    return max(1, min(count if count else pool.cpus(), pool.cpus()))


OUTSIDE_MIN_PRODUCT = 1 << 21
"""Products outside loops with fewer multiply-adds than this stay with numpy (the kernel's
Python-side set-up, a few microseconds, would not pay)."""


POOL_MIN_PRODUCT = 1 << 21
"""Products with fewer multiply-adds than this run on the calling thread alone. Larger ones
share their columns with numpy's OpenBLAS threads (``blas.share``; the native pool's where
OpenBLAS has no thread server), which after numpy's own last product, or ours, are still
spinning and take a task at once. Measured side by side on 2 cores of a Zen 4 EPYC, float32,
median of 81 calls, alone against shared, each call after a numpy product: (64, 128) x (128,
256), 2.1M: 50-66 against 30-45 us; (64, 384) x (384, 256), 6.3M: 119-120 against 69-97 us;
(8, 512) x (512, 2048): 231-245 against 107-109 us. On threads of our own the helper had
fought numpy's spinning thread for the second core: 6.3M took 125-128 us shared, and the
plain DLFS2 RNN cell, called in turn with the compiled one, ran at 0.65x."""


OUTSIDE_DTYPES = ("float32",)
"""The dtypes whose products outside loops run the kernel. Not float64: there numpy's OpenBLAS
is faster at every size measured ((1024, 256) x (256, 1000): 5.9 against 6.4-6.9 ms; (6400,
512) x (512, 2048): 141 against 182 ms; Zen 4, two threads). Inside loops float64 products
still run the kernel (one thread, ``step``)."""


def matmul_for(m: int, n: int, k: int, dtype: str) -> Any:
    """The product function for a matmul outside loops of these static sizes, or None when
    numpy's ``@`` should compute it: float64 products always (see ``OUTSIDE_DTYPES``)."""
    if dtype not in OUTSIDE_DTYPES or not enabled():
        return None
    if m * n * k < OUTSIDE_MIN_PRODUCT or m <= 0 or n <= 0 or k <= 0:
        return None
    return matmul


def matmul_sum_for(m: int, n: int, depth: int, dtype: str) -> Any:
    """The function for a sum of products outside loops of these static sizes (``depth``: the
    products' k together), or None when numpy should compute each product and the sum."""
    return matmul_sum if matmul_for(m, n, depth, dtype) is not None else None


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
    kernel on ``threads()`` threads (this one and numpy's OpenBLAS threads, ``blas.share``, or
    the native pool's helpers, ``fuser.cpu.pool``) that take the columns of the result task
    by task (a thread on a busy core takes fewer, nobody waits for it); numpy's for anything
    else."""
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
    kc = min(k, KC)
    per_pack = kc * task_cols if b.strides[1] != item else 0
    pack = np.empty(max(1, per_pack * count), a.dtype)
    args = np.array([m, n, k, data_address(a), *(st // item for st in a.strides),
                     data_address(b), *(st // item for st in b.strides), data_address(out), n,
                     kc, data_address(pack), per_pack * item, task_cols, count, 0, 0], np.int64)
    job = job_address(a.dtype.char == "d")
    at = data_address(args)
    if count == 1 or not (blas.share(job, at, count) or pool.run(job, at)):
        _job_function(job)(at)
    return out


def matmul_sum(*operands: Any, out: Any = None) -> Any:
    """``a1 @ b1 + a2 @ b2 + ...`` (into ``out`` when given) for float matrices of one dtype
    and one result shape: one job on ``threads()`` threads whose tasks each compute their
    columns of every product in turn, the first written, the others added (no product is
    stored on its own, no separate sum); numpy's for anything else."""
    pairs = list(zip(operands[::2], operands[1::2]))
    if (len(operands) % 2 or not pairs
            or not all(_takes(a, b, out) for a, b in pairs)):
        return _numpy_sum(pairs, out)
    (a0, b0) = pairs[0]
    m, n, item, dtype = a0.shape[0], b0.shape[1], a0.itemsize, a0.dtype
    if any(a.shape[0] != m or b.shape[1] != n or a.dtype != dtype for a, b in pairs):
        return _numpy_sum(pairs, out)
    if out is None:
        out = np.empty((m, n), dtype)
    depth = sum(a.shape[1] for a, _ in pairs)
    width = 2 * lanes(item)
    count = threads() if m * n * depth >= POOL_MIN_PRODUCT else 1
    per_task = -(-n // (4 * count)) if count > 1 else n
    task_cols = min(n, max(width, -(-per_task // width) * width, 64 if count > 1 else n))
    count = min(count, -(-n // task_cols))
    kc = min(max(a.shape[1] for a, _ in pairs), KC)
    strided = any(b.strides[1] != item for _, b in pairs)
    per_pack = kc * task_cols if strided else 0
    pack = np.empty(max(1, per_pack * count), dtype)
    args = [len(pairs), m, n, data_address(out), n, kc, data_address(pack), per_pack * item,
            task_cols, count, 0, 0]
    for a, b in pairs:
        args += [a.shape[1], data_address(a), *(st // item for st in a.strides),
                 data_address(b), *(st // item for st in b.strides)]
    block = np.array(args, np.int64)
    job = sum_job_address(item == 8)
    at = data_address(block)
    if count == 1 or not (blas.share(job, at, count) or pool.run(job, at)):
        _job_function(job)(at)
    return out


def _numpy_sum(pairs: list[tuple[Any, Any]], out: Any) -> Any:
    total = pairs[0][0] @ pairs[0][1]
    for a, b in pairs[1:]:
        total = total + a @ b
    if out is None:
        return total
    out[...] = total
    return out


def _job_function(job: int) -> Any:
    fn = _jobs.get(job)
    if fn is None:
        fn = _jobs[job] = _JOB(job)
    return fn


_JOB = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_jobs: dict[int, Any] = {}
"""each job's ctypes function, by address."""


KC = 256
"""A block of k outside loops: this many items of a row of A, so a panel of B (kc x two
vectors: 32 KB in either dtype) stays in the L1 cache while the rows of a chunk of A sweep it.
In items, not bytes: float64 blocks of 128 items ran a (64, 512) x (512, 2048) product at
2.8 ms against 1.7 ms with 256 (numpy: 1.9 ms), a (6400, 512) x (512, 2048) one at 236 against
182 ms (Zen 4, two threads)."""
