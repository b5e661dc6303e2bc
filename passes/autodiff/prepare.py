"""Rewrites that make a specialized forward graph ready for differentiation, and activity analysis.

- ``lower_dropout``: ``dropout(a, p, t)`` becomes ``a * dropout_mask(a, p, t)``, so the mask is an
  ordinary value the multiplication's gradient saves (the backward never redraws it).
- ``hoist_loop_invariants``: pure nodes in a loop body that read only values from outside the loop
  move before it (``w.T`` in a cell), so the backward neither saves them per iteration nor
  transposes every step.
- ``refine_stacked_lists``: a list filled by appends in counted loops of constant trip count has a
  known length, so ``stack``/``cat`` of it gets a known shape (shape propagation alone cannot know
  the list's length). The backward needs ranks and shapes to build its ops.
- ``active_values``: which values carry a derivative (float tensors reached from the inputs).
"""

from __future__ import annotations

from collections.abc import Mapping

from ir.core import Block, Graph, Node, Value
from ir.registry import FRESH, lookup
from ir.types import FLOAT_DTYPES, DictType, ListType, OptionalType, TensorType, TupleType, Type
from passes.autodiff.lists import simplify_unbind_reads, tuple_list_inputs, unroll_indexed_loops

LOOP = "prim::Loop"
IF = "prim::If"


def is_differentiable_type(t: Type) -> bool:
    """Float tensors (or of unknown dtype), and tuples/lists/dicts holding them."""
    if isinstance(t, TensorType):
        return t.dtype is None or t.dtype in FLOAT_DTYPES
    if isinstance(t, TupleType):
        return any(is_differentiable_type(e) for e in t.elements)
    if isinstance(t, ListType):
        return is_differentiable_type(t.element)
    if isinstance(t, DictType):
        return is_differentiable_type(t.value)
    if isinstance(t, OptionalType):  # its cotangent is the element's (none flows when None)
        return is_differentiable_type(t.element)
    return False


# -- dropout ----------------------------------------------------------------------------------
def lower_dropout(graph: Graph) -> None:
    """Replace every ``tensor::dropout`` by ``a * tensor::dropout_mask(a, p, training)``."""
    for node in list(graph.walk()):
        if node.kind != "tensor::dropout":
            continue
        with graph.inserting_before(node):
            mask = graph.insert("tensor::dropout_mask", node.inputs, [node.output.type],
                                source=node.source, names=["mask"]).output
            out = graph.insert("tensor::mul", [node.inputs[0], mask], [node.output.type],
                               source=node.source, names=[node.output.name]).output
        node.output.replace_all_uses_with(out)
        node.erase()


# -- loop-invariant code motion ------------------------------------------------------------------
def hoist_loop_invariants(graph: Graph) -> None:
    """Move pure, block-free loop-body nodes whose inputs all come from outside the loop to just
    before the loop (innermost loops first, so a node can climb several levels)."""
    for node in reversed(list(graph.walk())):
        if node.kind == LOOP:
            _hoist_from(node)


def _hoist_from(loop: Node) -> None:
    body = loop.blocks[0]
    inside = _defined_in(loop)
    for node in body.nodes:
        op = lookup(node.kind)
        if node.blocks or op is None or not op.is_pure or FRESH in op.traits:
            continue
        if any(v in inside for v in node.inputs):
            continue
        node.move_before(loop)
        for v in node.outputs:
            inside.discard(v)


def _defined_in(node: Node) -> set[Value]:
    values: set[Value] = set()
    for b in node.blocks:
        values.update(b.params)
        for n in b.walk():
            values.update(n.outputs)
            for nb in n.blocks:
                values.update(nb.params)
    return values


# -- list lengths -----------------------------------------------------------------------------
def list_length(lst: Value) -> int | None:
    """The final length of a list built by ``ListConstruct`` and then only appended to (directly
    in loops of constant trip count) and read, or None when it cannot be known."""
    producer = lst.node
    if producer.kind != "prim::ListConstruct":
        return None
    count = len(producer.inputs)
    for use in lst.uses:
        user = use.node
        if user.kind not in ("prim::ListAppend", "prim::ListExtend") or use.index != 0:
            continue
        added = _items_added(user)
        trips = _constant_trips(user, producer.owner)
        if added is None or trips is None:
            return None
        count += added * trips
    return count


def _items_added(node: Node) -> int | None:
    if node.kind == "prim::ListAppend":
        return 1
    other = node.inputs[1].node
    return len(other.inputs) if other.kind == "prim::ListConstruct" else None


def _constant_trips(node: Node, home: Block | None) -> int | None:
    """How often ``node`` runs per run of ``home``: the product of the constant trip counts of the
    for-loops between them; None under an If or a while-loop."""
    trips = 1
    block = node.owner
    while block is not None and block is not home:
        owner = block.owner
        if owner is None or owner.kind != LOOP or not _is_for(owner):
            return None
        n = owner.inputs[0]
        if not n.is_constant:
            return None
        trips *= max(int(n.constant), 0)
        block = owner.owner
    return trips if block is home else None


def _is_for(loop: Node) -> bool:
    cond, body_cond = loop.inputs[1], loop.blocks[0].returns[0]
    return all(v.is_constant and v.constant is True for v in (cond, body_cond))


def refine_stacked_lists(graph: Graph, lists: Mapping[Value, tuple[Type, ...]] | None = None
                         ) -> bool:
    """Give ``stack`` of a list of known length its full shape, and re-type what follows.

    A refined stack can make a later list's length and items known (the next layer of a stack
    of RNN layers runs ``size(output, 0)`` steps and appends values computed from it), so
    refinement, propagation and constant folding (``size`` of a now-known shape) alternate until
    nothing changes: one round per layer of such dependencies. ``lists`` (list arguments only
    read, see ``passes.autodiff.lists``) take part: loops indexing them by their counter are
    unrolled and, once every read is at a constant index, they become tuples of known items.
    Returns True when lists were rewritten or loops unrolled (the loop rewrites the pipeline
    made before did not see this form).
    """
    from passes import constant_prop
    from passes.shape_prop import propagate_node
    lists = lists or {}
    refined: dict[Node, Type] = {}
    restructured = False
    rounds = 0
    # each round settles at least one more stack, list or loop, and unrolling adds loops: the
    # bound is recounted (it only guards against rewrites undoing each other)
    while rounds <= 2 * sum(1 for n in graph.walk() if n.kind in ("tensor::stack", LOOP)) + 2:
        rounds += 1
        # a size of a shape only just propagated (a loop over unbind of a reshaped array) is
        # folded first: a loop's trip count must be a constant for its lists to have a length
        changed = constant_prop.run(graph)
        rewritten = simplify_unbind_reads(graph)
        rewritten |= unroll_indexed_loops(lists)
        rewritten |= tuple_list_inputs(lists)
        restructured |= rewritten
        found = _stack_refinements(graph)
        if found == refined and not (changed or rewritten):
            break
        refined = found
        _propagate(graph.block, refined, propagate_node)
    return restructured


def _stack_refinements(graph: Graph) -> dict[Node, Type]:
    """The full type of every ``stack`` of a list of known length, from the current types."""
    refined: dict[Node, Type] = {}
    for node in graph.walk():
        if node.kind != "tensor::stack" or not isinstance(node.output.type, TensorType):
            continue
        count = list_length(node.inputs[0])
        element = node.inputs[0].type
        if count is None or not isinstance(element, ListType):
            continue
        item = _appended_type(node.inputs[0]) or element.element
        axis = node.inputs[1]
        if not isinstance(item, TensorType) or item.shape is None or not axis.is_constant:
            continue
        k = int(axis.constant) % (len(item.shape) + 1)
        shape = item.shape[:k] + (count,) + item.shape[k:]
        refined[node] = TensorType(item.dtype, shape, item.device)
    return refined


def _appended_type(lst: Value) -> Type | None:
    """The one type of every item put into ``lst``, when they all agree."""
    items = list(lst.node.inputs)
    for use in lst.uses:
        if use.node.kind == "prim::ListAppend":
            items.append(use.node.inputs[1])
        elif use.node.kind == "prim::ListExtend":
            items.extend(use.node.inputs[1].node.inputs)
    types = {v.type for v in items}
    return types.pop() if len(types) == 1 else None


def _propagate(block: Block, refined: dict[Node, Type], propagate_node: object) -> None:
    for node in block:
        if node in refined:
            node.output.type = refined[node]
            continue
        propagate_node(node)  # type: ignore[operator]


# -- activity -----------------------------------------------------------------------------------
def active_values(graph: Graph, non_differentiable: frozenset[str] | set[str]) -> set[Value]:
    """Values that depend differentiably on a graph input and can hold a derivative."""
    # an input still typed Optional was given None (a value would have specialized the type)
    active = {v for v in graph.inputs
              if is_differentiable_type(v.type) and not isinstance(v.type, OptionalType)}
    _visit_block(graph.block, active, non_differentiable)
    return active


def _visit_block(block: Block, active: set[Value], nd: frozenset[str] | set[str]) -> None:
    for node in block:
        _visit_node(node, active, nd)


def _mark(values: list[Value] | tuple[Value, ...], active: set[Value]) -> None:
    active.update(v for v in values if is_differentiable_type(v.type))


def _visit_node(node: Node, active: set[Value], nd: frozenset[str] | set[str]) -> None:
    if node.kind == LOOP:
        return _visit_loop(node, active, nd)
    if node.kind == IF:
        for b in node.blocks:
            _visit_block(b, active, nd)
        for k, out in enumerate(node.outputs):
            if any(b.returns[k] in active for b in node.blocks):
                _mark([out], active)
        return
    if node.kind in nd:
        return
    if node.kind in ("prim::ListAppend", "prim::ListExtend", "prim::ListSetItem",
                     "prim::ListInsert", "prim::DictSetItem"):
        if node.inputs[-1] in active:
            _mark([node.inputs[0]], active)
        return
    if any(v in active for v in node.inputs):
        _mark(node.outputs, active)


def _visit_loop(node: Node, active: set[Value], nd: frozenset[str] | set[str]) -> None:
    body = node.blocks[0]
    params, rets = body.params[1:], body.returns[1:]
    while True:
        before = len(active)
        for p, init, ret in zip(params, node.inputs[2:], rets):
            if init in active or ret in active:
                _mark([p], active)
        _visit_block(body, active, nd)
        if len(active) == before:
            break
    for out, p, ret in zip(node.outputs, params, rets):
        if p in active or ret in active:
            _mark([out], active)
