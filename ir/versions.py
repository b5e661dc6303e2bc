"""Versions of the caller's arrays: ``tensor::write_into`` writes into an array the caller holds
and returns it, so a read after the write reads its result (``script.frontend.write_order``);
``overwritten_reads``: what a backward run after the call would read overwritten."""

from __future__ import annotations

from ir.alias import may_share_input
from ir.core import Node, Value
from ir.registry import lookup
from ir.types import TensorType

WRITE_INTO = "tensor::write_into"
ITEM_READS = ("prim::ListIndex", "prim::DictGetItem")
_ALL_ITEM_READS = (*ITEM_READS, "prim::TupleIndex")
"""item reads, the tuple's too: by differentiation, list and dict arguments are tuples."""


def shape_read(node: Node) -> bool:
    op = lookup(node.kind)
    return op is not None and op.reads_shape_only


def unversioned(value: Value) -> Value:
    """The array ``value`` is a version of (through writes into it), or ``value``."""
    while value.node.kind == WRITE_INTO:
        value = value.node.inputs[0]
    return value


_CONSTRUCTS = ("prim::TupleConstruct", "prim::ListConstruct", "prim::DictConstruct")


def _unused(node: Node) -> bool:
    """A container op whose results nothing uses (``zip``'s pair a loop unpacked at once)."""
    return node.kind in _CONSTRUCTS and not any(o.uses for o in node.outputs)


def readers(values: list[Value]) -> list[Node]:
    """The nodes reading the contents of ``values``: every use but a write into them and a read
    of their shape, followed through views, and through what holds or passes them on (a tuple,
    list or dict built of them and the reads of its items, a branch's or loop's result, a
    loop's carried value), whose users read them too."""
    found: list[Node] = []
    todo = list(values)
    seen: set[int] = set()
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        for use in v.uses:
            node = use.node
            if node.kind == WRITE_INTO and use.index == 0 or \
                    use.index == 0 and shape_read(node) or _unused(node):
                continue
            found.append(node)
            if node.kind.startswith("tensor::"):
                if may_share_input(node):
                    todo += [o for o in node.outputs if isinstance(o.type, TensorType)]
            elif node.kind in _CONSTRUCTS or node.kind in ITEM_READS or node.kind in (
                    "prim::TupleIndex", "prim::TupleUnpack", "prim::ListUnpack",
                    "prim::unchecked_unwrap_optional"):
                todo += node.outputs
            elif node.kind == "prim::Return" and node.owner is not None and \
                    node.owner.owner is not None:
                holder = node.owner.owner
                if holder.kind == "prim::If":
                    todo.append(holder.outputs[use.index])
                elif holder.kind == "prim::Loop" and use.index >= 1:
                    todo += [holder.outputs[use.index - 1], node.owner.params[use.index]]
            elif node.kind == "prim::Loop" and use.index >= 2:
                todo += [node.outputs[use.index - 2], node.blocks[0].params[use.index - 1]]
    return found


def overwritten_reads(write: Node) -> list[Node]:
    """The nodes reading the contents of the array ``write`` writes into at a version a write
    later overwrites (the array before ``write``, through any item read of its container, and
    every version but the last): what a backward run after the call would read changed."""
    root = unversioned(write.inputs[0])
    values = [root]
    if root.node.kind in _ALL_ITEM_READS:  # any item of the container may be the array
        for u in root.node.inputs[0].uses:
            if u.index == 0 and u.node.kind in (*_ALL_ITEM_READS, "prim::TupleUnpack",
                                                "prim::ListUnpack"):
                values += u.node.outputs
    chain = list(values)
    while chain:
        v = chain.pop()
        for u in v.uses:
            if u.node.kind == WRITE_INTO and u.index == 0 and u.node.output not in values:
                values.append(u.node.output)
                chain.append(u.node.output)
    last = [v for v in values if v.node.kind == WRITE_INTO and not any(
        u.node.kind == WRITE_INTO and u.index == 0 for u in v.uses)]
    return readers([v for v in values if v not in last])


__all__ = ["ITEM_READS", "WRITE_INTO", "overwritten_reads", "readers", "shape_read",
           "unversioned"]
