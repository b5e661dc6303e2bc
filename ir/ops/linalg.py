"""Linear algebra: ``matmul`` (numpy's rules, 1-D and batched broadcasting included) and ``linear``;
``matmul_sum``, which a rewrite inserts; ``einsum`` (numpy's subscripts, ``...`` included);
``tensordot``; ``inv``, ``solve``, ``det`` and ``slogdet`` (numpy.linalg's).

Each op has an eager function of the same name in ``script.ops``; ``ops.mm`` is ``ops.matmul``.
"""

from __future__ import annotations

import numpy as np

from ir.core import Node
from ir.ops.rules import broadcast_shapes
from ir.ops.shape import items_device, tensor_arg
from ir.registry import NOT_CONSTANT, PURE, SCALAR_RESULT, VIEW, ShapeError, const, defop
from ir.types import NONE, Dim, OptionalType, TensorType, Type, unify

Shape = tuple[Dim, ...]


def matmul_shape(a: Shape | None, b: Shape | None, kind: str = "tensor::matmul") -> Shape | None:
    """numpy.matmul's output shape: a 1-D left operand is a row, a 1-D right operand a column
    (both removed again), leading batch axes broadcast. ShapeError when the inner sizes differ."""
    if a is None or b is None:
        return None
    if not a or not b:
        raise ShapeError(f"{kind}: operands must have at least one dimension, got {a} and {b}")
    left = (1,) + a if len(a) == 1 else a
    right = b + (1,) if len(b) == 1 else b
    k1, k2 = left[-1], right[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ShapeError(f"{kind}: inner dimensions differ: {_text(a)} @ {_text(b)} "
                         f"({k1} != {k2})")
    batch = broadcast_shapes([left[:-2], right[:-2]])
    assert batch is not None
    rows = () if len(a) == 1 else (left[-2],)
    cols = () if len(b) == 1 else (right[-1],)
    return batch + rows + cols


def _text(shape: Shape) -> str:
    return "(" + ", ".join("*" if d is None else str(d) for d in shape) + ")"


def _dtype(types: list[TensorType]) -> str | None:
    if any(t.dtype is None for t in types):
        return None
    return np.result_type(*[t.dtype for t in types]).name


def _matmul(node: Node) -> list[Type]:
    a, b = tensor_arg(node, 0), tensor_arg(node, 1)
    shape = matmul_shape(a.shape, b.shape, node.kind)
    return [TensorType(_dtype([a, b]), shape, items_device([a, b], node))]


def _linear(node: Node) -> list[Type]:
    x, w = tensor_arg(node, 0), tensor_arg(node, 1)
    if w.shape is not None and len(w.shape) not in (1, 2):
        raise ShapeError(f"{node.kind}: weight must be 1-D or 2-D, got {w}")
    w_t = None if w.shape is None else w.shape[::-1]
    shape = matmul_shape(x.shape, w_t, node.kind)
    without = TensorType(_dtype([x, w]), shape, items_device([x, w], node))
    bias_t = node.inputs[2].type if len(node.inputs) > 2 else NONE
    bias = bias_t.element if isinstance(bias_t, OptionalType) else bias_t
    if not isinstance(bias, TensorType):
        return [without]
    with_bias = TensorType(_dtype([x, w, bias]), broadcast_shapes([shape, bias.shape]),
                           items_device([x, w, bias], node))
    if isinstance(bias_t, OptionalType):  # the bias may be None at run time
        return [unify(without, with_bias) or TensorType()]
    return [with_bias]


defop("tensor::matmul(a: Tensor, b: Tensor) -> Tensor", _matmul, (PURE, SCALAR_RESULT),
      ("@", "np.matmul", "ops.mm"),
      "matrix product with numpy's 1-D and batch-broadcasting rules (np.dot and .dot are this "
      "when the second operand has at most 2 axes, a multiplication when one is a scalar)")
def _matmul_sum(node: Node) -> list[Type]:
    args = [tensor_arg(node, i) for i in range(len(node.inputs))]
    if not args or len(args) % 2:
        raise ShapeError(f"{node.kind}: takes pairs of matrices, got {len(args)} operands")
    shapes = [matmul_shape(a.shape, b.shape, node.kind) for a, b in zip(args[::2], args[1::2])]
    shape = shapes[0]
    for other in shapes[1:]:
        shape = None if shape is None or other is None else broadcast_shapes([shape, other])
    return [TensorType(_dtype(args), shape, items_device(args, node))]


defop("tensor::linear(x: Tensor, weight: Tensor, bias: Tensor? = None) -> Tensor", _linear,
      (PURE,), (), "x @ weight.T + bias (torch.nn.functional.linear)")
defop("tensor::matmul_sum(*operands: Tensor) -> Tensor", _matmul_sum, (PURE,), (),
      "a1 @ b1 + a2 @ b2 + ... for pairs of matrices of one result shape: the matmul-sums "
      "rewrite makes it of a sum of products outside loops, computed as one product")


ELLIPSIS = "."
"""the label ``einsum_labels`` gives each axis an ellipsis stands for."""


def einsum_labels(spec: str, ranks: list[int | None]) -> tuple[list[str], str]:
    """numpy's einsum subscripts ``spec`` for operands of ``ranks``: each operand's labels and
    the output's, one character per axis, an ellipsis expanded to as many ``ELLIPSIS`` labels
    as the axes it stands for (right-aligned across operands, as numpy broadcasts them); the
    implicit output (no ``->``) is the labels used once, in alphabetical order, after the
    ellipsis axes. ShapeError for subscripts numpy refuses; a rank must be known where its
    operand has an ellipsis."""
    spec = spec.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    parts = inputs.split(",")
    if len(parts) != len(ranks):
        raise ShapeError(f"np.einsum: {len(parts)} operands in the subscripts {spec!r}, "
                         f"{len(ranks)} given")
    labels, widest = [], 0
    for part, rank in zip(parts, ranks):
        named = part.replace("...", "")
        if not all(c.isalpha() for c in named) or part.count("...") > 1 or \
                part.count(".") != 3 * part.count("..."):
            raise ShapeError(f"np.einsum: invalid subscripts {part!r}")
        if "..." not in part:
            if rank is not None and rank != len(named):
                raise ShapeError(f"np.einsum: the subscripts {part!r} name {len(named)} axes "
                                 f"of an operand with {rank}")
            labels.append(named)
            continue
        if rank is None:
            raise ShapeError("np.einsum: an operand with an ellipsis needs a known rank")
        if rank < len(named):
            raise ShapeError(f"np.einsum: the subscripts {part!r} name more axes than the "
                             f"operand's {rank}")
        widest = max(widest, rank - len(named))
        labels.append(part.replace("...", ELLIPSIS * (rank - len(named))))
    if arrow:
        if not all(c.isalpha() for c in output.replace("...", "")) or \
                output.count(".") != 3 * output.count("..."):
            raise ShapeError(f"np.einsum: invalid output subscripts {output!r}")
        used = set("".join(labels))
        for c in output.replace("...", ""):
            if c not in used or output.count(c) > 1:
                raise ShapeError(f"np.einsum: output subscript {c!r} "
                                 f"{'repeats' if c in used else 'is not in the inputs'}")
        if widest and "..." not in output:
            raise ShapeError("np.einsum: output has more dimensions than subscripts given, "
                             "but no '...' ellipsis provided to broadcast the extra dimensions")
        out = output.replace("...", ELLIPSIS * widest)
    else:
        joined = "".join(labels).replace(ELLIPSIS, "")
        out = ELLIPSIS * widest + "".join(sorted(c for c in set(joined) if joined.count(c) == 1))
    return labels, out


def _einsum(node: Node) -> list[Type]:
    operands = [tensor_arg(node, i) for i in range(2, len(node.inputs))]
    dtype, device = _dtype(operands), items_device(operands, node)
    spec = const(node, 0)
    if spec is NOT_CONSTANT or not isinstance(spec, str):
        raise ShapeError("np.einsum: the subscripts must be a constant string")
    ranks = [t.rank for t in operands]
    try:
        labels, out = einsum_labels(spec, ranks)
    except ShapeError:
        if None in ranks:
            return [TensorType(dtype, None, device)]
        raise
    if None in ranks:
        return [TensorType(dtype, None if ELLIPSIS in out else (None,) * len(out), device)]
    sizes: dict[str, list[Dim]] = {}
    ellipsis: list[tuple[Dim, ...]] = []
    for names, t in zip(labels, operands):
        assert t.shape is not None
        for c, d in zip(names, t.shape):
            if c != ELLIPSIS:
                sizes.setdefault(c, []).append(d)
        ellipsis.append(tuple(d for c, d in zip(names, t.shape) if c == ELLIPSIS))
    dims = {c: broadcast_shapes([(d,) for d in ds])[0] for c, ds in sizes.items()}  # type: ignore
    lead = iter(broadcast_shapes(ellipsis) or ())
    return [TensorType(dtype, tuple(next(lead) if c == ELLIPSIS else dims[c] for c in out),
                       device)]


defop("tensor::einsum(subscripts: str, optimize: any, *operands: Tensor) -> Tensor", _einsum,
      (PURE, VIEW), ("np.einsum",), "numpy's Einstein summation over the labelled axes of the "
      "operands (explicit or implicit output, `...` for broadcast leading axes), in the order "
      "numpy's `optimize` picks; the subscripts are a constant; a view of the operand where "
      "numpy makes one (`np.einsum('ij->ji', x)`)")


def tensordot_axes(axes: object, rank_a: int, rank_b: int) -> tuple[list[int], list[int]]:
    """numpy.tensordot's ``axes`` for operands of these ranks, as the contracted axes of each
    (non-negative, in order): an int N (the last N of ``a`` with the first N of ``b``) or a
    pair of ints or of sequences of ints. ShapeError for what numpy refuses."""
    if isinstance(axes, (bool, np.bool_)):
        axes = int(axes)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(rank_a, rank_b):
            raise ShapeError(f"np.tensordot: axes={n} for operands of {rank_a} and {rank_b} "
                             f"axes")
        return list(range(rank_a - n, rank_a)), list(range(n))
    if not isinstance(axes, (tuple, list)) or len(axes) != 2:
        raise ShapeError(f"np.tensordot: axes must be an int or a pair of axis lists, not "
                         f"{axes!r}")
    pair = []
    for given, rank in zip(axes, (rank_a, rank_b)):
        listed = list(given) if isinstance(given, (tuple, list)) else [given]
        if not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                   for a in listed):
            raise ShapeError(f"np.tensordot: axes must be ints, not {given!r}")
        for a in listed:
            if not -rank <= a < rank:
                raise ShapeError(f"np.tensordot: axis {a} is out of bounds for an array of "
                                 f"{rank} axes")
        normal = [int(a) % rank for a in listed]
        if len(set(normal)) != len(normal):
            raise ShapeError(f"np.tensordot: repeated axis in {given!r}")
        pair.append(normal)
    if len(pair[0]) != len(pair[1]):
        raise ShapeError("np.tensordot: shape-mismatch for sum (the two axis lists differ in "
                         "length)")
    return pair[0], pair[1]


def tensordot_spec(axes: object, rank_a: int, rank_b: int) -> str:
    """``np.tensordot(a, b, axes)`` as einsum subscripts: the free axes of ``a``, then of
    ``b``."""
    along_a, along_b = tensordot_axes(axes, rank_a, rank_b)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    la = [next(letters) for _ in range(rank_a)]
    lb = [next(letters) for _ in range(rank_b)]
    for i, j in zip(along_a, along_b):
        lb[j] = la[i]
    free_a = "".join(c for k, c in enumerate(la) if k not in along_a)
    free_b = "".join(c for k, c in enumerate(lb) if k not in along_b)
    return f"{''.join(la)},{''.join(lb)}->{free_a}{free_b}"


def _tensordot(node: Node) -> list[Type]:
    a, b = tensor_arg(node, 0), tensor_arg(node, 1)
    dtype, device = _dtype([a, b]), items_device([a, b], node)
    axes = const(node, 2)
    if axes is NOT_CONSTANT:
        raise ShapeError("np.tensordot: axes must be a constant")
    if a.shape is None or b.shape is None:
        return [TensorType(dtype, None, device)]
    along_a, along_b = tensordot_axes(axes, len(a.shape), len(b.shape))
    for i, j in zip(along_a, along_b):
        da, db = a.shape[i], b.shape[j]
        if da is not None and db is not None and da != db:
            raise ShapeError(f"np.tensordot: shape-mismatch for sum (axis {i} of size {da} "
                             f"against axis {j} of size {db})")
    shape = tuple(d for k, d in enumerate(a.shape) if k not in along_a) + tuple(
        d for k, d in enumerate(b.shape) if k not in along_b)
    return [TensorType(dtype, shape, device)]


defop("tensor::tensordot(a: Tensor, b: Tensor, axes: any = 2, scalar: bool = False) -> Tensor",
      _tensordot, (PURE,), ("np.tensordot", "np.inner"),
      "numpy's tensordot: the sum of products over the paired axes (an int N: the last N of "
      "`a` with the first N of `b`), the free axes of `a` then of `b`; axes a constant; "
      "`scalar`: a result without axes is a numpy scalar, as np.inner's (np.tensordot's is a "
      "0-d array)")


def _linalg_dtype(dtype: str | None) -> str | None:
    """numpy.linalg's result dtype: float32 and float64 kept, integers and bools as float64."""
    if dtype is None or dtype in ("float32", "float64"):
        return dtype
    if dtype == "float16":
        raise ShapeError("np.linalg: array type float16 is unsupported in linalg")
    return "float64"


def _square(kind: str, shape: Shape | None) -> None:
    if shape is None:
        return
    if len(shape) < 2:
        raise ShapeError(f"{kind}: {len(shape)}-dimensional array given. Array must be at least "
                         "two-dimensional")
    m, n = shape[-2:]
    if m is not None and n is not None and m != n:
        raise ShapeError(f"{kind}: Last 2 dimensions of the array must be square")


def _inv(node: Node) -> list[Type]:
    a = tensor_arg(node, 0)
    _square("np.linalg.inv", a.shape)
    return [TensorType(_linalg_dtype(a.dtype), a.shape, items_device([a], node))]


def solve_shape(a: Shape | None, b: Shape | None) -> Shape | None:
    """numpy.linalg.solve's result shape (numpy 2's rule: a 1-D ``b`` is one vector, anything
    else a stack of matrices (..., M, K))."""
    _square("np.linalg.solve", a)
    if a is None or b is None:
        return None
    if not b:
        raise ShapeError("np.linalg.solve: b must have at least one dimension (a vector or a "
                         "stack of matrices), not 0")
    m = a[-1]
    if len(b) == 1:
        rows, batch = b, broadcast_shapes([a[:-2]]) or ()
    else:
        rows, batch = b[-2:], broadcast_shapes([a[:-2], b[:-2]]) or ()
    if m is not None and rows[0] is not None and m != rows[0]:
        raise ShapeError(f"np.linalg.solve: a of {_text(a)} and b of {_text(b)}: the sizes "
                         f"{m} and {rows[0]} differ")
    return tuple(batch) + tuple(rows)


def _solve(node: Node) -> list[Type]:
    a, b = tensor_arg(node, 0), tensor_arg(node, 1)
    dtype = _linalg_dtype(_dtype([a, b]))
    return [TensorType(dtype, solve_shape(a.shape, b.shape), items_device([a, b], node))]


def _det(node: Node) -> list[Type]:
    a = tensor_arg(node, 0)
    _square(f"np.linalg.{node.kind.partition('::')[2]}", a.shape)
    t = TensorType(_linalg_dtype(a.dtype), None if a.shape is None else a.shape[:-2],
                   items_device([a], node))
    return [t] if node.kind == "tensor::det" else [t, t]


defop("tensor::det(a: Tensor) -> Tensor", _det, (PURE, SCALAR_RESULT), ("np.linalg.det",),
      "the determinant of a square matrix (of each of a stack of them)")
defop("tensor::slogdet(a: Tensor) -> (Tensor, Tensor)", _det, (PURE, SCALAR_RESULT), (),
      "the sign and the log of the absolute value of the determinant (np.linalg.slogdet: "
      "finite where the determinant itself would overflow)")
defop("tensor::inv(a: Tensor) -> Tensor", _inv, (PURE,), ("np.linalg.inv",),
      "the inverse of a square matrix (of each of a stack of them); numpy's LinAlgError for a "
      "singular one")
defop("tensor::solve(a: Tensor, b: Tensor) -> Tensor", _solve, (PURE,), ("np.linalg.solve",),
      "x with a @ x == b for a square a: a 1-D b is one vector, anything else a stack of "
      "matrices (numpy 2's rule); numpy's LinAlgError for a singular a")
