"""Running a loop over several batch row ranges at once (``RNNSCRIPT_LOOP_THREADS``)."""

from __future__ import annotations

import itertools
import os
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from fuser.cpu import blas, products
from fuser.cpu.kernel import data_address
from fuser.cpu.loop.body import WRITES, write_parts
from fuser.cpu.loop.layouts import Layout, Unplannable

if TYPE_CHECKING:
    from fuser.cpu.loop.runtime import Variant

MIN_ROWS = 4
"""the fewest batch rows one row range gets."""

SPLIT_MIN_PRODUCT = 1 << 22
"""Loops whose products take fewer multiply-adds than this per step run as one loop unless
``RNNSCRIPT_LOOP_THREADS`` says otherwise: with less work per step than this, two row ranges
were no faster than one loop (measured side by side against one loop on 2 cores, float32, LSTM
layers of T=100: B=32, H=128, 2.1M a step: 6.8 ms either way; B=8, H=64: 1.47 ms against 1.42;
from B=16, H=256, 4.2M a step, two ranges won: 7.9 ms against 10.7; the seed layer, B=64,
H=512, 67M a step: 87 ms against 138)."""

RANGE_ROWS = 16
"""Beyond two ranges, each range gets at least this many rows by default: a range of a few
rows streams the whole recurrent weight from memory every step for little work."""


def range_count(step_product: int = 0, batch: int = 0) -> int:
    """How many row ranges a loop runs at once: ``RNNSCRIPT_LOOP_THREADS`` when set (1: one
    loop over every row, its GEMMs threaded by BLAS as numpy's are); otherwise, for a loop
    whose products take at least ``SPLIT_MIN_PRODUCT`` multiply-adds a step
    (``step_product``), one range per thread a product gets (BLAS's thread count, at most the
    CPUs this process may run on: ``--threads``, threadpoolctl and ``OPENBLAS_NUM_THREADS``
    set it), ranges beyond two getting ``RANGE_ROWS`` rows or more; else 1.

    Several ranges run on a pool of helper threads with BLAS on one thread each; a range no
    helper has started when the caller runs out is the caller's, so a busy core never stalls
    the call for longer than one range."""
    env = os.environ.get("RNNSCRIPT_LOOP_THREADS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            return 1
    if step_product < SPLIT_MIN_PRODUCT:
        return 1
    return min(products.threads(), max(2, batch // RANGE_ROWS))


_pool_lock = threading.Lock()
_pool: list[Any] = []


def _helpers(n: int) -> Any:
    """The process's pool of helper threads (at least ``n``)."""
    from concurrent.futures import ThreadPoolExecutor
    with _pool_lock:
        if not _pool or _pool[0]._max_workers < n:
            if _pool:
                _pool[0].shutdown(wait=False)
                _pool.clear()
            _pool.append(ThreadPoolExecutor(n, thread_name_prefix="rnnscript-loop"))
        return _pool[0]


class _Ranges:
    """One call's row ranges, taken in turn by the calling thread and the helpers: a range no
    thread has started when the caller runs out is the caller's, so a helper whose core is
    busy never makes the call wait for it (only a range it has started does)."""

    def __init__(self, fn: Any, items: tuple, trip: int, ranges: list[np.ndarray],
                 doubles: np.ndarray, fns: np.ndarray):
        self.args = (items, trip, data_address(doubles), data_address(fns))
        self.fn = fn
        self.ranges = ranges
        self.next = itertools.count()
        self.status = [1] * len(ranges)
        self.done = 0
        self.cond = threading.Condition()

    def work(self) -> None:
        items, trip, doubles, fns = self.args
        while True:
            k = next(self.next)
            if k >= len(self.ranges):
                return
            try:
                self.status[k] = self.fn(items, trip, data_address(self.ranges[k]), doubles, fns)
            finally:
                with self.cond:
                    self.done += 1
                    if self.done == len(self.ranges):
                        self.cond.notify_all()


def run_ranges(fn: Any, items: tuple, trip: int, ranges: list[np.ndarray],
                doubles: np.ndarray, fns: np.ndarray) -> int:
    """Run the loop over each row range, on this thread and the helpers at once; 0 when every
    range ran to the end."""
    run = _Ranges(fn, items, trip, ranges, doubles, fns)
    pool = _helpers(len(ranges) - 1)
    with blas.single_threaded():  # each range's GEMMs on its own thread
        for _ in range(len(ranges) - 1):
            pool.submit(run.work)
        run.work()
        with run.cond:
            run.cond.wait_for(lambda: run.done == len(ranges))
    return max(run.status)


class RowRanges:
    """``NativeLoop``'s row ranges: the ints of each range of batch rows a loop runs over at
    once (``RNNSCRIPT_LOOP_THREADS``), per variant."""

    prog: Any
    gemm: Any
    lock: Any

    def _ranges(self, variant: Variant) -> list[np.ndarray] | None:
        """The ints of each row range to run at once (None: one loop over every row)."""
        batch = self.prog.batch
        if batch is None or not self.gemm.set_threads:
            return None
        if variant.step_product is None:
            variant.step_product = self._step_product(variant)
        threads = min(range_count(variant.step_product, batch), batch // MIN_ROWS)
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
        """The multiply-adds of one step's products (at these layouts)."""
        total = 0
        (body,) = self.prog.node.blocks
        for n in body:
            if n.kind == "tensor::matmul":
                a, w = (variant.layouts[v][0] for v in n.inputs)
                total += int(np.prod(a, dtype=np.int64)) * int(w[-1])
        return total

    def _split(self, variant: Variant, parts: int) -> list[np.ndarray]:
        prog = self.prog
        batch = prog.batch
        assert batch is not None
        bounds = [batch * k // parts for k in range(parts + 1)]
        out = []
        for r0, r1 in zip(bounds, bounds[1:]):
            values = self._range_values(variant, r0, r1 - r0)
            ints = variant.ints.copy()
            for at, key in enumerate(variant.keys):
                if key in values:
                    ints[at] = values[key]
            out.append(ints)
        return out

    def _range_values(self, variant: Variant, r0: int, rows: int) -> dict[Any, int]:
        """The ints that differ for the row range ``r0:r0 + rows``: the plans of the groups
        over those rows, the GEMMs' row count, the bytes of each slot write."""
        prog = self.prog
        layouts = variant.layouts
        values: dict[Any, int] = {("r0",): r0}

        def cut(lay: Layout) -> Layout:
            shape, strides, item = lay
            return (rows, *shape[1:]), strides, item

        (body,) = prog.node.blocks
        for n in body:
            if n in prog.kernels:
                kernel = prog.kernels[n]
                inputs = prog.kernel_inputs[n]
                by_row = prog.row_inputs.get(n, set())
                plan = kernel.make_plan([cut(layouts[inputs[i]]) if i in by_row
                                         else layouts[inputs[i]] for i, _ in kernel.array_slots])
                if (plan is None or plan.fn is None or len(plan.pointers) != 1
                        or plan.classes != variant.plans[n].classes
                        or any(tuple(s) != cut(layouts[v])[0]
                               for v, s in zip(n.outputs, plan.shapes))):
                    raise Unplannable
                variant.keep.append(plan.params)
                values[("plan", n)] = plan.pointers[0]
            elif n.kind == "tensor::matmul":
                values[("gemm", n, 0)] = rows
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


