"""The arrays generated code makes and reads once, handled as Python's expressions handle their
temporaries: written into the statement of their only reader when that is the next op, or comes
after reads of containers and pure ops only (``inlinable``: numpy then computes into a temporary
nothing else holds, numpy's temporary
elision for large arrays, where a named one would be a new array), and deleted after their
last use (``released_after``, ``release_name``: numpy's allocator then hands their memory to
the next array of their size). Deep-learning-from-scratch's Adam over a dict of 512 x 512
weights, whose shapes are unknown when compiling so nothing fuses, ran at 0.30x plain numpy
with every temporary kept alive, 0.73x with them handled so."""

from __future__ import annotations

from typing import TYPE_CHECKING

import ir
from ir.core import PARAM, Block, Node, Value
from ir.ops.elementwise import IN_PLACE_ATTR
from ir.types import TensorType

if TYPE_CHECKING:
    from script.runtime.codegen import FunctionWriter

KEPT_KINDS = frozenset({PARAM, "prim::Constant", "prim::Uninitialized"})
"""Nodes whose arrays are never deleted: a block's parameters (a loop's carried names, read
after it), constants (globals or literals) and placeholders."""


def released_after(block: Block) -> dict[Node, list[Value]]:
    """Per node of ``block``, the arrays made in the block whose last use it is (a use in a
    nested block counts at the node holding it); those the block returns are kept."""
    kept = set(block.returns)
    last: dict[Value, Node] = {}
    for node in block:
        for v in _inputs_within(node):
            if v.node.owner is block:
                last[v] = node
    found: dict[Node, list[Value]] = {}
    for v, node in last.items():
        if v not in kept and isinstance(v.type, TensorType) and v.node.kind not in KEPT_KINDS:
            found.setdefault(node, []).append(v)
    return found


def _inputs_within(node: Node) -> list[Value]:
    """The values ``node`` reads, its nested blocks' reads and returns included."""
    found = list(node.inputs)
    for block in node.blocks:
        found.extend(block.returns)
        for inner in block.walk():
            found.extend(inner.inputs)
            for deeper in inner.blocks:
                found.extend(deeper.returns)
    return found


def release_name(w: FunctionWriter, value: Value) -> str | None:
    """The name to ``del`` for ``value`` after its last use; None where it has no variable of
    its own (a constant, an inlined expression, an elided node's output) or an elided reader
    may read it later (an einsum at its reduction)."""
    name = w.ns.names.get(value)
    if name is None or not name.isidentifier() or name in w.consts or name not in w.ns.used \
            or value.node in w.elided or any(u.node in w.elided for u in value.uses):
        return None
    return name


def _changes_nothing(node: Node) -> bool:
    """A declared op with no side effects that only reads its operands (the registry's effects):
    a container's item read, ``len``, a pure op. An inlined array may be computed after it."""
    op = ir.registry.lookup(node.kind)
    return op is not None and ir.registry.SIDE_EFFECTS not in op.traits and not node.blocks \
        and not node.attrs.get(IN_PLACE_ATTR) and all(
            op.effects_on(k) <= ir.registry.ONLY_READS for k in range(len(node.inputs)))


def _reads_between(node: Node, user: Node) -> bool:
    """Whether ``user`` follows ``node`` in its block with only ops that change nothing between
    (``lr * grads[i]`` between ``m * v[i]`` and the subtraction reading both)."""
    between = node.next
    for _ in range(8):
        if between is user:
            return True
        if between is None or not _changes_nothing(between):
            return False
        between = between.next
    return False


def inlinable(w: FunctionWriter, node: Node) -> bool:
    """Whether the array a pure op makes may be written into the statement of the next op, its
    only reader: not where the reader writes into it or keeps it, nor for the profiler or the
    device code."""
    if w.profiler is not None or w.device == "cuda" or len(node.outputs) != 1 or \
            node.attrs.get(IN_PLACE_ATTR) or not isinstance(node.output.type, TensorType):
        return False
    out = node.output
    if len(out.uses) != 1:
        return False
    user, index = out.uses[0].node, out.uses[0].index
    op, reader = ir.registry.lookup(node.kind), ir.registry.lookup(user.kind)
    return not (not _reads_between(node, user) or user in w.elided or user.blocks or op is None
                or op.results.startswith("(")  # (a tuple the statement unpacks: ops.chunk)
                or not op.is_pure or reader is None or not user.kind.startswith("tensor::")
                or user.attrs.get(IN_PLACE_ATTR) or user in w.einsums
                or ir.registry.effects_on_input(user, index) != ir.registry.ONLY_READS)
