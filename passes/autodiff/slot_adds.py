"""A slot's gradient added to that slot, not to the whole array.

A loop that reads a row of an array it fills (``H[t] = f(H[t - 1])``, Karpathy's batched LSTM
writing ``Hout[t]`` and reading ``Hout[t - 1]``) gets a reverse loop that carries the array's
cotangent and adds each step's row read back into it::

    ct = select_put(ct, 0.0, 0, t)                           # H[t] = v: the slot's old value
    ct = ct + If(t > 0, select_backward(g, (n, B, H), 0, t - 1), zeros(n, B, H))

Every step makes two whole ``(n, B, H)`` arrays and adds one: the reverse loop's time grows as
n squared. The sum differs from ``ct`` only in slot ``t - 1``, so it is that slot updated::

    ct = If(t > 0, select_put(ct, select(ct, 0, t - 1) + g, 0, t - 1), ct)

(the add moved into the branch of an ``If`` whose other branch adds zeros), which
``inplace-writes`` then stores into ``ct`` itself once the loop owns it. The pass also moves a
read of a slot of an array (``select(ct, 0, t)``, the row a step's ``H[t] = v`` passes back)
before a write into a copy of that array (``select_put(ct, 0.0, 0, t)``) when its inputs are
there already: nothing then reads the old array after the write, and the write can be in place
too. Both rewrites give the same values; a slot index out of range raises as
``select_backward`` did (the forward read raised first).
"""

from __future__ import annotations

from ir.core import Block, Graph, Node, Value
from ir.kinds import ADD, CONSTANT, IF, SELECT, SELECT_BACKWARD, SELECT_PUT, ZEROS
from ir.types import TensorType
from passes.autodiff.batch_accumulation import zeros_constant

NAME = "slot-adds"


def run(graph: Graph) -> bool:
    """Add the slot gradients of every ``acc + select_backward(...)`` into their slots, and
    read slots before writes into copies of their arrays; True when anything changed."""
    changed = False
    for node in list(graph.walk()):
        if node.kind == ADD and node.owner is not None:
            changed |= slot_add(node)
    for node in list(graph.walk()):
        if node.kind == SELECT_PUT and node.owner is not None:
            changed |= _reads_first(node)
    return changed


def slot_add(add: Node) -> bool:
    """Rewrite ``acc + select_backward(g, shape, axis, i)`` (or of an ``If`` output whose
    branches give such a value or zeros) when the sum has ``acc``'s type."""
    for acc, other in (add.inputs, reversed(add.inputs)):
        if not _full(acc) or add.output.type != acc.type or other.type != acc.type \
                or len(other.uses) != 1:
            continue
        if _slot_gradient(other, acc) and other.node.owner is add.owner:
            with add.graph.inserting_before(add):
                out = _added_to_slot(add.graph, acc, other.node)
            add.output.replace_all_uses_with(out)
            add.erase()
            other.node.erase()
            return True
        if other.node.kind == IF and other.node.owner is add.owner and _before(acc, other.node):
            if _add_in_branches(other, acc):
                add.output.replace_all_uses_with(other)
                add.erase()
                return True
    return False


def _full(v: Value) -> bool:
    t = v.type
    return isinstance(t, TensorType) and t.dtype is not None and t.shape is not None and \
        all(isinstance(d, int) for d in t.shape)


def _slot_gradient(v: Value, acc: Value) -> bool:
    """Whether ``v`` is ``select_backward(g, shape, axis, i)`` of ``acc``'s shape, with ``g``
    of ``acc``'s dtype and a constant axis."""
    node = v.node
    if node.kind != SELECT_BACKWARD:
        return False
    g, shape, axis, _ = node.inputs
    return axis.is_constant and shape.is_constant and \
        tuple(shape.constant) == tuple(acc.type.shape) and \
        isinstance(g.type, TensorType) and g.type.dtype == acc.type.dtype


def _zeros(v: Value, acc: Value) -> bool:
    """Whether ``v`` is zeros of ``acc``'s type: a ``zeros`` made for this value alone, or a
    constant of zeros (a small one constant propagation folded)."""
    if v.type != acc.type:
        return False
    if v.node.kind == ZEROS:
        return len(v.uses) == 1
    value = zeros_constant(v)
    return value is not None and value.shape == tuple(acc.type.shape)


def _added_to_slot(graph: Graph, acc: Value, sb: Node) -> Value:
    """``select_put(acc, select(acc, axis, i) + g, axis, i)``, inserted at the insert point."""
    g, _, axis, index = sb.inputs
    old = graph.insert_typed(SELECT, [acc, axis, index], source=sb.source).output
    new = graph.insert_typed(ADD, [old, g], source=sb.source).output
    return graph.insert_typed(SELECT_PUT, [acc, new, axis, index], source=sb.source).output


def _add_in_branches(out: Value, acc: Value) -> bool:
    """Move ``acc + out`` into the branches of ``out``'s ``If``: each branch returns a slot
    gradient (made in it, for it alone) or zeros; False, changing nothing, otherwise."""
    node, j = out.node, out.index
    returned = [block.returns[j] for block in node.blocks]
    if not all((_slot_gradient(r, acc) and r.node.owner is block and len(r.uses) == 1)
               or _zeros(r, acc) for r, block in zip(returned, node.blocks)):
        return False
    for block, r in zip(node.blocks, returned):
        new = acc
        if r.node.kind == SELECT_BACKWARD:
            with node.graph.inserting_before(block):
                new = _added_to_slot(node.graph, acc, r.node)
        _set_return(block, j, new)
        if not r.uses and r.node.kind != CONSTANT:
            r.node.erase()
    return True


def _set_return(block: Block, j: int, value: Value) -> None:
    returns = list(block.returns)
    returns[j] = value
    block.set_returns(returns)


def _before(v: Value, node: Node) -> bool:
    """Whether ``v`` is available where ``node`` is: defined before it in its block, or a
    parameter of that block or of a block around it."""
    block = node.owner
    if v.node.owner is block:
        nodes = block.nodes
        return v.node in nodes and nodes.index(v.node) < nodes.index(node)
    while block is not None:
        if v in block.params:
            return True
        owner = block.owner
        if owner is None:
            return False
        if v.node.owner is owner.owner and owner.owner is not None:
            nodes = owner.owner.nodes
            return v.node in nodes and nodes.index(v.node) < nodes.index(owner)
        block = owner.owner
    return False


def _reads_first(write: Node) -> bool:
    """Move the ``select``s of ``write``'s old array that come after it in its block, and
    whose inputs are there before it, to just before it."""
    old = write.inputs[0]
    block = write.owner
    nodes = block.nodes
    at = nodes.index(write)
    moved = False
    for use in list(old.uses):
        read = use.node
        if read.kind != SELECT or read.owner is not block or use.index != 0:
            continue
        if nodes.index(read) < at:
            continue
        if not all(_before(v, write) or v is old for v in read.inputs):
            continue
        read.move_before(write)
        nodes = block.nodes
        at = nodes.index(write)
        moved = True
    return moved


__all__ = ["NAME", "run", "slot_add"]
