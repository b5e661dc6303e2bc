"""Reductions and fills as native loop steps: the LLVM functions a loop's module calls for a
``sum``, ``mean``, ``amax`` or ``amin`` over constant axes and for an array constructor.

A reduction of an array of rank r over a set of axes is one internal function per node: a loop
nest over the input's axes in order, the output pointer moving along the kept axes only (its
byte stride is 0 along a reduced one), so each output element gathers its inputs in index
order. The innermost axis is a call of one of two row functions per (op, dtype):

- ``row``: the reduction of a row (the innermost axis reduced), in wide vectors with lane-wise
  partial results when the row is contiguous (sums may be reordered, as numpy's pairwise sums
  reorder them), one element at a time when it is strided; the caller combines the result into
  its output element;
- ``into``: ``out[j] = op(out[j], x[j])`` along a kept innermost axis (vectors when contiguous):
  the order of numpy's reduction over an outer axis, so those sums are numpy's to the bit.

The output starts at the op's identity (0, -inf, +inf); a mean divides each sum by the count in
double precision and rounds to the dtype, as numpy's ``true_divide`` by the count does. A max
or min propagates NaN as numpy's does. Sizes and strides are run-time arguments.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from fuser.cpu.rowkernels import SUM_FLAGS, _Builder, _Lanes, _split_loop, _sum

I8 = ir.IntType(8)
I64 = ir.IntType(64)
PTR = ir.PointerType()
F64 = ir.DoubleType()
REAL = {"float32": ir.FloatType(), "float64": ir.DoubleType()}


def identity(op: str, ty: ir.Type) -> float:
    return {"max": float("-inf"), "min": float("inf")}.get(op, 0.0)


def combine(b: ir.IRBuilder, op: str, acc: Any, x: Any, reorder: bool = False) -> Any:
    """``op(acc, x)``: a sum, or the larger (smaller) with NaN kept once met (``copy``: x)."""
    if op == "copy":
        return x
    if op in ("sum", "mean"):
        return b.fadd(acc, x, flags=SUM_FLAGS if reorder else ())
    better = b.fcmp_ordered(">" if op == "max" else "<", x, acc)
    return b.select(b.or_(better, b.fcmp_unordered("uno", x, x)), x, acc)


def _fn(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> tuple[Any, bool]:
    got = module.globals.get(name)
    if got is not None:
        return got, False
    fn = ir.Function(module, ir.FunctionType(ret, args), name)
    fn.linkage = "internal"
    return fn, True


def row_function(module: ir.Module, op: str, dtype: str) -> ir.Function:
    """``ty row(i64 n, ptr x, i64 stride)``: ``op`` over ``n`` elements ``stride`` bytes apart,
    from the identity."""
    ty = REAL[dtype]
    fn, new = _fn(module, f"reduce_row_{op}_{dtype}", ty, [I64, PTR, I64])
    if not new:
        return fn
    n, x, stride = fn.args
    k = _Builder(fn)
    b = k.b
    item = 4 if dtype == "float32" else 8
    start = ir.Constant(ty, identity(op, ty))
    dense, strided = fn.append_basic_block("dense"), fn.append_basic_block("strided")
    b.cbranch(b.icmp_signed("==", stride, ir.Constant(I64, item)), dense, strided)

    b.position_at_end(dense)
    accs: dict[int, Any] = {}

    def step(lanes: _Lanes, i: Any) -> None:
        acc = accs.get(lanes.width)
        if acc is None:  # an accumulator starting at the identity, made in the entry block
            init = start if lanes.width == 1 else ir.Constant(lanes.vty,
                                                              [start.constant] * lanes.width)
            with b.goto_block(k.entry):
                b.position_at_start(k.entry)
                acc = accs[lanes.width] = b.alloca(lanes.vty)
                b.store(init, acc)
        b.store(combine(b, op, b.load(acc, typ=lanes.vty), lanes.load(x, i), True), acc)

    _split_loop(k, n, ty, step)
    total = start
    for width, acc in accs.items():
        v = b.load(acc, typ=ty if width == 1 else ir.VectorType(ty, width))
        if width == 1:
            total = combine(b, op, total, v, True)
        elif op in ("sum", "mean"):
            total = b.fadd(total, _Lanes(k, ty, width).total(v), flags=SUM_FLAGS)
        else:
            for lane in range(width):
                total = combine(b, op, total, b.extract_element(v, ir.Constant(I64, lane)))
    b.ret(total)

    b.position_at_end(strided)
    acc = k.var(ty, start)

    def element(i: Any) -> None:
        v = b.load(b.gep(x, [b.mul(i, stride)], source_etype=I8), typ=ty)
        b.store(combine(b, op, b.load(acc, typ=ty), v), acc)

    k.loop(ir.Constant(I64, 0), n, element)
    b.ret(b.load(acc, typ=ty))
    return fn


def into_function(module: ir.Module, op: str, dtype: str) -> ir.Function:
    """``void into(i64 n, ptr out, ptr x, i64 stride)``: ``out[j] = op(out[j], x[j])`` for the
    ``n`` contiguous ``out`` elements and ``n`` elements of ``x`` ``stride`` bytes apart."""
    ty = REAL[dtype]
    fn, new = _fn(module, f"reduce_into_{op}_{dtype}", ir.VoidType(), [I64, PTR, PTR, I64])
    if not new:
        return fn
    n, out, x, stride = fn.args
    out.add_attribute("noalias")
    x.add_attribute("noalias")
    k = _Builder(fn)
    b = k.b
    item = 4 if dtype == "float32" else 8
    dense, strided = fn.append_basic_block("dense"), fn.append_basic_block("strided")
    b.cbranch(b.icmp_signed("==", stride, ir.Constant(I64, item)), dense, strided)
    b.position_at_end(dense)

    def step(lanes: _Lanes, i: Any) -> None:
        lanes.store(combine(b, op, lanes.load(out, i), lanes.load(x, i)), out, i)

    _split_loop(k, n, ty, step)
    b.ret_void()
    b.position_at_end(strided)

    def element(i: Any) -> None:
        at = k.index(out, i, ty)
        v = b.load(b.gep(x, [b.mul(i, stride)], source_etype=I8), typ=ty)
        b.store(combine(b, op, b.load(at, typ=ty), v), at)

    k.loop(ir.Constant(I64, 0), n, element)
    b.ret_void()
    return fn


def _pair_paths(k: _Builder, fn: ir.Function, item: int, sa: Any, sb: Any,
                paths: dict[str, Any]) -> None:
    """Branch to ``paths[kind]()`` by the strides of two operands: both contiguous ("dense"),
    the second the same element throughout ("splat"), the first so ("splat first"), or
    anything else ("strided"); each path returns from the function."""
    b = k.b
    size = ir.Constant(I64, item)
    zero = ir.Constant(I64, 0)
    blocks = {name: fn.append_basic_block(name.replace(" ", "_")) for name in paths}
    tests = [("dense", b.and_(b.icmp_signed("==", sa, size), b.icmp_signed("==", sb, size))),
             ("splat", b.and_(b.icmp_signed("==", sa, size), b.icmp_signed("==", sb, zero))),
             ("splat first", b.and_(b.icmp_signed("==", sa, zero), b.icmp_signed("==", sb, size)))]
    for name, ok in tests:
        if name in paths:
            other = fn.append_basic_block("next")
            b.cbranch(ok, blocks[name], other)
            b.position_at_end(other)
    b.branch(blocks["strided"])
    for name, path in paths.items():
        b.position_at_end(blocks[name])
        path()


def dot_function(module: ir.Module, dtype: str) -> ir.Function:
    """``ty dot(i64 n, ptr a, i64 sa, ptr b, i64 sb)``: the sum of ``a[j] * b[j]`` over ``n``
    elements ``sa`` and ``sb`` bytes apart (each product rounded, as numpy's ``a * b`` is)."""
    ty = REAL[dtype]
    fn, new = _fn(module, f"reduce_dot_{dtype}", ty, [I64, PTR, I64, PTR, I64])
    if not new:
        return fn
    n, x, sa, y, sb = fn.args
    k = _Builder(fn)
    b = k.b
    item = 4 if dtype == "float32" else 8
    zero = ir.Constant(ty, 0.0)

    def lanes_sum(second: Any) -> None:
        accs: dict[int, Any] = {}

        def step(lanes: _Lanes, i: Any) -> None:
            acc = accs.get(lanes.width)
            if acc is None:
                with b.goto_block(k.entry):
                    b.position_at_start(k.entry)
                    acc = accs[lanes.width] = b.alloca(lanes.vty)
                    b.store(lanes.zero(), acc)
            term = b.fmul(lanes.load(x, i), second(lanes, i))
            b.store(b.fadd(b.load(acc, typ=lanes.vty), term, flags=("reassoc",)), acc)

        _split_loop(k, n, ty, step)
        total = zero
        for width, acc in accs.items():
            lanes = _Lanes(k, ty, width)
            v = b.load(acc, typ=lanes.vty)
            total = b.fadd(total, lanes.total(v) if width > 1 else v, flags=("reassoc",))
        b.ret(total)

    def strided() -> None:
        acc = k.var(ty, zero)

        def element(i: Any) -> None:
            u = b.load(b.gep(x, [b.mul(i, sa)], source_etype=I8), typ=ty)
            v = b.load(b.gep(y, [b.mul(i, sb)], source_etype=I8), typ=ty)
            b.store(b.fadd(b.load(acc, typ=ty), b.fmul(u, v)), acc)

        k.loop(ir.Constant(I64, 0), n, element)
        b.ret(b.load(acc, typ=ty))

    def splat() -> None:
        v = b.load(y, typ=ty)
        lanes_sum(lambda lanes, i: lanes.splat(v))

    _pair_paths(k, fn, item, sa, sb, {"dense": lambda: lanes_sum(lambda lanes, i: lanes.load(y, i)),
                                      "splat": splat, "strided": strided})
    return fn


def into_product_function(module: ir.Module, dtype: str) -> ir.Function:
    """``void into(i64 n, ptr out, ptr a, i64 sa, ptr b, i64 sb)``: ``out[j] += a[j] * b[j]``
    (``out`` contiguous; each product rounded, then added)."""
    ty = REAL[dtype]
    fn, new = _fn(module, f"reduce_into_product_{dtype}", ir.VoidType(),
                  [I64, PTR, PTR, I64, PTR, I64])
    if not new:
        return fn
    n, out, x, sa, y, sb = fn.args
    for p in (out, x, y):
        p.add_attribute("noalias")
    k = _Builder(fn)
    b = k.b
    item = 4 if dtype == "float32" else 8

    def lanes_add(first: Any, second: Any) -> None:
        def step(lanes: _Lanes, i: Any) -> None:
            term = b.fmul(first(lanes, i), second(lanes, i))
            lanes.store(b.fadd(lanes.load(out, i), term), out, i)

        _split_loop(k, n, ty, step)
        b.ret_void()

    def strided() -> None:
        def element(i: Any) -> None:
            at = k.index(out, i, ty)
            u = b.load(b.gep(x, [b.mul(i, sa)], source_etype=I8), typ=ty)
            v = b.load(b.gep(y, [b.mul(i, sb)], source_etype=I8), typ=ty)
            b.store(b.fadd(b.load(at, typ=ty), b.fmul(u, v)), at)

        k.loop(ir.Constant(I64, 0), n, element)
        b.ret_void()

    def splat() -> None:
        v = b.load(y, typ=ty)
        lanes_add(lambda lanes, i: lanes.load(x, i), lambda lanes, i: lanes.splat(v))

    def splat_first() -> None:
        u = b.load(x, typ=ty)
        lanes_add(lambda lanes, i: lanes.splat(u), lambda lanes, i: lanes.load(y, i))

    _pair_paths(k, fn, item, sa, sb, {
        "dense": lambda: lanes_add(lambda lanes, i: lanes.load(x, i),
                                   lambda lanes, i: lanes.load(y, i)),
        "splat": splat, "splat first": splat_first, "strided": strided})
    return fn


def fill(k: _Builder, out: Any, count: Any, ty: ir.Type, value: Any) -> None:
    """``count`` elements of type ``ty`` at ``out`` set to ``value``."""
    b = k.b
    k.loop(ir.Constant(I64, 0), count, lambda i: b.store(value, k.index(out, i, ty)))


def fill_function(module: ir.Module, dtype: str) -> ir.Function:
    """``void fill(ptr out, i64 count, ty value)``."""
    ty = REAL[dtype]
    fn, new = _fn(module, f"fill_{dtype}", ir.VoidType(), [PTR, I64, ty])
    if new:
        out, count, value = fn.args
        k = _Builder(fn)
        fill(k, out, count, ty, value)
        k.b.ret_void()
    return fn


def deviation_row_function(module: ir.Module, dtype: str) -> ir.Function:
    """``ty row(i64 n, ptr x, i64 stride, ty m)``: the sum of ``(x[i] - m) ** 2`` over ``n``
    elements ``stride`` bytes apart."""
    ty = REAL[dtype]
    fn, new = _fn(module, f"reduce_deviation_row_{dtype}", ty, [I64, PTR, I64, ty])
    if not new:
        return fn
    n, x, stride, m = fn.args
    k = _Builder(fn)
    b = k.b
    item = 4 if dtype == "float32" else 8
    dense, strided = fn.append_basic_block("dense"), fn.append_basic_block("strided")
    b.cbranch(b.icmp_signed("==", stride, ir.Constant(I64, item)), dense, strided)
    b.position_at_end(dense)

    def square(lanes: _Lanes, i: Any) -> Any:
        d = b.fsub(lanes.load(x, i), lanes.splat(m))
        return b.fmul(d, d)

    b.ret(_sum(k, n, ty, square))
    b.position_at_end(strided)
    acc = k.var(ty, ir.Constant(ty, 0.0))

    def element(i: Any) -> None:
        d = b.fsub(b.load(b.gep(x, [b.mul(i, stride)], source_etype=I8), typ=ty), m)
        b.store(b.fadd(b.load(acc, typ=ty), b.fmul(d, d)), acc)

    k.loop(ir.Constant(I64, 0), n, element)
    b.ret(b.load(acc, typ=ty))
    return fn


def deviation_into_function(module: ir.Module, dtype: str) -> ir.Function:
    """``void into(i64 n, ptr acc, ptr mean, ptr x, i64 stride)``: ``acc[j] += (x[j] -
    mean[j]) ** 2`` for ``n`` contiguous ``acc`` and ``mean`` elements and ``n`` elements of
    ``x`` ``stride`` bytes apart."""
    ty = REAL[dtype]
    fn, new = _fn(module, f"reduce_deviation_into_{dtype}", ir.VoidType(),
                  [I64, PTR, PTR, PTR, I64])
    if not new:
        return fn
    n, acc, mean, x, stride = fn.args
    k = _Builder(fn)
    b = k.b

    def element(i: Any) -> None:
        at = k.index(acc, i, ty)
        v = b.load(b.gep(x, [b.mul(i, stride)], source_etype=I8), typ=ty)
        d = b.fsub(v, b.load(k.index(mean, i, ty), typ=ty))
        b.store(b.fadd(b.load(at, typ=ty), b.fmul(d, d)), at)

    k.loop(ir.Constant(I64, 0), n, element)
    b.ret_void()
    return fn


def reduction_function(module: ir.Module, name: str, op: str, dtype: str, rank: int,
                       reduced: tuple[int, ...], product: bool = False,
                       ddof: int = 0) -> ir.Function:
    """``void name(ptr x, [ptr y,] ptr out, i64 count, i64 n, i64 dims[rank],
    i64 x_strides[rank], [i64 y_strides[rank],] i64 out_strides[rank])``: ``out`` (``count``
    contiguous elements; a copy's, ``out_strides`` apart) is ``op`` of ``x`` (of ``x * y``
    with ``product``, a sum or mean, never making the product array) over the axes
    ``reduced``; ``n`` is the number of elements
    each output gathers (a mean's divisor). ``var`` and ``std`` are numpy's two passes: the
    mean into ``out``, then the sums of the squared deviations from it (on the stack), divided
    by ``n - ddof`` (and the square root)."""
    if op in ("var", "std"):
        return _deviations(module, name, op, dtype, rank, reduced, ddof)
    ty = REAL[dtype]
    pointers = 3 if product else 2
    fn, _ = _fn(module, name, ir.VoidType(),
                [PTR] * pointers + [I64, I64] + [I64] * ((3 + product) * rank))
    x, *ptrs = fn.args[:pointers]
    y, out = (ptrs[0], ptrs[1]) if product else (None, ptrs[0])
    count, n, *rest = fn.args[pointers:]
    dims, xs = rest[:rank], rest[rank:2 * rank]
    ys = rest[2 * rank:3 * rank] if product else []
    os_ = rest[(2 + product) * rank:]
    k = _Builder(fn)
    b = k.b
    if op != "copy":  # (a copy is a "reduction" over no axes that overwrites its output)
        fill(k, out, count, ty, ir.Constant(ty, identity(op, ty)))
    if product:
        row, into = dot_function(module, dtype), into_product_function(module, dtype)
    else:
        row, into = row_function(module, op, dtype), into_function(module, op, dtype)
    item = ir.Constant(I64, 4 if dtype == "float32" else 8)

    def nest(axis: int, xp: Any, yp: Any, op_: Any) -> None:
        if axis >= rank - 1:
            d, s = (dims[axis], xs[axis]) if rank else (ir.Constant(I64, 1), item)
            pair = [xp, s] + ([yp, ys[axis] if rank else item] if product else [])
            if rank == 0 or axis in reduced:
                part = b.call(row, [d, *pair] if product else [d, xp, s])
                b.store(combine(b, op, b.load(op_, typ=ty), part), op_)
            elif op == "copy":  # into a region whose last axis may be strided (x[:, 0] = v)
                with b.if_else(b.icmp_signed("==", os_[axis], item)) as (dense, strided):
                    with dense:
                        b.call(into, [d, op_, xp, s])
                    with strided:
                        k.loop(ir.Constant(I64, 0), d, lambda i: b.store(
                            b.load(b.gep(xp, [b.mul(i, s)], source_etype=I8), typ=ty),
                            b.gep(op_, [b.mul(i, os_[axis])], source_etype=I8)))
            else:
                b.call(into, [d, op_, *pair] if product else [d, op_, xp, s])
            return

        def body(i: Any) -> None:
            nest(axis + 1, b.gep(xp, [b.mul(i, xs[axis])], source_etype=I8),
                 b.gep(yp, [b.mul(i, ys[axis])], source_etype=I8) if product else None,
                 b.gep(op_, [b.mul(i, os_[axis])], source_etype=I8))

        k.loop(ir.Constant(I64, 0), dims[axis], body)

    nest(0, x, y, out)
    if op == "mean":
        divisor = b.sitofp(n, F64)

        def divide(i: Any) -> None:
            at = k.index(out, i, ty)
            v = b.load(at, typ=ty)
            wide = v if ty == F64 else b.fpext(v, F64)
            q = b.fdiv(wide, divisor)
            b.store(q if ty == F64 else b.fptrunc(q, ty), at)

        k.loop(ir.Constant(I64, 0), count, divide)
    b.ret_void()
    return fn


def _deviations(module: ir.Module, name: str, op: str, dtype: str, rank: int,
                reduced: tuple[int, ...], ddof: int) -> ir.Function:
    ty = REAL[dtype]
    mean = reduction_function(module, f"{name}_mean", "mean", dtype, rank, reduced)
    fn, _ = _fn(module, name, ir.VoidType(), [PTR, PTR, I64, I64] + [I64] * (3 * rank))
    x, out, count, n, *rest = fn.args
    dims, xs, os_ = rest[:rank], rest[rank:2 * rank], rest[2 * rank:]
    k = _Builder(fn)
    b = k.b
    b.call(mean, list(fn.args))
    with b.goto_block(k.entry):  # the sums of squares: at most DEVIATIONS_MAX_BYTES
        b.position_at_start(k.entry)
        sums = b.alloca(ty, size=count)
    fill(k, sums, count, ty, ir.Constant(ty, 0.0))
    row, into = deviation_row_function(module, dtype), deviation_into_function(module, dtype)

    def nest(axis: int, xp: Any, mp: Any, sp: Any) -> None:
        if axis >= rank - 1:
            d, stride = (dims[axis], xs[axis]) if rank else (
                ir.Constant(I64, 1), ir.Constant(I64, 4 if dtype == "float32" else 8))
            if rank == 0 or axis in reduced:
                part = b.call(row, [d, xp, stride, b.load(mp, typ=ty)])
                b.store(b.fadd(b.load(sp, typ=ty), part), sp)
            else:
                b.call(into, [d, sp, mp, xp, stride])
            return

        def body(i: Any) -> None:
            step = b.mul(i, os_[axis])
            nest(axis + 1, b.gep(xp, [b.mul(i, xs[axis])], source_etype=I8),
                 b.gep(mp, [step], source_etype=I8), b.gep(sp, [step], source_etype=I8))

        k.loop(ir.Constant(I64, 0), dims[axis], body)

    nest(0, x, out, sums)
    divisor = b.sitofp(b.sub(n, ir.Constant(I64, ddof)), F64)
    sqrt = module.declare_intrinsic("llvm.sqrt", [ty]) if op == "std" else None

    def divide(i: Any) -> None:
        v = b.load(k.index(sums, i, ty), typ=ty)
        wide = v if ty == F64 else b.fpext(v, F64)
        q = b.fdiv(wide, divisor)
        q = q if ty == F64 else b.fptrunc(q, ty)
        b.store(b.call(sqrt, [q]) if sqrt is not None else q, k.index(out, i, ty))

    k.loop(ir.Constant(I64, 0), count, divide)
    b.ret_void()
    return fn
