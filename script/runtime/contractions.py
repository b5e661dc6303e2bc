"""Sums of products as one ``np.einsum``: ``np.sum(a * b, axis=k)`` outside loops.

An attention step scores each encoder state against the decoder state with ``t = hs * h[:,
None, :]; s = t.sum(axis=2)``: numpy writes the whole product (N x T x H) before it sums it. The
generated code computes such a sum with ``np.einsum``, which multiplies and adds without the
intermediate array: at N=64, T=30, H=256, float32, one thread, 48 us instead of 171 us. Inside a
native loop the loop's own reductions do the same (``fuser.cpu.loop``); a loop left to Python
keeps numpy's two calls.

``find(graph)`` picks the sums of the graph's top-level block whose argument is a product only
that sum reads, of two float arrays of static shapes and the result's dtype, over constant axes
(not every axis: numpy returns a number there), with at least ``MIN_ELEMENTS`` products, on
the host (another device keeps numpy's two calls). Axes a
broadcast operand has as size 1 get letters of their own, summed over their single element.
"""

from __future__ import annotations

import string

from ir.core import Graph, Node, Value
from ir.types import TensorType

MIN_ELEMENTS = 4096
"""the smallest product worth the einsum call's own cost (a few microseconds)."""


def _array(v: Value) -> TensorType | None:
    t = v.type
    if (isinstance(t, TensorType) and t.dtype in ("float32", "float64") and t.shape is not None
            and None not in t.shape and t.device in (None, "cpu")):
        return t
    return None


def subscripts(node: Node) -> tuple[str, Value, Value] | None:
    """(subscripts, a, b) computing the ``tensor::sum`` ``node`` of ``a * b`` as an einsum, or
    None when it is not such a sum."""
    if node.kind != "tensor::sum" or len(node.inputs) != 3:
        return None
    product, axis, keep = node.inputs
    mul = product.node
    if (mul.kind != "tensor::mul" or len(product.uses) != 1 or mul.owner is not node.owner
            or not axis.is_constant or not keep.is_constant or keep.constant is not False):
        return None
    a, b = mul.inputs
    ta, tb, tp, to = _array(a), _array(b), _array(product), _array(node.output)
    if None in (ta, tb, tp, to) or not ta.dtype == tb.dtype == tp.dtype == to.dtype:  # type: ignore
        return None
    shape = tuple(tp.shape)  # type: ignore[union-attr]
    rank = len(shape)
    axes = axis.constant if isinstance(axis.constant, (tuple, list)) else (axis.constant,)
    if (axis.constant is None or not all(isinstance(k, int) and not isinstance(k, bool)
                                         and -rank <= k < rank for k in axes)):
        return None
    reduced = {k % rank for k in axes}
    count = 1
    for n in shape:
        count *= n
    if len(reduced) == rank or len(reduced) != len(axes) or count < MIN_ELEMENTS:
        return None
    letters = iter(string.ascii_letters)
    of_axis = [next(letters) for _ in range(rank)]

    def labels(t: TensorType) -> str:
        lead = rank - len(t.shape)  # type: ignore[arg-type]
        return "".join(of_axis[lead + j] if size == shape[lead + j] else next(letters)
                       for j, size in enumerate(t.shape))  # type: ignore[union-attr]

    if len(ta.shape) == 0 or len(tb.shape) == 0 or rank > 20:  # type: ignore[union-attr]
        return None
    out = "".join(of_axis[i] for i in range(rank) if i not in reduced)
    return f"{labels(ta)},{labels(tb)}->{out}", a, b  # type: ignore[arg-type]


def find(graph: Graph) -> dict[Node, tuple[str, Value, Value]]:
    """The sums of ``graph``'s top-level block to compute as an einsum (see ``subscripts``)."""
    found = {}
    for node in graph.block:
        got = subscripts(node)
        if got is not None:
            found[node] = got
    return found
