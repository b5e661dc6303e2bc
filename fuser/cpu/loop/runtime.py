"""The compiled loop: ``NativeLoop`` checks a call's arguments, finds or compiles the machine code
for their layouts (``Variant``), runs it (over row ranges at once when asked) and hands back the
carried results, the appended items and the popped lists."""

from __future__ import annotations

import ctypes
import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fuser.cpu import blas, jit, stepgemm
from fuser.cpu.kernel import data_address
from fuser.cpu.loop import regions, shared_code
from fuser.cpu.loop.appends import Appends
from fuser.cpu.loop.body import (
    CONSTRUCTORS,
    LAYER_NORMS,
    PIECES,
    PURE_WRITE,
    REDUCTIONS,
    SLOT_WRITES,
    VIEWS,
    WRITES,
    int_list,
    known_array,
    reduction,
    split_pieces,
    write_parts,
    write_target,
)
from fuser.cpu.loop.builder import PLACEHOLDER, LoopBuilder
from fuser.cpu.loop.layouts import (
    Layout,
    Unplannable,
    as_matrix,
    block_copy,
    broadcast,
    c_layout,
    dense,
    gemm_operand,
    list_item_layouts,
    slot_prefix,
    unit_axes,
)
from fuser.cpu.loop.program import LoopProgram, numbers
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
    dict_lows: list[tuple[int, int]] = field(default_factory=list)
    """(position in ``ints``, which dict read by key) of each dict's lowest key, per call."""
    step_product: int | None = None
    """the multiply-adds of one step's products (``RowRanges._step_product``)."""


class NativeLoop(RowRanges, Appends):
    """A loop compiled natively: ``loop(trip, free values, initial carried values)`` returns the
    carried results, or None when these arguments cannot run natively (the caller then runs the
    loop as Python)."""

    def __init__(self, prog: LoopProgram, shared: dict | None = None,
                 fingerprint: Any = None):
        self.prog = prog
        self.shared = shared if fingerprint is not None else None
        """machine code by what it depends on, shared with loops of the same ``fingerprint``
        (the specializations of one loop on sizes known at run time: ``shapes``)."""
        self.fingerprint = fingerprint
        self.variants: dict[tuple, Variant | None] = {}
        self.lock = threading.Lock()
        self.free_checks = [(np.dtype(v.type.dtype), tuple(v.type.shape))  # type: ignore
                            for v in prog.free_arrays]
        self.init_checks = [(np.dtype(v.type.dtype), tuple(v.type.shape))  # type: ignore
                            for v in prog.params]
        pos = {v: k for k, v in enumerate(prog.free)}
        self.array_pos = [pos[v] for v in prog.free_arrays]
        self.list_pos = [pos[v] for v in prog.free_lists]
        self.list_roles = [prog.roles[v] for v in prog.free_lists]
        self.int_lists = [int_list(v) for v in prog.free_lists]
        """per list: whether it is a list of ints (the steps read an int64 copy of it)."""
        self.changed_lists = any(r not in ("read", "keys") for r in self.list_roles)
        self.container_types = [dict if r in ("keys", "store") else list
                                for r in self.list_roles]
        self.numbers = {k for k, v in enumerate(prog.produced) if v in numbers(prog)}
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
        for a, (dtype, shape) in zip(arrays, self.free_checks):
            if type(a) is not np.ndarray or a.dtype != dtype or a.shape != shape:
                return None
        for a, (dtype, shape) in zip(inits, self.init_checks):
            if (type(a) is not np.ndarray or a.dtype != dtype or a.shape != shape
                    or not a.flags.c_contiguous):
                return None
        for k in prog.write_targets:
            if not arrays[k].flags.writeable:
                return None
        for k in prog.written_params:
            if not inits[k].flags.writeable:
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
        items = tuple([*arrays, *inits, *bufs, *tuples])
        if ranges is None:
            status = variant.fn(items, trip, data_address(ints), data_address(doubles),
                                data_address(self.fns))
        else:
            if variant.free_ints:
                ranges = [r.copy() for r in ranges]
                for r in ranges:
                    for at, _ in variant.free_ints:
                        r[at] = ints[at]
            status = run_ranges(variant.fn, items, trip, ranges, doubles, self.fns)
        if status != 0:
            return None
        self.calls += 1
        last = (trip - 1) & 1
        slots: dict[int, list[np.ndarray]] = {}
        """per sequenced buffer, the views of its slots handed out (one object per step, as
        the Python loop makes one array per step)."""

        def final(k: int) -> Any:
            at = self.buffer_at[k]
            if k in self.numbers:  # numpy's loop ends with a number there
                return bufs[at + last][()]
            if ranges is not None and k in self.private_at:  # the ranges' sums, added
                return bufs[at + last].sum(0)
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
    def _variant(self, arrays: list[np.ndarray], items_at: tuple) -> Variant | None:
        try:
            return self._make_variant(arrays, items_at)
        except Unplannable:
            return None

    def _make_variant(self, arrays: list[np.ndarray], items_at: tuple) -> Variant:
        prog = self.prog
        layouts: dict[Value, Layout] = {}
        for v, a in zip(prog.free_arrays, arrays):
            layouts[v] = (a.shape, a.strides, a.itemsize)
        for p in prog.params:
            layouts[p] = c_layout(p.type)  # type: ignore[arg-type]
        for v in prog.produced:
            layouts[v] = c_layout(v.type)  # type: ignore[arg-type]
        ints: dict[Any, int] = {}
        plans: dict[Node, Any] = {}
        constants: list[np.ndarray] = []
        """the constant arrays of the body, as the steps copy them (kept alive with the code)."""
        (body,) = prog.node.blocks
        for v in prog.sequenced:
            shape, _, item = layouts[v]
            ints[("seq", v)] = int(np.prod(shape, dtype=np.int64)) * item
        ints[("ndarray",)] = id(np.ndarray)
        item_layouts = list_item_layouts(prog, items_at, ints)
        for n in body:
            if n.kind == "prim::DictGetItem":
                layouts[n.output] = c_layout(prog.item_types[n.inputs[0]])
            elif n.kind in ("prim::ListIndex", "prim::ListPop"):
                lst = n.inputs[0]
                if int_list(lst):
                    continue  # an int
                if lst not in prog.unbound:
                    layouts[n.output] = item_layouts[lst]
                    continue
                x, ax = prog.unbound[lst]
                shape, strides, item = layouts[x]
                ax = ax + len(shape) if ax < 0 else ax
                layouts[n.output] = (shape[:ax] + shape[ax + 1:], strides[:ax] + strides[ax + 1:],
                                     item)
                ints[("dim", n)], ints[("stride", n)] = shape[ax], strides[ax]
            elif n.kind == "tensor::select":
                x, axis, _ = n.inputs
                shape, strides, item = layouts[x]
                ax = int(axis.constant)
                ax = ax + len(shape) if ax < 0 else ax
                if not 0 <= ax < len(shape):
                    raise Unplannable
                layouts[n.output] = (shape[:ax] + shape[ax + 1:], strides[:ax] + strides[ax + 1:],
                                     item)
                ints[("dim", n)], ints[("stride", n)] = shape[ax], strides[ax]
            elif regions.is_region_write(n):
                regions.plan(n, layouts, ints)
            elif n.kind in SLOT_WRITES:
                buf, axis, _, value = write_parts(n)
                if n.kind == "tensor::select_put_":
                    layouts[n.output] = layouts[buf]
                if n.kind == PURE_WRITE:  # the old array is copied whole first
                    if not dense(*layouts[buf]):
                        raise Unplannable
                    shape, _, item = layouts[buf]
                    ints[("copy bytes", n)] = int(np.prod(shape, dtype=np.int64)) * item
                shape, strides, item = layouts[write_target(n)]
                ax = int(axis.constant)
                ints[("dim", n)], ints[("stride", n)] = shape[ax], strides[ax]
                if known_array(value) is None:  # a number filling the slot (a dense row)
                    ints[("fill count", n)] = int(np.prod(shape[1:], dtype=np.int64))
                    continue
                if not block_copy(layouts[write_target(n)], ax, layouts[value]):
                    # element by element along the value's axes (a transposed gradient)
                    v_shape, v_strides, _ = layouts[value]
                    if not v_shape or prog.batch is not None:
                        raise Unplannable  # (row ranges copy whole blocks)
                    regions.plan_copy(n, v_shape, v_strides, strides[:ax] + strides[ax + 1:],
                                      ints)
                    continue
                block_shape = shape[ax + 1:]
                outer = slot_prefix(shape[:ax], strides[:ax])
                assert outer is not None
                ints[("bytes", n)] = int(np.prod(block_shape, dtype=np.int64)) * item
                if ax > 0:  # the slot is `outer` blocks, `outer stride` bytes apart
                    ints[("outer", n)], ints[("outer stride", n)] = outer
            elif n.kind in ("prim::TupleUnpack", "prim::TupleIndex"):
                items = prog.tuples[n.inputs[0]]
                chosen = (items if n.kind == "prim::TupleUnpack"
                          else [items[int(n.inputs[1].constant)]])
                for out, item in zip(n.outputs, chosen):
                    if item in layouts:
                        layouts[out] = layouts[item]
            elif n.kind == "tensor::slice":
                x, axis, start, stop, step = n.inputs
                shape, strides, item = layouts[x]
                ax = int(axis.constant)
                ax = ax + len(shape) if ax < 0 else ax
                picked = range(shape[ax])[slice(start.constant, stop.constant, step.constant)]
                out_shape = tuple(n.output.type.shape)  # type: ignore[union-attr]
                if len(picked) != out_shape[ax]:
                    raise Unplannable
                first = picked.start if len(picked) else 0
                ints[("slice offset", n)] = first * strides[ax]
                out_strides = list(strides)
                out_strides[ax] = strides[ax] * picked.step
                layouts[n.output] = (out_shape, tuple(out_strides), item)
            elif n.kind in PIECES:  # views: the input at an offset, with its strides
                found = split_pieces(n)
                assert found is not None
                ax, piece, _ = found
                shape, strides, item = layouts[n.inputs[0]]
                for k, out in enumerate(n.outputs):
                    ints[("piece offset", n, k)] = k * piece * strides[ax]
                    layouts[out] = (tuple(out.type.shape), strides, item)  # type: ignore
            elif n.kind == "tensor::reshape":
                if n.output in prog.same:
                    layouts[n.output] = layouts[n.inputs[0]]
                elif dense(*layouts[n.inputs[0]]):
                    layouts[n.output] = c_layout(n.output.type)  # type: ignore[arg-type]
                else:  # a view when only axes of length 1 come or go, else numpy would copy
                    layouts[n.output] = unit_axes(layouts[n.inputs[0]],
                                                  tuple(n.output.type.shape))  # type: ignore
            elif n.kind == "tensor::cat":
                pieces = prog.constructed[n.inputs[0]]
                shape, _, item = layouts[n.output]
                ax = int(n.inputs[1].constant)
                ax = ax + len(shape) if ax < 0 else ax
                inner = int(np.prod(shape[ax + 1:], dtype=np.int64)) * item
                ints[("cat outer", n)] = int(np.prod(shape[:ax], dtype=np.int64))
                ints[("cat row", n)] = int(np.prod(shape[ax:], dtype=np.int64)) * item
                offset = 0
                for k, v in enumerate(pieces):
                    p_shape, p_strides, _ = layouts[v]
                    prefix = slot_prefix(p_shape[:ax], p_strides[:ax])
                    if prefix is None or not dense(p_shape[ax:], p_strides[ax:], item):
                        raise Unplannable
                    block = p_shape[ax] * inner
                    ints[("cat offset", n, k)] = offset
                    ints[("cat block", n, k)] = block
                    ints[("cat stride", n, k)] = prefix[1] if prefix[0] > 1 else block
                    offset += block
            elif n.kind == "tensor::matmul":
                a, bm = n.inputs
                la, lb = as_matrix(layouts[a], row=True), as_matrix(layouts[bm], row=False)
                ga, gb = gemm_operand(la), gemm_operand(lb)
                if ga is None or gb is None:
                    raise Unplannable
                (m, k), (_, nn) = la[0], lb[0]
                flags = [blas.CBLAS_TRANS if g[0] else blas.CBLAS_NO_TRANS for g in (ga, gb)]
                own = self._step_gemm(la, ga, gb, m, nn, k)
                incx = 1 if gb[0] else gb[1]  # B's one column, for the matrix-vector kernel
                for j, value in enumerate((m, nn, k, *flags, ga[1], gb[1], max(nn, 1), own,
                                           incx)):
                    ints[("gemm", n, j)] = value
            elif n.kind in REDUCTIONS and n.output in prog.same:
                layouts[n.output] = layouts[n.inputs[0]]
            elif n.kind in REDUCTIONS:
                pair = prog.products.get(n)
                if pair is None:
                    shape, strides, item = layouts[n.inputs[0]]
                else:  # the operands of a product, broadcast to its shape
                    shape = tuple(n.inputs[0].type.shape)  # type: ignore[union-attr]
                    (_, strides, item), (_, strides_b, _) = (
                        broadcast(layouts[v], shape) for v in pair)
                    for a, s_ in enumerate(strides_b):
                        ints[("reduce stride b", n, a)] = s_
                found = reduction(n)
                assert found is not None
                axes, out_axis = found
                out_shape, out_strides, _ = layouts[n.output]
                ints[("reduce count", n)] = int(np.prod(out_shape, dtype=np.int64))
                ints[("reduce n", n)] = int(np.prod([shape[a] for a in axes], dtype=np.int64))
                for a, (d, s) in enumerate(zip(shape, strides)):
                    ints[("reduce dim", n, a)], ints[("reduce stride", n, a)] = d, s
                    o = out_axis[a]
                    ints[("reduce out stride", n, a)] = (
                        0 if a in axes or o is None else out_strides[o])
            elif n.kind in LAYER_NORMS:  # the row kernels read whole C-ordered rows
                if not all(dense(*layouts[v]) for v in n.inputs
                           if v in layouts and not v.is_constant):
                    raise Unplannable
                shape = layouts[n.inputs[1 if n.kind == "tensor::layer_norm_backward" else 0]][0]
                ints[("layer norm rows", n)] = int(np.prod(shape[:-1], dtype=np.int64))
            elif n.kind in VIEWS and n.output in prog.same:
                layouts[n.output] = layouts[n.inputs[0]]
            elif n.kind == "tensor::broadcast_to":
                layouts[n.output] = broadcast(layouts[n.inputs[0]],
                                              tuple(n.output.type.shape))  # type: ignore
            elif n.kind == "tensor::transpose":
                shape, strides, item = layouts[n.inputs[0]]
                perm = n.inputs[1].constant
                perm = range(len(shape) - 1, -1, -1) if perm is None else perm
                layouts[n.output] = (tuple(shape[int(a)] for a in perm),
                                     tuple(strides[int(a)] for a in perm), item)
                if layouts[n.output][0] != tuple(n.output.type.shape):  # type: ignore
                    raise Unplannable
            elif n.kind == "tensor::expand_dims":
                shape, strides, item = layouts[n.inputs[0]]
                out_shape = tuple(n.output.type.shape)  # type: ignore[union-attr]
                given = n.inputs[1].constant
                new = {int(a) % len(out_shape) for a in (
                    given if isinstance(given, (tuple, list)) else (given,))}
                rest = iter(strides)
                layouts[n.output] = (out_shape, tuple(0 if a in new else next(rest)
                                                      for a in range(len(out_shape))), item)
            elif n.kind in CONSTRUCTORS:
                ints[("fill count", n)] = int(np.prod(layouts[n.output][0], dtype=np.int64))
            elif n.kind == "prim::Constant" and n.output in prog.produced:
                data = np.ascontiguousarray(n.output.constant, np.dtype(n.output.type.dtype))
                if data.shape != layouts[n.output][0]:
                    raise Unplannable
                constants.append(data)
                ints[("constant", n)], ints[("constant bytes", n)] = data.ctypes.data, data.nbytes
            elif n in prog.kernels:
                kernel = prog.kernels[n]
                inputs = prog.kernel_inputs[n]
                plan = kernel.make_plan([layouts[inputs[i]] for i, _ in kernel.array_slots],
                                        split=False)
                if plan is None or plan.fn is None or len(plan.pointers) != 1:
                    raise Unplannable
                for v, shape in zip(n.outputs, plan.shapes):
                    if tuple(shape) != layouts[v][0]:
                        raise Unplannable
                plans[n] = plan
                ints[("plan", n)] = plan.pointers[0]
        if prog.batch is not None:
            ints[("r0",)] = 0
            ints.update({("private", v): 0 for v in prog.private})
            ints.update({("private init", p): 0 for p in prog.partials})
            for v, (shape, strides, _) in layouts.items():
                ints[("row stride", v)] = strides[0] if shape else 0
            for n in body:
                if n.kind in WRITES:
                    buf = n.inputs[0]
                    ax = int(write_parts(n)[1].constant)  # rows: the axis after a first
                    ints[("slot rows", n)] = layouts[buf][1][1 if ax == 0 else 0]  # slot axis
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
        return Variant(_ENTRY(address), np.array(int_values or [0], np.int64), free_ints,
                       np.array(dbl_values or [0.0], np.float64), free_doubles, buffers,
                       [p.params for p in plans.values()] + constants, list(int_keys), layouts,
                       plans, dict_lows=dict_lows)

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
        (address,) = jit.compile_ir(text, [name])
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
