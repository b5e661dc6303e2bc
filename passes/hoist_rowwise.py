"""Row-wise hoisting: a row kernel over a step of a hoisted sequence runs once over all steps.

After input-projection hoisting (``hoist-projection``) a recurrent loop reads its step input as a
row of a loop-invariant sequence, ``select(P, 0, i)``. Work that depends only on that row is
still done once per step. An op is *row-local along axis 0* when row ``i`` of its result depends
only on row ``i`` of its inputs; for such an op ``f``::

    f(select(P, 0, i), invariants) == select(f(P, invariants), 0, i)

so a for-loop that visits every row of ``P`` can compute ``f(P)`` once before the loop and read one
row per step. The LayerNorm-LSTM is the case that matters: its cell normalises the input
projection every step, ``layer_norm(x_t @ w_ih.T, w, b)``; after this pass the forward makes one
native layer-norm call over the (T*B, 4H) projection, and the backward, which differentiates this
graph, one ``layer_norm_backward`` over the whole sequence after the reverse loop (the step
cotangents are written into one preallocated sequence array, slot by slot).

Which ops move. The pass starts from *row kernels*: ``layer_norm`` (normalises the last axis),
``softmax`` and ``log_softmax`` over the last axis of the row. These are the ops worth moving: the
elementwise fuser cannot fuse a row reduction into the per-step cell kernel, so each is its own
call per step. A row kernel moves with the chain that computes its input from the sequence rows:

- ``select(P, 0, i)`` with ``P`` defined outside the loop and the loop a for-loop over every index
  of axis 0 of ``P`` (the row itself);
- an elementwise op whose other operands are loop-invariant and have no more axes than the row
  (they broadcast along the rows alike), used only by the chain;
- ``row @ W`` with ``W`` a loop-invariant 2-D matrix, used only by the chain (one GEMM).

Cheap elementwise ops that do not feed a row kernel stay in the loop (``x_proj[i] + b`` is fused
into the cell's kernel for free; hoisting it would add a full pass over the sequence's memory). An
elementwise op that does feed one is moved with it: the row kernel reads its result from memory
either way, so one pass over the sequence replaces T small passes. An op whose result is also read
elsewhere in the body is not moved (the body would still compute it). A matmul of the rows of a
sequence this pass computed (or of such a chain) moves as one GEMM, and row kernels of its rows in
turn; a matmul of a plain row of the input is left to ``hoist-projection``.
"""

from __future__ import annotations

from ir.core import Graph, Node, Value, clone_node
from ir.registry import NOT_CONSTANT, const, infer_types, lookup
from ir.types import TensorType
from passes.hoist_projection import (
    MATMUL,
    SELECT,
    covers_sequence,
    sequence_projection,
)
from passes.licm import LOOP, defined_inside

NAME = "hoist-rowwise"
LAYER_NORM = "tensor::layer_norm"
SOFTMAX = ("tensor::softmax", "tensor::log_softmax")
RESHAPE = "tensor::reshape"
SIZE = "tensor::size"


def _rank(value: Value) -> int | None:
    t = value.type
    return t.rank if isinstance(t, TensorType) and t.shape is not None else None


def _no_wider(value: Value, rank: int) -> bool:
    """Does an invariant operand broadcast along a sequence of rows of rank ``rank`` alike?
    (A tensor must have no more axes than a row; non-tensors are scalars or options.)"""
    t = value.type
    if not isinstance(t, TensorType):
        return True
    r = _rank(value)
    return r is not None and r <= rank


# -- which sequences a loop covers ---------------------------------------------------------------
def covers(loop: Node, seq: Value) -> bool:
    """Does the for-loop visit every row (axis 0) of ``seq``? Beyond ``covers_sequence``, a
    sequence with as many rows as a covered one counts (see ``same_rows``), for graphs whose trip
    count is ``size(x, 0)`` of the input that a projection was computed from."""
    seen = 0
    while seq is not None and seen < 16:
        if covers_sequence(loop, seq):
            return True
        seq, seen = same_rows(seq), seen + 1
    return False


def same_rows(seq: Value) -> Value | None:
    """A value with the same number of rows (axis 0) as ``seq`` by construction, if one is known:
    the input of a row kernel or of a row-wise elementwise op, or the ``x`` of a projection
    ``reshape(matmul(reshape(x, (-1, I)), W), (-1, x.shape[1], ..., G))``."""
    node, rank = seq.node, _rank(seq)
    if rank is None or rank < 1:
        return None
    if node.kind == LAYER_NORM or node.kind in SOFTMAX:
        return node.inputs[0] if _rank(node.inputs[0]) == rank else None
    op = lookup(node.kind)
    if op is not None and op.is_elementwise and len(node.outputs) == 1:
        full = [v for v in node.inputs if _rank(v) == rank]
        others_narrow = all(_no_wider(v, rank - 1) for v in node.inputs if v not in full)
        return full[0] if len(full) == 1 and others_narrow else None
    if node.kind == RESHAPE:
        return _projection_source(node)
    return None


def _projection_source(reshape: Node) -> Value | None:
    """``x`` for ``hoist-projection``'s ``reshape(matmul(reshape(x, (-1, I)), W), dims)`` when
    ``dims`` is ``(-1, x.shape[1], ..., x.shape[-2], G)`` (so the result has x's rows)."""
    product = reshape.inputs[0].node
    if product.kind != MATMUL or product.inputs[0].node.kind != RESHAPE:
        return None
    x = product.inputs[0].node.inputs[0]
    rank, dims = _rank(x), _shape_items(reshape.inputs[1])
    if rank is None or dims is None or len(dims) != rank or not _is_int(dims[0], -1):
        return None
    for axis in range(1, rank - 1):
        if not _is_dim_of(dims[axis], x, axis):
            return None
    return x


def _shape_items(shape: Value) -> list[Value | int] | None:
    if shape.is_constant and isinstance(shape.constant, tuple | list):
        return list(shape.constant)
    if shape.node.kind == "prim::TupleConstruct":
        return list(shape.node.inputs)
    return None


def _is_int(item: Value | int, n: int) -> bool:
    if isinstance(item, Value):
        return item.is_constant and item.constant == n
    return item == n


def _is_dim_of(item: Value | int, x: Value, axis: int) -> bool:
    """Is ``item`` axis ``axis`` of ``x`` (its known size, or ``size(x, axis)``)?"""
    if isinstance(item, Value) and item.node.kind == SIZE:
        return item.node.inputs[0] is x and const(item.node, 1) == axis
    size = x.type.shape[axis] if isinstance(x.type, TensorType) and x.type.shape else None
    value = item.constant if isinstance(item, Value) and item.is_constant else item
    return size is not None and value == size


# -- the rewrite -----------------------------------------------------------------------------------
class RowHoister:
    """Hoists the row kernels of one for-loop's body; ``lifted`` maps a body value to the value
    before the loop whose row ``i`` it is."""

    def __init__(self, loop: Node, created: set[Value]) -> None:
        self.loop = loop
        self.lifted: dict[Value, Value] = {}
        self.created = created
        """the sequences this pass computed before the loop (shared by repeated visits)."""

    @property
    def graph(self) -> Graph:
        return self.loop.graph

    @property
    def counter(self) -> Value:
        return self.loop.blocks[0].params[0]

    def invariant(self, value: Value) -> bool:
        """Is ``value`` the same on every iteration (defined before the loop, or a constant)?"""
        return value.is_constant or not defined_inside(value, self.loop)

    def outside(self, value: Value) -> Value:
        """``value`` usable before the loop: a constant of the body is made again there."""
        if not defined_inside(value, self.loop):
            return value
        with self.graph.inserting_before(self.loop):
            return self.graph.constant(value.constant, value.type)

    def in_body(self, node: Node) -> bool:
        return node.owner is self.loop.blocks[0]

    def lift(self, value: Value) -> Value | None:
        """The hoisted sequence whose row ``i`` is ``value``, inserting what it needs before the
        loop; None when ``value`` is not row-local in the rows. A value computed in the body moves
        only when the chain being hoisted is its one reader (else the body still computes it)."""
        if value in self.lifted:
            return self.lifted[value]
        node = value.node
        if not self.in_body(node) or _rank(value) is None:
            return None
        if node.kind == SELECT:
            return self._row(node)
        if len(value.uses) != 1:
            return None
        if node.kind == MATMUL:
            return self._lift_matmul(node)
        op = lookup(node.kind)
        if op is not None and op.is_elementwise and op.is_pure and len(node.outputs) == 1:
            return self._lift_elementwise(node)
        return None

    def _row(self, node: Node) -> Value | None:
        seq, index = node.inputs[0], node.inputs[2]
        if const(node, 1) != 0 or index is not self.counter or not self.invariant(seq):
            return None
        if (_rank(seq) or 0) < 1 or not covers(self.loop, seq):
            return None
        return seq

    def _lift_matmul(self, node: Node) -> Value | None:
        left, weight = node.inputs
        if not self.invariant(weight) or _rank(weight) != 2 or (_rank(left) or 0) < 1:
            return None
        seq = self.lift(left)
        if seq is None:
            return None
        with self.graph.inserting_before(self.loop):
            return self._remember(node.output, sequence_projection(self.graph, seq, weight, None))

    def _lift_elementwise(self, node: Node) -> Value | None:
        rank = _rank(node.output)
        if rank is None:
            return None
        inputs: list[Value] = []
        if all(self.invariant(v) for v in node.inputs):
            return None  # the same value at every step, not a row of a sequence (LICM's job)
        for v in node.inputs:
            if self.invariant(v):
                if not _no_wider(v, rank):
                    return None
                inputs.append(v)
                continue
            if _rank(v) != rank:  # a row that the op broadcasts: rows would not line up
                return None
            seq = self.lift(v)
            if seq is None:
                return None
            inputs.append(seq)
        return self._remember(node.output, self._hoisted_copy(node, inputs))

    def _hoisted_copy(self, node: Node, inputs: list[Value]) -> Value:
        """``node`` applied to ``inputs`` (sequences for its rows), right before the loop."""
        vmap = {old: self.outside(new) for old, new in zip(node.inputs, inputs)}
        copy = clone_node(node, self.graph, vmap)
        copy.output.type = infer_types(copy)[0]
        copy.insert_before(self.loop)
        return copy.output

    def _remember(self, value: Value, seq: Value) -> Value:
        self.lifted[value] = seq
        return seq

    # -- row kernels ----------------------------------------------------------------------------
    def hoistable_kernel(self, node: Node) -> bool:
        """Is ``node`` a row kernel over the row's last axis, or a matmul by a 2-D weight, with
        loop-invariant parameters?"""
        if not self.in_body(node):
            return False
        if node.kind == MATMUL:
            weight = node.inputs[1]
            return self.invariant(weight) and _rank(weight) == 2 and (
                _rank(node.inputs[0]) or 0) >= 1
        if not (node.kind == LAYER_NORM or node.kind in SOFTMAX):
            return False
        rank = _rank(node.inputs[0])
        if rank is None or rank < 1 or _rank(node.output) != rank:
            return False
        params = node.inputs[1:]
        if not all(self.invariant(v) and _no_wider(v, rank) for v in params):
            return False
        if node.kind in SOFTMAX:
            axis = const(node, 1, -1)
            return axis is not NOT_CONSTANT and int(axis) in (-1, rank - 1)
        return True

    def _kernel_over(self, node: Node, seq: Value) -> Value:
        """The kernel ``node`` applied to the whole sequence ``seq``, before the loop."""
        if node.kind == MATMUL:
            with self.graph.inserting_before(self.loop):
                return sequence_projection(self.graph, seq, self.outside(node.inputs[1]), None)
        inputs = [seq, *node.inputs[1:]]
        if node.kind in SOFTMAX:
            with self.graph.inserting_before(self.loop):
                inputs[1] = self.graph.constant(-1)  # the row's last axis is the sequence's
        return self._hoisted_copy(node, inputs)

    def hoist_kernel(self, node: Node) -> bool:
        """Replace the kernel ``node`` by a row of it computed over the whole sequence."""
        left = node.inputs[0]
        if node.kind == MATMUL and left.node.kind == SELECT and (
                left.node.inputs[0] not in self.created):
            return False  # a product of the input's rows: hoist-projection's rewrite
        seq = self.lift(left)
        if seq is None:
            return False
        hoisted = self._kernel_over(node, seq)
        self.created.add(hoisted)
        with self.graph.inserting_before(self.loop):
            zero = self.graph.constant(0)
        row = self.graph.create(SELECT, [hoisted, zero, self.counter], [node.output.type],
                                names=[node.output.name])
        row.insert_before(node)
        node.output.replace_all_uses_with(row.output)
        dead = [node]
        while dead:
            n = dead.pop()
            if n.owner is None or any(o.uses for o in n.outputs):
                continue
            producers = [v.node for v in n.inputs if self.in_body(v.node)]
            n.erase()
            dead.extend(producers)
        return True


def hoist_rows_in_loop(loop: Node) -> bool:
    """Hoist every kernel of ``loop``'s body that reads rows (repeatedly, so kernels of the rows
    of hoisted kernels move too); True when one moved."""
    changed, created = False, set()
    while True:
        hoister = RowHoister(loop, created)
        moved = False
        for node in loop.blocks[0].nodes:  # a copy: hoisting erases nodes
            if node.owner is not None and hoister.hoistable_kernel(node):
                moved |= hoister.hoist_kernel(node)
        if not moved:
            return changed
        changed = True


def run(graph: Graph) -> bool:
    """Hoist row kernels out of every for-loop over a sequence (nested loops included)."""
    changed = False
    for loop in [n for n in graph.walk() if n.kind == LOOP]:
        changed |= hoist_rows_in_loop(loop)
    return changed


__all__ = ["NAME", "RowHoister", "covers", "hoist_rows_in_loop", "run", "same_rows"]
