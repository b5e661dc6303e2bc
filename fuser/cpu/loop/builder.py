"""The LLVM module of one native loop for one set of layouts (``LoopBuilder``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir

from fuser.cpu import stepgemm
from fuser.cpu.codegen import (
    ARRAY_DATA_OFFSET,
    ARRAY_DIMS_OFFSET,
    PTR,
    TUPLE_ITEMS_OFFSET,
    TUPLE_SIZE_OFFSET,
    KernelBuilder,
)
from fuser.cpu.loop import coop, reduce, regions, slots
from fuser.cpu.loop.body import (
    CONSTRUCTORS,
    LAYER_NORMS,
    NUMBER_OPS,
    PIECES,
    PURE_WRITE,
    REDUCTIONS,
    SLOT_WRITES,
    VIEWS,
    LoopRefused,
    int_list,
    is_int,
    known_array,
    reduction,
    where,
    write_parts,
    write_target,
)
from fuser.cpu.loop.layouts import Layout, block_copy
from fuser.cpu.loop.matmuls import MatmulEmitters
from fuser.cpu.loop.program import LoopProgram
from fuser.cpu.loop.steps import StepEmitters
from fuser.cpu.mathfns import F32, F64, I64
from ir.core import Node, Value
from ir.types import ScalarType

I32 = ir.IntType(32)
I1 = ir.IntType(1)
PLACEHOLDER = "rnnscript_loop_name"
"""the loop function's name until the text is hashed (``NativeLoop`` names it by the hash)."""


class LoopBuilder(StepEmitters, MatmulEmitters):
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
        self.into = slots.into(prog, layouts)
        """the made values the kernels write into their slots (``slots``)."""
        self.coop = coop.products(prog, layouts)
        """the matmuls the row ranges may compute together (``coop``)."""
        self._coop: tuple | None = None

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
                         PLACEHOLDER)
        arrays, trip, self.ints_arg, self.dbl_arg, fns = fn.args
        self.fn = fn
        entry = fn.append_basic_block("entry")
        b = self.b = ir.IRBuilder(entry)
        self.fail = fn.append_basic_block("fail")
        if not self.coop:  # (else ``coop.fail_block``, once the ints are known)
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
            else:  # (a value written into its slot has none: the call gives placeholders)
                if v not in self.into:
                    self.bufs[v] = (data(slot), data(slot + 1))
                slot += 2
        self.sizes: dict[Value, Any] = {}
        self.items: dict[Value, Any] = {}
        self.lows: dict[Value, Any] = {}
        """the lowest key of each dict read by key (its first item's)."""
        self.ints_of: dict[Value, Any] = {}
        """the data pointer of each int list's int64 copy."""
        for lst in prog.free_lists:
            if int_list(lst):  # an int64 array of the list's items
                obj = b.load(b.gep(arrays, [ir.Constant(I64, TUPLE_ITEMS_OFFSET + 8 * slot)],
                                   source_etype=ir.IntType(8)), typ=PTR)
                dims = b.load(b.gep(obj, [ir.Constant(I64, ARRAY_DIMS_OFFSET)],
                                    source_etype=ir.IntType(8)), typ=PTR)
                self.sizes[lst] = b.load(dims, typ=I64)
                self.ints_of[lst] = b.load(b.gep(obj, [ir.Constant(I64, ARRAY_DATA_OFFSET)],
                                                 source_etype=ir.IntType(8)), typ=PTR)
                slot += 1
            elif prog.roles[lst] not in ("append", "store"):
                if prog.roles[lst] == "keys":  # the items by key, from the lowest key
                    self.lows[lst] = self.int_slot(("dict low", lst))
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
        self.gemm_tasks = b.alloca(I64)
        """the task counter of a ``stepgemm`` call (one task: the whole product)."""
        self.gemm_pack = b.alloca(ir.ArrayType(ir.IntType(8), stepgemm.MAX_PANEL_BYTES))
        self.gemm_pack.align = 64
        """the pack of a ``stepgemm`` call that copies B's panels (``own`` 5): a panel of B at
        most (``stepgemm.use``), on this thread's stack."""
        self.step_gemm = [b.load(b.gep(fns, [ir.Constant(I64, 2 + k)], source_etype=PTR),
                                  typ=ir.PointerType(self._step_type(real)))
                           for k, real in enumerate((F32, F64))]
        self.step_gemv = [b.load(b.gep(fns, [ir.Constant(I64, 4 + k)], source_etype=PTR),
                                  typ=ir.PointerType(stepgemm.gemv_type(real)))
                           for k, real in enumerate((F32, F64))]
        # the loop-invariant sizes, strides and plans: loaded once, before the loop
        self.prepared: dict[Any, Any] = {}
        self.r0 = self.int_slot(("r0",)) if prog.batch is not None else None
        self._prepare()
        if self.coop:
            self.coop_state()
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
            if p in prog.partials:  # a row range's own sums start at zero but the first's
                b.position_before(self.entry_end)
                own = self.int_slot(("private init", p))
                init = b.select(b.icmp_unsigned("!=", own, ir.Constant(I64, 0)),
                                b.inttoptr(own, PTR), init)
                b.position_at_end(loop)
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
        if self.coop:
            coop.fail_block(self)
        return str(self.module)

    def coop_state(self) -> tuple:
        """The barrier's address, the range count and ``sched_yield``, loaded in the entry
        block, and this range's barrier count and spin counter (``coop.barrier``)."""
        if self._coop is None:
            def load() -> tuple:
                at = self.b.inttoptr(self.int_slot(("coop barrier",)), PTR)
                parts, yielder = self.int_slot(("coop parts",)), self.int_slot(("coop yield",))
                self.int_slot(("coop on",))
                self.coop_gen, self.coop_spins = self.b.alloca(I64), self.b.alloca(I64)
                self.b.store(ir.Constant(I64, 0), self.coop_gen)
                return at, parts, yielder
            self._coop = self._in_entry(load)
        return self._coop

    # -- before the loop
    def _prepare(self) -> None:
        """Load every loop-invariant size, stride and plan pointer in the entry block."""
        (body,) = self.prog.node.blocks
        b = self.b
        for v in self.seqs:
            self.prepared[("seq", v)] = self.int_slot(("seq", v))
        for n in body:
            if n.kind == PURE_WRITE:
                self.prepared[("copy bytes", n)] = self.int_slot(("copy bytes", n))
            if regions.is_region_write(n):
                regions.prepare(self, n)
            elif n.kind == "tensor::select" or (n.kind == "prim::ListIndex"
                                              and n.inputs[0] in self.prog.unbound):
                self.prepared[n] = (self.int_slot(("dim", n)), self.int_slot(("stride", n)))
            elif n.kind in SLOT_WRITES and known_array(write_parts(n)[3]) is None:
                self.prepared[n] = (self.int_slot(("dim", n)), self.int_slot(("stride", n)),
                                    self.int_slot(("fill count", n)))
            elif n.kind in SLOT_WRITES and not self._block_copy(n):
                rank = len(write_parts(n)[3].type.shape)  # type: ignore[union-attr]
                self.prepared[n] = (self.int_slot(("dim", n)), self.int_slot(("stride", n)))
                self.prepared[("copy", n)] = [self.int_slot(("copy count", n))] * 2 + [
                    self.int_slot((key, n, a)) for key in ("copy dim", "copy stride",
                                                           "copy out stride")
                    for a in range(rank)]
            elif n.kind in SLOT_WRITES:
                self.prepared[n] = (self.int_slot(("dim", n)), self.int_slot(("stride", n)),
                                    self.int_slot(("bytes", n)))
                if int(write_parts(n)[1].constant) > 0:
                    self.prepared[("outer", n)] = (self.int_slot(("outer", n)),
                                                   self.int_slot(("outer stride", n)))
                if self.r0 is not None:
                    self.prepared[("slot rows", n)] = self.int_slot(("slot rows", n))
            elif n.kind == "tensor::matmul":
                self.prepared[n] = [self.int_slot(("gemm", n, k)) for k in range(10)]
            elif n.kind == "tensor::slice":
                self.prepared[n] = self.int_slot(("slice offset", n))
            elif n.kind in PIECES:
                self.prepared[n] = [self.int_slot(("piece offset", n, k))
                                    for k in range(len(n.outputs))]
            elif n.kind == "tensor::cat":
                pieces = self.prog.constructed[n.inputs[0]]
                self.prepared[n] = (self.int_slot(("cat outer", n)),
                                    self.int_slot(("cat row", n)),
                                    [(self.int_slot(("cat offset", n, k)),
                                      self.int_slot(("cat block", n, k)),
                                      self.int_slot(("cat stride", n, k)))
                                     for k in range(len(pieces))])
            elif n in self.prog.kernels:
                self.prepared[n] = b.inttoptr(self.int_slot(("plan", n)), PTR)
            elif n.kind in REDUCTIONS and n.output not in self.prog.same:
                rank = len(n.inputs[0].type.shape)  # type: ignore[union-attr]
                keys = ("reduce dim", "reduce stride") + (
                    ("reduce stride b",) if n in self.prog.products else ()) + (
                    "reduce out stride",)
                self.prepared[n] = [self.int_slot(("reduce count", n)),
                                    self.int_slot(("reduce n", n))] + [
                    self.int_slot((key, n, a)) for key in keys for a in range(rank)]
            elif n.kind in CONSTRUCTORS:
                self.prepared[n] = self.int_slot(("fill count", n))
            elif n.kind == "prim::Constant" and (n.output in self.bufs or n.output in self.seqs):
                self.prepared[n] = (b.inttoptr(self.int_slot(("constant", n)), PTR),
                                    self.int_slot(("constant bytes", n)))
        for v in self.prog.free_scalars:
            if is_int(v):
                self.num_val[v] = self.int_slot(("free", v))
            else:
                self.num_val[v] = self.double_slot(("free", v))

    def _block_copy(self, n: Node) -> bool:
        _, axis, _, value = write_parts(n)
        return block_copy(self.layouts[write_target(n)], int(axis.constant), self.layouts[value])

    # -- one node of the body
    def _num(self, v: Value) -> Any:
        """The LLVM value of a Python number: an i64 for an int, a double for a float."""
        if v.is_constant:
            c = v.constant
            if isinstance(c, bool) or not isinstance(c, (int, float)):
                raise LoopRefused(f"the constant {c!r} is not a number")
            if isinstance(c, int):
                return self._int_constant(c)
            return ir.Constant(F64, float(c))
        return self.num_val[v]

    def _int_constant(self, c: int) -> Any:
        """An int constant of the body (``T - 1 - k`` of a reverse loop) read from the ints at
        run time, so that the code does not depend on sizes (a new sequence length finds it
        compiled); loaded once, in the entry block."""
        key = ("int constant", c)
        if key not in self.prepared:
            self.prepared[key] = self._in_entry(lambda: self.int_slot(key))
        return self.prepared[key]

    def _in_entry(self, make: Callable[[], Any]) -> Any:
        """``make()`` emitted at the end of the entry block, where every step can see it."""
        entry_end = getattr(self, "entry_end", None)
        if entry_end is None:  # still building the entry block
            return make()
        here = self.b.block
        self.b.position_before(entry_end)
        try:
            return make()
        finally:
            self.b.position_at_end(here)

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
        if self.r0 is None or v in self.prog.private or v in self.prog.partials:
            return self.ptr[v]  # (a range's own sums: all of them)
        key = ("row stride", v)
        stride = self.prepared.get(key)
        if stride is None:
            stride = self.prepared[key] = self._in_entry(
                lambda: self.b.mul(self.r0, self.int_slot(key)))
        return self.b.gep(self.ptr[v], [stride], source_etype=ir.IntType(8))

    def _select(self, n: Node, x: Value, idx: Value) -> None:
        """``n``'s output is the slice ``idx`` of ``x`` along the axis ``prepared[n]`` gives."""
        dim, stride = self.prepared[n]
        at = self._index(self._num(idx), dim)
        self.ptr[n.output] = self.b.gep(self.ptr[x], [self.b.mul(at, stride)],
                                        source_etype=ir.IntType(8))

    def _buffer(self, v: Value) -> Any:
        """Where value ``v`` made by this step goes: its slot of this step, the slot its
        ``write_slot`` stores it in (``slots``: the write's bounds checked here, before the
        kernel writes), or the buffer of this step's parity."""
        if v in self.into:
            n = self.prog.into_slots[v]
            buf, _, idx, _ = n.inputs
            dim, stride, *_ = self.prepared[n]
            at = self._index(self._num(idx), dim)
            return self.b.gep(self.ptr[buf], [self.b.mul(at, stride)],
                              source_etype=ir.IntType(8))
        if v in self.seqs:
            return self.b.gep(self.seqs[v], [self.b.mul(self.i, self.prepared[("seq", v)])],
                              source_etype=ir.IntType(8))
        even, odd = self.bufs[v]
        if v in self.prog.private:  # one per row range, ``("private", v)`` bytes in
            key = ("private", v)
            if key not in self.prepared:
                def own() -> tuple[Any, Any]:
                    at = self.int_slot(key)
                    return tuple(self.b.gep(p, [at], source_etype=ir.IntType(8))
                                 for p in (even, odd))
                self.prepared[key] = self._in_entry(own)
            even, odd = self.prepared[key]
        return self.b.select(self.odd, odd, even)

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
        if n in self.prog.fused:
            return  # summed by the reduction that reads it
        if kind == "prim::Constant":
            if n in self.prepared:  # an array: copied into this step's buffer
                src, nbytes = self.prepared[n]
                self.ptr[n.output] = out = self._buffer(n.output)
                self._copy_blocks(out, nbytes, src, nbytes, nbytes, ir.Constant(I64, 1))
            return
        if kind in NUMBER_OPS:
            x, y = (self._num(v) for v in n.inputs)
            int_op, float_op = NUMBER_OPS[kind]
            if is_int(n.output):  # Python's ints do not wrap: an overflow returns to Python
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
        if kind == "prim::TupleConstruct":
            return
        if kind in ("prim::TupleUnpack", "prim::TupleIndex"):
            items = self.prog.tuples[n.inputs[0]]
            chosen = items if kind == "prim::TupleUnpack" else [items[int(n.inputs[1].constant)]]
            for out, item in zip(n.outputs, chosen):
                if item in self.ptr:
                    self.ptr[out] = self.ptr[item]
                elif item in self.num_val or item.is_constant:
                    self.num_val[out] = self._num(item)
            return
        if kind == "tensor::slice":  # a view: the first element moves, the strides stay
            self.ptr[n.output] = b.gep(self.ptr[n.inputs[0]], [self.prepared[n]],
                                       source_etype=ir.IntType(8))
            return
        if kind in PIECES:  # views: the first element moves, the strides stay
            for out, offset in zip(n.outputs, self.prepared[n]):
                self.ptr[out] = b.gep(self.ptr[n.inputs[0]], [offset],
                                      source_etype=ir.IntType(8))
            return
        if kind in VIEWS or (kind in REDUCTIONS and n.output in self.prog.same):  # a view
            self.ptr[n.output] = self.ptr[n.inputs[0]]
            return
        if kind == "tensor::reshape":  # a view of a C-ordered array: the same memory
            self.ptr[n.output] = self.ptr[n.inputs[0]]
            return
        if kind in ("tensor::unbind", "prim::ListAppend", "prim::ListConstruct"):
            return  # items are read as selects, kept in their storage, copied by their cat
        if kind == "tensor::cat":
            self.ptr[n.output] = self._buffer(n.output)
            out = self._rows(n.output)  # (a row range's rows: each piece's same rows)
            outer, row, pieces = self.prepared[n]
            for v, (offset, block, stride) in zip(self.prog.constructed[n.inputs[0]], pieces):
                self._copy_blocks(b.gep(out, [offset], source_etype=ir.IntType(8)), row,
                                  self._rows(v), stride, block, outer)
            return
        if kind == "prim::ListIndex" and n.inputs[0] in self.prog.unbound:
            lst, idx = n.inputs
            self._select(n, self.prog.unbound[lst][0], idx)
            return
        if kind == "prim::ListIndex" and n.inputs[0] in self.ints_of:
            lst, idx = n.inputs
            at = self._index(self._num(idx), self.sizes[lst])
            self.num_val[n.output] = b.load(b.gep(self.ints_of[lst], [at], source_etype=I64),
                                            typ=I64)
            return
        if kind == "prim::Int":  # an item of an int array (``select`` made its pointer)
            self.num_val[n.output] = b.load(self.ptr[n.inputs[0]], typ=I64)
            return
        if kind == "prim::ListIndex":
            lst, idx = n.inputs
            self.ptr[n.output] = self._item(lst, self._index(self._num(idx), self.sizes[lst]))
            return
        if kind == "prim::DictGetItem":
            self._dict_item(n)
            return
        if kind == "prim::DictSetItem":
            return  # the items are kept a slot per step and stored after the loop
        if kind == "prim::ListPop":
            lst, _ = n.inputs
            last = b.sub(b.sub(self.sizes[lst], ir.Constant(I64, 1)), self.i)
            self.ptr[n.output] = self._item(lst, last)
            return
        if kind == "tensor::select":
            x, _, idx = n.inputs
            self._select(n, x, idx)
            return
        if regions.is_region_write(n):
            regions.emit(self, n)
            return
        if kind in SLOT_WRITES:
            buf, _, idx, value = write_parts(n)
            if kind == "tensor::select_put_":
                self.ptr[n.output] = self.ptr[buf]
            dim, stride, *rest = self.prepared[n]
            at = self._index(self._num(idx), dim)
            if kind == PURE_WRITE:  # the old array copied whole into the step's buffer
                self.ptr[n.output] = self._buffer(n.output)
                nbytes = self.prepared[("copy bytes", n)]
                self._copy_blocks(self.ptr[n.output], nbytes, self.ptr[buf], nbytes, nbytes,
                                  ir.Constant(I64, 1))
            dst = b.gep(self.ptr[write_target(n)], [b.mul(at, stride)],
                        source_etype=ir.IntType(8))
            if known_array(value) is None:  # a number filling the slot
                dtype = n.output.type.dtype  # type: ignore[union-attr]
                number = self._double(value)
                if dtype == "float32":
                    number = b.fptrunc(number, F32)
                b.call(reduce.fill_function(self.module, dtype), [dst, rest[0], number])
                return
            if self.prog.resolve(value) in self.into and \
                    self.prog.into_slots[self.prog.resolve(value)] is n:
                return  # the kernel wrote it there
            src = self.ptr[value]
            if self.r0 is not None:  # this range's rows of the slot
                dst = b.gep(dst, [b.mul(self.r0, self.prepared[("slot rows", n)])],
                            source_etype=ir.IntType(8))
                src = self._rows(value)
            if ("copy", n) in self.prepared:  # element by element
                t = value.type
                rank = len(t.shape)  # type: ignore[union-attr]
                _, _, *rest = self.prepared[("copy", n)]
                dims, strides, out = rest[:rank], rest[rank:2 * rank], rest[2 * rank:]
                self._require(regions.apart(self.b, src, dst, dims, strides, out))
                fn = reduce.reduction_function(self.module, f"copy{len(self.module.globals)}",
                                               "copy", t.dtype, rank, ())  # type: ignore
                b.call(fn, [src, dst, *self.prepared[("copy", n)]])
                return
            (nbytes,) = rest
            outer = self.prepared.get(("outer", n))
            if outer is None:
                self._copy_blocks(dst, nbytes, src, nbytes, nbytes, ir.Constant(I64, 1))
            else:  # a slot along a later axis: `count` blocks, `stride` bytes apart
                count, stride = outer
                self._copy_blocks(dst, stride, src, nbytes, nbytes, count)
            return
        if kind == "tensor::matmul":
            self._matmul(n)
            return
        if kind in REDUCTIONS:
            x = n.inputs[0]
            t = x.type
            self.ptr[n.output] = out = self._buffer(n.output)
            pair = self.prog.products.get(n)
            ddof = int(n.inputs[2].constant) if REDUCTIONS[kind] in ("var", "std") else 0
            fn = reduce.reduction_function(
                self.module, f"reduce{len(self.module.globals)}", REDUCTIONS[kind],
                t.dtype, len(t.shape), reduction(n)[0], pair is not None, ddof)  # type: ignore
            inputs = [self.ptr[v] for v in pair] if pair else [self.ptr[x]]
            if self.r0 is not None and n in self.prog.row_inputs:  # this range's rows: each
                rank = len(t.shape)  # type: ignore[union-attr]  # operand's (by its stride)
                inputs = [b.gep(p, [b.mul(self.r0, self.prepared[n][2 + (k + 1) * rank])],
                                source_etype=ir.IntType(8)) for k, p in enumerate(inputs)]
                out = self._rows(n.output)
            b.call(fn, [*inputs, out, *self.prepared[n]])
            return
        if kind in CONSTRUCTORS:
            self._construct(n)
            return
        if kind in LAYER_NORMS:
            self._layer_norm(n)
            return
        raise LoopRefused(f"{where(n)}: no native code for {kind}")  # _check refused it before
