"""VJP rules of the neural-network ops: softmax, log_softmax, layer norm and its backward (for
second derivatives)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ir.core import Value
from ir.types import TensorType
from passes.autodiff.rules.combinators import (
    Rule,
    product,
    shape_arg,
    static_shape,
    total,
    unbroadcast,
)


def softmax_vjp(b, node, gs):
    g, y, axis = gs[0], b.fwd(node.output), b.fwd(node.inputs[1])
    dot = b.op("tensor::sum", product(b, g, y), axis, True)
    return [product(b, y, b.op("tensor::sub", g, dot))]


def log_softmax_vjp(b, node, gs):
    g, y, axis = gs[0], b.fwd(node.output), b.fwd(node.inputs[1])
    summed = b.op("tensor::sum", g, axis, True)
    return [b.op("tensor::sub", g, product(b, b.op("tensor::exp", y), summed))]


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
    grads = [unbroadcast(b, da, a) if b.is_active(a) else None, None, None]
    if has_w and b.is_active(w):
        grads[1] = _row_parameter_grad(
            b, dw, w, lambda: product(b, g, b.op("tensor::layer_norm", x, None, None, eps_v)))
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
    d = product(b, G, W) if has_w else G
    g_terms: list[Value] = []
    xhat_terms: list[Value] = []
    through_s = None
    grads: list[Value | None] = [None, None, None, None]
    if u is not None:
        v = project(u)
        g_terms.append(product(b, v, W) if has_w else v)
        if has_w and b.is_active(w):
            grads[2] = unbroadcast(b, product(b, G, v), w)
        xhat_terms.append(product(b, u, rstd, mean(product(b, d, xhat)), -1.0))
        xhat_terms.append(product(b, d, rstd, mean(product(b, u, xhat)), -1.0))
        through_s = product(b, xhat, rstd, mean(product(b, u, b.fwd(node.outputs[0]))))
    if p is not None:
        g_terms.append(product(b, xhat, p))
        xhat_terms.append(product(b, G, p))
    if q is not None:
        g_terms.append(b.op("tensor::broadcast_to", q, shape_arg(b, g_in)))
    if b.is_active(g_in) and g_terms:
        grads[0] = total(b, g_terms)
    if b.is_active(a) and xhat_terms:
        ga = project(total(b, xhat_terms))
        grads[1] = ga if through_s is None else b.op("tensor::sub", ga, through_s)
    return grads


def _row_parameter_grad(b: Any, summed: Value, param: Value,
                        per_element: Callable[[], Value]) -> Value:
    """A layer-norm weight's or bias's cotangent: ``summed`` (its per-element terms summed over
    the rows) when it is one row of the last axis' length; else the per-element terms summed to
    its shape."""
    shape, row = static_shape(param), static_shape(summed)
    if shape and row and shape[-1] == row[0] and all(d == 1 for d in shape[:-1]):
        return summed if len(shape) == 1 else b.op("tensor::reshape", summed, shape)
    return b.op("tensor::sum_to", per_element(), shape_arg(b, param))


NN_RULES: dict[str, Rule] = {
    "tensor::softmax": softmax_vjp,
    "tensor::log_softmax": log_softmax_vjp,
    "tensor::layer_norm": layer_norm_vjp,
    "tensor::layer_norm_backward": layer_norm_backward_vjp,
}
"""op kind -> VJP rule, for the neural-network ops."""
