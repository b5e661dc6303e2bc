"""Unbind pops: a list of an array's rows popped once per step of a counted loop becomes a
``select`` of the row that step pops.

The backward of a layer that stacks its steps' outputs receives the stack's cotangent and hands
each reverse step its row: the gradient of ``stack`` is ``unbind``, and the reverse loop pops
the list from its end::

    %rows = tensor::unbind(%dy, 0)                 // dy: (N, ...), N the loop's trip count
    prim::Loop(%N, %true, ...)
      block0(%k, ...):
        %g = prim::ListPop(%rows, -1)

``unbind`` makes one view object per row before the loop (100 at T=100: a tenth of the Python
time a native reverse loop's call spends outside its machine code at B=8, H=64), and the native
loop reads each item's address from the list. Here the step reads the row itself::

    prim::Loop(%N, %true, ...)
      block0(%k, ...):
        %t = tensor::sub(N - 1, %k)
        %g = tensor::select(%dy, 0, %t)

which a native loop computes with pointer arithmetic. ``pop`` hands out the view ``unbind``
made of row ``N - 1 - k`` at step ``k``; ``select`` makes the same view.

Conditions: ``unbind`` along axis 0 of an array whose first dimension is the loop's constant
trip count; the list's only use is one ``ListPop`` of the last item (no index, or the constant
-1) at the top level of the body of that loop (a ``for``: it pops once per step, exactly the
list's items), and the loop is in the block that made the list. Nothing else then sees the
list, empty after the loop.
"""

from __future__ import annotations

from ir.core import Graph, Node
from ir.kinds import LIST_POP, LOOP, SELECT, SUB, UNBIND
from ir.types import TensorType
from passes.licm import constant_trip_count

NAME = "unbind-pops"


def _popping_loop(unbind: Node) -> tuple[Node, Node] | None:
    """(the loop, its pop) when ``unbind``'s list has the pattern, else None."""
    x, axis = unbind.inputs[0], unbind.inputs[1]
    t = x.type
    if not (axis.is_constant and axis.constant == 0 and isinstance(t, TensorType)
            and t.shape and type(t.shape[0]) is int):
        return None
    uses = list(unbind.output.uses)
    if len(uses) != 1 or uses[0].node.kind != LIST_POP or uses[0].index != 0:
        return None
    pop = uses[0].node
    if len(pop.inputs) > 2 or (len(pop.inputs) == 2 and not (
            pop.inputs[1].is_constant and pop.inputs[1].constant == -1
            and type(pop.inputs[1].constant) is int)):
        return None
    body = pop.owner
    loop = body.owner if body is not None else None
    if loop is None or loop.kind != LOOP or body is not loop.blocks[0] \
            or loop.owner is not unbind.owner:
        return None
    if constant_trip_count(loop) != t.shape[0] or t.shape[0] < 1:
        return None
    return loop, pop


def run(graph: Graph) -> bool:
    """Read each step's row in place of every qualifying pop; True when any changed."""
    changed = False
    for node in list(graph.walk()):
        if node.kind != UNBIND:
            continue
        found = _popping_loop(node)
        if found is None:
            continue
        loop, pop = found
        x = node.inputs[0]
        counter = loop.blocks[0].params[0]
        with graph.inserting_before(loop):
            last = graph.constant(x.type.shape[0] - 1)  # type: ignore[union-attr]
            zero = graph.constant(0)
        with graph.inserting_before(pop):
            row = graph.insert(SUB, [last, counter], [counter.type])
            select = graph.insert(SELECT, [x, zero, row.output], [pop.output.type])
        if pop.output.name and not select.output.name:
            select.output.name = pop.output.name
        pop.output.replace_all_uses_with(select.output)
        pop.erase()
        node.erase()
        changed = True
    return changed


__all__ = ["NAME", "run"]
