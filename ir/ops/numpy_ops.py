"""numpy functions with no older op to stand for them: argmax / argmin, tile, repeat, flatten,
ravel, empty_like, ``np.array`` of numbers, ``x.size``, ``np.dot`` / ``np.vstack`` /
``np.hstack`` / ``np.column_stack``, and the sorts and scans along an axis (``np.sort``,
``np.argsort``, ``np.cumsum``) and ``np.round``.

Each op has an eager function of the same name in ``script.ops`` that calls numpy's (or CuPy's)
function, so values, dtypes and shapes are numpy's. ``dot`` and the stacks mean
different ops for different numbers of axes, known only once a function is specialized:
canonicalization then rewrites them as matmul / mul / stack / cat (``passes.numpy_lowering``).
``np.outer`` and ``np.array`` of arrays are written by the front end as other ops
(``script.frontend.numpy_calls``).
"""

from __future__ import annotations

import numpy as np

from ir.core import Node, Value
from ir.ops.shape import as_tuple, check_axis, const_ints, int_items, numel, tensor_arg
from ir.registry import (
    FRESH,
    NOT_CONSTANT,
    PURE,
    SCALAR_RESULT,
    SHAPE_ONLY,
    VIEW,
    ZERO_DERIVATIVE,
    ShapeError,
    const,
    constant_of,
    defop,
)
from ir.types import BOOL, DTYPE_NAMES, FLOAT, INT, Dim, ListType, TensorType, TupleType, Type


def _arg_extremum(node: Node) -> list[Type]:
    """argmax / argmin: int64 indices; the axis is removed (all axes when None)."""
    t = tensor_arg(node, 0)
    axis = const(node, 1, None)
    if t.shape is None:
        return [TensorType("int64", None if axis is not None else (), t.device)]
    if axis is None:
        if numel(t.shape) == 0:
            raise ShapeError(f"{node.kind}: attempt to get the index of an empty sequence")
        return [TensorType("int64", (), t.device)]
    rank = len(t.shape)
    if axis is NOT_CONSTANT:
        return [TensorType("int64", (None,) * max(rank - 1, 0), t.device)]
    norm = check_axis(int(axis), rank, node)
    return [TensorType("int64", t.shape[:norm] + t.shape[norm + 1:], t.device)]


def _reps(node: Node, index: int) -> list[Dim] | None:
    items = int_items(node.inputs[index])
    if items is not None and any(r is not None and r < 0 for r in items):
        raise ShapeError(f"{node.kind}: negative repetitions are not allowed: {tuple(items)}")
    return items


def _tile(node: Node) -> list[Type]:
    """numpy.tile: the shorter of the shape and ``reps`` is padded with leading ones."""
    t = tensor_arg(node, 0)
    reps = _reps(node, 1)
    if t.shape is None or reps is None:
        return [t.with_shape(None)]
    rank = max(len(t.shape), len(reps))
    shape = (1,) * (rank - len(t.shape)) + tuple(t.shape)
    reps = [1] * (rank - len(reps)) + list(reps)
    return [t.with_shape(tuple(None if d is None or r is None else d * r
                               for d, r in zip(shape, reps)))]


def _repeat(node: Node) -> list[Type]:
    """numpy.repeat with an int count: each element ``repeats`` times along ``axis``; the
    flattened array when axis is None."""
    t = tensor_arg(node, 0)
    repeats = const(node, 1)
    if repeats is not NOT_CONSTANT and int(repeats) < 0:
        raise ShapeError(f"{node.kind}: negative repetitions are not allowed: {repeats}")
    times = None if repeats is NOT_CONSTANT else int(repeats)
    axis = const(node, 2, None)
    if t.shape is None:
        return [t.with_shape((None,) if axis is None else None)]
    if axis is None:
        n = numel(t.shape)
        return [t.with_shape((None if n is None or times is None else n * times,))]
    if axis is NOT_CONSTANT:
        return [t.with_shape((None,) * len(t.shape))]
    a = check_axis(int(axis), len(t.shape), node)
    d = t.shape[a]
    new = None if d is None or times is None else d * times
    return [t.with_shape(t.shape[:a] + (new,) + t.shape[a + 1:])]


def _flat(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    return [t.with_shape(None if t.shape is None else (numel(t.shape),))]


def _empty_like(node: Node) -> list[Type]:
    a = tensor_arg(node, 0)
    dtype = const(node, 1, None)
    if dtype is None:
        return [a]
    if dtype is NOT_CONSTANT:
        return [a.with_dtype(None)]
    if dtype not in DTYPE_NAMES:
        raise ShapeError(f"{node.kind}: unknown dtype {dtype!r}")
    return [a.with_dtype(dtype)]


# -- np.array of numbers and (nested) lists of numbers -------------------------------------------
_SCALAR_DTYPES = {BOOL: "bool", INT: "int64", FLOAT: "float64"}
"""The dtype numpy gives an array of Python bools, ints or floats."""


def _data_shape(value: Value) -> tuple[tuple[Dim, ...] | None, str | None]:
    """The shape and the dtype numpy gives ``np.array(value)``: nested list and tuple constructs
    are followed (a list read by nothing else cannot have been changed); None where unknown."""
    t = value.type
    if t in _SCALAR_DTYPES:
        return (), _SCALAR_DTYPES[t]
    c = constant_of(value)
    if isinstance(c, (list, tuple)):
        try:
            folded = np.array(c)
        except ValueError:
            raise ShapeError("np.array: the nested lists have different lengths (a ragged "
                             "array)") from None
        if folded.dtype.kind in "biuf":
            return folded.shape, folded.dtype.name
    producer = value.node
    items = None
    if producer.kind == "prim::TupleConstruct" or (
            producer.kind == "prim::ListConstruct" and len(value.uses) == 1):
        items = list(producer.inputs)
    if items is not None:
        parts = [_data_shape(v) for v in items]
        return _joined(parts, len(items)), _joined_dtype([d for _, d in parts])
    if isinstance(t, ListType):
        inner, dtype = _type_shape(t.element)
        return (None if inner is None else (None,) + inner), dtype
    return _type_shape(t)


def _type_shape(t: Type) -> tuple[tuple[Dim, ...] | None, str | None]:
    if t in _SCALAR_DTYPES:
        return (), _SCALAR_DTYPES[t]
    if isinstance(t, ListType):
        inner, dtype = _type_shape(t.element)
        return (None if inner is None else (None,) + inner), dtype
    if isinstance(t, TupleType) and t.elements:
        parts = [_type_shape(e) for e in t.elements]
        return _joined(parts, len(parts)), _joined_dtype([d for _, d in parts])
    raise ShapeError(f"np.array: a {t} is not a number or a list of numbers")


def _joined(parts: list, count: int) -> tuple[Dim, ...] | None:
    shapes = {s for s, _ in parts}
    if not parts:
        return (0,)
    if None in shapes or len({len(s) for s in shapes}) != 1:
        if len({len(s) for s in shapes if s is not None}) > 1:
            raise ShapeError("np.array: the nested lists have different depths (a ragged array)")
        return None
    rank = len(next(iter(shapes)))
    dims: list[Dim] = []
    for axis in range(rank):
        column = {s[axis] for s in shapes}
        known = {d for d in column if d is not None}
        if len(known) > 1:
            raise ShapeError("np.array: the nested lists have different lengths "
                             "(a ragged array)")
        dims.append(known.pop() if known and None not in column else None)
    return (count,) + tuple(dims)


def _joined_dtype(dtypes: list[str | None]) -> str | None:
    if not dtypes:
        return "float64"  # np.array([]) is float64
    if None in dtypes:
        return None
    for dtype in ("float64", "int64", "bool"):
        if dtype in dtypes:
            return dtype
    return None


def _array(node: Node) -> list[Type]:
    shape, dtype = _data_shape(node.inputs[0])
    given = const(node, 1, None)
    if given is NOT_CONSTANT:
        dtype = None
    elif given is not None:
        if given not in DTYPE_NAMES:
            raise ShapeError(f"{node.kind}: unknown dtype {given!r}")
        dtype = given
    return [TensorType(dtype, shape, None)]


def array_rank(value: Value) -> int | None:
    """How many axes ``np.array(value)`` has, or None when not known (for the front end)."""
    try:
        shape, _ = _data_shape(value)
    except ShapeError:
        return None
    return None if shape is None else len(shape)


defop("tensor::argmax(a: Tensor, axis: int? = None) -> Tensor", _arg_extremum,
      (PURE, ZERO_DERIVATIVE, SCALAR_RESULT), ("np.argmax", ".argmax"),
      "the index of the largest element (of the flattened array when axis is None; the first "
      "of ties, as numpy)")
defop("tensor::argmin(a: Tensor, axis: int? = None) -> Tensor", _arg_extremum,
      (PURE, ZERO_DERIVATIVE, SCALAR_RESULT), ("np.argmin", ".argmin"),
      "the index of the smallest element (of the flattened array when axis is None; the first "
      "of ties, as numpy)")
defop("tensor::tile(a: Tensor, reps: ints) -> Tensor", _tile, (PURE,), ("np.tile",),
      "a repeated `reps` times along each axis (numpy.tile)", sizes=("reps",))
defop("tensor::repeat(a: Tensor, repeats: int, axis: int? = None) -> Tensor", _repeat, (PURE,),
      ("np.repeat", ".repeat"),
      "each element `repeats` times in a row along `axis` (of the flattened array when None)",
      sizes=("repeats",))
defop("tensor::flatten(a: Tensor) -> Tensor", _flat, (PURE,), (".flatten",),
      "a new 1-D array of a's elements in C order")
defop("tensor::ravel(a: Tensor) -> Tensor", _flat, (PURE, VIEW), (".ravel", "np.ravel"),
      "a's elements in C order as a 1-D array (a view when numpy can make one)")
defop("tensor::empty_like(a: Tensor, dtype: str? = None) -> Tensor", _empty_like,
      (FRESH, ZERO_DERIVATIVE, SHAPE_ONLY), ("np.empty_like",),
      "uninitialized storage with a's shape, device and (by default) dtype")
SCALAR_ATTR = "scalar"
"""A ``tensor::array`` of a number with this attribute true stands for a numpy scalar
(``np.float64(0)``, ``np.sqrt(3)``): a 0-d array in the graph, the scalar at run time."""

defop("tensor::array(data: any, dtype: str? = None) -> Tensor", _array,
      (FRESH,), ("np.array",),
      "a new array of a number or of (nested) lists and tuples of numbers; an array "
      "argument is copied (numpy.copy) and a list of arrays stacked (np.stack)")


def _dot(node: Node) -> list[Type]:
    """numpy.dot: a product with a scalar, matmul's shape when ``b`` has at most 2 axes, else
    ``a.shape[:-1] + b.shape[:-2] + b.shape[-1:]``."""
    from ir.ops.linalg import matmul_shape
    from ir.ops.rules import broadcast_rule
    from ir.ops.shape import items_device, items_dtype
    a, b = node.inputs[0].type, node.inputs[1].type
    if not isinstance(a, TensorType) and not isinstance(b, TensorType):
        return broadcast_rule(node)
    # np.dot makes a Python number an array: a float is float64 there, not a weak scalar
    a, b = (t if isinstance(t, TensorType) else TensorType(_SCALAR_DTYPES[t], (), None)
            for t in (a, b))
    dtype = items_dtype([a, b])
    device = items_device([t for t in (a, b) if t.shape != () or t.device is not None], node)
    if a.shape == () or b.shape == ():
        shape = b.shape if a.shape == () else a.shape
        return [TensorType(dtype, shape, device)]
    if a.shape is None or b.shape is None:
        return [TensorType(dtype, None, device)]
    if len(b.shape) <= 2:
        return [TensorType(dtype, matmul_shape(a.shape, b.shape, node.kind), device)]
    k1, k2 = a.shape[-1], b.shape[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ShapeError(f"{node.kind}: shapes {a.shape} and {b.shape} not aligned")
    return [TensorType(dtype, a.shape[:-1] + b.shape[:-2] + b.shape[-1:], device)]


defop("tensor::dot(a: operand, b: operand) -> operand", _dot, (PURE, SCALAR_RESULT),
      ("np.dot", ".dot"),
      "numpy.dot; written as a multiplication or a matmul where the numbers of axes are known "
      "when compiling (only a matmul's case is differentiable)")


# -- np.hstack / np.vstack --------------------------------------------------------------------
def _at_least(shape: tuple[Dim, ...], rank: int) -> tuple[Dim, ...]:
    """np.atleast_1d / atleast_2d: a 0-d array becomes (1,) or (1, 1), a 1-D (n,) (1, n)."""
    if len(shape) >= rank:
        return shape
    return (1,) * (rank - len(shape)) + shape


def _as_column(shape: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """np.column_stack's view of an item: a 0-d array is (1, 1), a 1-D (n,) the column (n, 1)."""
    if len(shape) >= 2:
        return shape
    return (shape[0] if shape else 1, 1)


def _stacked(node: Node, rank: int, axis_of: object, lift: object = None) -> list[Type]:
    """The type of joining the items, each made at least ``rank``-D (by ``lift`` when given),
    along ``axis_of(first item's rank)``."""
    from ir.ops.shape import items_device, items_dtype, merge_dims, tensor_items
    items, common = tensor_items(node.inputs[0])
    if items is not None and not items:
        raise ShapeError(f"{node.kind}: need at least one array to concatenate")
    known = items if items is not None else [common]
    dtype, device = items_dtype(known), items_device(known, node)
    if any(t.shape is None for t in known):
        return [TensorType(dtype, None, device)]
    shapes = [lift(t.shape) if lift else _at_least(t.shape, rank)  # type: ignore[operator]
              for t in known]
    if len({len(s) for s in shapes}) > 1:
        raise ShapeError(f"{node.kind}: all the arrays must have the same number of "
                         "dimensions after they are made at least " f"{rank}-D")
    axis = axis_of(len(known[0].shape))  # type: ignore[operator,arg-type]
    dims: list[Dim] = []
    for i in range(len(shapes[0])):
        column = [s[i] for s in shapes]
        if i != axis:
            dims.append(merge_dims(column, node, i))
        elif items is None or None in column:
            dims.append(None)
        else:
            dims.append(sum(column))  # type: ignore[arg-type]
    return [TensorType(dtype, tuple(dims), device)]


def _as_depth(shape: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """np.dstack's view of an item (np.atleast_3d): 0-d (1, 1, 1), (n,) (1, n, 1), (m, n)
    (m, n, 1)."""
    if len(shape) >= 3:
        return shape
    if len(shape) == 2:
        return (*shape, 1)
    return (1, shape[0] if shape else 1, 1)


def _dstack(node: Node) -> list[Type]:
    return _stacked(node, 3, lambda first_rank: 2, _as_depth)


def _vstack(node: Node) -> list[Type]:
    return _stacked(node, 2, lambda first_rank: 0)


def _hstack(node: Node) -> list[Type]:
    return _stacked(node, 1, lambda first_rank: 0 if first_rank <= 1 else 1)


def _column_stack(node: Node) -> list[Type]:
    return _stacked(node, 2, lambda first_rank: 1, _as_column)


defop("tensor::vstack(tensors: Tensor[]) -> Tensor", _vstack, (PURE,),
      ("np.vstack", "np.row_stack"),
      "join along the first axis, 1-D arrays as rows (numpy.vstack); rewritten as np.stack or "
      "np.concatenate once the numbers of axes are known")
defop("tensor::hstack(tensors: Tensor[]) -> Tensor", _hstack, (PURE,), ("np.hstack",),
      "join 1-D arrays end to end, others along the second axis (numpy.hstack); rewritten as "
      "np.concatenate once the numbers of axes are known")
defop("tensor::dstack(tensors: Tensor[]) -> Tensor", _dstack, (PURE,), ("np.dstack",),
      "join along the third axis, 2-D arrays as (m, n, 1) slices (numpy.dstack); rewritten as "
      "np.stack or np.concatenate once the numbers of axes are known")
defop("tensor::column_stack(tensors: Tensor[]) -> Tensor", _column_stack, (PURE,),
      ("np.column_stack",),
      "join along the second axis, 1-D arrays as columns (numpy.column_stack); rewritten as "
      "np.stack or np.concatenate once the numbers of axes are known")


def _numel(node: Node) -> list[Type]:
    tensor_arg(node, 0)
    return [INT]


defop("tensor::numel(a: Tensor) -> int", _numel, (PURE, ZERO_DERIVATIVE, SHAPE_ONLY),
      (".size", "np.size"),
      "the number of elements (numpy's a.size)")


# -- np.swapaxes ------------------------------------------------------------------------------
def _swapaxes(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    i, j = (node.inputs[k].constant if node.inputs[k].is_constant else None for k in (1, 2))
    if type(i) is not int or type(j) is not int:
        raise ShapeError("np.swapaxes: the axes must be int constants")
    if t.shape is None:
        return [t]
    rank = len(t.shape)
    a, b = check_axis(i, rank, node), check_axis(j, rank, node)
    shape = list(t.shape)
    shape[a], shape[b] = shape[b], shape[a]
    return [t.with_shape(tuple(shape))]


defop("tensor::swapaxes(a: Tensor, axis1: int, axis2: int) -> Tensor", _swapaxes, (PURE, VIEW),
      ("np.swapaxes", ".swapaxes"), "a with two axes swapped (a view, numpy.swapaxes); "
      "rewritten as np.transpose once the number of axes is known")


# -- np.moveaxis -------------------------------------------------------------------------------
def moved_axes(source: object, destination: object, rank: int, node: Node) -> list[int]:
    """The permutation ``np.moveaxis(a, source, destination)`` applies to ``rank`` axes
    (numpy's checks: axes in bounds, none repeated, as many sources as destinations)."""
    src = [check_axis(a, rank, node) for a in as_tuple(source)]  # type: ignore[arg-type]
    dst = [check_axis(a, rank, node) for a in as_tuple(destination)]  # type: ignore[arg-type]
    if len(src) != len(dst):
        raise ShapeError("np.moveaxis: source and destination arguments must have the same "
                         "number of elements")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ShapeError("np.moveaxis: repeated axis")
    order = [k for k in range(rank) if k not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return order


def _moveaxis(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    source, destination = const_ints(node, 1), const_ints(node, 2)
    if t.shape is None:
        return [t]
    if source is NOT_CONSTANT or destination is NOT_CONSTANT:  # (axes a helper was passed:
        return [t.with_shape((None,) * len(t.shape))]  # constants once it is inlined)
    order = moved_axes(source, destination, len(t.shape), node)
    return [t.with_shape(tuple(t.shape[k] for k in order))]


defop("tensor::moveaxis(a: Tensor, source: ints, destination: ints) -> Tensor", _moveaxis,
      (PURE, VIEW), ("np.moveaxis",), "a with the axes source moved to the places destination "
      "(a view, numpy.moveaxis); rewritten as np.transpose once the number of axes is known")


# -- np.flip without an axis ---------------------------------------------------------------------
def _flip(node: Node) -> list[Type]:
    return [tensor_arg(node, 0)]


defop("tensor::flip(a: Tensor) -> Tensor", _flip, (PURE, VIEW), (),
      "a with every axis reversed (a view, numpy.flip without an axis); rewritten as slices "
      "with step -1 once the number of axes is known (np.flip(a, axis) is such slices along "
      "the axes given)")


# -- sorts and scans along an axis ----------------------------------------------------------------
def _along(dtype_rule: object) -> object:
    """The rule of an op along one axis (the flattened array when the axis is None)."""
    def rule(node: Node) -> list[Type]:
        t = tensor_arg(node, 0)
        axis = const(node, 1, None)
        dtype = dtype_rule(t.dtype)  # type: ignore[operator]
        if axis is None:
            return [TensorType(dtype, None if t.shape is None else (numel(t.shape),), t.device)]
        if t.shape is not None and axis is not NOT_CONSTANT:
            check_axis(int(axis), len(t.shape), node)  # type: ignore[arg-type]
        return [TensorType(dtype, t.shape, t.device)]
    return rule


def _cumsum_dtype(dtype: str | None) -> str | None:
    if dtype is not None and dtype.startswith("uint"):
        return "uint64"  # as numpy's sum: unsigned integers add up in uint64
    return "int64" if dtype is not None and np.dtype(dtype).kind in "bi" else dtype


defop("tensor::sort(a: Tensor, axis: int? = -1) -> Tensor", _along(lambda d: d), (PURE,),
      ("np.sort",), "a sorted copy along `axis` (of the flattened array when None); NaN last, "
      "as numpy's")
defop("tensor::argsort(a: Tensor, axis: int? = -1) -> Tensor", _along(lambda d: "int64"),
      (PURE, ZERO_DERIVATIVE), ("np.argsort", ".argsort"),
      "the indices that sort a along `axis` (numpy's argsort, its default kind)")
defop("tensor::cumsum(a: Tensor, axis: int? = None) -> Tensor", _along(_cumsum_dtype), (PURE,),
      ("np.cumsum", ".cumsum"), "running sums along `axis` (of the flattened array when None); "
      "bools and integers add up in int64 as numpy's")


def _round(node: Node) -> list[Type]:
    tensor_arg(node, 0)
    return [node.inputs[0].type]


defop("tensor::round(a: Tensor, decimals: int = 0) -> Tensor", _round,
      (PURE, ZERO_DERIVATIVE, SCALAR_RESULT),
      ("np.round", "np.around", ".round"),
      "a rounded to `decimals` places, halves to even (numpy's round; integers kept)")
