"""Reverse-mode differentiation of a shape-specialized graph into a forward and a backward graph.

``differentiate(graph)`` rewrites ``graph`` (a clone the caller owns) into the *augmented forward*:
the original outputs followed by the intermediates the backward needs (only those), and builds the
*backward*: inputs are one cotangent per forward output followed by the saved values; outputs are
one cotangent per forward input (None for inputs that are not differentiable).

Straight-line code goes node by node in reverse through the rule table (``rules.VJP_RULES``).
Control flow is differentiated symbolically:

- ``prim::If``: the backward is an If on the saved condition whose branches are the backward of
  each forward branch; it returns the branches' contributions to outer values.
- ``prim::Loop``: the backward is a reverse loop over the same trip count (a counter is added to
  while-loops). Loop-carried cotangents are carried backwards; contributions to outer values are
  accumulated in extra carried values, except an outer tensor read as ``u[i]`` by the iteration
  counter, whose slice cotangents are collected in a list and stacked once after the loop.
- Lists made in the function (literals, appends, ``unbind``): a list read after it changed has a
  backward list of its items' cotangents kept in step with it (as long as the list is at each
  point of the forward), started at its last read (from a stack's cotangent, else zeros) and
  added into by each read; the reverse of each append pops its item's cotangent from the end.
  A list never changed and read at constant indices gives each read's cotangent to its item.
  A read whose item the backward cannot follow back (a list made by slicing, an ``if`` or a
  loop; an argument the function changes) is refused, never given a zero.
- List arguments (``differentiate(graph, list_items)``): a list of tensors the function only
  reads is specialized to its items (loops indexing it by their counter unrolled, then retyped
  as a tuple, ``passes.autodiff.lists``); its cotangent is a list with one array per item.
- Tuples: cotangents are kept per element and pass through construct/unpack/index; an outer
  tuple read in an If branch or loop body gets its contribution back as a tuple.
- Optionals: the cotangent of an ``Optional[Tensor]`` is a tensor (none reaches a None), passed
  through ``unchecked_unwrap_optional`` and If outputs.
- Dicts of tensors: the cotangent of a dict is a dict of its keys' cotangents, updated as reads
  and writes are undone in reverse (``passes.autodiff.dicts``); a dict argument's gradient is one.
- Outputs that are lists, dicts or tuples holding them: their cotangents have the output's
  structure and start the backward of what built them (``passes.autodiff.outputs``).

Backward If outputs and reverse-loop carried values are typed to cover what flows into them: a
cotangent's type can be less precise than its forward value's.

Last, ``passes.autodiff.soundness`` checks that every value on a path from a differentiated input
to an output got a cotangent: a construct the backward does not handle is refused (``IRError``
naming its node: "cannot differentiate ...: the gradient would silently be zero") instead of
giving a zero gradient. Rules give cotangents through ``BlockGrad.add_ct``, which records them
for the check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ir.core import PARAM, Block, Graph, Node, Value
from ir.errors import IRError
from ir.registry import spelling
from ir.types import (
    INT,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
)
from passes.autodiff.context import BlockGrad, Cotangent, Differentiator, elements_of
from passes.autodiff.dict_types import refine_dict_values, tuple_dict_inputs
from passes.autodiff.dicts import DICT_VJPS, check_dicts, dict_ct, is_dict, uses_active_dict
from passes.autodiff.lists import (
    CHANGES,
    LEN,
    MAX_TRIPS,
    escapes,
    handed_back,
    is_static_list,
    item_type,
    length_after,
    located,
    made_items,
    read_only_list_inputs,
    reads_lists,
    refusal,
    tracks_items,
)
from passes.autodiff.outputs import seed_outputs
from passes.autodiff.prepare import (
    active_values,
    hoist_loop_invariants,
    is_differentiable_type,
    lower_dropout,
    refine_stacked_lists,
)
from passes.autodiff.rules import NON_DIFFERENTIABLE, VJP_RULES
from passes.autodiff.soundness import STORES, check_gradient_paths


@dataclass
class Gradient:
    """The result of ``differentiate``."""

    forward: Graph
    """returns the original outputs, then the saved values."""
    backward: Graph
    """takes one cotangent per original output, then the saved values; returns one cotangent
    per forward input (None where the input is not differentiable)."""
    num_outputs: int
    """how many of the forward's outputs are the original ones."""
    differentiable: list[bool]
    """per forward input: whether a gradient is computed for it."""
    dict_inputs: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    """dict arguments both graphs take as the tuple of their values at these keys (input
    position -> keys); the backward returns their gradients as such tuples."""

    @property
    def num_saved(self) -> int:
        return len(self.forward.outputs) - self.num_outputs


def differentiate(graph: Graph, list_items: Mapping[int, Sequence[Type]] | None = None,
                  dict_items: Mapping[int, Mapping[Any, Type]] | None = None) -> Gradient:
    """Turn ``graph`` (modified in place) into an augmented forward and build its backward.

    ``list_items`` gives, for graph inputs that are lists, the types of the items of the list
    the graph is specialized for (input position -> one type per item). A list of tensors the
    function only reads then gets a gradient per item (a list), even when its items' shapes
    differ and it is read at a loop's counter (``passes.autodiff.lists``). ``dict_items`` does
    the same for dict arguments (input position -> key -> type): one only read at constant keys
    becomes a tuple (``Gradient.dict_inputs``).
    """
    from passes.shape_prop import propagate_block
    lower_dropout(graph)
    dict_inputs = tuple_dict_inputs(graph, dict_items or {})
    if dict_inputs:
        propagate_block(graph.block)
    refine_dict_values(graph, {k: t for k, t in (dict_items or {}).items()
                               if k not in dict_inputs})
    lists = read_only_list_inputs(graph, list_items or {})
    if refine_stacked_lists(graph, lists):
        # unrolled layers and per-step slices are new loop bodies: give them the loop rewrites
        # (the input projection hoisted out of each layer's loop) before the backward mirrors
        # them, then re-refine what those rewrites re-typed
        from passes import RNN_PIPELINE, run_pipeline
        run_pipeline(graph, RNN_PIPELINE)
        refine_stacked_lists(graph, lists)
    hoist_loop_invariants(graph)
    active = active_values(graph, NON_DIFFERENTIABLE)
    check_dicts(graph, active)
    ad = Differentiator(graph, active)
    root = BlockGrad(ad, graph.block, ad.backward.block)
    ad.root = root
    num_outputs = len(graph.outputs)
    seed_outputs(root, graph)
    backprop_block(root)
    _refuse_lost_list_cotangents(root, lists)
    results, differentiable = [], []
    for v in graph.inputs:
        ok = v in active
        differentiable.append(ok)
        if not ok:
            results.append(root.const(None))
        elif v in lists:
            results.append(_list_of_items(root, v, root.ct.get(v), len(lists[v])))
        elif is_dict(v):
            results.append(dict_ct(root, v))
        elif isinstance(v.type, ListType) and root.ct.get(v) is None:
            raise IRError("cannot differentiate with respect to a list argument the function "
                          "changes: pass the arrays as separate arguments or a tuple, and build "
                          "a new list in the function", _first_change(v))
        else:
            results.append(root.materialize(v, root.ct.get(v)))
    ad.backward.set_outputs(results)
    check_gradient_paths(graph, [v for v in graph.inputs if v in active], ad.given)
    graph.set_outputs(list(graph.outputs) + ad.saved)
    return Gradient(graph, ad.backward, num_outputs, differentiable, dict_inputs)


def _refuse_lost_list_cotangents(root: BlockGrad, lists: Mapping[Value, object]) -> None:
    """Every cotangent given to a list or gathered by its reads must have been handed on to its
    items by the list's maker (or be a read-only list argument's): none may end as a zero."""
    ad = root.ad
    for v in ad.forward.inputs:
        if (isinstance(v.type, ListType) and v not in lists and not handed_back(v)
                and (root.ct.get(v) is not None or ad.read_cts.get(v))):
            users = [use.node for use in v.uses]
            changes = [n for n in users if n.kind in CHANGES] or users
            raise refusal(changes[0], "cannot differentiate with respect to a list argument "
                          "the function changes (appends to it, stores into it) or returns",
                          "pass the arrays as separate arguments or a tuple, and build a new "
                          "list in the function")
    lost = [v for v, g in root.ct.items() if g is not None and isinstance(v.type, ListType)
            and not _is_graph_input(v)]
    lost += [v for v, reads in ad.read_cts.items() if reads and not _is_graph_input(v)]
    if lost:
        raise refusal(lost[0].node, "cannot differentiate the items of this list: the "
                      "backward cannot follow them back", "build the list with a literal or "
                      "appends")


def _list_of_items(root: BlockGrad, v: Value, g, n: int) -> Value:
    """The cotangent of a list argument of ``n`` items retyped as a tuple, as a list (the
    argument's kind)."""
    t = v.type
    for use in v.uses:
        # a read out of range stays a list read: say so rather than blame a non-constant index
        i = use.node.inputs[1] if len(use.node.inputs) > 1 else None
        if i is not None and i.is_constant and not -n <= int(i.constant) < n:
            raise IRError(f"cannot differentiate reading a list argument of {n} items at "
                          f"index {i.constant}: it is past the end (the plain function raises "
                          "IndexError there)", use.node)
    if not isinstance(t, TupleType):  # still a list: a read at a non-constant index remains
        reads = [u.node for u in v.uses if u.node.kind == "prim::ListIndex"]
        raise IRError("cannot differentiate reading a list argument at a non-constant index "
                      f"(only counted loops of at most {MAX_TRIPS} trips are unrolled to make "
                      "the index constant): pass the items as one stacked array and index that",
                      reads[0] if reads else None)
    parts = root.structured(g) if g is not None else [None] * len(t.elements)
    items = [root._element(gk, tk, v, k) for k, (gk, tk) in enumerate(zip(parts, t.elements))]
    item_t = _covering([i.type for i in items], TensorType())
    return root.emit("prim::ListConstruct", *items, types=[ListType(item_t)]).output


def _first_change(v: Value) -> Node | None:
    """The first node that writes into list ``v`` (an append, a store), if any."""
    for use in v.uses:
        if use.index == 0 and use.node.kind in STORES:
            return use.node
    return None


def prune_unused_saved(grad: Gradient) -> bool:
    """Drop saved values the (optimized) backward no longer reads, from both graphs."""
    changed = False
    first = grad.num_outputs
    for k in reversed(range(grad.num_saved)):
        param = grad.backward.inputs[first + k]
        if param.uses:
            continue
        grad.backward.block.erase_param(first + k)
        grad.forward.block.return_node.remove_input(first + k)
        changed = True
    return changed


# -- the reverse walk ---------------------------------------------------------------------------
def backprop_block(ctx: BlockGrad) -> None:
    """Emit the backward of every node of ``ctx.fblock``, last node first."""
    for node in reversed(ctx.fblock.nodes):
        try:
            _open_lists(ctx, node)
            backprop_node(ctx, node)
        except IRError as error:  # every refusal names the user's line it is about
            raise located(error, node)  # noqa: B904 (the same error, re-raised)


def backprop_node(ctx: BlockGrad, node: Node) -> None:
    """Emit the backward of one forward node; a refusal names the innermost node it is about."""
    ctx.ad.at.append(node)
    try:
        _backprop_node(ctx, node)
    except IRError as e:
        if e.node is None:
            e.node = node
        raise
    finally:
        ctx.ad.at.pop()


def _backprop_node(ctx: BlockGrad, node: Node) -> None:
    special = STRUCTURE_VJPS.get(node.kind)
    if special is not None:
        special(ctx, node)
        return
    if node.kind == "tensor::select" and node.inputs[0] in ctx.stacked:
        _collect_slice(ctx, node)
        return
    gs = [ctx.take_ct(v) for v in node.outputs]
    if all(g is None for g in gs) or node.kind in NON_DIFFERENTIABLE:
        return
    if not any(ctx.is_active(v) for v in node.inputs):
        return
    rule = VJP_RULES.get(node.kind)
    if rule is None:
        raise IRError(f"cannot differentiate {spelling(node.kind)}: it has no gradient rule "
                      "(compute it from values that are not differentiated, or with ops that "
                      "have one: see docs/ops.md)", node)
    for v, g in zip(node.inputs, rule(ctx, node, gs) or ()):
        ctx.add_ct(v, g)


# -- tuples ---------------------------------------------------------------------------------------
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


def whole_list_at_end(ctx: BlockGrad, lst: Value, g: Cotangent, node: Node) -> None:
    """Add ``g``, a cotangent of all of ``lst`` as it is at the end (an output, or in one), to
    the one its last use starts its item cotangents from (``_open_lists``)."""
    pending = ctx.ct.get(lst)
    if pending is None:
        ctx.ct[lst] = g
        return
    total = _copy_list(ctx, pending, node)
    _add_items(ctx, total, _copy_list(ctx, g, node))
    ctx.ct[lst] = total


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
        raise refusal(node, f"cannot differentiate reading an item of {_kind_of(t)} as if it "
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


# -- lists ----------------------------------------------------------------------------------------
# A list made in the function whose items are read after it changed (appended to, read at an
# index only known at run time, stacked, read in a loop) has a backward list of its items'
# cotangents, ``ad.list_cts[l]``, kept in step with it: while the reverse walk is at a point of
# the forward, the backward list has as many items as the forward list had there, and item k
# holds the cotangent item k has gathered from the reads after that point. It is made where the
# reverse walk meets the list's last read (``_open_lists``): from the cotangent of a stack or
# cat, else as zeros of the list's items there. Each read adds into it (``l[i]``: item i), each
# change is undone (an append pops its item's cotangent off the end), and the list's maker hands
# the items' cotangents on. A list never changed and read only at constant indices in its own
# block (``a, b = l``, ``l[-1]``) needs none of this: its reads go to known items (``read_cts``).
def _open_lists(ctx: BlockGrad, node: Node) -> None:
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
            ctx.ad.list_cts[lst] = _copy_list(ctx, seed, node)
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


def _copy_list(ctx: BlockGrad, seed: Cotangent, node: Node) -> Value:
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
    saved = ctx.fwd(_snapshot_after(ctx, lst, node))
    cts = ctx.emit("prim::ListConstruct", types=[ListType(element)]).output

    def zero(k: Value) -> None:
        fwd_item = ctx.emit("prim::ListIndex", saved, k, types=[element]).output
        ctx.emit("prim::ListAppend", cts, ctx.op("tensor::zeros_like", fwd_item, None), types=[])
    _for_each(ctx, ctx.op("prim::len", saved), zero)
    return cts


def _snapshot_after(ctx: BlockGrad, lst: Value, node: Node) -> Value:
    """A forward copy of ``lst`` taken right after ``node`` (the items it has there)."""
    fgraph = ctx.ad.forward
    assert node.next is not None
    with fgraph.inserting_before(node.next):
        none = fgraph.constant(None)
        return fgraph.insert("prim::ListSlice", [lst, none, none, none], [lst.type],
                             names=[(lst.name or "l") + "_items"]).output


def _for_each(ctx: BlockGrad, n: Value, body) -> None:
    """Emit ``for k in range(n): body(k)`` into the backward (nothing carried)."""
    loop = ctx.emit("prim::Loop", n, True, types=[])
    block = Block(ctx.graph, owner=loop)
    loop.blocks.append(block)
    k = block.add_param(INT, "k")
    outer, ctx.bblock = ctx.bblock, block
    try:
        body(k)
        block.set_returns([ctx.const(True)])
    finally:
        ctx.bblock = outer


def _item_ct(ctx: BlockGrad, cts: Value, index: Value) -> Value:
    return ctx.emit("prim::ListIndex", cts, index, types=[cts.type.element]).output  # type: ignore


def _add_at(ctx: BlockGrad, cts: Value, index: Value, g: Value) -> None:
    """``cts[index] += g`` in the backward."""
    total = ctx.op("tensor::add", _item_ct(ctx, cts, index), g)
    ctx.emit("prim::ListSetItem", cts, index, total, types=[])


def _add_items(ctx: BlockGrad, cts: Value, pieces: Value) -> None:
    """``cts[k] += pieces[k]`` for every k (two backward lists of one length)."""
    _for_each(ctx, ctx.op("prim::len", pieces),
              lambda k: _add_at(ctx, cts, k, _item_ct(ctx, pieces, k)))


def _whole_list_ct(ctx: BlockGrad, node: Node, lst: Value, pieces: Value) -> None:
    """A read of all of ``lst`` by ``node`` (a stack, a cat) gives each item a cotangent."""
    cts = ctx.ad.list_cts.get(lst)
    if cts is not None:
        _add_items(ctx, cts, pieces)
    elif tracks_items(lst) and lst.node.owner is ctx.fblock:
        ctx.ad.list_cts[lst] = pieces
    else:
        raise _untracked(node, lst)


def _untracked(node: Node, lst: Value) -> IRError:
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
        raise _untracked(node, other)
    if other_cts is None:  # items that carry no derivative: their cotangents are dropped
        with ctx.ad.forward.inserting_before(node):
            added = ctx.ad.forward.insert(LEN, [other], [INT]).output
        n = ctx.fwd(added)
        _for_each(ctx, n, lambda k: ctx.emit("prim::ListPop", cts, -1,
                                             types=[cts.type.element]))  # type: ignore
        return
    n = ctx.op("prim::len", other_cts)
    last = ctx.op("tensor::sub", n, 1)

    def give_back(k: Value) -> None:
        g = ctx.emit("prim::ListPop", cts, -1, types=[cts.type.element]).output  # type: ignore
        _add_at(ctx, other_cts, ctx.op("tensor::sub", last, k), g)
    _for_each(ctx, n, give_back)


def _list_set_item(ctx: BlockGrad, node: Node) -> None:
    lst, index, item = node.inputs
    cts = ctx.ad.list_cts.get(lst)
    if cts is None:
        return
    i = ctx.fwd(index)
    g = _item_ct(ctx, cts, i)
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
            raise _untracked(node, lst)
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
        cts = _copy_list(ctx, seed, node) if seed is not None else None
    reads = ctx.ad.read_cts.pop(lst, None)
    for k, item in enumerate(node.inputs):
        if cts is not None:  # typed as the cotangent list's items (a stacked cotangent's dtype)
            ctx.add_ct(item, _item_ct(ctx, cts, ctx.const(k)))
        if reads:
            ctx.add_ct(item, reads.get(k))


def _list_index(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    lst, index = node.inputs
    if g is None:
        return
    cts = ctx.ad.list_cts.get(lst)
    if cts is not None:
        _add_at(ctx, cts, ctx.fwd(index), g)
        return
    if is_static_list(lst):
        k = int(index.constant) % made_items(lst)  # type: ignore[operator]
    elif _is_graph_input(lst) and not _changed(lst):
        # a list argument the function only reads: its reads are resolved per item at the end
        if not index.is_constant:
            raise IRError("cannot differentiate reading a list argument at a non-constant "
                          "index (one not known when compiling): pass the items as one stacked "
                          "array and index that", node)
        k = int(index.constant)
    else:
        raise _untracked(node, lst)
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
                _add_at(ctx, cts, ctx.const(k), g)
        return
    if not is_static_list(lst):
        raise _untracked(node, lst)
    reads = ctx.ad.read_cts.setdefault(lst, {})
    for k, g in enumerate(gs):
        reads[k] = ctx.plus(reads.get(k), g)


def _is_graph_input(v: Value) -> bool:
    return v.node.kind == PARAM and v.node.owner is not None and v.node.owner.owner is None


def _changed(lst: Value) -> bool:
    return any(use.node.kind in CHANGES and use.index == 0 for use in lst.uses)


def _unbind(ctx: BlockGrad, node: Node) -> None:
    a, lst = node.inputs[0], node.output
    t = a.type
    cts = ctx.ad.list_cts.get(lst)
    if cts is None:
        seed = ctx.take_ct(lst)
        cts = _copy_list(ctx, seed, node) if seed is not None else None
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


def _stack(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    lst = node.inputs[0]
    if g is None or not ctx.is_active(lst):
        return
    axis = node.inputs[1]
    pieces = ctx.emit("tensor::unbind", g, ctx.fwd(axis)).output
    _whole_list_ct(ctx, node, lst, pieces)


def _cat(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    lst = node.inputs[0]
    if g is None or not ctx.is_active(lst):
        return
    axis = int(node.inputs[1].constant)
    element = lst.type.element if isinstance(lst.type, ListType) else None
    producer = lst.node
    if producer.kind == "prim::ListConstruct" and len(lst.uses) == 1:
        sizes = [_axis_size(v, axis) for v in producer.inputs]
    else:
        # the list's length where the cat reads it (appends after the cat are not its pieces)
        n = length_after(lst, node) if lst.node.owner is node.owner else None
        size = element.shape[axis] if isinstance(element, TensorType) and element.shape else None
        if n is None or size is None:
            raise refusal(node, "cannot differentiate np.concatenate of a list whose length or "
                          "item sizes are not known when compiling", "append to it a fixed "
                          "number of times (no conditional appends, a loop over a constant "
                          "range), np.stack items of one shape, or concatenate a list literal")
        sizes = [size] * n
    if None in sizes:
        raise refusal(node, "cannot differentiate np.concatenate of items whose sizes along the "
                      "axis are not known when compiling", "concatenate arrays of fixed sizes, "
                      "or np.stack items of one shape")
    start, pieces = 0, []
    for s in sizes:
        pieces.append(ctx.op("tensor::slice", g, axis, start, start + s, None))
        start += s
    # pieces of different sizes: the list's element type covers them all (not the first's)
    item_t = _covering([p.type for p in pieces], TensorType())
    lst_ct = ctx.emit("prim::ListConstruct", *pieces, types=[ListType(item_t)]).output
    _whole_list_ct(ctx, node, lst, lst_ct)


# -- control flow -------------------------------------------------------------------------------
def outer_values(node: Node, ctx: BlockGrad) -> list[Value]:
    """Active tensors defined outside ``node`` that its blocks read or return (first use first)."""
    inner: set[Value] = set()
    seen: dict[Value, None] = {}
    for b in node.blocks:
        inner.update(b.params)
        for n in b.walk():
            inner.update(n.outputs)
            for nb in n.blocks:
                inner.update(nb.params)

    def visit(v: Value) -> None:
        if v in inner or v.is_constant or not ctx.is_active(v):
            return
        # tuples too: a branch or body that unpacks an outer tuple contributes to its elements;
        # and optionals: one that unwraps an outer optional contributes to its value
        if isinstance(v.type, TensorType) or elements_of(v.type) is not None or \
                _is_optional_tensor(v.type):
            seen.setdefault(v, None)
    for b in node.blocks:
        for n in b.walk():
            for v in n.inputs:
                visit(v)
            for nb in n.blocks:
                for v in nb.returns:
                    visit(v)
        for v in b.returns:
            visit(v)
    return list(seen)


def _backprop_if(ctx: BlockGrad, node: Node) -> None:
    gs = [ctx.take_ct(v) for v in node.outputs]
    # a branch that appends to (or reads) a list whose items carry cotangents must be undone
    # even when the If has no outputs: its appends pop their items' cotangents
    lists = [u for u in ctx.ad.list_cts if _inside_any_use(u, node)]
    if all(g is None for g in gs) and not lists and not uses_active_dict(ctx, node):
        return
    for v, g in zip(node.outputs, gs):
        if g is not None and not (isinstance(v.type, TensorType) or _is_optional_tensor(v.type)):
            raise IRError(f"cannot differentiate an `if` that assigns {_kind_of(v.type)} used "
                          "by the differentiated result: assign arrays in the branches and build "
                          "the container after the `if`")
    free = outer_values(node, ctx)
    cond = ctx.fwd(node.inputs[0])
    bif = ctx.emit("prim::If", cond, types=[])
    subs = []
    for fb in node.blocks:
        sub = BlockGrad(ctx.ad, fb, Block(ctx.graph, owner=bif), parent=ctx, owner=node)
        bif.blocks.append(sub.bblock)
        for r, g in zip(fb.returns, gs):
            sub.add_ct(r, g)
        backprop_block(sub)
        subs.append(sub)
    for u in free:
        if all(sub.ct.get(u) is None for sub in subs):
            continue
        results = [sub.materialize(u, sub.ct.get(u)) for sub in subs]
        for sub, r in zip(subs, results):
            sub.bblock.add_return(r)
        # a cotangent's type can be less precise than its forward value's (an early return's
        # branch result): the output covers what both branches return
        out = bif.add_output(_covering([r.type for r in results], _ct_type(u.type)))
        ctx.add_ct(u, out)


def _kind_of(t: Type) -> str:
    """How a message names a value of type ``t`` to the user."""
    if isinstance(t, OptionalType):
        return "an Optional value"
    if isinstance(t, ListType):
        return "a list"
    if isinstance(t, TupleType):
        return "a tuple"
    if isinstance(t, DictType):
        return "a dict"
    if isinstance(t, ClassType):
        return "a NamedTuple" if t.named_tuple else f"a {t.name.rsplit('.', 1)[-1]} object"
    return f"a value of type {t}"


def _ct_type(t: Type) -> Type:
    """The type of a cotangent of a value of type ``t`` (an optional's is its element's)."""
    return t.element if isinstance(t, OptionalType) else t


def _is_optional_tensor(t: Type) -> bool:
    return isinstance(t, OptionalType) and isinstance(t.element, TensorType)


def _covering(types: list[Type], fallback: Type) -> Type:
    """The least type covering ``types`` (shapes forgotten if needed), else ``fallback``."""
    from passes.shape_prop import join
    if not types:
        return fallback
    t = types[0]
    for other in types[1:]:
        t = join(t, other, fallback)
    return t


def _trip_count(ctx: BlockGrad, node: Node) -> Value:
    """The forward loop's actual number of iterations, as a backward value."""
    body = node.blocks[0]
    is_for = all(v.is_constant and v.constant is True for v in (node.inputs[1], body.returns[0]))
    if is_for:
        return ctx.fwd(node.inputs[0])
    fgraph = ctx.ad.forward
    zero = fgraph.create("prim::Constant", [], [INT], {"value": 0})
    zero.insert_before(node)
    node.add_input(zero.output)
    count = body.add_param(INT, "count")
    one = fgraph.create("prim::Constant", [], [INT], {"value": 1})
    body.prepend(one)
    bump = fgraph.create("tensor::add", [count, one.output], [INT])
    bump.insert_before(body.return_node)
    body.add_return(bump.output)
    return ctx.fwd(node.add_output(INT, "trips"))


def _stacked_reads(node: Node, free: list[Value]) -> dict[Value, int]:
    """Outer tensors read in the body only as ``select(u, axis, i)`` (``i`` the counter, directly
    in the body), where the loop runs exactly ``u.shape[axis]`` times: tensor -> axis. A loop
    that may stop early (``break``, a ``return`` inside it) writes fewer slots than the array
    has, so its slices are accumulated one by one instead."""
    body = node.blocks[0]
    counter, trips = body.params[0], node.inputs[0]
    runs_to_the_end = all(v.is_constant and v.constant is True
                          for v in (node.inputs[1], body.returns[0]))
    if not trips.is_constant or not runs_to_the_end:
        return {}
    found = {}
    for u in free:
        inside = [use for use in u.uses if _inside(use.node, node)]
        if len(inside) != 1:
            continue
        n = inside[0].node
        if n.kind != "tensor::select" or n.owner is not body or inside[0].index != 0:
            continue
        if n.inputs[2] is not counter or not n.inputs[1].is_constant:
            continue
        axis = int(n.inputs[1].constant)
        if _axis_size(u, axis) == trips.constant:
            found[u] = axis
    return found


def _inside(n: Node, loop: Node) -> bool:
    while n.owner is not None and n.owner.owner is not None:
        if n.owner.owner is loop:
            return True
        n = n.owner.owner
    return False


def _axis_size(u: Value, axis: int) -> int | None:
    t = u.type
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    return t.shape[int(axis) % len(t.shape)]


def _collect_slice(ctx: BlockGrad, node: Node) -> None:
    """The slice cotangent of ``select(u, axis, i)`` goes into slot ``i`` of ``u``'s cotangent,
    a preallocated array (or, for shapes known only at run time, onto a list stacked later)."""
    g = ctx.take_ct(node.output)
    g = g if g is not None else ctx.zeros(node.output)
    collector = ctx.stacked[node.inputs[0]]
    ctx.ad.gave(node.inputs[0])  # through the collector, added to it after the reverse loop
    if isinstance(collector.type, ListType):
        ctx.emit("prim::ListAppend", collector, g, types=[])
        return
    ctx.emit("tensor::write_slot", collector, ctx.fwd(node.inputs[1]), ctx.index, g, types=[])


def _backprop_loop(ctx: BlockGrad, node: Node) -> None:
    body = node.blocks[0]
    params, rets = body.params[1:], body.returns[1:]
    gs = [ctx.take_ct(v) for v in node.outputs]
    carried = [j for j, p in enumerate(params) if ctx.is_active(p)]
    for j in carried:
        if not _carriable(params[j].type):
            raise IRError(f"cannot differentiate a loop that reassigns {_kind_of(params[j].type)} "
                          "on the differentiated path each step: carry arrays, or mutate one "
                          "list with .append")
    free = outer_values(node, ctx)
    lists = [u for u in ctx.ad.list_cts if _inside_any_use(u, node)]
    if all(g is None for g in gs) and not lists and not uses_active_dict(ctx, node):
        return
    n = _trip_count(ctx, node)
    stacked = _stacked_reads(node, free)
    accumulated = [u for u in free if u not in stacked]
    # a carried tuple or NamedTuple (an LSTM state) carries its cotangent as one of its type
    init = [ctx.materialize(node.outputs[j], gs[j]) for j in carried]
    init += [ctx.materialize(u, None) for u in accumulated]
    collectors = {u: _collector(ctx, u, axis) for u, axis in stacked.items()}
    bloop = ctx.emit("prim::Loop", n, True, *init, types=[])
    bbody = Block(ctx.graph, owner=bloop)
    bloop.blocks.append(bbody)
    k = bbody.add_param(INT, "k")
    sub = BlockGrad(ctx.ad, body, bbody, parent=ctx, owner=node)
    sub.index = sub.emit("tensor::sub", sub.emit("tensor::sub", n, 1, at_header=True).output, k,
                         at_header=True).output
    sub.stacked = collectors
    for j in carried:
        sub.add_ct(rets[j], bbody.add_param(params[j].type, "grad_" + (params[j].name or "c")))
    for u in accumulated:
        sub.ct[u] = sub.plus(sub.ct.get(u), bbody.add_param(u.type, "grad_" + (u.name or "u")))
    backprop_block(sub)
    results = [sub.materialize(params[j], sub.ct.get(params[j])) for j in carried]
    results += [sub.materialize(u, sub.ct[u]) for u in accumulated]
    bbody.set_returns([sub.const(True), *results])
    # the carried cotangents' initial values and results may be typed less precisely than the
    # forward values the body parameters were typed after: widen parameters and outputs to cover
    for p, v0, v in zip(bbody.params[1:], bloop.inputs[2:], results):
        p.type = _covering([v0.type, p.type, v.type], p.type)
        bloop.add_output(p.type)
    # the body's nodes were typed after the parameters' first, narrower types: re-derive them
    # (and nested Ifs' outputs) from the widened parameters
    _retype(bloop)
    for j, out in zip(carried, bloop.outputs):
        ctx.add_ct(node.inputs[2 + j], out)
    for u, out in zip(accumulated, bloop.outputs[len(carried):]):
        ctx.add_ct(u, out)
    for u, collector in collectors.items():
        if not isinstance(collector.type, ListType):
            ctx.add_ct(u, collector)
            continue
        backwards = ctx.op("prim::ListSlice", collector, None, None, -1)
        ctx.add_ct(u, ctx.op("tensor::stack", backwards, stacked[u]))


def _carriable(t: Type) -> bool:
    """Loop-carried values whose cotangent a reverse loop can carry: tensors, and tuples or
    NamedTuples of tensors."""
    elements = elements_of(t)
    if elements is not None:
        return all(isinstance(e, TensorType) for e in elements)
    return isinstance(t, TensorType)


def _retype(node: Node) -> None:
    """Recompute the types inside a backward loop (to a fixed point) and of its outputs, so every
    If and Loop output covers what its blocks yield."""
    from passes.shape_prop import propagate_node
    propagate_node(node)


def _collector(ctx: BlockGrad, u: Value, axis: int) -> Value:
    """Where a reverse loop puts the slice cotangents of ``u``: an array shaped like ``u`` when
    its shape is known (each iteration writes its slot), else a list (reversed and stacked)."""
    t = u.type
    if isinstance(t, TensorType) and t.dtype and t.shape is not None and None not in t.shape:
        return ctx.op("tensor::empty", tuple(t.shape), t.dtype)
    return ctx.emit("prim::ListConstruct", types=[ListType(_slice_type(u, axis))]).output


def _slice_type(u: Value, axis: int) -> TensorType:
    t = u.type
    assert isinstance(t, TensorType) and t.shape is not None
    axis %= len(t.shape)
    return TensorType(t.dtype, t.shape[:axis] + t.shape[axis + 1:], t.device)


def _inside_any_use(lst: Value, loop: Node) -> bool:
    return any(_inside(use.node, loop) for use in lst.uses)


STRUCTURE_VJPS = {
    "prim::Constant": lambda ctx, node: None,
    "prim::TupleConstruct": _tuple_construct,
    "prim::TupleUnpack": _tuple_unpack,
    "prim::TupleIndex": _tuple_index,
    "prim::NamedTupleConstruct": _tuple_construct,
    "prim::GetAttr": _named_field,
    "prim::unchecked_unwrap_optional": _pass_through,
    "prim::ListConstruct": _list_construct,
    "prim::ListAppend": _list_append,
    "prim::ListExtend": _list_extend,
    "prim::ListSetItem": _list_set_item,
    "prim::ListInsert": _list_insert,
    "prim::ListPop": _list_pop,
    "prim::ListIndex": _list_index,
    "prim::ListUnpack": _list_unpack,
    "tensor::unbind": _unbind,
    "tensor::stack": _stack,
    "tensor::cat": _cat,
    "prim::If": _backprop_if,
    "prim::Loop": _backprop_loop,
} | DICT_VJPS
"""Nodes whose backward is about structure (tuples, lists, control flow), not arithmetic."""

__all__ = ["Gradient", "backprop_block", "differentiate", "is_differentiable_type",
           "prune_unused_saved"]
