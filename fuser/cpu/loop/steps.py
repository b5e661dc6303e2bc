"""Steps of a native loop that are loops of their own, for ``builder.LoopBuilder``: block
copies, the check of a list's items before the loop, a layer norm row by row, array
constructors."""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from fuser.cpu import rowkernels
from fuser.cpu.codegen import (
    ARRAY_DATA_OFFSET,
    ARRAY_DESCR_OFFSET,
    ARRAY_DIMS_OFFSET,
    ARRAY_ND_OFFSET,
    ARRAY_STRIDES_OFFSET,
    OBJECT_TYPE_OFFSET,
)
from fuser.cpu.loop import reduce
from fuser.cpu.loop.body import CONSTRUCTORS
from fuser.cpu.mathfns import F64, I64
from ir.core import Node, Value

I1 = ir.IntType(1)
I32 = ir.IntType(32)
PTR = ir.PointerType()


class BuilderParts:
    """What ``LoopBuilder``'s emitter mixins read of it: the IR builder ``b``, each value's
    pointer, the ints loaded before the loop."""

    b: Any
    ptr: dict
    prepared: dict


class StepEmitters(BuilderParts):
    """Methods of ``LoopBuilder`` (also its function ``fn``, module and lists)."""

    fn: Any
    module: Any
    prog: Any
    sizes: dict
    items: dict
    lows: dict

    def _copy_blocks(self, dst: Any, dst_stride: Any, src: Any, src_stride: Any, nbytes: Any,
                     count: Any) -> None:
        """``count`` blocks of ``nbytes``, the k-th from ``src + k * src_stride`` to ``dst + k *
        dst_stride`` (``memmove``: a slot may overlap what it is written from)."""
        b = self.b
        move = self.module.declare_intrinsic("llvm.memmove", [PTR, PTR, I64])

        def block(j: Any) -> None:
            b.call(move, [b.gep(dst, [b.mul(j, dst_stride)], source_etype=ir.IntType(8)),
                          b.gep(src, [b.mul(j, src_stride)], source_etype=ir.IntType(8)),
                          nbytes, ir.Constant(I1, 0)])

        self._counted(count, block)

    def _check_items(self, lst: Value) -> None:
        """Before the loop: return 1 unless every item of ``lst`` (a tuple of its items) is an
        ndarray of the list's dtype, shape and strides (C-contiguous, or those of the list's
        first item: views ``x[:, t, :]`` of one array), which the steps assume."""
        b = self.b
        rank = len(self.prog.item_types[lst].shape)  # type: ignore[arg-type]
        kind = self.int_slot(("ndarray",))
        descr = self.int_slot(("descr", lst))
        dims = [self.int_slot(("item dim", lst, d)) for d in range(rank)]
        strides = [self.int_slot(("item stride", lst, d)) for d in range(rank)]

        def at(ptr: Any, offset: int, ty: Any = PTR) -> Any:
            return b.load(b.gep(ptr, [ir.Constant(I64, offset)], source_etype=ir.IntType(8)),
                          typ=ty)

        def item(k: Any) -> None:
            obj = b.load(b.gep(self.items[lst], [k], source_etype=PTR), typ=PTR)
            self._require(b.icmp_unsigned("==", b.ptrtoint(at(obj, OBJECT_TYPE_OFFSET), I64),
                                          kind))
            same = b.and_(b.icmp_unsigned("==", b.ptrtoint(at(obj, ARRAY_DESCR_OFFSET), I64),
                                          descr),
                          b.icmp_signed("==", at(obj, ARRAY_ND_OFFSET, I32),
                                        ir.Constant(I32, rank)))
            self._require(same)
            dim_ptr, stride_ptr = at(obj, ARRAY_DIMS_OFFSET), at(obj, ARRAY_STRIDES_OFFSET)
            same = ir.Constant(I1, 1)
            for d in range(rank):
                got_d = b.load(b.gep(dim_ptr, [ir.Constant(I64, d)], source_etype=I64), typ=I64)
                got_s = b.load(b.gep(stride_ptr, [ir.Constant(I64, d)], source_etype=I64),
                               typ=I64)
                same = b.and_(same, b.and_(b.icmp_signed("==", got_d, dims[d]),
                                           b.icmp_signed("==", got_s, strides[d])))
            self._require(same)

        self._counted(self.sizes[lst], item)

    def _item(self, lst: Value, at: Any) -> Any:
        """The data pointer of item ``at`` (in range) of list ``lst``."""
        b = self.b
        obj = b.load(b.gep(self.items[lst], [at], source_etype=PTR), typ=PTR)
        return b.load(b.gep(obj, [ir.Constant(I64, ARRAY_DATA_OFFSET)],
                            source_etype=ir.IntType(8)), typ=PTR)

    def _dict_item(self, n: Node) -> None:
        """``d[key]`` of a dict read by key: its item ``key - lowest key`` (a key that is not
        there, below or above, returns to Python, which raises ``KeyError``)."""
        b = self.b
        d, key = n.inputs
        at = b.sub(self._num(key), self.lows[d])
        self._require(b.and_(b.icmp_signed(">=", at, ir.Constant(I64, 0)),
                             b.icmp_signed("<", at, self.sizes[d])))
        self.ptr[n.output] = self._item(d, at)

    def _layer_norm(self, n: Node) -> None:
        """A layer norm or its gradient: ``fuser.cpu.rowkernels``' row function, row by row
        (the gradient's weight and bias sums start at zero and gather every row's: in a loop
        split by rows, a range's own rows, into sums of its own, ``rows.partial_sums``)."""
        b = self.b
        back = n.kind == "tensor::layer_norm_backward"
        t = n.inputs[1 if back else 0].type
        dtype = t.dtype  # type: ignore[union-attr]
        ty = reduce.REAL[dtype]
        cols = t.shape[-1]  # type: ignore[union-attr,index]
        # the rows, read at run time: a row range's own (``fuser.cpu.loop.ranges``)
        rows = self._in_entry(lambda: self.int_slot(("layer norm rows", n)))
        row_bytes = cols * (4 if dtype == "float32" else 8)
        outs = []
        for v in n.outputs:
            self.ptr[v] = self._buffer(v)
            outs.append(self.ptr[v])

        def given(v: Value) -> Any:
            return ir.Constant(PTR, None) if v.is_constant else self.ptr[v]

        eps = ir.Constant(ty, float(n.inputs[-1].constant))  # type: ignore[arg-type]
        width = ir.Constant(I64, cols)
        if back:
            g, a, w = n.inputs[:3]
            fn = rowkernels.backward_row_function(self.module, dtype, not w.is_constant)
            memset = self.module.declare_intrinsic("llvm.memset", [PTR, I64])
            for out in outs[1:]:
                b.call(memset, [out, ir.Constant(ir.IntType(8), 0),
                                ir.Constant(I64, row_bytes), ir.Constant(I1, 0)])
            rowed, fixed = [g, a], [given(w)]
        else:
            x, w, bias = n.inputs[:3]
            fn = rowkernels.forward_row_function(self.module, dtype, not w.is_constant,
                                                 not bias.is_constant)
            rowed, fixed = [x], [given(w), given(bias)]

        # in a loop split by batch rows, a range's rows
        firsts = [self._rows(v) for v in rowed]
        first_out = self._rows(n.outputs[0])

        def row(r: Any) -> None:
            at = b.mul(r, ir.Constant(I64, row_bytes))

            def off(ptr: Any) -> Any:
                return b.gep(ptr, [at], source_etype=ir.IntType(8))

            args = [off(p) for p in firsts] + fixed + [off(first_out)] + (
                outs[1:] if back else [])
            b.call(fn, [width, *args, eps])

        self._counted(rows, row)

    def _counted(self, count: Any, body: Any) -> None:
        """``for r in range(count): body(r)`` at the builder (``body`` may end in another block:
        a check that branches out)."""
        b = self.b
        start = b.block
        head, inner, done = (self.fn.append_basic_block(x) for x in ("rows", "row", "rows_done"))
        b.branch(head)
        b.position_at_end(head)
        r = b.phi(I64, "r")
        r.add_incoming(ir.Constant(I64, 0), start)
        b.cbranch(b.icmp_signed("<", r, count), inner, done)
        b.position_at_end(inner)
        body(r)
        r.add_incoming(b.add(r, ir.Constant(I64, 1)), b.block)
        b.branch(head)
        b.position_at_end(done)

    def _construct(self, n: Node) -> None:
        """An array of a constructor: zeros (a memset), ones or a number, or left as it is
        (``empty``), in this step's buffer."""
        b = self.b
        fill, at = CONSTRUCTORS[n.kind]
        self.ptr[n.output] = self._buffer(n.output)
        out = self._rows(n.output)  # (a row range's rows)
        count = self.prepared[n]
        dtype = n.output.type.dtype  # type: ignore[union-attr]
        if fill == "empty":
            return
        if fill == "zeros":
            item = 1 if dtype == "bool" else 4 if dtype == "float32" else 8
            memset = self.module.declare_intrinsic("llvm.memset", [PTR, I64])
            b.call(memset, [out, ir.Constant(ir.IntType(8), 0),
                            b.mul(count, ir.Constant(I64, item)), ir.Constant(I1, 0)])
            return
        ty = reduce.REAL[dtype]
        value = ir.Constant(F64, 1.0) if fill == "ones" else self._double(n.inputs[at])
        if ty != F64:
            value = b.fptrunc(value, ty)
        b.call(reduce.fill_function(self.module, dtype), [out, count, value])
