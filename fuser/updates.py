"""Updates of a caller's array computed by the kernel that computes their value.

``p -= lr * g`` on an array the caller passed (``tensor::write_into(p, v, "-")``, an
optimizer's ``params[i] -= ...``) is numpy's ``np.subtract(p, v, out=p)``: ``v`` is made first,
in an array of its own, then read back to update ``p``. Where a kernel can compute ``v``,
this pass makes the update part of it: ``write_into(p, astype(p - v, p.dtype), "")``, so the
fusion that follows puts ``p - v`` (and the cast numpy's ``out=p`` does) into the group that
computes ``v``, and the code generator hands the kernel ``p`` itself as that output's storage
(``script.runtime.slot_writes.update_writes``): one pass over ``p``, ``g`` and the state it
reads instead of one per numpy operation, and no temporary array.

The rewrite keeps numpy's arithmetic: ``p op v`` computed at the dtype numpy's update computes
it at (both operands' result type) and cast back to ``p``'s dtype, as ``out=p`` casts it
(``same_kind``: float results into float arrays only). It applies to whole-array updates
(``p[...] op= v``, ``p[:] op= v``, by an op a kernel computes) of a float array of fully known
shape on the CPU, with ``v`` of ``p``'s shape made by a fusible op used by nothing else; others
stay numpy's in-place update.
A plain assignment ``p[...] = v`` needs no rewrite (its value is what the group computes) but
the cast, when ``v``'s dtype differs from ``p``'s.
"""

from __future__ import annotations

import fuser
from fuser.group import is_fusible
from ir.core import Graph, Node
from ir.ops.elementwise import CASTING_ATTR
from ir.registry import spelled
from ir.types import TensorType

NAME = "fuse-updates"

WRITE_INTO = "tensor::write_into"
_FLOATS = ("float32", "float64")


def run(graph: Graph) -> bool:
    if not fuser.is_enabled():
        return False
    changed = False
    for node in list(graph.walk()):
        if node.kind == WRITE_INTO and _rewrite(graph, node):
            changed = True
    return changed


def _rewrite(graph: Graph, write: Node) -> bool:
    dst, value, op, index = write.inputs
    update = spelled(op.constant) if op.is_constant and op.constant else None
    if not (op.is_constant and (op.constant == "" or update is not None and
                                update.is_elementwise)) or \
            not (index.is_constant and index.constant in ("...", ":")):
        return False
    t, v = dst.type, value.type
    if not (_static_float(t) and t.shape and t.device != "cuda" and _static_float(v)):
        return False
    producer = value.node
    if len(value.uses) != 1 or producer.owner is not write.owner or not is_fusible(producer):
        return False
    if op.constant == "" and (v.shape != t.shape or v.dtype == t.dtype):
        return False  # (broadcast: numpy's own copy; same dtype: the group's output as is)
    with graph.inserting_before(write):
        result = value
        if update is not None:  # (the op numpy's `dst op= value` runs: its spelling's)
            result = graph.insert_typed(update.kind, [dst, value], source=write.source).output
            if result.type.shape != t.shape or not is_fusible(result.node):
                result.node.erase()  # (a value broadcasting dst, which numpy refuses; an op
                return False  # no kernel computes: numpy's own update)
        if result.type.dtype != t.dtype:
            result = graph.insert_typed("tensor::astype", [result, graph.constant(t.dtype)],
                                        attrs={CASTING_ATTR: "same_kind"},
                                        source=write.source).output
        write.set_input(1, result)
        write.set_input(2, graph.constant(""))
    return True


def _static_float(t: object) -> bool:
    return isinstance(t, TensorType) and t.dtype in _FLOATS and t.shape is not None and \
        None not in t.shape


__all__ = ["NAME", "run"]
