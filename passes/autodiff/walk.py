"""The reverse walk: each forward node's backward, last node first, through the rule tables;
``prim::If`` and ``prim::Loop`` recursively, one ``BlockGrad`` per nested block.

A node is differentiated by its structure rule (``STRUCTURE_VJPS``: tuples, lists, control flow,
dicts) or by its op's VJP rule (``passes.autodiff.rules.VJP_RULES``). An If's backward is an If on
the saved condition whose branches are each branch's backward; a loop's is a reverse loop over
the same trip count carrying the loop-carried cotangents and the contributions to outer values
(outer arrays read as ``u[i]`` by the counter collect their slices' cotangents instead).
"""

from __future__ import annotations

from ir.core import Block, Node, Value
from ir.errors import IRError
from ir.registry import WRITES, lookup, spelling
from ir.types import INT, ListType, TensorType, Type
from ir.versions import WRITE_INTO, overwritten_reads
from passes.autodiff.context import (
    BlockGrad,
    axis_size,
    covering,
    ct_type,
    elements_of,
    is_optional_tensor,
    kind_of,
)
from passes.autodiff.dicts import DICT_VJPS, uses_active_dict
from passes.autodiff.join_vjps import JOIN_VJPS
from passes.autodiff.list_cts import open_lists
from passes.autodiff.list_vjps import LIST_VJPS
from passes.autodiff.lists import located
from passes.autodiff.refusals import refuse
from passes.autodiff.rules import NON_DIFFERENTIABLE, VJP_RULES
from passes.autodiff.tuple_vjps import TUPLE_VJPS


# -- nodes ---------------------------------------------------------------------------------------
def backprop_block(ctx: BlockGrad) -> None:
    """Emit the backward of every node of ``ctx.fblock``, last node first."""
    for node in reversed(ctx.fblock.nodes):
        try:
            open_lists(ctx, node)
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
    if node.kind == WRITE_INTO:
        _check_overwritten(ctx, node)
    gs = [ctx.take_ct(v) for v in node.outputs]
    if not node.outputs and _writes_active(ctx, node):
        # the array written gets its value from the path differentiated, which a later read
        # of it would have to see: no rule follows it (a slot write a backward graph makes,
        # met again by grad of grad)
        raise IRError(f"cannot differentiate {spelling(node.kind)}: an in-place write of a "
                      "value computed from the arguments differentiated (a first gradient "
                      "writes the cotangents of a loop's row reads, x[t], into a buffer so); "
                      "second derivatives through such a loop are not supported", node)
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


def _check_overwritten(ctx: BlockGrad, write: Node) -> None:
    """A write into the caller's array (``write_into``) after a differentiated computation read
    it: the backward, which runs after the call, would read the array as written. Refused."""
    for reader in overwritten_reads(write):
        if reader is not write and any(ctx.is_active(v) for v in reader.inputs):
            raise refuse("cannot differentiate a computation that reads an array the function "
                         "then writes into in place (the caller's array): the gradient, "
                         "computed after the call, would read the written array; compute it "
                         "from a copy (w = self.W.copy())", reader)


def _writes_active(ctx: BlockGrad, node: Node) -> bool:
    """Whether ``node`` (a declared op) writes in place into an array input a value the
    differentiated path computes."""
    op = lookup(node.kind)
    if op is None or node.kind in NON_DIFFERENTIABLE:
        return False
    # an array written (a write into an object's field or a list has a refusal of its own)
    written = [k for k, v in enumerate(node.inputs)
               if WRITES in op.effects_on(k) and isinstance(v.type, TensorType)]
    return bool(written) and any(ctx.is_active(v) for k, v in enumerate(node.inputs)
                                 if k not in written)


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
                is_optional_tensor(v.type):
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
        if g is not None and not (isinstance(v.type, TensorType) or is_optional_tensor(v.type)):
            raise IRError(f"cannot differentiate an `if` that assigns {kind_of(v.type)} used "
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
        out = bif.add_output(covering([r.type for r in results], ct_type(u.type)))
        ctx.add_ct(u, out)


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
        inside = [use for use in u.uses if use.node.is_inside(node)]
        if len(inside) != 1:
            continue
        n = inside[0].node
        if n.kind != "tensor::select" or n.owner is not body or inside[0].index != 0:
            continue
        if n.inputs[2] is not counter or not n.inputs[1].is_constant:
            continue
        axis = int(n.inputs[1].constant)
        if axis_size(u, axis) == trips.constant:
            found[u] = axis
    return found


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
            raise IRError(f"cannot differentiate a loop that reassigns {kind_of(params[j].type)} "
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
        p.type = covering([v0.type, p.type, v.type], p.type)
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
    return any(use.node.is_inside(loop) for use in lst.uses)


STRUCTURE_VJPS = {
    "prim::Constant": lambda ctx, node: None,
    "prim::If": _backprop_if,
    "prim::Loop": _backprop_loop,
} | TUPLE_VJPS | LIST_VJPS | JOIN_VJPS | DICT_VJPS
"""Nodes whose backward is about structure (tuples, lists, control flow), not arithmetic."""

__all__ = ["STRUCTURE_VJPS", "backprop_block", "backprop_node", "outer_values"]
