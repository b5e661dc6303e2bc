"""Dict items forwarded: a read of a key the block just stored (or read) is the value held.

Code that keeps a loop's steps in dicts keyed by the step (``hs[t] = np.tanh(...)`` then
``np.dot(Why, hs[t])``) reads back what it stored a few lines before. In a block, for a dict the
graph builds and only stores into and reads (``local_dicts``: every use a ``d[k] = v``, ``d[k]``,
``len(d)`` or ``k in d`` of the graph's own, so nothing else can change it), this pass:

- replaces ``d[k]`` by the value a store ``d[k] = v`` or an earlier read ``d[k]`` of the same
  block gave, when no store that may hit the same key, and no nested block, lies between (the
  key is the same value, or an equal constant): Python reads that very object;
- drops a store ``d[k] = v`` that a store of the same key overwrites before anything uses the
  dict (the key keeps its place in the dict's order: nothing is inserted between).

A read forwarded from a store cannot raise (the key is there); one forwarded from an earlier read
would have raised there first.
"""

from __future__ import annotations

from typing import Any

from ir.core import Block, Graph, Node, Value
from ir.registry import lookup
from ir.types import DictType

NAME = "forward-dict-items"

GET, SET = "prim::DictGetItem", "prim::DictSetItem"
_READS = frozenset({GET, "prim::len", "prim::DictContains"})
"""Uses that leave a local dict as it is."""


def local_dicts(graph: Graph) -> set[Value]:
    """Dicts ``graph`` builds that only its own stores and reads (``_READS``) touch."""
    found = set()
    for node in graph.walk():
        if node.kind != "prim::DictConstruct" or not isinstance(node.output.type, DictType):
            continue
        d = node.output
        if all(_local_use(u.node, u.index) for u in d.uses):
            found.add(d)
    return found


def _local_use(node: Node, index: int) -> bool:
    """A store into the dict or a read of it, or a pure op nothing reads (``xs, hs = {}, {}``
    builds a tuple first)."""
    if index == 0 and (node.kind in _READS or node.kind == SET):
        return True
    op = lookup(node.kind)
    return (op is not None and op.is_pure and not node.blocks
            and not any(o.uses for o in node.outputs))


def _key(v: Value) -> tuple[str, Any]:
    """A key's identity: an int or str constant by its value, anything else by the value itself
    (which may be equal to any key: ``True == 1 == 1.0`` hit one item)."""
    if v.is_constant and type(v.constant) in (int, str):
        return ("constant", (type(v.constant), v.constant))
    return ("value", v)


def _may_equal(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    return a == b or a[0] != "constant" or b[0] != "constant"


def _forward_block(block: Block, dicts: set[Value]) -> bool:
    """Forward the items of ``dicts`` within ``block`` (and, afresh, each block nested in it)."""
    changed = False
    held: dict[Value, dict[tuple[str, Any], Value]] = {d: {} for d in dicts}
    """per dict, what a read of each key gives here."""
    unread: dict[Value, dict[tuple[str, Any], Node]] = {d: {} for d in dicts}
    """per dict, the stores nothing has used the dict since."""
    for node in list(block.nodes):
        for inner in node.blocks:
            changed |= _forward_block(inner, dicts)
        if node.blocks:
            for d in dicts:
                held[d].clear()
                unread[d].clear()
            continue
        d = node.inputs[0] if node.inputs else None
        if d not in dicts:
            continue
        if node.kind == SET:
            key = _key(node.inputs[1])
            overwritten = unread[d].pop(key, None)
            if overwritten is not None:
                overwritten.erase()
                changed = True
            held[d] = {k: v for k, v in held[d].items() if not _may_equal(k, key)}
            held[d][key] = node.inputs[2]
            unread[d] = {k: n for k, n in unread[d].items() if not _may_equal(k, key)}
            unread[d][key] = node
            continue
        unread[d].clear()  # a read: the stores so far are seen
        if node.kind != GET:
            continue
        key = _key(node.inputs[1])
        known = held[d].get(key)
        if known is None:
            held[d][key] = node.output
            continue
        node.output.replace_all_uses_with(known)
        node.erase()
        changed = True
    return changed


def run(graph: Graph) -> bool:
    """Forward the items of the graph's local dicts (see the module docstring)."""
    dicts = local_dicts(graph)
    if not dicts:
        return False
    return _forward_block(graph.block, dicts)
