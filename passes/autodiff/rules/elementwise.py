"""VJP rules of elementwise ops: broadcasting arithmetic, unary math, clip, where, astype."""

from __future__ import annotations

import math
from typing import Any

from ir.core import Node, Value
from ir.types import TensorType
from passes.autodiff.rules.combinators import (
    Formula,
    Rule,
    defbinary,
    deflinear,
    defunary,
    fwd_input,
    fwd_output,
    product,
    shape_arg,
    unbroadcast,
    unbroadcast_all,
)


# -- broadcasting arithmetic ----------------------------------------------------------------------
def _same(b: Any, g: Value, node: Node) -> Value:
    return g


def _negated(b: Any, g: Value, node: Node) -> Value:
    return b.op("tensor::neg", g)


def _times_input(k: int) -> Formula:
    """``g`` times the forward node's input ``k`` (a product's cotangent for the other input)."""
    return lambda b, g, node: product(b, g, fwd_input(b, node, k))


def _div_dy(b: Any, g: Value, node: Node) -> Value:
    scaled = product(b, g, fwd_output(b, node))
    return b.op("tensor::neg", b.op("tensor::div", scaled, fwd_input(b, node, 1)))


def _mod_dy(b: Any, g: Value, node: Node) -> Value:
    quotient = b.op("tensor::floor", b.op("tensor::div", fwd_input(b, node), fwd_input(b, node, 1)))
    return b.op("tensor::neg", product(b, g, quotient))


def _pow_dx(b: Any, g: Value, node: Node) -> Value:
    """``e * x ** (e - 1)``, 0 where ``e == 0`` (``x ** 0`` is 1 everywhere; the formula is
    ``0 * inf`` at ``x == 0``), as torch's."""
    e = fwd_input(b, node, 1)
    slope = product(b, e, b.op("tensor::pow", fwd_input(b, node), b.op("tensor::sub", e, 1)))
    if e.is_constant and not isinstance(e.constant, bool) and isinstance(e.constant, (int, float)):
        return b.op("tensor::mul", g, slope) if e.constant != 0 else b.op("tensor::mul", g, 0.0)
    return b.op("tensor::mul", g, b.op("tensor::where", b.op("tensor::eq", e, 0), 0.0, slope))


def _pow_dy(b: Any, g: Value, node: Node) -> Value:
    """``x ** e * log(x)``, 0 where ``x == 0`` and ``e >= 0`` (``0 * -inf`` there; the limit
    is 0), as torch's."""
    x = fwd_input(b, node)
    slope = product(b, fwd_output(b, node), b.op("tensor::log", x))
    at_zero = b.op("tensor::logical_and", b.op("tensor::eq", x, 0),
                   b.op("tensor::ge", fwd_input(b, node, 1), 0))
    return b.op("tensor::mul", g, b.op("tensor::where", at_zero, 0.0, slope))


def _chosen_when(comparison: str) -> Formula:
    """minimum / maximum: ``g`` where ``comparison(x, y)`` chose this operand, else 0."""
    def formula(b, g, node):
        x, y = fwd_input(b, node), fwd_input(b, node, 1)
        return b.op("tensor::where", b.op(comparison, x, y), g, 0.0)
    return formula


def where_vjp(b, node, gs):
    """``g`` goes to the operand the condition chose. The condition is read once for both (a
    constant condition would otherwise be made twice), so this rule is not a combination of
    per-operand partials."""
    (g,), (_, x, y) = gs, node.inputs
    cond = fwd_input(b, node)
    gx = b.op("tensor::where", cond, g, 0.0) if b.is_active(x) else None
    gy = b.op("tensor::where", cond, 0.0, g) if b.is_active(y) else None
    return unbroadcast_all(b, node, [None, gx, gy])


BROADCASTING_RULES: dict[str, Rule] = {
    "tensor::add": defbinary(_same, _same),
    "tensor::sub": defbinary(_same, _negated),
    "tensor::mul": defbinary(_times_input(1), _times_input(0)),
    "tensor::div": defbinary(lambda b, g, n: b.op("tensor::div", g, fwd_input(b, n, 1)), _div_dy),
    "tensor::mod": defbinary(_same, _mod_dy),
    "tensor::pow": defbinary(_pow_dx, _pow_dy),
    # the cotangent goes to the operand that was chosen (ties: the first)
    "tensor::minimum": defbinary(_chosen_when("tensor::le"), _chosen_when("tensor::gt")),
    "tensor::maximum": defbinary(_chosen_when("tensor::ge"), _chosen_when("tensor::lt")),
    "tensor::where": where_vjp,
}
"""Broadcasting binary ops, and where."""


# -- unary ----------------------------------------------------------------------------------------
def _x(b: Any, node: Node) -> Value:
    return fwd_input(b, node)


def _y(b: Any, node: Node) -> Value:
    return fwd_output(b, node)


def _one_minus(b: Any, v: Value) -> Value:
    return b.op("tensor::sub", 1.0, v)


def _gelu_slope(b: Any, x: Value) -> Value:
    cdf = product(b, b.op("tensor::add", b.op("tensor::erf", product(b, x, 1 / math.sqrt(2))),
                          1.0), 0.5)
    pdf = product(b, b.op("tensor::exp", product(b, b.op("tensor::square", x), -0.5)),
                  1 / math.sqrt(2 * math.pi))
    return b.op("tensor::add", cdf, product(b, x, pdf))


UNARY: dict[str, Formula] = {
    "tensor::abs": lambda b, g, n: product(b, g, b.op("tensor::sign", _x(b, n))),
    "tensor::relu": lambda b, g, n: b.op("tensor::where",
                                         b.op("tensor::gt", _x(b, n), 0.0), g, 0.0),
    "tensor::square": lambda b, g, n: product(b, g, _x(b, n), 2.0),
    "tensor::exp": lambda b, g, n: product(b, g, _y(b, n)),
    "tensor::log": lambda b, g, n: b.op("tensor::div", g, _x(b, n)),
    "tensor::log1p": lambda b, g, n: b.op("tensor::div", g, b.op("tensor::add", _x(b, n), 1.0)),
    "tensor::expm1": lambda b, g, n: product(b, g, b.op("tensor::add", _y(b, n), 1.0)),
    "tensor::sqrt": lambda b, g, n: b.op("tensor::div", g, product(b, _y(b, n), 2.0)),
    "tensor::rsqrt": lambda b, g, n: product(b, g, _y(b, n), _y(b, n), _y(b, n), -0.5),
    "tensor::tanh": lambda b, g, n: product(b, g, _one_minus(b, product(b, _y(b, n), _y(b, n)))),
    "tensor::sigmoid": lambda b, g, n: product(b, g, _y(b, n), _one_minus(b, _y(b, n))),
    "tensor::sin": lambda b, g, n: product(b, g, b.op("tensor::cos", _x(b, n))),
    "tensor::cos": lambda b, g, n: b.op("tensor::neg",
                                        product(b, g, b.op("tensor::sin", _x(b, n)))),
    "tensor::reciprocal": lambda b, g, n: b.op("tensor::neg", product(b, g, _y(b, n), _y(b, n))),
    "tensor::erf": lambda b, g, n: product(b, g, 2.0 / math.sqrt(math.pi), b.op(
        "tensor::exp", b.op("tensor::neg", b.op("tensor::square", _x(b, n))))),
    "tensor::softplus": lambda b, g, n: product(b, g, b.op("tensor::sigmoid", _x(b, n))),
    "tensor::exp2": lambda b, g, n: product(b, g, _y(b, n), math.log(2.0)),
    "tensor::log2": lambda b, g, n: b.op("tensor::div", g, product(b, _x(b, n), math.log(2.0))),
    "tensor::log10": lambda b, g, n: b.op("tensor::div", g,
                                          product(b, _x(b, n), math.log(10.0))),
    "tensor::tan": lambda b, g, n: product(b, g, b.op("tensor::add", b.op(
        "tensor::square", _y(b, n)), 1.0)),
    "tensor::arcsin": lambda b, g, n: product(b, g, b.op("tensor::rsqrt", _one_minus(
        b, b.op("tensor::square", _x(b, n))))),
    "tensor::arccos": lambda b, g, n: b.op("tensor::neg", product(b, g, b.op(
        "tensor::rsqrt", _one_minus(b, b.op("tensor::square", _x(b, n)))))),
    "tensor::arctan": lambda b, g, n: b.op("tensor::div", g, b.op("tensor::add", b.op(
        "tensor::square", _x(b, n)), 1.0)),
    "tensor::sinh": lambda b, g, n: product(b, g, b.op("tensor::cosh", _x(b, n))),
    "tensor::cosh": lambda b, g, n: product(b, g, b.op("tensor::sinh", _x(b, n))),
    "tensor::arcsinh": lambda b, g, n: product(b, g, b.op("tensor::rsqrt", b.op(
        "tensor::add", b.op("tensor::square", _x(b, n)), 1.0))),
    "tensor::arccosh": lambda b, g, n: product(b, g, b.op("tensor::rsqrt", b.op(
        "tensor::sub", b.op("tensor::square", _x(b, n)), 1.0))),
    "tensor::arctanh": lambda b, g, n: b.op("tensor::div", g, _one_minus(
        b, b.op("tensor::square", _x(b, n)))),
    "tensor::gelu": lambda b, g, n: product(b, g, _gelu_slope(b, _x(b, n))),
}
"""Nonlinear elementwise ops of one input: ``g * f'(x)``."""


def _contiguous_back(b: Any, g: Value, node: Node) -> Value:
    """``g`` itself, back in the input's shape where a 0-d input became (1,)."""
    t = node.inputs[0].type
    if isinstance(t, TensorType) and t.shape is not None and len(t.shape) > 0:
        return g
    return b.op("tensor::reshape", g, shape_arg(b, node.inputs[0]))


def _astype_back(b: Any, g: Value, node: Node) -> Value:
    """The cotangent in the input's dtype (as it is when that is only known at run time)."""
    x = node.inputs[0]
    if not isinstance(x.type, TensorType) or x.type.dtype is None:
        return g
    return b.op("tensor::astype", g, x.type.dtype)


def clip_vjp(b, node, gs):
    """``g`` goes to ``x`` where it is inside the bounds, to a bound where ``x`` is beyond it; a
    bound given as None takes no part. Where ``lo > hi`` numpy's clip is ``hi`` (it is
    ``minimum(maximum(x, lo), hi)``): all of ``g`` goes to ``hi`` there."""
    (g,), (x, lo, hi), out = gs, node.inputs, node.output
    X = b.fwd(x)
    inside = None
    grads: list[Value | None] = [None, None, None]
    both = not any(v.is_constant and v.constant is None for v in (lo, hi))
    crossed = b.op("tensor::gt", b.fwd(lo), b.fwd(hi)) if both and (
        b.is_active(lo) or b.is_active(hi)) else None
    for k, (bound, outside_kind, inside_kind) in enumerate(
            ((lo, "tensor::lt", "tensor::ge"), (hi, "tensor::gt", "tensor::le")), start=1):
        if bound.is_constant and bound.constant is None:
            continue
        B = b.fwd(bound)
        keep = b.op(inside_kind, X, B)
        inside = keep if inside is None else b.op("tensor::logical_and", inside, keep)
        if b.is_active(bound):
            beyond = b.op(outside_kind, X, B)
            if crossed is not None:
                beyond = b.op("tensor::logical_or", beyond, crossed) if k == 2 else \
                    b.op("tensor::logical_and", beyond, b.op("tensor::logical_not", crossed))
            grads[k] = unbroadcast(b, b.op("tensor::where", beyond, g, 0.0), bound, out)
    gx = g if inside is None else b.op("tensor::where", inside, g, 0.0)
    grads[0] = unbroadcast(b, gx, x, out) if b.is_active(x) else None
    return grads


ELEMENTWISE_RULES: dict[str, Rule] = BROADCASTING_RULES | {
    **{kind: defunary(derivative) for kind, derivative in UNARY.items()},
    "tensor::neg": deflinear(_negated),
    "tensor::copy": deflinear(_same),
    "tensor::contiguous": deflinear(_contiguous_back),
    "tensor::astype": deflinear(_astype_back),
    "tensor::clip": clip_vjp,
}
"""op kind -> VJP rule, for the elementwise ops."""
