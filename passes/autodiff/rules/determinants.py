"""VJP rules of the determinants: ``det`` (Jacobi's formula: the transposed adjugate, singular
matrices included) and ``slogdet`` (the log's: ``inv(A)^T``; the sign's derivative is zero)."""

from __future__ import annotations

from typing import Any

from ir.core import Value
from passes.autodiff.refusals import refuse
from passes.autodiff.rules.combinators import Rule
from passes.autodiff.rules.matmul import swap_last


def _times_inverse_t(b: Any, g: Value, a: Value) -> Value:
    """``g[..., None, None] * inv(a)^T``: a determinant's cotangent, per matrix of a stack."""
    g = b.op("tensor::expand_dims", g, (-2, -1))
    return b.op("tensor::mul", g, swap_last(b, b.op("tensor::inv", b.fwd(a))))


def det_vjp(b, node, gs):
    """The cotangent of ``d = det(A)``: ``g adj(A)^T`` (Jacobi's formula; ``d inv(A)^T`` where
    ``A`` is invertible, and defined where it is not: ``tensor::det_backward``)."""
    (g,), (a,) = gs, node.inputs
    return [b.op("tensor::det_backward", g, b.fwd(a))]


def det_backward_vjp(b, node, gs):
    """A second derivative of ``det``: refused."""
    raise refuse("cannot differentiate the gradient of np.linalg.det (a second derivative "
                 "of a determinant is not supported)", node)


def slogdet_vjp(b, node, gs):
    """The cotangent of ``(sign, l) = slogdet(A)``: ``g_l inv(A)^T`` (the sign's derivative
    is zero where it is defined)."""
    g = gs[1]
    return [None if g is None else _times_inverse_t(b, g, node.inputs[0])]


DETERMINANT_RULES: dict[str, Rule] = {
    "tensor::det": det_vjp,
    "tensor::det_backward": det_backward_vjp,
    "tensor::slogdet": slogdet_vjp,
}
"""op kind -> VJP rule, for the determinants."""
