"""Backward lists of list items' cotangents: where they start, how reads add into them, and the
refusal of a list whose items the backward cannot follow.

A list made in the function whose items are read after it changed (appended to, read at an index
only known at run time, stacked, read in a loop) has a backward list of its items' cotangents,
``ad.list_cts[l]``, kept in step with it: while the reverse walk is at a point of the forward, the
backward list has as many items as the forward list had there, and item k holds the cotangent item
k has gathered from the reads after that point. It is made where the reverse walk meets the list's
last read (``open_lists``): from the cotangent of a stack or cat, else as zeros of the list's items
there. Each read adds into it (``l[i]``: item i), each change is undone (an append pops its item's
cotangent off the end), and the list's maker hands the items' cotangents on. A list never changed
and read only at constant indices in its own block (``a, b = l``, ``l[-1]``) needs none of this:
its reads go to known items (``read_cts``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ir.core import PARAM, Block, Node, Value
from ir.errors import IRError
from ir.types import INT, ListType
from passes.autodiff.context import BlockGrad, Cotangent
from passes.autodiff.lists import (
    escapes,
    is_static_list,
    item_type,
    length_after,
    reads_lists,
    refusal,
    tracks_items,
)


def open_lists(ctx: BlockGrad, node: Node) -> None:
    """Start the item cotangents of each list made in this block whose last read is (in)
    ``node``, before ``node``'s backward runs. A list that is an output (or in one) has a
    cotangent of its final items already: it starts them at the list's last use of any kind."""
    reads = reads_lists(node)
    for lst in reads_lists(node, changes=True):
        if lst in ctx.ad.list_cts or lst.node.owner is not ctx.fblock:
            continue
        if not ctx.is_active(lst) or not tracks_items(lst) or is_static_list(lst):
            continue
        if node.kind == "prim::TupleConstruct" and _gives_whole_list(ctx, node, lst):
            continue  # the tuple adds to the list's end cotangent: its next use starts it
        seed = ctx.take_ct(lst)
        if seed is not None:
            ctx.ad.list_cts[lst] = copy_list(ctx, seed, node)
        elif lst in reads and not _gives_whole_list(ctx, node, lst):
            ctx.ad.list_cts[lst] = _zero_items(ctx, lst, node)


def _gives_whole_list(ctx: BlockGrad, node: Node, lst: Value) -> bool:
    """``node`` is a stack or cat of ``lst``, or a tuple holding it, with a cotangent: that
    cotangent starts the list's."""
    if len(node.outputs) != 1 or ctx.ct.get(node.output) is None:
        return False
    if node.kind == "prim::TupleConstruct":
        return lst in node.inputs
    return node.kind in ("tensor::stack", "tensor::cat") and node.inputs[0] is lst


def copy_list(ctx: BlockGrad, seed: Cotangent, node: Node) -> Value:
    """A new backward list of the items of an output list's cotangent ``seed`` (which the
    backward changes, so it must not be the caller's)."""
    if not isinstance(seed, Value) or not isinstance(seed.type, ListType):
        raise refusal(node, "cannot differentiate this list: its cotangent is not a list")
    cts = ctx.emit("prim::ListConstruct", types=[seed.type]).output
    ctx.emit("prim::ListExtend", cts, seed, types=[])
    return cts


def _zero_items(ctx: BlockGrad, lst: Value, node: Node) -> Value:
    """A backward list of zeros, one per item ``lst`` has right after ``node`` runs: built from
    the items' static shape when its length there is known, else from a copy of the forward
    list taken there."""
    element = lst.type.element  # type: ignore[union-attr]
    n, item = length_after(lst, node), item_type(lst)
    if n is not None and item is not None:
        if n == 0:
            return ctx.emit("prim::ListConstruct", types=[ListType(item)]).output
        zeros = ctx.op("tensor::zeros", (n, *item.shape), item.dtype)
        return ctx.emit("tensor::unbind", zeros, 0, types=[ListType(item)]).output
    assert node.next is not None
    saved = ctx.fwd(snapshot_before(ctx, lst, node.next))
    cts = ctx.emit("prim::ListConstruct", types=[ListType(element)]).output

    def zero(k: Value) -> None:
        fwd_item = ctx.emit("prim::ListIndex", saved, k, types=[element]).output
        ctx.emit("prim::ListAppend", cts, ctx.op("tensor::zeros_like", fwd_item, None), types=[])
    for_each(ctx, ctx.op("prim::len", saved), zero)
    return cts


def snapshot_before(ctx: BlockGrad, lst: Value, node: Node) -> Value:
    """A forward copy of ``lst`` taken right before ``node`` runs (the items it has there)."""
    fgraph = ctx.ad.forward
    with fgraph.inserting_before(node):
        none = fgraph.constant(None)
        return fgraph.insert("prim::ListSlice", [lst, none, none, none], [lst.type],
                             names=[(lst.name or "l") + "_items"]).output


def for_each(ctx: BlockGrad, n: Value, body, carry: Sequence[Value] = ()) -> list[Value]:
    """Emit ``for k in range(n): body(k)`` into the backward. With ``carry``, the loop carries
    those values: ``body(k, *carried)`` returns their next values, and the loop's results (the
    carried values after the last trip) are returned."""
    loop = ctx.emit("prim::Loop", n, True, *carry, types=[])
    block = Block(ctx.graph, owner=loop)
    loop.blocks.append(block)
    k = block.add_param(INT, "k")
    carried = [block.add_param(v.type, v.name or "c") for v in carry]
    outer, ctx.bblock = ctx.bblock, block
    try:
        nexts = body(k, *carried)
        block.set_returns([ctx.const(True), *(nexts if carry else [])])
    finally:
        ctx.bblock = outer
    for v in carry:
        loop.add_output(v.type)
    return list(loop.outputs)


def item_ct(ctx: BlockGrad, cts: Value, index: Value) -> Value:
    """``cts[index]`` in the backward."""
    return ctx.emit("prim::ListIndex", cts, index, types=[cts.type.element]).output  # type: ignore


def add_at(ctx: BlockGrad, cts: Value, index: Value, g: Value) -> None:
    """``cts[index] += g`` in the backward."""
    total = ctx.op("tensor::add", item_ct(ctx, cts, index), g)
    ctx.emit("prim::ListSetItem", cts, index, total, types=[])


def add_items(ctx: BlockGrad, cts: Value, pieces: Value) -> None:
    """``cts[k] += pieces[k]`` for every k (two backward lists of one length)."""
    for_each(ctx, ctx.op("prim::len", pieces),
              lambda k: add_at(ctx, cts, k, item_ct(ctx, pieces, k)))


def whole_list_ct(ctx: BlockGrad, node: Node, lst: Value, pieces: Value) -> None:
    """A read of all of ``lst`` by ``node`` (a stack, a cat) gives each item a cotangent."""
    cts = ctx.ad.list_cts.get(lst)
    if cts is not None:
        add_items(ctx, cts, pieces)
    elif tracks_items(lst) and lst.node.owner is ctx.fblock:
        ctx.ad.list_cts[lst] = pieces
    else:
        raise untracked(node, lst)


def untracked(node: Node, lst: Value) -> IRError:
    """The refusal of a read of a list whose items the backward cannot follow back."""
    maker = lst.node
    if maker.kind == PARAM and maker.owner is not None and maker.owner.owner is None:
        what = "a list argument that the function changes"
        way_out = "build a new list from its items instead of changing the argument"
    elif maker.kind == PARAM:
        what = "a list carried through a loop"
        way_out = "append to one list made before the loop instead of reassigning it"
    elif maker.kind in ("prim::ListConstruct", "tensor::unbind") and escapes(lst):
        what = "a list that is also kept in a tuple, a dict, another list or a branch's result"
        way_out = "read the items before putting the list there, or stack it first"
    elif maker.kind in ("prim::ListConstruct", "tensor::unbind"):
        what = (f"a list of {getattr(lst.type, 'element', lst.type)} that is changed or read "
                "at a run-time index")
        way_out = "keep only tensors in lists that are appended to"
    else:
        made_by = _MADE_BY.get(maker.kind, maker.kind.split("::")[-1])
        what = f"a list made by {made_by}"
        way_out = "build the list with a literal or appends, and read it by index or stack it"
    reading = _READ_AS.get(node.kind, "reading")
    return refusal(node, f"cannot differentiate {reading} {what}", way_out)


_READ_AS = {"tensor::stack": "np.stack of", "tensor::cat": "np.concatenate of",
            "prim::ListExtend": "extending a list by", "prim::ListPop": "popping from"}
"""How a refusal names a node reading a list the backward cannot follow."""


_MADE_BY = {"prim::ListSlice": "slicing a list", "prim::ListAdd": "adding lists",
            "prim::If": "an if", "prim::Loop": "a loop", "prim::DictGetItem": "a dict lookup",
            "prim::DictValues": "a dict's values", "prim::TupleIndex": "reading a tuple",
            "prim::TupleUnpack": "unpacking a tuple", "prim::ListIndex": "reading another list"}
"""How a refusal names the construct that made a list the backward cannot follow."""


def whole_list_at_end(ctx: BlockGrad, lst: Value, g: Cotangent, node: Node) -> None:
    """Add ``g``, a cotangent of all of ``lst`` as it is at the end (an output, or in one), to
    the one its last use starts its item cotangents from (``open_lists``)."""
    pending = ctx.ct.get(lst)
    if pending is None:
        ctx.ct[lst] = g
        return
    total = copy_list(ctx, pending, node)
    add_items(ctx, total, copy_list(ctx, g, node))
    ctx.ct[lst] = total


def is_graph_input(v: Value) -> bool:
    """``v`` is an input of the whole graph (not of a nested block)."""
    return v.node.kind == PARAM and v.node.owner is not None and v.node.owner.owner is None
