"""The item types of the lists and dicts a graph builds and keeps to itself, while
``passes.shape_prop`` propagates: what a read of such a container gives is the join of every
item stored into it, wherever the store is (see ``shape_prop._propagate_with_local_items``).

``STATES`` holds, during a propagation, each local container's ``Items``; ``propagate_node``
asks ``construct`` for a container's type where it is built and ``store`` where an item goes
in; a read met before any store is remembered (``Items.blind``) and ``independent_items`` finds
where the next round starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ir.core import Node, Value
from ir.kinds import IF, LOOP, PARAM
from ir.registry import ALIASES, WRITES, constant_of, lookup
from ir.types import DictType, ListType, TupleType, Type, erase_shape, is_subtype, unify
from passes.item_types import STORES


class Items:
    """The item type a local container has so far during a propagation (None: nothing stored
    yet); ``general`` is the item type it falls back to. In a probe (see
    ``_settle_weak_items``) every read gives ``probe`` and ``element`` joins only the stores."""

    __slots__ = ("element", "general", "probe", "blind", "keys")

    def __init__(self, general: Type, probe: Type | None = None):
        self.element: Type | None = None
        self.general = general
        self.probe = probe
        self.blind: set[Node] = set()
        """reads met before anything was stored (given ``general``)."""
        self.keys: dict[Any, Type] | None = {}
        """for a dict whose every store so far has a constant key: the join of what each key
        was given (``cache = {'x': x, 'b': b}`` reads ``cache['x']`` with x's rank); None once
        a store's key is not a constant."""


STATES: dict[Value, Items] = {}
"""The local containers of the graph ``propagate_graph`` is propagating, by value."""


def independent_items(container: Value, state: Items) -> Type | None:
    """The join of the items ``container`` is built with and of the stored values (or, for a
    branch's or loop's result, the parts of it) that no read of it met before anything was
    stored computes: where the next round starts. A read first met in a loop body before the
    store after it (``h = hs[t - 1]`` ... ``hs[t] = h2``) was given the general item type, and
    so was everything computed from it; the rounds after this one check the start."""
    if not state.blind:
        return state.element
    found: list[Type] = [v.type for v in built_items(container.node)]
    memo: dict[Value, bool] = {}
    for use in container.uses:
        if use.index != 0 or use.node.kind not in STORES:
            continue
        node = use.node
        values = [node.inputs[2]] if node.kind in ("prim::DictSetItem", "prim::ListSetItem",
                                                  "prim::ListInsert") else node.inputs[1:]
        for v in values:
            found += [t.element if node.kind == "prim::ListExtend" and isinstance(t, ListType)
                      else t for t in parts_free_of(v, state.blind, memo)]
    element: Type | None = None
    for t in found:
        element = t if element is None else join(element, t, state.general)
    return element if element is None or is_subtype(element, state.general) else state.general


def parts_free_of(v: Value, blind: set[Node], memo: dict[Value, bool]) -> list[Type]:
    """The types of ``v`` or, for a branch's result, of the values each branch gives it, that no
    node of ``blind`` computes."""
    node = v.node
    if node.kind == IF:
        k = node.outputs.index(v)
        return [t for b in node.blocks for t in parts_free_of(b.returns[k], blind, memo)]
    if node.kind == "prim::TupleConstruct" and node.inputs and computed_by(v, blind, memo):
        elements = []  # `(h, c)` of two branches' results: each item joined over its parts
        for item in node.inputs:
            parts = parts_free_of(item, blind, memo)
            if not parts:
                return []
            joined = parts[0]
            for t in parts[1:]:
                joined = join(joined, t, erase_shape(joined))
            elements.append(joined)
        return [TupleType(tuple(elements))]
    return [] if computed_by(v, blind, memo) else [v.type]


def computed_by(v: Value, blind: set[Node], memo: dict[Value, bool]) -> bool:
    """Does any node of ``blind`` feed ``v`` (through inputs, branch and loop results, loop
    parameters)?"""
    stack, seen, found = [v], set(), False
    while stack and not found:
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        if memo.get(value):
            found = True
            break
        node = value.node
        if node in blind:
            found = True
            break
        stack += node.inputs
        if node.kind == PARAM:
            loop = node.owner.owner if node.owner is not None else None
            if loop is not None and loop.kind == LOOP:
                k = value.index
                if k >= 1:
                    stack += [loop.inputs[k + 1], node.owner.returns[k]]
        for block in node.blocks:
            stack += list(block.returns)
            stack += [i for inner in block.nodes for i in inner.outputs]
    memo[v] = found
    return found


def built_items(node: Node) -> Sequence[Value]:
    return node.inputs if node.kind == "prim::ListConstruct" else node.inputs[1::2]


def general_items(t: Type) -> Type:
    return erase_shape(t.element if isinstance(t, ListType) else t.value)  # type: ignore[union-attr]


def with_items(t: Type, element: Type) -> Type:
    return ListType(element) if isinstance(t, ListType) else DictType(t.key, element)  # type: ignore[union-attr]


def construct(node: Node) -> Type:
    """The type of a local container built by ``node``: its items so far joined with the ones
    it is built with."""
    state = STATES[node.output]
    if state.probe is not None:
        return with_items(node.output.type, state.probe)
    for item in built_items(node):
        widen_items(state, item.type)
    if node.kind == "prim::DictConstruct":
        for key, item in zip(node.inputs[0::2], node.inputs[1::2]):
            widen_key(state, key, item.type)
    element = state.general if state.element is None else state.element
    return with_items(node.output.type, element)


def store(node: Node) -> None:
    """Widen the item type of the local container ``node`` stores into by the stored items."""
    container = node.inputs[0]
    state = STATES[container]
    stored = [node.inputs[2].type] if node.kind == "prim::DictSetItem" else items_stored(node)
    for t in stored:
        widen_items(state, t)
    if node.kind == "prim::DictSetItem":
        widen_key(state, node.inputs[1], node.inputs[2].type)
    if state.element is not None and state.probe is None:
        container.type = with_items(container.type, state.element)


def widen_key(state: Items, key: Value, t: Type) -> None:
    """Widen what the constant ``key`` of a local dict holds by ``t`` (a key not constant: no
    key is told apart any more)."""
    if state.keys is None:
        return
    k = constant_of(key)
    if type(k) not in (str, int, bool):
        state.keys = None
        return
    held = state.keys.get(k)
    state.keys[k] = t if held is None else join(held, t, state.general)


def key_read(node: Node) -> Type | None:
    """The type ``d[k]`` (``node``, a ``prim::DictGetItem`` with a constant key of a local dict
    whose keys are told apart) reads: the join of what was stored under ``k``; None if not
    known."""
    state = STATES[node.inputs[0]]
    if state.keys is None or state.probe is not None:
        return None
    k = constant_of(node.inputs[1])
    return state.keys.get(k) if type(k) in (str, int, bool) else None


def widen_items(state: Items, t: Type) -> None:
    joined = t if state.element is None else join(state.element, t, state.general)
    state.element = joined if is_subtype(joined, state.general) else state.general


def items_stored(user: Node) -> list[Type]:
    """The types of the items ``user`` puts into the list that is its first input, by the
    registry's effects: each input it keeps (the items of a ``list`` argument). An op that may
    also keep the list itself (a call) is opaque: none."""
    op = lookup(user.kind)
    if op is None or WRITES not in op.effects_on(0) or ALIASES in op.effects_on(0):
        return []
    stored = []
    for i, v in enumerate(user.inputs[1:], 1):
        if ALIASES not in op.effects_on(i):
            continue
        if op.args[min(i, len(op.args) - 1)].kind != "list":
            stored.append(v.type)
        elif isinstance(v.type, ListType):
            stored.append(v.type.element)
    return stored


def join(a: Type, b: Type, fallback: Type) -> Type:
    """The least type covering ``a`` and ``b``; shapes forgotten if needed; else ``fallback``."""
    u = unify(a, b)
    if u is None:
        u = unify(erase_shape(a), erase_shape(b))
    return fallback if u is None else u
