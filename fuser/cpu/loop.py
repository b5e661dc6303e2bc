"""Native recurrent loops: a ``prim::Loop`` compiled to one LLVM function, no Python per step.

The loop of a recurrent layer is a handful of nodes run T times: a row of the input projection
(``select``), the recurrent matmul, the fused cell (a fusion group) and the store of the new
state into the output (``write_slot``). Run as generated Python, each step costs a few
microseconds of interpreter and call overhead per node, which at small sizes (B=8, H=64) is
about as much as the arithmetic. ``compile_loop(node)`` analyzes such a loop once
(``LoopProgram``: which values come from outside, what each node does, where each value lives);
calling the result runs every step in native code:

- the loop counter and the integer arithmetic on it are LLVM integers; a ``select`` and a
  ``write_slot`` index wraps like Python's and is bounds-checked (an index out of range returns
  to Python, which reruns the loop and raises numpy's ``IndexError``);
- a ``matmul`` of two 2-D arrays is a call of numpy's own CBLAS GEMM through a function pointer
  (``fuser.cpu.blas``): the same library, threads and sums as numpy's ``@``;
- a fusion group calls the element loop of the group's kernel, compiled into the same module
  (the same ``noinline`` function the kernel's own entries call, so a step gives the kernel's
  bits), with the plan the kernel makes for these layouts (``Kernel.make_plan``);
- a ``write_slot`` is a ``memmove`` of the value into its slot;
- a value made in the body lives in one of two buffers by step parity: the state carried into a
  step was made by the previous step in the other buffer, so nothing a step reads is
  overwritten while it runs. The buffers are allocated for each call (``np.empty``); the
  carried results the caller receives are the buffers of the last step.

What the native code may assume is checked for each call before it runs (otherwise the caller
runs the loop as Python, ``None`` being returned): every array is an ``ndarray`` of its static
dtype and shape, the carried initial values are C-contiguous, every ``write_slot`` target is
writeable, each kernel's plan for these layouts is one slab. The machine code depends only on
the loop's structure and on each kernel's column-stride classes: sizes, strides and addresses
are run-time arguments, so the object is shared across sizes and kept in ``fuser.cpu.jit``'s
disk cache like a kernel's.

A loop with anything else in its body (lists, ifs, other ops, a ``while``) stays Python:
``compile_loop`` raises ``LoopRefused`` saying which node, and ``explain`` reports it.
``RNNSCRIPT_NATIVE_LOOPS=0`` keeps every loop Python.
"""

from __future__ import annotations

import ctypes
import hashlib
import itertools
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llvmlite import ir

from fuser.cpu import blas, jit
from fuser.cpu.codegen import (
    ARRAY_DATA_OFFSET,
    ARRAY_DESCR_OFFSET,
    ARRAY_DIMS_OFFSET,
    ARRAY_ND_OFFSET,
    ARRAY_STRIDES_OFFSET,
    OBJECT_TYPE_OFFSET,
    PTR,
    TUPLE_ITEMS_OFFSET,
    TUPLE_SIZE_OFFSET,
    KernelBuilder,
)
from fuser.cpu.kernel import Kernel, compile_group, layouts_supported
from fuser.cpu.mathfns import F32, F64, I64
from ir.core import Graph, Node, Value
from ir.types import ListType, ScalarType, TensorType

I32 = ir.IntType(32)
I1 = ir.IntType(1)
_PLACEHOLDER = "rnnscript_loop_name"
_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_int64, ctypes.c_void_p,
                          ctypes.c_void_p, ctypes.c_void_p)
"""``int loop(tuple of arrays, trip count, int64 *ints, double *doubles, void **functions)``:
0 when every step ran, 1 when an index was out of range (nothing the caller can see was
written then but slots of ``write_slot`` targets, which the Python rerun writes again)."""

_NUMBER_OPS = {"tensor::add": ("add", "fadd"), "tensor::sub": ("sub", "fsub"),
               "tensor::mul": ("mul", "fmul"), "tensor::div": (None, "fdiv")}
"""Python number arithmetic in the body (a step index, a decay factor): LLVM's integer and IEEE
double operations give Python's results; an int result that leaves 64 bits, and ``/`` by zero,
return to Python, which computes the big int or raises."""
_WRITES = ("tensor::write_slot", "tensor::select_put_")
_STORED = ("float32", "float64", "bool")


class LoopRefused(ValueError):
    """The loop cannot run natively; the message says which node or value and why."""


def enabled() -> bool:
    """Whether loops are compiled natively (``RNNSCRIPT_NATIVE_LOOPS=0`` turns it off)."""
    return os.environ.get("RNNSCRIPT_NATIVE_LOOPS", "1").strip().lower() not in ("0", "false",
                                                                                "off")


def _where(node: Node) -> str:
    src = getattr(node, "source_range", None)
    return f"{node.kind}" + (f" ({src})" if src else "")


def _known_array(v: Value) -> TensorType | None:
    t = v.type
    if (isinstance(t, TensorType) and t.dtype in _STORED and t.shape is not None
            and None not in t.shape):
        return t
    return None


def _is_list(v: Value) -> bool:
    return isinstance(v.type, ListType)


def _role(lst: Value, body: Any) -> str:
    """What the loop body does with list ``lst`` from outside: ``read`` items by index, ``pop``
    one item from the end per step, or ``append``; a mix (which would need the list's state
    between steps) is refused."""
    kinds = [u.node.kind for u in lst.uses if u.node.owner is body]
    if kinds and all(k == "prim::ListAppend" for k in kinds):
        return "append"
    if kinds == ["prim::ListPop"]:
        return "pop"
    if kinds and all(k == "prim::ListIndex" for k in kinds):
        return "read"
    raise LoopRefused(f"list %{lst.name} is used as {', '.join(sorted(set(kinds)))} in one loop")


def _is_int(v: Value) -> bool:
    return isinstance(v.type, ScalarType) and v.type.name == "int"


def _is_number(v: Value) -> bool:
    return isinstance(v.type, ScalarType) and v.type.name in ("int", "float")


def _true(v: Value) -> bool:
    return v.is_constant and v.constant is True


# -- the analysis ----------------------------------------------------------------------------------
@dataclass
class LoopProgram:
    """What one ``prim::Loop`` does, in the terms the native code needs."""

    node: Node
    free: list[Value] = field(default_factory=list)
    """the values from outside the loop the body reads, in first-use order."""
    free_arrays: list[Value] = field(default_factory=list)
    free_scalars: list[Value] = field(default_factory=list)
    params: list[Value] = field(default_factory=list)
    """the body's carried parameters (the counter excluded)."""
    results: list[Value] = field(default_factory=list)
    """what each step carries to the next (the condition excluded)."""
    produced: list[Value] = field(default_factory=list)
    """the arrays the body makes (matmul and fusion group outputs): two buffers each."""
    kernels: dict[Node, Kernel] = field(default_factory=dict)
    """the kernel of each fusion group, and of each elementwise op outside one."""
    kernel_inputs: dict[Node, list[Value]] = field(default_factory=dict)
    """the values a kernel's inputs are, in its subgraph's order."""
    write_targets: list[int] = field(default_factory=list)
    """positions in ``free_arrays`` of arrays the body writes into."""
    written_params: list[int] = field(default_factory=list)
    """carried slots whose array the body writes into (in place, as numpy does)."""
    sources: list[tuple[str, int]] = field(default_factory=list)
    """per carried result: ("made", index in ``produced``), ("same", its own slot) or
    ("free", index in ``free``)."""
    root: dict[Value, Value] = field(default_factory=dict)
    """the array an in-place write's result is (``select_put_`` returns its target)."""
    free_lists: list[Value] = field(default_factory=list)
    """lists from outside the body reads items of (``read``), pops one item from per step
    (``pop``) or appends to (``append``); see ``roles``."""
    roles: dict[Value, str] = field(default_factory=dict)
    appends: list[tuple[Value, Value]] = field(default_factory=list)
    """(list, value) of each append, in body order."""
    sequenced: set[Value] = field(default_factory=set)
    """made values every step of which must stay readable after the loop (appended, or carried
    into a value that is): they live in one (T, ...) buffer, a slot per step, instead of two."""
    item_types: dict[Value, TensorType] = field(default_factory=dict)
    """the type of the items the body reads from each ``read`` or ``pop`` list."""
    batch: int | None = None
    """B when the steps are independent across the rows of a batch (see ``_row_split``): the
    loop can then run as several loops over disjoint row ranges at once."""
    row_inputs: dict[Node, set[int]] = field(default_factory=dict)
    """per node, the positions of its inputs it reads by batch row (its own rows only)."""
    unbound: dict[Value, tuple[Value, int]] = field(default_factory=dict)
    """lists the body makes with ``unbind(x, axis)`` (an item is ``select(x, axis, i)``)."""

    @classmethod
    def of(cls, node: Node) -> LoopProgram:
        if node.kind != "prim::Loop":
            raise LoopRefused(f"{node.kind} is not a loop")
        if not layouts_supported():
            raise LoopRefused("the CPU fuser does not know this Python build's object layout")
        if blas.gemm() is None:
            raise LoopRefused("numpy's CBLAS GEMM was not found")
        trip, cond, *carried = node.inputs
        (body,) = node.blocks
        counter, *params = body.params
        body_cond, *results = body.returns
        if not (_true(cond) and _true(body_cond)):
            raise LoopRefused("a while loop (its condition may change)")
        prog = cls(node, params=list(params), results=list(results))
        for p in params:
            if _known_array(p) is None:
                raise LoopRefused(f"carried value %{p.name} of type {p.type} is not an array of "
                                  "known dtype and shape")
        inside = set(params) | {counter}
        seen: set[Value] = set()

        def use(v: Value) -> None:
            if v in inside or v in seen:
                return
            if v.is_constant and _known_array(v) is None and not _is_list(v):
                return  # a number, bool or None: written into the code
            seen.add(v)
            prog.free.append(v)

        for n in body:
            if n.blocks:
                raise LoopRefused(f"{_where(n)}: a nested block")
            prog._check(n)
            for v in n.inputs:
                use(v)
            inside.update(n.outputs)
        for v in prog.free:
            if _known_array(v) is not None:
                prog.free_arrays.append(v)
            elif _is_number(v):
                prog.free_scalars.append(v)
            elif _is_list(v):
                prog.free_lists.append(v)
            else:
                raise LoopRefused(f"value %{v.name} of type {v.type} from outside the loop")
        for lst in prog.free_lists:
            prog.roles[lst] = _role(lst, body)
            if prog.roles[lst] != "append":  # the items read must all be of one known type
                types = {u.node.output.type for u in lst.uses if u.node.owner is body}
                if len(types) != 1:
                    raise LoopRefused(f"items of list %{lst.name} read as {len(types)} types")
                prog.item_types[lst] = types.pop()
        made = {v: k for k, v in enumerate(prog.produced)}
        free_at = {v: k for k, v in enumerate(prog.free)}
        for j, r in enumerate(results):
            r = prog.root.get(r, r)
            if r in made:
                prog.sources.append(("made", made[r]))
            elif r is params[j]:
                prog.sources.append(("same", j))
            elif r in free_at:
                prog.sources.append(("free", free_at[r]))
            else:
                raise LoopRefused(f"carried value {j} is not made in the body, unchanged or a "
                                  "value from outside")
        free_pos = {v: k for k, v in enumerate(prog.free_arrays)}
        param_pos = {v: k for k, v in enumerate(params)}
        for n in body:
            if n.kind in _WRITES:
                buf = prog.root.get(n.inputs[0], n.inputs[0])
                if buf in free_pos:
                    prog.write_targets.append(free_pos[buf])
                elif buf in param_pos:
                    prog.written_params.append(param_pos[buf])
                elif buf not in made:
                    raise LoopRefused(f"{_where(n)}: writes into a view")
        for lst, v in prog.appends:
            r = prog.root.get(v, v)
            if r in made:
                prog.sequenced.add(r)
            elif r in param_pos:
                how, k = prog.sources[param_pos[r]]
                if how == "made":
                    prog.sequenced.add(prog.produced[k])
            elif r not in free_pos:
                raise LoopRefused(f"appends %{v.name}, a view or a list item, to %{lst.name}")
        prog.batch = _row_split(prog)
        return prog

    def _check(self, n: Node) -> None:
        kind = n.kind
        if kind == "prim::Constant":
            if not (_is_number(n.output) or n.output.type == ScalarType("bool")):
                raise LoopRefused(f"{_where(n)}: a constant of type {n.output.type}")
            return
        if kind in _NUMBER_OPS and all(_is_number(v) for v in (*n.inputs, *n.outputs)):
            if _NUMBER_OPS[kind][0] is None and _is_int(n.output):
                raise LoopRefused(f"{_where(n)}: an int {kind}")
            return
        if kind == "tensor::unbind":
            x, axis = n.inputs
            if _known_array(x) is None or not axis.is_constant:
                raise LoopRefused(f"{_where(n)}: not an unbind of a known array")
            if any(u.node.kind != "prim::ListIndex" for u in n.output.uses):
                raise LoopRefused(f"{_where(n)}: a list of slices used other than by index")
            self.unbound[n.output] = (x, int(axis.constant))
            return
        if kind in ("prim::ListIndex", "prim::ListPop"):
            lst, idx = n.inputs
            if lst not in self.unbound and (not _is_list(lst) or lst.node.owner is n.owner):
                raise LoopRefused(f"{_where(n)}: an item of a list of unknown arrays")
            if not _is_int(idx) or _known_array(n.output) is None:
                raise LoopRefused(f"{_where(n)}: an item of unknown type")
            if kind == "prim::ListPop" and not (idx.is_constant and idx.constant == -1):
                raise LoopRefused(f"{_where(n)}: a pop from elsewhere than the end")
            return
        if kind == "prim::ListAppend":
            lst, value = n.inputs
            if _known_array(value) is None or lst.node.owner is n.owner:
                raise LoopRefused(f"{_where(n)}: an append of an array of unknown shape")
            self.appends.append((lst, value))
            return
        if kind == "tensor::select":
            x, axis, idx = n.inputs
            if _known_array(x) is None or not axis.is_constant or not _is_int(idx):
                raise LoopRefused(f"{_where(n)}: not a select of a known array by an int")
            return
        if kind == "tensor::matmul":
            a, b = n.inputs
            ta, tb, to = _known_array(a), _known_array(b), _known_array(n.output)
            if (ta is None or tb is None or to is None or len(ta.shape) != 2 or len(tb.shape) != 2
                    or not ta.dtype == tb.dtype == to.dtype
                    or ta.dtype not in ("float32", "float64")):
                raise LoopRefused(f"{_where(n)}: not a matmul of two float matrices of one dtype")
            self.produced.append(n.output)
            return
        if kind == "prim::FusionGroup":
            try:
                kernel = compile_group(n.subgraph)
            except (ValueError, RuntimeError) as e:
                raise LoopRefused(f"{_where(n)}: no CPU kernel ({e})") from None
            for v in n.outputs:
                if _known_array(v) is None:
                    raise LoopRefused(f"{_where(n)}: output %{v.name} of unknown shape")
            self._kernel(n, kernel, list(n.inputs))
            return
        if kind in _WRITES:
            if kind == "tensor::select_put_":
                buf, value, axis, idx = n.inputs
                self.root[n.output] = self.root.get(buf, buf)
            else:
                buf, axis, idx, value = n.inputs
            tb, tv = _known_array(buf), _known_array(value)
            if (tb is None or tv is None or not axis.is_constant or not _is_int(idx)
                    or tb.dtype != tv.dtype
                    or tuple(tb.shape[:axis.constant]) != (1,) * axis.constant
                    or tuple(tb.shape[axis.constant + 1:]) != tuple(tv.shape)):
                raise LoopRefused(f"{_where(n)}: a slot write that is not a plain copy")
            return
        if kind.startswith("tensor::") and all(_known_array(v) for v in n.outputs):
            single = _single_op_group(n)  # an elementwise op no group took: a kernel of its own
            if single is not None:
                graph, inputs = single
                try:
                    kernel = compile_group(graph)
                except (ValueError, RuntimeError):
                    pass
                else:
                    self._kernel(n, kernel, inputs)
                    return
        raise LoopRefused(f"{_where(n)}: no native code for {kind}")

    def _kernel(self, n: Node, kernel: Kernel, inputs: list[Value]) -> None:
        for i in kernel.spec.scalar_inputs:
            if not (_is_number(inputs[i]) or inputs[i].type == ScalarType("bool")):
                raise LoopRefused(f"{_where(n)}: scalar input {i} is not a number")
        self.kernels[n] = kernel
        self.kernel_inputs[n] = inputs
        self.produced.extend(n.outputs)


def _row_split(prog: LoopProgram) -> int | None:
    """The batch size B when every step is independent across batch rows, else None.

    Every carried array is (B, ...); every array a step makes is (B, ...) with row r computed
    from row r of the (B, ...) arrays it reads (fusion groups: a leaf of the output's rank and
    B rows; matmuls: the left operand, the right one read whole) and from arrays read whole
    that no step writes. Then k loops over disjoint row ranges compute what one loop computes,
    each writing only its rows (of the made values, and of the slots it stores into)."""
    params = prog.params
    if not params:
        return None
    batch = _known_array(params[0]).shape[0]  # type: ignore[union-attr]
    if batch is None or batch < 2:
        return None

    def rows(v: Value) -> bool:
        t = _known_array(v)
        return t is not None and len(t.shape) >= 1 and t.shape[0] == batch

    if not all(rows(p) for p in params):
        return None
    split: set[Value] = set(params) | set(prog.produced)
    """values a row range's loop holds only its own rows of."""
    (body,) = prog.node.blocks
    for n in body:  # what the steps write rows of, wherever in the step they write it
        if n.kind in _WRITES:
            split.add(prog.root.get(n.inputs[0], n.inputs[0]))
            if n.kind == "tensor::select_put_":
                split.add(n.output)
    for n in body:
        kind = n.kind
        uses: set[int] = set()
        if n in prog.kernels:
            inputs = prog.kernel_inputs[n]
            outs = [_known_array(v) for v in n.outputs]
            rank = len(outs[0].shape)  # type: ignore[union-attr]
            if not all(rows(v) and len(t.shape) == rank for v, t in zip(n.outputs, outs)):
                return None
            for i in prog.kernels[n].spec.array_inputs:
                v = inputs[i]
                t = _known_array(v)
                if t is not None and len(t.shape) == rank and t.shape[0] == batch:
                    uses.add(i)
                elif v in split:
                    return None  # a made value read whole (broadcast)
        elif kind == "tensor::matmul":
            a, w = n.inputs
            if not rows(a) or w in split:
                return None
            uses.add(0)
        elif kind in _WRITES:
            buf, value = ((n.inputs[0], n.inputs[1]) if kind == "tensor::select_put_"
                          else (n.inputs[0], n.inputs[3]))
            axis = n.inputs[2] if kind == "tensor::select_put_" else n.inputs[1]
            t = _known_array(buf)
            ax = int(axis.constant)
            if not rows(value) or t is None or ax != 0 or len(t.shape) < 2 or t.shape[1] != batch:
                return None
        elif kind == "tensor::select" or kind == "tensor::unbind":
            if n.inputs[0] in split:
                return None  # a view of rows written by other row ranges
        elif kind in ("prim::ListIndex", "prim::ListPop", "prim::ListAppend",
                      "prim::Constant") or kind in _NUMBER_OPS:
            pass
        else:
            return None
        prog.row_inputs[n] = uses
    return batch


def _single_op_group(n: Node) -> tuple[Graph, list[Value]] | None:
    """A fusion subgraph of the one elementwise node ``n`` and the values its inputs are; None
    when the CPU backend has no rule for it."""
    from fuser.cpu import BACKEND
    if not BACKEND.can_generate(n):
        return None
    graph = Graph(name="single")
    inputs, args = [], []
    for v in n.inputs:
        if v.is_constant:
            args.append(graph.constant(v.constant, v.type))
        else:
            args.append(graph.add_input(v.type))
            inputs.append(v)
    node = graph.insert(n.kind, args, [v.type for v in n.outputs], dict(n.attrs))
    for out in node.outputs:
        graph.add_output(out)
    return graph, inputs


# -- layouts ---------------------------------------------------------------------------------------
Layout = tuple[tuple[int, ...], tuple[int, ...], int]
"""(shape, byte strides, itemsize)"""


def _c_layout(t: TensorType) -> Layout:
    item = np.dtype(t.dtype).itemsize
    shape = tuple(int(d) for d in t.shape)  # type: ignore[union-attr]
    strides, acc = [], item
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return shape, tuple(reversed(strides)), item


def _gemm_operand(lay: Layout) -> tuple[int, int] | None:
    """(transposed?, leading dimension) of a matrix for row-major CBLAS, or None."""
    (rows, cols), (rs, cs), item = lay
    if rs % item or cs % item:
        return None
    rs, cs = rs // item, cs // item
    if cols <= 1 or cs == 1:
        ld = rs if rows > 1 else max(cols, 1)
        if ld >= max(cols, 1):
            return 0, ld
    if rows <= 1 or rs == 1:
        ld = cs if cols > 1 else max(rows, 1)
        if ld >= max(rows, 1):
            return 1, ld
    return None


class _Unplannable(Exception):
    """These layouts cannot run natively (the loop runs as Python for them)."""


# -- the machine code ------------------------------------------------------------------------------
class _Builder:
    """The LLVM module of one loop for one set of layouts (kernel classes and gemm flags)."""

    def __init__(self, prog: LoopProgram, layouts: dict[Value, Layout], int_bits: int):
        self.prog = prog
        self.layouts = layouts
        self.int_bits = int_bits
        self.module = ir.Module(name="loop")
        self.ints: list[Any] = []
        """what each entry of the ints array holds: a key ``Variant`` fills in."""
        self.doubles: list[Any] = []
        self.plans: dict[Node, Any] = {}

    def int_slot(self, key: Any) -> Any:
        self.ints.append(key)
        ptr = self.b.gep(self.ints_arg, [ir.Constant(I64, len(self.ints) - 1)], source_etype=I64)
        return self.b.load(ptr, typ=I64)

    def double_slot(self, key: Any) -> Any:
        self.doubles.append(key)
        ptr = self.b.gep(self.dbl_arg, [ir.Constant(I64, len(self.doubles) - 1)],
                         source_etype=F64)
        return self.b.load(ptr, typ=F64)

    def build(self) -> str:
        prog = self.prog
        fn = ir.Function(self.module, ir.FunctionType(I32, [PTR, I64, PTR, PTR, PTR]),
                         _PLACEHOLDER)
        arrays, trip, self.ints_arg, self.dbl_arg, fns = fn.args
        self.fn = fn
        entry = fn.append_basic_block("entry")
        b = self.b = ir.IRBuilder(entry)
        self.fail = fn.append_basic_block("fail")
        ir.IRBuilder(self.fail).ret(ir.Constant(I32, 1))

        def data(slot: int):
            item = b.gep(arrays, [ir.Constant(I64, TUPLE_ITEMS_OFFSET + 8 * slot)],
                         source_etype=ir.IntType(8))
            obj = b.load(item, typ=PTR)
            return b.load(b.gep(obj, [ir.Constant(I64, ARRAY_DATA_OFFSET)],
                                source_etype=ir.IntType(8)), typ=PTR)

        slot = 0
        self.ptr: dict[Value, Any] = {}
        for v in prog.free_arrays:
            self.ptr[v] = data(slot)
            slot += 1
        inits = []
        for _ in prog.params:
            inits.append(data(slot))
            slot += 1
        self.bufs: dict[Value, tuple[Any, Any]] = {}
        self.seqs: dict[Value, Any] = {}
        for v in prog.produced:
            if v in prog.sequenced:
                self.seqs[v] = data(slot)
                slot += 1
            else:
                self.bufs[v] = (data(slot), data(slot + 1))
                slot += 2
        self.sizes: dict[Value, Any] = {}
        self.items: dict[Value, Any] = {}
        for lst in prog.free_lists:
            if prog.roles[lst] != "append":
                tup = b.load(b.gep(arrays, [ir.Constant(I64, TUPLE_ITEMS_OFFSET + 8 * slot)],
                                   source_etype=ir.IntType(8)), typ=PTR)
                self.sizes[lst] = b.load(b.gep(tup, [ir.Constant(I64, TUPLE_SIZE_OFFSET)],
                                               source_etype=ir.IntType(8)), typ=I64)
                self.items[lst] = b.gep(tup, [ir.Constant(I64, TUPLE_ITEMS_OFFSET)],
                                        source_etype=ir.IntType(8))
                slot += 1
        self.num_val: dict[Value, Any] = {}
        gemm_ty = self._gemm_type
        self.sgemm = b.load(b.gep(fns, [ir.Constant(I64, 0)], source_etype=PTR),
                            typ=ir.PointerType(gemm_ty(F32)))
        self.dgemm = b.load(b.gep(fns, [ir.Constant(I64, 1)], source_etype=PTR),
                            typ=ir.PointerType(gemm_ty(F64)))
        # the loop-invariant sizes, strides and plans: loaded once, before the loop
        self.prepared: dict[Any, Any] = {}
        self.r0 = self.int_slot(("r0",)) if prog.batch is not None else None
        self._prepare()
        for lst in self.items:
            self._check_items(lst)
            if prog.roles[lst] == "pop":  # one item per step
                self._require(b.icmp_signed(">=", self.sizes[lst], trip))
        (body,) = prog.node.blocks
        counter = body.params[0]
        loop = fn.append_basic_block("step")
        done = fn.append_basic_block("done")
        before = b.block
        self.entry_end = b.cbranch(b.icmp_signed(">", trip, ir.Constant(I64, 0)), loop, done)
        b.position_at_end(loop)
        i = self.i = b.phi(I64, "i")
        i.add_incoming(ir.Constant(I64, 0), before)
        phis = []
        for p, init in zip(prog.params, inits):
            phi = b.phi(PTR, p.name or "carried")
            phi.add_incoming(init, before)
            self.ptr[p] = phi
            phis.append(phi)
        self.num_val[counter] = i
        self.odd = b.trunc(i, I1)
        for n in body:
            self._step(n)
        nxt = b.add(i, ir.Constant(I64, 1))
        i.add_incoming(nxt, b.block)
        for phi, r in zip(phis, prog.results):
            phi.add_incoming(self.ptr[r], b.block)
        b.cbranch(b.icmp_signed("<", nxt, trip), loop, done)
        b.position_at_end(done)
        b.ret(ir.Constant(I32, 0))
        return str(self.module)

    def _gemm_type(self, real: Any) -> ir.FunctionType:
        n = ir.IntType(self.int_bits)
        return ir.FunctionType(ir.VoidType(), [I32, I32, I32, n, n, n, real, PTR, n, PTR, n,
                                               real, PTR, n])

    # -- before the loop
    def _prepare(self) -> None:
        """Load every loop-invariant size, stride and plan pointer in the entry block."""
        (body,) = self.prog.node.blocks
        b = self.b
        for v in self.seqs:
            self.prepared[("seq", v)] = self.int_slot(("seq", v))
        for n in body:
            if n.kind == "tensor::select" or (n.kind == "prim::ListIndex"
                                              and n.inputs[0] in self.prog.unbound):
                self.prepared[n] = (self.int_slot(("dim", n)), self.int_slot(("stride", n)))
            elif n.kind in _WRITES:
                self.prepared[n] = (self.int_slot(("dim", n)), self.int_slot(("stride", n)),
                                    self.int_slot(("bytes", n)))
                if self.r0 is not None:
                    self.prepared[("slot rows", n)] = self.int_slot(("slot rows", n))
            elif n.kind == "tensor::matmul":
                self.prepared[n] = [self.int_slot(("gemm", n, k)) for k in range(8)]
            elif n in self.prog.kernels:
                self.prepared[n] = b.inttoptr(self.int_slot(("plan", n)), PTR)
        for v in self.prog.free_scalars:
            if _is_int(v):
                self.num_val[v] = self.int_slot(("free", v))
            else:
                self.num_val[v] = self.double_slot(("free", v))

    # -- one node of the body
    def _num(self, v: Value) -> Any:
        """The LLVM value of a Python number: an i64 for an int, a double for a float."""
        if v.is_constant:
            c = v.constant
            if isinstance(c, bool) or not isinstance(c, (int, float)):
                raise LoopRefused(f"the constant {c!r} is not a number")
            return ir.Constant(I64, c) if isinstance(c, int) else ir.Constant(F64, float(c))
        return self.num_val[v]

    def _double(self, v: Value) -> Any:
        x = self._num(v) if v.type != ScalarType("bool") else None
        if x is None:  # a bool scalar: 1.0 or 0.0, as float(True) is
            c = v.constant if v.is_constant else None
            if c is None:
                raise LoopRefused(f"a bool value %{v.name} in a kernel")
            return ir.Constant(F64, float(c))
        return self.b.sitofp(x, F64) if x.type == I64 else x

    def _index(self, idx: Any, dim: Any) -> Any:
        """``idx`` wrapped like Python's (negative from the end) and checked against ``dim``."""
        b = self.b
        zero = ir.Constant(I64, 0)
        idx = b.select(b.icmp_signed("<", idx, zero), b.add(idx, dim), idx)
        ok = b.and_(b.icmp_signed(">=", idx, zero), b.icmp_signed("<", idx, dim))
        self._require(ok)
        return idx

    def _require(self, ok: Any) -> None:
        """Go on when ``ok``, else return 1 (the caller reruns the loop as Python)."""
        cont = self.fn.append_basic_block("ok")
        self.b.cbranch(ok, cont, self.fail)
        self.b.position_at_end(cont)

    def _rows(self, v: Value) -> Any:
        """The pointer to this row range's first row of (B, ...) value ``v`` (``v`` itself
        when the loop runs over all rows at once)."""
        if self.r0 is None:
            return self.ptr[v]
        key = ("row stride", v)
        stride = self.prepared.get(key)
        if stride is None:  # loaded in the entry block, where every step can see it
            here = self.b.block
            self.b.position_before(self.entry_end)
            stride = self.prepared[key] = self.b.mul(self.r0, self.int_slot(key))
            self.b.position_at_end(here)
        return self.b.gep(self.ptr[v], [stride], source_etype=ir.IntType(8))

    def _buffer(self, v: Value) -> Any:
        """Where value ``v`` made by this step goes: its slot of this step, or the buffer of
        this step's parity."""
        if v in self.seqs:
            return self.b.gep(self.seqs[v], [self.b.mul(self.i, self.prepared[("seq", v)])],
                              source_etype=ir.IntType(8))
        even, odd = self.bufs[v]
        return self.b.select(self.odd, odd, even)

    def _check_items(self, lst: Value) -> None:
        """Before the loop: return 1 unless every item of ``lst`` (a tuple of its items) is an
        ndarray of the list's dtype and shape, C-contiguous (what the steps assume)."""
        b, fn = self.b, self.fn
        rank = len(self.prog.item_types[lst].shape)  # type: ignore[arg-type]
        kind = self.int_slot(("ndarray",))
        descr = self.int_slot(("descr", lst))
        dims = [self.int_slot(("item dim", lst, d)) for d in range(rank)]
        strides = [self.int_slot(("item stride", lst, d)) for d in range(rank)]
        n = self.sizes[lst]
        start = b.block
        head, body, done = (fn.append_basic_block(x) for x in ("items", "item", "items_ok"))
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I64, "k")
        k.add_incoming(ir.Constant(I64, 0), start)
        b.cbranch(b.icmp_signed("<", k, n), body, done)
        b.position_at_end(body)
        obj = b.load(b.gep(self.items[lst], [k], source_etype=PTR), typ=PTR)

        def at(ptr: Any, offset: int, ty: Any = PTR) -> Any:
            return b.load(b.gep(ptr, [ir.Constant(I64, offset)], source_etype=ir.IntType(8)),
                          typ=ty)

        self._require(b.icmp_unsigned("==", b.ptrtoint(at(obj, OBJECT_TYPE_OFFSET), I64), kind))
        same = b.and_(b.icmp_unsigned("==", b.ptrtoint(at(obj, ARRAY_DESCR_OFFSET), I64), descr),
                      b.icmp_signed("==", at(obj, ARRAY_ND_OFFSET, I32), ir.Constant(I32, rank)))
        self._require(same)
        dim_ptr, stride_ptr = at(obj, ARRAY_DIMS_OFFSET), at(obj, ARRAY_STRIDES_OFFSET)
        same = ir.Constant(I1, 1)
        for d in range(rank):
            got_d = b.load(b.gep(dim_ptr, [ir.Constant(I64, d)], source_etype=I64), typ=I64)
            got_s = b.load(b.gep(stride_ptr, [ir.Constant(I64, d)], source_etype=I64), typ=I64)
            same = b.and_(same, b.and_(b.icmp_signed("==", got_d, dims[d]),
                                       b.icmp_signed("==", got_s, strides[d])))
        self._require(same)
        k.add_incoming(b.add(k, ir.Constant(I64, 1)), b.block)
        b.branch(head)
        b.position_at_end(done)

    def _item(self, lst: Value, at: Any) -> Any:
        """The data pointer of item ``at`` (in range) of list ``lst``."""
        b = self.b
        obj = b.load(b.gep(self.items[lst], [at], source_etype=PTR), typ=PTR)
        return b.load(b.gep(obj, [ir.Constant(I64, ARRAY_DATA_OFFSET)],
                            source_etype=ir.IntType(8)), typ=PTR)

    def _step(self, n: Node) -> None:
        b = self.b
        kind = n.kind
        if n in self.prog.kernels:
            kernel = self.prog.kernels[n]
            plan = self.plans[n]
            params = self.prepared[n]
            kb = KernelBuilder(kernel.spec, plan.classes, f"group{len(self.module.globals)}")
            kb.module = self.module
            body = kb._body_function()
            inputs = self.prog.kernel_inputs[n]
            by_row = self.prog.row_inputs.get(n, set())
            datas = [self._rows(inputs[i]) if i in by_row else self.ptr[inputs[i]]
                     for i in kernel.spec.array_inputs]
            scalars = [self._double(inputs[i]) for i in kernel.spec.scalar_inputs]
            outs = []
            for v in n.outputs:
                self.ptr[v] = self._buffer(v)
                outs.append(self._rows(v))
            kb._call_body(b, body, params, datas, outs, scalars)
            return
        if kind == "prim::Constant":
            return
        if kind in _NUMBER_OPS:
            x, y = (self._num(v) for v in n.inputs)
            int_op, float_op = _NUMBER_OPS[kind]
            if _is_int(n.output):  # Python's ints do not wrap: an overflow returns to Python
                pair = getattr(b, f"s{int_op}_with_overflow")(x, y)
                self._require(b.not_(b.extract_value(pair, 1)))
                self.num_val[n.output] = b.extract_value(pair, 0)
                return
            x = b.sitofp(x, F64) if x.type == I64 else x
            y = b.sitofp(y, F64) if y.type == I64 else y
            if float_op == "fdiv":
                self._require(b.fcmp_unordered("!=", y, ir.Constant(F64, 0.0)))
            self.num_val[n.output] = getattr(b, float_op)(x, y)
            return
        if kind in ("tensor::unbind", "prim::ListAppend"):
            return  # items are read as selects; appended values are kept in their storage
        if kind == "prim::ListIndex" and n.inputs[0] in self.prog.unbound:
            lst, idx = n.inputs
            x, _ = self.prog.unbound[lst]
            dim, stride = self.prepared[n]
            at = self._index(self._num(idx), dim)
            self.ptr[n.output] = b.gep(self.ptr[x], [b.mul(at, stride)],
                                       source_etype=ir.IntType(8))
            return
        if kind == "prim::ListIndex":
            lst, idx = n.inputs
            self.ptr[n.output] = self._item(lst, self._index(self._num(idx), self.sizes[lst]))
            return
        if kind == "prim::ListPop":
            lst, _ = n.inputs
            last = b.sub(b.sub(self.sizes[lst], ir.Constant(I64, 1)), self.i)
            self.ptr[n.output] = self._item(lst, last)
            return
        if kind == "tensor::select":
            x, _, idx = n.inputs
            dim, stride = self.prepared[n]
            at = self._index(self._num(idx), dim)
            self.ptr[n.output] = b.gep(self.ptr[x], [b.mul(at, stride)],
                                       source_etype=ir.IntType(8))
            return
        if kind in _WRITES:
            if kind == "tensor::select_put_":
                buf, value, _, idx = n.inputs
                self.ptr[n.output] = self.ptr[buf]
            else:
                buf, _, idx, value = n.inputs
            dim, stride, nbytes = self.prepared[n]
            at = self._index(self._num(idx), dim)
            dst = b.gep(self.ptr[buf], [b.mul(at, stride)], source_etype=ir.IntType(8))
            src = self.ptr[value]
            if self.r0 is not None:  # this range's rows of the slot
                dst = b.gep(dst, [b.mul(self.r0, self.prepared[("slot rows", n)])],
                            source_etype=ir.IntType(8))
                src = self._rows(value)
            move = self.module.declare_intrinsic("llvm.memmove", [PTR, PTR, I64])
            b.call(move, [dst, src, nbytes, ir.Constant(I1, 0)])
            return
        if kind == "tensor::matmul":
            a, bm = n.inputs
            self.ptr[n.output] = self._buffer(n.output)
            out = self._rows(n.output)
            m, nn, k, ta, tb, lda, ldb, ldc = self.prepared[n]
            double = n.output.type.dtype == "float64"  # type: ignore[union-attr]
            real = F64 if double else F32
            width = ir.IntType(self.int_bits)

            def size(x: Any) -> Any:
                return x if self.int_bits == 64 else b.trunc(x, width)

            one, zero = ir.Constant(real, 1.0), ir.Constant(real, 0.0)
            b.call(self.dgemm if double else self.sgemm,
                   [ir.Constant(I32, blas.CBLAS_ROW_MAJOR), b.trunc(ta, I32), b.trunc(tb, I32),
                    size(m), size(nn), size(k), one, self._rows(a), size(lda), self.ptr[bm],
                    size(ldb), zero, out, size(ldc)])
            return
        raise LoopRefused(f"{_where(n)}: no native code for {kind}")  # _check refused it before


# -- the compiled loop -----------------------------------------------------------------------------
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
    """what each entry of ``ints`` holds (``_Builder.ints``)."""
    layouts: dict[Value, Layout] = field(default_factory=dict)
    plans: dict[Node, Any] = field(default_factory=dict)
    splits: dict[int, list[np.ndarray] | None] = field(default_factory=dict)
    """per count of row ranges: the ints of each range (None: these layouts do not split)."""


class NativeLoop:
    """A loop compiled natively: ``loop(trip, free values, initial carried values)`` returns the
    carried results, or None when these arguments cannot run natively (the caller then runs the
    loop as Python)."""

    def __init__(self, prog: LoopProgram):
        self.prog = prog
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
        self.changed_lists = any(r != "read" for r in self.list_roles)
        self.buffer_at: list[int] = []
        """per made value, the index of its first buffer in a call's buffer list."""
        at = 0
        for v in prog.produced:
            self.buffer_at.append(at)
            at += 1 if v in prog.sequenced else 2
        gemm = blas.gemm()
        assert gemm is not None
        self.gemm = gemm
        self.fns = np.array([gemm.sgemm, gemm.dgemm], np.uint64)
        self.calls = 0
        """how many calls ran natively (for tests and ``explain``)."""

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
        if any(type(lst) is not list for lst in lists):
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
        key = tuple([a.strides for a in arrays])
        variant = self.variants.get(key, False)
        if variant is False:
            with self.lock:
                variant = self.variants.get(key, False)
                if variant is False:
                    variant = self.variants[key] = self._variant(arrays)
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
        bufs = []
        for shape, dtype, sequenced in variant.buffers:
            if sequenced:
                bufs.append(np.empty((trip, *shape), dtype))
            else:
                bufs.append(np.empty(shape, dtype))
                bufs.append(np.empty(shape, dtype))
        tuples = [tuple(lst) for lst, role in zip(lists, self.list_roles) if role != "append"]
        items = tuple([*arrays, *inits, *bufs, *tuples])
        ranges = self._ranges(variant)
        if ranges is None:
            status = variant.fn(items, trip, ints.ctypes.data, doubles.ctypes.data,
                                self.fns.ctypes.data)
        else:
            if variant.free_ints:
                ranges = [r.copy() for r in ranges]
                for r in ranges:
                    for at, _ in variant.free_ints:
                        r[at] = ints[at]
            status = _run_ranges(variant.fn, items, trip, ranges, doubles, self.fns)
        if status != 0:
            return None
        self.calls += 1
        last = (trip - 1) & 1

        def final(k: int) -> Any:
            at = self.buffer_at[k]
            return bufs[at][trip - 1] if prog.produced[k] in prog.sequenced else bufs[at + last]

        for lst, role in zip(lists, self.list_roles):
            if role == "pop":
                del lst[len(lst) - trip:]
        if prog.appends:
            self._append(trip, free, inits, bufs, lists)
        return tuple([final(k) if how == "made" else inits[k] if how == "same" else free[k]
                      for how, k in prog.sources])

    def _append(self, trip: int, free: tuple, inits: tuple, bufs: list, lists: list) -> None:
        """Append what each step appended, in step order, to the lists."""
        prog = self.prog
        made = {v: k for k, v in enumerate(prog.produced)}
        free_at = {v: k for k, v in enumerate(prog.free)}
        params = {v: j for j, v in enumerate(prog.params)}
        by_list: dict[int, list[list[Any]]] = {}
        list_of = {v: lists[k] for k, v in enumerate(prog.free_lists)}
        for lst, v in prog.appends:
            r = prog.root.get(v, v)
            if r in made:
                steps = list(bufs[self.buffer_at[made[r]]])
            elif r in params:
                j = params[r]
                how, k = prog.sources[j]
                if how == "made":
                    steps = [inits[j], *bufs[self.buffer_at[k]][:trip - 1]]
                elif how == "same":
                    steps = [inits[j]] * trip
                else:
                    steps = [inits[j]] + [free[k]] * (trip - 1)
            else:
                steps = [free[free_at[r]]] * trip
            by_list.setdefault(id(list_of[lst]), [list_of[lst]]).append(steps)
        for target, *sequences in by_list.values():
            if len(sequences) == 1:
                target.extend(sequences[0])
            else:
                target.extend(itertools.chain.from_iterable(zip(*sequences)))

    # -- variants
    def _variant(self, arrays: list[np.ndarray]) -> Variant | None:
        try:
            return self._make_variant(arrays)
        except _Unplannable:
            return None

    def _make_variant(self, arrays: list[np.ndarray]) -> Variant:
        prog = self.prog
        layouts: dict[Value, Layout] = {}
        for v, a in zip(prog.free_arrays, arrays):
            layouts[v] = (a.shape, a.strides, a.itemsize)
        for p in prog.params:
            layouts[p] = _c_layout(p.type)  # type: ignore[arg-type]
        for v in prog.produced:
            layouts[v] = _c_layout(v.type)  # type: ignore[arg-type]
        ints: dict[Any, int] = {}
        plans: dict[Node, Any] = {}
        (body,) = prog.node.blocks
        for v in prog.sequenced:
            shape, _, item = layouts[v]
            ints[("seq", v)] = int(np.prod(shape, dtype=np.int64)) * item
        ints[("ndarray",)] = id(np.ndarray)
        for lst in prog.free_lists:
            if prog.roles[lst] == "append":
                continue
            e = prog.item_types[lst]
            shape, strides, item = _c_layout(e)  # type: ignore[arg-type]
            ints[("descr", lst)] = id(np.dtype(e.dtype))  # type: ignore[union-attr]
            for d, (size, stride) in enumerate(zip(shape, strides)):
                ints[("item dim", lst, d)], ints[("item stride", lst, d)] = size, stride
        for n in body:
            if n.kind in ("prim::ListIndex", "prim::ListPop"):
                lst = n.inputs[0]
                if lst not in prog.unbound:
                    layouts[n.output] = _c_layout(prog.item_types[lst])
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
                    raise _Unplannable
                layouts[n.output] = (shape[:ax] + shape[ax + 1:], strides[:ax] + strides[ax + 1:],
                                     item)
                ints[("dim", n)], ints[("stride", n)] = shape[ax], strides[ax]
            elif n.kind in _WRITES:
                if n.kind == "tensor::select_put_":
                    buf, value, axis, _ = n.inputs
                    layouts[n.output] = layouts[buf]
                else:
                    buf, axis, _, value = n.inputs
                shape, strides, item = layouts[buf]
                ax = int(axis.constant)
                slot_shape, slot_strides = shape[ax + 1:], strides[ax + 1:]
                want = _c_layout(value.type)  # type: ignore[arg-type]
                if (slot_shape != want[0] or not _dense(slot_shape, slot_strides, item)
                        or not _dense(*layouts[value])):
                    raise _Unplannable
                ints[("dim", n)], ints[("stride", n)] = shape[ax], strides[ax]
                ints[("bytes", n)] = int(np.prod(slot_shape, dtype=np.int64)) * item
            elif n.kind == "tensor::matmul":
                a, bm = n.inputs
                la, lb = layouts[a], layouts[bm]
                ga, gb = _gemm_operand(la), _gemm_operand(lb)
                if ga is None or gb is None:
                    raise _Unplannable
                (m, k), (_, nn) = la[0], lb[0]
                flags = [blas.CBLAS_TRANS if g[0] else blas.CBLAS_NO_TRANS for g in (ga, gb)]
                for j, value in enumerate((m, nn, k, *flags, ga[1], gb[1], max(nn, 1))):
                    ints[("gemm", n, j)] = value
            elif n in prog.kernels:
                kernel = prog.kernels[n]
                inputs = prog.kernel_inputs[n]
                plan = kernel.make_plan([layouts[inputs[i]] for i, _ in kernel.array_slots])
                if plan is None or plan.fn is None or len(plan.pointers) != 1:
                    raise _Unplannable
                for v, shape in zip(n.outputs, plan.shapes):
                    if tuple(shape) != layouts[v][0]:
                        raise _Unplannable
                plans[n] = plan
                ints[("plan", n)] = plan.pointers[0]
        if prog.batch is not None:
            ints[("r0",)] = 0
            for v, (shape, strides, _) in layouts.items():
                ints[("row stride", v)] = strides[0] if shape else 0
            for n in body:
                if n.kind in _WRITES:
                    buf = n.inputs[0]
                    ints[("slot rows", n)] = layouts[buf][1][int(_write_axis(n).constant) + 1]
        builder = _Builder(prog, layouts, self.gemm.int_bits)
        builder.plans = plans
        text = builder.build()
        name = "loop_" + hashlib.sha256(text.encode()).hexdigest()[:20]
        text = text.replace(_PLACEHOLDER, name)
        (address,) = jit.compile_ir(text, [name])
        free_at = {v: k for k, v in enumerate(prog.free)}
        free_ints, int_values = [], []
        for at, key in enumerate(builder.ints):
            if key[0] == "free":
                free_ints.append((at, free_at[key[1]]))
                int_values.append(0)
            else:
                int_values.append(ints[key])
        free_doubles = [(at, free_at[v]) for at, (_, v) in enumerate(builder.doubles)]
        dbl_values = [0.0] * len(builder.doubles)
        buffers = [(tuple(v.type.shape), np.dtype(v.type.dtype),  # type: ignore[union-attr]
                    v in prog.sequenced) for v in prog.produced]
        return Variant(_ENTRY(address), np.array(int_values or [0], np.int64), free_ints,
                       np.array(dbl_values or [0.0], np.float64), free_doubles, buffers,
                       [p.params for p in plans.values()], list(builder.ints), layouts, plans)

    # -- row ranges
    def _ranges(self, variant: Variant) -> list[np.ndarray] | None:
        """The ints of each row range to run at once (None: one loop over every row)."""
        batch = self.prog.batch
        if batch is None or not self.gemm.set_threads:
            return None
        threads = min(_threads(), batch // _MIN_ROWS)
        if threads < 2:
            return None
        found = variant.splits.get(threads, False)
        if found is False:
            with self.lock:
                found = variant.splits.get(threads, False)
                if found is False:
                    try:
                        found = self._split(variant, threads)
                    except _Unplannable:
                        found = None
                    variant.splits[threads] = found
        return found

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
                    raise _Unplannable
                variant.keep.append(plan.params)
                values[("plan", n)] = plan.pointers[0]
            elif n.kind == "tensor::matmul":
                values[("gemm", n, 0)] = rows
            elif n.kind in _WRITES:
                buf = n.inputs[0]
                shape, _, item = layouts[buf]
                ax = int(_write_axis(n).constant)
                per_row = int(np.prod(shape[ax + 2:], dtype=np.int64)) * item
                values[("bytes", n)] = rows * per_row
        return values


def _dense(shape: tuple[int, ...], strides: tuple[int, ...], item: int) -> bool:
    """Whether an array of ``shape`` and byte ``strides`` is one C-ordered block."""
    acc = item
    for d, s in zip(reversed(shape), reversed(strides)):
        if d > 1 and s != acc:
            return False
        acc *= d
    return True


def _write_axis(n: Node) -> Value:
    return n.inputs[2] if n.kind == "tensor::select_put_" else n.inputs[1]


_MIN_ROWS = 4
"""the fewest batch rows one row range gets."""


def _threads() -> int:
    """How many row ranges a loop runs at once: ``RNNSCRIPT_LOOP_THREADS`` (default 1: one
    loop over every row, its GEMMs threaded by BLAS as numpy's are).

    Several ranges run on a pool of helper threads with BLAS on one thread each; a range no
    helper has started when the caller runs out is the caller's, so a busy core never stalls
    the call for longer than one range. On this project's shared 2-core machine two ranges
    were slower than one loop (the other core was rarely free), so it stays opt-in until it
    is measured to win on a quiet machine."""
    env = os.environ.get("RNNSCRIPT_LOOP_THREADS", "").strip()
    try:
        return max(1, int(env)) if env else 1
    except ValueError:
        return 1


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
        self.args = (items, trip, doubles.ctypes.data, fns.ctypes.data)
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
                self.status[k] = self.fn(items, trip, self.ranges[k].ctypes.data, doubles, fns)
            finally:
                with self.cond:
                    self.done += 1
                    if self.done == len(self.ranges):
                        self.cond.notify_all()


def _run_ranges(fn: Any, items: tuple, trip: int, ranges: list[np.ndarray],
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


def compile_loop(node: Node) -> NativeLoop:
    """The native form of the loop ``node``; ``LoopRefused`` (a ValueError) says why not."""
    return NativeLoop(LoopProgram.of(node))
