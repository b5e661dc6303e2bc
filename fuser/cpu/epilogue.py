"""A product outside loops whose result only the fusion kernel right after it reads, computed
with that kernel as the product job's epilogue (``fuser.cpu.stepgemm.EPILOGUE``): each task of
the job sums its columns of every product, then runs the kernel over those columns while they
are in its core's cache.

The DLFS2 RNN cell, ``np.tanh(np.dot(h_prev, Wh) + np.dot(x, Wx) + b)``, is one
(64, 384) x (384, 256) product and a kernel adding ``b`` and taking the tanh. On its own the
kernel is a second call from Python and a pass over the product on one thread while the other
core waits; as an epilogue it runs on both threads, column task by column task, and the call is
one.

A task's kernel call is the kernel's own guarded entry with a guard of the task's columns alone
(one slab: every row, the task's columns, each array's offset moved to its first column), the
way ``fuser.cpu.parallel`` splits a kernel call: nothing is compiled per kernel, the values are
the kernel's, bit for bit, and the entry checks the arguments as a guarded call does. Only a
kernel whose iteration shape and every output's shape are the product's takes part (an
elementwise tail: the product's columns are the kernel's columns), or whose iteration columns
are a ``1 / parts`` of the product's and which reads the product in ``parts`` column blocks
(``split(A, 4, axis=1)``: the DLFS2 LSTM cell's gates); there a task sums the same columns of
every block (``fuser.cpu.stepgemm.PARTS``) before its kernel call reads them.

A call site (``Fused``) calls the product and the kernel as two calls until a layout of its
arguments repeats (a function called once compiles nothing new); from then on a call with that
layout is one job. A call whose arguments do not match it, or whose task guard rejects them (a
Python thread changed an argument while the job ran), is computed by the two calls.
"""

from __future__ import annotations

import ctypes
import itertools
from typing import Any

import numpy as np

from fuser.cpu import products, sites
from fuser.cpu.kernel import Kernel, data_address
from fuser.cpu.parallel import threads
from fuser.cpu.stepgemm import EPILOGUE, PARTS, lanes

_empty = np.empty


class Fused:
    """``kernel(*others with the product at positions)`` for the product of the call's first
    ``n`` arguments (``A1, B1, A2, B2, ...``: a sum of products), the kernel's other inputs
    following them in order."""

    __slots__ = ("site", "kernel", "n", "positions", "product_too", "seen", "fast", "refused",
                 "arrays")

    def __init__(self, kernel: Kernel, n: int, positions: tuple[int, ...],
                 product_too: bool = False, arrays: tuple = ()):
        self.site = products.Site(True)
        self.arrays = arrays or (None,) * (1 + len(kernel.out_dtypes))
        """where the product and each output come from: (a workspace site, shape, dtype)
        (``fuser.workspace``: the function's arrays, reused by its next call when no one holds
        them), or None (a new array each call)."""
        self.kernel = kernel
        self.n = n
        self.positions = positions
        """where the product goes among the kernel's inputs (ascending)."""
        self.product_too = product_too
        """return ``(product, *outputs)`` (code that checks every value it computes)."""
        self.seen: tuple | None = None
        """the layout of the last call the two calls computed."""
        self.fast: _Epilogue | None = None
        self.refused: tuple | None = None
        """the last layout that has no job (``_Epilogue.of`` is not asked again for it)."""

    def __call__(self, *args: Any) -> Any:
        fast = self.fast
        if fast is not None:
            found = fast.run(args)
            if found is not None:
                return found
        return self._apart(args)

    def _inputs(self, args: tuple, product: Any) -> tuple:
        inputs = list(args[self.n:])
        for k in self.positions:
            inputs.insert(k, product)
        return tuple(inputs)

    def _apart(self, args: tuple) -> Any:
        """The product and the kernel as two calls; a layout seen twice in a row gets its job."""
        operands = args[:self.n]
        product = self.site(*operands, out=self.new(0))
        inputs = self._inputs(args, product)
        if any(self.arrays[1:]):
            result = self.kernel.into(tuple([self.new(k) for k in range(1, len(self.arrays))]),
                                      *inputs)
        else:
            result = self.kernel(*inputs)
        key = _layout(operands) + _layout(inputs)
        if key == self.seen and key != self.refused and (self.fast is None
                                                         or self.fast.key != key):
            made = _Epilogue.of(self, operands, inputs, key)
            if made is None:
                self.refused = key
            else:
                self.fast = made
        self.seen = key
        return self.returned(product, result)

    def new(self, k: int) -> Any:
        """Array ``k`` (0 the product, then the outputs) from its workspace site, or None."""
        found = self.arrays[k]
        return None if found is None else found[0].empty(found[1], found[2])

    def returned(self, product: Any, result: Any) -> Any:
        if not self.product_too:
            return result
        return (product, *result) if isinstance(result, tuple) else (product, result)


def _layout(arrays: tuple) -> tuple:
    return tuple([(type(a), a.shape, a.strides, a.dtype) if type(a) is np.ndarray else type(a)
                  for a in arrays])


_kinds = itertools.count()
_ENTRY, _ARGS, _OUTS, _TABLE, _REJECTED = (EPILOGUE + k for k in range(5))
_JOINED, _TAKEN = 10, 11
"""the sum job's counters (``stepgemm.SUM_SLOTS``): threads joined, tasks taken."""


class _Epilogue:
    """The job of one layout of a ``Fused`` call's arguments."""

    key: tuple
    owner: Fused
    plan: Any
    """the product's ``products`` plan."""
    guard: np.ndarray
    """``sites.guard`` of the operands (the product's result written to a fresh array)."""
    guard_at: int
    """its address."""
    header: list[int]
    """the kernel's guard without its slabs."""
    slab: np.ndarray
    """the kernel's one slab over the whole product, as rows x columns."""
    items: list[int]
    """the item size of each slot of the slab (outputs first, then inputs)."""
    entry: int
    """the address of the kernel's guarded entry for this layout's column-stride classes."""
    dtypes: tuple[Any, ...]
    blocks: dict[int, tuple]
    """per thread count: the job's block, the items of its pack, the task guards and their
    table."""
    free: list[tuple]
    """the ``state`` of calls that ended, for the next ones."""
    bind: Any
    kind: tuple
    parts: int
    """the column blocks the kernel reads the product in (1: the whole product is its shape)."""
    span: int
    """the columns of each: the kernel's iteration columns."""

    @staticmethod
    def of(owner: Fused, operands: tuple, inputs: tuple, key: tuple) -> _Epilogue | None:
        """The job of this layout, or None where the kernel is not an elementwise tail of the
        product (other shapes, more than one slab) or an argument is not an array the kernel
        takes as it is."""
        kernel = owner.kernel
        if any(type(x) is not np.ndarray for x in operands):
            return None
        plan = products.plan_for(operands)
        if plan is None or kernel.has_cat:
            return None
        shape = plan.shape
        layouts = []
        for i, dtype in kernel.array_slots:
            a = inputs[i]
            if type(a) is not np.ndarray or a.dtype != dtype:
                return None
            layouts.append((a.shape, a.strides, a.itemsize))
        for i in kernel.spec.scalar_inputs:
            if type(inputs[i]) is not float:
                return None
        made = kernel.make_plan(layouts, split=False)
        (m, n), spec = shape, kernel.spec
        if made is None or made.guard is None or made.fn is None or len(made.params) != 1 or \
                len(made.shape) != 2 or made.shape[0] != m or not 0 < made.shape[1] <= n or \
                n % made.shape[1] or any(s != made.shape for s in made.shapes):
            return None
        span = made.shape[1]
        slab = made.params[0].copy()
        if (slab[0], slab[1]) != (m, span):
            if (slab[0], slab[1]) != (1, m * span):
                return None
            slab[0], slab[1] = m, span  # one flat row: every array's rows are span apart
            for s in range((len(slab) - 2) // 3):
                slab[3 + 3 * s] = slab[4 + 3 * s] * span
        items = ([kernel.out_dtypes[st.output].itemsize for st in spec.stores]
                 + [np.dtype(leaf.dtype).itemsize for leaf in spec.leaves])
        for k, leaf in enumerate(spec.leaves):  # each read of the product: one part's columns
            s = len(spec.stores) + k
            offset, rows, cols = (int(w) for w in slab[2 + 3 * s:5 + 3 * s])
            if leaf.input in owner.positions and (
                    (rows != n and m != 1) or cols != 1 or offset % (span * items[s])
                    or not 0 <= offset < n * items[s]):
                return None
        wanted = [(shape, plan.dtype)] + [((m, span), d) for d in kernel.out_dtypes]
        if any(a is not None and (a[1], a[2]) != w for a, w in zip(owner.arrays, wanted)):
            return None  # (the function's static shapes are the call's)
        job = _Epilogue()
        job.key, job.owner, job.plan, job.slab = key, owner, plan, slab
        job.parts, job.span = n // span, span
        job.header = [int(w) for w in made.guard[:len(made.guard) - 1 - made.params.size]]
        job.items = items
        job.entry = ctypes.cast(kernel.variant(made.classes)[1], ctypes.c_void_p).value or 0
        if not job.entry:
            return None
        job.dtypes = tuple(kernel.out_dtypes)
        job.guard = sites.guard(operands, plan.at, plan.out_at, shape, plan.spans)
        job.guard_at = job.guard.ctypes.data
        job.blocks = {}
        job.bind = sites.bind()
        job.kind = ("epilogue", next(_kinds))  # its runs, for blas.share's lag tracking
        job.free = []
        return job

    def block(self, count: int) -> tuple[np.ndarray, int]:
        """The job's block for ``count`` threads with the epilogue's entry and guards in it (the
        argument and output tuples 0), and the items of its pack. One task per thread (a
        thread that starts late finds the caller took its task): each task's kernel call then
        sweeps long rows. Quiet 2-vCPU Zen 3, float32, median of 800 calls, tasks of 16 / 32 /
        64 / 128 columns of each part: the DLFS2 LSTM cell ((64, 1024) product, four gate
        parts of 256) 471 / 466 / 454 / 445 us (two calls: 475); its RNN cell ((64, 256)) 64
        columns 108.5, 128 103.2 us (two calls: 117.6)."""
        found = self.blocks.get(count)
        if found is not None:
            return found[:2]
        block, per_pack = self.plan.block(count)
        block = block.copy()
        span, width = self.span, 2 * lanes(self.plan.item)
        task_cols = min(span, -(-span // count // width) * width)  # one task per thread
        guards = [self.task_guard(c0, min(span, c0 + task_cols))
                  for c0 in range(0, span, task_cols)]
        table = np.array([g.ctypes.data for g in guards], np.int64)
        block[_ENTRY], block[_TABLE] = self.entry, table.ctypes.data
        block[8], block[PARTS], block[PARTS + 1] = task_cols, self.parts, span
        self.blocks[count] = (block, per_pack, guards, table)  # the guards live while it does
        return block, per_pack

    def task_guard(self, c0: int, c1: int) -> np.ndarray:
        """The kernel's guard over columns ``c0:c1`` of the product."""
        slab = self.slab.copy()
        slab[1] = c1 - c0
        for s, item in enumerate(self.items):
            slab[2 + 3 * s] += c0 * int(slab[4 + 3 * s]) * item
        return np.array([*self.header, 1, *slab], np.int64)

    def run(self, args: tuple) -> Any:
        """The call as one job, or None when the operands do not have this layout or a task's
        guard rejected the kernel's arguments."""
        owner, plan = self.owner, self.plan
        count = threads() if plan.large else 1
        try:
            state = self.free.pop()  # (atomic: a thread calling at once makes its own)
        except IndexError:
            state = None
        if state is None or state[0] != count:
            state = self.state(count)
        _, product, block, at, _ = state
        if owner.product_too:  # the caller keeps the product: a new one each call
            product = owner.new(0)
            if product is None:
                product = _empty(plan.shape, plan.dtype)
        block[_JOINED] = block[_TAKEN] = block[_REJECTED] = 0
        if self.bind(args[:owner.n], product, self.guard_at, at, 0):
            self.free.append(state)
            return None
        inputs = owner._inputs(args, product)
        shape = (plan.shape[0], self.span)
        outs = tuple([_empty(shape, d) if owner.arrays[k] is None else owner.new(k)
                      for k, d in enumerate(self.dtypes, 1)])
        block[_ARGS], block[_OUTS] = id(inputs), id(outs)
        products.run_job(plan, block, at, 0, product, self.kind)
        # (a rejected call's group reads the product: the state is given back after it)
        result = owner.kernel(*inputs) if block[_REJECTED] else \
            outs if len(outs) > 1 else outs[0]
        self.free.append(state)
        return owner.returned(product, result)

    def state(self, count: int) -> tuple:
        """What a call of ``count`` threads writes besides its outputs, reused by the next call
        (the product is the job's own when the call does not return it): (count, the product,
        the job's block with the pack's address in it, the block's address). Taken from an
        allocation site, each call's product was one more array to look for there; with the
        block's copy and the pack's allocation that was 15-25 us of a 100 us call of the DLFS2
        RNN cell called between numpy calls (the interpreter's caches cold)."""
        plan = self.plan
        block, per_pack = self.block(count)
        block = block.copy()
        product = None if self.owner.product_too else _empty(plan.shape, plan.dtype)
        pack = None
        if per_pack:  # (none: B is read in place, the pack's address stays 0)
            pack = _empty(per_pack, plan.dtype)
            block[plan.pack_at] = data_address(pack)
        return count, product, block, data_address(block), pack  # (the pack lives as long)
