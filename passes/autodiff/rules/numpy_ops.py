"""VJP rules of the numpy-function ops (``ir/ops/numpy_ops.py``) and of integer-array indexing
(``ir/ops/indexing.py``). ``take`` / ``index_pairs`` add the cotangent into zeros at the
indices, and those scatter-adds gather it back. ``tile`` and ``repeat`` sum the cotangent over
the copies they made (a reshape that splits each repeated axis into (copies, size) or (size,
copies), then a sum); ``flatten`` and ``ravel`` reshape it back, ``swapaxes`` swaps it back,
``flip`` flips it back. ``dot`` is matmul's or mul's rule where canonicalization has not already
rewritten it. ``vstack`` / ``hstack`` / ``column_stack`` left unrewritten have items of unknown
or mixed numbers of axes, and ``array`` of numbers computed from arrays carries no gradient:
both refused.
"""

from __future__ import annotations

from typing import Any

from ir.core import Node, Value
from ir.ops.shape import const_ints
from ir.registry import NOT_CONSTANT, const
from ir.types import TensorType
from passes.autodiff.refusals import refuse
from passes.autodiff.rules.combinators import Rule, deflinear, shape_arg, static_shape
from passes.autodiff.rules.elementwise import BROADCASTING_RULES
from passes.autodiff.rules.matmul import MATMUL_RULES


def _static(node: Node, what: str) -> tuple[int, ...]:
    shape = static_shape(node.inputs[0])
    if shape is None:
        raise refuse(f"cannot differentiate {what} of an array whose shape is not known when "
                     "compiling: keep its shape fixed", node)
    return shape


def _constant(node: Node, index: int, what: str) -> Any:
    value = const(node, index)
    if value is NOT_CONSTANT:
        raise refuse(f"cannot differentiate {what} with a count that is not a constant", node)
    return value


def _tile_back(b: Any, g: Value, node: Node) -> Value:
    """Each axis split into (reps, size), the reps axes summed."""
    shape = _static(node, "np.tile")
    reps = _constant(node, 1, "np.tile")
    reps = [int(r) for r in (reps if isinstance(reps, (tuple, list)) else (reps,))]
    rank = max(len(shape), len(reps))
    padded = (1,) * (rank - len(shape)) + shape
    reps = [1] * (rank - len(reps)) + reps
    split = tuple(d for pair in zip(reps, padded) for d in pair)
    summed = b.op("tensor::sum", b.op("tensor::reshape", g, split),
                  tuple(range(0, 2 * rank, 2)), False)
    return b.op("tensor::reshape", summed, shape)


def _repeat_back(b: Any, g: Value, node: Node) -> Value:
    """The axis split into (size, n), n summed (the flattened array when axis is None)."""
    shape = _static(node, "np.repeat")
    n = int(_constant(node, 1, "np.repeat"))
    axis = const(node, 2, None)
    if axis is NOT_CONSTANT:
        raise refuse("cannot differentiate np.repeat along an axis that is not a constant", node)
    if axis is None:
        g = b.op("tensor::reshape", g, (-1, n))
        return b.op("tensor::reshape", b.op("tensor::sum", g, 1, False), shape)
    k = int(axis) % len(shape)
    g = b.op("tensor::reshape", g, shape[:k + 1] + (n,) + shape[k + 1:])
    return b.op("tensor::sum", g, k + 1, False)


def _reshape_like_input(b: Any, g: Value, node: Node) -> Value:
    return b.op("tensor::reshape", g, shape_arg(b, node.inputs[0]))


def _swap_back(b: Any, g: Value, node: Node) -> Value:
    """The same two axes swapped back (where the rank was not known to make it a transpose)."""
    return b.op("tensor::swapaxes", g, b.fwd(node.inputs[1]), b.fwd(node.inputs[2]))


def _move_back(b: Any, g: Value, node: Node) -> Value:
    """The axes moved back (where the rank was not known to make it a transpose)."""
    back = [const_ints(node, k) for k in (2, 1)]  # (a list of constants: the constants)
    return b.op("tensor::moveaxis", g, *[b.fwd(node.inputs[k]) if c is NOT_CONSTANT else c
                                         for k, c in zip((2, 1), back)])


def _flip_back(b: Any, g: Value, node: Node) -> Value:
    """Every axis reversed again (where the rank was not known to make it slices)."""
    return b.op("tensor::flip", g)


def _scatter_taken(b: Any, g: Value, node: Node) -> Value:
    a, indices, axis = node.inputs
    return b.op("tensor::take_backward", g, shape_arg(b, a), b.fwd(indices), b.fwd(axis))


def _scatter_pairs(b: Any, g: Value, node: Node) -> Value:
    a, rows, cols = node.inputs
    return b.op("tensor::index_pairs_backward", g, shape_arg(b, a), b.fwd(rows), b.fwd(cols))


def _take_again(b: Any, g: Value, node: Node) -> Value:
    """A scatter-add is linear in ``g``: its transpose gathers at the same indices."""
    return b.op("tensor::take", g, b.fwd(node.inputs[2]), b.fwd(node.inputs[3]))


def _pairs_again(b: Any, g: Value, node: Node) -> Value:
    return b.op("tensor::index_pairs", g, b.fwd(node.inputs[2]), b.fwd(node.inputs[3]))


def dot_vjp(b, node, gs):
    """numpy.dot's cotangents: mul's with a 0-d operand, matmul's when the second operand has
    at most 2 axes; refused otherwise."""
    ranks = [v.type.rank if isinstance(v.type, TensorType) else 0 for v in node.inputs]
    if 0 in ranks:
        return BROADCASTING_RULES["tensor::mul"](b, node, gs)
    if None not in ranks and ranks[1] <= 2:  # type: ignore[operator]
        return MATMUL_RULES["tensor::matmul"](b, node, gs)
    raise refuse("cannot differentiate np.dot here: only a product with a scalar or with a "
                 "second operand of at most 2 axes (whose numbers of axes are known when "
                 "compiling) has a gradient; write np.matmul or @", node)


def _cumsum_back(b: Any, g: Value, node: Node) -> Value:
    """Running sums from the end: the cumsum of the reversed cotangent, reversed (along the
    flattened array when the axis is None, then reshaped back)."""
    axis = const(node, 1, None)
    if axis is NOT_CONSTANT:
        raise refuse("cannot differentiate np.cumsum along an axis that is not a constant", node)
    along = 0 if axis is None else axis
    back = b.op("tensor::slice", g, along, None, None, -1)
    back = b.op("tensor::slice", b.op("tensor::cumsum", back, along), along, None, None, -1)
    return back if axis is not None else b.op("tensor::reshape", back, shape_arg(b, node.inputs[0]))


def _refused(message: str) -> Rule:
    def rule(b, node, gs):
        raise refuse(message, node)
    return rule


NUMPY_RULES: dict[str, Rule] = {
    "tensor::tile": deflinear(_tile_back),
    "tensor::repeat": deflinear(_repeat_back),
    "tensor::flatten": deflinear(_reshape_like_input),
    "tensor::ravel": deflinear(_reshape_like_input),
    "tensor::swapaxes": deflinear(_swap_back),
    "tensor::moveaxis": deflinear(_move_back),
    "tensor::flip": deflinear(_flip_back),
    "tensor::dot": dot_vjp,
    "tensor::take": deflinear(_scatter_taken),
    "tensor::index_pairs": deflinear(_scatter_pairs),
    "tensor::take_backward": deflinear(_take_again),
    "tensor::index_pairs_backward": deflinear(_pairs_again),
    "tensor::sort": _refused(
        "cannot differentiate np.sort: for a 1-D x, sort the indices instead (i = "
        "np.argsort(x)) and gather with them (x[i]), which differentiates"),
    "tensor::cumsum": deflinear(lambda b, g, node: _cumsum_back(b, g, node)),
    "tensor::split_list": _refused(
        "cannot differentiate np.split with a number of pieces not known when compiling (an "
        "int argument is known once the function is specialized; one computed in the function "
        "is not): split by a constant"),
    "tensor::vstack": _refused(
        "cannot differentiate np.vstack of arrays whose numbers of axes are not known when "
        "compiling or differ: write np.concatenate or np.stack of arrays of one number of axes"),
    "tensor::hstack": _refused(
        "cannot differentiate np.hstack of arrays whose numbers of axes are not known when "
        "compiling or differ: write np.concatenate or np.stack of arrays of one number of axes"),
    "tensor::column_stack": _refused(
        "cannot differentiate np.column_stack of arrays whose numbers of axes are not known "
        "when compiling, are 0, or mix 1-D arrays with arrays of 3 or more: write "
        "np.concatenate or np.stack of arrays of one number of axes"),
    "tensor::dstack": _refused(
        "cannot differentiate np.dstack of arrays whose numbers of axes are not known when "
        "compiling or are below 2: write np.stack(items, axis=2) of 2-D arrays"),
    "tensor::array": _refused(
        "cannot differentiate np.array of Python numbers computed from arrays: keep them arrays "
        "(x.sum(), not float(x.sum())) and join them with np.stack"),
}
"""op kind -> VJP rule, for the numpy-function and integer-array indexing ops."""
