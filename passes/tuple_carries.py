"""Loop-carried tuples carried item by item.

An LSTM written over its state as a pair, ``state = (h0, c0)`` before the loop and ``h, c =
state`` ... ``state = (h, c)`` in it, carries a tuple: a native loop (``fuser.cpu.loop``) carries
arrays only, so the loop ran as Python. Each carried tuple of a fixed number of items becomes
one carried value per item:

    %s : (T0, T1) = prim::Loop(%n, %true, %init)       # before
      block0(%i, %s.1 : (T0, T1)):  ... -> (%true, %next)

    %a : T0, %b : T1 = prim::Loop(%n, %true, %init[0], %init[1])
      block0(%i, %a.1 : T0, %b.1 : T1):
        %s.1 = (%a.1, %b.1)                               # the body reads this tuple
        ... -> (%true, %next[0], %next[1])
    %s = (%a, %b)                                         # what reads the loop's result

Canonicalization then folds the unpacking of the tuples made here (``h, c = state`` of
``(%a.1, %b.1)``), and DCE drops the tuple slot nothing reads any more. A tuple whose items are
tuples is split again on the next round. The initial value's items are read before the loop,
or are placeholders where it is one (a variable the loop assigns first).
"""

from __future__ import annotations

from ir.core import Graph, Node, Value
from ir.kinds import LOOP, TUPLE_CONSTRUCT
from ir.types import TupleType

NAME = "split-tuple-carries"

_UNINITIALIZED = "prim::Uninitialized"
_TUPLE_INDEX = "prim::TupleIndex"


def run(graph: Graph) -> bool:
    """Carry every loop-carried tuple item by item (above), innermost loops too."""
    changed = False
    for loop in [n for n in graph.walk() if n.kind == LOOP]:
        for k in range(len(loop.outputs)):
            if _splittable(loop, k):
                _split(loop, k)
                changed = True
    if changed:
        from passes import dce
        dce.run(graph)
    return changed


def _splittable(loop: Node, k: int) -> bool:
    t = loop.outputs[k].type
    param = loop.blocks[0].params[k + 1]
    return (isinstance(t, TupleType) and bool(t.elements) and param.type == t
            and isinstance(loop.inputs[k + 2].type, TupleType)
            and len(loop.inputs[k + 2].type.elements) == len(t.elements)
            and bool(param.uses or loop.outputs[k].uses))


def _items_before(graph: Graph, loop: Node, value: Value, t: TupleType) -> list[Value]:
    """``value``'s items, read before ``loop`` (placeholders for a placeholder)."""
    made = value.node
    if made.kind == TUPLE_CONSTRUCT and len(made.inputs) == len(t.elements):
        return list(made.inputs)
    items = []
    with graph.inserting_before(loop):
        for j, e in enumerate(t.elements):
            if made.kind == _UNINITIALIZED:
                items.append(graph.insert(_UNINITIALIZED, [], [e]).output)
            else:
                items.append(graph.insert(_TUPLE_INDEX, [value, graph.constant(j)], [e]).output)
    return items


def _split(loop: Node, k: int) -> None:
    graph: Graph = loop.graph
    body = loop.blocks[0]
    t = loop.outputs[k].type
    assert isinstance(t, TupleType)
    old_param, old_out = body.params[k + 1], loop.outputs[k]
    inits = _items_before(graph, loop, loop.inputs[k + 2], t)
    params, outs = [], []
    for e, init in zip(t.elements, inits):
        loop.add_input(init)
        params.append(body.add_param(e, old_param.name))
        outs.append(loop.add_output(e, old_out.name))
    # the body reads the tuple of the items carried in
    first = body.param_node.next
    assert first is not None
    with graph.inserting_before(first):
        inside = graph.insert(TUPLE_CONSTRUCT, params, [t]).output
    old_param.replace_all_uses_with(inside)
    # each step gives the items of the tuple it made
    result = body.returns[k + 1]
    made = result.node
    if made.kind == TUPLE_CONSTRUCT and made.owner is body and len(made.inputs) == len(
            t.elements):
        items = list(made.inputs)
    else:
        with graph.inserting_before(body.return_node):
            items = [graph.insert(_TUPLE_INDEX, [result, graph.constant(j)], [e]).output
                     for j, e in enumerate(t.elements)]
    for item in items:
        body.add_return(item)
    # what reads the loop's result reads the tuple of its items
    after = graph.create(TUPLE_CONSTRUCT, outs, [t])
    after.insert_after(loop)
    old_out.replace_all_uses_with(after.output)
