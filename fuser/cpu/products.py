"""Products outside loops and the native loop's step product as numpy calls them, through
``fuser.cpu.stepgemm``'s kernel: ``matmul`` (a large product on ``threads()`` threads, the
calling one and numpy's OpenBLAS threads (``blas.share``) or else ``fuser.cpu.pool``'s
helpers, sharing its columns task by task), ``matmul_for``
(which products outside loops take it) and ``step`` (one thread, as a native loop's step)."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from fuser.cpu import blas, pool, sites
from fuser.cpu.kernel import data_address, layouts_supported
from fuser.cpu.parallel import threads
from fuser.cpu.stepgemm import (
    KC,
    PAIR_SLOTS,
    PARTS,
    SUM_SLOTS,
    enabled,
    job_address,
    kernel,
    lanes,
    packs,
    sum_job_address,
    use,
)

OUTSIDE_MIN_PRODUCT = 1 << 18
"""Products outside loops with fewer multiply-adds than this stay with numpy, whose OpenBLAS runs
them on the calling thread. From this size on (OpenBLAS's own threshold, ``GEMM_MULTITHREAD_
THRESHOLD`` 4 x 65536) numpy's OpenBLAS would hand part of a product to its threads, and wait
for them: beside a busy neighbour a thread whose core the neighbour holds starts a time slice
late, and afterwards it spins for about 0.1 s on the core the calling thread needs. The fastrnns
variable-length LSTM (one (T_i, 64) x (64, 256) projection per sequence, 0.5-1.6M multiply-adds)
took 2.2 ms a forward alone and 35-110 ms in some calls beside a spinning process; with these
products here, on one thread (``POOL_MIN_PRODUCT``), 2.3-3.4 ms. The price on a quiet machine,
medians on 2 cores of a Zen 4 EPYC, float32, numpy with its threads awake against this kernel on
one thread: (32, 64) x (64, 256) 33 against 29 us, (63, 64) x (64, 256) 20 against 25 us, (96,
64) x (64, 256) 32 against 37 us, (64, 128) x (128, 256) 38 against 35 us."""


NUMPY_MIN_PRODUCT = 1 << 28
"""A product (not a sum of products) of this many multiply-adds or more is numpy's, into the
array its site was given (the function's workspace). The kernel does not pack A and blocks for
the step products' sizes; OpenBLAS packs both operands and blocks for its caches, and for
products this large (3 ms and more on two cores) it is faster: side by side on 2 cores of a
Zen 3 EPYC, float32, numpy against the kernel: (6400, 512) x (512, 2048), an LSTM's input
projection, 75 against 89-92 ms; its backward's (2048, 6400) x (6400, 512) (A transposed) 73
against 111 ms and (6400, 2048) x (2048, 512) 73 against 96 ms; (256, 512) x (512, 2048) 3.05
against 3.43 ms; but (128, 512) x (512, 2048) 1.64 against 1.66 ms and (2048, 128) x (128,
512) 1.52 against 1.52 ms. The LSTM layer at that size went from 222 to 204 ms forward and
from 545 to 462 ms forward + backward (alternated in one process). A busy neighbour's time
slice, which a shared product can wait for (``OUTSIDE_MIN_PRODUCT``), is a small part of a
product this long."""


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


OUTSIDE_DTYPES = ("float32", "float64")
"""The dtypes whose products outside loops run the kernel. float64 too: numpy's OpenBLAS is
about as fast on a quiet machine (2 vCPUs of a Zen 4 EPYC, min of 5 runs, numpy against the
kernel: (64, 128) x (128, 256) 58 against 48 us, (1024, 64) x (64, 128) 183 against 159-192 us,
(2048, 128) x (128, 512) 2.78 against 2.63-2.79 ms; (512, 32) x (32, 64), 1M multiply-adds, 26
against 42 us, the kernel on one thread), but beside busy cores it hands a product of these
sizes to its threads and waits for one a busy core holds: Paddle's ``rnn_numpy`` RNN layer
(float64, B=16, T=32, I=32, H=64: its input projection is that 1M product) took 7.5 ms a call
instead of 0.24 with both cores busy, and 0.245-0.248 ms with the kernel. A float64
multiply-add counts twice toward ``POOL_MIN_PRODUCT``."""


def matmul_for(m: int, n: int, k: int, dtype: str) -> Any:
    """The product function for a matmul outside loops of these static sizes, or None when
    numpy's ``@`` should compute it (small ones, other dtypes than ``OUTSIDE_DTYPES``).

    The largest ones too: their site gives them to numpy with the function's workspace array
    to write (``NUMPY_MIN_PRODUCT``); compiled as numpy's own ``@`` instead, an LSTM layer at
    T=100, B=64, I=H=512 got slower (alternated in one process: forward 228 -> 254 ms, forward
    + backward 549 -> 639 ms), each product written to fresh memory."""
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
            or a.dtype != b.dtype or a.dtype.char not in "fd" or not a.dtype.isnative
            or a.shape[1] != b.shape[0]
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
    k in blocks of ``KC``) when ``use`` takes its sizes and B is row-major; numpy's otherwise."""
    if not _takes(a, b, out) or b.strides[1] != b.itemsize or not enabled():
        return _numpy(a, b, out)
    (m, k), n, item = a.shape, b.shape[1], a.itemsize
    if not use(m, n, k, item):
        return _numpy(a, b, out)
    counter = np.zeros(1, np.int64)
    kernel(item == 8)(m, n, k, data_address(a), a.strides[0] // item, a.strides[1] // item,
                      data_address(b), b.strides[0] // item, 1, data_address(out), n,
                      min(k, KC), None, data_address(counter), n)
    return out


def matmul(a: Any, b: Any, out: Any = None) -> Any:
    """``a @ b`` (into ``out`` when given) for two float matrices of one dtype, through the
    kernel on ``threads()`` threads (this one and numpy's OpenBLAS threads, ``blas.share``, or
    the native pool's helpers, ``fuser.cpu.pool``) that take the columns of the result task
    by task (a thread that starts late takes fewer); numpy's for anything else."""
    return _run((a, b), out, False)


def matmul_sum(*operands: Any, out: Any = None) -> Any:
    """``a1 @ b1 + a2 @ b2 + ...`` (into ``out`` when given) for float matrices of one dtype
    and one result shape: one job on ``threads()`` threads whose tasks each compute their
    columns of every product in turn, the first written, the others added (no product is
    stored on its own, no separate sum); numpy's for anything else."""
    return _run(operands, out, True)


class Site:
    """The product function of one call site in generated code (``matmul`` or ``matmul_sum``):
    a call whose operands have the layout of the site's last call fills in the job's addresses
    natively (``fuser.cpu.sites``); any other call takes ``_run``, which makes this layout the
    site's last."""

    __slots__ = ("summed", "last", "seen")

    def __init__(self, summed: bool):
        self.summed = summed
        self.last: tuple | None = None
        """(plan, the address of its ``sites.guard``, ``sites.bind()``) of the last call."""
        self.seen: _Plan | None = None
        """the plan of the last call that took ``_run``: its layout becomes ``last`` when the
        next call repeats it (a function called once compiles no ``bind``)."""

    def __call__(self, *operands: Any, out: Any = None) -> Any:
        last = self.last
        if last is not None:
            plan, guard, bind = last
            given = out is not None
            result = out if given else _empty(plan.shape, plan.dtype)
            block, per_pack = plan.block(threads() if plan.large else 1)
            block = block.copy()
            at = data_address(block)
            if not bind(operands, result, guard, at, given):
                return run_job(plan, block, at, per_pack, result)
        return _run(operands, out, self.summed, self)


_empty = np.empty


def _run(operands: tuple, out: Any, summed: bool, site: Site | None = None) -> Any:
    """One product job (a sum of products: ``summed``) over ``operands`` (A1, B1, A2, ...) into
    ``out``, from the job's plan for their shapes, strides and dtypes (``_Plan``): a call
    fills in the addresses and runs it. ``site``: the calling site, whose last layout this
    becomes."""
    key: list[Any] = [summed, out is None]
    for x in operands:
        if type(x) is not np.ndarray:
            return _numpy_call(operands, out, summed)
        key.append((x.shape, x.strides, x.dtype))
    if not summed and operands[0].ndim == 2 == operands[1].ndim and (
            operands[0].size * operands[1].shape[-1] >= NUMPY_MIN_PRODUCT):
        return _numpy(operands[0], operands[1], out)
    plan = _plans.get(tkey := tuple(key))
    if plan is None:
        plan = _Plan.of(operands, out, summed)
        if len(_plans) < MAX_PLANS:
            _plans[tkey] = plan
    if not plan.ok:
        return _numpy_call(operands, out, summed)
    if site is not None and site.seen is not plan:
        site.seen = plan
    elif site is not None and layouts_supported():
        if plan.guard is None:
            plan.guard = sites.guard(operands, plan.at, plan.out_at, plan.shape, plan.spans)
        site.last = (plan, plan.guard.ctypes.data, sites.bind())
    addresses = [data_address(x) for x in operands]
    if out is None:
        out = np.empty(plan.shape, plan.dtype)
        to = data_address(out)
    elif (type(out) is not np.ndarray or out.shape != plan.shape or out.dtype != plan.dtype
          or not out.flags.c_contiguous or not out.flags.writeable):
        return _numpy_call(operands, out, summed)
    else:  # overlap as np.may_share_memory tells it (bounds only), from the plan's spans
        to = data_address(out)
        end = to + plan.out_bytes
        for address, (low, high) in zip(addresses, plan.spans):
            if address + low < end and to < address + high:
                return _numpy_call(operands, out, summed)
    count = threads() if plan.large else 1
    block, per_pack = plan.block(count)
    block = block.copy()
    for at, address in zip(plan.at, addresses):
        block[at] = address
    block[plan.out_at] = to
    return run_job(plan, block, data_address(block), per_pack, out)


def plan_for(operands: tuple) -> _Plan | None:
    """The plan of a sum of products of ``operands`` (A1, B1, A2, ...; arrays) into a fresh
    array, or None where the kernel does not take them."""
    key = tuple([True, True, *[(x.shape, x.strides, x.dtype) for x in operands]])
    plan = _plans.get(key)
    if plan is None:
        plan = _Plan.of(operands, None, True)
        if len(_plans) < MAX_PLANS:
            _plans[key] = plan
    return plan if plan.ok else None


def run_job(plan: _Plan, block: np.ndarray, at: int, per_pack: int, out: np.ndarray,
            kind: Any = None) -> np.ndarray:
    """Run ``plan``'s job of ``block`` (at address ``at``, every address filled in but the
    pack's) into ``out``; ``kind``: the job's kind for ``blas.share`` (the plan's own by
    default)."""
    if per_pack:
        pack = _empty(per_pack, plan.dtype)
        block[plan.pack_at] = data_address(pack)
    count = int(block[plan.count_at])
    if count == 1 or not (blas.share(plan.job, at, count, (plan, count) if kind is None
                                     else (kind, count)) or pool.run(plan.job, at)):
        plan.fn(at)
    return out


def _span(x: np.ndarray) -> tuple[int, int]:
    """The bytes an array's items occupy, from its first item's address: (low, high)."""
    low = sum(st * (d - 1) for d, st in zip(x.shape, x.strides) if st < 0)
    high = sum(st * (d - 1) for d, st in zip(x.shape, x.strides) if st > 0) + x.itemsize
    return low, high


MAX_PLANS = 512
"""Plans kept (``_plans``): beyond this many distinct layouts, new ones are made per call."""

_plans: dict[tuple, _Plan] = {}


class _Plan:
    """A product job for one set of operand shapes, strides and dtypes: whether the kernel
    takes it (``ok``), and per thread count the job's int64 block with every address 0
    (``block``), the slots the addresses go in."""

    ok: bool
    shape: tuple[int, int]
    dtype: Any
    large: bool
    """whether the job shares its tasks (``POOL_MIN_PRODUCT`` multiply-adds or more)."""

    @staticmethod
    def of(operands: tuple, out: Any, summed: bool) -> _Plan:
        plan = _Plan()
        plan.ok = False
        plan.guard = None
        """``fuser.cpu.sites.guard`` of this layout, made by the first call from a site."""
        pairs = list(zip(operands[::2], operands[1::2]))
        if len(operands) % 2 or not pairs or (not summed and len(pairs) != 1):
            return plan
        a0, b0 = pairs[0]
        if a0.ndim != 2 or b0.ndim != 2:
            return plan
        plan.shape = (a0.shape[0], b0.shape[1])
        for a, b in pairs:
            if not _takes(a, b, None) or a.shape[0] != plan.shape[0] or (
                    b.shape[1] != plan.shape[1] or a.dtype != a0.dtype):
                return plan
        plan.ok, plan.dtype, plan.pairs = True, a0.dtype, [
            (a.shape, a.strides, b.shape, b.strides) for a, b in pairs]
        plan.spans = [_span(x) for x in operands]
        """per operand, the bytes its items occupy (``_span``)."""
        plan.out_bytes = plan.shape[0] * plan.shape[1] * a0.itemsize
        plan.summed, plan.item = summed, a0.itemsize
        m, n = plan.shape
        plan.large = (m * n * sum(a.shape[1] for a, _ in pairs) * pairs[0][0].itemsize // 4
                      >= POOL_MIN_PRODUCT)  # (a float64 multiply-add takes two float32's time)
        plan.job, plan.fn = _job(summed, plan.item == 8)
        plan.blocks = {}
        if summed:
            plan.out_at, plan.pack_at, plan.count_at = 3, 6, 9
            plan.at = [SUM_SLOTS + PAIR_SLOTS * (k // 2) + (1 if k % 2 == 0 else 4)
                       for k in range(len(operands))]
        else:
            plan.out_at, plan.pack_at, plan.count_at, plan.at = 9, 12, 15, [3, 6]
        return plan

    def block(self, count: int) -> tuple[np.ndarray, int]:
        """The job's block for ``count`` threads (addresses 0) and the items of its pack."""
        found = self.blocks.get(count)
        if found is not None:
            return found
        asked = count  # (the count a narrow product uses may be fewer)
        (m, n), item = self.shape, self.item
        width = 2 * lanes(item)
        # columns per task: a few tasks per thread, a whole number of two-vector panels
        per_task = -(-n // (4 * count)) if count > 1 else n
        task_cols = min(n, max(width, -(-per_task // width) * width, 64 if count > 1 else n))
        count = min(count, -(-n // task_cols))
        kc = min(max(a_shape[1] for a_shape, _, _, _ in self.pairs), KC)
        strided = any(b_strides[1] != item for _, _, _, b_strides in self.pairs)
        packed = strided or any(packs(m, b_strides[0], a_shape[1])
                                for a_shape, _, _, b_strides in self.pairs)
        per_pack = kc * width if packed else 0
        if self.summed:
            args = [len(self.pairs), m, n, 0, n, kc, 0, per_pack * item, task_cols, count, 0, 0]
            args += [0] * (PARTS - len(args)) + [1, n]  # no epilogue; one part
            for a_shape, a_strides, _, b_strides in self.pairs:
                args += [a_shape[1], 0, *(st // item for st in a_strides),
                         0, *(st // item for st in b_strides)]
        else:
            ((a_shape, a_strides, _, b_strides),) = self.pairs
            args = [m, n, a_shape[1], 0, *(st // item for st in a_strides),
                    0, *(st // item for st in b_strides), 0, n,
                    kc, 0, per_pack * item, task_cols, count, 0, 0]
        found = self.blocks[asked] = (np.array(args, np.int64), per_pack * count)
        return found


def _numpy_call(operands: tuple, out: Any, summed: bool) -> Any:
    if not summed:
        return _numpy(operands[0], operands[1], out)
    return _numpy_sum(list(zip(operands[::2], operands[1::2])), out)


def _numpy_sum(pairs: list[tuple[Any, Any]], out: Any) -> Any:
    total = pairs[0][0] @ pairs[0][1]
    for a, b in pairs[1:]:
        total = total + a @ b
    if out is None:
        return total
    out[...] = total
    return out


def _job(summed: bool, double: bool) -> tuple[int, Any]:
    """The address of the product job (of a sum of products: ``summed``) and its ctypes
    function."""
    found = _jobs.get((summed, double))
    if found is None:
        job = sum_job_address(double) if summed else job_address(double)
        found = _jobs[(summed, double)] = (job, _JOB(job))
    return found


_JOB = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_jobs: dict[tuple[bool, bool], tuple[int, Any]] = {}
"""each job's address and ctypes function."""


