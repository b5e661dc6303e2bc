"""Object fields forwarded: a read of a field stored once is the value stored.

Code that builds a script-class object and calls its methods (``cell = Cell(W, U, b)`` then
``cell.step(x)``, both inlined) reads back fields its ``__init__`` stored a few lines before. For
an object the graph creates and only stores into and reads (``local_objects``: every use a
``obj.name = v`` or ``obj.name`` of the graph's own, or the graph's result, so nothing else can
change it while the graph runs), this pass:

- replaces a read ``obj.name`` by the value of the store ``obj.name = v`` it sees on every path:
  the last store of that field before it in its block or an enclosing one, with no ``if`` branch
  or loop body in between that stores the field, and not across the start of a loop body that
  stores it (an earlier iteration's store): Python reads that very object. Other reads keep
  their node, typed as the values stored (their join);
- drops the stores of fields nothing reads any more, and the object when nothing uses it, unless
  the graph returns it;
- does so again until nothing changes: an object stored in another's field (``Stack(Cell(W),
  Cell(U))``) is the graph's own once the reads of that field were forwarded and its store
  dropped, and a list literal of objects read item by item becomes lists of the fields read
  (``passes.object_lists``).

For a plain object the graph takes as an input to assign its attributes
(``script.frontend.object_stores``), a read after a store the same way is the value stored
(``self.cell.step(x)`` inlined, then ``self.cell.h``); its stores stay, the caller sees them.

The reads then carry the stored values' types (shapes and dtypes after specialization), and
their data flow is plain SSA, so gradients reach the arrays stored in the fields.
"""

from __future__ import annotations

from ir.core import Graph, Node, Value
from ir.kinds import PARAM
from ir.types import Type, is_plain_object_type, unify
from passes import object_lists

NAME = "forward-fields"

CREATE, LOAD, STORE = "prim::CreateObject", "prim::LoadAttr", "prim::SetAttr"


def local_objects(graph: Graph) -> list[Value]:
    """Objects ``graph`` creates that only its own field stores and reads touch (or its
    result)."""
    found = []
    for node in graph.walk():
        if node.kind == CREATE and all(_local_use(graph, u.node, u.index)
                                       for u in node.output.uses):
            found.append(node.output)
    return found


def assigned_objects(graph: Graph) -> list[Value]:
    """The plain objects ``graph`` takes as inputs to assign their attributes
    (``script.frontend.object_stores``): a read of an attribute after the graph's own store of
    it is the value stored; their stores stay (the caller sees them)."""
    return [v for v in graph.inputs if is_plain_object_type(v.type)
            and any(u.node.kind == LOAD for u in v.uses)]


def _local_use(graph: Graph, node: Node, index: int) -> bool:
    if node.kind in (LOAD, STORE):
        return index == 0
    return _returned(graph, node)


def _returned(graph: Graph, node: Node) -> bool:
    """``node`` is the graph's return, or a tuple only the return reads (``return h, cell``)."""
    if node.kind == "prim::TupleConstruct":
        return all(u.node is graph.block.return_node for u in node.output.uses)
    return node is graph.block.return_node


def _reaching_store(read: Node, stores: list[Node]) -> Node | None:
    """The store of ``stores`` (one field's) whose value ``read`` sees on every path: the last
    one before it, walking back through enclosing blocks, with no block in between that may store
    the field (an ``if`` branch or loop body holding one of ``stores``); None when there is
    none."""
    at = read
    while True:
        node = at.prev
        while node is not None and node.kind != PARAM:
            if node in stores:
                return node
            if any(store.is_inside(node) for store in stores):
                return None
            node = node.prev
        owner = at.owner.owner if at.owner is not None else None
        if owner is None:
            return None
        if owner.kind == "prim::Loop" and any(store.is_inside(owner) for store in stores):
            return None  # an earlier iteration may have stored it
        at = owner


def _forward(obj: Value) -> bool:
    """Forward the reads of ``obj``'s fields to the stores they see; True when something
    changed."""
    stores: dict[str, list[Node]] = {}
    for use in obj.uses:
        if use.node.kind == STORE:
            stores.setdefault(use.node.attrs["name"], []).append(use.node)
    changed = False
    for use in list(obj.uses):
        read = use.node
        if read.kind != LOAD:
            continue
        written = stores.get(read.attrs["name"], [])
        store = _reaching_store(read, written)
        if store is not None:
            read.output.replace_all_uses_with(store.inputs[1])
            read.erase()
            changed = True
            continue
        stored = _join([n.inputs[1].type for n in written])
        if stored is not None and stored != read.output.type:
            read.output.type = stored  # the read gives one of the values stored
            changed = True
    return changed


def _join(types: list[Type]) -> Type | None:
    """The type every one of ``types`` has (None when there are none or they disagree)."""
    joined: Type | None = types[0] if types else None
    for t in types[1:]:
        joined = None if joined is None else unify(joined, t)
    return joined


def _drop_unread(graph: Graph, obj: Value) -> bool:
    """Erase the stores of fields nothing reads, and the object once nothing uses it."""
    read = {u.node.attrs["name"] for u in obj.uses if u.node.kind == LOAD}
    returned = any(_returned(graph, u.node) for u in obj.uses)
    changed = False
    if not returned:
        for use in list(obj.uses):
            if use.node.kind == STORE and use.node.attrs["name"] not in read:
                use.node.erase()
                changed = True
    if not obj.uses:
        obj.node.erase()
        changed = True
    return changed


def run(graph: Graph) -> bool:
    """Forward the fields of the graph's local objects, and of the objects that become local
    after that, until nothing changes (see the module docstring)."""
    changed = False
    while True:
        step = object_lists.run(graph)
        for obj in local_objects(graph):
            step |= _forward(obj)
            step |= _drop_unread(graph, obj)
        for obj in assigned_objects(graph):
            step |= _forward(obj)
        if not step:
            return changed
        changed = True
