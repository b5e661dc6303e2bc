"""Item types of container arguments: what the call signature says about each item of a list or
dict argument, kept on the reads of it (``ITEM_TYPES``) for shape propagation and LICM.

``specialize`` marks each read of a container argument the graph never changes (``params[0]``,
``p["W"]``, ``a, b = params``) with the types of the items it reads; propagation prefers them to
the container's element type, and LICM treats such a read as invariant and unable to raise (the
list length and dict keys are part of the call signature).
"""

from __future__ import annotations

from typing import Any

from ir.core import Node, Value
from ir.kinds import LIST_INDEX
from ir.registry import constant_of
from ir.types import Type

ITEM_TYPES = "item_types"
"""Attribute of a read of a container argument the graph never changes (``prim::ListIndex`` with
a constant index, ``prim::DictGetItem`` with a constant key, ``prim::ListUnpack``): the types
of the items it reads, which propagation prefers to the container's element type."""

_ITEM_READS = {LIST_INDEX, "prim::DictGetItem", "prim::ListUnpack"}


def annotate_item_reads(container: Value, items: tuple[Type, ...] | dict[Any, Type]) -> None:
    """Mark each read of ``container`` (whose items have the types ``items``) with the types
    of the items it reads."""
    for use in container.uses:
        node = use.node
        if use.index != 0 or node.kind not in _ITEM_READS:
            continue
        read = _items_read(node, items)
        if read is not None:
            node.attrs[ITEM_TYPES] = read


def _items_read(node: Node, items: tuple[Type, ...] | dict[Any, Type]) -> tuple | None:
    if node.kind == "prim::ListUnpack":
        return tuple(items) if isinstance(items, tuple) and \
            len(items) == len(node.outputs) else None
    key = constant_of(node.inputs[1])
    if isinstance(items, dict):
        return (items[key],) if isinstance(key, (str, int)) and key in items else None
    if type(key) is int and -len(items) <= key < len(items):
        return (items[key],)
    return None
