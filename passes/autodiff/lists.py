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
  tuple of its items' types and the reads become ``TupleIndex``: shape propagation then knows
  every weight's shape, and the backward gives the argument a per-item cotangent (returned as a
  list again).
- ``simplify_unbind_reads``: ``unbind(x, a)[i]`` is ``select(x, a, i)`` and ``len(unbind(x, a))``
  is ``size(x, a)`` when the unbound list is only read: a loop over ``range(len(inputs))``
  reading ``inputs[t]`` then has a static trip count and a per-step slice the backward collects
  into one array.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ir.core import PARAM, Graph, Node, Value
from ir.registry import infer_types, lookup
from ir.types import ListType, TensorType, TupleType, Type
from passes.licm import LOOP, constant_trip_count
from passes.unroll import MAX_FULL_UNROLL_TRIPS, unroll_fully

MAX_TRIPS = MAX_FULL_UNROLL_TRIPS
"""The longest loop unrolled to make list reads constant: a loop over layers, not over time."""

LIST_INDEX = "prim::ListIndex"
LEN = "prim::len"
READS = (LIST_INDEX, LEN)


# -- list arguments -------------------------------------------------------------------------------
def read_only_list_inputs(graph: Graph, item_types: Mapping[int, Sequence[Type]]
                          ) -> dict[Value, tuple[Type, ...]]:
    """Graph inputs that are lists of tensors with known items, only indexed and measured by the
    function: input -> its items' types. Their ``len`` is replaced by the constant length."""
    found: dict[Value, tuple[Type, ...]] = {}
    for k, types in item_types.items():
        v = graph.inputs[k]
        if not isinstance(v.type, ListType) or not all(isinstance(t, TensorType) for t in types):
            continue
        if any(use.node.kind not in READS or use.index != 0 for use in v.uses):
            continue
        found[v] = tuple(types)
        for use in list(v.uses):
            if use.node.kind == LEN:
                _replace(use.node, [_constant_before(use.node, len(types))])
    return found


def tuple_list_inputs(lists: Mapping[Value, tuple[Type, ...]]) -> bool:
    """Retype each list argument read only at constant indices as the tuple of its items; True
    when any changed."""
    changed = False
    for v, types in lists.items():
        if isinstance(v.type, TupleType) or not all(_constant_read(u.node, len(types))
                                                    for u in v.uses):
            continue
        v.type = TupleType(types)
        for use in list(v.uses):
            read = use.node
            k = int(read.inputs[1].constant) % len(types)
            index = _node_before(read, "prim::TupleIndex", [v, _constant_before(read, k)])
            _replace(read, [index.output])
        changed = True
    return changed


def _constant_read(node: Node, n: int) -> bool:
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
            index = use.node.inputs[1]
            if use.node.kind != LIST_INDEX or index.is_constant:
                continue
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


__all__ = ["MAX_TRIPS", "counter_loops", "length_at", "made_items", "read_only_list_inputs",
           "simplify_unbind_reads", "tuple_list_inputs", "unroll_indexed_loops"]


# -- the length of a list where it is read (negative indices) -----------------------------------
def made_items(lst: Value) -> int | None:
    """How many items a list had when made (a literal or an ``unbind``), else None: reads past
    them are of appended items, whose cotangents the list's maker cannot hand on."""
    producer = lst.node
    if producer.kind == "prim::ListConstruct":
        return len(producer.inputs)
    if producer.kind == "tensor::unbind":
        return _unbound_items(producer)
    return None


def length_at(lst: Value, reader: Node) -> int | None:
    """The length ``lst`` has when ``reader`` (in the list's own block) reads it: a literal's or
    an ``unbind``'s items, plus one per ``append`` made before the read in that block or at the
    top level of a ``for`` loop of that block (a constant trip count, no early exit); None when
    anything else changes the list, so a negative index has no fixed position."""
    producer, n = lst.node, made_items(lst)
    if n is None or reader.owner is not producer.owner:
        return None
    for use in lst.uses:
        user = use.node
        op = lookup(user.kind)
        if op is not None and not op.has_side_effects:
            continue
        if user.kind != "prim::ListAppend" or use.index != 0:
            return None
        if user.owner is producer.owner and user.is_before(reader):
            n += 1
            continue
        loop = user.owner.owner if user.owner is not None else None
        trips = constant_trip_count(loop) if loop is not None and loop.kind == LOOP else None
        if trips is None or loop.owner is not producer.owner or not loop.is_before(reader):
            return None
        n += trips
    return n


def _unbound_items(node: Node) -> int | None:
    t, axis = node.inputs[0].type, node.inputs[1]
    if not (isinstance(t, TensorType) and t.shape and axis.is_constant):
        return None
    n = t.shape[int(axis.constant) % len(t.shape)]
    return n if isinstance(n, int) else None
