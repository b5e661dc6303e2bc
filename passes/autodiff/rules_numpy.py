"""VJP rules of the numpy-function ops (``ir/ops/numpy_ops.py``, ``ir/ops/indexing.py``);
merged into ``VJP_RULES``.

``take`` / ``index_pairs`` (integer-array indexing) add the cotangent into zeros at the indices,
and those scatter-adds gather it back. ``tile`` and ``repeat`` sum the cotangent over the copies
they made (a reshape that splits each repeated axis into (copies, size) or (size, copies), then a
sum); ``flatten`` and ``ravel`` reshape it back; ``dot`` is matmul's or mul's rule where
canonicalization has not already rewritten it. ``vstack`` / ``hstack`` left unrewritten have items
of unknown or mixed numbers of axes, and are refused.
"""

from __future__ import annotations

from ir.core import Node
from ir.registry import NOT_CONSTANT, const
from ir.types import TensorType
from passes.autodiff.refusals import refuse
from passes.autodiff.rules import (
    Rule,
    matmul_vjp,
    mul_vjp,
    reshape_like_input,
    shape_arg,
    static_shape,
)


def _static(node: Node, what: str) -> tuple[int, ...]:
    shape = static_shape(node.inputs[0])
    if shape is None:
        raise refuse(f"cannot differentiate {what} of an array whose shape is not known when "
                     "compiling: keep its shape fixed", node)
    return shape


def _constant(node: Node, index: int, what: str) -> object:
    value = const(node, index)
    if value is NOT_CONSTANT:
        raise refuse(f"cannot differentiate {what} with a count that is not a constant", node)
    return value


def tile_vjp(b, node, gs):
    """The cotangent of ``np.tile(x, reps)``: each axis split into (reps, size), the reps axes
    summed."""
    shape = _static(node, "np.tile")
    reps = _constant(node, 1, "np.tile")
    reps = [int(r) for r in (reps if isinstance(reps, (tuple, list)) else (reps,))]
    rank = max(len(shape), len(reps))
    padded = (1,) * (rank - len(shape)) + shape
    reps = [1] * (rank - len(reps)) + reps
    split = tuple(d for pair in zip(reps, padded) for d in pair)
    g = b.op("tensor::reshape", gs[0], split)
    g = b.op("tensor::sum", g, tuple(range(0, 2 * rank, 2)), False)
    return [b.op("tensor::reshape", g, shape)]


def repeat_vjp(b, node, gs):
    """The cotangent of ``np.repeat(x, n, axis)``: the axis split into (size, n), n summed."""
    shape = _static(node, "np.repeat")
    n = int(_constant(node, 1, "np.repeat"))  # type: ignore[call-overload]
    axis = const(node, 2, None)
    if axis is NOT_CONSTANT:
        raise refuse("cannot differentiate np.repeat along an axis that is not a constant", node)
    if axis is None:
        g = b.op("tensor::reshape", gs[0], (-1, n))
        return [b.op("tensor::reshape", b.op("tensor::sum", g, 1, False), shape)]
    k = int(axis) % len(shape)
    g = b.op("tensor::reshape", gs[0], shape[:k + 1] + (n,) + shape[k + 1:])
    return [b.op("tensor::sum", g, k + 1, False)]


def dot_vjp(b, node, gs):
    """numpy.dot's cotangents: mul's with a 0-d operand, matmul's when the second operand has
    at most 2 axes; refused otherwise."""
    ranks = [v.type.rank if isinstance(v.type, TensorType) else None for v in node.inputs]
    if 0 in ranks:
        return mul_vjp(b, node, gs)
    if None not in ranks and ranks[1] <= 2:  # type: ignore[operator]
        return matmul_vjp(b, node, gs)
    raise refuse("cannot differentiate np.dot here: only a product with a scalar or with a "
                 "second operand of at most 2 axes (whose numbers of axes are known when "
                 "compiling) has a gradient; write np.matmul or @", node)


def take_vjp(b, node, gs):
    """``a[idx]`` along an axis: the cotangent added into zeros at the indices."""
    a, indices, axis = node.inputs
    return [b.op("tensor::take_backward", gs[0], shape_arg(b, a), b.fwd(indices), b.fwd(axis)),
            None, None]


def index_pairs_vjp(b, node, gs):
    """``a[rows, cols]``: the cotangent added into zeros at the index pairs."""
    a, rows, cols = node.inputs
    return [b.op("tensor::index_pairs_backward", gs[0], shape_arg(b, a), b.fwd(rows),
                 b.fwd(cols)), None, None]


def take_backward_vjp(b, node, gs):
    """A scatter-add is linear in ``g``: its transpose gathers at the same indices."""
    _, _, indices, axis = node.inputs
    return [b.op("tensor::take", gs[0], b.fwd(indices), b.fwd(axis)), None, None, None]


def index_pairs_backward_vjp(b, node, gs):
    _, _, rows, cols = node.inputs
    return [b.op("tensor::index_pairs", gs[0], b.fwd(rows), b.fwd(cols)), None, None, None]


def array_vjp(b, node, gs):
    """``np.array`` of Python numbers: numbers carry no gradient here, so one computed from an
    array (``float(x.sum())``) is refused rather than given a silent zero."""
    raise refuse("cannot differentiate np.array of Python numbers computed from arrays: keep "
                 "them arrays (x.sum(), not float(x.sum())) and join them with np.stack", node)


def _refused_join(name: str) -> Rule:
    def rule(b, node, gs):
        raise refuse(f"cannot differentiate {name} of arrays whose numbers of axes are not "
                     "known when compiling or differ: write np.concatenate or np.stack of "
                     "arrays of one number of axes", node)
    return rule


NUMPY_VJP_RULES: dict[str, Rule] = {
    "tensor::tile": tile_vjp,
    "tensor::repeat": repeat_vjp,
    "tensor::flatten": reshape_like_input,
    "tensor::ravel": reshape_like_input,
    "tensor::dot": dot_vjp,
    "tensor::vstack": _refused_join("np.vstack"),
    "tensor::hstack": _refused_join("np.hstack"),
    "tensor::array": array_vjp,
    "tensor::take": take_vjp,
    "tensor::index_pairs": index_pairs_vjp,
    "tensor::take_backward": take_backward_vjp,
    "tensor::index_pairs_backward": index_pairs_backward_vjp,
}
"""op kind -> VJP rule for the numpy-function ops."""
