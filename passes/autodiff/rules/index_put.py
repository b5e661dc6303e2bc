"""VJP rules of the writes into a region (``ir/ops/index_put.py``): ``out = put(a, value, index)``
is ``a`` outside the region and ``value`` (broadcast) inside it. So ``a``'s cotangent is the
output's with the region zeroed (the same write, of 0), and ``value``'s is the region of the
output's cotangent summed back to ``value``'s shape. Where an integer index repeats, only the last
write reaches the output: the earlier ones get zero (``take_last`` / ``index_pairs_last``)."""

from __future__ import annotations

from typing import Any

from ir.core import Node, Value
from ir.ops.index_put import IN_PLACE
from ir.registry import const
from passes.autodiff.refusals import refuse
from passes.autodiff.rules.combinators import Rule, deflinear, unbroadcast

_READ_BACK = {
    "tensor::select_put": "tensor::select",
    "tensor::slice_put": "tensor::slice",
    "tensor::take_put": "tensor::take_last",
    "tensor::index_pairs_put": "tensor::index_pairs_last",
}
"""write -> the op reading the region a value's cotangent comes from."""


_PURE = {twin: kind for kind, twin in IN_PLACE.items()}
"""in-place twin -> its pure write (the twins come after autodiff; their math is the same)."""


def _put_vjp(b: Any, node: Node, gs: list[Any]) -> list[Value | None]:
    g = gs[0]
    kind = _PURE.get(node.kind, node.kind)
    a, value, *index = node.inputs
    where = [b.fwd(v) for v in index]
    grads: list[Value | None] = [None] * len(node.inputs)
    if b.is_active(a):
        grads[0] = b.op(kind, g, 0.0, *where)
    if b.is_active(value):
        grads[1] = unbroadcast(b, b.op(_READ_BACK[kind], g, *where), value)
    return grads


def _put_last(kind: str):
    """The transpose of ``take_last`` / ``index_pairs_last``: ``g`` written into zeros at the
    indices, the last write winning (the earlier repeats read zero)."""
    def transpose(b: Any, g: Value, node: Node) -> Value:
        return b.op(kind, b.zeros(node.inputs[0]), g, *[b.fwd(v) for v in node.inputs[1:]])
    return deflinear(transpose)


def _write_into_vjp(b: Any, node: Node, gs: list[Any]) -> list[Value | None]:
    """A read of the caller's array after a write into it (``write_into``'s result) on the
    path differentiated: refused (the array's old contents, which a gradient through ``*=`` or
    the array itself needs, are gone)."""
    raise refuse("cannot differentiate through an array read after an in-place write into "
                 "the caller's array (the write changes the array itself, whose old contents "
                 "the gradient would need): compute the differentiated value from the "
                 "arrays before the write, or from a copy (w = self.W.copy())", node)


def _add_at_vjp(b: Any, node: Node, gs: list[Any]) -> list[Value | None]:
    """``out = add_at(a, value, index)``: ``a``'s cotangent is the output's, ``value``'s the
    output's read at every index (each item was added once), negated for ``sign`` -1 and
    summed back to ``value``'s shape."""
    g = gs[0]
    a, value, *index = node.inputs
    *where, sign = index
    grads: list[Value | None] = [None] * len(node.inputs)
    if b.is_active(a):
        grads[0] = g
    if b.is_active(value):
        read = "tensor::take" if node.kind == "tensor::take_add" else "tensor::index_pairs"
        taken = b.op(read, g, *[b.fwd(v) for v in where])
        if const(node, len(node.inputs) - 1, 1) != 1:
            taken = b.op("tensor::neg", taken)
        grads[1] = unbroadcast(b, taken, value)
    return grads


INDEX_PUT_RULES: dict[str, Rule] = {kind: _put_vjp for kind in [*_READ_BACK, *_PURE]} | {
    "tensor::take_add": _add_at_vjp,
    "tensor::index_pairs_add": _add_at_vjp,
    "tensor::take_last": _put_last("tensor::take_put"),
    "tensor::index_pairs_last": _put_last("tensor::index_pairs_put"),
    "tensor::write_into": _write_into_vjp,
}
"""write kind (and the reads of a value's cotangent) -> its VJP rule."""
