"""Fusion kernels on more than one thread: a kernel whose arithmetic is large enough
(``PARALLEL_MIN_WORK``) splits its iteration space into slabs (``split``) and runs them as one
job (``runner``) on this thread and numpy's OpenBLAS threads (``fuser.cpu.blas.share``), each
thread taking slabs from the job's counter.

A cell's elementwise tail is a good part of its time once its products share two cores: the
DLFS2 LSTM cell's (64, 1024) gates to (64, 256) states took 170 us on one thread beside a
1.0 ms sum of two products.

The job is the same native function for every kernel (``job_address``): a task is the kernel's
own guarded entry called with a guard of one slab, so a parallel call checks its arguments as
the serial one does, reads every array's address in native code, and compiles nothing per
kernel. The slabs sum nothing across each other: the values are the serial call's, bit for bit.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
from llvmlite import ir

from fuser.cpu import blas, jit, pool
from ir.core import Graph

PARALLEL_MIN_WORK = 1 << 18
"""A kernel call runs on more than one thread from this much arithmetic on (points of the
iteration space times ``work_per_point``, in additions' worth): from about 15-30 us on one
thread, where handing half to a thread that is awake costs a few microseconds."""

TASKS = 8
"""The slabs a parallel call aims for: a few per thread, so a thread that starts late (its core
busy) takes fewer."""

MIN_COLS = 64
"""A flat slab (one row) splits into pieces of at least this many columns, multiples of 16."""

_HEAVY = 8
_DIVIDE = 3
_WEIGHTS = {
    **dict.fromkeys(("tensor::exp", "tensor::log", "tensor::log1p", "tensor::tanh",
                     "tensor::sigmoid", "tensor::softplus", "tensor::pow"), _HEAVY),
    **dict.fromkeys(("tensor::div", "tensor::sqrt", "tensor::rsqrt", "tensor::reciprocal"),
                    _DIVIDE),
}
_FREE = ("prim::Constant", "tensor::chunk", "tensor::split")


def work_per_point(graph: Graph) -> int:
    """The arithmetic a kernel does per point of its iteration space, counting an addition as 1,
    a division or square root as 3 and a transcendental function as 8."""
    return max(1, sum(_WEIGHTS.get(n.kind, 1) for n in graph.nodes() if n.kind not in _FREE))


def worth(points: int, work: int) -> bool:
    """Whether a call over ``points`` points of ``work`` each runs on more than one thread."""
    return points * work >= PARALLEL_MIN_WORK and pool.cpus() > 1


def pieces(n_slabs: int, rows: int, cols: int) -> int:
    """Into how many pieces each of ``n_slabs`` slabs of ``rows`` x ``cols`` splits."""
    if n_slabs >= TASKS:
        return 1
    along = rows if rows > 1 else cols // MIN_COLS
    return max(1, min(-(-TASKS // n_slabs), along))


def split(params: np.ndarray, count: int, items: list[int], order: list[int]) -> np.ndarray:
    """``params`` (one row per slab: rows, cols, then per slot byte offset, row stride and column
    stride in elements) with each slab cut into ``count`` pieces: along its rows, or for a slab of
    one row along its columns (piece boundaries multiples of 16). ``order[slot]`` indexes
    ``items``, each slot's item size in bytes."""
    out = []
    for row in params:
        rows, cols = int(row[0]), int(row[1])
        if rows > 1:
            bounds = [rows * k // count for k in range(count + 1)]
        else:
            bounds = [min(cols, -(-cols * k // count) // 16 * 16) for k in range(count)] + [cols]
        for lo, hi in zip(bounds, bounds[1:]):
            if hi <= lo:
                continue
            piece = row.copy()
            if rows > 1:
                piece[0] = hi - lo
            else:
                piece[1] = hi - lo
            for slot, i in enumerate(order):
                base = 2 + 3 * slot
                stride = row[base + 1] if rows > 1 else row[base + 2]
                piece[base] += lo * int(stride) * items[i]
            out.append(piece)
    return np.array(out, np.int64).reshape(len(out), params.shape[1])


def threads() -> int:
    """How many threads a product outside a loop (``fuser.cpu.products``, which calls it
    ``products.threads``) or a parallel kernel call uses: BLAS's thread count (``--threads``,
    threadpoolctl and ``OPENBLAS_NUM_THREADS`` set it), at most the CPUs this process may run
    on."""
    count, cpus = blas.get_threads(), pool.cpus()
    return count if count and 0 < count <= cpus else cpus


def runner(guarded: Any, header: list[int], params: np.ndarray
           ) -> Callable[[tuple, tuple, int], int]:
    """The guarded call of a parallel plan, in place of the kernel's guarded entry ``guarded``:
    ``run(args, outs, guard)`` checks the arguments against a guard of the plan's ``header``
    with no slab (returning 1, nothing written, on a mismatch), then runs the job of
    ``job_address``: each task is one slab (a row of ``params``), ``guarded`` called with a guard
    of that slab alone. It runs on ``threads()`` threads, OpenBLAS's (``blas.share``) when they
    are still awake after a product (``blas.awake``: waking sleeping ones costs 0.1-0.3 ms, and
    threads of our own would fight numpy's spinning ones for the cores), else the slabs run
    here, ``guarded`` with the plan's own ``guard``. A piece whose guard rejects its arguments
    (another Python thread changed one in the moment the call released the GIL) makes the call
    return 1, as a serial call that finds them changed does: the general path computes it."""
    check = np.array([*header, 0], np.int64)
    guards = [np.array([*header, 1, *row], np.int64) for row in params]
    table = np.array([g.ctypes.data for g in guards], np.int64)
    at_check = check.ctypes.data
    template = np.array([0, len(guards), ctypes.cast(guarded, ctypes.c_void_p).value, 0, 0,
                         table.ctypes.data, 0], np.int64)
    from fuser.cpu.kernel import data_address  # (that module imports this one)
    kind = ("kernel", next(_kinds))  # this plan's runs, for blas.share's lag tracking

    def run(args: tuple, outs: tuple, guard: int) -> int:
        count = threads()
        if count < 2 or not blas.awake():
            return guarded(args, outs, guard)
        if guarded(args, outs, at_check):
            return 1
        block = template.copy()
        block[3], block[4] = id(args), id(outs)
        at = data_address(block)
        job, run_job = job_address()  # compiled at the first parallel call, not at a first call
        if not blas.share(job, at, count, kind):
            run_job(at)
        return 1 if block[6] else 0

    run.guards = (check, guards, table)  # type: ignore[attr-defined]  # alive while it is
    return run


_kinds = itertools.count()

_WORDS = 7
"""A job block: the task counter, the task count, the guarded entry's address, the argument
tuple's and the output tuple's, the address of the table of the tasks' guards, and whether a
task's guard rejected the arguments (nonzero)."""

_job: list[tuple[int, Any]] = []


def job_address() -> tuple[int, Any]:
    """The job that runs a parallel kernel call's tasks (one per process, for every kernel) and
    its ctypes function: it takes task k from the block's counter until none is left and calls
    ``entry(args, outs, guards[k])``, or-ing what it returns into the block's last word."""
    if not _job:
        address = jit.compile_ir(_job_ir(), ["rnnscript_kernel_job"])[0]
        _job.append((address, ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)))
    return _job[0]


def _job_ir() -> str:
    i32, i64, ptr = ir.IntType(32), ir.IntType(64), ir.PointerType()
    module = ir.Module(name="rnnscript_kernel_job")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr]), "rnnscript_kernel_job")
    (block,) = fn.args
    entry, loop, work, done = (fn.append_basic_block(n) for n in ("entry", "loop", "work", "done"))
    b = ir.IRBuilder(entry)

    def word(k: int) -> Any:
        return b.load(b.gep(block, [ir.Constant(i64, k)], source_etype=i64), typ=i64)

    n_tasks = word(1)
    guarded = b.inttoptr(word(2), ir.FunctionType(i32, [ptr, ptr, ptr]).as_pointer())
    args, outs, table = (b.inttoptr(word(k), ptr) for k in (3, 4, 5))
    b.branch(loop)
    b.position_at_end(loop)
    k = b.atomic_rmw("add", block, ir.Constant(i64, 1), "monotonic")
    b.cbranch(b.icmp_signed("<", k, n_tasks), work, done)
    b.position_at_end(work)
    guard = b.load(b.gep(table, [k], source_etype=i64), typ=ptr)
    rejected = b.call(guarded, [args, outs, guard])
    b.atomic_rmw("or", b.gep(block, [ir.Constant(i64, 6)], source_etype=i64),
                 b.zext(rejected, i64), "monotonic")
    b.branch(loop)
    b.position_at_end(done)
    b.ret_void()
    return str(module)
