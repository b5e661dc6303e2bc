"""VJP rules: for each differentiable op kind, how input cotangents follow from output cotangents.

A rule is ``rule(b, node, gs) -> [cotangent per input]``: ``b`` is the backward builder
(``passes.autodiff.context.BlockGrad``: ``b.op(kind, *args)`` emits an op, ``b.fwd(v)`` reads a
forward value, ``b.zeros(v)``, ``b.is_active(v)``), ``node`` the forward node and ``gs`` the
cotangents of its outputs (None where zero; at least one is not None). A rule returns None for an
input that gets no gradient. Ops whose outputs never carry a derivative are in
``NON_DIFFERENTIABLE``. Structure ops (tuples, lists, control flow, stack/cat/unbind) are handled
by the graph transformation itself (``grad.STRUCTURE_VJPS``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ir.core import Node, Value
from ir.errors import IRError
from ir.registry import NOT_CONSTANT, all_ops, const, spelling
from ir.types import TensorType

Rule = Callable[[Any, Node, list[Any]], list[Any] | None]

NON_DIFFERENTIABLE: frozenset[str] = frozenset(
    op.kind for op in all_ops() if op.has_zero_derivative)
"""Ops whose results are constant almost everywhere or not numbers: no derivative flows (the
registry's ``zero_derivative`` trait)."""


# -- helpers --------------------------------------------------------------------------------------
def static_shape(v: Value) -> tuple[int, ...] | None:
    t = v.type
    if not isinstance(t, TensorType) or t.shape is None or None in t.shape:
        return None
    return tuple(t.shape)  # type: ignore[arg-type]


def rank_of(v: Value) -> int:
    t = v.type
    if not isinstance(t, TensorType) or t.shape is None:
        raise IRError(f"cannot differentiate {spelling(v.node.kind)} of a value whose number "
                      "of dimensions is not known when compiling (its shape changes from one "
                      "loop step to the next, or it comes from a list of arrays of several "
                      "shapes): keep its shape the same")
    return len(t.shape)


def shape_arg(b: Any, v: Value) -> Any:
    """``v``'s shape as an op argument: a constant when known, else read at run time."""
    shape = static_shape(v)
    return shape if shape is not None else b.op("tensor::shape", b.fwd(v))


def unbroadcast(b: Any, g: Value | None, x: Value, y: Value) -> Value | None:
    """``g`` (shaped like ``y``) summed back to ``x``'s shape; None when ``x`` takes no gradient."""
    if g is None or not isinstance(x.type, TensorType) or not b.is_active(x):
        return None
    sx = static_shape(x)
    if sx is not None and sx == static_shape(y):
        return g
    return b.op("tensor::sum_to", g, shape_arg(b, x))


def _mul(b: Any, *xs: Any) -> Value:
    out = xs[0]
    for x in xs[1:]:
        out = b.op("tensor::mul", out, x)
    return out


# -- arithmetic -----------------------------------------------------------------------------------
def add_vjp(b, node, gs):
    (g,), (x, y), out = gs, node.inputs, node.output
    return [unbroadcast(b, g, x, out), unbroadcast(b, g, y, out)]


def sub_vjp(b, node, gs):
    (g,), (x, y), out = gs, node.inputs, node.output
    neg = b.op("tensor::neg", g) if b.is_active(y) else None
    return [unbroadcast(b, g, x, out), unbroadcast(b, neg, y, out)]


def mul_vjp(b, node, gs):
    (g,), (x, y), out = gs, node.inputs, node.output
    gx = _mul(b, g, b.fwd(y)) if b.is_active(x) else None
    gy = _mul(b, g, b.fwd(x)) if b.is_active(y) else None
    return [unbroadcast(b, gx, x, out), unbroadcast(b, gy, y, out)]


def div_vjp(b, node, gs):
    (g,), (x, y), out = gs, node.inputs, node.output
    gx = b.op("tensor::div", g, b.fwd(y)) if b.is_active(x) else None
    gy = None
    if b.is_active(y):
        gy = b.op("tensor::neg", b.op("tensor::div", _mul(b, g, b.fwd(out)), b.fwd(y)))
    return [unbroadcast(b, gx, x, out), unbroadcast(b, gy, y, out)]


def mod_vjp(b, node, gs):
    (g,), (x, y), out = gs, node.inputs, node.output
    gy = None
    if b.is_active(y):
        q = b.op("tensor::floor", b.op("tensor::div", b.fwd(x), b.fwd(y)))
        gy = b.op("tensor::neg", _mul(b, g, q))
    return [unbroadcast(b, g, x, out), unbroadcast(b, gy, y, out)]


def pow_vjp(b, node, gs):
    (g,), (x, y), out = gs, node.inputs, node.output
    gx = gy = None
    if b.is_active(x):
        e = b.fwd(y)
        gx = _mul(b, g, e, b.op("tensor::pow", b.fwd(x), b.op("tensor::sub", e, 1)))
    if b.is_active(y):
        gy = _mul(b, g, b.fwd(out), b.op("tensor::log", b.fwd(x)))
    return [unbroadcast(b, gx, x, out), unbroadcast(b, gy, y, out)]


def _select_vjp(first_wins: str, second_wins: str) -> Rule:
    """minimum / maximum: the cotangent goes to the operand that was chosen (ties: the first)."""
    def rule(b, node, gs):
        (g,), (x, y), out = gs, node.inputs, node.output
        X, Y = b.fwd(x), b.fwd(y)
        gx = b.op("tensor::where", b.op(first_wins, X, Y), g, 0.0) if b.is_active(x) else None
        gy = b.op("tensor::where", b.op(second_wins, X, Y), g, 0.0) if b.is_active(y) else None
        return [unbroadcast(b, gx, x, out), unbroadcast(b, gy, y, out)]
    return rule


# -- unary ----------------------------------------------------------------------------------------
def _unary(formula: Callable[[Any, Value, Node], Value]) -> Rule:
    """A rule from ``formula(b, g, node) -> cotangent of the single input``."""
    def rule(b, node, gs):
        return [formula(b, gs[0], node)]
    return rule


def _x(b: Any, node: Node) -> Value:
    return b.fwd(node.inputs[0])


def _y(b: Any, node: Node) -> Value:
    return b.fwd(node.output)


def _one_minus(b: Any, v: Value) -> Value:
    return b.op("tensor::sub", 1.0, v)


UNARY: dict[str, Callable[[Any, Value, Node], Value]] = {
    "tensor::neg": lambda b, g, n: b.op("tensor::neg", g),
    "tensor::abs": lambda b, g, n: _mul(b, g, b.op("tensor::sign", _x(b, n))),
    "tensor::relu": lambda b, g, n: b.op("tensor::where",
                                         b.op("tensor::gt", _x(b, n), 0.0), g, 0.0),
    "tensor::square": lambda b, g, n: _mul(b, g, _x(b, n), 2.0),
    "tensor::exp": lambda b, g, n: _mul(b, g, _y(b, n)),
    "tensor::log": lambda b, g, n: b.op("tensor::div", g, _x(b, n)),
    "tensor::log1p": lambda b, g, n: b.op("tensor::div", g, b.op("tensor::add", _x(b, n), 1.0)),
    "tensor::expm1": lambda b, g, n: _mul(b, g, b.op("tensor::add", _y(b, n), 1.0)),
    "tensor::sqrt": lambda b, g, n: b.op("tensor::div", g, _mul(b, _y(b, n), 2.0)),
    "tensor::rsqrt": lambda b, g, n: _mul(b, g, _y(b, n), _y(b, n), _y(b, n), -0.5),
    "tensor::tanh": lambda b, g, n: _mul(b, g, _one_minus(b, _mul(b, _y(b, n), _y(b, n)))),
    "tensor::sigmoid": lambda b, g, n: _mul(b, g, _y(b, n), _one_minus(b, _y(b, n))),
    "tensor::sin": lambda b, g, n: _mul(b, g, b.op("tensor::cos", _x(b, n))),
    "tensor::cos": lambda b, g, n: b.op("tensor::neg", _mul(b, g, b.op("tensor::sin", _x(b, n)))),
    "tensor::reciprocal": lambda b, g, n: b.op("tensor::neg", _mul(b, g, _y(b, n), _y(b, n))),
    "tensor::erf": lambda b, g, n: _mul(b, g, 2.0 / math.sqrt(math.pi), b.op(
        "tensor::exp", b.op("tensor::neg", b.op("tensor::square", _x(b, n))))),
    "tensor::softplus": lambda b, g, n: _mul(b, g, b.op("tensor::sigmoid", _x(b, n))),
    "tensor::gelu": lambda b, g, n: _mul(b, g, _gelu_slope(b, _x(b, n))),
}


def _gelu_slope(b: Any, x: Value) -> Value:
    cdf = _mul(b, b.op("tensor::add", b.op("tensor::erf", _mul(b, x, 1 / math.sqrt(2))), 1.0), 0.5)
    pdf = _mul(b, b.op("tensor::exp", _mul(b, b.op("tensor::square", x), -0.5)),
               1 / math.sqrt(2 * math.pi))
    return b.op("tensor::add", cdf, _mul(b, x, pdf))


def clip_vjp(b, node, gs):
    (g,), (x, lo, hi), out = gs, node.inputs, node.output
    X = b.fwd(x)
    inside = None
    grads: list[Value | None] = [None, None, None]
    for k, (bound, outside_kind, inside_kind) in enumerate(
            ((lo, "tensor::lt", "tensor::ge"), (hi, "tensor::gt", "tensor::le")), start=1):
        if bound.is_constant and bound.constant is None:
            continue
        B = b.fwd(bound)
        keep = b.op(inside_kind, X, B)
        inside = keep if inside is None else b.op("tensor::logical_and", inside, keep)
        if b.is_active(bound):
            grads[k] = unbroadcast(b, b.op("tensor::where", b.op(outside_kind, X, B), g, 0.0),
                                   bound, out)
    gx = g if inside is None else b.op("tensor::where", inside, g, 0.0)
    grads[0] = unbroadcast(b, gx, x, out)
    return grads


def where_vjp(b, node, gs):
    (g,), (c, x, y), out = gs, node.inputs, node.output
    C = b.fwd(c)
    gx = b.op("tensor::where", C, g, 0.0) if b.is_active(x) else None
    gy = b.op("tensor::where", C, 0.0, g) if b.is_active(y) else None
    return [None, unbroadcast(b, gx, x, out), unbroadcast(b, gy, y, out)]


def astype_vjp(b, node, gs):
    x = node.inputs[0]
    if not isinstance(x.type, TensorType) or x.type.dtype is None:
        return [gs[0]]
    return [b.op("tensor::astype", gs[0], x.type.dtype)]


# -- shape ops ------------------------------------------------------------------------------------
def transpose_vjp(b, node, gs):
    axes = const(node, 1, None)
    if axes is None:
        return [b.op("tensor::transpose", gs[0], None)]
    if axes is NOT_CONSTANT:
        raise IRError("cannot differentiate np.transpose with axes not known when compiling: "
                      "write the axes as constants")
    rank = rank_of(node.inputs[0])
    norm = [int(a) % rank for a in (axes if isinstance(axes, (tuple, list)) else (axes,))]
    inverse = tuple(sorted(range(rank), key=lambda k: norm[k]))
    return [b.op("tensor::transpose", gs[0], inverse)]


def reshape_like_input(b, node, gs):
    return [b.op("tensor::reshape", gs[0], shape_arg(b, node.inputs[0]))]


def select_vjp(b, node, gs):
    a, axis, index = node.inputs
    return [b.op("tensor::select_backward", gs[0], shape_arg(b, a), b.fwd(axis), b.fwd(index))]


def slice_vjp(b, node, gs):
    a, *rest = node.inputs
    return [b.op("tensor::slice_backward", gs[0], shape_arg(b, a), *[b.fwd(v) for v in rest])]


def pieces_vjp(b, node, gs):
    """chunk / split: concatenate the pieces' cotangents (zeros for pieces without one)."""
    axis = const(node, 2, 0)
    if axis is NOT_CONSTANT:
        raise IRError(f"cannot differentiate {spelling(node.kind)} along an axis not known "
                      "when compiling: write the axis as a constant")
    items = [g if g is not None else b.zeros(v) for g, v in zip(gs, node.outputs)]
    from ir.types import ListType
    lst = b.emit("prim::ListConstruct", *items, types=[ListType(items[0].type)]).output
    return [b.op("tensor::cat", lst, int(axis))]


def sum_to_vjp(b, node, gs):
    return [b.op("tensor::broadcast_to", gs[0], shape_arg(b, node.inputs[0]))]


def broadcast_to_vjp(b, node, gs):
    return [b.op("tensor::sum_to", gs[0], shape_arg(b, node.inputs[0]))]


def select_backward_vjp(b, node, gs):
    _, _, axis, index = node.inputs
    return [b.op("tensor::select", gs[0], b.fwd(axis), b.fwd(index))]


def slice_backward_vjp(b, node, gs):
    _, _, *rest = node.inputs
    return [b.op("tensor::slice", gs[0], *[b.fwd(v) for v in rest])]


# -- reductions -----------------------------------------------------------------------------------
def reduced_axes(node: Node) -> list[int]:
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
    return count - ddof if isinstance(count, int) else b.op("tensor::sub", count, ddof)


def sum_vjp(b, node, gs):
    g = keep_reduced(b, gs[0], node, 2)
    return [b.op("tensor::broadcast_to", g, shape_arg(b, node.inputs[0]))]


def mean_vjp(b, node, gs):
    g = keep_reduced(b, gs[0], node, 2)
    scaled = b.op("tensor::mul", g, _over(b, 1.0, reduced_count(b, node)))
    return [b.op("tensor::broadcast_to", scaled, shape_arg(b, node.inputs[0]))]


def _centred(b: Any, node: Node) -> Value:
    x = b.fwd(node.inputs[0])
    return b.op("tensor::sub", x, b.op("tensor::mean", x, tuple(reduced_axes(node)), True))


def var_vjp(b, node, gs):
    g = keep_reduced(b, gs[0], node, 3)
    ddof = const(node, 2, 0)
    scale = _over(b, 2.0, _minus(b, reduced_count(b, node), ddof))
    return [_mul(b, g, _centred(b, node), scale)]


def std_vjp(b, node, gs):
    g = keep_reduced(b, gs[0], node, 3)
    ddof = const(node, 2, 0)
    y = keep_reduced(b, b.fwd(node.output), node, 3)
    scale = _over(b, 1.0, _minus(b, reduced_count(b, node), ddof))
    return [b.op("tensor::div", _mul(b, g, _centred(b, node), scale), y)]


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
    return [b.op("tensor::div", _mul(b, g, hit), count)]


def softmax_vjp(b, node, gs):
    g, y, axis = gs[0], b.fwd(node.output), b.fwd(node.inputs[1])
    dot = b.op("tensor::sum", _mul(b, g, y), axis, True)
    return [_mul(b, y, b.op("tensor::sub", g, dot))]


def log_softmax_vjp(b, node, gs):
    g, y, axis = gs[0], b.fwd(node.output), b.fwd(node.inputs[1])
    total = b.op("tensor::sum", g, axis, True)
    return [b.op("tensor::sub", g, _mul(b, b.op("tensor::exp", y), total))]


# -- linear algebra -------------------------------------------------------------------------------
def swap_last(b: Any, v: Value) -> Value:
    rank = rank_of(v)
    return b.op("tensor::transpose", v, tuple(range(rank - 2)) + (rank - 1, rank - 2))


def matmul_grads(b: Any, g: Value, A: Value, B: Value, ra: int, rb: int,
                 want_a: bool, want_b: bool) -> tuple[Value | None, Value | None]:
    """Cotangents of ``A @ B`` (ranks ``ra``, ``rb``), before summing out broadcast batch axes;
    1-D operands are handled by numpy's promotion to a row / column."""
    A2 = A if ra >= 2 else b.op("tensor::expand_dims", A, 0)
    B2 = B if rb >= 2 else b.op("tensor::expand_dims", B, 1)
    G = g
    if ra == 1 and rb == 1:
        G = b.op("tensor::reshape", g, (1, 1))
    elif ra == 1:
        G = b.op("tensor::expand_dims", g, -2)
    elif rb == 1:
        G = b.op("tensor::expand_dims", g, -1)
    ga = gb = None
    if want_a:
        ga = b.op("tensor::matmul", G, swap_last(b, B2))
        ga = b.op("tensor::squeeze", ga, -2) if ra == 1 else ga
    if want_b:
        gb = b.op("tensor::matmul", swap_last(b, A2), G)
        gb = b.op("tensor::squeeze", gb, -1) if rb == 1 else gb
    return ga, gb


def _sum_to_input(b: Any, g: Value | None, x: Value) -> Value | None:
    if g is None:
        return None
    if static_shape(x) is not None and static_shape(g) == static_shape(x):
        return g
    return b.op("tensor::sum_to", g, shape_arg(b, x))


def matmul_vjp(b, node, gs):
    (g,), (x, y) = gs, node.inputs
    sy = static_shape(y)
    # a weight with a 0-size axis keeps the batched form: reshape(-1, 0) cannot infer the -1
    flat_b = rank_of(x) > 2 and rank_of(y) == 2 and sy is not None and 0 not in sy
    ga, gb = matmul_grads(b, g, b.fwd(x), b.fwd(y), rank_of(x), rank_of(y),
                          b.is_active(x), b.is_active(y) and not flat_b)
    if flat_b and b.is_active(y):
        gb = _flat_weight_grad(b, g, x, y)
    return [_sum_to_input(b, ga, x), _sum_to_input(b, gb, y)]


def _flat_weight_grad(b: Any, g: Value, x: Value, w: Value) -> Value:
    """The cotangent of the 2-D ``w`` in ``x @ w`` for a batched ``x`` (..., m, k): one matmul
    with the batch folded into the contraction, ``x2.T @ g2``, instead of a product per batch
    element summed afterwards (a (batch, k, n) temporary and many small matmuls)."""
    k, n = static_shape(w)  # type: ignore[misc]
    x2 = b.op("tensor::reshape", b.fwd(x), (-1, k))
    g2 = b.op("tensor::reshape", g, (-1, n))
    return b.op("tensor::matmul", b.op("tensor::transpose", x2, (1, 0)), g2)


def linear_vjp(b, node, gs):
    """x @ w.T + bias with a 2-D weight (out, in): the weight's cotangent is one matmul of the
    flattened batch, ``g2.T @ x2``."""
    g = gs[0]
    x, w = node.inputs[0], node.inputs[1]
    if rank_of(w) != 2:
        raise IRError("cannot differentiate ops.linear with a 1-D weight: use matmul")
    grads: list[Value | None] = [None, None]
    if b.is_active(x):
        ga, _ = matmul_grads(b, g, b.fwd(x), b.op("tensor::transpose", b.fwd(w), None),
                             rank_of(x), 2, True, False)
        grads[0] = ga
    if b.is_active(w):
        shape = static_shape(w)
        out, inp = (shape if shape is not None else (-1, -1))
        g2 = b.op("tensor::reshape", g, (-1, out)) if rank_of(x) != 2 else g
        x2 = b.fwd(x)
        x2 = b.op("tensor::reshape", x2, (-1, inp)) if rank_of(x) != 2 else x2
        grads[1] = b.op("tensor::matmul", b.op("tensor::transpose", g2, None), x2)
    if len(node.inputs) > 2:
        bias = node.inputs[2]
        grads.append(unbroadcast(b, g, bias, node.output)
                     if isinstance(bias.type, TensorType) else None)
    return grads


def layer_norm_vjp(b, node, gs):
    """One ``layer_norm_backward`` (a native row kernel on the CPU) gives the input's cotangent
    and those of a weight and a bias of the last axis' length. An input that the weight or bias
    broadcasts to more rows is normalised as those rows, so it is broadcast first and its
    cotangent summed back."""
    g, out = gs[0], node.output
    a, w, bias, eps = (list(node.inputs) + [None] * 4)[:4]
    x = b.fwd(a)
    if static_shape(a) is None or static_shape(a) != static_shape(out):
        x = b.op("tensor::broadcast_to", x, shape_arg(b, out))
    has_w = w is not None and isinstance(w.type, TensorType)
    eps_v = b.fwd(eps) if eps is not None else 1e-5
    da, dw, db = b.emit("tensor::layer_norm_backward", g, x, b.fwd(w) if has_w else None,
                        eps_v).outputs
    grads = [_sum_to_input(b, da, a) if b.is_active(a) else None, None, None]
    if has_w and b.is_active(w):
        grads[1] = _row_parameter_grad(
            b, dw, w, lambda: _mul(b, g, b.op("tensor::layer_norm", x, None, None, eps_v)))
    if bias is not None and isinstance(bias.type, TensorType) and b.is_active(bias):
        grads[2] = _row_parameter_grad(b, db, bias, lambda: g)
    return grads


def layer_norm_backward_vjp(b, node, gs):
    """Second derivatives of layer norm. Per row, with ``s = rstd``, ``xhat``, ``d = g * w``
    and the cotangents ``u`` (of da), ``p`` (of dweight), ``q`` (of dbias): da is
    ``s * P(d)`` for the symmetric projection ``P(v) = v - mean(v) - xhat * mean(v * xhat)``,
    so ``g`` gets ``w * s * P(u) + p * xhat + q`` and ``w`` gets ``g * s * P(u)`` summed; ``x``
    gets layer norm's own input cotangent of ``xhat``'s cotangent
    ``-s * (mean(d * xhat) * u + mean(u * xhat) * d) + p * g``, less ``s * mean(u * da) * xhat``
    for the dependence through ``s``. ``s * P(v)`` is ``layer_norm_backward(v, x)[0]``."""
    u, p, q = gs
    g_in, a, w = node.inputs[0], node.inputs[1], node.inputs[2]
    G, X, eps = b.fwd(g_in), b.fwd(a), b.fwd(node.inputs[3])
    has_w = isinstance(w.type, TensorType)
    W = b.fwd(w) if has_w else None

    def mean(v: Value) -> Value:
        return b.op("tensor::mean", v, -1, True)

    def project(v: Value) -> Value:
        return b.emit("tensor::layer_norm_backward", v, X, None, eps).outputs[0]

    xhat = b.op("tensor::layer_norm", X, None, None, eps)
    rstd = b.op("tensor::rsqrt", b.op("tensor::add", b.op("tensor::var", X, -1, 0, True), eps))
    d = _mul(b, G, W) if has_w else G
    g_terms: list[Value] = []
    xhat_terms: list[Value] = []
    through_s = None
    grads: list[Value | None] = [None, None, None, None]
    if u is not None:
        v = project(u)
        g_terms.append(_mul(b, v, W) if has_w else v)
        if has_w and b.is_active(w):
            grads[2] = _sum_to_input(b, _mul(b, G, v), w)
        xhat_terms.append(_mul(b, u, rstd, mean(_mul(b, d, xhat)), -1.0))
        xhat_terms.append(_mul(b, d, rstd, mean(_mul(b, u, xhat)), -1.0))
        through_s = _mul(b, xhat, rstd, mean(_mul(b, u, b.fwd(node.outputs[0]))))
    if p is not None:
        g_terms.append(_mul(b, xhat, p))
        xhat_terms.append(_mul(b, G, p))
    if q is not None:
        g_terms.append(b.op("tensor::broadcast_to", q, shape_arg(b, g_in)))
    if b.is_active(g_in) and g_terms:
        grads[0] = _add_all(b, g_terms)
    if b.is_active(a) and xhat_terms:
        ga = project(_add_all(b, xhat_terms))
        grads[1] = ga if through_s is None else b.op("tensor::sub", ga, through_s)
    return grads


def _add_all(b: Any, values: list[Value]) -> Value:
    out = values[0]
    for v in values[1:]:
        out = b.op("tensor::add", out, v)
    return out


def _row_parameter_grad(b: Any, total: Value, param: Value,
                        per_element: Callable[[], Value]) -> Value:
    """A layer-norm weight's or bias's cotangent: ``total`` (its per-element terms summed over
    the rows) when it is one row of the last axis' length; else the per-element terms summed to
    its shape."""
    shape, row = static_shape(param), static_shape(total)
    if shape and row and shape[-1] == row[0] and all(d == 1 for d in shape[:-1]):
        return total if len(shape) == 1 else b.op("tensor::reshape", total, shape)
    return b.op("tensor::sum_to", per_element(), shape_arg(b, param))


VJP_RULES: dict[str, Rule] = {
    "tensor::add": add_vjp,
    "tensor::sub": sub_vjp,
    "tensor::mul": mul_vjp,
    "tensor::div": div_vjp,
    "tensor::mod": mod_vjp,
    "tensor::pow": pow_vjp,
    "tensor::minimum": _select_vjp("tensor::le", "tensor::gt"),
    "tensor::maximum": _select_vjp("tensor::ge", "tensor::lt"),
    **{kind: _unary(formula) for kind, formula in UNARY.items()},
    "tensor::clip": clip_vjp,
    "tensor::where": where_vjp,
    "tensor::astype": astype_vjp,
    "tensor::transpose": transpose_vjp,
    "tensor::reshape": reshape_like_input,
    "tensor::expand_dims": reshape_like_input,
    "tensor::squeeze": reshape_like_input,
    "tensor::select": select_vjp,
    "tensor::slice": slice_vjp,
    "tensor::chunk": pieces_vjp,
    "tensor::split": pieces_vjp,
    "tensor::sum": sum_vjp,
    "tensor::mean": mean_vjp,
    "tensor::var": var_vjp,
    "tensor::std": std_vjp,
    "tensor::amax": extremum_vjp,
    "tensor::amin": extremum_vjp,
    "tensor::softmax": softmax_vjp,
    "tensor::log_softmax": log_softmax_vjp,
    "tensor::matmul": matmul_vjp,
    "tensor::linear": linear_vjp,
    "tensor::layer_norm": layer_norm_vjp,
    "tensor::layer_norm_backward": layer_norm_backward_vjp,
    "tensor::copy": _unary(lambda b, g, n: g),
    "tensor::sum_to": sum_to_vjp,
    "tensor::broadcast_to": broadcast_to_vjp,
    "tensor::select_backward": select_backward_vjp,
    "tensor::slice_backward": slice_backward_vjp,
}
"""op kind -> VJP rule, for every differentiable op of the registry."""
