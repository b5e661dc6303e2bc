"""VJP rules of shape and layout ops: transpose, reshapes, indexing, slicing, chunk/split and the
broadcasts. All are linear in their array: each rule is the transposed op."""

from __future__ import annotations

from typing import Any

from ir.core import Node, Value
from ir.errors import IRError
from ir.registry import NOT_CONSTANT, const, spelling
from ir.types import ListType
from passes.autodiff.rules.combinators import Rule, deflinear, rank_of, shape_arg


def _transpose_back(b: Any, g: Value, node: Node) -> Value:
    """The inverse permutation of the forward's axes (reversed axes undo themselves)."""
    axes = const(node, 1, None)
    if axes is None:
        return b.op("tensor::transpose", g, None)
    if axes is NOT_CONSTANT:
        raise IRError("cannot differentiate np.transpose with axes not known when compiling: "
                      "write the axes as constants")
    rank = rank_of(node.inputs[0])
    norm = [int(a) % rank for a in (axes if isinstance(axes, (tuple, list)) else (axes,))]
    inverse = tuple(sorted(range(rank), key=lambda k: norm[k]))
    return b.op("tensor::transpose", g, inverse)


def _reshape_like_input(b: Any, g: Value, node: Node) -> Value:
    return b.op("tensor::reshape", g, shape_arg(b, node.inputs[0]))


def _select_back(b: Any, g: Value, node: Node) -> Value:
    a, axis, index = node.inputs
    return b.op("tensor::select_backward", g, shape_arg(b, a), b.fwd(axis), b.fwd(index))


def _slice_back(b: Any, g: Value, node: Node) -> Value:
    a, *rest = node.inputs
    return b.op("tensor::slice_backward", g, shape_arg(b, a), *[b.fwd(v) for v in rest])


def _select_again(b: Any, g: Value, node: Node) -> Value:
    """select_backward's transpose: read the slot back."""
    _, _, axis, index = node.inputs
    return b.op("tensor::select", g, b.fwd(axis), b.fwd(index))


def _slice_again(b: Any, g: Value, node: Node) -> Value:
    _, _, *rest = node.inputs
    return b.op("tensor::slice", g, *[b.fwd(v) for v in rest])


def _broadcast_back(b: Any, g: Value, node: Node) -> Value:
    return b.op("tensor::broadcast_to", g, shape_arg(b, node.inputs[0]))


def _sum_back(b: Any, g: Value, node: Node) -> Value:
    return b.op("tensor::sum_to", g, shape_arg(b, node.inputs[0]))


def pieces_vjp(b, node, gs):
    """chunk / split: concatenate the pieces' cotangents (zeros for pieces without one)."""
    axis = const(node, 2, 0)
    if axis is NOT_CONSTANT:
        raise IRError(f"cannot differentiate {spelling(node.kind)} along an axis not known "
                      "when compiling: write the axis as a constant")
    items = [g if g is not None else b.zeros(v) for g, v in zip(gs, node.outputs)]
    lst = b.emit("prim::ListConstruct", *items, types=[ListType(items[0].type)]).output
    return [b.op("tensor::cat", lst, int(axis))]


SHAPE_RULES: dict[str, Rule] = {
    "tensor::transpose": deflinear(_transpose_back),
    "tensor::reshape": deflinear(_reshape_like_input),
    "tensor::expand_dims": deflinear(_reshape_like_input),
    "tensor::squeeze": deflinear(_reshape_like_input),
    "tensor::select": deflinear(_select_back),
    "tensor::slice": deflinear(_slice_back),
    "tensor::select_backward": deflinear(_select_again),
    "tensor::slice_backward": deflinear(_slice_again),
    "tensor::sum_to": deflinear(_broadcast_back),
    "tensor::broadcast_to": deflinear(_sum_back),
    "tensor::chunk": pieces_vjp,
    "tensor::split": pieces_vjp,
}
"""op kind -> VJP rule, for the shape and layout ops."""
