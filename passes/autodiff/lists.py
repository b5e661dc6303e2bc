"""Lists the backward must see through: list arguments of known items, and unbind's lists.

A specialization is made for one length of each list argument and one type per item (the call's
key holds every item's shape), but a ``ListType`` has one element type for all items, and a
list read at a loop index has no static item at all. The backward needs each item's shape (a
multi-layer stack keeps its layers' weights in one list, and their shapes differ), so:

- ``read_only_list_inputs``: list arguments of tensors that the function only reads (index,
  ``len``) are the lists these rewrites may treat as values; their length is a constant.
- ``unroll_indexed_loops``: a counted loop of constant trip count (at most ``MAX_TRIPS``) whose
  body reads such a list at an index computed from its counter (``params[4 * layer + 1]``) is
  unrolled, so each copy reads at a constant index.
- ``tuple_list_inputs``: once every read is at a constant index, the argument is retyped as the
  tuple of its items' types and the reads become ``TupleIndex`` (a list extended by it, as
  ``[*xs, y]`` builds one, is appended each item): shape propagation then knows
  every weight's shape, and the backward gives the argument a per-item cotangent (returned as a
  list again).
- ``simplify_unbind_reads``: ``unbind(x, a)[i]`` is ``select(x, a, i)`` and ``len(unbind(x, a))``
  is ``size(x, a)`` when the unbound list is only read: a loop over ``range(len(inputs))``
  reading ``inputs[t]`` then has a static trip count and a per-step slice the backward collects
  into one array.

Lists made in the function: what the backward needs to keep their items' cotangents in step with
them (``passes.autodiff.grad``): which lists are never changed (``is_static_list``), which it can
follow item by item (``tracks_items``), what a node reads (``reads_lists``), and a list's length
and item type where known at compile time (``length_after``, ``item_type``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ir.core import PARAM, Block, Graph, Node, Value
from ir.errors import IRError
from ir.registry import infer_types, lookup
from ir.types import ListType, TensorType, TupleType, Type
from passes.autodiff.refusals import refuse
from passes.licm import LOOP, constant_trip_count
from passes.unroll import MAX_FULL_UNROLL_TRIPS, unroll_fully

MAX_TRIPS = MAX_FULL_UNROLL_TRIPS
"""The longest loop unrolled to make list reads constant: a loop over layers, not over time."""

LIST_INDEX = "prim::ListIndex"
LEN = "prim::len"
UNPACK = "prim::ListUnpack"
EXTEND = "prim::ListExtend"
READS = (LIST_INDEX, LEN)


# -- list arguments -------------------------------------------------------------------------------
def read_only_list_inputs(graph: Graph, item_types: Mapping[int, Sequence[Type]]
                          ) -> dict[Value, tuple[Type, ...]]:
    """Graph inputs that are lists of tensors with known items, only indexed, unpacked,
    measured and copied into another list (``l.extend(xs)``) by the function: input -> its
    items' types. Their ``len`` is replaced by the constant length."""
    found: dict[Value, tuple[Type, ...]] = {}
    for k, types in item_types.items():
        v = graph.inputs[k]
        if not isinstance(v.type, ListType) or not all(isinstance(t, TensorType) for t in types):
            continue
        if not all(_only_read(use.node, use.index) for use in v.uses):
            continue
        found[v] = tuple(types)
        for use in list(v.uses):
            if use.node.kind == LEN:
                _replace(use.node, [_constant_before(use.node, len(types))])
    return found


def tuple_list_inputs(lists: Mapping[Value, tuple[Type, ...]]) -> bool:
    """Retype each list argument read only at constant indices (or unpacked into as many
    values as it has items) as the tuple of its items; True when any changed."""
    changed = False
    for v, types in lists.items():
        if isinstance(v.type, TupleType) or not all(_constant_read(u.node, len(types))
                                                    for u in v.uses):
            continue
        v.type = TupleType(types)
        for use in list(v.uses):
            read = use.node
            if read.kind == EXTEND:  # l.extend(xs): append each item
                for k in range(len(types)):
                    item = _node_before(read, "prim::TupleIndex", [v, _constant_before(read, k)])
                    _node_before(read, "prim::ListAppend", [read.inputs[0], item.output])
                read.erase()
                continue
            if read.kind == UNPACK:
                unpack = read.graph.create("prim::TupleUnpack", [v], list(types),
                                           source=read.source)
                unpack.insert_before(read)
                _replace(read, list(unpack.outputs))
                continue
            k = int(read.inputs[1].constant) % len(types)
            index = _node_before(read, "prim::TupleIndex", [v, _constant_before(read, k)])
            _replace(read, [index.output])
        changed = True
    return changed


def _only_read(user: Node, index: int) -> bool:
    """``user`` reads the list it has as input ``index`` without changing it."""
    if user.kind == EXTEND:
        return index == 1 and user.inputs[0] is not user.inputs[1]
    return user.kind in (*READS, UNPACK) and index == 0


def _constant_read(node: Node, n: int) -> bool:
    if node.kind in (UNPACK, EXTEND):
        return node.kind == EXTEND or len(node.outputs) == n
    i = node.inputs[1]
    return node.kind == LIST_INDEX and i.is_constant and -n <= int(i.constant) < n


# -- loops indexing a list by their counter -----------------------------------------------------
def unroll_indexed_loops(lists: Mapping[Value, tuple[Type, ...]]) -> bool:
    """Unroll the outermost loop whose counter a non-constant read of a list argument depends on
    (when its trip count is a constant of at most ``MAX_TRIPS``); True when one was."""
    for v in lists:
        if isinstance(v.type, TupleType):
            continue
        for use in v.uses:
            if use.node.kind != LIST_INDEX or use.node.inputs[1].is_constant:
                continue
            index = use.node.inputs[1]
            loops = counter_loops(index)
            trips = constant_trip_count(loops[0]) if loops else None
            if trips is not None and trips <= MAX_TRIPS:
                unroll_fully(loops[0], trips)
                return True
    return False


def counter_loops(v: Value) -> list[Node] | None:
    """The loops whose counters the int ``v`` is computed from (outermost first) by pure ops, or
    None when it depends on anything else (a carried value, an input, a side effect)."""
    loops: list[Node] = []
    if not _collect_counters(v, loops, set()):
        return None
    return sorted(loops, key=_depth)


def _collect_counters(v: Value, loops: list[Node], seen: set[Value]) -> bool:
    if v in seen or v.is_constant:
        return True
    seen.add(v)
    node = v.node
    if node.kind == PARAM:
        loop = node.owner.owner if node.owner is not None else None
        if loop is None or loop.kind != "prim::Loop" or v is not node.outputs[0]:
            return False
        if loop not in loops:
            loops.append(loop)
        return True
    op = lookup(node.kind)
    if node.blocks or op is None or not op.is_pure:
        return False
    return all(_collect_counters(x, loops, seen) for x in node.inputs)


def _depth(node: Node) -> int:
    depth, block = 0, node.owner
    while block is not None and block.owner is not None:
        depth += 1
        block = block.owner.owner
    return depth


# -- unbind -------------------------------------------------------------------------------------
def simplify_unbind_reads(graph: Graph) -> bool:
    """``unbind(x, a)[i] -> select(x, a, i)`` and ``len(unbind(x, a)) -> size(x, a)`` for lists
    of ``unbind`` that are only read; True when any changed."""
    changed = False
    for node in list(graph.walk()):
        if node.kind != "tensor::unbind" or not node.output.uses:
            continue
        lst = node.output
        if any(use.node.kind not in READS or use.index != 0 for use in lst.uses):
            continue
        x, axis = node.inputs[0], node.inputs[1]
        for use in list(lst.uses):
            read = use.node
            if read.kind == LEN:
                new = _node_before(read, "tensor::size", [x, axis])
            else:
                new = _node_before(read, "tensor::select", [x, axis, read.inputs[1]])
            _replace(read, [new.output])
        changed = True
    return changed


# -- helpers --------------------------------------------------------------------------------------
def _node_before(at: Node, kind: str, inputs: list[Value]) -> Node:
    node = at.graph.create(kind, inputs, [], source=at.source)
    for t in infer_types(node):
        node.add_output(t)
    node.insert_before(at)
    return node


def _constant_before(at: Node, value: int) -> Value:
    with at.graph.inserting_before(at):
        return at.graph.constant(value)


def _replace(node: Node, values: list[Value]) -> None:
    for old, new in zip(node.outputs, values):
        if old.name and not new.name:
            new.name = old.name
        old.replace_all_uses_with(new)
    node.erase()


__all__ = ["CHANGES", "MAX_TRIPS", "counter_loops", "escapes", "handed_back", "home_node",
           "is_static_list", "item_type", "length_after", "located", "made_items",
           "read_only_list_inputs", "reads_lists", "refusal", "simplify_unbind_reads",
           "tracks_items", "tuple_list_inputs", "unroll_indexed_loops"]


# -- how the backward follows a list made in the function ----------------------------------------
MAKERS = ("prim::ListConstruct", "tensor::unbind")
"""The nodes that make a list whose every item the backward can hand a cotangent back to."""

CHANGES = ("prim::ListAppend", "prim::ListExtend", "prim::ListSetItem", "prim::ListInsert",
           "prim::ListPop")
"""Ops that change their first input, a list, in place."""

NOT_READS = (LEN, "prim::ListContains")
"""Uses of a list that read no item's value differentiably (and change nothing)."""


def is_static_list(lst: Value) -> bool:
    """A list made by a literal or an ``unbind`` that is never changed and only read, in its own
    block, at constant indices (``a, b = l``, ``l[0]``, ``l[-1]``, ``len(l)``): each read is of
    one known item, so its cotangent goes straight to that item."""
    n = made_items(lst)
    if n is None:
        return False
    for use in lst.uses:
        user = use.node
        if use.index != 0 or user.owner is not lst.node.owner:
            return False
        if user.kind in (LEN, "prim::ListUnpack") or (user.kind == LIST_INDEX
                                                        and _constant_read(user, n)):
            continue
        return False
    return True


def tracks_items(lst: Value) -> bool:
    """Lists the backward follows item by item through appends, reads and stacks: lists of
    tensors made in the function by a literal or an ``unbind`` that are not kept anywhere else
    (``escapes``)."""
    t = lst.type
    return (lst.node.kind in MAKERS and isinstance(t, ListType)
            and isinstance(t.element, TensorType) and not escapes(lst))


SEEN_THROUGH = (*CHANGES, LIST_INDEX, UNPACK, *NOT_READS, "tensor::stack", "tensor::cat",
                "prim::ListSlice", "prim::ListAdd", "prim::Print")
"""Uses of a list that change or read it in place, or copy its items: the list stays the only
way to reach them."""


def escapes(lst: Value) -> bool:
    """Is ``lst`` kept where another name can change it (a tuple, a dict, another list, an
    ``if``'s or a loop's result)? Its changes through that name are not uses of ``lst``, so the
    backward could not keep its items' cotangents in step. Being returned (alone or in the
    returned tuple) is not an escape: nothing runs after the return."""
    for use in lst.uses:
        user = use.node
        stored = user.kind in CHANGES and use.index != 0 and user.kind != "prim::ListExtend"
        if user.kind in SEEN_THROUGH and not stored:  # ``l.extend(lst)`` copies its items
            continue
        if _only_returned(user):
            continue
        return True
    return False


def handed_back(lst: Value) -> bool:
    """Is ``lst`` only returned (alone or in the returned tuple)? A list argument returned as it
    came in passes its cotangent through."""
    return all(_only_returned(use.node) for use in lst.uses)


def _only_returned(user: Node) -> bool:
    """``user`` is the graph's return, or a tuple (in tuples) only returned."""
    if user is user.graph.block.return_node:
        return True
    return (user.kind == "prim::TupleConstruct"
            and all(_only_returned(u.node) for u in user.output.uses))


def reads_lists(node: Node, changes: bool = False) -> list[Value]:
    """The lists that ``node`` (its nested blocks included) reads an item of: every use of a list
    but the changes (``l.append(v)`` only writes ``l``; ``l.pop()`` reads an item) and
    ``len``/``in``; with ``changes``, the lists it changes too."""
    found: dict[Value, None] = {}

    def visit(user: Node | None, values: Sequence[Value]) -> None:
        for k, v in enumerate(values):
            if not isinstance(v.type, ListType):
                continue
            # a pop reads the item it takes out
            writes = user is not None and user.kind in CHANGES and user.kind != "prim::ListPop"
            if user is not None and (user.kind in NOT_READS or (writes and k == 0
                                                                 and not changes)):
                continue
            found.setdefault(v, None)

    visit(node, node.inputs)
    for inner in node.walk():
        if inner is not node:
            visit(inner, inner.inputs)
        for block in inner.blocks:
            visit(None, block.returns)
    return list(found)


def home_node(user: Node, home: Block) -> Node | None:
    """The node of block ``home`` that is or contains ``user`` (None when ``user`` is outside)."""
    node: Node | None = user
    while node is not None and node.owner is not home:
        owner = node.owner.owner if node.owner is not None else None
        node = owner
    return node


def length_after(lst: Value, node: Node) -> int | None:
    """The length ``lst`` has right after ``node`` (a node of the list's own block) runs, when
    it is known at compile time: the items it was made with, plus one per ``append`` (or the
    length of the list an ``extend`` adds, when known) made up to ``node`` directly in that block
    or in counted for-loops; None when anything else (an ``if``, a ``while``, a ``pop``) changes
    its length."""
    n = made_items(lst)
    home = lst.node.owner
    if n is None or home is None or node.owner is not home:
        return None
    for use in lst.uses:
        user = use.node
        if use.index != 0 or user.kind not in CHANGES or user.kind == "prim::ListSetItem":
            continue
        top = home_node(user, home)
        if top is None or (top is not node and not top.is_before(node)):
            continue
        added, trips = _items_added(user), _runs_per_run(user, home)
        if added is None or trips is None:
            return None
        n += added * trips
    return n


def _items_added(node: Node) -> int | None:
    if node.kind in ("prim::ListAppend", "prim::ListInsert"):
        return 1
    if node.kind != "prim::ListExtend" or node.inputs[1] is node.inputs[0]:
        return None
    other = node.inputs[1]
    if other.node.owner is node.owner and made_items(other) is not None:
        return length_after(other, node)
    return None


def _fixed_items(lst: Value) -> list[Value] | None:
    """The items of a list literal that is never changed (what ``l.extend(lst)`` adds), else
    None."""
    if lst.node.kind != "prim::ListConstruct":
        return None
    if any(use.node.kind in CHANGES and use.index == 0 for use in lst.uses):
        return None
    return list(lst.node.inputs)


def _runs_per_run(node: Node, home: Block) -> int | None:
    """How often ``node`` runs each time block ``home`` does: the product of the constant trip
    counts of the for-loops between them; None under an ``if`` or a ``while``."""
    runs, block = 1, node.owner
    while block is not None and block is not home:
        loop = block.owner
        trips = constant_trip_count(loop) if loop is not None and loop.kind == LOOP else None
        if trips is None:
            return None
        runs *= trips
        block = loop.owner
    return runs if block is home else None


# -- the items a list is made with -----------------------------------------------------------------
def made_items(lst: Value) -> int | None:
    """How many items a list had when made (a literal or an ``unbind``), else None: reads past
    them are of appended items, whose cotangents the list's maker cannot hand on."""
    producer = lst.node
    if producer.kind == "prim::ListConstruct":
        return len(producer.inputs)
    if producer.kind == "tensor::unbind":
        return _unbound_items(producer)
    return None


def _unbound_items(node: Node) -> int | None:
    t, axis = node.inputs[0].type, node.inputs[1]
    if not (isinstance(t, TensorType) and t.shape and axis.is_constant):
        return None
    n = t.shape[int(axis.constant) % len(t.shape)]
    return n if isinstance(n, int) else None


def item_type(lst: Value) -> TensorType | None:
    """The one fully known tensor type of every item ever put into ``lst`` (made with, appended,
    inserted, stored, extended by a literal), else None."""
    t = lst.type
    if lst.node.kind == "tensor::unbind":
        items = [t.element] if isinstance(t, ListType) else []
    else:
        items = [v.type for v in lst.node.inputs] if lst.node.kind == "prim::ListConstruct" else []
    for use in lst.uses:
        user = use.node
        if use.index != 0 or user.kind not in CHANGES or user.kind == "prim::ListPop":
            continue
        if user.kind == "prim::ListExtend":
            added = _fixed_items(user.inputs[1])
            if added is None:
                return None
            items += [v.type for v in added]
        else:
            items.append(user.inputs[-1].type)
    kinds = set(items)
    found = kinds.pop() if len(kinds) == 1 else None
    if not isinstance(found, TensorType) or found.shape is None or None in found.shape:
        return None
    return found if found.dtype is not None else None


def located(error: IRError, node: Node) -> IRError:
    """``error`` (raised while differentiating ``node``) about ``node``, unless it already names
    a node of its own (a nested one, or the one a refusal names): the user-facing layer reports
    it at that node's line."""
    if error.node is None:
        error.node = node
    return error


def refusal(node: Node, what: str, way_out: str | None = None) -> IRError:
    """The error refusing to differentiate ``node``: what cannot be done and what to write
    instead; it names ``node`` (``error.node``), whose line the user-facing layer reports."""
    return refuse(what + (f": {way_out}" if way_out else ""), node)
