"""Integer-array indexing (gather) and its gradient (scatter-add).

``W[idx]`` and ``U[:, idx]`` are ``take(a, indices, axis)``: the items of ``a`` at ``indices``
along one axis, the axis replaced by the index array's axes (numpy.take; an int index drops the
axis). ``o[rows, cols]`` is ``index_pairs(a, rows, cols)``: numpy's advanced indexing of the first
two axes by index arrays broadcast together. Their gradients add the cotangent into zeros at the
indices (``np.add.at``, so repeated indices accumulate). Each op has an eager function of the
same name in ``script.ops``.
"""

from __future__ import annotations

from ir.core import Node
from ir.ops.rules import broadcast_shapes
from ir.ops.shape import check_axis, int_items, tensor_arg
from ir.registry import NOT_CONSTANT, PURE, SCALAR_RESULT, ShapeError, const, defop
from ir.types import BOOL, INT, Dim, TensorType, Type


def index_shape(node: Node, index: int) -> tuple[Dim, ...] | None:
    """The shape an index input contributes: () for an int, the array's shape for an integer
    array; ShapeError for a bool or float array (a mask, or not an index at all)."""
    t = node.inputs[index].type
    if t in (INT, BOOL):
        return ()
    if not isinstance(t, TensorType):
        raise ShapeError(f"{node.kind}: an index must be an int or an integer array, not {t}")
    if t.dtype == "bool":
        raise ShapeError(f"{node.kind}: boolean mask indexing is not supported (its result's "
                         "size depends on the values): use np.where")
    if t.dtype is not None and t.dtype[0] not in "iu":
        raise ShapeError(f"{node.kind}: arrays used as indices must be of integer type, not "
                         f"{t.dtype}")
    return t.shape


def _take(node: Node) -> list[Type]:
    a = tensor_arg(node, 0)
    indices = index_shape(node, 1)
    axis = const(node, 2, 0)
    if a.shape is None or axis is NOT_CONSTANT:
        return [a.with_shape(None)]
    if not a.shape:
        raise ShapeError(f"{node.kind}: cannot index a 0-d tensor")
    k = check_axis(int(axis), len(a.shape), node)
    if indices is None:
        return [a.with_shape(None)]
    return [a.with_shape(a.shape[:k] + indices + a.shape[k + 1:])]


def _index_pairs(node: Node) -> list[Type]:
    a = tensor_arg(node, 0)
    rows, cols = index_shape(node, 1), index_shape(node, 2)
    if a.shape is not None and len(a.shape) < 2:
        raise ShapeError(f"{node.kind}: too many indices for a tensor of rank {len(a.shape)}")
    if a.shape is None or rows is None or cols is None:
        return [a.with_shape(None)]
    return [a.with_shape(broadcast_shapes([rows, cols]) + a.shape[2:])]  # type: ignore[operator]


def _to_shape(node: Node) -> list[Type]:
    g = tensor_arg(node, 0)
    items = int_items(node.inputs[1])
    return [g.with_shape(None if items is None else tuple(items))]


defop("tensor::take(a: Tensor, indices: operand, axis: int = 0) -> Tensor", _take,
      (PURE, SCALAR_RESULT),
      ("np.take", "x[idx]"), "the items of a at integer indices along axis (an int index drops "
      "the axis): W[idx], U[:, idx]")
defop("tensor::index_pairs(a: Tensor, rows: operand, cols: operand) -> Tensor", _index_pairs,
      (PURE,), ("x[rows, cols]",), "a[rows, cols] for integer arrays (or ints) rows and cols "
      "broadcast together: o[np.arange(n), y]")
defop("tensor::take_backward(g: Tensor, shape: ints, indices: operand, axis: int = 0) -> Tensor",
      _to_shape, (PURE,), (), "zeros of `shape` with g added at `indices` along `axis` "
      "(repeated indices accumulate): the gradient of take")
defop("tensor::index_pairs_backward(g: Tensor, shape: ints, rows: operand, cols: operand) "
      "-> Tensor", _to_shape, (PURE,), (), "zeros of `shape` with g added at [rows, cols] "
      "(repeated pairs accumulate): the gradient of index_pairs")
