"""The backward of ``np.stack`` and ``np.concatenate`` of a list: the incoming gradient is cut
into one piece per item (``unbind`` for a stack; slices at the items' sizes along the axis for a
concatenation: sizes known when compiling, read from a literal's items, or read from the items
the list held when the concatenation ran), and the list of pieces is the list's item cotangents
(``passes.autodiff.list_cts.whole_list_ct``)."""

from __future__ import annotations

from ir.core import Node, Value
from ir.types import ListType, TensorType
from passes.autodiff.context import BlockGrad, axis_size, covering
from passes.autodiff.list_cts import for_each, snapshot_before, whole_list_ct
from passes.autodiff.lists import CHANGES, home_node, length_after
from passes.autodiff.refusals import refuse


def _stack(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    lst = node.inputs[0]
    if g is None or not ctx.is_active(lst):
        return
    axis = node.inputs[1]
    pieces = ctx.emit("tensor::unbind", g, ctx.fwd(axis)).output
    whole_list_ct(ctx, node, lst, pieces)


def _cat(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    lst = node.inputs[0]
    if g is None or not ctx.is_active(lst):
        return
    if not node.inputs[1].is_constant:
        raise refuse("cannot differentiate np.concatenate along an axis known only when it "
                     "runs (an int argument): write the axis as a constant", node)
    axis = int(node.inputs[1].constant)
    sizes = _cat_sizes(ctx, node)
    if sizes is None:  # a list of a length only known at run time: split by its items' sizes
        whole_list_ct(ctx, node, lst, _split_by_items(ctx, g, axis, _items_at(ctx, node)))
        return
    start: int | Value = 0
    pieces = []
    for s in sizes:
        end = start + s if isinstance(start, int) and isinstance(s, int) else \
            ctx.op("tensor::add", start, s)
        pieces.append(ctx.op("tensor::slice", g, axis, start, end, None))
        start = end
    # pieces of different sizes: the list's element type covers them all (not the first's)
    item_t = covering([p.type for p in pieces], TensorType())
    lst_ct = ctx.emit("prim::ListConstruct", *pieces, types=[ListType(item_t)]).output
    whole_list_ct(ctx, node, lst, lst_ct)


def _cat_sizes(ctx: BlockGrad, node: Node) -> list[int | Value] | None:
    """The sizes along the axis of the pieces a cat joins, one per item (read from a literal's
    items when the backward runs where not known when compiling), or None when the list's length
    or its items' sizes are only known at run time."""
    lst, axis = node.inputs[0], int(node.inputs[1].constant)
    producer = lst.node
    if producer.kind == "prim::ListConstruct" and len(lst.uses) == 1:
        sizes = [axis_size(v, axis) for v in producer.inputs]
        return [ctx.op("tensor::size", ctx.fwd(v), axis) if size is None else size
                for v, size in zip(producer.inputs, sizes)]
    # the list's length where the cat reads it (appends after the cat are not its pieces)
    n = length_after(lst, node) if lst.node.owner is node.owner else None
    element = lst.type.element if isinstance(lst.type, ListType) else None
    shape = element.shape if isinstance(element, TensorType) else None
    size = shape[axis % len(shape)] if shape else None
    return None if n is None or size is None else [size] * n


def _items_at(ctx: BlockGrad, node: Node) -> Value:
    """The backward's view of the items the list a cat joins has when the cat runs: the list
    itself when nothing changes it later, else a copy taken before the cat."""
    lst = node.inputs[0]
    home = lst.node.owner
    changes = [use.node for use in lst.uses if use.index == 0 and use.node.kind in CHANGES]
    tops = [home_node(u, home) for u in changes]
    if node.owner is home and all(t is not None and t.is_before(node) for t in tops):
        return ctx.fwd(lst)
    return ctx.fwd(snapshot_before(ctx, lst, node))


def _split_by_items(ctx: BlockGrad, g: Value, axis: int, items: Value) -> Value:
    """``g`` cut along ``axis`` into one piece per item of forward list ``items``, each as long
    as its item: the list of the pieces."""
    element, t = items.type.element, g.type  # type: ignore[union-attr]
    assert isinstance(t, TensorType)
    sliced = t if t.shape is None else t.with_shape(
        tuple(None if k == axis % len(t.shape) else d for k, d in enumerate(t.shape)))
    pieces = ctx.emit("prim::ListConstruct", types=[ListType(sliced)]).output

    def cut(k: Value, start: Value) -> list[Value]:
        item = ctx.emit("prim::ListIndex", items, k, types=[element]).output
        end = ctx.op("tensor::add", start, ctx.op("tensor::size", item, axis))
        ctx.emit("prim::ListAppend", pieces, ctx.op("tensor::slice", g, axis, start, end, None),
                 types=[])
        return [end]
    for_each(ctx, ctx.op("prim::len", items), cut, carry=[ctx.const(0)])
    return pieces


JOIN_VJPS = {
    "tensor::stack": _stack,
    "tensor::cat": _cat,
}
"""The array ops that join a whole list -> their backward."""
