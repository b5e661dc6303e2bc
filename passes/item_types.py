"""Item types of containers: what the call signature says about each item of a list or dict
argument, kept on the reads of it (``ITEM_TYPES``) for shape propagation and LICM; and which
lists and dicts a graph builds for itself (``local_containers``), whose item type shape
propagation takes from what is stored into them.

``specialize`` marks each read of a container argument the graph never changes (``params[0]``,
``p["W"]``, ``a, b = params``) with the types of the items it reads; propagation prefers them to
the container's element type, and LICM treats such a read as invariant and unable to raise (the
list length and dict keys are part of the call signature).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ir.core import Graph, Node, Use, Value
from ir.kinds import LIST_INDEX, RETURN
from ir.registry import ALIASES, NOT_CONSTANT, WRITES, constant_of, lookup
from ir.types import (
    ClassType,
    DictType,
    ListType,
    TensorType,
    TupleType,
    Type,
    is_number,
    unify_all,
)

ITEM_TYPES = "item_types"
"""Attribute of a read of a container argument the graph never changes (``prim::ListIndex`` with
a constant index, ``prim::DictGetItem`` with a constant key, ``prim::ListUnpack``): the types
of the items it reads, which propagation prefers to the container's element type."""

_ITEM_READS = {LIST_INDEX, "prim::DictGetItem", "prim::ListUnpack"}

KEY_PRESENT = "present"
"""Attribute of ``k in d`` (``prim::DictContains``, a constant ``k``) of a dict argument the
graph never changes: whether the call's dict holds ``k`` (its keys are part of the call
signature). Shape propagation decides an If on it (the branch reading a key the dict lacks is
never typed) and constant propagation folds it."""


def annotate_item_reads(container: Value, items: tuple[Type, ...] | dict[Any, Type],
                        only: set[Node] | None = None) -> None:
    """Mark each read of ``container`` (whose items have the types ``items``) with the types
    of the items it reads, and each ``k in container`` of a dict with whether it holds ``k``;
    with ``only``, just those reads (``reads_before_changes``)."""
    for use in container.uses:
        node = use.node
        if only is not None and node not in only:
            continue
        if use.index == 0 and node.kind == "prim::DictContains" and isinstance(items, dict):
            key = constant_of(node.inputs[1])
            if type(key) in (str, int):
                node.attrs[KEY_PRESENT] = any(type(k) is type(key) and k == key for k in items)
            continue
        if use.index != 0 or node.kind not in _ITEM_READS:
            continue
        read = _items_read(node, items)
        if read is not None:
            node.attrs[ITEM_TYPES] = read


def reads_before_changes(container: Value, only_reads: Callable[[Use, Value], bool]
                         ) -> set[Node]:
    """Of the uses of ``container`` (a graph input) that only read it (``only_reads``), the
    nodes that run before every other use (a store into it, a use that keeps it) can: each is in a
    statement of the graph's body before the first statement holding a change (not in a
    loop that also changes it, whose next step would read the change). A train step that
    reads a weight dict in its forward and backward and updates it at the end reads the
    call's items in all but the update."""
    body = container.node.owner

    def statement(node: Node) -> Node:
        while node.owner is not body:
            node = node.owner.owner  # type: ignore[union-attr]  # the node holding the block
        return node

    order = {n: k for k, n in enumerate(body.nodes)}
    end = len(order)  # (the graph's return, after every statement)
    first = min((order.get(statement(u.node), end) for u in container.uses
                 if not only_reads(u, container)), default=end)
    return {u.node for u in container.uses
            if only_reads(u, container) and order.get(statement(u.node), end) < first}


def forward_stores(graph: Graph, container: Value,
                   items: tuple[Type, ...] | dict[Any, Type] | None = None) -> bool:
    """Reads of a list or dict, in the graph's own body, of what it holds there: for an input
    with ``items`` (the call's items' types, by index or key) or one the graph builds (``[]``
    filled by appends, ``{}`` filled by stores: an optimizer's first call making its state),
    whose every use is a read or a store at a constant index in range (a constant key), an
    append, ``len``, or keeping it (``self.v = []``), all in the graph's body, each read of an
    index or key a store (or the build or an append) before it set reads the value stored
    (Python reads that very object), and each other read of an input the call's item, of the
    type ``items`` gives (``self.v[i] = momentum * self.v[i] - g`` once its loop is unrolled).
    True when it changed anything. The caller makes sure nothing else can change the container
    (``writes_only_fresh``: no container read out of another is changed)."""
    made = container.node if container.node.kind in _BUILDS else None
    if made is not None and made.owner is not graph.block or made is None and items is None:
        return False
    is_dict = isinstance(container.type, DictType)
    if made is None:
        held: dict[Any, Value] = {}
    elif is_dict:
        keys = [constant_of(v) for v in made.inputs[0::2]]
        if any(type(k) not in (int, str) for k in keys):
            return False
        held = {(type(k), k): v for k, v in zip(keys, made.inputs[1::2])}
    else:
        held = dict(enumerate(made.inputs))
    known = set() if not is_dict else set(held) if made is not None else \
        {(type(k), k) for k in items}  # type: ignore[union-attr]  # (the keys a read may read)
    size = len(held) if made is not None else len(items)  # type: ignore[arg-type]
    for use in container.uses:
        node = use.node
        if node.owner is not graph.block or not (
                use.index == 0 and node.kind in _ITEM_USES or
                use.index == 1 and node.kind == "prim::SetAttr" and made is not None):
            return False
    plan = []
    for node in graph.block.nodes:
        if not node.inputs or node.inputs[0] is not container or node.kind == "prim::len":
            continue
        if node.kind == "prim::ListAppend":
            plan.append((node, size))
            size += 1
            continue
        k = constant_of(node.inputs[1])
        if is_dict:
            if type(k) not in (int, str):
                return False
            k = (type(k), k)
            if node.kind == "prim::DictSetItem":
                known.add(k)
            elif k not in known:
                return False  # (a KeyError)
        elif type(k) is not int or not -size <= k < size:
            return False
        plan.append((node, k if is_dict else k % size))
    changed = False
    for node, k in plan:
        if node.kind in _STORES:
            held[k] = node.inputs[-1]
        elif k in held:
            node.output.replace_all_uses_with(held[k])
            node.erase()
            changed = True
        elif items is not None:
            t = items[k[1]] if is_dict else items[k]  # type: ignore[index]
            if node.attrs.get(ITEM_TYPES) != (t,):
                node.attrs[ITEM_TYPES] = (t,)
                changed = True
    return changed


_STORES = frozenset({"prim::ListSetItem", "prim::ListAppend", "prim::DictSetItem"})
_ITEM_USES = _STORES | {LIST_INDEX, "prim::DictGetItem", "prim::len"}


def _items_read(node: Node, items: tuple[Type, ...] | dict[Any, Type]) -> tuple | None:
    if node.kind == "prim::ListUnpack":
        return tuple(items) if isinstance(items, tuple) and \
            len(items) == len(node.outputs) else None
    key = constant_of(node.inputs[1])
    if key is NOT_CONSTANT:  # a key or index known when it runs: one of the items (or raises)
        joined = unify_all(items.values() if isinstance(items, dict) else items)
        return None if joined is None else (joined,)
    if isinstance(items, dict):
        return (items[key],) if isinstance(key, (str, int)) and key in items else None
    if type(key) is int and -len(items) <= key < len(items):
        return (items[key],)
    return None


def constant_key(node: Node) -> bool:
    """Whether a read marked ``ITEM_TYPES`` reads at a key or index known when compiling (it
    cannot raise: the signature holds the keys and the length); an unpack reads every item."""
    return node.kind == "prim::ListUnpack" or constant_of(node.inputs[1]) is not NOT_CONSTANT


STORES = frozenset({"prim::ListAppend", "prim::ListSetItem", "prim::ListInsert", "prim::ListExtend",
                    "prim::DictSetItem"})
"""Ops that put items into the container that is their first input (the others they keep)."""

_COPIES_ITEMS = frozenset({"prim::ListSlice", "prim::ListExtend", "prim::DictKeys",
                           "prim::DictValues", "prim::DictItems"})
"""Ops that put the items of a container operand into another list, not the container itself."""

_BUILDS = frozenset({"prim::ListConstruct", "prim::DictConstruct"})


def local_containers(graph: Graph) -> list[Value]:
    """The lists and dicts of tensors (or of tuples of them) ``graph`` builds whose items only
    its own stores put there:
    every use reads it, stores into it (``STORES``), copies its items into another list, or
    returns it from the graph (alone or in a tuple returned). A container carried by a loop,
    returned by a branch, kept in another container or passed to a call may have items stored
    out of sight: not local."""
    found = []
    for node in graph.walk():
        if node.kind not in _BUILDS or len(node.outputs) != 1:
            continue
        t = node.output.type
        element = t.element if isinstance(t, ListType) else \
            t.value if isinstance(t, DictType) else None
        if element is not None and _immutable(element) and all(
                _keeps_local(use, graph) for use in node.output.uses):
            found.append(node.output)
    return found


def _immutable(t: Type) -> bool:
    """Tensors, and tuples or NamedTuples of them: items no store into another value retypes
    (a tensor's dtype and shape never change in place)."""
    if isinstance(t, TensorType):
        return True
    if isinstance(t, TupleType):
        return bool(t.elements) and all(_immutable(e) or is_number(e) for e in t.elements)
    if isinstance(t, ClassType) and t.named_tuple:
        return bool(t.fields) and all(_immutable(f) or is_number(f) for _, f in t.fields)
    return False


def _keeps_local(use: Use, graph: Graph) -> bool:
    node = use.node
    if node.kind == RETURN:
        return node.owner is graph.block
    if node.kind == "prim::TupleConstruct" and node.output.uses and all(
            _keeps_local(u, graph) for u in node.output.uses):
        return True  # `return y, hs`: handed to the caller at the end
    op = lookup(node.kind)
    if op is None or node.blocks:
        return False
    effects = op.effects_on(use.index)
    if WRITES not in effects and node.outputs and not any(o.uses for o in node.outputs) and \
            op.is_pure:
        return True  # kept in a value nothing uses (`a, b = {}, {}` builds a tuple first)
    if use.index == 0 and node.kind in STORES:
        return ALIASES not in effects
    if WRITES in effects:
        return node.kind == "prim::ListPop" and use.index == 0
    return ALIASES not in effects or node.kind in _COPIES_ITEMS
