"""Ops that gradients are made of: reducing a broadcast gradient back to an input's shape, the
inverse broadcast, scattering a slice's gradient into zeros, and dropout's random mask.

They are ordinary ops (each has an eager function of the same name in ``script.ops``), so backward
graphs are plain IR that every pass, the fuser and the code generator understand, and that can be
differentiated again.
"""

from __future__ import annotations

from ir.core import Node
from ir.ops.shape import int_items, tensor_arg
from ir.registry import PURE, ShapeError, const, defop
from ir.types import FLOAT_DTYPES, TensorType, Type


def _to_shape(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    items = int_items(node.inputs[1])
    shape = None if items is None else tuple(items)
    return [TensorType(t.dtype, shape, t.device)]


def _dropout_mask(node: Node) -> list[Type]:
    a = tensor_arg(node, 0)
    if a.dtype is not None and a.dtype not in FLOAT_DTYPES:
        raise ShapeError(f"{node.kind}: needs a floating-point tensor, got {a}")
    p = const(node, 1)
    if isinstance(p, (int, float)) and not 0.0 <= float(p) <= 1.0:
        raise ShapeError(f"{node.kind}: probability must be in [0, 1], got {p}")
    return [a]


defop("tensor::sum_to(a: Tensor, shape: ints) -> Tensor", _to_shape, (PURE,), (),
      "sum a broadcast result back to `shape`: over leading axes and axes where `shape` is 1 "
      "(the identity when the shapes agree)")
defop("tensor::broadcast_to(a: Tensor, shape: ints) -> Tensor", _to_shape, (PURE,), (),
      "a broadcast to `shape` (numpy.broadcast_to)")
defop("tensor::select_backward(g: Tensor, shape: ints, axis: int, index: int) -> Tensor",
      _to_shape, (PURE,), (), "zeros of `shape` with g at `index` along `axis`")
defop("tensor::slice_backward(g: Tensor, shape: ints, axis: int, start: int? = None, "
      "stop: int? = None, step: int? = None) -> Tensor", _to_shape, (PURE,), (),
      "zeros of `shape` with g in the slice start:stop:step along `axis`")
defop("tensor::dropout_mask(a: Tensor, p: float = 0.5, training: bool = True) -> Tensor",
      _dropout_mask, (), (), "dropout's multiplier for a: kept elements 1 / (1 - p), dropped 0 "
      "(ones when not training); draws exactly as `dropout` does, so dropout(a) == a * mask")
