"""Who else holds an array: the analysis ``inplace_writes`` decides a store in place by.

A write may store into its old array when that array is this graph's own (``own``: a fresh op
made it, or a loop carries one, or an If's branches each give one) and nothing reads its old
contents after the store (``readers_done``), nor a later step of a loop around the write
(``in_loop_around``). ``own`` of a loop parameter gives the loop a copy of a first value that is
not its own (one copy a call instead of one a step).
"""

from __future__ import annotations

from ir.core import PARAM, Block, Node, Value
from ir.ops.elementwise import IN_PLACE_ATTR
from ir.ops.index_put import IN_PLACE
from ir.registry import lookup
from ir.types import TensorType

_HOLDERS = frozenset({"prim::ListConstruct", "prim::TupleConstruct"})
"""Containers made of a value: done with it when their own readers are (a list concatenated)."""


def fresh_op(node: Node) -> bool:
    """A tensor op whose outputs are new arrays (not views, not constants, not containers)."""
    op = lookup(node.kind)
    if node.attrs.get(IN_PLACE_ATTR):
        return False  # its result is its first operand's array
    if node.kind.startswith("tensor::"):
        return op is not None and not op.is_view
    return node.kind == "prim::FusionGroup"


def readers_done(value: Value, write: Node, skip: Node | tuple[Node, ...] | None = None
                  ) -> bool:
    """Whether every reader of ``value`` but ``skip`` (a node or nodes) is done before ``write``
    stores: it runs before the write in a block holding both (or inside a node there before it),
    or in another branch of an If the write is in; and views of ``value`` are likewise done by
    then."""
    skipped = skip if isinstance(skip, tuple) else (skip,)
    for use in value.uses:
        reader = use.node
        if reader in skipped:
            continue
        placed = _placement(reader, write)
        if placed is None:
            return False
        if placed == "other branch":
            continue
        if fresh_op(reader) or reads_value_only(use):  # new arrays (a fusion kernel
            continue  # allocates its outputs too), or the value a write copies in
        if (reader.kind.startswith("prim::") and reader.kind not in _HOLDERS) or reader.blocks \
                or placed != "same block":
            return False  # a view read in a nested block, a structure op

        if not all(readers_done(out, write) for out in reader.outputs):
            return False
    return True


def _placement(reader: Node, write: Node) -> str | None:
    """Where ``reader`` runs relative to ``write``: "same block" or "nested" (before it, in the
    innermost block holding both), "other branch" (another block of an If holding the write),
    or None (after it, or not known to be before)."""
    at: Node = write
    while at.owner is not None:
        block = at.owner
        mine = reader.ancestor_in(block)
        if mine is not None:
            if mine is at:
                return "other branch" if at.kind == "prim::If" and at is not write else None
            if not mine.is_before(at):
                return None
            return "same block" if mine is reader else "nested"
        if block.owner is None:
            return None
        at = block.owner
    return None


def in_loop_around(write: Node, value: Value) -> bool:
    """Whether ``write`` runs in the body of a loop that ``value`` is defined outside of: a
    store into ``value`` there would change it for the next step, which reads it as it was
    before the loop (``[(w * 0.5) * k for k in range(3)]`` once ``w * 0.5`` is hoisted)."""
    home = value.node.owner
    block = write.owner
    while block is not None and block is not home:
        owner = block.owner
        if owner is None:
            return False
        if owner.kind == "prim::Loop":
            return True
        block = owner.owner
    return False


def own(value: Value, seen: set[int]) -> bool:
    """Whether ``value`` is an array this graph made and nothing else holds (see the module
    docstring); a loop parameter under test counts as its own."""
    node = value.node
    if id(value) in seen:
        return True
    if node.kind in IN_PLACE:
        return True  # a pure write: a new array
    if node.kind in IN_PLACE.values() or node.attrs.get(IN_PLACE_ATTR):
        return own(node.inputs[0], seen)
    if node.kind == PARAM:
        return _own_loop_param(value, seen)
    if node.kind == "prim::Loop":  # the array its parameter holds at the end
        return _own_loop_param(node.blocks[0].params[value.index + 1], seen)
    if node.kind == "prim::If":  # each branch's result is its own and reaches only the If's
        k = value.index
        return all(_passed_through(b.returns[k], node, k, seen)
                   if b.returns[k].node.ancestor_in(b) is None
                   else _stays_in(b.returns[k], b, k) and own(b.returns[k], seen)
                   for b in node.blocks)
    return fresh_op(node) and isinstance(value.type, TensorType)


def _passed_through(value: Value, branch: Node, k: int, seen: set[int]) -> bool:
    """Whether ``value``, from before If ``branch``, which a block of it returns as result
    ``k`` (``if t > 0: dC[t - 1] += g`` has the other block return ``dC`` as it is), is this
    graph's own and reaches nothing after the If but through that result: readers before the
    If are done by then, and readers inside it keep it there (a write into it, a fresh
    array of it, the result ``k``)."""
    if not own(value, seen):
        return False
    inside = []
    for use in value.uses:
        reader = use.node
        if not reader.is_inside(branch):
            continue
        inside.append(reader)
        if fresh_op(reader) or reads_value_only(use):
            continue
        block = reader.owner
        if block not in branch.blocks:
            return False
        if reader is block.return_node:
            if use.index != k:
                return False
            continue
        if reader.kind.startswith("prim::") or reader.blocks \
                or not all(_stays_in(out, block, k) for out in reader.outputs):
            return False
    return readers_done(value, branch, skip=tuple(inside))


def reads_value_only(use: object) -> bool:
    """Whether ``use`` is the value an in-place write stores (copied into its array, not
    aliased by its result)."""
    return use.node.kind in IN_PLACE.values() and use.index == 1  # type: ignore[attr-defined]


def _own_loop_param(param: Value, seen: set[int]) -> bool:
    block = param.node.owner
    loop = block.owner if block is not None else None
    if loop is None or loop.kind != "prim::Loop" or param.index < 1:
        return False
    k = param.index
    nxt = block.returns[k]
    if not (_stays_in(nxt, block, k) and own(nxt, seen | {id(param)})):
        return False
    initial = loop.inputs[k + 1]
    if initial.node.kind == "prim::Uninitialized":
        return True  # (nothing before the loop: no step reads it, and an empty loop's is unread)
    if not (own(initial, seen) and not in_loop_around(loop, initial)
            and readers_done(initial, loop, skip=loop)):
        _copy_first(loop, k + 1)
    return True


def _stays_in(value: Value, block: Block, k: int) -> bool:
    """Whether ``value`` (or a view of it) reaches nothing but ``block``'s result ``k`` and
    readers inside ``block``: at the next step only the loop parameter holds it."""
    for use in value.uses:
        reader = use.node
        if reader is block.return_node:
            if use.index != k:
                return False
            continue
        if reader.ancestor_in(block) is None:
            return False
        if fresh_op(reader) or reads_value_only(use):  # new arrays (a fusion kernel
            continue  # allocates its outputs too), or the value a write copies in
        if reader.kind.startswith("prim::") or reader.blocks:
            return False  # (the result of a block nested in ``block``: it escapes there)
        if not all(_stays_in(out, block, k) for out in reader.outputs):
            return False
    return True


def _copy_first(loop: Node, index: int) -> None:
    """Give the loop a copy of its first value at ``index``: it is not the loop's own."""
    graph = loop.graph
    with graph.inserting_before(loop):
        copy = graph.insert_typed("tensor::copy", [loop.inputs[index]]).output
    loop.set_input(index, copy)
