"""The backward of tuples and NamedTuples: a cotangent is kept per element and passes through
construct, unpack, index and field reads; an optional's passes through its unwrap."""

from __future__ import annotations

from ir.core import Node, Value
from ir.types import ClassType, ListType
from passes.autodiff.context import BlockGrad, elements_of, kind_of
from passes.autodiff.list_cts import whole_list_at_end
from passes.autodiff.lists import refusal, tracks_items


def _tuple_construct(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    if g is None:
        return
    for v, gk in zip(node.inputs, ctx.structured(g)):
        if gk is not None and isinstance(v.type, ListType) and ctx.is_active(v):
            _list_in_tuple(ctx, node, v)
            whole_list_at_end(ctx, v, gk, node)
            continue
        ctx.add_ct(v, gk)


def _list_in_tuple(ctx: BlockGrad, node: Node, lst: Value) -> None:
    """A list put in a tuple that gets a cotangent: the cotangent is of the list as it is at the
    end, so it can only start the list's item cotangents where nothing after the tuple (read
    earlier by the reverse walk) already did, in the list's own block."""
    if lst in ctx.ad.list_cts or lst.node.owner is not ctx.fblock or not tracks_items(lst):
        raise refusal(node, "cannot differentiate a tuple holding a list that is read or "
                      "changed after the tuple is made, or made in another block",
                      "make the tuple after the list's last change, next to the list")


def _tuple_unpack(ctx: BlockGrad, node: Node) -> None:
    gs = [ctx.take_ct(v) for v in node.outputs]
    if any(g is not None for g in gs):
        ctx.add_ct(node.inputs[0], gs)


def _tuple_index(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    t = node.inputs[0].type
    if g is None:
        return
    elements = elements_of(t)
    if elements is None:
        raise refusal(node, f"cannot differentiate reading an item of {kind_of(t)} as if it "
                      "were a tuple")
    k = int(node.inputs[1].constant) % len(elements)
    gs = [None] * len(elements)
    gs[k] = g
    ctx.add_ct(node.inputs[0], gs)


def _named_field(ctx: BlockGrad, node: Node) -> None:
    """``s.h`` of a NamedTuple ``s``: the cotangent goes to that field of ``s``'s."""
    g = ctx.take_ct(node.output)
    t = node.inputs[0].type
    if g is None or not isinstance(t, ClassType) or not t.named_tuple:
        return
    names = [name for name, _ in t.fields]
    gs = [None] * len(names)
    gs[names.index(node.attrs["name"])] = g
    ctx.add_ct(node.inputs[0], gs)


def _pass_through(ctx: BlockGrad, node: Node) -> None:
    ctx.add_ct(node.inputs[0], ctx.take_ct(node.output))


TUPLE_VJPS = {
    "prim::TupleConstruct": _tuple_construct,
    "prim::TupleUnpack": _tuple_unpack,
    "prim::TupleIndex": _tuple_index,
    "prim::NamedTupleConstruct": _tuple_construct,
    "prim::GetAttr": _named_field,
    "prim::unchecked_unwrap_optional": _pass_through,
}
"""Tuple, NamedTuple and optional nodes -> their backward."""
