"""Lists of objects read item by item, turned into lists of the fields read.

``self.cells = [Cell(W1), Cell(W2)]`` then ``for c in self.cells: h = c.step(h)`` reads
``cells[i].W`` in a loop. For a list literal that only ``len`` and item reads use, each item read
only for its fields (nothing appends to, writes into or passes on the list, so item ``i`` is
always the ``i``-th object of the literal), this rewrite makes each ``cells[i].W`` the item
``[c1.W, c2.W][i]`` of a list of the fields read at that point (what Python reads there), and
each ``len(cells)`` the literal's length; the list then goes. Its objects are left to their own
stores and reads, which ``forward-fields`` forwards: the fields become a list of the arrays
stored, which gradients go through like any list of arrays.
"""

from __future__ import annotations

from ir.core import Graph, Node, Value
from ir.kinds import LIST_CONSTRUCT, LIST_INDEX
from ir.types import INT, ClassType, ListType

LOAD, LEN = "prim::LoadAttr", "prim::len"


def object_lists(graph: Graph) -> list[Node]:
    """The list literals of objects whose only uses are ``len`` and item reads, each item read
    only for its fields."""
    return [node for node in graph.walk()
            if node.kind == LIST_CONSTRUCT and isinstance(node.output.type, ListType)
            and isinstance(node.output.type.element, ClassType)
            and all(_field_read_only(u.node, u.index) for u in node.output.uses)]


def _field_read_only(node: Node, index: int) -> bool:
    if node.kind == LEN:
        return True
    return node.kind == LIST_INDEX and index == 0 and all(
        u.node.kind == LOAD and u.index == 0 for u in node.output.uses)


def _read_fields(graph: Graph, objects: tuple[Value, ...], read: Node, index: Value) -> None:
    """Replace ``read`` (``items[index].name``) by ``[o.name for o in objects][index]``."""
    t = read.output.type
    with graph.inserting_before(read):
        fields = [graph.insert(LOAD, [o], [t], {"name": read.attrs["name"]},
                               source=read.source).output for o in objects]
        items = graph.insert(LIST_CONSTRUCT, fields, [ListType(t)], source=read.source).output
        item = graph.insert(LIST_INDEX, [items, index], [t], source=read.source).output
    read.output.replace_all_uses_with(item)
    read.erase()


def split(graph: Graph, literal: Node) -> None:
    """Rewrite the uses of the list ``literal`` (one of ``object_lists``) and erase it."""
    for use in list(literal.output.uses):
        node = use.node
        if node.kind == LEN:
            with graph.inserting_before(node):
                node.output.replace_all_uses_with(graph.constant(len(literal.inputs), INT))
        else:
            for read in [u.node for u in node.output.uses]:
                _read_fields(graph, literal.inputs, read, node.inputs[1])
        node.erase()
    literal.erase()


def run(graph: Graph) -> bool:
    """Split every list of ``object_lists``; True when there was one."""
    found = object_lists(graph)
    for literal in found:
        split(graph, literal)
    return bool(found)
