"""A product split into column pieces: one product per piece that is read.

A layer's loop multiplies by weights stacked side by side and splits the product; the reverse
loop of ``[x_t, h] @ [W; U]`` (a batched forward matmul) computes ``dg @ [W; U]^T`` and splits it
into the gradients of ``x_t`` and of ``h``::

    %y = tensor::matmul(%a, %w)                  # (B, I + H)
    %gx, %gh = tensor::split(%y, 2, 1)

When a piece is never read (``x``'s gradient not asked for) its columns are work thrown away;
when a loop carries a piece (``%gh`` as the next step's ``grad_h``), the loop carries a view of
another array, which a native loop cannot keep. Both go away with one product per piece read,
against the columns of ``w`` it needs (a contiguous copy made once, before the loops around the
product that do not make ``w``)::

    %w_h = tensor::contiguous(tensor::slice(%w, 1, I, I + H, 1))
    %gh = tensor::matmul(%a, %w_h)

Only 2-D products of known shapes whose every reader is a ``split`` or ``chunk`` along the last
axis or a ``slice`` of columns (step 1), and only when some column goes unread or a loop's body
returns a piece. The values are those of
the whole product's columns (each column is its own dot products).
"""

from __future__ import annotations

from ir.core import Graph, Node, Value
from ir.kinds import CONTIGUOUS, LOOP, MATMUL
from ir.types import TensorType

NAME = "matmul-pieces"

PIECES = ("tensor::split", "tensor::chunk")
SLICE = "tensor::slice"


def run(graph: Graph) -> bool:
    """Split every product that qualifies; True when any did."""
    changed = False
    for node in list(graph.walk()):
        if node.kind == MATMUL:
            changed |= split_product(node)
    return changed


def _matrix(v: Value) -> TensorType | None:
    t = v.type
    if isinstance(t, TensorType) and t.shape is not None and len(t.shape) == 2 \
            and None not in t.shape:
        return t
    return None


def _columns(piece_node: Node) -> list[tuple[int, int]] | None:
    """The column range of each output of a split, or of a slice with step 1, along the last
    axis of a 2-D array."""
    if piece_node.kind == SLICE:
        x, axis, start, stop, step = piece_node.inputs
        width = _matrix(x).shape[1]  # type: ignore[union-attr, index]
        if not (axis.is_constant and axis.constant in (1, -1) and type(axis.constant) is int
                and all(v.is_constant and (v.constant is None or type(v.constant) is int)
                        for v in (start, stop, step)) and step.constant in (None, 1)):
            return None
        cols = range(width)[slice(start.constant, stop.constant)]
        return [(cols.start, cols.stop)] if len(cols) else None
    axis = piece_node.inputs[2] if len(piece_node.inputs) > 2 else None
    if axis is None or not axis.is_constant or type(axis.constant) is not int \
            or axis.constant not in (1, -1):
        return None
    ranges, at = [], 0
    for out in piece_node.outputs:
        t = _matrix(out)
        if t is None:
            return None
        width = int(t.shape[1])  # type: ignore[index]
        ranges.append((at, at + width))
        at += width
    return ranges


def split_product(node: Node) -> bool:
    """Replace ``node``'s product by one product per column piece read (module docstring)."""
    y = node.output
    a, w = node.inputs
    yt, wt = _matrix(y), _matrix(w)
    if yt is None or wt is None or _matrix(a) is None or not y.uses:
        return False
    readers = [u.node for u in y.uses]
    if any(r.kind not in (*PIECES, SLICE) or r.inputs[0] is not y for r in readers):
        return False
    read: dict[tuple[int, int], list[Value]] = {}
    carried = False
    for r in readers:
        ranges = _columns(r)
        if ranges is None or (r.kind != SLICE and ranges[-1][1] != yt.shape[1]):  # type: ignore
            return False
        for out, cols in zip(r.outputs, ranges):
            if not out.uses:
                continue
            read.setdefault(cols, []).append(out)
            carried |= any(_carries(u.node) for u in out.uses)
    columns = {c for lo, hi in read for c in range(lo, hi)}
    unread = len(columns) < yt.shape[1]  # type: ignore[index]
    if not (unread or carried) or not read:
        return False
    graph = node.graph
    where = _outside(node, w)
    for (lo, hi), outs in read.items():
        with graph.inserting_before(where):
            bounds = [graph.constant(k) for k in (1, lo, hi, 1)]
            cols = graph.insert_typed(SLICE, [w, *bounds])
            dense = graph.insert_typed(CONTIGUOUS, [cols.output])
        product = graph.create_typed(MATMUL, [a, dense.output], source=node.source)
        product.insert_before(node)
        for out in outs:
            out.replace_all_uses_with(product.output)
    return True


def _carries(user: Node) -> bool:
    """Is ``user`` the return of a loop's body (its values the next step's carried ones)?"""
    block = user.owner
    return user is block.return_node and block.owner is not None and block.owner.kind == LOOP


def _outside(node: Node, w: Value) -> Node:
    """The node to put ``w``'s column copies before: the outermost loop around ``node`` that
    does not make ``w`` (``node`` itself when none does)."""
    at, block = node, node.owner
    while block.owner is not None and block.owner.kind == LOOP and not w.defined_inside(
            block.owner):
        at = block.owner
        block = at.owner
    return at


__all__ = ["NAME", "run", "split_product"]
