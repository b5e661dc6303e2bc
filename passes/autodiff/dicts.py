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
carried by a loop, stored in another container, read by ``.get``/``.values()``/``.items()``, a
dict of anything but tensors. The types of what dicts hold are settled before
(``passes.autodiff.dict_types``).
"""

from __future__ import annotations

from typing import Any

from ir.core import RETURN, Graph, Node, Value
from ir.kinds import TUPLE_CONSTRUCT
from ir.registry import spelling
from ir.types import DictType, TensorType
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
    what = {"prim::DictValues": "d.values() of a dict of tensors",
            "prim::DictItems": "d.items() of a dict of tensors",
            "prim::TupleConstruct": "a tuple holding a dict of tensors",
            "prim::ListConstruct": "a list holding a dict of tensors",
            "prim::ListAppend": "a list holding a dict of tensors",
            "prim::CallFunction": "a dict of tensors passed to a function that is not inlined",
            }.get(user.kind, f"a dict of tensors used by {spelling(user.kind)}")
    raise refuse(f"cannot differentiate {what}: gradients follow a dict through d[k] reads and "
                 "d[k] = v writes only (read the tensors it holds out of it first)", user)


def _only_returned(graph: Graph, v: Value) -> bool:
    return len(v.uses) == 1 and v.uses[0].node is graph.block.return_node


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
    held = _shaped_as(ctx, held, node.output, d, node.inputs[1])
    ctx.emit(SET_ITEM, gd, key, ctx.op("tensor::add", held, g), types=[])


def _shaped_as(ctx: Any, held: Value, v: Value, d: Value, key: Value) -> Value:
    """The cotangent ``held`` for ``key``, read from a dict whose value type joins every key's,
    as ``v``'s (the value of that key, which its cotangent has the shape of) static type: a
    ``broadcast_to`` that is the array itself when its shape is ``v``'s, so the steps that
    carry it keep their shapes (and their rewrites, which need them). Only where every value
    the forward stores at ``key`` has ``v``'s type: a key given a value of another shape
    restarts its cotangent at zeros of that shape, which are not ``v``'s."""
    t = v.type
    if not isinstance(t, TensorType) or t.shape is None or None in t.shape or held.type == t \
            or not _one_type_at(d, key, t):
        return held
    return ctx.op("tensor::broadcast_to", held, ctx.const(tuple(t.shape)))


def _one_type_at(d: Value, key: Value, t: Any) -> bool:
    """Whether ``d`` is a dict literal of this graph whose every value stored at the constant
    ``key`` (in the literal or by ``d[key] = v``; a store at a key not known is any) has type
    ``t``, the dict reaching nothing that could store into it elsewhere."""
    if not key.is_constant or d.node.kind != CONSTRUCT:
        return False
    k = key.constant
    pairs = d.node.inputs
    for i in range(0, len(pairs), 2):
        if not pairs[i].is_constant or (pairs[i].constant == k and pairs[i + 1].type != t):
            return False
    for use in d.uses:
        user = use.node
        if user.kind == SET_ITEM and use.index == 0:
            stored_at = user.inputs[1]
            if not stored_at.is_constant or (stored_at.constant == k and
                                             user.inputs[2].type != t):
                return False
        elif user.kind not in DICT_READS and not _returned(user, d.node.owner.graph):
            return False
    return True


def _returned(user: Node, graph: Graph) -> bool:
    """Whether ``user`` is the graph's return, or a tuple only the graph returns (``return y,
    cache``): the caller gets the dict, and its cotangent for it."""
    if user.kind == TUPLE_CONSTRUCT:
        return all(_returned(u.node, graph) for u in user.output.uses)
    return user.kind == RETURN and user.owner is graph.block


def _take_stored(ctx: Any, d: Value, k: Value, v: Value) -> None:
    """The reverse of ``d[k] = v``: ``v`` gets the cotangent held for ``k``, which restarts at
    zero for the value ``k`` held before."""
    gd, key = dict_ct(ctx, d), ctx.fwd(k)
    if ctx.is_active(v):
        held = ctx.emit("prim::DictGet", gd, key, ctx.zeros(v)).output
        ctx.add_ct(v, _shaped_as(ctx, held, v, d, k))
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
"""The reverse of each dict op, by kind (``walk.STRUCTURE_VJPS`` includes these)."""

__all__ = ["DICT_READS", "DICT_VJPS", "check_dicts", "dict_ct", "is_dict", "set_dict_ct",
           "uses_active_dict"]
