"""Native row kernels: layer norm over the last axis, forward and backward, with llvmlite.

A row kernel normalises each row (the last axis) of an array of any rank; the leading dims are
the rows. The eager layer norm is about eight numpy passes and calls per application, and its
gradient a dozen more ops that reductions split into several fusion groups; at the sizes of a
recurrent step the calls cost more than the arithmetic. Here one native call does a whole
application: per row it computes the mean, then the variance of the centred values (two passes,
as the eager formula, so no cancellation), then writes the result; the backward recomputes the
row's statistics (the row is in L1 cache by then, which is cheaper than saving them per step).

- ``forward``: ``y = (x - mean) * rstd * weight + bias`` with ``rstd = 1 / sqrt(var + eps)``.
- ``backward``: with ``xhat = (x - mean) * rstd`` and ``d = g * weight``,
  ``dx = (d - mean(d) - xhat * mean(d * xhat)) * rstd``, and the sums over the rows of
  ``g * xhat`` and of ``g``: the gradients of a weight and a bias of the last axis' length. Summing
  them in the kernel, where ``g`` and ``xhat`` are in registers anyway, writes two short vectors
  per call instead of two arrays of the input's size for a later reduction (a reverse loop then
  adds the short vectors step by step).

The call path is that of the fusion kernels' guarded entry (``fuser.cpu.kernel``): Python passes
one tuple of the argument arrays and freshly allocated outputs, and the native code reads each
array's type, dtype object, rank, dims, strides and data pointer from the CPython objects. It
returns 1 without writing anything when an argument is not what the kernel handles (not exactly
an ndarray of its dtype, a zero-size or 0-d array, a last axis that is not contiguous, leading
axes that do not collapse to one row stride, a weight or bias that is not one row of the last
axis' length, a gradient of another shape); the Python side then retries with contiguous copies
or runs the eager implementation it was given.

The row loops are written with explicit wide vectors (``VECTOR_BYTES`` per step) and a scalar
tail, rather than left to the loop vectorizer: the JIT's global option to fold loop remainders
into masked iterations (``fuser.cpu.jit``) gives a vectorized reduction one accumulator (a chain
of dependent adds) and a mask computed every step. Sums may be reordered (``reassoc``), as
numpy's pairwise sums reorder them.

Kernels are compiled once per (dtype, which of weight and bias are given) per process, and kept
in the disk cache of ``fuser.cpu.jit``.
"""

from __future__ import annotations

import ctypes
import hashlib
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from llvmlite import ir

from fuser.cpu import jit
from fuser.cpu.codegen import (
    ARRAY_DATA_OFFSET,
    ARRAY_DESCR_OFFSET,
    ARRAY_DIMS_OFFSET,
    ARRAY_ND_OFFSET,
    ARRAY_STRIDES_OFFSET,
    OBJECT_TYPE_OFFSET,
    TUPLE_ITEMS_OFFSET,
)
from fuser.cpu.kernel import check_layouts

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
DOUBLE = ir.DoubleType()
FLOAT_TYPES: dict[str, ir.Type] = {"float32": ir.FloatType(), "float64": ir.DoubleType()}
"""The dtypes the row kernels compute in (each in its own precision)."""

SUM_FLAGS = ("reassoc", "contract")
"""Sums may be reordered (vectorized into lane-wise partial sums); nothing assumes finite values."""
FM = ("contract",)

MAX_ROW = 1 << 16
"""The longest row the kernels take. Their sums are lane-wise running sums, which lose precision
against numpy's pairwise sums on rows of millions of elements (a float32 row of 4M values near
1000 came out 10x less accurate than the eager op); on rows that long the eager op's per-call
overhead does not matter."""

_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_double, ctypes.c_void_p)
"""``int kernel(tuple of arrays, eps, guard)``: 0 when done, 1 when the arguments were rejected."""
_PLACEHOLDER = "rnnscript_row_kernel"
_lock = threading.RLock()
_KERNELS: dict[tuple[str, str, bool, bool], Any] = {}
_empty = np.empty


# -- LLVM helpers ---------------------------------------------------------------------------------
class _Builder:
    """An ``ir.IRBuilder`` plus mutable locals (allocas in the entry block, which LLVM promotes
    to registers) and counted loops over them."""

    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)

    def var(self, ty: ir.Type, init: Any) -> Any:
        with self.b.goto_block(self.entry):
            self.b.position_at_start(self.entry)
            ptr = self.b.alloca(ty)
        self.b.store(init, ptr)
        return ptr

    def loop(self, start: Any, stop: Any, body: Callable[[Any], None], step: int = 1) -> None:
        """``for i in range(start, stop, step): body(i)`` (a negative step counts down)."""
        b = self.b
        i_ptr = self.var(I64, start)
        head, inner, done = (self.fn.append_basic_block(n) for n in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        i = b.load(i_ptr, typ=I64)
        b.cbranch(b.icmp_signed("<" if step > 0 else ">", i, stop), inner, done)
        b.position_at_end(inner)
        body(i)
        b.store(b.add(b.load(i_ptr, typ=I64), ir.Constant(I64, step)), i_ptr)
        b.branch(head)
        b.position_at_end(done)

    def require(self, ok: Any, reject: ir.Block) -> None:
        nxt = self.fn.append_basic_block("ok")
        self.b.cbranch(ok, nxt, reject)
        self.b.position_at_end(nxt)

    def at(self, ptr: Any, nbytes: int, ty: ir.Type = PTR) -> Any:
        return self.b.load(self.b.gep(ptr, [ir.Constant(I64, nbytes)], source_etype=I8), typ=ty)

    def index(self, ptr: Any, i: Any, ty: ir.Type) -> Any:
        return self.b.gep(ptr, [i], inbounds=True, source_etype=ty)


def forward_row_function(module: ir.Module, dtype: str, has_w: bool, has_b: bool) -> Any:
    """The forward row function (``row(n, x, w, b, y, eps)``) in ``module``, made once per
    variant (a native loop's module calls it per row)."""
    name = f"ln_forward_row_{dtype}_{int(has_w)}{int(has_b)}"
    found = module.globals.get(name)
    return found if found is not None else _forward_row(module, _TYPES[dtype], has_w, has_b,
                                                        name)


def backward_row_function(module: ir.Module, dtype: str, has_w: bool) -> Any:
    """The backward row function (``row(n, g, x, w, dx, dw, db, eps)``, adding to ``dw`` and
    ``db``) in ``module``, made once per variant."""
    name = f"ln_backward_row_{dtype}_{int(has_w)}"
    found = module.globals.get(name)
    return found if found is not None else _backward_row(module, _TYPES[dtype], has_w, name)


_TYPES = {"float32": ir.FloatType(), "float64": ir.DoubleType()}


def _row_function(module: ir.Module, name: str, ty: ir.Type, n_ptrs: int) -> tuple[Any, Any]:
    """``void name(i64 n, ptr... (noalias), <ty> eps)`` and its builder."""
    fnty = ir.FunctionType(ir.VoidType(), [I64] + [PTR] * n_ptrs + [ty])
    fn = ir.Function(module, fnty, name)
    fn.linkage = "internal"
    for p in fn.args[1:1 + n_ptrs]:
        p.add_attribute("noalias")
    return fn, _Builder(fn)


class _Lanes:
    """Element code at one width: ``width`` 1 is scalar code, otherwise ``<width x ty>``
    vectors (row scalars such as the mean are splatted on use)."""

    def __init__(self, k: _Builder, ty: ir.Type, width: int):
        self.k, self.b, self.ty, self.width = k, k.b, ty, width
        self.vty = ty if width == 1 else ir.VectorType(ty, width)
        self.align = 4 if ty == ir.FloatType() else 8

    def load(self, ptr: Any, i: Any) -> Any:
        return self.b.load(self.k.index(ptr, i, self.ty), typ=self.vty, align=self.align)

    def store(self, v: Any, ptr: Any, i: Any) -> None:
        self.b.store(v, self.k.index(ptr, i, self.ty), align=self.align)

    def splat(self, s: Any) -> Any:
        if self.width == 1:
            return s
        b = self.b
        one = b.insert_element(ir.Constant(self.vty, ir.Undefined), s, ir.Constant(I32, 0))
        mask = ir.Constant(ir.VectorType(I32, self.width), [0] * self.width)
        return b.shuffle_vector(one, ir.Constant(self.vty, ir.Undefined), mask)

    def zero(self) -> Any:
        return ir.Constant(self.vty, 0.0 if self.width == 1 else [0.0] * self.width)

    def total(self, v: Any) -> Any:
        """The sum of a vector's lanes (a tree: the partial sums may be reordered)."""
        if self.width == 1:
            return v
        name = f"llvm.vector.reduce.fadd.v{self.width}{'f32' if self.align == 4 else 'f64'}"
        module = self.b.module
        fn = module.globals.get(name) or ir.Function(
            module, ir.FunctionType(self.ty, [self.ty, self.vty]), name)
        return self.b.call(fn, [ir.Constant(self.ty, -0.0), v], fastmath=SUM_FLAGS)


VECTOR_BYTES = 256
"""Bytes per step of the main loop: four 64-byte vectors, so a sum has four independent
accumulator registers (on AVX-512; LLVM splits the wide vector for the host's registers)."""


def _split_loop(k: _Builder, n: Any, ty: ir.Type,
                body: Callable[[_Lanes, Any], None]) -> None:
    """``body(lanes, i)`` for i over the row: wide vector steps, then a scalar tail."""
    itemsize = 4 if ty == ir.FloatType() else 8
    width = VECTOR_BYTES // itemsize
    b = k.b
    main = b.and_(n, ir.Constant(I64, -width))
    wide = _Lanes(k, ty, width)
    k.loop(ir.Constant(I64, 0), main, lambda i: body(wide, i), step=width)
    narrow = _Lanes(k, ty, 1)
    k.loop(main, n, lambda i: body(narrow, i))


def _sum(k: _Builder, n: Any, ty: ir.Type, term: Callable[[_Lanes, Any], Any]) -> Any:
    """The sum over the row of ``term(lanes, i)``."""
    accs: dict[int, Any] = {}

    def add(lanes: _Lanes, i: Any) -> None:
        acc = accs.get(lanes.width)
        if acc is None:
            with k.b.goto_block(k.entry):
                k.b.position_at_start(k.entry)
                acc = accs[lanes.width] = k.b.alloca(lanes.vty)
                k.b.store(lanes.zero(), acc)
        value = k.b.fadd(k.b.load(acc, typ=lanes.vty), term(lanes, i), flags=SUM_FLAGS)
        k.b.store(value, acc)

    _split_loop(k, n, ty, add)
    b = k.b
    total = ir.Constant(ty, 0.0)
    for width, acc in accs.items():
        lanes = _Lanes(k, ty, width)
        total = b.fadd(total, lanes.total(b.load(acc, typ=lanes.vty)), flags=SUM_FLAGS)
    return total


def _row_stats(k: _Builder, n: Any, x: Any, ty: ir.Type, eps: Any) -> tuple[Any, Any]:
    """(mean, 1 / sqrt(var + eps)) of the row ``x[:n]``: the mean, then the mean of the squared
    centred values (the eager formula's two passes)."""
    b = k.b
    count = b.sitofp(n, ty)
    mean = b.fdiv(_sum(k, n, ty, lambda lanes, i: lanes.load(x, i)), count)

    def square(lanes: _Lanes, i: Any) -> Any:
        c = b.fsub(lanes.load(x, i), lanes.splat(mean), flags=FM)
        return b.fmul(c, c, flags=FM)

    var = b.fdiv(_sum(k, n, ty, square), count)
    sqrt = b.module.declare_intrinsic("llvm.sqrt", [ty])
    rstd = b.fdiv(ir.Constant(ty, 1.0), b.call(sqrt, [b.fadd(var, eps, flags=FM)]))
    return mean, rstd


def _forward_row(module: ir.Module, ty: ir.Type, has_w: bool, has_b: bool,
                 name: str = "ln_forward_row") -> ir.Function:
    """``row(n, x, w, b, y, eps)``: one row of the forward (w, b unread when absent)."""
    fn, k = _row_function(module, name, ty, 4)
    n, x, w, bias, y, eps = fn.args
    b = k.b
    mean, rstd = _row_stats(k, n, x, ty, eps)

    def write(lanes: _Lanes, i: Any) -> None:
        v = b.fsub(lanes.load(x, i), lanes.splat(mean), flags=FM)
        v = b.fmul(v, lanes.splat(rstd), flags=FM)
        if has_w:
            v = b.fmul(v, lanes.load(w, i), flags=FM)
        if has_b:
            v = b.fadd(v, lanes.load(bias, i), flags=FM)
        lanes.store(v, y, i)

    _split_loop(k, n, ty, write)
    b.ret_void()
    return fn


def _backward_row(module: ir.Module, ty: ir.Type, has_w: bool,
                  name: str = "ln_backward_row") -> ir.Function:
    """``row(n, g, x, w, dx, dw, db, eps)``: one row of the backward, adding the row's
    ``g * xhat`` to ``dw`` and ``g`` to ``db`` (w unread when absent)."""
    fn, k = _row_function(module, name, ty, 6)
    n, g, x, w, dx, dw, db, eps = fn.args
    b = k.b
    mean, rstd = _row_stats(k, n, x, ty, eps)
    count = b.sitofp(n, ty)

    def xhat(lanes: _Lanes, i: Any) -> Any:
        c = b.fsub(lanes.load(x, i), lanes.splat(mean), flags=FM)
        return b.fmul(c, lanes.splat(rstd), flags=FM)

    def d(lanes: _Lanes, i: Any) -> Any:
        gi = lanes.load(g, i)
        return b.fmul(gi, lanes.load(w, i), flags=FM) if has_w else gi

    m1 = b.fdiv(_sum(k, n, ty, d), count)
    m2 = b.fdiv(_sum(k, n, ty, lambda lanes, i: b.fmul(d(lanes, i), xhat(lanes, i), flags=FM)),
                count)

    def write(lanes: _Lanes, i: Any) -> None:
        xh, gi = xhat(lanes, i), lanes.load(g, i)
        v = b.fsub(b.fsub(d(lanes, i), lanes.splat(m1), flags=FM),
                   b.fmul(xh, lanes.splat(m2), flags=FM), flags=FM)
        lanes.store(b.fmul(v, lanes.splat(rstd), flags=FM), dx, i)
        lanes.store(b.fadd(lanes.load(dw, i), b.fmul(gi, xh, flags=FM), flags=FM), dw, i)
        lanes.store(b.fadd(lanes.load(db, i), gi, flags=FM), db, i)

    _split_loop(k, n, ty, write)
    b.ret_void()
    return fn


class _Entry:
    """Builds the entry function: argument checks, then the row loop."""

    def __init__(self, module: ir.Module, ty: ir.Type, itemsize: int):
        fnty = ir.FunctionType(I32, [PTR, DOUBLE, PTR])
        self.fn = ir.Function(module, fnty, _PLACEHOLDER)
        self.items, eps, self.guard = self.fn.args
        self.k = _Builder(self.fn)
        self.ty = ty
        self.itemsize = itemsize
        self.reject = self.fn.append_basic_block("reject")
        ir.IRBuilder(self.reject).ret(ir.Constant(I32, 1))
        b = self.k.b
        self.eps = b.fptrunc(eps, ty) if ty != DOUBLE else eps

    def item(self, slot: int) -> Any:
        return self.k.at(self.items, TUPLE_ITEMS_OFFSET + 8 * slot)

    def data(self, obj: Any) -> Any:
        return self.k.at(obj, ARRAY_DATA_OFFSET)

    def array(self, slot: int) -> Any:
        """The array in ``slot``, rejected unless exactly an ndarray of the kernel's dtype."""
        k, b = self.k, self.k.b
        obj = self.item(slot)
        guard = [b.load(k.index(self.guard, ir.Constant(I64, j), I64), typ=I64) for j in (0, 1)]
        typ = b.ptrtoint(k.at(obj, OBJECT_TYPE_OFFSET), I64)
        k.require(b.icmp_unsigned("==", typ, guard[0]), self.reject)  # its fields can be read
        descr = b.ptrtoint(k.at(obj, ARRAY_DESCR_OFFSET), I64)
        k.require(b.icmp_unsigned("==", descr, guard[1]), self.reject)
        return obj

    def rows(self, obj: Any) -> tuple[Any, Any, Any, Any]:
        """(rank, rows, cols, row stride in elements) of an array whose last axis is contiguous
        and whose leading axes step through memory as one (size-1 axes are skipped); rejects
        0-d arrays and other layouts."""
        k, b = self.k, self.k.b
        nd = b.sext(k.at(obj, ARRAY_ND_OFFSET, I32), I64)
        k.require(b.icmp_signed(">=", nd, ir.Constant(I64, 1)), self.reject)
        dims, strides = k.at(obj, ARRAY_DIMS_OFFSET), k.at(obj, ARRAY_STRIDES_OFFSET)
        last = b.sub(nd, ir.Constant(I64, 1))
        cols = b.load(k.index(dims, last, I64), typ=I64)
        size = ir.Constant(I64, self.itemsize)
        k.require(b.icmp_signed("==", b.load(k.index(strides, last, I64), typ=I64), size),
                  self.reject)
        rows = k.var(I64, ir.Constant(I64, 1))
        stride = k.var(I64, b.mul(cols, size))  # for rows == 1 any stride works
        expect = k.var(I64, ir.Constant(I64, -1))  # -1: no leading axis of size > 1 seen yet
        ok = k.var(I1, ir.Constant(I1, 1))

        def axis(d: Any) -> None:
            dim = b.load(k.index(dims, d, I64), typ=I64)
            st = b.load(k.index(strides, d, I64), typ=I64)
            big = b.icmp_signed(">", dim, ir.Constant(I64, 1))
            want = b.load(expect, typ=I64)
            first = b.icmp_signed("==", want, ir.Constant(I64, -1))
            good = b.or_(b.not_(big), b.or_(first, b.icmp_signed("==", st, want)))
            b.store(b.and_(b.load(ok, typ=I1), good), ok)
            b.store(b.select(b.and_(big, first), st, b.load(stride, typ=I64)), stride)
            grown = b.mul(b.select(first, st, want), dim)
            b.store(b.select(big, grown, want), expect)
            b.store(b.mul(b.load(rows, typ=I64), dim), rows)

        k.loop(b.sub(nd, ir.Constant(I64, 2)), ir.Constant(I64, -1), axis, step=-1)
        k.require(b.load(ok, typ=I1), self.reject)
        st = b.load(stride, typ=I64)
        k.require(b.icmp_signed("==", b.srem(st, size), ir.Constant(I64, 0)), self.reject)
        return nd, b.load(rows, typ=I64), cols, b.sdiv(st, size)

    def one_row(self, slot: int, nd: Any, cols: Any) -> Any:
        """The data of a weight or bias in ``slot``: one contiguous row of ``cols`` elements,
        of rank at most ``nd`` (so it adds no axes to the result)."""
        k, b = self.k, self.k.b
        obj = self.array(slot)
        w_nd, w_rows, w_cols, _ = self.rows(obj)
        ok = b.and_(b.icmp_signed("<=", w_nd, nd), b.icmp_signed("==", w_rows, ir.Constant(I64, 1)))
        k.require(b.and_(ok, b.icmp_signed("==", w_cols, cols)), self.reject)
        return self.data(obj)

    def same_dims(self, a: Any, b_obj: Any, nd: Any) -> None:
        """Reject unless ``b_obj`` has rank ``nd`` and the dims of ``a``."""
        k, b = self.k, self.k.b
        k.require(b.icmp_signed("==", b.sext(k.at(b_obj, ARRAY_ND_OFFSET, I32), I64), nd),
                  self.reject)
        da, db = k.at(a, ARRAY_DIMS_OFFSET), k.at(b_obj, ARRAY_DIMS_OFFSET)
        same = k.var(I1, ir.Constant(I1, 1))

        def axis(d: Any) -> None:
            dim_a = b.load(k.index(da, d, I64), typ=I64)
            dim_b = b.load(k.index(db, d, I64), typ=I64)
            b.store(b.and_(b.load(same, typ=I1), b.icmp_signed("==", dim_a, dim_b)), same)

        k.loop(ir.Constant(I64, 0), nd, axis)
        k.require(b.load(same, typ=I1), self.reject)

    def nonempty(self, rows: Any, cols: Any) -> None:
        b = self.k.b
        zero = ir.Constant(I64, 0)
        self.k.require(b.and_(b.icmp_signed(">", rows, zero), b.icmp_signed(">", cols, zero)),
                       self.reject)

    def for_rows(self, rows: Any, body: Callable[[Any], None]) -> None:
        self.k.loop(ir.Constant(I64, 0), rows, body)
        self.k.b.ret(ir.Constant(I32, 0))


def forward_ir(dtype: str, has_weight: bool, has_bias: bool) -> str:
    """LLVM IR of the forward kernel: items ``(x, weight, bias, y)`` (weight and bias unread when
    absent; ``y`` a new C-contiguous array of x's shape)."""
    ty = FLOAT_TYPES[dtype]
    module = ir.Module(name="layer_norm_forward")
    row = _forward_row(module, ty, has_weight, has_bias)
    e = _Entry(module, ty, np.dtype(dtype).itemsize)
    b, k = e.k.b, e.k
    x = e.array(0)
    nd, rows, cols, rs = e.rows(x)
    e.nonempty(rows, cols)
    null = ir.Constant(PTR, None)
    w = e.one_row(1, nd, cols) if has_weight else null
    bias = e.one_row(2, nd, cols) if has_bias else null
    x0, y0 = e.data(x), e.data(e.item(3))
    e.for_rows(rows, lambda r: b.call(row, [cols, k.index(x0, b.mul(r, rs), ty), w, bias,
                                            k.index(y0, b.mul(r, cols), ty), e.eps]))
    return str(module)


def backward_ir(dtype: str, has_weight: bool) -> str:
    """LLVM IR of the backward kernel: items ``(g, x, weight, dx, dweight, dbias)`` (weight
    unread when absent; ``dx`` a new C-contiguous array of x's shape, ``dweight`` and ``dbias``
    new arrays of x's last axis, which the kernel zeroes and then sums the rows into)."""
    ty = FLOAT_TYPES[dtype]
    module = ir.Module(name="layer_norm_backward")
    row = _backward_row(module, ty, has_weight)
    e = _Entry(module, ty, np.dtype(dtype).itemsize)
    b, k = e.k.b, e.k
    g, x = e.array(0), e.array(1)
    nd, rows, cols, rs = e.rows(x)
    e.nonempty(rows, cols)
    e.same_dims(x, g, nd)
    _, _, _, gs = e.rows(g)
    w = e.one_row(2, nd, cols) if has_weight else ir.Constant(PTR, None)
    g0, x0, dx0 = e.data(g), e.data(x), e.data(e.item(3))
    dw, db = e.data(e.item(4)), e.data(e.item(5))
    zero = ir.Constant(ty, 0.0)

    def clear(i: Any) -> None:
        b.store(zero, k.index(dw, i, ty))
        b.store(zero, k.index(db, i, ty))

    k.loop(ir.Constant(I64, 0), cols, clear)

    def body(r: Any) -> None:
        b.call(row, [cols, k.index(g0, b.mul(r, gs), ty), k.index(x0, b.mul(r, rs), ty), w,
                     k.index(dx0, b.mul(r, cols), ty), dw, db, e.eps])

    e.for_rows(rows, body)
    return str(module)


def _compile(text: str) -> Any:
    """The ctypes entry of IR ``text`` (its symbol named after the text, as the fusion kernels)."""
    name = "rowk_" + hashlib.sha256(text.encode()).hexdigest()[:20]
    (address,) = jit.compile_ir(text.replace(_PLACEHOLDER, name), [name])
    return _ENTRY(address)


# -- the Python side ------------------------------------------------------------------------------
class _RowKernel:
    """Shared state of a compiled row kernel: its dtype, entry and guard."""

    def __init__(self, dtype: str, text: str, fallback: Callable[..., Any]):
        check_layouts()
        self.dtype = np.dtype(dtype)
        self.fn = _compile(text)
        self.guard = np.array([id(np.ndarray), id(self.dtype)], np.int64)
        self.guard_address = self.guard.ctypes.data
        self.fallback = fallback
        """the eager implementation, for arguments the native code rejects."""

    def _copies(self, *arrays: Any) -> list[Any] | None:
        """Contiguous copies of the arrays (None stays None); None when one is not a numpy array
        of this kernel's dtype (the eager implementation decides what that means)."""
        out = []
        for a in arrays:
            if a is not None and (type(a) is not np.ndarray or a.dtype != self.dtype):
                return None
            out.append(None if a is None else np.ascontiguousarray(a))
        return out


class LayerNormForward(_RowKernel):
    """``kernel(a, weight, bias, eps)``: ``ops.layer_norm`` of a numpy array, natively."""

    def __init__(self, dtype: str, has_weight: bool, has_bias: bool,
                 fallback: Callable[..., Any]):
        super().__init__(dtype, forward_ir(dtype, has_weight, has_bias), fallback)

    def __call__(self, a: Any, weight: Any = None, bias: Any = None, eps: float = 1e-05) -> Any:
        if _long_rows(a):
            return self.fallback(a, weight, bias, eps)
        if type(a) is np.ndarray:
            out = _empty(a.shape, self.dtype)
            if not self.fn((a, weight, bias, out), eps, self.guard_address):
                return out
        return self._retry(a, weight, bias, eps)

    def _retry(self, a: Any, weight: Any, bias: Any, eps: float) -> Any:
        copies = self._copies(a, weight, bias)
        if copies is not None and copies[0].ndim and copies[0].size:
            out = _empty(a.shape, self.dtype)
            if not self.fn((*copies, out), float(eps), self.guard_address):
                return out
        return self.fallback(a, weight, bias, eps)


class LayerNormBackward(_RowKernel):
    """``kernel(g, a, weight, eps)``: ``ops.layer_norm_backward`` of numpy arrays, natively."""

    def __init__(self, dtype: str, has_weight: bool, fallback: Callable[..., Any]):
        super().__init__(dtype, backward_ir(dtype, has_weight), fallback)

    def __call__(self, g: Any, a: Any, weight: Any = None, eps: float = 1e-05) -> Any:
        if _long_rows(a):
            return self.fallback(g, a, weight, eps)
        if type(a) is np.ndarray and a.ndim:
            cols = a.shape[-1]
            outs = (_empty(a.shape, self.dtype), _empty(cols, self.dtype),
                    _empty(cols, self.dtype))
            if not self.fn((g, a, weight, *outs), eps, self.guard_address):
                return outs
        return self._retry(g, a, weight, eps)

    def _retry(self, g: Any, a: Any, weight: Any, eps: float) -> Any:
        copies = self._copies(g, a, weight)
        if copies is not None and copies[1].ndim and copies[1].size:
            cols = a.shape[-1]
            outs = (_empty(a.shape, self.dtype), _empty(cols, self.dtype),
                    _empty(cols, self.dtype))
            if not self.fn((*copies, *outs), float(eps), self.guard_address):
                return outs
        return self.fallback(g, a, weight, eps)


def _long_rows(a: Any) -> bool:
    shape = getattr(a, "shape", ())
    return bool(shape) and shape[-1] > MAX_ROW


def layer_norm_forward(dtype: str, has_weight: bool, has_bias: bool,
                       fallback: Callable[..., Any]) -> LayerNormForward:
    """The forward kernel for ``dtype`` (``float32`` / ``float64``) and which of weight and bias
    are given (a call passes None for the others), compiled on first use. ``fallback(a, weight,
    bias, eps)`` runs for arguments the kernel does not handle (other types, dtypes or shapes of
    weight and bias)."""
    key = ("forward", dtype, has_weight, has_bias)
    with _lock:
        kernel = _KERNELS.get(key)
        if kernel is None or kernel.fallback is not fallback:
            kernel = _KERNELS[key] = LayerNormForward(dtype, has_weight, has_bias, fallback)
    return kernel


def layer_norm_backward(dtype: str, has_weight: bool,
                        fallback: Callable[..., Any]) -> LayerNormBackward:
    """The backward kernel: ``kernel(g, a, weight, eps) -> (da, dweight, dbias)``, as
    ``layer_norm_forward`` for the rest."""
    key = ("backward", dtype, has_weight, False)
    with _lock:
        kernel = _KERNELS.get(key)
        if kernel is None or kernel.fallback is not fallback:
            kernel = _KERNELS[key] = LayerNormBackward(dtype, has_weight, fallback)
    return kernel


def supports(dtype: str | None) -> bool:
    """Whether row kernels exist for ``dtype``."""
    return dtype in FLOAT_TYPES
