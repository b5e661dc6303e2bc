"""Shared shape/dtype rules: numpy broadcasting and NumPy 2 promotion with weak Python scalars."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from ir.core import Node
from ir.registry import NOT_CONSTANT, ShapeError, const
from ir.types import (
    BOOL,
    FLOAT,
    FLOAT_DTYPES,
    INT,
    Dim,
    TensorType,
    Type,
    is_number,
)


def broadcast_shapes(shapes: Sequence[tuple[Dim, ...] | None]) -> tuple[Dim, ...] | None:
    """numpy broadcasting of shapes with unknown (None) dims; None when a rank is unknown."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)  # type: ignore[arg-type]
    out: list[Dim] = []
    for axis in range(rank):
        dims = [s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0]  # type: ignore
        out.append(_broadcast_dim(dims, shapes))
    return tuple(out)


def _broadcast_dim(dims: list[Dim], shapes: Sequence[object]) -> Dim:
    known = {d for d in dims if d is not None and d != 1}
    if len(known) > 1:
        pretty = ", ".join(_shape_text(s) for s in shapes)
        raise ShapeError(f"shapes {pretty} do not broadcast")
    if known:
        return known.pop()
    if any(d is None for d in dims):
        return None
    return 1


def _shape_text(shape: object) -> str:
    if shape is None:
        return "(?)"
    return "(" + ", ".join("*" if d is None else str(d) for d in shape) + ")"  # type: ignore


def result_dtype(types: Sequence[Type]) -> str | None:
    """NumPy 2 promotion: tensors promote by dtype; Python scalars are weak (float32 * 2.0 is
    float32) except that a float scalar makes an integer/bool tensor float64."""
    tensor_dtypes = [t.dtype for t in types if isinstance(t, TensorType)]
    if any(d is None for d in tensor_dtypes):
        return None
    scalars = [t for t in types if is_number(t)]
    if not tensor_dtypes:
        return None
    dtype = _promoted(tuple(tensor_dtypes))
    if FLOAT in scalars and dtype not in FLOAT_DTYPES:
        return "float64"
    if INT in scalars and dtype == "bool":
        return "int64"
    return dtype


@functools.lru_cache(maxsize=1024)
def _promoted(dtypes: tuple[str, ...]) -> str:
    """numpy's promotion of these dtypes, by name (asked once per combination)."""
    return np.result_type(*dtypes).name


@functools.lru_cache(maxsize=256)
def _float_of(dtype: str) -> str:
    """The smallest float that holds ``dtype``, as numpy's ufunc loops pick it."""
    return np.promote_types(dtype, "float16").name


def scalar_result(types: Sequence[Type]) -> Type:
    """Python's result type for arithmetic on scalars only (bool + bool is int)."""
    if FLOAT in types:
        return FLOAT
    return INT


def common_device(node: Node) -> str | None:
    devices = {t.device for t in (v.type for v in node.inputs) if isinstance(t, TensorType)}
    known = {d for d in devices if d is not None}
    if len(known) > 1:
        raise ShapeError(f"{node.kind}: inputs on different devices {sorted(known)}")
    if None in devices:
        return None
    return known.pop() if known else None


def elementwise_types(node: Node, count: int | None = None) -> list[Type]:
    """The types of the first ``count`` inputs (all when None)."""
    values = node.inputs if count is None else node.inputs[:count]
    return [v.type for v in values]


def broadcast_rule(node: Node, dtype: str | None = "promote", count: int | None = None,
                   scalar: Type | None = None) -> list[Type]:
    """Type of an elementwise op: broadcast shape, promoted (or fixed) dtype, common device.

    With only scalar operands the result is a scalar: ``scalar`` if given, else Python's result.
    """
    types = elementwise_types(node, count)
    tensors = [t for t in types if isinstance(t, TensorType)]
    if not tensors:
        return [scalar if scalar is not None else scalar_result(types)]
    shape = broadcast_shapes([t.shape for t in tensors])
    out_dtype = result_dtype(types) if dtype == "promote" else dtype
    return [TensorType(out_dtype, shape, common_device(node))]


def float_result_dtype(types: Sequence[Type]) -> str | None:
    """Like result_dtype, but integers and bools become float64 (true division, exp, ...)."""
    dtype = result_dtype(types)
    if dtype is None or dtype in FLOAT_DTYPES:
        return dtype
    return "float64"


def unary_float_rule(node: Node) -> list[Type]:
    """tanh, exp, sqrt...: same shape, float dtype as numpy picks it; scalars give float."""
    t = node.inputs[0].type
    if not isinstance(t, TensorType):
        return [FLOAT]
    # numpy's ufunc loops: the smallest float that holds the input (int8 -> float16, int16 ->
    # float32, int64 -> float64)
    dtype = None if t.dtype is None else _float_of(t.dtype)
    return [TensorType(dtype, t.shape, t.device)]


def same_as_input_rule(node: Node) -> list[Type]:
    """abs, neg, relu...: the first input's type."""
    return [node.inputs[0].type]


def compare_rule(node: Node) -> list[Type]:
    return broadcast_rule(node, dtype="bool", count=2, scalar=BOOL)


def normalize_axis(axis: int, rank: int, node: Node) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ShapeError(f"{node.kind}: axis {axis} is out of bounds for a tensor of rank {rank}")
    return axis % rank if rank else 0


def const_int(node: Node, index: int, default: object = NOT_CONSTANT) -> object:
    """A constant int input (or default/NOT_CONSTANT)."""
    return const(node, index, default)
