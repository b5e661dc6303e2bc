"""Running a loop over several batch row ranges at once (``RNNSCRIPT_LOOP_THREADS``)."""

from __future__ import annotations

import ctypes
import os
import time
from typing import TYPE_CHECKING, Any

import numpy as np
from llvmlite import ir

from fuser.cpu import blas, pool, products
from fuser.cpu.jit import compile_ir
from fuser.cpu.kernel import data_address
from fuser.cpu.loop import coop
from fuser.cpu.loop.body import (
    CONSTRUCTORS,
    LAYER_NORMS,
    REDUCTIONS,
    WRITES,
    known_array,
    write_parts,
)
from fuser.cpu.loop.layouts import Layout, Unplannable

if TYPE_CHECKING:
    from fuser.cpu.loop.runtime import Variant

MIN_ROWS = 4
"""the fewest batch rows one row range gets."""

SPLIT_MIN_PRODUCT = 1 << 20
"""Loops whose products take fewer multiply-adds than this per step run as one loop unless
``RNNSCRIPT_LOOP_THREADS`` says otherwise. With the ranges on numpy's OpenBLAS threads
(``run_ranges``) two ranges beat one loop from about 66K multiply-adds a step when those threads
are awake (after a product of numpy's or ours, as in training) but lose up to 0.35x below 1M when
they have slept (0.25 s idle before each call: waking one costs 0.1-0.3 ms on a virtual
machine). Measured on 2 cores of a Zen 4 EPYC, float32 LSTM layers, medians, one loop against
two ranges, awake / asleep: B=8, H=64, T=100 (262K a step): 1.00 against 0.70 ms / 1.27 against
1.30 ms; B=32, H=64, T=50 (1.05M): 1.47 against 1.30 / 2.29 against 2.12 ms; B=50, H=128, T=20
(6.6M): 2.73 against 2.06 / 3.93 against 2.76 ms. The cs231n RNN layer's loop (B=50, 1.2M a
step, float64) went from 1.13x to 1.87x plain numpy's speed."""

AWAKE_MIN_PRODUCT = 1 << 16
"""Loops whose products take from this many multiply-adds a step (up to ``SPLIT_MIN_PRODUCT``)
run as row ranges when numpy's OpenBLAS threads are known to be awake (``blas.awake``: a
product of ours shared with them has just ended, as the input projection before a layer's
loop, or the previous loop of a training step). Measured on 2 cores of a Zen 4 EPYC, float32
fastrnns LSTM layers, medians of 150 calls of each in shuffled order, one loop against two
ranges, inference / training forward / forward and backward, ms: B=8, H=64, T=100 (262K a
step) 0.71 / 0.94 / 2.03 against 0.63 / 0.91 / 1.87; B=32, H=32, T=100 (131K) 0.87 / 1.12 /
2.51 against 0.78 / 1.09 / 2.32; B=8, H=96, T=50 (295K) 0.67 / 0.78 / 1.72 against 0.59 /
0.73 / 1.57; B=16, H=64, T=50 (524K) 0.59 / 0.70 / 1.54 against 0.48 / 0.61 / 1.33. Beside
a spinning process (B=8, H=64) the two were equal: 0.86 / 1.00 / 2.40 against 0.86 / 1.00 /
2.43 (lagging jobs back off, ``blas.share``).

A loop run again less than ``blas.AWAKE_S`` after its last run ended (a loop inside a Python
loop: ML-From-Scratch's truncated BPTT runs its inner loop once per outer step) runs so too:
the first of a burst wakes the threads, the next find them awake. On 2 vCPUs of a Sapphire
Rapids Xeon, float64, that BPTT (10 inner loops of up to 6 steps of 415K multiply-adds) took
5.4-5.6 ms a call with each inner loop on one thread, 4.7 with two ranges (numpy: 5.6-5.9)."""

THREADED_MIN_PRODUCT = 1 << 21
"""The multiply-adds from which a step's product in a loop that does not run as row ranges
goes to BLAS on its threads (``RowRanges._threaded``). Karpathy's batched LSTM (float64,
T=20, B=64, H=256, input 128: a (64, 385) x (385, 1024) product a step, its buffers time-major)
ran its forward in 38.6 ms with the products on one thread, 26.0 with BLAS's two (numpy: 37.4),
on 2 vCPUs of a Zen 3 EPYC."""

RANGE_ROWS = 16
"""Beyond two ranges, each range gets at least this many rows by default: a range of a few
rows streams the whole recurrent weight from memory every step for little work."""


def range_count(step_product: int = 0, batch: int = 0, again: bool = False) -> int:
    """How many row ranges a loop runs at once: ``RNNSCRIPT_LOOP_THREADS`` when set (1: one
    loop over every row, its GEMMs threaded by BLAS as numpy's are); otherwise, for a loop
    whose products take at least ``SPLIT_MIN_PRODUCT`` multiply-adds a step
    (``step_product``), or ``AWAKE_MIN_PRODUCT`` while OpenBLAS's threads are awake or the
    loop runs ``again`` (its last run ended ``blas.AWAKE_S`` ago or less) and shared jobs are
    not backing off after a lag (``blas.awake``), one range per thread a product gets (BLAS's
    thread count, at most the CPUs this process may run on: ``--threads``, threadpoolctl and
    ``OPENBLAS_NUM_THREADS`` set it), ranges beyond two getting ``RANGE_ROWS`` rows or more;
    else 1.

    Several ranges run on numpy's OpenBLAS threads (``run_ranges``), with BLAS on one thread
    in each; a range no thread has started when the caller runs out is the caller's."""
    env = os.environ.get("RNNSCRIPT_LOOP_THREADS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            return 1
    if step_product < SPLIT_MIN_PRODUCT and not (step_product >= AWAKE_MIN_PRODUCT
                                                 and blas.awake(again)):
        return 1
    return min(products.threads(), max(2, batch // RANGE_ROWS))


LAYER_NORM_WORK = 12
"""A layer norm's (or its gradient's) work per item, in additions' worth (``_step_product``):
two passes for the mean and variance, a square root and a division per row, the scale."""

JOB_SLOTS = 7
"""The int64 slots of a ranges job before its per-range ones: the loop function, the tuple of
arrays, the trip count, the doubles, the function table, the number of ranges, ranges taken
(the job's counter); then each range's ints and each range's status."""


def _job_ir() -> str:
    """``rnnscript_ranges_job(slots)``: take the next range from the counter and run the loop
    over it (``status = loop(items, trip, ints, doubles, fns)``) until none is left."""
    i64, i32 = ir.IntType(64), ir.IntType(32)
    i8p = ir.IntType(8).as_pointer()
    module = ir.Module(name="ranges_job")
    loop_type = ir.FunctionType(i32, [i8p, i64, i8p, i8p, i8p])
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i8p]), JOB_SYMBOL)
    entry, take, run, done = (fn.append_basic_block(n) for n in ("entry", "take", "run", "done"))
    b = ir.IRBuilder(entry)
    slots = b.bitcast(fn.args[0], i64.as_pointer())

    def slot(k: Any) -> Any:
        return b.gep(slots, [k if isinstance(k, ir.Value) else ir.Constant(i64, k)])

    b.branch(take)
    b.position_at_end(take)
    k = b.atomic_rmw("add", slot(6), ir.Constant(i64, 1), "seq_cst")
    count = b.load(slot(5))
    b.cbranch(b.icmp_signed("<", k, count), run, done)
    b.position_at_end(run)
    loop = b.inttoptr(b.load(slot(0)), loop_type.as_pointer())
    ints = b.load(slot(b.add(k, ir.Constant(i64, JOB_SLOTS))))
    status = b.call(loop, [b.inttoptr(b.load(slot(1)), i8p), b.load(slot(2)),
                           b.inttoptr(ints, i8p), b.inttoptr(b.load(slot(3)), i8p),
                           b.inttoptr(b.load(slot(4)), i8p)])
    at = b.add(b.add(k, count), ir.Constant(i64, JOB_SLOTS))
    b.store(b.sext(status, i64), slot(at))
    b.branch(take)
    b.position_at_end(done)
    b.ret_void()
    return str(module)


JOB_SYMBOL = "rnnscript_ranges_job"
_job: list[int] = []


def _job_address() -> int:
    if not _job:
        (address,) = compile_ir(_job_ir(), [JOB_SYMBOL])
        _job.append(address)
    return _job[0]


def can_share() -> bool:
    """Whether row ranges can run on several threads here: numpy's OpenBLAS threads
    (``blas.share``) or the native pool's (``fuser.cpu.pool``)."""
    g = blas.gemm()
    return bool(g is not None and g.pthread) or pool.available()


def run_ranges(fn: Any, items: tuple, trip: int, ranges: list[np.ndarray],
               doubles: np.ndarray, fns: np.ndarray, together: list[np.ndarray] | None = None,
               barrier: int = 0, ran: list[bool] | None = None) -> int:
    """Run the loop over each row range, on this thread and others at once (numpy's OpenBLAS
    threads, else the native pool's, each taking the next range not yet taken: a thread that
    starts late takes none; every GEMM in a range on its own thread); 0 when every range ran to
    the end. ``together``: the same ranges computing their large products together (``coop``,
    the barrier at address ``barrier``), run where each range gets a thread of its own at once
    (OpenBLAS's threads, not backing off after a lag), else ``ranges`` run; ``ran`` gets
    whether they did."""
    if together is not None and blas.can_share(len(together)) and \
            len(together) <= products.threads():
        ctypes.memset(barrier, 0, coop.BARRIER_SLOTS * 8)
        status = _run(fn, items, trip, together, doubles, fns, shared=True)
        if status is not None:
            if ran is not None:
                ran.append(True)
            return status
    return _run(fn, items, trip, ranges, doubles, fns)  # type: ignore[return-value]


def _run(fn: Any, items: tuple, trip: int, ranges: list[np.ndarray], doubles: np.ndarray,
         fns: np.ndarray, shared: bool = False) -> int | None:
    """``run_ranges``; with ``shared``, only on OpenBLAS's threads (None: they did not take it)."""
    n = len(ranges)
    slots = np.zeros(JOB_SLOTS + 2 * n, np.int64)
    slots[:JOB_SLOTS] = (ctypes.cast(fn, ctypes.c_void_p).value, id(items), trip,
                         data_address(doubles), data_address(fns), n, 0)
    slots[JOB_SLOTS:JOB_SLOTS + n] = [data_address(r) for r in ranges]
    slots[JOB_SLOTS + n:] = 1
    job, at = _job_address(), data_address(slots)
    threads = min(n, products.threads())
    with blas.single_threaded():  # each range's GEMMs on its own thread
        if shared:
            if not blas.share(job, at, threads, (int(slots[0]), trip, n, True)):
                return None
        elif not (blas.share(job, at, threads, (int(slots[0]), trip, n)) or pool.run(job, at)):
            _JOB(job)(at)
    return int(slots[JOB_SLOTS + n:].max())


_JOB = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class RowRanges:
    """``NativeLoop``'s row ranges: the ints of each range of batch rows a loop runs over at
    once (``RNNSCRIPT_LOOP_THREADS``), per variant."""

    prog: Any
    gemm: Any
    lock: Any
    ended: float = -1.0
    """when the loop's last run ended (``time.perf_counter``; ``range_count``'s ``again``)."""

    def _threaded(self, product: int, item: int) -> bool:
        """Whether a step's float64 product of ``product`` multiply-adds goes to BLAS on its
        threads: a large one (``THREADED_MIN_PRODUCT``) in a loop that never runs as row ranges
        (its steps are not independent across batch rows: time-major ``(T, B, ...)`` buffers
        written per step, ``rows.row_split``), where ``stepgemm``'s kernel would compute it on
        one thread while the others wait. Not float32 products: the fastrnns layers' reverse
        loops, measured with the kernel on one thread, keep it until measured otherwise."""
        return (item == 8 and product >= THREADED_MIN_PRODUCT and self.prog.batch is None
                and products.threads() > 1)

    def _ranges(self, variant: Variant) -> list[np.ndarray] | None:
        """The ints of each row range to run at once (None: one loop over every row)."""
        batch = self.prog.batch
        if batch is None or not self.gemm.set_threads or not can_share():
            return None
        if variant.step_product is None:
            variant.step_product = self._step_product(variant)
        again = time.perf_counter() - self.ended <= blas.AWAKE_S
        threads = min(range_count(variant.step_product, batch, again), batch // MIN_ROWS)
        if threads < 2:
            return None
        found = variant.splits.get(threads, False)
        if found is False:
            with self.lock:
                found = variant.splits.get(threads, False)
                if found is False:
                    try:
                        found = self._split(variant, threads)
                    except Unplannable:
                        found = None
                    variant.splits[threads] = found
        return found

    def _step_product(self, variant: Variant) -> int:
        """The arithmetic of one step (at these layouts): its products' multiply-adds, and its
        elementwise groups', reductions' and layer norms' work in additions' worth
        (``parallel.work_per_point``: a transcendental function counts 8), which a loop
        without products (an attention's softmax over its keys) has too."""
        total = 0
        prog = self.prog
        (body,) = prog.node.blocks

        def points(v: Any) -> int:
            t = known_array(v)
            return int(np.prod(t.shape, dtype=np.int64)) if t is not None else 0

        for n in body:
            if n.kind == "tensor::matmul":
                a, w = (variant.layouts[v][0] for v in n.inputs)
                total += int(np.prod(a, dtype=np.int64)) * int(w[-1])
            elif n in prog.kernels:
                total += points(n.outputs[0]) * prog.kernels[n].work
            elif n.kind in REDUCTIONS and n.output not in prog.same:
                total += points(n.inputs[0]) * (2 if n in prog.products else 1)
            elif n.kind in LAYER_NORMS:
                total += points(n.outputs[0]) * LAYER_NORM_WORK
        return total

    def _split(self, variant: Variant, parts: int) -> list[np.ndarray]:
        prog = self.prog
        batch = prog.batch
        assert batch is not None
        bounds = [batch * k // parts for k in range(parts + 1)]
        out = []
        zeros = {p: np.zeros(variant.layouts[p][0], np.dtype(p.type.dtype))  # type: ignore
                 for p in prog.partials}
        variant.keep.extend(zeros.values())
        shared = []
        for k, (r0, r1) in enumerate(zip(bounds, bounds[1:])):
            values = self._range_values(variant, r0, r1 - r0)
            shared.append(coop.range_values(prog, variant, parts, k))
            for v in prog.private:  # this range's own sums, in a buffer of one per range
                shape, _, item = variant.layouts[v]
                values[("private", v)] = k * int(np.prod(shape, dtype=np.int64)) * item
            for p, zero in zeros.items():  # starting at zero but the first range's
                values[("private init", p)] = zero.ctypes.data if k else 0
            ints = variant.ints.copy()
            for at, key in enumerate(variant.keys):
                if key in values:
                    ints[at] = values[key]
            out.append(ints)
        if all(shared):  # the same ranges sharing their products (``coop``)
            together = []
            for ints, values in zip(out, shared):
                ints = ints.copy()
                for at, key in enumerate(variant.keys):
                    if key in values:
                        ints[at] = values[key]
                together.append(ints)
            variant.shared[parts] = together
        return out

    def _range_values(self, variant: Variant, r0: int, rows: int) -> dict[Any, int]:
        """The ints that differ for the row range ``r0:r0 + rows``: the plans of the groups
        over those rows, the GEMMs' and layer norms' row counts, the bytes of each slot write."""
        prog = self.prog
        layouts = variant.layouts
        values: dict[Any, int] = {("r0",): r0}

        def cut(lay: Layout) -> Layout:
            shape, strides, item = lay
            return (rows, *shape[1:]), strides, item

        (body,) = prog.node.blocks
        for n in body:
            if n in prog.partials.values():
                continue  # a range's own sums: their plan is the whole loop's
            if n in prog.kernels:
                kernel = prog.kernels[n]
                inputs = prog.kernel_inputs[n]
                by_row = prog.row_inputs.get(n, set())
                plan = kernel.make_plan([cut(layouts[inputs[i]]) if i in by_row
                                         else layouts[inputs[i]] for i, _ in kernel.array_slots],
                                        split=False)
                if (plan is None or plan.fn is None or len(plan.pointers) != 1
                        or plan.classes != variant.plans[n].classes
                        or any(tuple(s) != cut(layouts[v])[0]
                               for v, s in zip(n.outputs, plan.shapes))):
                    raise Unplannable
                variant.keep.append(plan.params)
                values[("plan", n)] = plan.pointers[0]
            elif n.kind == "tensor::matmul":  # A's rows, or the k of a range's X^T @ G
                values[("gemm", n, 2 if n.output in prog.private else 0)] = rows
            elif n.kind in CONSTRUCTORS:  # these rows' items
                shape = layouts[n.output][0]
                values[("fill count", n)] = rows * int(np.prod(shape[1:], dtype=np.int64))
            elif n.kind in REDUCTIONS and n in prog.row_inputs and n.output not in prog.same:
                values[("reduce dim", n, 0)] = rows
                if n.output not in prog.private:  # over later axes: these rows' results
                    shape = layouts[n.output][0]
                    values[("reduce count", n)] = rows * int(np.prod(shape[1:], dtype=np.int64))
            elif n.kind in LAYER_NORMS:  # the rows of (B, ..., C) its kernel runs
                shape = layouts[n.inputs[1 if n.kind == "tensor::layer_norm_backward" else 0]][0]
                values[("layer norm rows", n)] = rows * int(np.prod(shape[1:-1], dtype=np.int64))
            elif n.kind == "tensor::cat":  # along a later axis: the blocks of these rows
                shape = layouts[n.output][0]
                ax = int(n.inputs[1].constant)
                ax = ax + len(shape) if ax < 0 else ax
                values[("cat outer", n)] = rows * int(np.prod(shape[1:ax], dtype=np.int64))
            elif n.kind in WRITES:
                buf = n.inputs[0]
                shape, _, item = layouts[buf]
                ax = int(write_parts(n)[1].constant)
                if ax == 0:  # (T, B, ...): the slot's rows are one block
                    per_row = int(np.prod(shape[ax + 2:], dtype=np.int64)) * item
                    values[("bytes", n)] = rows * per_row
                else:  # (B, T, ...): one block per row
                    values[("outer", n)] = rows
        return values


