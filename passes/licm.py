"""Loop-invariant code motion: compute before a loop what every iteration computes alike.

A PURE node in a ``prim::Loop`` body whose inputs are all defined outside the loop computes the
same value on every iteration, so it moves to right before the loop (``tensor::transpose(%w_hh)``
of an RNN step, the concatenation of loop-invariant weights made by batch-matmul). Loops are
visited outermost first, so a node rises out of every loop it does not depend on.

What never moves: SIDE_EFFECTS ops, trait-less ops (reads of mutable state, random ops), nodes
with blocks, and readers of a list that something may mutate. A FRESH list construction moves
only when nothing ever writes to the list (its every user is PURE), so sharing one list between
iterations is unobservable. Nor does a value the caller may receive (``ir.alias``): each
iteration of ``out.append(x * 2.0)`` appends a new array, and hoisting would append one array N
times.

A loop may run zero times, and a node in an ``if`` inside the body may never run. Moving a node
that can raise to where it always runs would raise where the program did not, so such a node
moves only when it runs on the first iteration of a loop that surely runs (a for-loop with a
constant trip count > 0), before any side effect of the body. ``cannot_raise`` decides, by op
family (the registry's traits) and the static shapes shape propagation proved.
"""

from __future__ import annotations

from collections.abc import Callable

from ir.alias import StorageClasses
from ir.core import Block, Graph, Node, Value
from ir.kinds import LOOP
from ir.registry import (
    ALIASES,
    ALWAYS_VIEW,
    ELEMENTWISE,
    FRESH,
    NOT_CONSTANT,
    WRITES,
    const,
    lookup,
)
from ir.types import FLOAT_DTYPES, TensorType, Type, holds_mutable
from passes.item_types import ITEM_TYPES, constant_key

NAME = "licm"
SETTLES = True
"""a second run on the graph this pass leaves changes nothing (``run_pipeline``)."""


# -- loop facts shared by the loop passes --------------------------------------------------------
def is_for_loop(loop: Node) -> bool:
    """A counted loop: it starts with a constant True condition and its body keeps it True."""
    body = loop.blocks[0]
    return const(loop, 1) is True and body.returns[0].is_constant and (
        body.returns[0].constant is True)


def constant_trip_count(loop: Node) -> int | None:
    """The trip count of a for-loop when it is a compile-time int, else None."""
    trips = const(loop, 0)
    if not is_for_loop(loop) or isinstance(trips, bool) or not isinstance(trips, int):
        return None
    return max(trips, 0)


def surely_runs(loop: Node) -> bool:
    """Does the body run at least once whatever the inputs?"""
    trips = constant_trip_count(loop)
    return trips is not None and trips > 0


# -- what may raise ------------------------------------------------------------------------------
def _static_tensor(t: Type) -> bool:
    return isinstance(t, TensorType) and t.shape is not None and None not in t.shape


def _float_tensor(t: Type) -> bool:
    return _static_tensor(t) and isinstance(t, TensorType) and t.dtype in FLOAT_DTYPES


def _all_static(node: Node) -> bool:
    """Every tensor input and output has a fully known shape (so shape checks passed statically)."""
    values = list(node.inputs) + list(node.outputs)
    tensors = [v.type for v in values if isinstance(v.type, TensorType)]
    return bool(tensors) and all(_static_tensor(t) for t in tensors)


def _constant_args(node: Node, first: int) -> bool:
    return all(const(node, i) is not NOT_CONSTANT for i in range(first, len(node.inputs)))


SHAPE_CHECKED_RULES: dict[str, Callable[[Node], bool]] = {
    # A failure of these depends only on shapes and constant arguments, which shape propagation
    # already checked when every shape is known (a ShapeError at compile time otherwise).
    "tensor::transpose": lambda n: _all_static(n) and _constant_args(n, 1),
    "tensor::reshape": lambda n: _all_static(n) and _constant_args(n, 1),
    "tensor::expand_dims": lambda n: _all_static(n) and _constant_args(n, 1),
    "tensor::squeeze": lambda n: _all_static(n) and _constant_args(n, 1),
    "tensor::matmul": _all_static,
    "tensor::linear": _all_static,
    "tensor::cat": lambda n: _all_static(n) and _constant_args(n, 1),
    "tensor::stack": lambda n: _all_static(n) and _constant_args(n, 1),
    "tensor::chunk": lambda n: _all_static(n) and _constant_args(n, 1),
    "tensor::split": lambda n: _all_static(n) and _constant_args(n, 1),
    "tensor::size": lambda n: _all_static(n) and _constant_args(n, 1),
    "tensor::ndim": lambda n: True,
    "prim::Constant": lambda n: True,
    "prim::TupleConstruct": lambda n: True,
    # a constant index into a tuple of known length: the type rule checked it at compile time
    "prim::TupleIndex": lambda n: True,
    "prim::TupleUnpack": lambda n: True,
    "prim::ListConstruct": lambda n: True,
}
"""Ops that cannot raise on inputs of their (static) types; the rule says when that holds.
``tensor::select`` is absent on purpose: its index is a value, out of range at run time."""


def cannot_raise(node: Node) -> bool:
    """True when running ``node`` on inputs of its static types can never raise.

    Elementwise ops on floating tensors of known shapes qualify: broadcasting was checked at compile
    time and float arithmetic only warns. Integer elementwise ops do not (``1 // 0`` raises,
    integers to negative powers raise). A read of an item the specialization knows
    (``ITEM_TYPES``: its list length and dict keys are part of the call signature) qualifies.
    """
    if ITEM_TYPES in node.attrs and constant_key(node):
        return True
    rule = SHAPE_CHECKED_RULES.get(node.kind)
    if rule is not None:
        return rule(node)
    op = lookup(node.kind)
    if op is None or ELEMENTWISE not in op.traits:
        return False
    return all(_float_tensor(v.type) for v in node.outputs) and _all_static(node)


# -- what may move ------------------------------------------------------------------------------
def never_written(value: Value) -> bool:
    """A fresh container whose every user is PURE and, by the registry's effects, neither writes
    it nor keeps it (in an output or another container): nobody can mutate it."""
    op = lookup(value.node.kind)
    if op is None or FRESH not in op.traits:
        return False
    for use in value.uses:
        user_op = lookup(use.node.kind)
        if user_op is None or not user_op.is_pure or use.node.blocks:
            return False
        if user_op.effects_on(use.index) & {WRITES, ALIASES}:
            return False
    return True


def movable(node: Node) -> bool:
    """May ``node`` be computed earlier than where it is, as far as its kind and inputs go?"""
    op = lookup(node.kind)
    if op is None or node.blocks:
        return False
    if ITEM_TYPES in node.attrs:  # a read of a container argument the graph never changes
        return True
    if FRESH in op.traits:
        return len(node.outputs) == 1 and never_written(node.output)
    if not op.is_pure:
        return False
    return all(not holds_mutable(v.type) or never_written(v) for v in node.inputs)


def invariant_in(node: Node, loop: Node) -> bool:
    """Are all inputs of ``node`` defined outside ``loop``?"""
    return not any(v.defined_inside(loop) for v in node.inputs)


# -- driver ------------------------------------------------------------------------------------
def hoist_from_block(block: Block, loop: Node, runs_first: bool,
                     classes: StorageClasses) -> bool:
    """Move the invariant nodes of ``block`` (inside ``loop``) before ``loop``; recurse inward.

    ``runs_first`` is True while the nodes of ``block`` surely run on a first iteration that
    surely happens and no side effect of the body has run yet: only then may an op that can
    raise move. ``classes`` says which values the caller may receive: those stay.
    """
    changed = False
    for node in block:
        if movable(node) and invariant_in(node, loop) and not _new_escaping(node, classes) and (
                runs_first or cannot_raise(node)):
            node.move_before(loop)
            changed = True
            continue
        if node.blocks or not movable(node) or not cannot_raise(node):
            runs_first = False  # after a side effect, or a node that stays and may raise first
        for inner in node.blocks:
            changed |= hoist_from_block(inner, loop, False, classes)
    return changed


def _new_escaping(node: Node, classes: StorageClasses) -> bool:
    """Does ``node`` make a value the caller may receive? A read of an item of an argument
    (``ITEM_TYPES``) makes nothing new: hoisted, it reads the same array; nor does a view (of
    a loop-invariant array: the same memory, whichever step makes it)."""
    op = lookup(node.kind)
    return (ITEM_TYPES not in node.attrs and not (op is not None and ALWAYS_VIEW in op.traits)
            and classes.any_escapes(node))


def licm_block(block: Block, classes: StorageClasses) -> bool:
    """Hoist out of every loop in ``block``, outermost loops first."""
    changed = False
    for node in block:
        if node.kind == LOOP:
            changed |= hoist_from_block(node.blocks[0], node, surely_runs(node), classes)
        for inner in node.blocks:
            changed |= licm_block(inner, classes)
    return changed


def run(graph: Graph) -> bool:
    """Loop-invariant code motion over the whole graph (not entering subgraphs)."""
    return licm_block(graph.block, StorageClasses(graph))
