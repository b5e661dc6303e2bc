"""Neural-network ops: ``layer_norm``, ``dropout`` (random, hence not pure) and ``gelu``.

Each op has an eager function of the same name in ``script.ops``.
"""

from __future__ import annotations

from ir.core import Node
from ir.ops.rules import broadcast_shapes, float_result_dtype, unary_float_rule
from ir.ops.shape import items_device, tensor_arg
from ir.registry import ELEMENTWISE, NOT_CONSTANT, PURE, VIEW, ShapeError, const, defop
from ir.types import FLOAT_DTYPES, OptionalType, TensorType, Type


def _optional_tensor(node: Node, index: int) -> TensorType | None:
    if index >= len(node.inputs):
        return None
    t = node.inputs[index].type
    if isinstance(t, OptionalType):
        t = t.element
    return t if isinstance(t, TensorType) else None


def _layer_norm(node: Node) -> list[Type]:
    a = tensor_arg(node, 0)
    if a.shape is not None and not a.shape:
        raise ShapeError(f"{node.kind}: cannot normalise a 0-d tensor")
    tensors = [a] + [t for t in (_optional_tensor(node, 1), _optional_tensor(node, 2)) if t]
    shape = broadcast_shapes([t.shape for t in tensors])
    if shape is not None and a.shape is not None and len(shape) != len(a.shape):
        raise ShapeError(f"{node.kind}: weight and bias must not add axes to {a}")
    return [TensorType(float_result_dtype(tensors), shape, items_device(tensors, node))]


def _dropout(node: Node) -> list[Type]:
    a = tensor_arg(node, 0)
    if a.dtype is not None and a.dtype not in FLOAT_DTYPES:
        raise ShapeError(f"{node.kind}: needs a floating-point tensor, got {a}")
    p = const(node, 1, 0.5)
    if p is not NOT_CONSTANT and not 0.0 <= float(p) <= 1.0:
        raise ShapeError(f"{node.kind}: probability must be in [0, 1], got {p}")
    return [a]


def _gelu(node: Node) -> list[Type]:
    return unary_float_rule(node)


defop("tensor::layer_norm(a: Tensor, weight: Tensor? = None, bias: Tensor? = None, "
      "eps: float = 1e-05) -> Tensor", _layer_norm, (PURE,), (),
      "(a - mean) / sqrt(var + eps) * weight + bias over the last axis")
defop("tensor::dropout(a: Tensor, p: float = 0.5, training: bool = True) -> Tensor", _dropout,
      (VIEW,), (), "zero each element with probability p and scale the rest by 1 / (1 - p) when "
      "training; the identity otherwise")
defop("tensor::gelu(a: operand) -> operand", _gelu, (PURE, ELEMENTWISE), (),
      "a * Phi(a), the exact (erf) form")
