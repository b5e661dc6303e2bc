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
- Lists filled by appends and consumed by ``stack``/``cat``: the cotangent of the list is a list
  of item cotangents; the reverse of each append pops its item's cotangent from the end.
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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ir.core import Block, Graph, Node, Value
from ir.errors import IRError
from ir.types import INT, ListType, OptionalType, TensorType, TupleType, Type
from passes.autodiff.context import BlockGrad, Differentiator
from passes.autodiff.dict_types import refine_dict_values, tuple_dict_inputs
from passes.autodiff.dicts import DICT_VJPS, check_dicts, dict_ct, is_dict, uses_active_dict
from passes.autodiff.lists import MAX_TRIPS, length_at, made_items, read_only_list_inputs
from passes.autodiff.outputs import seed_outputs
from passes.autodiff.prepare import (
    active_values,
    hoist_loop_invariants,
    is_differentiable_type,
    lower_dropout,
    refine_stacked_lists,
)
from passes.autodiff.rules import NON_DIFFERENTIABLE, VJP_RULES


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
        else:
            results.append(root.materialize(v, root.ct.get(v)))
    ad.backward.set_outputs(results)
    graph.set_outputs(list(graph.outputs) + ad.saved)
    return Gradient(graph, ad.backward, num_outputs, differentiable, dict_inputs)


def _list_of_items(root: BlockGrad, v: Value, g, n: int) -> Value:
    """The cotangent of a list argument of ``n`` items retyped as a tuple, as a list (the
    argument's kind)."""
    t = v.type
    for use in v.uses:
        # a read out of range stays a list read: say so rather than blame a non-constant index
        i = use.node.inputs[1] if len(use.node.inputs) > 1 else None
        if i is not None and i.is_constant and not -n <= int(i.constant) < n:
            raise IRError(f"cannot differentiate reading a list argument of {n} items at "
                          f"index {i.constant}")
    if not isinstance(t, TupleType):  # still a list: a read at a non-constant index remains
        raise IRError("cannot differentiate reading a list argument at a non-constant index "
                      "(only counted loops of at most "
                      f"{MAX_TRIPS} trips are unrolled to make the index constant)")
    parts = root.structured(g) if g is not None else [None] * len(t.elements)
    items = [root._element(gk, tk, v, k) for k, (gk, tk) in enumerate(zip(parts, t.elements))]
    item_t = _covering([i.type for i in items], TensorType())
    return root.emit("prim::ListConstruct", *items, types=[ListType(item_t)]).output


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
        backprop_node(ctx, node)


def backprop_node(ctx: BlockGrad, node: Node) -> None:
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
        raise IRError(f"cannot differentiate {node.kind}: it has no gradient rule"
                      + (f" (at {node.source})" if node.source else ""))
    for v, g in zip(node.inputs, rule(ctx, node, gs) or ()):
        ctx.add_ct(v, g)


# -- tuples ---------------------------------------------------------------------------------------
def _tuple_construct(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    if g is None:
        return
    for v, gk in zip(node.inputs, ctx.structured(g)):
        ctx.add_ct(v, gk)


def _tuple_unpack(ctx: BlockGrad, node: Node) -> None:
    gs = [ctx.take_ct(v) for v in node.outputs]
    if any(g is not None for g in gs):
        ctx.add_ct(node.inputs[0], gs)


def _tuple_index(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    t = node.inputs[0].type
    if g is None or not isinstance(t, TupleType):
        return
    k = int(node.inputs[1].constant) % len(t.elements)
    gs = [None] * len(t.elements)
    gs[k] = g
    ctx.add_ct(node.inputs[0], gs)


def _pass_through(ctx: BlockGrad, node: Node) -> None:
    ctx.add_ct(node.inputs[0], ctx.take_ct(node.output))


# -- lists ----------------------------------------------------------------------------------------
def _list_append(ctx: BlockGrad, node: Node) -> None:
    cts = ctx.ad.list_cts.get(node.inputs[0])
    if cts is None:
        return
    item = node.inputs[1]
    g = ctx.emit("prim::ListPop", cts, -1, types=[cts.type.element]).output  # type: ignore
    ctx.add_ct(item, g)


def _list_extend(ctx: BlockGrad, node: Node) -> None:
    cts = ctx.ad.list_cts.get(node.inputs[0])
    if cts is None:
        return
    other = node.inputs[1].node
    if other.kind != "prim::ListConstruct":
        raise IRError("cannot differentiate extending a list by a list not built in place")
    for item in reversed(other.inputs):
        ctx.add_ct(item, ctx.emit("prim::ListPop", cts, -1,
                                  types=[cts.type.element]).output)  # type: ignore


def _list_construct(ctx: BlockGrad, node: Node) -> None:
    lst = node.output
    cts = ctx.ad.list_cts.get(lst)
    reads = ctx.ad.read_cts.pop(lst, None)
    for k, item in enumerate(node.inputs):
        if cts is not None:
            ctx.add_ct(item, ctx.emit("prim::ListIndex", cts, k, types=[item.type]).output)
        if reads:
            ctx.add_ct(item, reads.get(k))


def _list_index(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    index = node.inputs[1]
    if g is None:
        return
    if not index.is_constant:
        raise IRError("cannot differentiate reading a list at a non-constant index")
    k = int(index.constant)
    if k < 0:
        n = length_at(node.inputs[0], node)
        if n is None:
            raise IRError("cannot differentiate reading a list at a negative index unless the "
                          "list's length there is known (a literal or an unbind, appended to "
                          "only once per step of counted loops before the read)")
        k += n
    made = made_items(node.inputs[0])
    if made is not None and k >= made:
        raise IRError(f"cannot differentiate reading item {int(index.constant)} of a list: it "
                      "is an item appended after the list was made (stack the list and index "
                      "the stacked array instead)")
    reads = ctx.ad.read_cts.setdefault(node.inputs[0], {})
    reads[k] = ctx.plus(reads.get(k), g)


def _list_unpack(ctx: BlockGrad, node: Node) -> None:
    reads = ctx.ad.read_cts.setdefault(node.inputs[0], {})
    for k, v in enumerate(node.outputs):
        reads[k] = ctx.plus(reads.get(k), ctx.take_ct(v))


def _unbind(ctx: BlockGrad, node: Node) -> None:
    reads = ctx.ad.read_cts.pop(node.output, None)
    a = node.inputs[0]
    t = a.type
    if not reads or not isinstance(t, TensorType) or t.shape is None:
        return
    axis = int(node.inputs[1].constant) % len(t.shape)
    n = t.shape[axis]
    if n is None:
        raise IRError("cannot differentiate unbind of an axis of unknown size")
    item = node.output.type.element  # type: ignore[union-attr]
    pieces = [reads.get(k) for k in range(n)]
    items = [p if p is not None else _zeros_of(ctx, item) for p in pieces]
    lst = ctx.emit("prim::ListConstruct", *items, types=[ListType(item)]).output
    ctx.add_ct(a, ctx.op("tensor::stack", lst, axis))


def _zeros_of(ctx: BlockGrad, t: TensorType) -> Value:
    if t.shape is None or None in t.shape or t.dtype is None:
        raise IRError(f"cannot make zeros of unknown shape {t}")
    return ctx.op("tensor::zeros", tuple(t.shape), t.dtype)


def _stack(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    lst = node.inputs[0]
    if g is None or not ctx.is_active(lst):
        return
    axis = node.inputs[1]
    pieces = ctx.emit("tensor::unbind", g, ctx.fwd(axis)).output
    _set_list_ct(ctx, lst, pieces)


def _cat(ctx: BlockGrad, node: Node) -> None:
    g = ctx.take_ct(node.output)
    lst = node.inputs[0]
    if g is None or not ctx.is_active(lst):
        return
    axis = int(node.inputs[1].constant)
    element = lst.type.element if isinstance(lst.type, ListType) else None
    producer = lst.node
    if producer.kind == "prim::ListConstruct" and len(lst.uses) == 1:
        sizes = [v.type.shape[axis] for v in producer.inputs]  # type: ignore[union-attr]
    else:
        from passes.autodiff.prepare import list_length
        n = list_length(lst)
        size = element.shape[axis] if isinstance(element, TensorType) and element.shape else None
        if n is None or size is None:
            raise IRError("cannot differentiate cat of a list of unknown length or item sizes")
        sizes = [size] * n
    if None in sizes:
        raise IRError("cannot differentiate cat of items of unknown size")
    start, pieces = 0, []
    for s in sizes:
        pieces.append(ctx.op("tensor::slice", g, axis, start, start + s, None))
        start += s
    # pieces of different sizes: the list's element type covers them all (not the first's)
    item_t = _covering([p.type for p in pieces], TensorType())
    lst_ct = ctx.emit("prim::ListConstruct", *pieces, types=[ListType(item_t)]).output
    _set_list_ct(ctx, lst, lst_ct)


def _set_list_ct(ctx: BlockGrad, lst: Value, cts: Value) -> None:
    if lst.node.kind != "prim::ListConstruct":
        raise IRError("cannot differentiate a list that was not built in the function")
    if lst in ctx.ad.list_cts:
        raise IRError("cannot differentiate a list read by two differentiable ops")
    ctx.ad.list_cts[lst] = cts


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
        if isinstance(v.type, (TensorType, TupleType)) or _is_optional_tensor(v.type):
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
            raise IRError("cannot differentiate an If with non-tensor outputs")
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
    in the body), where the loop runs exactly ``u.shape[axis]`` times: tensor -> axis."""
    body = node.blocks[0]
    counter, trips = body.params[0], node.inputs[0]
    if not trips.is_constant:
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
        if not isinstance(params[j].type, TensorType):
            raise IRError("cannot differentiate a loop carrying a non-tensor value: "
                          f"{params[j].type}")
    free = outer_values(node, ctx)
    lists = [u for u in ctx.ad.list_cts if _inside_any_use(u, node)]
    if all(g is None for g in gs) and not lists and not uses_active_dict(ctx, node):
        return
    n = _trip_count(ctx, node)
    stacked = _stacked_reads(node, free)
    accumulated = [u for u in free if u not in stacked]
    init = [gs[j] if gs[j] is not None else ctx.zeros(node.outputs[j]) for j in carried]
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
    results = [sub.ct.get(params[j]) for j in carried]
    results = [r if r is not None else sub.zeros(params[j]) for r, j in zip(results, carried)]
    results += [sub.materialize(u, sub.ct[u]) for u in accumulated]
    bbody.set_returns([sub.const(True), *results])
    # the carried cotangents' initial values and results may be typed less precisely than the
    # forward values the body parameters were typed after: widen parameters and outputs to cover
    for p, v0, v in zip(bbody.params[1:], bloop.inputs[2:], results):
        p.type = _covering([v0.type, p.type, v.type], p.type)
        bloop.add_output(p.type)
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
    "prim::unchecked_unwrap_optional": _pass_through,
    "prim::ListConstruct": _list_construct,
    "prim::ListAppend": _list_append,
    "prim::ListExtend": _list_extend,
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
