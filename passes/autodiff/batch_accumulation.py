"""Sums over loop iterations become one matmul or one reduction of stacked arrays after the loop.

A reverse loop accumulates weight gradients step by step: ``dW = dW + h_t^T @ dgates_t`` and
``db = db + sum_to(dgates_t, b.shape)``. Each step is a small matmul plus an add over the whole
weight gradient. By the tree identity ``L1 @ R1 + L2 @ R2 = cat(L1, L2, 1) @ cat(R1, R2, 0)`` the
sum over all steps is ONE matmul of the per-step operands stacked over time, and a sum of
reductions is one reduction of the stacked values. This pass finds such accumulators and rewrites

    dW = dW0;  for k: ... dW = dW + A_k @ B_k            (A_k: q x m, B_k: q x p per step)

into

    bufA = empty(n, ...); bufB = empty(n, q, p)
    for k: ... write_slot(bufA, 0, s_k, A_k); write_slot(bufB, 0, s_k, B_k)
    dW = dW0 + reshape(bufA)^T @ reshape(bufB, (n*q, p))

(``A_k = transpose(X_k)`` collects ``X_k``, so the stacked operand is a reshape away from the
matmul). The slot ``s_k`` is the loop counter, or the slot an existing ``write_slot`` of the same
value already uses (a per-step gradient the backward already stacks for an input), so each value
is stored once. Accumulators seeded with zeros lose the add.

It applies to counted loops with a constant trip count, to a loop-carried tensor whose block
parameter is only read by a chain of ``add``s ending in its next value, and to addends computed in
the body: ``matmul`` of 2-D operands of known shapes, or ``sum_to``. Addends of other forms stay in
the loop. The pass is written for backward graphs but holds for any graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ir.core import CONSTANT, Block, Graph, Node, Value
from ir.kinds import SELECT, ZEROS
from ir.registry import infer_types
from ir.types import TensorType

NAME = "batch-accumulation"

LOOP = "prim::Loop"
ADD = "tensor::add"
MATMUL = "tensor::matmul"
SUM_TO = "tensor::sum_to"
TRANSPOSE = "tensor::transpose"
EMPTY = "tensor::empty"
WRITE_SLOT = "tensor::write_slot"


def run(graph: Graph) -> bool:
    """Batch the accumulations of every counted loop; True when any loop changed."""
    changed = False
    for node in list(graph.walk()):
        if node.kind == LOOP and _constant_trips(node) is not None:
            changed |= batch_loop(node)
    return changed


def _constant_trips(loop: Node) -> int | None:
    trips, cond = loop.inputs[0], loop.inputs[1]
    body_cond = loop.blocks[0].returns[0]
    is_for = all(v.is_constant and v.constant is True for v in (cond, body_cond))
    if not is_for or not trips.is_constant or int(trips.constant) < 1:
        return None
    return int(trips.constant)


def _static(v: Value) -> TensorType | None:
    t = v.type
    if isinstance(t, TensorType) and t.dtype and t.shape is not None and None not in t.shape:
        return t
    return None


# -- finding accumulators --------------------------------------------------------------------------
def accumulation_chain(loop: Node, j: int) -> list[Node] | None:
    """The ``add`` nodes carrying loop-carried value ``j`` from its parameter to its next value,
    when nothing else reads the running sum; None otherwise."""
    body = loop.blocks[0]
    param, result = body.params[j + 1], body.returns[j + 1]
    t = _static(param)
    if t is None:
        return None
    chain, v = [], param
    while v is not result:
        if len(v.uses) != 1:
            return None
        node = v.uses[0].node
        if node.kind != ADD or node.owner is not body or node.output.type != t:
            return None
        chain.append(node)
        v = node.output
    if len(result.uses) != 1:  # the body's return only
        return None
    return chain


def _within(node: Node, loop: Node) -> bool:
    """Is ``node`` nested (at any depth) in ``loop``'s body?"""
    block = node.owner
    while block is not None and block.owner is not None:
        if block.owner is loop:
            return True
        block = block.owner.owner
    return False


def _addend(add: Node, running: Value) -> Value:
    a, b = add.inputs
    return b if a is running else a


# -- collecting per-iteration values --------------------------------------------------------------
@dataclass
class LoopBatcher:
    """Rewrites one loop: owns the buffers it made and the nodes it adds after the loop."""

    loop: Node
    trips: int
    after: Node
    """the node that followed the loop: new nodes after the loop go before it, in order."""
    buffers: dict[tuple[Value, Value], Value] = field(default_factory=dict)
    """(per-iteration value, slot) -> the array holding it at that slot."""

    @property
    def body(self) -> Block:
        return self.loop.blocks[0]

    @property
    def graph(self) -> Graph:
        return self.loop.graph

    def emit_after(self, kind: str, *args: object) -> Value:
        """A single-output node after the loop (and after the nodes emitted before it)."""
        node = self._create(kind, args)
        node.insert_before(self.after)
        return node.output

    def _create(self, kind: str, args: tuple[object, ...]) -> Node:
        inputs = [a if isinstance(a, Value) else self._constant(a) for a in args]
        node = self.graph.create(kind, inputs, [])
        for t in infer_types(node):
            node.add_output(t)
        return node

    def _constant(self, value: object) -> Value:
        from ir.constants import constant_type
        if isinstance(value, list):
            value = tuple(value)
        node = self.graph.create(CONSTANT, [], [constant_type(value)], {"value": value})
        node.insert_before(self.loop)
        return node.output

    def varies(self, v: Value) -> bool:
        """Is ``v`` computed in the loop's body (a new value each iteration)?"""
        return v.node.owner is self.body and not v.is_constant

    def existing_slot(self, v: Value) -> Value | None:
        """The slot of a ``write_slot`` that already stacks ``v`` over the whole loop, or of the
        ``select`` that reads ``v`` from an input stacking it already (``_read_slot``), if any."""
        read = self._read_slot(v)
        if read is not None:
            return read
        for use in v.uses:
            node = use.node
            if node.kind != WRITE_SLOT or use.index != 3 or node.owner is not self.body:
                continue
            buf, axis, slot = node.inputs[0], node.inputs[1], node.inputs[2]
            if self._whole_buffer(buf, v) and axis.is_constant and axis.constant == 0 \
                    and each_slot_once(slot, self.loop):
                self.buffers.setdefault((v, slot), buf)
                return slot
        return None

    def _read_slot(self, v: Value) -> Value | None:
        """The slot ``s_k`` when ``v`` is ``select(buf, 0, s_k)`` of a graph input ``buf``
        shaped ``(n, *v.shape)`` that only such reads use (a stack the forward saved: the
        backward of an LSTM reads its saved states ``h_t`` so, and its weight gradient's product
        takes the stack itself instead of a copy of it made slot by slot)."""
        node = v.node
        if node.kind != SELECT or node.owner is not self.body:
            return None
        buf, axis, slot = node.inputs
        t, vt = _static(buf), _static(v)
        if (buf.node is not self.graph.block.param_node or t is None or vt is None
                or t.shape != (self.trips, *vt.shape) or t.dtype != vt.dtype
                or not (axis.is_constant and axis.constant == 0)
                or any(u.node.kind != SELECT or u.index != 0 for u in buf.uses)
                or not each_slot_once(slot, self.loop)):
            return None
        self.buffers.setdefault((v, slot), buf)
        return slot

    def _whole_buffer(self, buf: Value, v: Value) -> bool:
        """A fresh array made just for stacking ``v``: shaped ``(n, *v.shape)``, next to the
        loop, with one writer and no other readers inside the loop."""
        t = _static(buf)
        if buf.node.kind != EMPTY or t is None or buf.node.owner is not self.loop.owner:
            return False
        if t.shape != (self.trips,) + tuple(v.type.shape):  # type: ignore[union-attr]
            return False
        writers = [u for u in buf.uses if u.node.kind == WRITE_SLOT]
        inside = [u for u in buf.uses if _within(u.node, self.loop)]
        return len(writers) == 1 and inside == writers

    def stacked(self, v: Value, slot: Value) -> Value:
        """An array of shape ``(n, *v.shape)`` whose slot ``s_k`` holds ``v`` of iteration k."""
        found = self.buffers.get((v, slot))
        if found is None and self._read_slot(v) is slot:
            found = self.buffers[(v, slot)]
        if found is not None:
            return found
        t = _static(v)
        assert t is not None
        empty = self._create(EMPTY, ((self.trips, *t.shape), t.dtype))
        empty.insert_before(self.loop)
        buf = empty.output
        write = self.graph.create(WRITE_SLOT, [buf, self._constant(0), slot, v], [])
        write.insert_before(self.body.return_node)
        self.buffers[(v, slot)] = buf
        return buf


# -- the rewrite -----------------------------------------------------------------------------------
def batch_loop(loop: Node) -> bool:
    """Move every batchable addend of every accumulator of ``loop`` after it."""
    trips = _constant_trips(loop)
    if trips is None or loop.next is None:
        return False
    batcher = LoopBatcher(loop, trips, loop.next)
    changed = False
    for j in range(len(loop.outputs)):
        changed |= _batch_accumulator(batcher, j)
    return changed


def _batch_accumulator(b: LoopBatcher, j: int) -> bool:
    chain = accumulation_chain(b.loop, j)
    if not chain:
        return False
    param = b.body.params[j + 1]
    total: Value | None = None
    running = param
    for add in chain:
        addend = _addend(add, running)
        batched = _batched_sum(b, addend) if _only_accumulated(b, addend) else None
        if batched is None:
            running = add.output
            continue
        add.output.replace_all_uses_with(running)
        add.erase()
        total = batched if total is None else b.emit_after(ADD, total, batched)
    if total is None:
        return False
    _add_to_loop_output(b, j, total)
    return True


def _only_accumulated(b: LoopBatcher, addend: Value) -> bool:
    """Is ``addend`` only ever added to running sums (so batching removes it from the body)?"""
    return all(use.node.kind == ADD and use.node.owner is b.body for use in addend.uses)


def _add_to_loop_output(b: LoopBatcher, j: int, total: Value) -> None:
    """Uses of the loop's output ``j`` read ``output + total`` instead (``init + total`` when the
    loop no longer changes the value, ``total`` alone when that init is zeros)."""
    out = b.loop.outputs[j]
    uses = list(out.uses)
    base: Value | None = out
    if b.body.returns[j + 1] is b.body.params[j + 1]:  # nothing left in the loop: init passes
        init = b.loop.inputs[j + 2]
        base = None if _is_zeros(init) else init
    result = total if base is None else b.emit_after(ADD, base, total)
    for use in uses:
        use.node.set_input(use.index, result)


def _is_zeros(v: Value) -> bool:
    return v.node.kind == ZEROS or zeros_constant(v) is not None


def zeros_constant(v: Value) -> np.ndarray | None:
    """The array of ``v`` when it is a constant of zeros."""
    node = v.node
    value = node.attrs.get("value") if node.kind == CONSTANT else None
    return value if isinstance(value, np.ndarray) and not value.any() else None


def each_slot_once(slot: Value, loop: Node) -> bool:
    """``slot`` is the counter ``k`` or ``n - 1 - k`` of ``loop`` (``n`` its trip count, a
    constant or a value): every step writes a slot of ``0..n-1`` no other step writes."""
    counter, trips = loop.blocks[0].params[0], loop.inputs[0]
    if slot is counter:
        return True
    node = slot.node
    if node.kind != "tensor::sub" or node.inputs[1] is not counter:
        return False
    last = node.inputs[0]
    if last.is_constant and trips.is_constant:
        return type(last.constant) is int and last.constant == int(trips.constant) - 1
    before = last.node
    return (before.kind == "tensor::sub" and before.inputs[0] is trips
            and before.inputs[1].is_constant and type(before.inputs[1].constant) is int
            and before.inputs[1].constant == 1)


def _batched_sum(b: LoopBatcher, addend: Value) -> Value | None:
    """The sum of ``addend`` over all iterations, computed after the loop; None if it can't be."""
    if not b.varies(addend):
        return None
    node = addend.node
    if node.kind == MATMUL:
        return _batched_matmul(b, node)
    if node.kind == SUM_TO and node.inputs[1].is_constant:
        x = node.inputs[0]
        if not b.varies(x) or _static(x) is None:
            return None
        slot = b.existing_slot(x) or b.body.params[0]
        return b.emit_after(SUM_TO, b.stacked(x, slot), node.inputs[1].constant)
    return None


def _batched_matmul(b: LoopBatcher, node: Node) -> Value | None:
    """``sum_k A_k @ B_k`` as ``[A_1 .. A_n] @ [B_1; ..; B_n]`` (2-D operands of known shape)."""
    left, right = node.inputs
    lt, rt = _static(left), _static(right)
    if lt is None or rt is None or len(lt.shape) != 2 or len(rt.shape) != 2:  # type: ignore
        return None
    if not (b.varies(left) and b.varies(right)):
        return None
    x = _transposed_operand(left)
    lhs_value = x if x is not None and b.varies(x) else left
    slot = b.existing_slot(right) or b.existing_slot(lhs_value) or b.body.params[0]
    q, p = rt.shape  # type: ignore[misc]
    rhs = b.emit_after("tensor::reshape", b.stacked(right, slot), (b.trips * q, p))
    if lhs_value is x:
        stacked = b.emit_after("tensor::reshape", b.stacked(x, slot), (b.trips * q, lt.shape[0]))
        lhs = b.emit_after(TRANSPOSE, stacked, (1, 0))
    else:
        moved = b.emit_after(TRANSPOSE, b.stacked(left, slot), (1, 0, 2))
        lhs = b.emit_after("tensor::reshape", moved, (lt.shape[0], b.trips * q))
    return b.emit_after(MATMUL, lhs, rhs)


def _transposed_operand(v: Value) -> Value | None:
    """``x`` when ``v = transpose(x)`` of a 2-D ``x`` (axes None or (1, 0))."""
    node = v.node
    if node.kind != TRANSPOSE or _static(node.inputs[0]) is None:
        return None
    axes = node.inputs[1]
    if not axes.is_constant or axes.constant not in (None, (1, 0), [1, 0]):
        return None
    return node.inputs[0] if len(node.inputs[0].type.shape) == 2 else None  # type: ignore


__all__ = ["NAME", "accumulation_chain", "batch_loop", "each_slot_once", "run",
           "zeros_constant"]
