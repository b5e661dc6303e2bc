"""Ops that gradients are made of: reducing a broadcast gradient back to an input's shape, the
inverse broadcast, scattering a slice's gradient into zeros, dropout's random mask, and the
preallocated stacked arrays a reverse loop fills one slice per iteration (``empty`` +
``write_slot``), so per-step values are stacked without a list and a copy after the loop, and
layer norm's gradient as one op (a native row kernel on the CPU).

They are ordinary ops (each has an eager function of the same name in ``script.ops``), so backward
graphs are plain IR that every pass, the fuser and the code generator understand, and that can be
differentiated again.
"""

from __future__ import annotations

from ir.core import Node
from ir.ops.rules import broadcast_shapes, float_result_dtype
from ir.ops.shape import int_items, items_device, tensor_arg
from ir.registry import (
    FRESH,
    NOT_CONSTANT,
    PURE,
    READS,
    SIDE_EFFECTS,
    VIEW,
    WRITES,
    ZERO_DERIVATIVE,
    ShapeError,
    const,
    defop,
)
from ir.types import DTYPE_NAMES, FLOAT_DTYPES, OptionalType, TensorType, Type


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


def _empty(node: Node) -> list[Type]:
    items = int_items(node.inputs[0])
    shape = None if items is None else tuple(items)
    if shape is not None and any(d is not None and d < 0 for d in shape):
        raise ShapeError(f"{node.kind}: negative dimensions are not allowed: {shape}")
    dtype = const(node, 1, "float64")
    if dtype is NOT_CONSTANT:
        return [TensorType(None, shape, None)]
    if dtype not in DTYPE_NAMES:
        raise ShapeError(f"{node.kind}: unknown dtype {dtype!r}")
    return [TensorType(dtype, shape, None)]  # type: ignore[arg-type]


def _write_slot(node: Node) -> list[Type]:
    buf, value = tensor_arg(node, 0), tensor_arg(node, 3)
    axis = const(node, 1)
    if buf.shape is None or value.shape is None or not isinstance(axis, int):
        return []
    if len(value.shape) != len(buf.shape) - 1:
        raise ShapeError(f"{node.kind}: a slice of {buf} cannot hold {value}")
    axis %= len(buf.shape)
    slot = buf.shape[:axis] + buf.shape[axis + 1:]
    if any(a is not None and b is not None and a != b for a, b in zip(slot, value.shape)):
        raise ShapeError(f"{node.kind}: a slice of {buf} cannot hold {value}")
    return []


def _layer_norm_backward(node: Node) -> list[Type]:
    g, a = tensor_arg(node, 0), tensor_arg(node, 1)
    if a.shape is not None and not a.shape:
        raise ShapeError(f"{node.kind}: cannot normalise a 0-d tensor")
    tensors = [g, a]
    w = node.inputs[2].type if len(node.inputs) > 2 else None
    if isinstance(w, OptionalType):
        w = w.element
    if isinstance(w, TensorType):
        tensors.append(w)
    shape = broadcast_shapes([t.shape for t in tensors])
    if shape is not None and a.shape is not None and len(shape) != len(a.shape):
        raise ShapeError(f"{node.kind}: g and weight must not add axes to {a}")
    dtype, device = float_result_dtype(tensors), items_device(tensors, node)
    row = None if shape is None else shape[-1:]
    return [TensorType(dtype, shape, device), TensorType(dtype, row, device),
            TensorType(dtype, row, device)]


defop("tensor::sum_to(a: Tensor, shape: ints) -> Tensor", _to_shape, (PURE, VIEW), (),
      "sum a broadcast result back to `shape`: over leading axes and axes where `shape` is 1 "
      "(the identity when the shapes agree)")
def _like_second(node: Node) -> list[Type]:
    g, a = tensor_arg(node, 0), tensor_arg(node, 1)
    return [a.with_dtype(float_result_dtype([g, a]))]


defop("tensor::det_backward(g: Tensor, a: Tensor) -> Tensor", _like_second, (PURE,), (),
      "g times the gradient of det(a), the transposed adjugate of a (of each matrix of a "
      "stack), singular matrices included: the gradient of np.linalg.det")
defop("tensor::broadcast_to(a: Tensor, shape: ints) -> Tensor", _to_shape, (PURE, VIEW), (),
      "a broadcast to `shape` (numpy.broadcast_to)", sizes=("shape",))
defop("tensor::select_backward(g: Tensor, shape: ints, axis: int, index: int) -> Tensor",
      _to_shape, (PURE,), (), "zeros of `shape` with g at `index` along `axis`")
defop("tensor::slice_backward(g: Tensor, shape: ints, axis: int, start: int? = None, "
      "stop: int? = None, step: int? = None) -> Tensor", _to_shape, (PURE,), (),
      "zeros of `shape` with g in the slice start:stop:step along `axis`")
defop("tensor::layer_norm_backward(g: Tensor, a: Tensor, weight: Tensor? = None, "
      "eps: float = 1e-05) -> (Tensor, Tensor, Tensor)", _layer_norm_backward, (PURE,), (),
      "layer_norm's gradient for the output cotangent g (shaped like a): the cotangent of a, "
      "and g * xhat and g summed over every axis but the last (the cotangents of a weight and "
      "a bias of the last axis' length), xhat = (a - mean) / sqrt(var + eps)")
defop("tensor::dropout_mask(a: Tensor, p: float = 0.5, training: bool = True) -> Tensor",
      _dropout_mask, (ZERO_DERIVATIVE,), (), "dropout's multiplier for a: kept elements "
      "1 / (1 - p), dropped 0 (ones when not training); draws exactly as `dropout` does, so "
      "dropout(a) == a * mask")
defop('tensor::empty(shape: ints, dtype: str = "float64") -> Tensor', _empty,
      (FRESH, ZERO_DERIVATIVE), ("np.empty",),
      "uninitialized storage of `shape` that `write_slot` fills (a preallocated stacked array); "
      "a new array each time, read only after every slot is written", sizes=("shape",))
defop("tensor::write_slot(buf: Tensor, axis: int, index: int, value: Tensor) -> ()", _write_slot,
      (SIDE_EFFECTS,), (), "store `value` as the slice `index` of `buf` along `axis`, in place",
      effects={"buf": (READS, WRITES)})
