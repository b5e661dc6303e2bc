"""A step's product shared by a loop's row ranges: each range computes its share of the columns
of every row, between two barriers (``RNNSCRIPT_LOOP_COOP``).

A loop over row ranges (``ranges``) runs each range on its own thread with no synchronization per
step: every range multiplies its rows by the whole recurrent weight. At T=100, B=64, H=512 the
weight (512 x 2048 float32, 4 MB) is twice a core's 2 MB L2, so each of two threads streams all
of it from L3 every step. Here a product whose weight is large (``COOP_MIN_WEIGHT_BYTES``)
is computed instead by all ranges at once, each over all rows and its own block of columns
(its half of the weight, read from its own L2 step after step):

    barrier   (every range has written its rows of A: the product reads them all)
    C[:, c0:c1] = A @ B[:, c0:c1]
    barrier   (every column of C is written: each range then reads its own rows)

One thread's (32, 512) x (512, 2048) took 625-700 us a step and its (64, 512) x (512, 1024) half
of the columns 504-564 us (two threads at once, 100 steps with a barrier each).

A barrier is a counter every range adds one to, then waits for (spinning, yielding its core
after ``SPINS_BEFORE_YIELD`` turns: a thread whose core a busy neighbour holds must get one).
A range that fails (a check that sends the loop back to Python) sets the barrier's abort flag
on its way out; the others leave at their next barrier, the whole loop returns 1 and runs as
Python. Every range must run on a thread of its own at once: ``run_ranges`` shares the job only
with as many awake OpenBLAS threads as there are ranges, else runs the ranges that do not
share; a barrier whose partner never comes aborts after ``MAX_SPINS`` turns."""

from __future__ import annotations

import ctypes
import os
import platform
from typing import Any

import numpy as np
from llvmlite import ir

from fuser.cpu import blas
from fuser.cpu.loop.body import known_array
from fuser.cpu.loop.layouts import Layout
from fuser.cpu.mathfns import I64
from ir.core import Node, Value

I32 = ir.IntType(32)
COOP_MIN_WEIGHT_BYTES = 1 << 20
"""Products whose weight (B) takes fewer bytes than this are computed by each range for its own
rows: a weight that fits in a core's L2 gains nothing from being shared, and the barriers cost."""
SPINS_BEFORE_YIELD = 4096
MAX_SPINS = 1 << 20
"""turns of a barrier's wait (each a pause or a yield) before it gives up and aborts the loop."""
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")
BARRIER_SLOTS = 2
"""the int64s of a barrier: arrivals, the abort flag."""


def enabled() -> bool | None:
    """``RNNSCRIPT_LOOP_COOP``: 0 never shares a product, 1 shares every product that can be
    (tests), unset: products with a large weight (``COOP_MIN_WEIGHT_BYTES``)."""
    env = os.environ.get("RNNSCRIPT_LOOP_COOP", "").strip().lower()
    if env in ("0", "false", "off"):
        return False
    if env in ("1", "true", "on"):
        return True
    return None


def products(prog: Any, layouts: dict[Value, Layout]) -> list[Node]:
    """The matmuls of a loop over row ranges that its ranges may compute together: A's rows
    and the product's rows are the batch rows (each range writes its own rows of A), the
    product is no range's own sum."""
    if prog.batch is None:
        return []
    (body,) = prog.node.blocks
    found = []
    for n in body:
        if n.kind != "tensor::matmul" or n.output in prog.private:
            continue
        a, out = known_array(n.inputs[0]), known_array(n.output)
        if a is None or out is None or len(a.shape) != 2 or len(out.shape) != 2:
            continue
        la, lo = layouts.get(n.inputs[0]), layouts.get(n.output)
        if la is None or lo is None or la[0][0] != prog.batch or lo[0][0] != prog.batch:
            continue
        if la[1][1] != la[2]:  # A row-major (unit column stride)
            continue
        found.append(n)
    return found


_YIELD: list[int] = []


def _yield_address() -> int:
    if not _YIELD:
        libc = ctypes.CDLL(None)
        _YIELD.append(ctypes.cast(libc.sched_yield, ctypes.c_void_p).value or 0)
    return _YIELD[0]


def plan_ints(prog: Any, layouts: dict[Value, Layout], ints: dict[Any, int],
              constants: list[np.ndarray]) -> None:
    """The whole loop's values of the shared products' ints (not shared: 0) and the barrier
    every variant has (``constants`` keeps it)."""
    nodes = products(prog, layouts)
    if not nodes:
        return
    barrier = np.zeros(BARRIER_SLOTS, np.int64)
    constants.append(barrier)
    ints[("coop on",)] = 0
    ints[("coop barrier",)] = barrier.ctypes.data
    ints[("coop parts",)] = 1
    ints[("coop yield",)] = _yield_address()
    for n in nodes:
        ints[("coop", n)] = 0
        ints[("coop m", n)] = 0
        ints[("coop c0", n)] = 0
        ints[("coop n", n)] = 0


def range_values(prog: Any, variant: Any, parts: int, k: int) -> dict[Any, int] | None:
    """The ints of range ``k`` of ``parts`` that share their products (None: none is shared)."""
    want = enabled()
    if want is False or parts < 2 or ("coop on",) not in variant.keys:
        return None
    values: dict[Any, int] = {}
    width = 64  # columns in blocks of one AVX-512 vector's bytes
    at = {key: j for j, key in enumerate(variant.keys)}
    for n in [key[1] for key in at if key[0] == "coop"]:  # (``products``, as planned)
        own = int(variant.ints[at[("gemm", n, 8)]])
        ta = int(variant.ints[at[("gemm", n, 3)]])
        shape_b, _, item = variant.layouts[n.inputs[1]]
        cols = variant.layouts[n.output][0][1]
        if own not in (1, 5) or ta != blas.CBLAS_NO_TRANS:
            continue
        if want is None and int(np.prod(shape_b, dtype=np.int64)) * item < COOP_MIN_WEIGHT_BYTES:
            continue
        align = max(1, width // item)
        if cols < parts * align:
            continue
        blocks = -(-cols // align)
        c0 = min(cols, blocks * k // parts * align)
        c1 = min(cols, blocks * (k + 1) // parts * align)
        values.update({("coop", n): 1, ("coop m", n): prog.batch, ("coop c0", n): c0,
                       ("coop n", n): c1 - c0})
    if not values:
        return None
    values[("coop on",)] = 1
    values[("coop parts",)] = parts
    return values


def barrier(lb: Any) -> None:
    """Wait until every range has arrived here as often as this one (``lb`` a ``LoopBuilder``);
    on an abort (another range failed) or after ``MAX_SPINS`` turns, fail (return 1)."""
    b = lb.b
    at, parts, yielder = lb.coop_state()
    count = at
    abort = b.gep(count, [ir.Constant(I64, 1)], source_etype=I64)
    gen = b.add(b.load(lb.coop_gen, typ=I64), ir.Constant(I64, 1))
    b.store(gen, lb.coop_gen)
    b.atomic_rmw("add", count, ir.Constant(I64, 1), "acq_rel")
    target = b.mul(gen, parts)
    spins = lb.coop_spins
    b.store(ir.Constant(I64, 0), spins)
    wait = lb.fn.append_basic_block("barrier_wait")
    turn = lb.fn.append_basic_block("barrier_turn")
    done = lb.fn.append_basic_block("barrier_done")
    b.branch(wait)
    b.position_at_end(wait)
    arrived = b.load_atomic(count, "acquire", 8, typ=I64)
    b.cbranch(b.icmp_signed(">=", arrived, target), done, turn)
    b.position_at_end(turn)
    aborted = b.icmp_signed("!=", b.load_atomic(abort, "acquire", 8, typ=I64),
                            ir.Constant(I64, 0))
    n = b.add(b.load(spins, typ=I64), ir.Constant(I64, 1))
    b.store(n, spins)
    give_up = b.or_(aborted, b.icmp_signed(">", n, ir.Constant(I64, MAX_SPINS)))
    go_on = lb.fn.append_basic_block("barrier_spin")
    b.cbranch(give_up, lb.fail, go_on)
    b.position_at_end(go_on)
    late = b.icmp_signed(">", n, ir.Constant(I64, SPINS_BEFORE_YIELD))
    with b.if_else(late) as (slow, fast):
        with slow:
            fn_type = ir.FunctionType(I32, [])
            b.call(b.inttoptr(yielder, ir.PointerType(fn_type)), [])
        with fast:
            if _X86:
                module = lb.module
                pause = module.globals.get("llvm.x86.sse2.pause") or ir.Function(
                    module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause")
                b.call(pause, [])
    b.branch(wait)
    b.position_at_end(done)


def fail_block(lb: Any) -> None:
    """The loop's ``fail`` block: a range sharing its products sets the barrier's abort flag
    first (the others leave their barriers), then returns 1."""
    b = ir.IRBuilder(lb.fail)
    on = b.load(b.gep(lb.ints_arg, [ir.Constant(I64, lb.ints.index(("coop on",)))],
                      source_etype=I64), typ=I64)
    flag = lb.fn.append_basic_block("abort")
    out = lb.fn.append_basic_block("fail_out")
    b.cbranch(b.icmp_signed("!=", on, ir.Constant(I64, 0)), flag, out)
    b.position_at_end(flag)
    at = b.load(b.gep(lb.ints_arg, [ir.Constant(I64, lb.ints.index(("coop barrier",)))],
                      source_etype=I64), typ=I64)
    abort = b.gep(b.inttoptr(at, ir.PointerType()), [ir.Constant(I64, 1)], source_etype=I64)
    b.atomic_rmw("xchg", abort, ir.Constant(I64, 1), "release")
    b.branch(out)
    b.position_at_end(out)
    b.ret(ir.Constant(I32, 1))


EXPLORE_EVERY = 16
"""Calls between two runs of the way (shared products or not) that is not the faster one
(``Chooser``): a neighbour's load comes and goes."""


class Chooser:
    """Whether a loop's ranges compute their large products together this call: whichever way
    ran faster lately (the fastest of each way's last ``RECENT`` runs), the other once every
    ``EXPLORE_EVERY`` calls. Beside a busy neighbour the barriers wait for a range whose core
    the neighbour holds at every step (the seed-size forward loop took 151-163 ms against
    146-149 for ranges that never wait for each other); on a quiet machine sharing is faster
    (63-71 against 71-79 ms). A loop's first shared run, while the function's other code may
    still be compiling on a thread of its own, took 377 ms: the fastest of the last runs, not
    their mean, forgets it at the next run."""

    __slots__ = ("recent", "calls", "failures")

    def __init__(self) -> None:
        self.recent: dict[bool, list[float]] = {True: [], False: []}
        self.calls = 0
        self.failures = 0

    def pick(self) -> bool:
        self.calls += 1
        want = enabled()
        if want is not None:  # ``RNNSCRIPT_LOOP_COOP``: always or never
            return want
        if self.failures >= MAX_FAILURES:
            return False
        if not self.recent[True]:
            return True
        if not self.recent[False]:
            return False
        best = min(self.recent[True]) <= min(self.recent[False])
        return best if self.calls % EXPLORE_EVERY else not best

    def record(self, shared: bool, seconds: float) -> None:
        runs = self.recent[shared]
        runs.append(seconds)
        if len(runs) > RECENT:
            del runs[0]

    def failed(self) -> None:
        """A shared run that did not finish (a barrier gave up, or a check failed): the ranges
        alone are the faster way until sharing is tried again, and after ``MAX_FAILURES`` it
        is not tried again."""
        self.failures += 1
        self.recent[True] = [float("inf")]


RECENT = 4
MAX_FAILURES = 3
