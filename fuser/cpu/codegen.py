"""LLVM IR for a fusion group: a table of per-op rules and a 2-level (rows x cols) loop.

The kernel computes every group output at each point of the iteration space (the outputs' common
shape). Each tensor read is a *leaf*: a group input seen through the chunk/split views on the way
to it, loaded through its own row pointer and column stride. Broadcasting is a stride of 0,
chunking is a pointer offset, so no input is ever copied. The strides and offsets are run-time
arguments computed per call (``fuser.cpu.kernel``); only the class of each leaf's column stride
(0 = broadcast, 1 = contiguous, 2 = any, ``FIXED_STRIDE + s`` = the small stride ``s``) is
compiled in, so the vectorizer sees unit-stride loads in the common case and interleaved
groups for a packed layout's gates.

A chunk of a value computed inside the group is handled by evaluating that value's producers at
the chunk's offset (TorchScript's "broadcasting chunk", done during code generation).

Writes mirror reads: each *store* (a whole output, or one piece of a ``cat`` output) has its own
row pointer, row stride and column-stride class (1 = contiguous, 2 = any), so a cat's pieces are
written at their offsets in the concatenated array and never exist on their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir

from fuser import emitter
from fuser.analysis import (  # noqa: F401  (the leaf model is part of this backend's API)
    VIEW_OPS,
    KernelSpec,
    Leaf,
    View,
    admits,
)
from fuser.analysis import analyze as analyze_group
from fuser.cpu.mathfns import F32, F64, I64, Math
from fuser.emitter import COMPARISONS, POW_RULES, Emitter, Val, out_dtype  # noqa: F401
from ir.core import Graph, Node

I1 = ir.IntType(1)
I8 = ir.IntType(8)
PTR = ir.PointerType()
DOUBLE = ir.DoubleType()

STORAGE: dict[str, ir.Type] = {"float32": F32, "float64": F64, "bool": I8}
"""How each supported dtype is stored in memory."""
COMPUTE: dict[str, ir.Type] = {"float32": F32, "float64": F64, "bool": I1, "weak": DOUBLE}
"""How values of each dtype live in registers (``weak``: a Python scalar, as a double)."""

TUPLE_SIZE_OFFSET = 16
"""Byte offset of ``ob_size`` in a CPython tuple (checked at run time by ``fuser.cpu.kernel``)."""
TUPLE_ITEMS_OFFSET = 24
"""Byte offset of ``ob_item`` in a CPython tuple (checked at run time by ``fuser.cpu.kernel``)."""
ARRAY_DATA_OFFSET = 16
"""Byte offset of ``data`` in numpy's ``PyArrayObject`` (checked likewise)."""
OBJECT_TYPE_OFFSET = 8
"""Byte offset of ``ob_type`` in every CPython object."""
ARRAY_ND_OFFSET = 24
"""Byte offsets of ``nd`` (an int), ``dimensions``, ``strides`` and ``descr`` in
``PyArrayObject`` (checked likewise)."""
ARRAY_DIMS_OFFSET = 32
ARRAY_STRIDES_OFFSET = 40
ARRAY_DESCR_OFFSET = 56
ARRAY_FLAGS_OFFSET = 64
"""Byte offset of ``flags`` (an int) in ``PyArrayObject`` (checked likewise)."""
FLOAT_VALUE_OFFSET = 16
"""Byte offset of ``ob_fval`` in a CPython float."""
SCALAR_VALUE_OFFSET = 16
"""Byte offset of ``obval`` in a numpy scalar (``np.float64``, ``np.float32``, ``np.bool_``)."""


# -- the rule table -----------------------------------------------------------------------------
Rule = Callable[["KernelBuilder", Node, list[Val]], Val]
RULES: dict[str, Rule] = {}
"""op kind -> how to compute one element; the fuser forms groups only from these kinds."""
ACCEPTS: dict[str, Callable[[Node], bool]] = {}
"""op kind -> extra condition on a node (constant exponents for pow); absent means any."""


BOOL_RESULTS: set[str] = set()
"""Kinds whose rule can produce a bool result (the others compute in float32/float64 only)."""


def rule(*kinds: str, accepts: Callable[[Node], bool] | None = None, bool_result: bool = False):
    def register(fn: Rule) -> Rule:
        for kind in kinds:
            RULES[kind] = fn
            if accepts is not None:
                ACCEPTS[kind] = accepts
            if bool_result:
                BOOL_RESULTS.add(kind)
        return fn
    return register


def can_generate(node: Node) -> bool:
    """Does the CPU backend have a rule for this node (with these constant arguments)?"""
    return admits(node, RULES, ACCEPTS, BOOL_RESULTS, STORAGE)


def analyze(graph: Graph) -> KernelSpec:
    """Find the leaves of ``graph``; ValueError for a node the CPU backend cannot generate."""
    return analyze_group(graph, STORAGE, can_generate, "CPU", cats=True)


# -- the kernel builder -----------------------------------------------------------------------
class KernelBuilder(Emitter):
    """Builds the LLVM module of one kernel variant (one column-stride class per leaf, then one
    per store); the element walk is ``fuser.emitter``'s."""

    def __init__(self, spec: KernelSpec, classes: tuple[int, ...], name: str):
        super().__init__(spec, RULES)
        self.classes = classes
        self.name = name
        self.module = ir.Module(name=name)
        self.b: ir.IRBuilder = None  # type: ignore[assignment]
        self.col = None
        self.leaf_rows: list[Any] = []
        self.leaf_cs: list[Any] = []

    # -- public ---------------------------------------------------------------------------------
    def build(self) -> str:
        body = self._body_function()
        self._entry_function(body)
        self._guarded_entry_function(body)
        return str(self.module)

    # -- element computation ------------------------------------------------------------------
    def load_leaf(self, leaf: int) -> Val:
        dtype = self.spec.leaves[leaf].dtype
        ptr = self.leaf_rows[leaf]
        cls = self.classes[leaf]
        if cls == 1:
            ptr = self.b.gep(ptr, [self.col], inbounds=True, source_etype=STORAGE[dtype])
        elif cls >= FIXED_STRIDE:  # a stride compiled in: the vectorizer reads interleaved items
            offset = self.b.mul(self.col, ir.Constant(I64, cls - FIXED_STRIDE))
            ptr = self.b.gep(ptr, [offset], inbounds=True, source_etype=STORAGE[dtype])
        elif cls == 2:
            offset = self.b.mul(self.col, self.leaf_cs[leaf])
            ptr = self.b.gep(ptr, [offset], inbounds=True, source_etype=STORAGE[dtype])
        raw = self.b.load(ptr, typ=STORAGE[dtype])
        if dtype == "bool":
            raw = self.b.icmp_unsigned("!=", raw, ir.Constant(I8, 0))
        return Val(dtype, raw)

    def cast(self, val: Val, dtype: str) -> Any:
        """``val`` as an LLVM value of ``dtype``'s register type."""
        ty = COMPUTE[dtype]
        if val.expr is None:
            if dtype == "bool":
                return ir.Constant(I1, bool(val.const))
            return ir.Constant(ty, float(val.const))
        src, x = val.dtype, val.expr
        if src == dtype:
            return x
        if dtype == "bool":
            return self.b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
        if src == "bool":
            return self.b.uitofp(x, ty)
        if x.type == ty:
            return x
        return self.b.fptrunc(x, ty) if ty == F32 else self.b.fpext(x, ty)

    def math(self, dtype: str) -> Math:
        return Math(self.b, COMPUTE[dtype])

    # -- functions and loops --------------------------------------------------------------------
    def _body_function(self) -> ir.Function:
        """``body(rows, cols, stores..., leaves..., store row strides..., leaf row strides...,
        store col strides..., leaf col strides..., scalars...)`` (col strides of class 2 only)."""
        spec = self.spec
        n_store, n_leaf = len(spec.stores), len(spec.leaves)
        leaf_classes, store_classes = self.classes[:n_leaf], self.classes[n_leaf:]
        general = [i for i, c in enumerate(leaf_classes) if c == 2]
        general_stores = [i for i, c in enumerate(store_classes) if c == 2]
        n_cs = len(general) + len(general_stores)
        args = ([I64, I64] + [PTR] * (n_store + n_leaf) + [I64] * (n_store + n_leaf + n_cs) +
                [DOUBLE] * len(spec.scalar_inputs))
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), args), self.name + "_body")
        fn.linkage = "internal"
        # both entries call this one machine code: inlined into each, the optimizer could
        # contract multiply-adds differently, and a kernel's first (planned) call and its later
        # (guarded) calls would differ in the last bit
        fn.attributes.add("noinline")
        rows, cols, *rest = fn.args
        outs, rest = rest[:n_store], rest[n_store:]
        leaves, rest = rest[:n_leaf], rest[n_leaf:]
        out_strides, rest = rest[:n_store], rest[n_store:]
        row_strides, rest = rest[:n_leaf], rest[n_leaf:]
        out_cs, rest = rest[:len(general_stores)], rest[len(general_stores):]
        col_strides, scalars = rest[:len(general)], rest[len(general):]
        for p in (*outs, *leaves):
            p.add_attribute("noalias")  # lets the vectorizer skip run-time alias checks
        self.leaf_cs = [None] * n_leaf
        for i, s in zip(general, col_strides):
            self.leaf_cs[i] = s
        store_cs: list[Any] = [None] * n_store
        for i, s in zip(general_stores, out_cs):
            store_cs[i] = s
        for index, s in zip(spec.scalar_inputs, scalars):
            self.scalars[index] = Val("weak", s)
        dtypes = [spec.out_dtypes[st.output] for st in spec.stores]

        entry, outer, inner, latch, done = (fn.append_basic_block(n) for n in
                                            ("entry", "outer", "inner", "latch", "done"))
        b = self.b = ir.IRBuilder(entry)
        zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
        nonempty = b.and_(b.icmp_signed(">", rows, zero), b.icmp_signed(">", cols, zero))
        b.cbranch(nonempty, outer, done)

        b.position_at_end(outer)
        r = b.phi(I64, "r")
        r.add_incoming(zero, entry)
        self.leaf_rows = [b.gep(p, [b.mul(r, rs)], inbounds=True,
                                source_etype=STORAGE[leaf.dtype])
                          for p, rs, leaf in zip(leaves, row_strides, spec.leaves)]
        out_rows = [b.gep(p, [b.mul(r, rs)], inbounds=True, source_etype=STORAGE[d])
                    for p, rs, d in zip(outs, out_strides, dtypes)]
        b.branch(inner)

        b.position_at_end(inner)
        c = self.col = b.phi(I64, "c")
        c.add_incoming(zero, outer)
        for out_row, store, dtype, cs in zip(out_rows, spec.stores, dtypes, store_cs):
            x = self.cast(self.value(store.value), dtype)
            if dtype == "bool":
                x = b.zext(x, I8)
            at = c if cs is None else b.mul(c, cs)
            b.store(x, b.gep(out_row, [at], inbounds=True, source_etype=STORAGE[dtype]))
        c_next = b.add(c, one)
        c.add_incoming(c_next, b.block)
        b.cbranch(b.icmp_signed("<", c_next, cols), inner, latch)

        b.position_at_end(latch)
        r_next = b.add(r, one)
        r.add_incoming(r_next, latch)
        b.cbranch(b.icmp_signed("<", r_next, rows), outer, done)
        b.position_at_end(done)
        b.ret_void()
        return fn

    def _entry_function(self, body: ir.Function) -> None:
        """``kern(PyTupleObject *arrays, i64 *params, double *scalars)``: reads each array's data
        pointer from the CPython tuple of arrays (inputs then outputs), the sizes, offsets and
        strides from ``params`` (rows, cols, then per store and then per leaf: byte offset, row
        stride, col stride, the strides in elements) and the Python numbers from ``scalars``."""
        spec = self.spec
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR]), self.name)
        tup, params, scalar_ptr = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        def data(slot: int):
            item = b.gep(tup, [ir.Constant(I64, TUPLE_ITEMS_OFFSET + 8 * slot)], source_etype=I8)
            obj = b.load(item, typ=PTR)
            field_ptr = b.gep(obj, [ir.Constant(I64, ARRAY_DATA_OFFSET)], source_etype=I8)
            return b.load(field_ptr, typ=PTR)

        n_arrays = len(spec.array_inputs)
        datas = [data(k) for k in range(n_arrays)]
        outs = [data(n_arrays + j) for j in range(len(spec.out_dtypes))]
        scalars = [b.load(b.gep(scalar_ptr, [ir.Constant(I64, k)], source_etype=DOUBLE),
                          typ=DOUBLE) for k in range(len(spec.scalar_inputs))]
        self._call_body(b, body, params, datas, outs, scalars)
        b.ret_void()

    def _guarded_entry_function(self, body: ir.Function) -> None:
        """``int kern_guarded(PyTupleObject *args, PyTupleObject *outs, i64 *guard)``: the call
        path that needs no Python-side checks. It returns 1 without touching memory when the
        argument count differs or an array argument is not exactly an ndarray with the guard's
        dtype object, rank, shape and strides, else runs every slab and returns 0. ``guard``
        holds, per array input in tuple order: type address, descr address, dims, byte strides
        (rank from the group's type), and for a 0-d input the address of its dtype's numpy
        scalar type, which it also takes (``np.sum(x)`` returns one), reading its value;
        then per scalar input the address of ``float`` (other numbers are rejected); then the
        slab count and the slab rows of ``_entry_function``'s ``params``."""
        spec = self.spec
        i32 = ir.IntType(32)
        fn = ir.Function(self.module, ir.FunctionType(i32, [PTR, PTR, PTR]), self.name + "_guarded")
        args, outs_tup, guard = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        reject = fn.append_basic_block("reject")
        ir.IRBuilder(reject).ret(ir.Constant(i32, 1))

        def at(ptr, nbytes: int, ty=PTR):
            return b.load(b.gep(ptr, [ir.Constant(I64, nbytes)], source_etype=I8), typ=ty)

        def g(i: int):
            return b.load(b.gep(guard, [ir.Constant(I64, i)], source_etype=I64), typ=I64)

        def require(ok) -> None:
            nxt = fn.append_basic_block("ok")
            b.cbranch(ok, nxt, reject)
            b.position_at_end(nxt)

        n_args = ir.Constant(I64, len(spec.graph.inputs))
        require(b.icmp_signed("==", at(args, TUPLE_SIZE_OFFSET, I64), n_args))
        pos, datas = 0, []
        for inp in spec.array_inputs:
            obj = at(args, TUPLE_ITEMS_OFFSET + 8 * inp)
            typ = b.ptrtoint(at(obj, OBJECT_TYPE_OFFSET), I64)
            descr = b.ptrtoint(at(obj, ARRAY_DESCR_OFFSET), I64)
            rank = len(spec.graph.inputs[inp].type.shape)  # type: ignore[union-attr]
            if rank == 0:
                datas.append(self._zero_d_data(b, fn, require, at, obj, typ, g, pos))
                pos += 3
                continue
            require(b.icmp_unsigned("==", typ, g(pos)))  # an ndarray: its fields can be read
            ok = b.and_(b.icmp_unsigned("==", descr, g(pos + 1)),
                        b.icmp_signed("==", at(obj, ARRAY_ND_OFFSET, i32), ir.Constant(i32, rank)))
            require(ok)
            dims, strides = at(obj, ARRAY_DIMS_OFFSET), at(obj, ARRAY_STRIDES_OFFSET)
            same = ir.Constant(I1, 1)
            for d in range(rank):
                for arr, k in ((dims, pos + 2 + d), (strides, pos + 2 + rank + d)):
                    got = b.load(b.gep(arr, [ir.Constant(I64, d)], source_etype=I64), typ=I64)
                    same = b.and_(same, b.icmp_signed("==", got, g(k)))
            require(same)
            datas.append(at(obj, ARRAY_DATA_OFFSET))
            pos += 2 + 2 * rank
        scalars = []
        for inp in spec.scalar_inputs:  # Python floats only: other numbers take the slow path
            obj = at(args, TUPLE_ITEMS_OFFSET + 8 * inp)
            require(b.icmp_unsigned("==", b.ptrtoint(at(obj, OBJECT_TYPE_OFFSET), I64), g(pos)))
            scalars.append(at(obj, FLOAT_VALUE_OFFSET, DOUBLE))
            pos += 1
        out_datas = [at(outs_tup, TUPLE_ITEMS_OFFSET + 8 * j) for j in range(len(spec.out_dtypes))]
        out_datas = [at(o, ARRAY_DATA_OFFSET) for o in out_datas]
        n_slabs = g(pos)
        rows0 = b.gep(guard, [ir.Constant(I64, pos + 1)], source_etype=I64)
        row_len = 2 + 3 * len(spec.stores) + 3 * len(spec.leaves)
        entry_block = b.block
        loop, done = fn.append_basic_block("slabs"), fn.append_basic_block("done")
        b.cbranch(b.icmp_signed(">", n_slabs, ir.Constant(I64, 0)), loop, done)
        b.position_at_end(loop)
        s = b.phi(I64, "s")
        s.add_incoming(ir.Constant(I64, 0), entry_block)
        row = b.gep(rows0, [b.mul(s, ir.Constant(I64, row_len))], source_etype=I64)
        self._call_body(b, body, row, datas, out_datas, scalars)
        s_next = b.add(s, ir.Constant(I64, 1))
        s.add_incoming(s_next, b.block)
        b.cbranch(b.icmp_signed("<", s_next, n_slabs), loop, done)
        b.position_at_end(done)
        b.ret(ir.Constant(i32, 0))

    def _zero_d_data(self, b: ir.IRBuilder, fn: ir.Function, require, at, obj, typ, g,
                     pos: int):
        """The data pointer of a 0-d input: an ndarray's (of the guard's descr, rank 0), or the
        value inside a numpy scalar of the guard's scalar type."""
        i32 = ir.IntType(32)
        array, scalar = fn.append_basic_block("array0d"), fn.append_basic_block("scalar")
        joined = fn.append_basic_block("data0d")
        b.cbranch(b.icmp_unsigned("==", typ, g(pos)), array, scalar)
        b.position_at_end(scalar)
        require(b.icmp_unsigned("==", typ, g(pos + 2)))
        in_scalar = b.gep(obj, [ir.Constant(I64, SCALAR_VALUE_OFFSET)], source_etype=I8)
        scalar_end = b.block
        b.branch(joined)
        b.position_at_end(array)
        require(b.and_(b.icmp_unsigned("==", b.ptrtoint(at(obj, ARRAY_DESCR_OFFSET), I64),
                                       g(pos + 1)),
                       b.icmp_signed("==", at(obj, ARRAY_ND_OFFSET, i32), ir.Constant(i32, 0))))
        in_array = at(obj, ARRAY_DATA_OFFSET)
        array_end = b.block
        b.branch(joined)
        b.position_at_end(joined)
        data = b.phi(PTR)
        data.add_incoming(in_array, array_end)
        data.add_incoming(in_scalar, scalar_end)
        return data

    def _call_body(self, b: ir.IRBuilder, body: ir.Function, params, datas: list, outs: list,
                   scalars: list) -> None:
        """Call ``body`` for one slab row of ``params`` (see ``_entry_function``); ``datas`` are
        the array inputs' data pointers in tuple order, ``outs`` the outputs'."""
        spec = self.spec

        def param(i: int):
            return b.load(b.gep(params, [ir.Constant(I64, i)], source_etype=I64), typ=I64)

        def offset(ptr, nbytes):
            return b.gep(ptr, [nbytes], source_etype=I8)

        slot_of = {inp: k for k, inp in enumerate(spec.array_inputs)}
        n_store, n_leaf = len(spec.stores), len(spec.leaves)
        out_ptrs, out_strides, out_cs = [], [], []
        for j, store in enumerate(spec.stores):
            out_ptrs.append(offset(outs[store.output], param(2 + 3 * j)))
            out_strides.append(param(2 + 3 * j + 1))
            if self.classes[n_leaf + j] == 2:
                out_cs.append(param(2 + 3 * j + 2))
        base = 2 + 3 * n_store
        leaves, row_strides, col_strides = [], [], []
        for i, leaf in enumerate(spec.leaves):
            leaves.append(offset(datas[slot_of[leaf.input]], param(base + 3 * i)))
            row_strides.append(param(base + 3 * i + 1))
            if self.classes[i] == 2:
                col_strides.append(param(base + 3 * i + 2))
        b.call(body, [param(0), param(1), *out_ptrs, *leaves, *out_strides, *row_strides,
                      *out_cs, *col_strides, *scalars])


FIXED_STRIDE = 16
"""A leaf's column-stride class ``FIXED_STRIDE + s`` reads at the stride ``s`` (2 to
``MAX_FIXED_STRIDE`` items) compiled in: a gate of a packed layout (``x.reshape(B, H, 4)[:, :,
k]``), whose loads at a run-time stride (class 2) do not vectorize, while loads at a constant
one are an interleaved group the vectorizer reads with whole vectors and shuffles."""
MAX_FIXED_STRIDE = 8


def column_class(stride: int) -> int:
    """The column-stride class of a leaf read at ``stride`` items (see the module docstring
    and ``FIXED_STRIDE``)."""
    if stride in (0, 1):
        return stride
    return FIXED_STRIDE + stride if 2 <= stride <= MAX_FIXED_STRIDE else 2


# -- the rules ----------------------------------------------------------------------------------
def _math_unary(name: str) -> Rule:
    return emitter.unary(lambda k, x, d: getattr(k.math(d), name)(x))


def _intrinsic(name: str) -> Rule:
    return emitter.unary(lambda k, x, d: k.math(d).unary(name, x))


_binary, _unary = emitter.binary, emitter.unary
# the program's own arithmetic rounds each op as numpy does: no FMA contraction (a * b + c
# fused keeps a product that overflows finite, and changes the sign of an exact cancellation)
rule("tensor::add")(_binary(lambda k, a, b, d: k.b.fadd(a, b)))
rule("tensor::sub")(_binary(lambda k, a, b, d: k.b.fsub(a, b)))
rule("tensor::mul")(_binary(lambda k, a, b, d: k.b.fmul(a, b)))
rule("tensor::div")(_binary(lambda k, a, b, d: k.b.fdiv(a, b)))
rule("tensor::minimum")(_binary(lambda k, a, b, d: k.math(d).minimum(a, b)))
rule("tensor::maximum")(_binary(lambda k, a, b, d: k.math(d).maximum(a, b)))

rule("tensor::neg")(_unary(lambda k, x, d: k.b.fneg(x)))
# numpy.copy: a native loop's step copies a row it reads before writing the array in place
# (not a group member: tensor::copy is not elementwise, so only a loop's single-op kernel meets it)
rule("tensor::copy")(_unary(lambda k, x, d: x))
rule("tensor::square")(_unary(lambda k, x, d: k.b.fmul(x, x)))
rule("tensor::reciprocal")(_unary(lambda k, x, d: k.b.fdiv(ir.Constant(x.type, 1.0), x)))
rule("tensor::relu")(_unary(lambda k, x, d: k.math(d).maximum(x, ir.Constant(x.type, 0.0))))
rule("tensor::abs")(_intrinsic("llvm.fabs"))
rule("tensor::sqrt")(_intrinsic("llvm.sqrt"))
rule("tensor::floor")(_intrinsic("llvm.floor"))
rule("tensor::ceil")(_intrinsic("llvm.ceil"))
rule("tensor::rsqrt")(_unary(lambda k, x, d: k.b.fdiv(ir.Constant(x.type, 1.0),
                                                       k.math(d).sqrt(x))))
for _name in ("exp", "log", "log1p", "tanh", "sigmoid", "softplus"):
    rule(f"tensor::{_name}")(_math_unary(_name))


@rule("tensor::sign")
def _sign(k: KernelBuilder, node: Node, args: list[Val]) -> Val:
    d = out_dtype(node)
    m = k.math(d)
    x = k.cast(args[0], d)
    zero = m.sel(m.eq(x, m.c(0.0)), m.c(0.0), x)  # -0 is 0 (numpy's); nan stays nan
    neg = m.sel(m.lt(x, m.c(0.0)), m.c(-1.0), zero)
    return Val(d, m.sel(m.gt(x, m.c(0.0)), m.c(1.0), neg))


# ``x ** c`` for the constant exponents of ``emitter.POW_RULES`` only (no exp/log here)
rule("tensor::pow", accepts=emitter.table_exponent)(emitter.pow_rule())
rule("tensor::clip")(emitter.clip)
rule(*COMPARISONS, bool_result=True)(emitter.compare)


@rule("tensor::where", bool_result=True)
def _where(k: KernelBuilder, node: Node, args: list[Val]) -> Val:
    d = out_dtype(node)
    cond = k.cast(args[0], "bool")
    return Val(d, k.b.select(cond, k.cast(args[1], d), k.cast(args[2], d)))


@rule("tensor::astype", accepts=lambda node: node.inputs[1].is_constant, bool_result=True)
def _astype(k: KernelBuilder, node: Node, args: list[Val]) -> Val:
    d = out_dtype(node)
    return Val(d, k.cast(args[0], d))


@rule("tensor::logical_and", "tensor::logical_or", bool_result=True)
def _logical(k: KernelBuilder, node: Node, args: list[Val]) -> Val:
    a, b = (k.cast(x, "bool") for x in args[:2])
    return Val("bool", k.b.and_(a, b) if node.kind == "tensor::logical_and" else k.b.or_(a, b))


@rule("tensor::logical_not", bool_result=True)
def _logical_not(k: KernelBuilder, node: Node, args: list[Val]) -> Val:
    return Val("bool", k.b.not_(k.cast(args[0], "bool")))
