"""Creation ops: ``zeros``, ``ones``, ``full``, their ``*_like`` forms and ``arange``.

Tensors are immutable in the language, so a fresh constant-filled tensor is pure. The device of a
tensor made from a shape alone is chosen at run time (unknown here); ``*_like`` keeps the input's.
Each op has an eager function of the same name in ``script.ops``.
"""

from __future__ import annotations

import math

from ir.core import Node
from ir.ops.shape import int_items, tensor_arg
from ir.registry import NOT_CONSTANT, PURE, SHAPE_ONLY, ZERO_DERIVATIVE, ShapeError, const, defop
from ir.types import DTYPE_NAMES, FLOAT, TensorType, Type


def _dtype_arg(node: Node, index: int, default: object) -> str | None:
    dtype = const(node, index, default)
    if dtype is NOT_CONSTANT:
        return None
    if dtype not in DTYPE_NAMES:
        raise ShapeError(f"{node.kind}: unknown dtype {dtype!r}")
    return dtype  # type: ignore[return-value]


def _shape_arg(node: Node) -> tuple | None:
    items = int_items(node.inputs[0])
    if items is None:
        return None
    if any(d is not None and d < 0 for d in items):
        raise ShapeError(f"{node.kind}: negative dimensions are not allowed: {tuple(items)}")
    return tuple(items)


def _from_shape(dtype_index: int) -> object:
    def rule(node: Node) -> list[Type]:
        return [TensorType(_dtype_arg(node, dtype_index, "float64"), _shape_arg(node), None)]
    return rule


def _full(node: Node) -> list[Type]:
    if const(node, 2, None) is not None:
        return _from_shape(2)(node)  # type: ignore[operator]
    # numpy picks the dtype from the fill value: int -> int64, float -> float64, bool -> bool
    value = node.inputs[1].type
    dtype = {"int": "int64", "float": "float64", "bool": "bool"}.get(str(value))
    return [TensorType(dtype, _shape_arg(node), None)]


def _like(dtype_index: int) -> object:
    def rule(node: Node) -> list[Type]:
        a = tensor_arg(node, 0)
        dtype = const(node, dtype_index, None)
        if dtype is None:
            return [a]
        return [a.with_dtype(_dtype_arg(node, dtype_index, None))]
    return rule


def _arange(node: Node) -> list[Type]:
    values = [const(node, i, d) for i, d in ((0, NOT_CONSTANT), (1, None), (2, 1))]
    dtype = const(node, 3, None)
    if dtype is None:
        is_float = any(node.inputs[i].type == FLOAT for i in range(min(3, len(node.inputs))))
        dtype = "float64" if is_float else "int64"
    else:
        dtype = _dtype_arg(node, 3, None)
    return [TensorType(dtype, (_arange_length(node, *values),), None)]  # type: ignore[arg-type]


def _arange_length(node: Node, start: object, stop: object, step: object) -> int | None:
    if NOT_CONSTANT in (start, stop, step):
        return None
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ShapeError(f"{node.kind}: step cannot be zero")
    return max(0, math.ceil((stop - start) / step))  # type: ignore[operator]


MADE = (PURE, ZERO_DERIVATIVE)
LIKE = MADE + (SHAPE_ONLY,)
"""``zeros_like(a)`` and its kin: made from a's shape and dtype alone."""
"""made from a shape (and constants) alone: no derivative flows from the operands."""

defop('tensor::zeros(shape: ints, dtype: str = "float64") -> Tensor', _from_shape(1), MADE,
      ("np.zeros",), "a tensor of zeros (float64 unless a dtype is given, as numpy)",
      sizes=("shape",))
defop('tensor::ones(shape: ints, dtype: str = "float64") -> Tensor', _from_shape(1), MADE,
      ("np.ones",), "a tensor of ones (float64 unless a dtype is given, as numpy)",
      sizes=("shape",))
defop("tensor::full(shape: ints, value: number, dtype: str? = None) -> Tensor",
      _full, MADE, ("np.full",), "a tensor filled with value (dtype from the value by default)",
      sizes=("shape",))
defop("tensor::zeros_like(a: Tensor, dtype: str? = None) -> Tensor", _like(1), LIKE,
      ("np.zeros_like",), "zeros with a's shape, device and (by default) dtype")
defop("tensor::ones_like(a: Tensor, dtype: str? = None) -> Tensor", _like(1), LIKE,
      ("np.ones_like",), "ones with a's shape, device and (by default) dtype")
defop("tensor::full_like(a: Tensor, value: number, dtype: str? = None) -> Tensor", _like(2),
      LIKE, ("np.full_like",), "value with a's shape, device and (by default) dtype")
defop("tensor::arange(start: number, stop: number? = None, step: number = 1, "
      "dtype: str? = None) -> Tensor", _arange, MADE, ("np.arange",),
      "evenly spaced values in [start, stop) (or [0, start) when stop is None)",
      sizes=("start", "stop", "step"))
