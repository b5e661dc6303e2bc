"""VJP rules of the matrix products: matmul (numpy's broadcasting and 1-D promotion),
``ops.linear``, ``np.einsum`` (each operand's cotangent another einsum) and ``np.tensordot``
(each another tensordot, its axes put back in the operand's order)."""

from __future__ import annotations

import re
from typing import Any

from ir.core import Value
from ir.errors import IRError
from ir.ops.linalg import ELLIPSIS, einsum_labels, tensordot_axes
from ir.registry import const
from passes.autodiff.rules.combinators import Rule, rank_of, static_shape, unbroadcast


def swap_last(b: Any, v: Value) -> Value:
    """``v`` with its last two axes swapped."""
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


def matmul_vjp(b, node, gs):
    (g,), (x, y) = gs, node.inputs
    sy = static_shape(y)
    # a weight with a 0-size axis keeps the batched form: reshape(-1, 0) cannot infer the -1
    flat_b = rank_of(x) > 2 and rank_of(y) == 2 and sy is not None and 0 not in sy
    ga, gb = matmul_grads(b, g, b.fwd(x), b.fwd(y), rank_of(x), rank_of(y),
                          b.is_active(x), b.is_active(y) and not flat_b)
    if flat_b and b.is_active(y):
        gb = _flat_weight_grad(b, g, x, y)
    return [unbroadcast(b, ga, x), unbroadcast(b, gb, y)]


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
        grads.append(unbroadcast(b, g, bias, node.output) if b.is_active(bias) else None)
    return grads


def matmul_sum_vjp(b, node, gs):
    """``a1 @ b1 + a2 @ b2 + ...`` of matrices: each pair's cotangents, as a matmul's."""
    (g,), grads = gs, []
    pairs = zip(node.inputs[::2], node.inputs[1::2])
    for x, y in pairs:
        ga, gb = matmul_grads(b, g, b.fwd(x), b.fwd(y), 2, 2, b.is_active(x), b.is_active(y))
        grads += [unbroadcast(b, ga, x), unbroadcast(b, gb, y)]
    return grads


def _subscript(labels: str) -> str:
    return re.sub(r"\.+", "...", labels)


def _same_sizes(labels: list[str], operands: list[Value], mine: str) -> bool:
    """Whether every label of ``mine`` has one size known when compiling in every operand
    (none broadcast from size 1)."""
    sizes: dict[str, set[int]] = {}
    for names, x in zip(labels, operands):
        shape = static_shape(x)
        if shape is None:
            return False
        for c, d in zip(names, shape):
            if c != ELLIPSIS:
                sizes.setdefault(c, set()).add(d)
    return all(len(sizes.get(c, ())) <= 1 for c in mine if c != ELLIPSIS)


def einsum_vjp(b, node, gs):
    """The cotangent of operand k of ``np.einsum(spec, *xs)``: ``np.einsum(out, *others ->
    labels_k)`` of the output's cotangent and the other operands, times ones shaped like
    operand k where it has labels no other subscript names (summed out of it alone), summed
    back where its axes of size 1 were broadcast."""
    (g,), operands, optimize = gs, node.inputs[2:], const(node, 1)
    ranks = [rank_of(x) for x in operands]
    labels, out = einsum_labels(const(node, 0), ranks)
    widest = max(mine.count(ELLIPSIS) for mine in labels)
    grads: list[Value | None] = [None, None]
    for k, x in enumerate(operands):
        if not b.is_active(x):
            grads.append(None)
            continue
        mine = labels[k]
        named = mine.replace(ELLIPSIS, "")
        if len(set(named)) != len(named):
            raise IRError(f"cannot differentiate np.einsum with a label repeated within one "
                          f"operand ({const(node, 0)!r}: a diagonal); multiply by np.eye "
                          f"instead", node)
        if ELLIPSIS in "".join(labels) and mine.count(ELLIPSIS) != widest:
            raise IRError(f"cannot differentiate np.einsum whose '...' stands for different "
                          f"numbers of axes in its operands ({const(node, 0)!r})", node)
        others = [j for j in range(len(operands)) if j != k]
        seen = set(out) | {c for j in others for c in labels[j]}
        subs = [_subscript(out)] + [_subscript(labels[j]) for j in others]
        args = [g] + [b.fwd(operands[j]) for j in others]
        if not set(mine) <= seen or not _same_sizes(labels, operands, mine):
            # axes summed out of this operand alone, or of size 1 elsewhere: ones carry them
            subs.append(_subscript(mine))
            args.append(b.op("tensor::ones_like", b.fwd(x), None))
        grad = b.op("tensor::einsum", ",".join(subs) + "->" + _subscript(mine), optimize, *args)
        grads.append(unbroadcast(b, grad, x))
    return grads


def tensordot_vjp(b, node, gs):
    """The cotangents of ``C = np.tensordot(A, B, axes)``, whose axes are A's free ones then
    B's: ``tensordot(dC, B)`` over B's free axes gives A's free axes then its contracted ones
    (in B's order), ``tensordot(A, dC)`` over A's free axes B's contracted ones (in A's order)
    then its free ones; each transposed back to its operand's axes."""
    (g,), (A, B) = gs, node.inputs[:2]
    ra, rb = rank_of(A), rank_of(B)
    along_a, along_b = tensordot_axes(const(node, 2), ra, rb)
    free_a = [k for k in range(ra) if k not in along_a]
    free_b = [k for k in range(rb) if k not in along_b]
    grads: list[Value | None] = [None, None, None, None]
    if b.is_active(A):
        partner = dict(zip(along_a, along_b))
        order = sorted(along_b)
        at = [free_a.index(k) if k in free_a else len(free_a) + order.index(partner[k])
              for k in range(ra)]
        axes = (tuple(range(len(free_a), len(free_a) + len(free_b))), tuple(free_b))
        grads[0] = _in_order(b, b.op("tensor::tensordot", g, b.fwd(B), axes, False), at)
    if b.is_active(B):
        partner = dict(zip(along_b, along_a))
        order = sorted(along_a)
        at = [len(along_a) + free_b.index(k) if k in free_b else order.index(partner[k])
              for k in range(rb)]
        axes = (tuple(free_a), tuple(range(len(free_a))))
        grads[1] = _in_order(b, b.op("tensor::tensordot", b.fwd(A), g, axes, False), at)
    return grads


def _in_order(b: Any, v: Value, at: list[int]) -> Value:
    """``v`` transposed so that its axis k is the one now at ``at[k]``."""
    return v if at == sorted(at) else b.op("tensor::transpose", v, tuple(at))


def inv_vjp(b, node, gs):
    """The cotangent of ``Y = inv(A)``: ``-Y^T g Y^T`` (per matrix of a stack)."""
    (g,), y = gs, b.fwd(node.output)
    yt = swap_last(b, y)
    return [b.op("tensor::neg", b.op("tensor::matmul", b.op("tensor::matmul", yt, g), yt))]


def solve_vjp(b, node, gs):
    """The cotangents of ``X = solve(A, B)``: ``G_B = solve(A^T, g)`` and ``G_A = -G_B X^T``
    (for a 1-D ``B`` the outer product of the two vectors), each summed over the stack axes
    its operand was broadcast along."""
    (g,), (A, B) = gs, node.inputs
    x = b.fwd(node.output)
    vector = rank_of(B) == 1
    g_cols = b.op("tensor::expand_dims", g, -1) if vector else g
    x_cols = b.op("tensor::expand_dims", x, -1) if vector else x
    gb = b.op("tensor::solve", swap_last(b, b.fwd(A)), g_cols)  # matrices: (..., M, K)
    grads: list[Value | None] = [None, None]
    if b.is_active(A):
        grads[0] = unbroadcast(b, b.op("tensor::neg", b.op("tensor::matmul", gb,
                                                            swap_last(b, x_cols))), A)
    if b.is_active(B):
        grads[1] = unbroadcast(b, b.op("tensor::squeeze", gb, -1) if vector else gb, B)
    return grads


MATMUL_RULES: dict[str, Rule] = {
    "tensor::inv": inv_vjp,
    "tensor::solve": solve_vjp,
    "tensor::tensordot": tensordot_vjp,
    "tensor::einsum": einsum_vjp,
    "tensor::matmul": matmul_vjp,
    "tensor::matmul_sum": matmul_sum_vjp,
    "tensor::linear": linear_vjp,
}
"""op kind -> VJP rule, for the matrix products."""
