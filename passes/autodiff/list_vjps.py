"""The backward of list ops: each read adds into the list's item cotangents, each change is undone
(an append pops its item's cotangent), and the list's maker (a literal, ``unbind``, a stack's
pieces) hands the items' cotangents on (``passes.autodiff.list_cts``)."""

from __future__ import annotations

from ir.core import Node, Value
from ir.errors import IRError
from ir.types import INT, ListType, TensorType
from passes.autodiff.context import BlockGrad
from passes.autodiff.list_cts import (
    add_at,
    copy_list,
    for_each,
    is_graph_input,
    item_ct,
    untracked,
)
from passes.autodiff.lists import (
    CHANGES,
    LEN,
    is_static_list,
    made_items,
    refusal,
)


def _list_append(ctx: BlockGrad, node: Node) -> None:
    cts = ctx.ad.list_cts.get(node.inputs[0])
    if cts is None:  # nothing reads the list after this append: its item gets no cotangent
        return
    g = ctx.emit("prim::ListPop", cts, -1, types=[cts.type.element]).output  # type: ignore
    ctx.add_ct(node.inputs[1], g)


def _list_extend(ctx: BlockGrad, node: Node) -> None:
    lst, other = node.inputs
    cts = ctx.ad.list_cts.get(lst)
    literal = other.node.kind == "prim::ListConstruct" and other.node.owner is node.owner and \
        all(use.node is node or use.node.kind == LEN for use in other.uses)
    if cts is None:
        return
    if literal:
        for item in reversed(other.node.inputs):
            ctx.add_ct(item, ctx.emit("prim::ListPop", cts, -1,
                                      types=[cts.type.element]).output)  # type: ignore
            ctx.ad.gave(item, by=other.node)  # the items reach the list through the literal
        return
    other_cts = ctx.ad.list_cts.get(other)
    if other is lst or (other_cts is None and ctx.is_active(other)):
        raise untracked(node, other)
    if other_cts is None:  # items that carry no derivative: their cotangents are dropped
        with ctx.ad.forward.inserting_before(node):
            added = ctx.ad.forward.insert(LEN, [other], [INT]).output
        n = ctx.fwd(added)
        for_each(ctx, n, lambda k: ctx.emit("prim::ListPop", cts, -1,
                                             types=[cts.type.element]))  # type: ignore
        return
    n = ctx.op("prim::len", other_cts)
    last = ctx.op("tensor::sub", n, 1)

    def give_back(k: Value) -> None:
        g = ctx.emit("prim::ListPop", cts, -1, types=[cts.type.element]).output  # type: ignore
        add_at(ctx, other_cts, ctx.op("tensor::sub", last, k), g)
    for_each(ctx, n, give_back)


def _list_set_item(ctx: BlockGrad, node: Node) -> None:
    lst, index, item = node.inputs
    cts = ctx.ad.list_cts.get(lst)
    if cts is None:
        return
    i = ctx.fwd(index)
    g = item_ct(ctx, cts, i)
    ctx.add_ct(item, g)
    ctx.emit("prim::ListSetItem", cts, i, ctx.op("tensor::zeros_like", g, None), types=[])


def _list_insert(ctx: BlockGrad, node: Node) -> None:
    if ctx.ad.list_cts.get(node.inputs[0]) is not None:
        raise refusal(node, "cannot differentiate reading a list after an insert into it",
                      "append to the list instead")


def _list_pop(ctx: BlockGrad, node: Node) -> None:
    lst, index = node.inputs
    g = ctx.take_ct(node.output)
    cts = ctx.ad.list_cts.get(lst)
    if cts is None:
        if g is not None:
            raise untracked(node, lst)
        return
    if not index.is_constant:
        raise refusal(node, "cannot differentiate popping a list at an index only known at "
                      "run time", "pop the last item (l.pop())")
    g = g if g is not None else ctx.zeros(node.output)
    i = int(index.constant)
    if i == -1:
        ctx.emit("prim::ListAppend", cts, g, types=[])
        return
    # put the item back where it was: at i, or counted from the end of the longer list
    at = ctx.const(i) if i >= 0 else ctx.op("tensor::add", ctx.op("prim::len", cts), i + 1)
    ctx.emit("prim::ListInsert", cts, at, g, types=[])


def _list_construct(ctx: BlockGrad, node: Node) -> None:
    lst = node.output
    cts = ctx.ad.list_cts.get(lst)
    if cts is None:  # a list only made and returned: its cotangent is the output's
        seed = ctx.take_ct(lst)
        cts = copy_list(ctx, seed, node) if seed is not None else None
    reads = ctx.ad.read_cts.pop(lst, None)
    for k, item in enumerate(node.inputs):
        if cts is not None:  # typed as the cotangent list's items (a stacked cotangent's dtype)
            ctx.add_ct(item, item_ct(ctx, cts, ctx.const(k)))
        if reads:
            ctx.add_ct(item, reads.get(k))


def _list_index(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    lst, index = node.inputs
    if g is None:
        return
    cts = ctx.ad.list_cts.get(lst)
    if cts is not None:
        add_at(ctx, cts, ctx.fwd(index), g)
        return
    if is_static_list(lst):
        k = int(index.constant) % made_items(lst)  # type: ignore[operator]
    elif is_graph_input(lst) and not _changed(lst):
        # a list argument the function only reads: its reads are resolved per item at the end
        if not index.is_constant:
            raise IRError("cannot differentiate reading a list argument at a non-constant "
                          "index (one not known when compiling): pass the items as one stacked "
                          "array and index that", node)
        k = int(index.constant)
    else:
        raise untracked(node, lst)
    reads = ctx.ad.read_cts.setdefault(lst, {})
    reads[k] = ctx.plus(reads.get(k), g)


def _list_unpack(ctx: BlockGrad, node: Node) -> None:
    lst = node.inputs[0]
    gs = [ctx.take_ct(v) for v in node.outputs]
    if all(g is None for g in gs):
        return
    cts = ctx.ad.list_cts.get(lst)
    if cts is not None:
        for k, g in enumerate(gs):
            if g is not None:
                add_at(ctx, cts, ctx.const(k), g)
        return
    if not is_static_list(lst):
        raise untracked(node, lst)
    reads = ctx.ad.read_cts.setdefault(lst, {})
    for k, g in enumerate(gs):
        reads[k] = ctx.plus(reads.get(k), g)


def _changed(lst: Value) -> bool:
    return any(use.node.kind in CHANGES and use.index == 0 for use in lst.uses)


def _unbind(ctx: BlockGrad, node: Node) -> None:
    a, lst = node.inputs[0], node.output
    t = a.type
    cts = ctx.ad.list_cts.get(lst)
    if cts is None:
        seed = ctx.take_ct(lst)
        cts = copy_list(ctx, seed, node) if seed is not None else None
    if cts is not None:
        ctx.add_ct(a, ctx.op("tensor::stack", cts, ctx.fwd(node.inputs[1])))
    reads = ctx.ad.read_cts.pop(lst, None)
    if not reads:
        return
    if not isinstance(t, TensorType) or t.shape is None:
        raise refusal(node, "cannot differentiate ops.unbind of an array whose number of "
                      "dimensions is not known when compiling", "keep its shape the same")
    axis = int(node.inputs[1].constant) % len(t.shape)
    n = t.shape[axis]
    if n is None:
        raise IRError("cannot differentiate ops.unbind along an axis whose size is not known "
                      "when compiling: index the array (x[i]) instead")
    item = node.output.type.element  # type: ignore[union-attr]
    pieces = [reads.get(k) for k in range(n)]
    items = [p if p is not None else _zeros_of(ctx, item) for p in pieces]
    lst = ctx.emit("prim::ListConstruct", *items, types=[ListType(item)]).output
    ctx.add_ct(a, ctx.op("tensor::stack", lst, axis))


def _zeros_of(ctx: BlockGrad, t: TensorType) -> Value:
    if t.shape is None or None in t.shape or t.dtype is None:
        raise IRError("cannot differentiate ops.unbind of an array whose shape is not known "
                      "when compiling (an unread item's gradient needs its shape): index the "
                      "array (x[i]) instead")
    return ctx.op("tensor::zeros", tuple(t.shape), t.dtype)


LIST_VJPS = {
    "prim::ListConstruct": _list_construct,
    "prim::ListAppend": _list_append,
    "prim::ListExtend": _list_extend,
    "prim::ListSetItem": _list_set_item,
    "prim::ListInsert": _list_insert,
    "prim::ListPop": _list_pop,
    "prim::ListIndex": _list_index,
    "prim::ListUnpack": _list_unpack,
    "tensor::unbind": _unbind,
}
"""List nodes (and the array ops that make or read whole lists) -> their backward."""
