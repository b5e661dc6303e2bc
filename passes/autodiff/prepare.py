"""Rewrites that make a specialized forward graph ready for differentiation, and activity analysis.

- ``lower_dropout``: ``dropout(a, p, t)`` becomes ``a * dropout_mask(a, p, t)``, so the mask is an
  ordinary value the multiplication's gradient saves (the backward never redraws it).
- ``hoist_loop_invariants``: pure nodes in a loop body that read only values from outside the loop
  move before it (``w.T`` in a cell), so the backward neither saves them per iteration nor
  transposes every step.
- ``refine_stacked_lists``: a list filled by appends in counted loops of constant trip count has a
  known length where it is stacked, so ``stack`` of it gets a known shape (shape propagation alone
  cannot know the list's length), and the items read back from a list appended to in a loop get
  the type all its items share. The backward needs ranks and shapes to build its ops.
- ``active_values``: which values carry a derivative (float tensors reached from the inputs).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from ir.core import Block, Graph, Node, Value
from ir.registry import FRESH, ShapeError, lookup
from ir.types import (
    FLOAT_DTYPES,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
    unify_all,
)
from passes.autodiff.lists import (
    length_after,
    simplify_unbind_reads,
    tuple_list_inputs,
    unroll_indexed_loops,
)
from passes.licm import movable

LOOP = "prim::Loop"
IF = "prim::If"
LIST = "prim::ListConstruct"
JOINS = ("tensor::stack", "tensor::cat")


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
    if isinstance(t, ClassType) and t.named_tuple:  # differentiated as the tuple of its fields
        return any(is_differentiable_type(ft) for _, ft in t.fields)
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
    inside = loop.values_defined_inside()
    for node in body.nodes:
        op = lookup(node.kind)
        if node.blocks or op is None or not op.is_pure or FRESH in op.traits:
            continue
        # a read of a list the loop appends to (``stack(outs)``) is not invariant
        if not movable(node) or any(v in inside for v in node.inputs):
            continue
        node.move_before(loop)
        for v in node.outputs:
            inside.discard(v)


def refine_stacked_lists(graph: Graph, lists: Mapping[Value, tuple[Type, ...]] | None = None
                         ) -> bool:
    """Give ``stack``/``cat`` of a list of known length its full shape, a list whose items can
    all share one known type that type (``_list_refinements``), and re-type what follows.

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
    lists = lists or {}
    restructured = False
    rejected: set[Node] = set()
    while True:
        refined: dict[Node, Type] = {}
        wrong: list[Node] = []
        rounds = 0
        # each round settles at least one more stack, list or loop, and unrolling adds loops: the
        # bound is recounted (it only guards against rewrites undoing each other)
        while rounds <= 2 * sum(1 for n in graph.walk() if n.kind in (*JOINS, LOOP)) + 2:
            rounds += 1
            # a size of a shape only just propagated (a loop over unbind of a reshaped array) is
            # folded first: a loop's trip count must be a constant for its lists to have a length.
            # Not while a list's item type is still an assumption: a size folded from it would
            # stay when the assumption is dropped
            changed = not _unconfirmed(refined) and constant_prop.run(graph)
            rewritten = simplify_unbind_reads(graph)
            rewritten |= unroll_indexed_loops(lists)
            rewritten |= tuple_list_inputs(lists)
            restructured |= rewritten
            found = _stack_refinements(graph)
            found.update(_list_refinements(graph, refined, rejected))
            if found == refined and not (changed or rewritten):
                break
            refined = found
            try:
                _propagate(graph.block, refined)
            except ShapeError:  # an assumed item type that cannot be right
                wrong = [node for node in refined if node.kind == LIST]
                if not wrong:
                    raise
                break
        wrong = wrong or _unconfirmed(refined)
        if not wrong:
            return restructured
        # an item type assumed for a list did not come true: start again without it
        rejected.update(wrong)
        _propagate(graph.block, {})


def _unconfirmed(refined: Mapping[Node, Type]) -> list[Node]:
    """The lists typed by an assumption that propagation has not (yet) made true."""
    return [node for node, t in refined.items() if node.kind == LIST
            and _stored_types(node.output) != {t.element}]  # type: ignore[attr-defined]


def _list_refinements(graph: Graph, before: Mapping[Node, Type], rejected: set[Node]
                      ) -> dict[Node, Type]:
    """Lists made in the function whose items may all share one fully known type: the list is
    typed with it, so what reads its items (``outs[-1]`` feeding the next step's append) is
    typed too. Shape propagation alone cannot see this: it types a list before the loop that
    appends to it, from items not yet typed. The type is an assumption until propagation with it
    gives every item put in the list that type (items of other such lists may need a round or
    two); one that did not once nothing changes any more is dropped (``rejected``) by the
    caller, which starts again without it."""
    found: dict[Node, Type] = {}
    for node in graph.walk():
        if node.kind != LIST or node in rejected or not isinstance(node.output.type, ListType):
            continue
        stored = _stored_types(node.output)
        known = {t for t in stored if _fully_known(t)} if stored is not None else set()
        if len(known) != 1:
            continue
        (item,) = known
        if stored == {item} and node.output.type == ListType(item) and node not in before:
            continue  # shape propagation typed it already
        found[node] = ListType(item)
    return found


def _stored_types(lst: Value, follow_extends: bool = False) -> set[Type] | None:
    """The types of every item put into ``lst``, a list literal: made with, appended, stored,
    inserted or extended by. An extension adds the other list's item type, or with
    ``follow_extends`` the types put into that list (itself a literal), followed the same way.
    None when they cannot be known: ``lst`` is not a literal, or an extension's items are not
    known (a list of unknown items; followed: not a literal, with no items, or ``lst`` itself)."""
    if lst.node.kind != LIST:
        return None
    types = {v.type for v in lst.node.inputs}
    for use in lst.uses:
        user = use.node
        if use.index != 0:
            continue
        if user.kind in ("prim::ListAppend", "prim::ListSetItem", "prim::ListInsert"):
            types.add(user.inputs[-1].type)
        elif user.kind == "prim::ListExtend":
            added = _extended_types(lst, user.inputs[1], follow_extends)
            if not added:
                return None
            types |= added
    return types


def _extended_types(lst: Value, other: Value, follow: bool) -> set[Type] | None:
    """The item types ``lst.extend(other)`` adds (see ``_stored_types``)."""
    if follow:
        return _stored_types(other, follow_extends=True) if other is not lst else None
    return {other.type.element} if isinstance(other.type, ListType) else None


def _fully_known(t: Type) -> bool:
    return (isinstance(t, TensorType) and t.dtype is not None and t.shape is not None
            and None not in t.shape)


def _stack_refinements(graph: Graph) -> dict[Node, Type]:
    """The type of every ``stack`` (or ``cat``) of a list of items of one known shape, from the
    current types: the stacked axis is the list's length where the stack reads it when that is
    known, else of unknown size (the rank is known all the same)."""
    refined: dict[Node, Type] = {}
    for node in graph.walk():
        if node.kind not in JOINS or not isinstance(node.output.type, TensorType):
            continue
        # the list's length where the stack reads it: appends after it are not stacked
        lst = node.inputs[0]
        count = length_after(lst, node) if lst.node.owner is node.owner else None
        element = node.inputs[0].type
        if not isinstance(element, ListType):
            continue
        # the item types put in the list, joined: the list's own item type may still be an
        # assumption of ``_list_refinements`` that the caller has since dropped
        item = _stored_join(lst) or element.element
        axis = node.inputs[1]
        if (not isinstance(item, TensorType) or item.shape is None or item.dtype is None
                or not axis.is_constant):
            continue
        if node.kind == "tensor::cat":
            if not item.shape:
                continue
            k = int(axis.constant) % len(item.shape)
            size = item.shape[k]
            joined = count * size if count is not None and size is not None else None
            shape = item.shape[:k] + (joined,) + item.shape[k + 1:]
        else:
            k = int(axis.constant) % (len(item.shape) + 1)
            shape = item.shape[:k] + (count,) + item.shape[k:]
        refined[node] = TensorType(item.dtype, shape, item.device)
    return refined


def _stored_join(lst: Value) -> Type | None:
    """The join of the types of every item put into ``lst`` (followed through the lists that
    extend it), when they are known."""
    types = _stored_types(lst, follow_extends=True)
    return unify_all(types) if types else None


def _propagate(block: Block, refined: dict[Node, Type]) -> None:
    """Re-type ``block`` with the ``refined`` nodes' types held, in nested blocks too."""
    from passes.shape_prop import fixed_types, propagate_block
    with fixed_types(refined):
        propagate_block(block)


# -- activity -----------------------------------------------------------------------------------
def active_values(graph: Graph, non_differentiable: frozenset[str] | set[str],
                  wrt: Collection[int] | None = None) -> set[Value]:
    """Values that depend differentiably on a differentiated graph input (those at positions
    ``wrt``; None: every one) and can hold a derivative."""
    # an input still typed Optional was given None (a value would have specialized the type)
    active = {v for k, v in enumerate(graph.inputs)
              if (wrt is None or k in wrt) and is_differentiable_type(v.type)
              and not isinstance(v.type, OptionalType)}
    while True:
        # a container is one value: an item read before an active one is stored into it is
        # active too (as the soundness check sees it), so walk until nothing changes
        before = len(active)
        _visit_block(graph.block, active, non_differentiable)
        if len(active) == before:
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
