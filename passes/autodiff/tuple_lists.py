"""Lists of tuples made in the function, differentiated as one list per field of the tuples.

A hand-written forward keeps each step's values in a list of tuples and its backward reads them
back at the step's index: ``caches.append((h_prev, h))`` in the forward loop, ``h_prev, h =
caches[t]`` in ``for t in reversed(range(T))`` (hipsternet's and CS231n's caches). The backward
follows the items of a list of tensors (``passes.autodiff.lists.tracks_items``), not of a list
of tuples. So before differentiating, such a list becomes one list per field::

    %c : (T0, T1)[] = prim::ListConstruct()           %c0 : T0[] = prim::ListConstruct()
    %p : (T0, T1) = prim::TupleConstruct(%a, %b)      %c1 : T1[] = prim::ListConstruct()
     = prim::ListAppend(%c, %p)                  ->    = prim::ListAppend(%c0, %a)
    %r : (T0, T1) = prim::ListIndex(%c, %t)            = prim::ListAppend(%c1, %b)
    %x, %y = prim::TupleUnpack(%r)                    %x : T0 = prim::ListIndex(%c0, %t)
                                                      %y : T1 = prim::ListIndex(%c1, %t)

The same items at the same indices, and the same ``IndexError`` out of range. Only a list
whose every use is a literal's item, an append, a read at an index, an unpack or ``len`` is
split; one that goes anywhere else (returned, stored in a container, passed to a call, changed
another way) stays as it is, and the backward's refusal names it.
"""

from __future__ import annotations

from ir.core import Graph, Node, Value
from ir.kinds import (
    CONSTANT,
    LIST_APPEND,
    LIST_CONSTRUCT,
    LIST_INDEX,
    LIST_UNPACK,
    TUPLE_CONSTRUCT,
    TUPLE_INDEX,
    TUPLE_UNPACK,
)
from ir.kinds import LIST_LEN as LEN
from ir.types import INT, ListType, TupleType


def split_tuple_lists(graph: Graph) -> bool:
    """Split every list of tuples made in ``graph`` that only these uses reach (above); True
    when any was split."""
    changed = False
    while True:  # a list of tuples of tuples splits into lists of tuples: again
        found = [n for n in graph.walk() if n.kind == LIST_CONSTRUCT and _splittable(n.output)]
        if not found:
            return changed
        for node in found:
            _split(graph, node)
        changed = True


def _splittable(lst: Value) -> bool:
    t = lst.type
    if not (isinstance(t, ListType) and isinstance(t.element, TupleType) and t.element.elements):
        return False
    for use in lst.uses:
        node = use.node
        if node.kind == LIST_APPEND:
            if use.index != 0 or node.inputs[1] is lst:
                return False
        elif node.kind not in (LIST_INDEX, LIST_UNPACK, LEN) or use.index != 0:
            return False
    return True


def _split(graph: Graph, node: Node) -> None:
    lst = node.output
    fields = lst.type.element.elements  # type: ignore[attr-defined]
    with graph.inserting_before(node):
        items = [_fields(graph, v, len(fields)) for v in node.inputs]
        columns = [graph.insert(LIST_CONSTRUCT, [item[k] for item in items], [ListType(ft)],
                                source=node.source,
                                names=[f"{lst.name}_{k}" if lst.name else None]).output
                   for k, ft in enumerate(fields)]
    for use in list(lst.uses):
        user = use.node
        with graph.inserting_before(user):
            if user.kind == LIST_APPEND:
                for column, field in zip(columns, _fields(graph, user.inputs[1], len(fields))):
                    graph.insert(LIST_APPEND, [column, field], [], source=user.source)
                user.erase()
            elif user.kind == LEN:
                length = graph.insert(LEN, [columns[0]], [INT], source=user.source).output
                user.output.replace_all_uses_with(length)
                user.erase()
            elif user.kind == LIST_INDEX:
                reads = [graph.insert(LIST_INDEX, [column, user.inputs[1]], [ft],
                                      source=user.source).output
                         for column, ft in zip(columns, fields)]
                _replace_tuple(graph, user.output, reads)
                user.erase()
            else:  # a, b = caches: each item the tuple of the fields' items
                unpacks = [graph.insert(LIST_UNPACK, [column], [ft] * len(user.outputs),
                                        source=user.source).outputs
                           for column, ft in zip(columns, fields)]
                for k, out in enumerate(list(user.outputs)):
                    _replace_tuple(graph, out, [u[k] for u in unpacks])
                user.erase()
    node.erase()


def _fields(graph: Graph, tup: Value, n: int) -> list[Value]:
    """The fields of the tuple ``tup`` (read at the insert point)."""
    if tup.node.kind == TUPLE_CONSTRUCT:
        return list(tup.node.inputs)
    elements = tup.type.elements  # type: ignore[attr-defined]
    out = []
    for k in range(n):
        index = graph.insert(CONSTANT, [], [INT], {"value": k}).output
        out.append(graph.insert(TUPLE_INDEX, [tup, index], [elements[k]]).output)
    return out


def _replace_tuple(graph: Graph, tup: Value, fields: list[Value]) -> None:
    """Give the uses of the tuple ``tup`` the ``fields`` it would have held: unpacks and reads
    at constant indices read them directly, any other use a tuple made of them."""
    for use in list(tup.uses):
        user = use.node
        if user.kind == TUPLE_UNPACK and len(user.outputs) == len(fields):
            for out, field in zip(list(user.outputs), fields):
                out.replace_all_uses_with(field)
            user.erase()
        elif (user.kind == TUPLE_INDEX and use.index == 0 and user.inputs[1].node.kind == CONSTANT
              and isinstance(user.inputs[1].node.attrs.get("value"), int)):
            user.output.replace_all_uses_with(fields[user.inputs[1].node.attrs["value"]])
            user.erase()
    if tup.uses:
        made = graph.insert(TUPLE_CONSTRUCT, fields, [tup.type]).output
        tup.replace_all_uses_with(made)
