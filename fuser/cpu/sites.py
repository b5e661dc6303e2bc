"""The products a compiled function calls outside loops, one ``Site`` per call site: the site
keeps the plan of its last call (``fuser.cpu.products._Plan``), and a call whose operands have
that plan's layout fills in the job's addresses in one native call (``bind``) instead of
building the plan's key, looking it up and reading each operand's address in Python.

A product call's Python work (the key of its operands' shapes, strides and dtypes, the plan
lookup, their addresses, the job's block) took 14-27 us on a 2-vCPU Zen 1 machine, beside a
(64, 256) x (256, 256) + (64, 128) x (128, 256) product of about 200 us; a cell of three
products paid it three times.

``bind(operands, out, guard, block, given)`` returns 1 without writing anything unless every
operand is exactly an ndarray with the guard's dtype object, rank 2, shape and strides, and,
when ``given``, ``out`` is a C-ordered writeable ndarray of the result's shape and dtype that
shares no byte with an operand (the spans ``np.may_share_memory`` compares, from the guard);
else it writes each operand's data pointer and ``out``'s into the block's slots and returns 0.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from llvmlite import ir

from fuser.cpu import jit
from fuser.cpu.codegen import (
    ARRAY_DATA_OFFSET,
    ARRAY_DESCR_OFFSET,
    ARRAY_DIMS_OFFSET,
    ARRAY_FLAGS_OFFSET,
    ARRAY_ND_OFFSET,
    ARRAY_STRIDES_OFFSET,
    OBJECT_TYPE_OFFSET,
    TUPLE_ITEMS_OFFSET,
    TUPLE_SIZE_OFFSET,
)

WRITEABLE = 0x0400
"""``NPY_ARRAY_WRITEABLE``."""

HEADER = 8
"""The guard's words before the operands': their count, the ndarray type's address, the dtype
object's, the output's slot in the block, its two dims, its size in bytes and the item size."""
PER_OPERAND = 7
"""Each operand's words: two dims, two byte strides, its slot in the block, and the low and high
ends of the bytes it spans from its data pointer."""

_BIND = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.py_object, ctypes.c_void_p,
                         ctypes.c_void_p, ctypes.c_int64)
_bind: list[Any] = []


def bind() -> Any:
    """The native ``bind`` (compiled on first use, once per process)."""
    if not _bind:
        _bind.append(_BIND(jit.compile_ir(_bind_ir(), ["rnnscript_products_bind"])[0]))
    return _bind[0]


def guard(operands: tuple, slots: list[int], out_slot: int, shape: tuple[int, int],
          spans: list[tuple[int, int]]) -> np.ndarray:
    """The guard of ``bind`` for operands of these arrays' layout."""
    item = operands[0].itemsize
    words = [len(operands), id(np.ndarray), id(operands[0].dtype), out_slot, *shape,
             shape[0] * shape[1] * item, item]
    for x, slot, (low, high) in zip(operands, slots, spans):
        words += [*x.shape, *x.strides, slot, low, high]
    return np.array(words, np.int64)


def _bind_ir() -> str:
    i32, i64, ptr = ir.IntType(32), ir.IntType(64), ir.PointerType()
    module = ir.Module(name="rnnscript_products_bind")
    fnty = ir.FunctionType(i32, [ptr, ptr, ptr, ptr, i64])
    fn = ir.Function(module, fnty, "rnnscript_products_bind")
    ops, out, g, block, given = fn.args
    entry = fn.append_basic_block("entry")
    reject = fn.append_basic_block("reject")
    ir.IRBuilder(reject).ret(ir.Constant(i32, 1))
    b = ir.IRBuilder(entry)

    def field(obj: Any, offset: Any, ty: Any = ptr) -> Any:
        off = offset if isinstance(offset, ir.Value) else ir.Constant(i64, offset)
        return b.load(b.gep(obj, [off], source_etype=ir.IntType(8)), typ=ty)

    def word(base: Any, k: Any) -> Any:
        index = k if isinstance(k, ir.Value) else ir.Constant(i64, k)
        return b.load(b.gep(base, [index], source_etype=i64), typ=i64)

    def require(ok: Any) -> None:
        nxt = fn.append_basic_block("ok")
        b.cbranch(ok, nxt, reject)
        b.position_at_end(nxt)

    def as_int(p: Any) -> Any:
        return b.ptrtoint(p, i64)

    def same_array(obj: Any, d0: Any, d1: Any, s0: Any, s1: Any) -> Any:
        """obj is an ndarray of the guard's dtype object, rank 2, dims and strides."""
        require(b.icmp_unsigned("==", as_int(field(obj, OBJECT_TYPE_OFFSET)), word(g, 1)))
        ok = b.and_(b.icmp_unsigned("==", as_int(field(obj, ARRAY_DESCR_OFFSET)), word(g, 2)),
                    b.icmp_signed("==", field(obj, ARRAY_ND_OFFSET, i32), ir.Constant(i32, 2)))
        require(ok)
        dims, strides = field(obj, ARRAY_DIMS_OFFSET), field(obj, ARRAY_STRIDES_OFFSET)
        for arr, k, want in ((dims, 0, d0), (dims, 1, d1), (strides, 0, s0), (strides, 1, s1)):
            ok = b.and_(ok, b.icmp_signed("==", word(arr, k), want))
        require(ok)
        return as_int(field(obj, ARRAY_DATA_OFFSET))

    n = word(g, 0)
    require(b.icmp_signed("==", field(ops, TUPLE_SIZE_OFFSET, i64), n))
    # the output: made by the caller for this layout, or given (then checked)
    check_out, out_ok = fn.append_basic_block("check_out"), fn.append_basic_block("out_ok")
    b.cbranch(b.icmp_signed("!=", given, ir.Constant(i64, 0)), check_out, out_ok)
    b.position_at_end(check_out)
    item = word(g, 7)
    same_array(out, word(g, 4), word(g, 5), b.mul(word(g, 5), item), item)
    flags = field(out, ARRAY_FLAGS_OFFSET, i32)
    writeable = b.and_(flags, ir.Constant(i32, WRITEABLE))
    require(b.icmp_signed("!=", writeable, ir.Constant(i32, 0)))
    b.branch(out_ok)
    b.position_at_end(out_ok)
    to = as_int(field(out, ARRAY_DATA_OFFSET))
    end = b.add(to, word(g, 6))
    b.store(to, b.gep(block, [word(g, 3)], source_etype=i64))
    # the operands, one guard entry each
    before = b.block
    loop, body, done = (fn.append_basic_block(x) for x in ("loop", "body", "done"))
    b.branch(loop)
    b.position_at_end(loop)
    k = b.phi(i64, "k")
    k.add_incoming(ir.Constant(i64, 0), before)
    b.cbranch(b.icmp_signed("<", k, n), body, done)
    b.position_at_end(body)
    at = b.add(ir.Constant(i64, HEADER), b.mul(k, ir.Constant(i64, PER_OPERAND)))

    def entry_word(j: int) -> Any:
        return word(g, b.add(at, ir.Constant(i64, j)))

    obj = field(ops, b.add(ir.Constant(i64, TUPLE_ITEMS_OFFSET), b.mul(k, ir.Constant(i64, 8))))
    data = same_array(obj, entry_word(0), entry_word(1), entry_word(2), entry_word(3))
    # a given output overlapping an operand's span: numpy's product (the caller's slow path)
    apart = b.or_(b.icmp_signed(">=", b.add(data, entry_word(5)), end),
                  b.icmp_signed("<=", b.add(data, entry_word(6)), to))
    require(b.or_(apart, b.icmp_signed("==", given, ir.Constant(i64, 0))))
    b.store(data, b.gep(block, [entry_word(4)], source_etype=i64))
    k.add_incoming(b.add(k, ir.Constant(i64, 1)), b.block)
    b.branch(loop)
    b.position_at_end(done)
    b.ret(ir.Constant(i32, 0))
    return str(module)
