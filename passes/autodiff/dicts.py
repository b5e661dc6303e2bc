"""Cotangents of dicts of tensors: a dict of cotangents, updated in reverse program order.

A dict is mutable and read by key, so the cotangent of "the value stored at key ``k`` now" changes
over the program. The backward keeps, per forward dict, one backward dict ``gd`` holding the
cotangent of each key's current value, and undoes the forward's dict operations in reverse:

- ``d[k]`` (a read, cotangent ``g``): ``gd[k] = gd.get(k, 0) + g``;
- ``d[k] = v``: ``v`` gets ``gd.get(k, 0)``, and ``gd[k]`` is reset to zero (the value ``k`` held
  before was not read by anything after the write);
- ``{k1: v1, ...}``: like writes of each pair, last pair first.

Keys are saved forward values like any other (a loop counter ``t``, ``t - 1``), so keys computed
in loops of any trip count work without unrolling (Karpathy's min-char-rnn keeps ``hs[t]`` and
reads ``hs[t - 1]``). The backward dict of a dict made in a block is made at the start of that
block's backward (a dict made in a loop body is a new dict each iteration, and so is its
cotangent). A dict argument's backward dict is its gradient (keys never read are absent: zero);
a dict output's cotangent is the backward dict it starts from.

What the backward cannot follow is refused (``check_dicts``): a dict that is an If's result or
carried by a loop, stored in another container, read by ``.get``/``.values()``/``.items()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ir.core import RETURN, Graph, Node, Value
from ir.registry import ShapeError
from ir.types import DictType, TensorType, TupleType, Type, is_subtype
from passes.autodiff.refusals import refuse

CONSTRUCT = "prim::DictConstruct"
GET_ITEM = "prim::DictGetItem"
SET_ITEM = "prim::DictSetItem"

FOLLOWED_USES = {GET_ITEM: 0, SET_ITEM: 0, "prim::DictContains": 0, "prim::DictKeys": 0,
                 "prim::len": 0}
"""Uses of a dict the backward follows (kind -> the dict's input index): reads and writes by
key, and the uses that read no value (``k in d``, keys, length)."""

DICT_READS = (GET_ITEM, "prim::DictGet", "prim::DictContains", "prim::DictKeys",
              "prim::DictValues", "prim::DictItems", "prim::len")
"""Uses that read a dict without changing it or letting it escape."""


def is_dict(v: Value) -> bool:
    return isinstance(v.type, DictType)


# -- what is refused ------------------------------------------------------------------------------
def check_dicts(graph: Graph, active: set[Value]) -> None:
    """Raise ``NotDifferentiable`` for an active dict the backward cannot follow."""
    dicts = [v for v in graph.inputs if v in active and is_dict(v)]
    for node in graph.walk():
        dicts += [v for v in node.outputs if v in active and is_dict(v)]
        for b in node.blocks:
            dicts += [v for v in b.params if v in active and is_dict(v)]
    for d in dicts:
        _check_made(graph, d)
        for use in d.uses:
            _check_use(graph, d, use.node, use.index)


def _check_made(graph: Graph, d: Value) -> None:
    value = d.type.value
    if not isinstance(value, TensorType):
        raise refuse(f"cannot differentiate a dict of {value}: gradients follow dicts of "
                     "tensors only; keep the tensors in a dict of their own", d)
    if d in graph.inputs or d.node.kind == CONSTRUCT:
        return
    raise _refuse_flow(d.node.owner.owner if d.node.kind == "prim::Param" else d.node, d)


def _refuse_flow(node: Node | None, at: Any) -> Exception:
    """A dict flowing through an If or loop: its cotangent would have to flow back alike."""
    kind = node.kind if node is not None else ""
    how = {"prim::If": "the result of an if", "prim::Loop": "carried by a loop"}.get(
        kind, f"made by {kind}")
    return refuse(f"cannot differentiate a dict of tensors {how}: gradients follow a dict "
                  "only from where it is built ({...}) or passed in; write into one dict "
                  "instead", at)


def _check_use(graph: Graph, d: Value, user: Node, index: int) -> None:
    if FOLLOWED_USES.get(user.kind) == index:
        return
    if user.kind == RETURN and user.owner is graph.block:
        return
    if user.kind == RETURN or user.kind in ("prim::If", "prim::Loop"):
        raise _refuse_flow(user.owner.owner if user.kind == RETURN else user, user)
    if user.kind == "prim::TupleConstruct" and _only_returned(graph, user.output):
        return
    if user.kind == "prim::DictGet":
        raise refuse("cannot differentiate d.get(k, default) of a dict of tensors: read "
                     "d[k] (after checking k in d) instead", user)
    what = {"prim::DictValues": "d.values()", "prim::DictItems": "d.items()"}.get(user.kind)
    what = what or f"{user.kind} of it"
    raise refuse(f"cannot differentiate {what} for a dict of tensors: gradients follow a dict "
                 "through d[k] reads and d[k] = v writes only", user)


def _only_returned(graph: Graph, v: Value) -> bool:
    return len(v.uses) == 1 and v.uses[0].node is graph.block.return_node


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
    if node.kind == "prim::len":
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
    from passes.shape_prop import propagate_block
    for d, t in values.items():
        d.type = DictType(d.type.key, t if t is not None else TensorType())
    propagate_block(graph.block)


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


# -- the backward dict ----------------------------------------------------------------------------
def dict_ct(ctx: Any, d: Value) -> Value:
    """The backward dict of forward dict ``d``, made at the start of the backward of the block
    that defines ``d`` when first asked for."""
    found = ctx.ad.dict_cts.get(d)
    if found is not None:
        return found
    home = ctx
    while not home.defines(d):
        home = home.parent
    t = d.type
    made = home.emit(CONSTRUCT, types=[DictType(t.key, t.value)], at_header=True).output
    made.name = "grad_" + (d.name or "dict")
    ctx.ad.dict_cts[d] = made
    return made


def set_dict_ct(ctx: Any, d: Value, ct: Value) -> None:
    """Start ``d``'s backward dict from ``ct`` (the cotangent of a returned dict)."""
    if d in ctx.ad.dict_cts:
        raise refuse("cannot differentiate a dict returned twice", d)
    ctx.ad.dict_cts[d] = ct


def uses_active_dict(ctx: Any, node: Node) -> bool:
    """Does a node inside ``node``'s blocks read or write an active dict? Then its backward must
    run even when ``node``'s outputs have no cotangent."""
    for inner in node.walk():
        if inner.kind in (GET_ITEM, SET_ITEM) and ctx.is_active(inner.inputs[0]):
            return True
    return False


# -- the reverse of each dict op ------------------------------------------------------------------
def _get_item(ctx: Any, node: Node) -> None:
    g = ctx.take_ct(node.output)
    d = node.inputs[0]
    if g is None or not ctx.is_active(d):
        return
    gd, key = dict_ct(ctx, d), ctx.fwd(node.inputs[1])
    held = ctx.emit("prim::DictGet", gd, key, ctx.op("tensor::zeros_like", g, None)).output
    ctx.emit(SET_ITEM, gd, key, ctx.op("tensor::add", held, g), types=[])


def _take_stored(ctx: Any, d: Value, k: Value, v: Value) -> None:
    """The reverse of ``d[k] = v``: ``v`` gets the cotangent held for ``k``, which restarts at
    zero for the value ``k`` held before."""
    gd, key = dict_ct(ctx, d), ctx.fwd(k)
    if ctx.is_active(v):
        ctx.add_ct(v, ctx.emit("prim::DictGet", gd, key, ctx.zeros(v)).output)
    ctx.emit(SET_ITEM, gd, key, ctx.zeros(v), types=[])


def _set_item(ctx: Any, node: Node) -> None:
    d, k, v = node.inputs
    if ctx.is_active(d):
        _take_stored(ctx, d, k, v)


def _construct(ctx: Any, node: Node) -> None:
    d = node.output
    if d not in ctx.ad.dict_cts:  # nothing after it read the dict
        return
    pairs = list(zip(node.inputs[0::2], node.inputs[1::2]))
    for k, v in reversed(pairs):
        _take_stored(ctx, d, k, v)


DICT_VJPS = {CONSTRUCT: _construct, GET_ITEM: _get_item, SET_ITEM: _set_item}
"""The reverse of each dict op, by kind (``grad.STRUCTURE_VJPS`` includes these)."""

__all__ = ["DICT_VJPS", "check_dicts", "dict_ct", "is_dict", "refine_dict_values", "set_dict_ct",
           "tuple_dict_inputs", "uses_active_dict"]
