"""VJP rules of reductions over axes: sum, prod, mean, var, std, amax, amin."""

from __future__ import annotations

import math
from typing import Any

from ir.core import Node, Value
from ir.errors import IRError
from ir.registry import NOT_CONSTANT, const, spelling
from passes.autodiff.rules.combinators import Rule, deflinear, product, rank_of, shape_arg


def reduced_axes(node: Node) -> list[int]:
    """The axes a reduction reduces, non-negative and sorted (all of them for ``axis=None``)."""
    rank = rank_of(node.inputs[0])
    axis = const(node, 1, None)
    if axis is NOT_CONSTANT:
        raise IRError(f"cannot differentiate {spelling(node.kind)} over axes not known when "
                      "compiling: write the axes as constants")
    if axis is None:
        return list(range(rank))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    return sorted(int(a) % rank for a in items)


def keep_reduced(b: Any, g: Value, node: Node, keepdims_index: int) -> Value:
    """A reduction's output cotangent with the reduced axes put back as size 1."""
    keepdims = const(node, keepdims_index, False)
    if keepdims:
        return g
    axes = reduced_axes(node)
    if len(axes) == rank_of(node.inputs[0]):
        return b.op("tensor::reshape", g, (1,) * len(axes))
    return b.op("tensor::expand_dims", g, tuple(axes))


def reduced_count(b: Any, node: Node) -> int | Value:
    """How many elements each result of a reduction reduces: a constant when the reduced axes'
    sizes are known, else read from the input at run time (a stack of a list whose length is
    only known then)."""
    x = node.inputs[0]
    shape = x.type.shape  # type: ignore[union-attr]  (reduced_axes checked the rank)
    axes = reduced_axes(node)
    count: int | Value = math.prod(shape[a] for a in axes if shape[a] is not None)
    for a in axes:
        if shape[a] is None:
            count = b.op("tensor::mul", count, b.op("tensor::size", b.fwd(x), a))
    return count


def _over(b: Any, numerator: float, count: int | Value) -> float | Value:
    """``numerator / count`` for a count known now or only at run time."""
    return numerator / count if isinstance(count, int) else b.op("tensor::div", numerator, count)


def _minus(b: Any, count: int | Value, ddof: Any) -> int | Value:
    if isinstance(count, int) and isinstance(ddof, int):
        return count - ddof
    return b.op("tensor::sub", count, ddof)


def _ddof(b: Any, node: Node) -> Any:
    """A var/std's ``ddof``: the constant, or the value (an int argument) read at run time."""
    ddof = const(node, 2, 0)
    return b.fwd(node.inputs[2]) if ddof is NOT_CONSTANT else ddof


def _sum_back(b: Any, g: Value, node: Node) -> Value:
    kept = keep_reduced(b, g, node, 2)
    return b.op("tensor::broadcast_to", kept, shape_arg(b, node.inputs[0]))


def prod_vjp(b, node, gs):
    """The product of the other elements of each one's slice, as PyTorch's ``prod_backward``
    computes it without a division by zero: with no zero in a slice, ``prod / x``; with one,
    the product of the others at the zero and 0 elsewhere; with two or more, 0."""
    g = keep_reduced(b, gs[0], node, 2)
    x = b.fwd(node.inputs[0])
    axes = tuple(reduced_axes(node))
    zero = b.op("tensor::eq", x, 0)
    zeros = b.op("tensor::sum", zero, axes, True)
    rest = b.op("tensor::where", zero, 1, x)  # the zeros as ones
    others = b.op("tensor::prod", rest, axes, True)  # the product of the non-zero elements
    one_zero = b.op("tensor::logical_and", zero, b.op("tensor::eq", zeros, 1))
    at_zero = b.op("tensor::where", one_zero, others, b.op("tensor::zeros_like", x, None))
    local = b.op("tensor::where", b.op("tensor::eq", zeros, 0),
                 b.op("tensor::div", others, rest), at_zero)
    return [product(b, g, local)]


def _mean_back(b: Any, g: Value, node: Node) -> Value:
    kept = keep_reduced(b, g, node, 2)
    scaled = b.op("tensor::mul", kept, _over(b, 1.0, reduced_count(b, node)))
    return b.op("tensor::broadcast_to", scaled, shape_arg(b, node.inputs[0]))


def _centred(b: Any, node: Node) -> Value:
    x = b.fwd(node.inputs[0])
    return b.op("tensor::sub", x, b.op("tensor::mean", x, tuple(reduced_axes(node)), True))


def var_vjp(b, node, gs):
    g = keep_reduced(b, gs[0], node, 3)
    ddof = _ddof(b, node)
    scale = _over(b, 2.0, _minus(b, reduced_count(b, node), ddof))
    return [product(b, g, _centred(b, node), scale)]


def std_vjp(b, node, gs):
    g = keep_reduced(b, gs[0], node, 3)
    ddof = _ddof(b, node)
    y = keep_reduced(b, b.fwd(node.output), node, 3)
    scale = _over(b, 1.0, _minus(b, reduced_count(b, node), ddof))
    return [b.op("tensor::div", product(b, g, _centred(b, node), scale), y)]


def extremum_vjp(b, node, gs):
    """amax / amin: split the cotangent evenly between the elements equal to the result."""
    g = keep_reduced(b, gs[0], node, 2)
    y = keep_reduced(b, b.fwd(node.output), node, 2)
    x = b.fwd(node.inputs[0])
    dtype = node.inputs[0].type.dtype  # type: ignore[union-attr]
    equal = b.op("tensor::eq", x, y)
    if dtype is not None:
        hit = b.op("tensor::astype", equal, dtype)
    else:  # a dtype known only at run time (items of a list of several types): x's own
        hit = b.op("tensor::where", equal, b.op("tensor::ones_like", x, None),
                   b.op("tensor::zeros_like", x, None))
    count = b.op("tensor::sum", hit, tuple(reduced_axes(node)), True)
    return [b.op("tensor::div", product(b, g, hit), count)]


REDUCTION_RULES: dict[str, Rule] = {
    "tensor::sum": deflinear(_sum_back),
    "tensor::mean": deflinear(_mean_back),
    "tensor::prod": prod_vjp,
    "tensor::var": var_vjp,
    "tensor::std": std_vjp,
    "tensor::amax": extremum_vjp,
    "tensor::amin": extremum_vjp,
}
"""op kind -> VJP rule, for the reductions."""
