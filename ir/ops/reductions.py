"""Reductions (sum, prod, mean, var, std, amax, amin) and the normalisations softmax / log_softmax.

Dtypes follow numpy: the sum of bools or signed integers is int64 (of unsigned ones uint64), the
mean/var/std of bools or integers is float64, amax/amin keep the dtype. Each op has an eager
function of the same name in ``script.ops``.
"""

from __future__ import annotations

from ir.core import Node
from ir.ops.rules import float_result_dtype
from ir.ops.shape import as_tuple, check_axes, check_axis, const_ints, int_items, tensor_arg
from ir.registry import NOT_CONSTANT, PURE, SCALAR_RESULT, ZERO_DERIVATIVE, const, defop
from ir.types import FLOAT_DTYPES, INT_DTYPES, Dim, TensorType, Type


def reduced_shape(node: Node, axis_index: int, keepdims_index: int) -> tuple[Dim, ...] | None:
    """The shape left after reducing over the axis argument (numpy's axis/keepdims rules)."""
    t = tensor_arg(node, 0)
    axis = const_ints(node, axis_index, None)
    keepdims = const(node, keepdims_index, False)
    if t.shape is None and axis is None and keepdims is False:
        return ()  # every axis reduced: a 0-d result whatever the rank
    if t.shape is None or keepdims is NOT_CONSTANT:
        return None
    rank = len(t.shape)
    if axis is None:
        return (1,) * rank if keepdims else ()
    if axis is NOT_CONSTANT:
        return _unknown_axes_shape(node, axis_index, rank, bool(keepdims))
    norm = check_axes(as_tuple(axis), rank, node)
    if keepdims:
        return tuple(1 if i in norm else d for i, d in enumerate(t.shape))
    return tuple(d for i, d in enumerate(t.shape) if i not in norm)


def _unknown_axes_shape(node: Node, index: int, rank: int, keepdims: bool) -> tuple | None:
    if keepdims:
        return (None,) * rank
    items = int_items(node.inputs[index])
    return None if items is None else (None,) * (rank - len(items))


def _sum_dtype(dtype: str | None) -> str | None:
    if dtype is not None and dtype.startswith("uint"):
        return "uint64"  # numpy's: unsigned integers sum to uint64
    if dtype == "bool" or dtype in INT_DTYPES:
        return "int64"
    return dtype


def _mean_dtype(dtype: str | None) -> str | None:
    if dtype is None or dtype in FLOAT_DTYPES:
        return dtype
    return "float64"


def _reduction(dtype_rule: object, axis_index: int = 1, keepdims_index: int = 2) -> object:
    def rule(node: Node) -> list[Type]:
        t = tensor_arg(node, 0)
        shape = reduced_shape(node, axis_index, keepdims_index)
        return [TensorType(dtype_rule(t.dtype), shape, t.device)]  # type: ignore[operator]
    return rule


def _same_dtype(dtype: str | None) -> str | None:
    return dtype


def _bool_dtype(dtype: str | None) -> str:
    return "bool"


def _softmax(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    axis = const(node, 1, -1)
    if t.shape is not None and axis is not NOT_CONSTANT:
        check_axis(int(axis), len(t.shape), node)  # type: ignore[arg-type]
    return [t.with_dtype(float_result_dtype([t]))]


RED = (PURE,)
FULL = (PURE, SCALAR_RESULT)
"""a reduction that may reduce every axis: its 0-d result is numpy's scalar."""

defop("tensor::sum(a: Tensor, axis: ints? = None, keepdims: bool = False) -> Tensor",
      _reduction(_sum_dtype), FULL, (".sum", "np.sum"),
      "sum over axes (all when None); bools and signed integers sum to int64, unsigned ones "
      "to uint64")
defop("tensor::prod(a: Tensor, axis: ints? = None, keepdims: bool = False) -> Tensor",
      _reduction(_sum_dtype), FULL, (".prod", "np.prod"),
      "product over axes (all when None), of the types a sum has; the gradient where a "
      "slice holds a zero is the product of the others at the zero (two zeros: all 0)")
defop("tensor::mean(a: Tensor, axis: ints? = None, keepdims: bool = False) -> Tensor",
      _reduction(_mean_dtype), FULL, (".mean", "np.mean"),
      "arithmetic mean over axes; bools and integers give float64")
defop("tensor::var(a: Tensor, axis: ints? = None, ddof: int = 0, keepdims: bool = False) "
      "-> Tensor", _reduction(_mean_dtype, 1, 3), FULL, (".var", "np.var"),
      "variance over axes, dividing by n - ddof")
defop("tensor::std(a: Tensor, axis: ints? = None, ddof: int = 0, keepdims: bool = False) "
      "-> Tensor", _reduction(_mean_dtype, 1, 3), FULL, (".std", "np.std"),
      "standard deviation over axes, dividing by n - ddof")
defop("tensor::amax(a: Tensor, axis: ints? = None, keepdims: bool = False) -> Tensor",
      _reduction(_same_dtype), FULL, (".max", "np.max", "np.amax"),
      "maximum over axes; the gradient is split evenly between tied elements")
defop("tensor::amin(a: Tensor, axis: ints? = None, keepdims: bool = False) -> Tensor",
      _reduction(_same_dtype), FULL, (".min", "np.min", "np.amin"),
      "minimum over axes; the gradient is split evenly between tied elements")
defop("tensor::all(a: Tensor, axis: ints? = None, keepdims: bool = False) -> Tensor",
      _reduction(_bool_dtype), (PURE, ZERO_DERIVATIVE, SCALAR_RESULT), (".all", "np.all"),
      "whether every element over axes (all when None) is true: a bool array")
defop("tensor::any(a: Tensor, axis: ints? = None, keepdims: bool = False) -> Tensor",
      _reduction(_bool_dtype), (PURE, ZERO_DERIVATIVE, SCALAR_RESULT), (".any", "np.any"),
      "whether some element over axes (all when None) is true: a bool array")
defop("tensor::softmax(a: Tensor, axis: int = -1) -> Tensor", _softmax, RED, (),
      "exp(a) / sum(exp(a)) along an axis, computed stably")
defop("tensor::log_softmax(a: Tensor, axis: int = -1) -> Tensor", _softmax, RED, (),
      "a - logsumexp(a) along an axis, computed stably")
