"""The compiled loop: ``NativeLoop`` checks a call's arguments, finds or compiles the machine code
for their layouts (``Variant``), runs it (over row ranges at once when asked) and hands back the
carried results, the appended items and the popped lists."""

from __future__ import annotations

import ctypes
import hashlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fuser.cpu import blas, jit, stepgemm
from fuser.cpu.kernel import data_address
from fuser.cpu.loop import coop, planning, shared_code, slots
from fuser.cpu.loop.appends import Appends
from fuser.cpu.loop.body import int_list, numbers
from fuser.cpu.loop.builder import PLACEHOLDER, LoopBuilder
from fuser.cpu.loop.layouts import Layout, Unplannable
from fuser.cpu.loop.program import LoopProgram
from fuser.cpu.loop.ranges import RowRanges, run_ranges
from fuser.workspace import Workspace
from ir.core import Node, Value

_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_int64, ctypes.c_void_p,
                          ctypes.c_void_p, ctypes.c_void_p)
"""``int loop(tuple of arrays, trip count, int64 *ints, double *doubles, void **functions)``:
0 when every step ran, 1 when an index was out of range (nothing the caller can see was
written then but slots of ``write_slot`` targets, which the Python rerun writes again)."""


@dataclass
class Variant:
    """The machine code and the loop-invariant arguments for one set of input layouts."""

    fn: Any
    ints: np.ndarray
    free_ints: list[tuple[int, int]]
    """(position in ``ints``, position in the free values) of each int to fill per call."""
    doubles: np.ndarray
    free_doubles: list[tuple[int, int]]
    """the same for each float."""
    buffers: list[tuple[tuple[int, ...], np.dtype, bool]]
    """per made value: its shape, dtype and whether it keeps a slot per step."""
    keep: list[Any]
    """the plans' parameter arrays whose addresses ``ints`` holds."""
    keys: list[Any] = field(default_factory=list)
    """what each entry of ``ints`` holds (``LoopBuilder.ints``)."""
    layouts: dict[Value, Layout] = field(default_factory=dict)
    plans: dict[Node, Any] = field(default_factory=dict)
    splits: dict[int, list[np.ndarray] | None] = field(default_factory=dict)
    """per count of row ranges: the ints of each range (None: these layouts do not split)."""
    shared: dict[int, list[np.ndarray]] = field(default_factory=dict)
    """per count of row ranges: the ints of each range where the ranges compute the step's
    large products together (``coop``), when they can."""
    choosers: dict[int, Any] = field(default_factory=dict)
    """per count of row ranges: whether they compute them together this call (``coop``)."""
    dict_lows: list[tuple[int, int]] = field(default_factory=list)
    """(position in ``ints``, which dict read by key) of each dict's lowest key, per call."""
    step_product: int | None = None
    """the multiply-adds of one step's products (``RowRanges._step_product``)."""
    into: frozenset[int] = frozenset()
    """the made values (by position) the kernels write straight into their slots (``slots``):
    the code never touches their step buffers, and the call hands it ``_UNTOUCHED`` for them."""


_UNTOUCHED = np.empty(0, np.uint8)
"""What a call hands the code for the step buffers of a value its kernel writes into its slot
(``Variant.into``): the code reads no pointer of them, and two new arrays a step buffer would
be cost a call 2-3 us each at B=8, H=64 (an LSTM's five saved gates: 10 of its 14)."""


class NativeLoop(RowRanges, Appends):
    """A loop compiled natively: ``loop(trip, free values, initial carried values)`` returns the
    carried results, or None when these arguments cannot run natively (the caller then runs the
    loop as Python)."""

    def __init__(self, prog: LoopProgram, shared: dict | None = None,
                 fingerprint: Any = None):
        self.prog = prog
        prog.into_slots = slots.candidates(prog)
        self.shared = shared if fingerprint is not None else None
        """machine code by what it depends on, shared with loops of the same ``fingerprint``
        (the specializations of one loop on sizes known at run time: ``shapes``)."""
        self.fingerprint = fingerprint
        self.variants: dict[tuple, Variant | None] = {}
        self.lock = threading.Lock()
        self.coop_lock = threading.Lock()
        """held by the call whose row ranges compute their products together (``coop``: one
        barrier per variant)."""
        self.free_checks = [(np.dtype(v.type.dtype), tuple(v.type.shape))  # type: ignore
                            for v in prog.free_arrays]
        self.init_checks = [(np.dtype(v.type.dtype), tuple(v.type.shape))  # type: ignore
                            for v in prog.params]
        self.number_inits = any(shape == () for _, shape in self.init_checks)
        self.unset = [k for k, v in enumerate(prog.node.inputs[2:])
                      if v.node.kind == "prim::Uninitialized"]
        """carried values that start uninitialized (None: ``for t in ...: g = ...`` with no
        ``g`` before), which no step reads before binding: they start from an empty array."""
        pos = {v: k for k, v in enumerate(prog.free)}
        self.array_pos = [pos[v] for v in prog.free_arrays]
        self.list_pos = [pos[v] for v in prog.free_lists]
        self.list_roles = [prog.roles[v] for v in prog.free_lists]
        self.int_lists = [int_list(v) for v in prog.free_lists]
        """per list: whether it is a list of ints (the steps read an int64 copy of it)."""
        self.changed_lists = any(r not in ("read", "keys") for r in self.list_roles)
        self.container_types = [dict if r in ("keys", "store") else list
                                for r in self.list_roles]
        self.numbers = {k for k, v in enumerate(prog.produced) if v in numbers(prog.produced)}
        """made values handed back as numbers, as numpy's loop gives them (``numbers``)."""
        self.buffer_at: list[int] = []
        """per made value, the index of its first buffer in a call's buffer list."""
        at = 0
        for v in prog.produced:
            self.buffer_at.append(at)
            at += 1 if v in prog.sequenced else 2
        self.private_at = {k for k, v in enumerate(prog.produced) if v in prog.private}
        """made values each row range has its own of (``LoopProgram.private``)."""
        self.workspace = Workspace()
        """the buffers of the last calls, reused by the next (``fuser.workspace``)."""
        self.sites = [self.workspace.site() for _ in range(at)]
        self.gemm = gemm = blas.gemm()
        assert gemm is not None
        self.fns = np.array([gemm.sgemm, gemm.dgemm, 0, 0, 0, 0], np.uint64)
        """BLAS sgemm and dgemm, then ``stepgemm``'s float32 and float64 kernels and its
        matrix-vector kernels (those ``wanted``: (matrix-vector, float64))."""
        self.wanted: set[tuple[bool, bool]] = set()
        self.calls = 0
        """how many calls ran natively (for tests and ``explain``)."""

    def _step_gemm(self, la: Layout, ga: tuple[int, int], gb: tuple[int, int], m: int, n: int,
                   k: int) -> int:
        """Which kernel a matmul runs: 1 ``stepgemm``'s (B row-major, A row-major or
        transposed, sizes it takes); 2 its matrix-vector kernel (B one column, A row-major:
        BLAS's ?gemm is several times slower there); 3 a column B times a transposed A, run as
        the row B^T times A's storage on ``stepgemm``'s kernel; 4 a row A times a transposed B,
        run as the matrix-vector kernel on B's storage; 5 as 1, each panel of B packed first
        (``stepgemm.packs``); 0 BLAS. (3 and 4 are why a
        matrix-vector product needs no contiguous copy of a transposed weight,
        ``passes.contiguous_weights``.)"""
        item = la[2]
        if not stepgemm.enabled():
            return 0
        if n == 1 and not ga[0]:
            return self._kernel(2, item)
        if n == 1 and stepgemm.use(1, m, k, item):
            return self._kernel(3, item)
        if m == 1 and gb[0] and not ga[0]:
            return self._kernel(4, item)
        if gb[0] or not stepgemm.use(m, n, k, item) or self._threaded(m * n * k, item):
            return 0
        return self._kernel(5 if stepgemm.packs(m, gb[1] * item, k) else 1, item)

    def _kernel(self, own: int, item: int) -> int:
        """``own``; its ``stepgemm`` kernel goes in ``fns`` once the variant's code has compiled
        (it may be compiling on a thread of its own: ``stepgemm.prefetch``)."""
        self.wanted.add((own in (2, 4), item == 8))
        return own

    @property
    def free(self) -> list[Value]:
        """The values from outside the loop a call passes, in order."""
        return self.prog.free

    def __repr__(self) -> str:
        return f"<fuser.cpu.NativeLoop {len(self.prog.node.blocks[0])} nodes>"

    def __call__(self, trip: Any, free: tuple, inits: tuple) -> tuple | None:
        prog = self.prog
        arrays = [free[k] for k in self.array_pos]
        for j, (a, (dtype, shape)) in enumerate(zip(arrays, self.free_checks)):
            if type(a) is not np.ndarray:
                if not isinstance(a, np.generic) or j in prog.write_targets:
                    return None
                arrays[j] = a = np.array(a)  # a 0-d constant the code holds as numpy's number
            if a.dtype != dtype or a.shape != shape:
                return None
        given = inits
        if self.unset and any(inits[k] is None for k in self.unset):
            given = list(inits)
            for k in self.unset:
                if given[k] is None:
                    given[k] = np.empty(self.init_checks[k][1], self.init_checks[k][0])
            given = tuple(given)
        if self.number_inits and any(isinstance(a, np.generic) for a in given):
            # a 0-d carried value that starts as numpy's number (``total = x.sum()``): the
            # steps read it as a 0-d array; results and appends keep the number given
            given = tuple([np.array(a) if isinstance(a, np.generic) else a for a in given])
        for a, (dtype, shape) in zip(given, self.init_checks):
            if type(a) is not np.ndarray or a.dtype != dtype or a.shape != shape:
                return None
        if not all(a.flags.c_contiguous for a in given):  # (``zeros_like`` of a transpose)
            given = self._contiguous(given)
            if given is None:
                return None
        for k in prog.write_targets:
            if not arrays[k].flags.writeable:
                return None
        for k in prog.written_params:  # (a number is not written in place: Python raises)
            if not given[k].flags.writeable or given[k] is not inits[k]:
                return None
        lists = [free[k] for k in self.list_pos]
        if any(type(lst) is not kind for lst, kind in zip(lists, self.container_types)):
            return None
        if self.changed_lists and len({id(lst) for lst in lists}) != len(lists):
            return None  # one list under two names: the steps' order would matter
        try:
            trip = int(trip)
        except (TypeError, ValueError):
            return None
        if trip <= 0:
            return tuple(inits)
        if trip >= 2**62:
            return None
        # the items of a list are laid out as its first (views x[:, t, :] of one array)
        items_at = tuple([lst[0].strides if role in ("read", "pop") and lst
                          and type(lst[0]) is np.ndarray else None
                          for lst, role in zip(lists, self.list_roles)])
        key = (tuple([a.strides for a in arrays]), items_at)
        variant = self.variants.get(key, False)
        if variant is False:
            with self.lock:
                variant = self.variants.get(key, False)
                if variant is False:
                    variant = self.variants[key] = self._variant(arrays, items_at)
        if variant is None:
            return None
        ints, doubles = variant.ints, variant.doubles
        if variant.free_ints:
            ints = ints.copy()
            for at, k in variant.free_ints:
                value = free[k]
                if type(value) is not int or not -2**62 < value < 2**62:
                    return None
                ints[at] = value
        if variant.free_doubles:
            doubles = doubles.copy()
            for at, k in variant.free_doubles:
                value = free[k]
                if not isinstance(value, (float, int)) or isinstance(value, bool):
                    return None
                doubles[at] = value
        ranges = self._ranges(variant)
        bufs = []
        sites = iter(self.sites)
        for k, (shape, dtype, sequenced) in enumerate(variant.buffers):
            if sequenced:
                bufs.append(next(sites).empty((trip, *shape), dtype))
            elif k in variant.into:
                next(sites), next(sites)  # (each buffer keeps its own site)
                bufs += (_UNTOUCHED, _UNTOUCHED)
            else:
                if ranges is not None and k in self.private_at:  # one per row range
                    shape = (len(ranges), *shape)
                bufs.append(next(sites).empty(shape, dtype))
                bufs.append(next(sites).empty(shape, dtype))
        tuples = []
        lows = []
        for lst, role, ints_only in zip(lists, self.list_roles, self.int_lists):
            if ints_only:
                copy = _int64_copy(lst)
                if copy is None:
                    return None
                tuples.append(copy)
            elif role == "keys":
                found = _keyed_items(lst)
                if found is None:
                    return None
                lows.append(found[0])
                tuples.append(found[1])
            elif role not in ("append", "store"):
                tuples.append(tuple(lst))
        if variant.dict_lows:
            ints = ints.copy() if ints is variant.ints else ints
            for at, k in variant.dict_lows:
                ints[at] = lows[k]
        items = tuple([*arrays, *given, *bufs, *tuples])
        if ranges is None:
            status = variant.fn(items, trip, data_address(ints), data_address(doubles),
                                data_address(self.fns))
        else:
            if variant.free_ints:
                ranges = [r.copy() for r in ranges]
                for r in ranges:
                    for at, _ in variant.free_ints:
                        r[at] = ints[at]
            together = variant.shared.get(len(ranges))
            barrier = 0
            chooser = None
            if together is not None:
                chooser = variant.choosers.setdefault(len(ranges), coop.Chooser())
                if not chooser.pick():
                    together = None
            if together is not None:
                if variant.free_ints:
                    together = [r.copy() for r in together]
                    for r in together:
                        for at, _ in variant.free_ints:
                            r[at] = ints[at]
                barrier = int(together[0][variant.keys.index(("coop barrier",))])
                if not self.coop_lock.acquire(blocking=False):  # (another thread's call)
                    together = None
            start, ran = time.perf_counter(), []
            try:
                status = run_ranges(variant.fn, items, trip, ranges, doubles, self.fns,
                                    together, barrier, ran)
            finally:
                if together is not None:
                    self.coop_lock.release()
            if chooser is not None and status == 0 and (together is None or ran):
                chooser.record(bool(ran), time.perf_counter() - start)
            elif chooser is not None and ran:
                chooser.failed()
        self.ended = time.perf_counter()
        if status != 0:
            return None
        self.calls += 1
        last = (trip - 1) & 1
        slots: dict[int, list[np.ndarray]] = {}
        """per sequenced buffer, the views of its slots handed out (one object per step, as
        the Python loop makes one array per step)."""

        def final(k: int) -> Any:
            at = self.buffer_at[k]
            if ranges is not None and k in self.private_at:  # the ranges' sums, added
                return bufs[at + last].sum(0)  # (a number for a 0-d sum, as numpy's)
            if k in self.numbers:  # numpy's loop ends with a number there
                return bufs[at + last][()]
            if prog.produced[k] not in prog.sequenced:
                return bufs[at + last]
            return slots[at][trip - 1] if at in slots else bufs[at][trip - 1]

        for lst, role in zip(lists, self.list_roles):
            if role == "pop":
                del lst[len(lst) - trip:]
        if prog.appends or prog.stores:
            self._append(trip, free, inits, bufs, lists, slots)
        return tuple([final(k) if how == "made" else inits[k] if how == "same" else free[k]
                      for how, k in prog.sources])

    # -- variants
    def _contiguous(self, given: tuple) -> tuple | None:
        """``given`` with C-ordered copies of the initial values the steps only read (each step
        makes the next one; none is written, appended or handed back); None when another is not
        C-ordered."""
        prog = self.prog
        out = list(given)
        for j, a in enumerate(given):
            if not a.flags.c_contiguous:
                if (prog.sources[j][0] != "made" or j in prog.written_params
                        or ("carried", j) in prog.kept.values()):
                    return None
                out[j] = np.ascontiguousarray(a)
        return tuple(out)

    def _variant(self, arrays: list[np.ndarray], items_at: tuple) -> Variant | None:
        try:
            return self._make_variant(arrays, items_at)
        except Unplannable:
            return None

    def _make_variant(self, arrays: list[np.ndarray], items_at: tuple) -> Variant:
        prog = self.prog
        layouts, ints, plans, constants = planning.plan(prog, arrays, items_at,
                                                        self._step_gemm)
        address, int_keys, double_keys = self._code(layouts, plans, ints)
        for vector, double in self.wanted:
            if not self.fns[(at := (4 if vector else 2) + double)]:
                self.fns[at] = (stepgemm.gemv_address if vector else stepgemm.address)(double)
        free_at = {v: k for k, v in enumerate(prog.free)}
        free_ints, int_values = [], []
        for at, key in enumerate(int_keys):
            if key[0] == "free":
                free_ints.append((at, free_at[key[1]]))
                int_values.append(0)
            elif key[0] == "int constant":
                int_values.append(key[1])
            else:
                int_values.append(ints[key])
        keyed = [v for v in prog.free_lists if prog.roles[v] == "keys"]
        dict_lows = [(at, keyed.index(key[1])) for at, key in enumerate(int_keys)
                     if key[0] == "dict low"]
        free_doubles = [(at, free_at[v]) for at, (_, v) in enumerate(double_keys)]
        dbl_values = [0.0] * len(double_keys)
        buffers = [(tuple(v.type.shape), np.dtype(v.type.dtype),  # type: ignore[union-attr]
                    v in prog.sequenced) for v in prog.produced]
        into = slots.into(prog, layouts)  # (what the code was built for: ``layout_facts``)
        return Variant(_ENTRY(address), np.array(int_values or [0], np.int64), free_ints,
                       np.array(dbl_values or [0.0], np.float64), free_doubles, buffers,
                       [p.params for p in plans.values()] + constants, list(int_keys), layouts,
                       plans, dict_lows=dict_lows,
                       into=frozenset(k for k, v in enumerate(prog.produced) if v in into))

    def _code(self, layouts: dict[Value, Layout], plans: dict[Node, Any],
              ints: dict[Any, int]) -> tuple[int, list, list]:
        """The address of the machine code for these layouts and what its ints and doubles
        hold; from ``shared`` when a loop of the same fingerprint compiled it for layouts the
        builder makes the same code of (the same kernel plans' classes and block copies)."""
        prog = self.prog
        key = None
        if self.shared is not None:
            key = (self.fingerprint, shared_code.layout_facts(prog, layouts, plans))
            found = self.shared.get(key)
            if found is not None:
                address, int_keys, double_keys = found
                objects = shared_code.objects(prog)
                int_keys = [shared_code.decode(k, objects) for k in int_keys]
                if all(k[0] == "free" or k in ints for k in int_keys):
                    return address, int_keys, [shared_code.decode(k, objects) for k in double_keys]
        builder = LoopBuilder(prog, layouts, self.gemm.int_bits)
        builder.plans = plans
        text = builder.build()
        name = "loop_" + hashlib.sha256(text.encode()).hexdigest()[:20]
        text = text.replace(PLACEHOLDER, name)
        (address,) = jit.compile_ir(text, [name], wide=True)
        at = {v: k for k, v in enumerate(shared_code.objects(prog))}
        if key is not None and all(x in at for k in (*builder.ints, *builder.doubles)
                                   for x in k if isinstance(x, (Node, Value))):
            self.shared[key] = (address, [shared_code.encode(k, at) for k in builder.ints],  # type: ignore
                                [shared_code.encode(k, at) for k in builder.doubles])
        return address, list(builder.ints), list(builder.doubles)

def _keyed_items(d: dict) -> tuple[int, tuple] | None:
    """(the lowest key, the items by key from it) of a dict whose keys are consecutive ints
    (a loop's steps, ``hs[-1]`` first); None for any other dict (the Python loop reads it)."""
    if not d:
        return 0, ()
    if any(type(key) is not int for key in d):
        return None
    low, high = min(d), max(d)
    if high - low + 1 != len(d) or not -2**62 < low < 2**62:
        return None
    return low, tuple([d[k] for k in range(low, high + 1)])


def _int64_copy(items: list) -> np.ndarray | None:
    """The ints of ``items`` as an int64 array; None when one is not an int (a bool, which
    indexes otherwise) or does not fit in 64 bits: the loop then runs as Python."""
    for v in items:
        if type(v) is not int:
            return None
    try:
        return np.array(items, np.int64)
    except OverflowError:
        return None
