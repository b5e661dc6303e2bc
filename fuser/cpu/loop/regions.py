"""Writes into a region of an array that are not whole slots copied block by block: a slice
(``slice_put_``: ``Hin[t][:, 1:D + 1] = x``) and a number filling a slot in place
(``select_put_`` of a number: ``Hin[t][:, 0] = 1``), into the array itself or a view of it.

Each is one element-by-element copy over the region's axes: from the value's elements, or from
one element holding the number (every source stride 0). ``plan`` gives a call's sizes and
strides (in ``runtime``), ``prepare`` loads them and ``emit`` writes the copy (in ``builder``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir

from fuser.cpu.loop import reduce
from fuser.cpu.loop.body import known_array
from fuser.cpu.loop.layouts import Layout, Unplannable, dense
from fuser.cpu.mathfns import F32, F64, I64
from ir.core import Node

SLICE_WRITE = "tensor::slice_put_"
PURE_SLICE_WRITE = "tensor::slice_put"
"""a slice written into a copy (``y = x[t].copy(); y[:, a:] = v``): ``x`` (one C-ordered
block) copied into the step's buffer, then the slice written."""
SLICE_WRITES = (SLICE_WRITE, PURE_SLICE_WRITE)


def is_region_write(n: Node) -> bool:
    """Whether ``n`` is a write this module does: a slice write (in place or into a copy), or a
    number filling a slot of an array in place."""
    return n.kind in SLICE_WRITES or (n.kind == "tensor::select_put_"
                                      and known_array(n.inputs[1]) is None)


def slice_range(length: int, bounds: list[Any]) -> range:
    """The indices ``start:stop:step`` picks along an axis of ``length``."""
    return range(length)[slice(*bounds)]


def region_rank(n: Node) -> int:
    t = known_array(n.inputs[0])
    assert t is not None
    return len(t.shape) - (0 if n.kind in SLICE_WRITES else 1)  # type: ignore[arg-type]


def plan(n: Node, layouts: dict[Any, Layout], ints: dict[Any, int]) -> None:
    """The ints of region write ``n`` for the arrays' ``layouts``: where the region starts (a
    slice) or the slot's axis (a fill), and the copy's sizes and strides."""
    buf, value = n.inputs[:2]
    if n.kind == PURE_SLICE_WRITE:  # the old array is copied whole into the output first
        if not dense(*layouts[buf]):
            raise Unplannable
        shape, _, item = layouts[buf]
        ints[("copy bytes", n)] = int(np.prod(shape, dtype=np.int64)) * item
    else:
        layouts[n.output] = layouts[buf]
    shape, strides, item = layouts[n.output]
    ax = int(n.inputs[2].constant)
    ax = ax + len(shape) if ax < 0 else ax
    if n.kind in SLICE_WRITES:
        picked = slice_range(shape[ax], [v.constant for v in n.inputs[3:]])
        ints[("region offset", n)] = (picked.start if len(picked) else 0) * strides[ax]
        r_shape = shape[:ax] + (len(picked),) + shape[ax + 1:]
        r_strides = strides[:ax] + (strides[ax] * picked.step,) + strides[ax + 1:]
    else:
        ints[("dim", n)], ints[("stride", n)] = shape[ax], strides[ax]
        r_shape, r_strides = shape[:ax] + shape[ax + 1:], strides[:ax] + strides[ax + 1:]
    if known_array(value) is None:
        src_strides: tuple = (0,) * len(r_shape)
    else:
        v_shape, src_strides, _ = layouts[value]
        if tuple(v_shape) != tuple(r_shape):
            raise Unplannable
    if not r_shape:
        raise Unplannable
    plan_copy(n, r_shape, src_strides, r_strides, ints)


def plan_copy(n: Node, shape: tuple, src_strides: tuple, dst_strides: tuple,
              ints: dict[Any, int]) -> None:
    """The ints of ``n``'s element-by-element copy of ``shape`` between those strides."""
    ints[("copy count", n)] = int(np.prod(shape, dtype=np.int64))
    for a, (d, s, o) in enumerate(zip(shape, src_strides, dst_strides)):
        ints[("copy dim", n, a)], ints[("copy stride", n, a)] = d, s
        ints[("copy out stride", n, a)] = o


def apart(b: ir.IRBuilder, a: Any, b_ptr: Any, dims: list, a_strides: list, b_strides: list
      ) -> Any:
    """Whether the elements of two arrays of ``dims`` (byte strides ``a_strides`` and
    ``b_strides`` from ``a`` and ``b_ptr``) lie in disjoint byte ranges (an element copy
    from one to the other, unlike numpy's, would read what it wrote)."""
    zero = ir.Constant(I64, 0)

    def extent(ptr: Any, strides: list) -> tuple[Any, Any]:
        lo = hi = b.ptrtoint(ptr, I64)
        for d, s in zip(dims, strides):
            span = b.mul(b.sub(d, ir.Constant(I64, 1)), s)
            lo = b.add(lo, b.select(b.icmp_signed("<", span, zero), span, zero))
            hi = b.add(hi, b.select(b.icmp_signed(">", span, zero), span, zero))
        return lo, hi

    (lo1, hi1), (lo2, hi2) = extent(a, a_strides), extent(b_ptr, b_strides)
    # ranges [lo, hi] of first bytes; an element is at most 8 bytes long
    eight = ir.Constant(I64, 8)
    return b.or_(b.icmp_signed(">=", lo1, b.add(hi2, eight)),
                 b.icmp_signed(">=", lo2, b.add(hi1, eight)))


def prepare(bld: Any, n: Node) -> None:
    """Load ``n``'s ints in the loop's entry block (``bld`` a ``LoopBuilder``)."""
    rank = region_rank(n)
    if n.kind == PURE_SLICE_WRITE:
        bld.prepared[("copy bytes", n)] = bld.int_slot(("copy bytes", n))
    if n.kind in SLICE_WRITES:
        bld.prepared[n] = bld.int_slot(("region offset", n))
    else:
        bld.prepared[n] = (bld.int_slot(("dim", n)), bld.int_slot(("stride", n)))
    bld.prepared[("copy", n)] = [bld.int_slot(("copy count", n))] * 2 + [
        bld.int_slot((key, n, a)) for key in ("copy dim", "copy stride", "copy out stride")
        for a in range(rank)]
    if known_array(n.inputs[1]) is None:  # the one element the number is copied from
        bld.prepared[("fill", n)] = bld._in_entry(lambda: bld.b.alloca(F64))


def emit(bld: Any, n: Node) -> None:
    """The step's code of region write ``n``."""
    b = bld.b
    buf, value = n.inputs[:2]
    if n.kind == PURE_SLICE_WRITE:
        bld.ptr[n.output] = bld._buffer(n.output)
        nbytes = bld.prepared[("copy bytes", n)]
        bld._copy_blocks(bld.ptr[n.output], nbytes, bld.ptr[buf], nbytes, nbytes,
                         ir.Constant(I64, 1))
    else:
        bld.ptr[n.output] = bld.ptr[buf]
    if n.kind in SLICE_WRITES:
        at = bld.prepared[n]
    else:
        dim, stride = bld.prepared[n]
        at = b.mul(bld._index(bld._num(n.inputs[3]), dim), stride)
    dst = b.gep(bld.ptr[n.output], [at], source_etype=ir.IntType(8))
    copy = bld.prepared[("copy", n)]
    rank = region_rank(n)
    dtype = n.output.type.dtype  # type: ignore[union-attr]
    if known_array(value) is None:
        slot = bld.prepared[("fill", n)]
        number = bld._double(value)
        real = F32 if dtype == "float32" else F64
        if dtype == "float32":
            number = b.fptrunc(number, F32)
        b.store(number, b.bitcast(slot, real.as_pointer()))
        src = b.bitcast(slot, ir.IntType(8).as_pointer())
    else:
        src = bld.ptr[value]
        dims, strides, out = copy[2:2 + rank], copy[2 + rank:2 + 2 * rank], copy[2 + 2 * rank:]
        bld._require(apart(b, src, dst, dims, strides, out))
    fn = reduce.reduction_function(bld.module, f"copy{len(bld.module.globals)}", "copy", dtype,
                                   rank, ())
    b.call(fn, [src, dst, *copy])

