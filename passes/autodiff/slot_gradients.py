"""A sequence's gradient written slot by slot in a reverse loop, not summed whole every step.

A forward loop that reads ``x[t]`` for ``t in range(n)`` gets a reverse loop that adds each
step's gradient into a zeros array the size of the whole sequence::

    grad_x = zeros(T, B, I)
    for k in range(n):
        grad_x = grad_x + select_backward(g_k, (T, B, I), 0, n - 1 - k)

Each step builds and adds a whole ``(T, B, I)`` array: T times the work of the step itself, and
a carried value no native loop can keep. When the slots the steps write are all different (the
index is the counter ``k`` or ``n - 1 - k``, ``n`` the loop's trip count, so every index is in
``0..n-1`` and none repeats) and the array starts as zeros (a fresh ``zeros`` made for this loop
alone, or a new one for a constant of zeros), the sum is the array with each step's gradient
stored in its slot::

    grad_x = zeros(T, B, I)
    for k in range(n):
        write_slot(grad_x, 0, n - 1 - k, g_k)

Loops with a constant trip count of ``range(x.shape[0])`` never meet the pattern (``x`` is read
as ``unbind``, whose gradient is a stack the layout passes write slot by slot); loops whose trip
count is known at run time (an int argument, ``len(xs)``) do. An index out of the array's range
raises as ``select_backward`` did (the forward step that read the slot raised first).
"""

from __future__ import annotations

from ir.core import Graph, Node, Value
from ir.kinds import ADD, COPY, LOOP, SELECT_BACKWARD, WRITE_SLOT, ZEROS
from ir.types import TensorType
from passes.autodiff.batch_accumulation import each_slot_once, zeros_constant
from passes.licm import is_for_loop

NAME = "slot-gradients"


def run(graph: Graph) -> bool:
    """Write the slot gradients of every counted loop in place; True when any loop changed."""
    changed = False
    for node in list(graph.walk()):
        if node.kind == LOOP and is_for_loop(node):
            changed |= slot_loop(node)
    return changed


def slot_loop(loop: Node) -> bool:
    """Rewrite each carried ``acc + select_backward(g, shape, axis, index)`` of ``loop`` whose
    slots are written once each into ``write_slot``s of the fresh zeros it starts from."""
    body = loop.blocks[0]
    changed = False
    for j in range(len(loop.outputs)):
        param, result, init = body.params[j + 1], body.returns[j + 1], loop.inputs[j + 2]
        add = result.node
        if (add.kind != ADD or add.owner is not body or [u.node for u in param.uses] != [add]
                or len(result.uses) != 1 or not isinstance(param.type, TensorType)
                or result.type != param.type or init.type != param.type):
            continue
        (sb,) = [v for v in add.inputs if v is not param] or [None]
        if sb is None or sb.node.kind != SELECT_BACKWARD or sb.node.owner is not body \
                or len(sb.uses) != 1:
            continue
        g, _, axis, index = sb.node.inputs
        gt = g.type
        if (not axis.is_constant or not isinstance(gt, TensorType)
                or gt.dtype != param.type.dtype or not each_slot_once(index, loop)):
            continue
        buf = _fresh_zeros(init, loop)
        if buf is None or buf.type != param.type:
            continue
        write = loop.graph.create(WRITE_SLOT, [buf, axis, index, g], [])
        write.insert_before(add)
        result.replace_all_uses_with(param)  # the step passes the array on; DCE drops the carry
        add.erase()
        sb.node.erase()
        loop.outputs[j].replace_all_uses_with(buf)
        changed = True
    return changed


def _fresh_zeros(v: Value, loop: Node) -> Value | None:
    """A zeros array to write the slots into, made next to ``loop`` (each time the loop is
    reached) for it alone: ``v`` itself when ``v`` is such a ``tensor::zeros`` (or a copy of
    a constant of zeros), a new ``tensor::zeros`` when ``v`` is a constant of zeros; else
    None."""
    node = v.node
    value = zeros_constant(v)
    if value is not None:
        graph = loop.graph
        with graph.inserting_before(loop):
            shape, dtype = graph.constant(tuple(value.shape)), graph.constant(str(value.dtype))
            return graph.insert_typed(ZEROS, [shape, dtype]).output
    if node.owner is not loop.owner or [u.node for u in v.uses] != [loop]:
        return None
    if node.kind == ZEROS or (node.kind == COPY and zeros_constant(node.inputs[0]) is not None):
        return v
    return None


__all__ = ["NAME", "run", "slot_loop"]
