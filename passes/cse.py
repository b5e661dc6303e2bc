"""Common subexpression elimination, scoped by block.

Two nodes of a PURE op with the same kind, inputs, attributes and output types compute the same
values, so the later one is replaced by the earlier one. A value computed in an outer block is
available in the blocks nested after it; a value computed inside a block is not available outside
it (nor in the sibling block of an ``if``). FRESH ops (a new list each time), SIDE_EFFECTS ops,
ops with neither trait (reads of mutable state, random ops), pure ops reading a list, dict or
object (it may have been appended to in between) and arrays something writes in place (the zeros
two reverse loops each write their slots into) are never merged.

Two computations that both reach the caller (``ir.alias``) must stay two arrays: ``return x * 2.0,
x * 2.0`` gives two in Python, and mutating one must not change the other. The second becomes a
``tensor::copy`` of the first (cheaper than computing it again); results that may be views of
the inputs (``ir.alias.may_share_input``) and containers are left as they are.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Hashable
from typing import Any

import numpy as np

from ir.alias import StorageClasses, may_share_input
from ir.core import Block, Graph, Node
from ir.registry import WRITES, lookup
from ir.types import TensorType, is_mutable

NAME = "cse"
SETTLES = True
"""a second run on the graph this pass leaves changes nothing (``run_pipeline``)."""


def attr_key(value: Any) -> Hashable:
    """A hashable key equal for attribute values that mean the same constant.

    The type is part of the key (``1``, ``1.0`` and ``True`` differ), floats compare by their
    exact text (``-0.0`` and ``0.0`` differ, ``nan`` equals ``nan``), arrays by dtype, shape and
    bytes, graphs and other objects by identity.
    """
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (float, np.floating)):
        return (type(value).__name__, repr(value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(attr_key(v) for v in value))
    if value is None or isinstance(value, (bool, int, str, np.generic)):
        return (type(value).__name__, value)
    return ("object", id(value))


def node_key(node: Node) -> Hashable | None:
    """The identity of what ``node`` computes, or None when it must not be merged."""
    op = lookup(node.kind)
    if op is None or not op.is_pure or node.blocks:
        return None
    if any(is_mutable(v.type) for v in node.inputs):
        return None  # a list/dict/object may change between the two reads (an append between)
    if any(_writes(u.node, u.index) for v in node.outputs for u in v.uses):
        return None  # an array written in place (``write_slot`` into zeros) is its own array
    inputs = [id(v) for v in node.inputs]
    if op.is_commutative and len(inputs) >= 2:
        inputs[:2] = sorted(inputs[:2])
    attrs = tuple(sorted((k, attr_key(v)) for k, v in node.attrs.items()))
    types = tuple(v.type for v in node.outputs)
    return (node.kind, tuple(inputs), attrs, types)


def _writes(node: Node, index: int) -> bool:
    """Does the declared op ``node`` write into its input ``index``? (Block returns, calls and
    undeclared kinds pass values on; the ops that write say so.)"""
    op = lookup(node.kind)
    return op is not None and WRITES in op.effects_on(index)


def cse_block(block: Block, available: ChainMap, classes: StorageClasses) -> bool:
    """Merge repeated computations in ``block`` given the ``available`` ones of enclosing blocks;
    ``classes`` says which values the caller receives."""
    changed = False
    for node in block:
        for inner in node.blocks:
            changed |= cse_block(inner, available.new_child(), classes)
        key = node_key(node)
        if key is None:
            continue
        earlier = available.get(key)
        if earlier is None:
            available[key] = node
            continue
        if classes.any_escapes(node) and classes.any_escapes(earlier):
            changed |= copy_of(earlier, node, classes)  # the caller gets both: two arrays
            continue
        for old, new in zip(node.outputs, earlier.outputs):
            classes.join(new, old)
            old.replace_all_uses_with(new)
        node.erase()
        changed = True
    return changed


def copy_of(earlier: Node, node: Node, classes: StorageClasses) -> bool:
    """Replace ``node`` (computing what ``earlier`` does) by a copy of ``earlier``'s result, when
    that result is one new array."""
    if not node.kind.startswith("tensor::") or may_share_input(node) or len(node.outputs) != 1 \
            or not isinstance(node.output.type, TensorType):
        return False
    copy = node.graph.create("tensor::copy", [earlier.output], [node.output.type],
                             source=node.source, names=[node.output.name]).insert_before(node)
    classes.join(node.output, copy.output)
    node.output.replace_all_uses_with(copy.output)
    node.erase()
    return True


def run(graph: Graph) -> bool:
    """Eliminate common subexpressions in the whole graph (not entering subgraphs)."""
    return cse_block(graph.block, ChainMap(), StorageClasses(graph))
