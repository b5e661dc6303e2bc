"""The types of the values a dict holds, settled before differentiation.

The backward of an op needs the ranks (often the shapes) of its inputs, and a value read from a
dict has the dict's one value type: ``Dict[int, Tensor]`` declares tensors of unknown shape, and
a dict argument holding weights of different ranks has no rank either. So, before the backward
is built:

- ``tuple_dict_inputs``: a tensor-valued dict argument read only at constant keys becomes the
  tuple of its values (each of its own type, from the call), read by ``TupleIndex`` (its
  keys, ``len`` and ``k in d`` are constants);
- ``refine_dict_values``: a dict whose every store is seen is typed by what is stored into it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ir.core import RETURN, Graph, Node, Value
from ir.registry import ShapeError
from ir.types import DictType, TensorType, TupleType, Type, is_subtype
from passes.autodiff.dicts import CONSTRUCT, DICT_READS, GET_ITEM, SET_ITEM


# -- dict arguments read at constant keys ---------------------------------------------------------
def tuple_dict_inputs(graph: Graph, dict_items: Mapping[int, Mapping[Any, Type]]
                      ) -> dict[int, tuple[Any, ...]]:
    """Retype each dict argument the function reads only at constant keys (``params["Wxh"]``)
    as the tuple of its values, in the argument's key order: input position -> those keys.

    A dict type has one value type, so reads of weights of different shapes would have no
    shape, not even a rank, and the backward needs them. A specialization is made for one set
    of keys and one type per value (the call's key holds each), so the reads become
    ``TupleIndex`` of known types and ``k in d`` / ``len(d)`` constants; the caller passes the
    values as a tuple and gets the per-key gradients back as a dict.
    """
    found = {}
    for k, items in dict_items.items():
        v = graph.inputs[k]
        keys = tuple(items)
        if not all(isinstance(t, TensorType) for t in items.values()):
            continue
        if not all(_read_at_known_key(use.node, use.index, keys) for use in v.uses):
            continue
        v.type = TupleType(tuple(items[key] for key in keys))
        for use in list(v.uses):
            _as_tuple_read(use.node, v, keys)
        found[k] = keys
    return found


def _read_at_known_key(node: Node, index: int, keys: tuple[Any, ...]) -> bool:
    if node.kind in ("prim::len", "prim::DictKeys"):
        return True
    if node.kind not in (GET_ITEM, "prim::DictContains") or index != 0:
        return False
    key = node.inputs[1]
    return key.is_constant and (node.kind != GET_ITEM or key.constant in keys)


def _as_tuple_read(node: Node, v: Value, keys: tuple[Any, ...]) -> None:
    graph = node.graph
    with graph.inserting_before(node):
        if node.kind == "prim::len":
            new = graph.constant(len(keys))
        elif node.kind == "prim::DictKeys":  # the keys of the call, in its order
            new = graph.insert("prim::ListConstruct", [graph.constant(k) for k in keys],
                               [node.output.type], source=node.source).output
        elif node.kind == "prim::DictContains":
            new = graph.constant(node.inputs[1].constant in keys)
        else:
            k = graph.constant(keys.index(node.inputs[1].constant))
            new = graph.insert("prim::TupleIndex", [v, k], [v.type.elements[k.constant]],
                               source=node.source).output
    if node.output.name and not new.name:
        new.name = node.output.name
    node.output.replace_all_uses_with(new)
    node.erase()


# -- the types of values read from a dict ---------------------------------------------------------
MAX_ROUNDS = 8
"""Rounds of widening before every read of a refined dict is taken to be of unknown shape."""


def refine_dict_values(graph: Graph, dict_items: Mapping[int, Mapping[Any, Type]] | None = None
                       ) -> bool:
    """Type each dict the function builds or writes by the values stored into it, and
    re-propagate.

    ``hs: Dict[int, Tensor] = {}`` declares tensors of unknown shape, so a read ``hs[t]`` has no
    rank, and the backward of ``hs[t].sum()`` needs one. Every value of a dict whose every use
    is seen (reads, ``d[k] = v``, its return) is one stored by a ``d[k] = v``, its literal or
    (an argument, ``dict_items``) the caller, so its reads have the join of their types. Stores
    depend on reads (``hs[t] = tanh(W @ hs[t - 1])``, ``ys[t] = Why @ hs[t]``), so the types
    start from the stores of known shape and widen until every store fits its dict's type.
    Returns True when any changed.
    """
    given = {graph.inputs[k]: list(items.values()) for k, items in (dict_items or {}).items()}
    made = [v for node in graph.walk() if node.kind == CONSTRUCT for v in node.outputs]
    dicts = [v for v in made + list(given) if _all_stores_seen(graph, v)]
    stored = {d: (lambda d=d: given.get(d, []) + _stored(d)) for d in dicts}
    values: dict[Value, Type | None] = {d: _join(_known(stored[d]()), None) for d in dicts}
    if all(t is None for t in values.values()):
        return False
    # a store's shape known only later may contradict the first guess where an op reads it
    # (the shape rule of a matmul fails): then guess ranks only
    for guess in (values, {d: _rank_only(t) for d, t in values.items()}):
        try:
            if _settle(graph, stored, guess):
                return True
        except ShapeError:
            continue
    _retype(graph, {d: TensorType() for d in dicts})
    return True


def _settle(graph: Graph, stored: Mapping[Value, Any], values: dict[Value, Type | None]
            ) -> bool:
    """Widen the guessed value types until every store fits; False when they do not settle."""
    for _ in range(MAX_ROUNDS):
        _retype(graph, values)
        grown = {d: _join(_known(stored[d]()), t) for d, t in values.items()}
        if grown != values:  # a store's shape became known: start again from it
            values = grown
            continue
        unfit = [d for d in values if not all(is_subtype(t, d.type.value) for t in stored[d]())]
        if not unfit:
            return True
        for d in unfit:  # a store of a shape not known even now: what it is, is not known
            values[d] = _join(stored[d](), values[d])
    return False


def _retype(graph: Graph, values: Mapping[Value, Type | None]) -> None:
    """Give the dicts these value types and propagate (the dicts the graph keeps to itself
    are typed by what is stored into them again there, each constant key by its own)."""
    from passes.shape_prop import propagate_graph
    for d, t in values.items():
        d.type = DictType(d.type.key, t if t is not None else TensorType())
    propagate_graph(graph)


def _rank_only(t: Type | None) -> Type | None:
    if isinstance(t, TensorType) and t.shape is not None:
        return TensorType(t.dtype, (None,) * len(t.shape), t.device)
    return t


def _all_stores_seen(graph: Graph, d: Value) -> bool:
    if not isinstance(d.type, DictType) or not isinstance(d.type.value, TensorType):
        return False
    for use in d.uses:
        user = use.node
        if user.kind == RETURN and user.owner is graph.block:
            continue
        if use.index != 0 or user.kind not in DICT_READS + (SET_ITEM,):
            return False
    return True


def _stored(d: Value) -> list[Type]:
    values = list(d.node.inputs[1::2]) if d.node.kind == CONSTRUCT else []
    values += [u.node.inputs[2] for u in d.uses if u.node.kind == SET_ITEM]
    return [v.type for v in values]


def _known(types: list[Type]) -> list[Type]:
    return [t for t in types if isinstance(t, TensorType) and t.shape is not None]


def _join(types: list[Type], start: Type | None) -> Type | None:
    """The least type covering ``start`` (None: nothing yet) and ``types``; tensors of one rank
    keep it (the dims that differ become unknown)."""
    from passes.shape_prop import join
    t = start
    for other in types:
        if t is None:
            t = other
        elif _same_rank(t, other):
            t = TensorType(t.dtype if t.dtype == other.dtype else None,
                           tuple(a if a == b else None for a, b in zip(t.shape, other.shape)),
                           t.device if t.device == other.device else None)
        else:
            t = join(t, other, TensorType())
    return t


def _same_rank(a: Type, b: Type) -> bool:
    return (isinstance(a, TensorType) and isinstance(b, TensorType) and a.shape is not None
            and b.shape is not None and len(a.shape) == len(b.shape))


__all__ = ["refine_dict_values", "tuple_dict_inputs"]
