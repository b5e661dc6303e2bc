"""Compiled fusion kernels: the in-memory cache, per-shape call plans and the call itself.

A ``Kernel`` is shared by every group with the same structure, dtypes and broadcast pattern
(which dims are 1); sizes are run-time arguments, so a new batch size reuses it.

The general call path:

1. inputs are checked to be ndarrays of the compiled dtype (converted otherwise);
2. the *plan* for these input shapes and strides is looked up (built once per layout): the output
   shape, each leaf's byte offset (chunks), row stride and column stride in elements, with
   dimensions collapsed to rows x cols where the layout allows (contiguous same-shape inputs become
   one flat row); dimensions that cannot be collapsed become a loop over 2-D slabs;
3. outputs are allocated with ``np.empty`` (a ``cat`` output has the pieces' shape with the cat
   axis scaled; each piece is a *store* at its offset, collapsed like the leaves);
4. the native function is called once per slab with the tuple of arrays: it reads each array's
   data pointer from the CPython object itself, which costs about 0.3 us for the whole call where
   ``arr.ctypes.data`` costs about 1 us per array. The layouts this relies on are checked once.

The guarded path, which a call takes when its arguments have the layout of the previous general
call (every step of a recurrent loop): the outputs are allocated for that plan's shape and one
native call receives the argument tuple as is. The native code checks each argument against the
plan's guard (exactly ``ndarray``, the same dtype object, rank, shape and strides, or for a 0-d
input the numpy scalar of its dtype, as ``np.sum`` and indexing return; Python floats for scalar
inputs) and returns 1 without writing anything on a mismatch, when the general path
runs instead; else it runs every slab. At 8x64 (the LSTM cell's tail) this halves a call: about
2.3 us instead of 4.3 us, of which about 1.2 us is the arithmetic.

Machine code is compiled once per (kernel, column-stride classes) per process, under a lock, so
concurrent first calls compile once, and is kept in the disk cache of ``fuser.cpu.jit``. Symbol
names are derived from the IR text, so the text (the cache key) is the same in every process.
The reads of a layout, the dimension collapsing and the kernel cache are ``fuser.layout``'s,
shared with the CUDA backend.
"""

from __future__ import annotations

import copy
import ctypes
import hashlib
import itertools
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from fuser import layout
from fuser.cpu import jit, parallel
from fuser.cpu.codegen import (
    ARRAY_DATA_OFFSET,
    ARRAY_DESCR_OFFSET,
    ARRAY_DIMS_OFFSET,
    ARRAY_FLAGS_OFFSET,
    ARRAY_ND_OFFSET,
    ARRAY_STRIDES_OFFSET,
    FLOAT_VALUE_OFFSET,
    OBJECT_TYPE_OFFSET,
    SCALAR_VALUE_OFFSET,
    TUPLE_ITEMS_OFFSET,
    TUPLE_SIZE_OFFSET,
    KernelBuilder,
    KernelSpec,
    analyze,
    column_class,
)
from fuser.layout import canonical_key  # noqa: F401  (part of this backend's API)
from ir.core import Graph

_CFUNC = ctypes.CFUNCTYPE(None, ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p)
"""The native entry point: (tuple of arrays, params, scalars); releases the GIL while it runs."""
_GUARDED = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.py_object, ctypes.c_void_p)
"""The guarded entry point: (argument tuple, output tuple, guard) -> 0, or 1 on a mismatch."""
_empty = np.empty
_PLACEHOLDER = "rnnscript_kernel_name"

_lock = threading.RLock()
_KERNELS: layout.KernelCache[Kernel] = layout.KernelCache(_lock)


@dataclass
class Plan:
    """How to call a kernel for one layout (shapes and strides) of its inputs."""

    shape: tuple[int, ...]
    """the iteration shape (every output's, but a cat output's)."""
    fn: Any
    """the ctypes function of the variant for these column-stride classes (None when empty)."""
    params: np.ndarray
    """one int64 row per slab: rows, cols, output offsets, leaf offsets and strides."""
    pointers: list[int]
    """the address of each row of ``params``."""
    guard: np.ndarray | None = None
    """what the guarded entry checks the arguments against, then the slab count and ``params``
    (None when the argument ranks differ from the group's types)."""
    fast: tuple | None = None
    """``Kernel._fast`` for this plan (None without a guard)."""
    classes: tuple[int, ...] = ()
    """the column-stride class of each leaf, then of each store (which compiled variant
    runs)."""
    shapes: tuple[tuple[int, ...], ...] = ()
    """the shape of each output."""
    parallel: bool = False
    """whether guarded calls run the slabs on more than one thread (``fuser.cpu.parallel``)."""
    gather: tuple[int, ...] = ()
    """the arrays (positions among the array inputs) a call copies to C order first: the plan
    is the copies' (``GATHER_MIN``)."""


GATHER_MIN = 4096
"""An array input of this many items or more, not in C order, read at a column stride the
kernel has no variant for (class 2: more than ``codegen.MAX_FIXED_STRIDE`` items, or negative)
is copied to C order before the call: loads at a run-time stride do not vectorize. A kernel
with a tanh over such a leaf ran 191 us on a (64, 512) float32 input, against 27 us on a
contiguous one (and 9.5 us for the copy) and numpy's 49 us (2-vCPU AMD EPYC, AVX-512). Smaller
strides (a gate of a packed layout, ``x.reshape(B, H, 4)[:, :, k]``) are compiled in
(``codegen.FIXED_STRIDE``) and need no copy."""


class Kernel:
    """A compiled fusion group: ``kernel(*inputs)`` returns its output(s) as new arrays."""

    def __init__(self, spec: KernelSpec, key: str):
        self.spec = spec
        self.key = key
        """the cache key: canonical structure, dtypes and broadcast pattern."""
        self.n_inputs = len(spec.graph.inputs)
        self.array_slots = layout.array_slots(spec)
        self.out_dtypes = [np.dtype(d) for d in spec.out_dtypes]
        self.variants: dict[tuple[int, ...], tuple[Any, Any]] = {}
        self.plans: dict[tuple, Plan] = {}
        self._fast: tuple | None = None
        """(guarded function, guard address, iteration shape, output dtypes, (guard, output
        shapes)) of the plan of the last general call."""
        self.work = parallel.work_per_point(spec.graph)
        """the arithmetic per point of the iteration space, in additions."""
        self.has_cat = any(st.pieces > 1 for st in spec.stores)
        """whether an output is a cat of stores (its shape is not the iteration shape)."""

    def site(self) -> Kernel:
        """This kernel for one call site in generated code: the compiled variants and plans are
        shared, the last-plan fast path is the site's own. Two groups of one structure but
        different sizes in one loop (a weight's and a bias's gradient sum) would otherwise
        replace each other's fast plan on every call and both take the general path."""
        site = copy.copy(self)
        site._fast = None
        return site

    def __repr__(self) -> str:
        return f"<fuser.cpu.Kernel {len(self.variants)} variant(s), {self.n_inputs} inputs>"

    # -- calling -------------------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        fast = self._fast
        if fast is not None:  # the last plan: the native guard checks the arguments match it
            guarded, guard, shape, dtypes, extra = fast
            n_out = len(dtypes)
            if self.has_cat:
                outs = tuple([_empty(s, d) for s, d in zip(extra[1], dtypes)])
            elif n_out == 2:
                outs = (_empty(shape, dtypes[0]), _empty(shape, dtypes[1]))
            elif n_out == 1:
                outs = (_empty(shape, dtypes[0]),)
            else:
                outs = tuple([_empty(shape, d) for d in dtypes])
            if not guarded(args, outs, guard):
                return outs if n_out > 1 else outs[0]
        return self._call_planned(args)

    def into(self, outs: tuple[Any, ...], *args: Any) -> Any:
        """Like ``kernel(*args)``, but output ``k`` is written into ``outs[k]`` when that is not
        None (every given one ends up holding its output's values); returns the outputs as
        ``kernel(*args)`` does, a given array in place of the output it holds as is.

        The guarded path writes straight into a given array that is an ndarray of exactly the
        output's shape and dtype, C-contiguous and writeable (the native code writes through its
        data pointer as it would into a fresh ``np.empty``); any other given array, and every
        call that takes the general path, gets the computed output copied into it, so results
        are the same as ``out[...] = kernel(*args)``. A given array must not overlap an input."""
        if len(outs) != len(self.out_dtypes):
            raise TypeError(f"kernel has {len(self.out_dtypes)} outputs, got {len(outs)} outs")
        fast = self._fast
        if fast is not None:
            guarded, guard, shape, dtypes, extra = fast
            shapes = extra[1] if self.has_cat else (shape,) * len(dtypes)
            arrays = tuple([o if _writable_as(o, s, d) else _empty(s, d)
                            for o, s, d in zip(outs, shapes, dtypes)])
            if not guarded(args, arrays, guard):
                _copy_into(outs, arrays)
                return arrays if len(arrays) > 1 else arrays[0]
        result = self._call_planned(args)
        arrays = result if isinstance(result, tuple) else (result,)
        _copy_into(outs, arrays)
        return result

    def _call_planned(self, args: tuple[Any, ...]) -> Any:
        """The general call: check and convert the arguments, find or make the plan."""
        if len(args) != self.n_inputs:
            raise TypeError(f"kernel takes {self.n_inputs} inputs, got {len(args)}")
        arrays = []
        for i, dtype in self.array_slots:
            a = args[i]
            if type(a) is not np.ndarray or a.dtype != dtype:
                a = np.asarray(a, dtype=dtype)
            arrays.append(a)
        key = tuple([(a.shape, a.strides) for a in arrays])
        plan = self.plans.get(key)
        if plan is None:
            arrays, plan = self._plan_for(arrays, key)
        elif plan.gather:
            arrays = [np.ascontiguousarray(a) if k in plan.gather else a
                      for k, a in enumerate(arrays)]
        if plan.fast is not None:
            self._fast = plan.fast  # calls with this layout skip the checks above from now on
        outs = [np.empty(s, d) for s, d in zip(plan.shapes, self.out_dtypes)]
        if plan.fn is not None:
            scalars = self._scalars(args)
            items = (*arrays, *outs)
            for p in plan.pointers:
                plan.fn(items, p, scalars)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _scalars(self, args: tuple[Any, ...]) -> Any:
        idx = self.spec.scalar_inputs
        if not idx:
            return None
        return (ctypes.c_double * len(idx))(*[float(args[i]) for i in idx])

    # -- plans ----------------------------------------------------------------------------------
    def _plan_for(self, arrays: list[np.ndarray], key: tuple) -> tuple[list[np.ndarray], Plan]:
        plan = self.make_plan([(a.shape, a.strides, a.itemsize) for a in arrays])
        if plan is None:  # strides that are not whole elements: compute on contiguous copies
            arrays = [np.ascontiguousarray(a) for a in arrays]
            return arrays, self._plan_for(arrays, None)[1]
        gather = self._strided(plan, arrays)
        if gather:  # see GATHER_MIN
            arrays = [np.ascontiguousarray(a) if k in gather else a
                      for k, a in enumerate(arrays)]
            plan = self.make_plan([(a.shape, a.strides, a.itemsize) for a in arrays])
            assert plan is not None
            plan.gather, plan.fast = gather, None  # (the guard would pass the strided array)
        if key is not None:
            with _lock:
                self.plans[key] = plan
        return arrays, plan

    def _strided(self, plan: Plan, arrays: list[np.ndarray]) -> tuple[int, ...]:
        """The positions of the arrays of ``GATHER_MIN`` items or more, not in C order, that a
        leaf of ``plan`` reads at a column stride other than 0 or 1 (a view the kernel makes of
        an array in C order, ``x.reshape(B, H, 4)[:, :, k]`` inside it, is not helped by a
        copy)."""
        slot = {i: k for k, (i, _) in enumerate(self.array_slots)}
        found = {slot[leaf.input] for leaf, cls in zip(self.spec.leaves, plan.classes)
                 if cls == 2 and leaf.input in slot}
        return tuple(sorted(k for k in found if arrays[k].size >= GATHER_MIN
                            and not arrays[k].flags.c_contiguous))

    def make_plan(self, layouts: list[tuple[tuple[int, ...], tuple[int, ...], int]],
                  split: bool = True) -> Plan | None:
        """The plan for inputs of these (shape, byte strides, itemsize); None when a stride is
        not a whole number of elements. ``split=False``: never a parallel plan (a native loop's
        step, which runs one slab on the thread of its rows)."""
        reads = layout.read_layout(self.spec, layouts)
        if reads is None:
            return None
        out_shape = reads.shape
        out_shapes = self._output_shapes(out_shape)
        store_strides, store_offsets = self._store_layout(out_shape, out_shapes)
        dims = layout.collapse(out_shape, reads.aligned() + store_strides)
        # the native code takes byte offsets
        offsets = [o * np.dtype(leaf.dtype).itemsize
                   for o, leaf in zip(reads.offsets, self.spec.leaves)]
        if 0 in out_shape:
            return Plan(out_shape, None, np.zeros((0, 0), np.int64), [], shapes=out_shapes)
        plan = self._plan_from_dims(out_shape, dims, offsets, store_offsets, split)
        plan.shapes = out_shapes
        self._add_guard(plan, layouts)
        return plan

    def _output_shapes(self, shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
        """Each output's shape for iteration shape ``shape``: a cat's has its axis scaled."""
        out = [shape] * len(self.out_dtypes)
        for st in self.spec.stores:
            if st.pieces > 1:
                s = list(shape)
                s[st.axis] *= st.pieces
                out[st.output] = tuple(s)
        return tuple(out)

    def _store_layout(self, shape: tuple[int, ...], out_shapes: tuple[tuple[int, ...], ...]
                      ) -> tuple[list[list[int]], list[int]]:
        """Each store's element strides over the iteration dims and its offset in elements."""
        strides, offsets = [], []
        for st in self.spec.stores:
            full = layout.c_strides(out_shapes[st.output], 1)
            strides.append(list(full))
            offsets.append(st.index * shape[st.axis] * full[st.axis] if st.pieces > 1 else 0)
        return strides, offsets

    def _add_guard(self, plan: Plan, layouts: list[tuple]) -> None:
        """Give ``plan`` the guard of the guarded entry (see ``KernelBuilder``), when the ranks
        match the group's types."""
        header: list[int] = []
        inputs = self.spec.graph.inputs
        for (i, dtype), (shape, bstrides, _) in zip(self.array_slots, layouts):
            if len(shape) != len(inputs[i].type.shape):  # type: ignore[union-attr]
                return
            header += [id(np.ndarray), id(dtype), *shape, *bstrides]
            if not shape:  # a numpy scalar of the dtype is taken too
                header.append(id(dtype.type))
        header += [id(float)] * len(self.spec.scalar_inputs)
        header.append(len(plan.params))
        plan.guard = np.concatenate([np.array(header, np.int64), plan.params.ravel()])
        guarded = self.variant(plan.classes)[1]
        if plan.parallel:
            guarded = parallel.runner(guarded, header[:-1], plan.params)
        plan.fast = (guarded, plan.guard.ctypes.data, plan.shape, tuple(self.out_dtypes),
                     (plan.guard, plan.shapes))  # keeps the guard alive

    def _plan_from_dims(self, out_shape: tuple[int, ...], dims: list[tuple[int, list[int]]],
                        offsets: list[int], store_offsets: list[int], split: bool) -> Plan:
        """``dims`` hold the strides of every leaf, then of every store."""
        n_leaf, n_store = len(self.spec.leaves), len(self.spec.stores)
        while len(dims) < 2:
            dims.insert(0, (1, [0] * (n_leaf + n_store)))
        (rows, row_st), (cols, col_st) = dims[-2], dims[-1]
        outer = dims[:-2]
        classes = tuple([column_class(s) for s in col_st[:n_leaf]] +
                        [0 if s == 0 else 1 if s == 1 else 2 for s in col_st[n_leaf:]])
        fn = self.variant(classes)[0]
        slabs = list(itertools.product(*[range(size) for size, _ in outer]))
        split = split and parallel.worth(int(np.prod(out_shape)), self.work)
        pieces = parallel.pieces(len(slabs), rows, cols) if split else 1
        params = np.zeros((len(slabs), 2 + 3 * n_store + 3 * n_leaf), np.int64)
        items = [np.dtype(leaf.dtype).itemsize for leaf in self.spec.leaves]
        items += [self.out_dtypes[st.output].itemsize for st in self.spec.stores]
        starts = offsets + [o * size for o, size in zip(store_offsets, items[n_leaf:])]
        # params order: stores first, then leaves
        order = [n_leaf + j for j in range(n_store)] + list(range(n_leaf))
        for k, index in enumerate(slabs):
            row = params[k]
            row[0], row[1] = rows, cols
            for slot, i in enumerate(order):
                extra = sum(ix * st[i] for ix, (_, st) in zip(index, outer))
                base = 2 + 3 * slot
                row[base] = starts[i] + extra * items[i]
                row[base + 1], row[base + 2] = row_st[i], col_st[i]
        if pieces > 1:
            params = parallel.split(params, pieces, items, order)
        stride = params.strides[0]
        pointers = [params.ctypes.data + k * stride for k in range(len(params))]
        return Plan(out_shape, fn, params, pointers, classes=classes, parallel=split)

    # -- machine code ---------------------------------------------------------------------------
    def variant(self, classes: tuple[int, ...]) -> tuple[Any, Any]:
        """The (plain, guarded) ctypes functions for these column-stride classes, compiled on
        first use."""
        fns = self.variants.get(classes)
        if fns is not None:
            return fns
        with _lock:
            fns = self.variants.get(classes)
            if fns is None:
                # the symbol name comes from the code itself, so the IR text (the disk cache's
                # key) is the same in every process that compiles this kernel
                text = KernelBuilder(self.spec, classes, _PLACEHOLDER).build()
                name = "fused_" + hashlib.sha256(text.encode()).hexdigest()[:20]
                text = text.replace(_PLACEHOLDER, name)
                plain, guarded = jit.compile_ir(text, [name, name + "_guarded"])
                fns = self.variants[classes] = (_CFUNC(plain), _GUARDED(guarded))
        return fns

    def llvm_ir(self, classes: tuple[int, ...] | None = None) -> str:
        """The unoptimized LLVM IR of a variant (all leaves contiguous by default)."""
        classes = classes or (1,) * (len(self.spec.leaves) + len(self.spec.stores))
        return KernelBuilder(self.spec, classes, "kernel").build()

    def assembly(self, classes: tuple[int, ...] | None = None) -> str:
        """The host assembly of a variant, to check what LLVM vectorized."""
        return jit.assembly(self.llvm_ir(classes))


def _writable_as(out: Any, shape: tuple[int, ...], dtype: np.dtype) -> bool:
    """Whether the native code can write an output of ``shape`` and ``dtype`` through ``out``'s
    data pointer (its C-order element layout is all the code assumes of a fresh array)."""
    return (type(out) is np.ndarray and out.shape == shape and out.dtype == dtype
            and out.flags.c_contiguous and out.flags.writeable)


def _copy_into(outs: tuple[Any, ...], arrays: tuple[Any, ...]) -> None:
    """Copy each computed output into its given array, unless it was computed there."""
    for out, a in zip(outs, arrays):
        if out is not None and out is not a:
            out[...] = a


# -- the cache -------------------------------------------------------------------------------------
def compile_group(graph: Graph) -> Kernel:
    """The kernel of a fusion group's subgraph, from the cache or compiled now.

    Raises ValueError when the subgraph holds an op or type the CPU fuser cannot generate, and
    RuntimeError on a Python build whose object layouts the fast call path does not know.
    """
    check_layouts()
    key = layout.canonical_key(graph)
    return _KERNELS.get(key, lambda: _make(graph, key))


def _make(graph: Graph, key: str) -> Kernel:
    kernel = Kernel(analyze(graph), key)
    kernel.make_plan(layout.contiguous_layouts(kernel.spec))  # compile the common variant
    return kernel


def cache_size() -> int:
    """How many distinct kernels this process holds."""
    return len(_KERNELS)


_layouts_ok: bool | None = None


def check_layouts() -> None:
    """Raise RuntimeError unless tuples, floats and ndarrays have the memory layout the kernels
    read."""
    global _layouts_ok
    if _layouts_ok is None:
        _layouts_ok = _probe_layouts()
    if not _layouts_ok:
        raise RuntimeError("the CPU fuser does not know this Python build's object layout")


def _probe_layouts() -> bool:
    probe = np.empty((3, 2), np.float32)[:, :1]
    value = 2.5
    items = (probe, value)
    scalar = np.float64(-1.25)

    def word(obj: Any, offset: int, ty: Any = ctypes.c_void_p) -> Any:
        return ty.from_address(id(obj) + offset).value

    dims, strides = word(probe, ARRAY_DIMS_OFFSET), word(probe, ARRAY_STRIDES_OFFSET)
    return (word(items, TUPLE_SIZE_OFFSET, ctypes.c_ssize_t) == 2
            and word(items, TUPLE_ITEMS_OFFSET) == id(probe)
            and word(items, TUPLE_ITEMS_OFFSET + 8) == id(value)
            and word(probe, ARRAY_DATA_OFFSET) == probe.ctypes.data
            and word(probe, OBJECT_TYPE_OFFSET) == id(np.ndarray)
            and word(probe, ARRAY_ND_OFFSET, ctypes.c_int) == 2
            and word(probe, ARRAY_DESCR_OFFSET) == id(probe.dtype)
            and word(probe, ARRAY_FLAGS_OFFSET, ctypes.c_int) == probe.flags.num
            and list((ctypes.c_int64 * 2).from_address(dims)) == [3, 1]
            and list((ctypes.c_int64 * 2).from_address(strides)) == [8, 4]
            and word(value, FLOAT_VALUE_OFFSET, ctypes.c_double) == 2.5
            and word(scalar, OBJECT_TYPE_OFFSET) == id(np.float64)
            and word(scalar, SCALAR_VALUE_OFFSET, ctypes.c_double) == -1.25)


_word = ctypes.c_void_p.from_address
_known: list[bool] = []


def data_address(a: np.ndarray) -> int:
    """``a.ctypes.data`` (about 1.5 us) read from the array object itself (0.2 us) where this
    Python's object layout is the one checked (``layouts_supported``); ``a`` an ``ndarray``."""
    if not _known:
        _known.append(layouts_supported())
    if _known[0] and type(a) is np.ndarray:
        return _word(id(a) + ARRAY_DATA_OFFSET).value or 0
    return a.ctypes.data


def layouts_supported() -> bool:
    try:
        check_layouts()
    except RuntimeError:
        return False
    return True
