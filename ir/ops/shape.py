"""Shape ops: transpose, reshape, indexing along an axis, splitting and joining, shape queries.

Shapes are exact when the input shapes and the shape-giving arguments are compile-time constants;
a dimension that cannot be known is None (printed ``*``) and a rank that cannot be known makes the
whole shape None. Each op has an eager function of the same name in ``script.ops``.
"""

from __future__ import annotations

import math

import numpy as np

from ir.core import Node, Value
from ir.registry import (
    ALWAYS_VIEW,
    FRESH,
    NOT_CONSTANT,
    PURE,
    SHAPE_ONLY,
    VIEW,
    ZERO_DERIVATIVE,
    ShapeError,
    const,
    constant_of,
    defop,
)
from ir.types import INT, STR, Dim, ListType, TensorType, TupleType, Type

Shape = tuple[Dim, ...]


# -- helpers shared by the shape, reduction, linalg, nn and creation rules ----------------------
def tensor_arg(node: Node, index: int) -> TensorType:
    """Input ``index`` as a tensor type (the schema check has already accepted it)."""
    t = node.inputs[index].type
    if not isinstance(t, TensorType):
        raise ShapeError(f"{node.kind}: input {index} is {t}, not a tensor")
    return t


def check_axis(axis: int, rank: int, node: Node) -> int:
    """``axis`` normalised into ``range(rank)``; ShapeError when out of bounds (as numpy)."""
    if not -rank <= axis < rank:
        raise ShapeError(f"{node.kind}: axis {axis} is out of bounds for a tensor of rank {rank}")
    return axis % rank


def check_axes(axes: tuple[int, ...], rank: int, node: Node) -> list[int]:
    """Normalised distinct axes; ShapeError on a repeated or out-of-bounds axis."""
    norm = [check_axis(a, rank, node) for a in axes]
    if len(set(norm)) != len(norm):
        raise ShapeError(f"{node.kind}: repeated axis in {axes}")
    return norm


def as_tuple(value: int | tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """An ``ints`` constant (one int or a sequence) as a tuple."""
    if isinstance(value, (tuple, list)):
        return tuple(int(v) for v in value)
    return (int(value),)


def int_items(value: Value) -> list[Dim] | None:
    """The items of an ``ints`` argument, None for an item not known at compile time; None when
    even the number of items is unknown. Follows tuple constructs and single-use list constructs
    (a list read by nothing else cannot have been mutated)."""
    c = constant_of(value)
    if c is not NOT_CONSTANT and c is not None:
        return list(as_tuple(c))
    producer = value.node
    single_use_list = producer.kind == "prim::ListConstruct" and len(value.uses) == 1
    if producer.kind in ("prim::TupleConstruct", "prim::ShapeConstruct") or single_use_list:
        return [_int_item(v) for v in producer.inputs]
    if producer.kind == "tensor::shape" and isinstance(producer.inputs[0].type, TensorType) \
            and producer.inputs[0].type.shape is not None:  # np.zeros(W.shape)
        return list(producer.inputs[0].type.shape)
    if producer.kind == "prim::ListAdd" and len(value.uses) == 1:  # np.zeros((T,) + x.shape)
        parts = [int_items(v) for v in producer.inputs]
        if parts[0] is not None and parts[1] is not None:
            return parts[0] + parts[1]
    if isinstance(value.type, TupleType):
        return [None] * len(value.type.elements)
    if value.type == INT:
        return [None]
    return None


def const_ints(node: Node, index: int, default: object = NOT_CONSTANT) -> object:
    """Like ``const``, but an ``ints`` argument built from constants (a list construct of
    constant ints) counts as constant too."""
    value = const(node, index, default)
    if value is not NOT_CONSTANT:
        return value
    items = int_items(node.inputs[index])
    if items is None or None in items:
        return NOT_CONSTANT
    return tuple(items)


def _int_item(value: Value) -> Dim:
    """A constant int, or ``tensor::size`` of an axis whose length the types already know (a
    shape built from ``x.shape[k]`` then types in the same propagation that types ``x``)."""
    producer = value.node
    if producer.kind == "tensor::size" and isinstance(producer.inputs[0].type, TensorType):
        shape, axis = producer.inputs[0].type.shape, constant_of(producer.inputs[1])
        if shape is not None and isinstance(axis, int) and -len(shape) <= axis < len(shape):
            return shape[axis]
    return _int_or_none(constant_of(value))


def _int_or_none(c: object) -> Dim:
    return int(c) if isinstance(c, (int, np.integer)) else None  # type: ignore[arg-type]


def numel(shape: Shape | None) -> int | None:
    """The element count of a fully known shape, else None."""
    if shape is None or any(d is None for d in shape):
        return None
    return math.prod(shape)  # type: ignore[arg-type]


def tensor_items(value: Value) -> tuple[list[TensorType] | None, TensorType]:
    """For a ``Tensor[]`` argument: the item types when their number is known (a tuple, or a
    single-use list construct), and a type every item has."""
    t = value.type
    producer = value.node
    if isinstance(t, TupleType):
        items = [e for e in t.elements if isinstance(e, TensorType)]
    elif producer.kind == "prim::ListConstruct" and len(value.uses) == 1:
        items = [v.type for v in producer.inputs if isinstance(v.type, TensorType)]
    else:
        element = t.element if isinstance(t, ListType) else None
        return None, element if isinstance(element, TensorType) else TensorType()
    return items, _join(items)


def _join(items: list[TensorType]) -> TensorType:
    dtypes = {t.dtype for t in items}
    devices = {t.device for t in items}
    return TensorType(dtypes.pop() if len(dtypes) == 1 else None, None,
                      devices.pop() if len(devices) == 1 else None)


def items_dtype(items: list[TensorType]) -> str | None:
    """numpy's promoted dtype of several tensors, None when one is unknown."""
    if not items or any(t.dtype is None for t in items):
        return None
    return np.result_type(*[t.dtype for t in items]).name


def items_device(items: list[TensorType], node: Node) -> str | None:
    known = {t.device for t in items if t.device is not None}
    if len(known) > 1:
        raise ShapeError(f"{node.kind}: inputs on different devices {sorted(known)}")
    if any(t.device is None for t in items) or not known:
        return None
    return known.pop()


def merge_dims(dims: list[Dim], node: Node, axis: int) -> Dim:
    """Dimensions that must be equal: the known size (ShapeError when two known sizes differ)."""
    known = {d for d in dims if d is not None}
    if len(known) > 1:
        raise ShapeError(f"{node.kind}: sizes {sorted(known)} differ along axis {axis}")
    return known.pop() if known else None


def replace_dim(shape: Shape, axis: int, dim: Dim) -> Shape:
    return shape[:axis] + (dim,) + shape[axis + 1:]


def drop_dim(shape: Shape, axis: int) -> Shape:
    return shape[:axis] + shape[axis + 1:]


def _constant_axis(node: Node, index: int, rank: int, default: object = NOT_CONSTANT) -> int | None:
    """A constant axis argument, normalised; None when not a constant."""
    axis = const(node, index, default)
    if axis is NOT_CONSTANT:
        return None
    return check_axis(int(axis), rank, node)


# -- transpose, reshape, expand_dims, squeeze ---------------------------------------------------
def _transpose(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    axes = const_ints(node, 1, None)
    if t.shape is None:
        if axes is None or axes is NOT_CONSTANT:
            return [t]
        return [t.with_shape((None,) * len(as_tuple(axes)))]
    rank = len(t.shape)
    if axes is None:
        return [t.with_shape(t.shape[::-1])]
    if axes is NOT_CONSTANT:
        return [t.with_shape((None,) * rank)]
    axes = as_tuple(axes)
    if len(axes) != rank:
        raise ShapeError(f"{node.kind}: axes {axes} don't match a tensor of rank {rank}")
    norm = check_axes(axes, rank, node)
    return [t.with_shape(tuple(t.shape[a] for a in norm))]


def _reshape(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    items = int_items(node.inputs[1])
    if items is None:
        return [t.with_shape(None)]
    known = [d for d in items if d is not None]
    if known.count(-1) > 1:
        raise ShapeError(f"{node.kind}: can only specify one unknown dimension in {tuple(items)}")
    if any(d < -1 for d in known):
        raise ShapeError(f"{node.kind}: negative dimension in {tuple(items)}")
    total = numel(t.shape)
    if -1 in items:
        return [t.with_shape(tuple(_infer_minus_one(items, total, t.shape)))]
    if total is not None and None not in items and math.prod(known) != total:
        raise ShapeError(f"{node.kind}: cannot reshape a tensor of size {total} into shape "
                         f"{tuple(items)}")
    return [t.with_shape(tuple(items))]


def _infer_minus_one(items: list[Dim], total: int | None, shape: Shape | None) -> list[Dim]:
    others = [d for d in items if d != -1]
    if total is None or None in others:
        return [None if d == -1 else d for d in items]
    rest = math.prod(others)  # type: ignore[arg-type]
    if rest == 0 or total % rest:
        raise ShapeError(f"reshape: cannot reshape a tensor of shape {shape} into {tuple(items)}")
    return [total // rest if d == -1 else d for d in items]


def _expand_dims(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    axes = const_ints(node, 1)
    if t.shape is None or axes is NOT_CONSTANT:
        return [t.with_shape(None)]
    axes = as_tuple(axes)
    out_rank = len(t.shape) + len(axes)
    norm = set(check_axes(axes, out_rank, node))
    dims = iter(t.shape)
    return [t.with_shape(tuple(1 if i in norm else next(dims) for i in range(out_rank)))]


def _squeeze(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    axes = const_ints(node, 1, None)
    if t.shape is None or axes is NOT_CONSTANT:
        return [t.with_shape(None)]
    if axes is None:
        if None in t.shape:
            return [t.with_shape(None)]
        return [t.with_shape(tuple(d for d in t.shape if d != 1))]
    norm = check_axes(as_tuple(axes), len(t.shape), node)
    for a in norm:
        if t.shape[a] not in (1, None):
            raise ShapeError(f"{node.kind}: cannot squeeze axis {a} of size {t.shape[a]}")
    return [t.with_shape(tuple(d for i, d in enumerate(t.shape) if i not in norm))]


# -- indexing along one axis --------------------------------------------------------------------
def _select(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    if t.shape is None:
        return [t]
    rank = len(t.shape)
    if rank == 0:
        raise ShapeError(f"{node.kind}: cannot index a 0-d tensor")
    axis = _constant_axis(node, 1, rank)
    if axis is None:
        return [t.with_shape((None,) * (rank - 1))]
    return [t.with_shape(drop_dim(t.shape, axis))]


def _slice(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    step = const(node, 4, None)
    if step == 0:
        raise ShapeError(f"{node.kind}: slice step cannot be zero")
    if t.shape is None:
        return [t]
    rank = len(t.shape)
    if rank == 0:
        raise ShapeError(f"{node.kind}: cannot slice a 0-d tensor")
    axis = _constant_axis(node, 1, rank)
    if axis is None:
        return [t.with_shape((None,) * rank)]
    start, stop = const(node, 2, None), const(node, 3, None)
    n = t.shape[axis]
    if n is None or NOT_CONSTANT in (start, stop, step):
        return [t.with_shape(replace_dim(t.shape, axis, None))]
    size = len(range(*slice(start, stop, step).indices(n)))
    return [t.with_shape(replace_dim(t.shape, axis, size))]


def _size(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    if t.shape is not None:
        _constant_axis(node, 1, len(t.shape))
    return [INT]


def _shape(node: Node) -> list[Type]:
    return [ListType(INT)]


def _ndim(node: Node) -> list[Type]:
    return [INT]


def _dtype(node: Node) -> list[Type]:
    tensor_arg(node, 0)
    return [STR]


# -- splitting ----------------------------------------------------------------------------------
def _constant_count(node: Node, index: int, what: str) -> int:
    count = const(node, index)
    if count is NOT_CONSTANT:
        raise ShapeError(f"{node.kind}: the number of {what} must be a constant")
    if int(count) <= 0:
        raise ShapeError(f"{node.kind}: the number of {what} must be positive, got {count}")
    return int(count)


def chunk_sizes(n: int, chunks: int) -> list[int] | None:
    """torch.chunk's piece sizes along an axis of size ``n`` (ceil(n / chunks) each, the last
    shorter), or None when that does not give exactly ``chunks`` pieces."""
    if n == 0:
        return [0] * chunks
    size = -(-n // chunks)
    pieces = -(-n // size)
    if pieces != chunks:
        return None
    return [size] * (chunks - 1) + [n - size * (chunks - 1)]


def _pieces(node: Node, count: int, sizes_for: object) -> list[Type]:
    t = tensor_arg(node, 0)
    if t.shape is None:
        return [t] * count
    axis = _constant_axis(node, 2, len(t.shape), 0)
    if axis is None:
        return [t.with_shape((None,) * len(t.shape))] * count
    n = t.shape[axis]
    if n is None:
        return [t.with_shape(replace_dim(t.shape, axis, None))] * count
    sizes = sizes_for(n, count)  # type: ignore[operator]
    return [t.with_shape(replace_dim(t.shape, axis, s)) for s in sizes]


def _chunk(node: Node) -> list[Type]:
    chunks = _constant_count(node, 1, "chunks")

    def sizes(n: int, count: int) -> list[int]:
        found = chunk_sizes(n, count)
        if found is None:
            raise ShapeError(f"{node.kind}: an axis of size {n} does not make {count} chunks")
        return found
    return _pieces(node, chunks, sizes)


def _split(node: Node) -> list[Type]:
    sections = _constant_count(node, 1, "sections")

    def sizes(n: int, count: int) -> list[int]:
        if n % count:
            raise ShapeError(f"{node.kind}: an axis of size {n} does not split into {count} "
                             "equal sections")
        return [n // count] * count
    return _pieces(node, sections, sizes)


def _split_list(node: Node) -> list[Type]:
    """np.split with a count known once specialized: a list of pieces of the split's type
    (the axis's size unknown while the count is)."""
    t = tensor_arg(node, 0)
    count = const(node, 1)
    if count is not NOT_CONSTANT:
        return [ListType(_split(node)[0])]
    if t.shape is None:
        return [ListType(t)]
    axis = _constant_axis(node, 2, len(t.shape), 0)
    if axis is None:
        return [ListType(t.with_shape((None,) * len(t.shape)))]
    return [ListType(t.with_shape(replace_dim(t.shape, axis, None)))]


def _unbind(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    if t.shape is None:
        return [ListType(t)]
    rank = len(t.shape)
    if rank == 0:
        raise ShapeError(f"{node.kind}: cannot unbind a 0-d tensor")
    axis = _constant_axis(node, 1, rank, 0)
    if axis is None:
        return [ListType(t.with_shape((None,) * (rank - 1)))]
    return [ListType(t.with_shape(drop_dim(t.shape, axis)))]


# -- joining ------------------------------------------------------------------------------------
def _common_rank(items: list[TensorType], node: Node) -> int | None:
    ranks = {len(t.shape) for t in items if t.shape is not None}
    if len(ranks) > 1:
        raise ShapeError(f"{node.kind}: all inputs must have the same rank, got ranks "
                         f"{sorted(ranks)}")
    return ranks.pop() if ranks else None


def _cat(node: Node) -> list[Type]:
    items, common = tensor_items(node.inputs[0])
    if items is None:
        return [_cat_unknown_count(node, common)]
    if not items:
        raise ShapeError(f"{node.kind}: need at least one tensor to concatenate")
    dtype, device = items_dtype(items), items_device(items, node)
    rank = _common_rank(items, node)
    if rank is None:
        return [TensorType(dtype, None, device)]
    if rank == 0:
        raise ShapeError(f"{node.kind}: 0-d tensors cannot be concatenated")
    axis = _constant_axis(node, 1, rank, 0)
    if axis is None:
        return [TensorType(dtype, (None,) * rank, device)]
    shapes = [t.shape for t in items if t.shape is not None]
    dims: list[Dim] = []
    for i in range(rank):
        column = [s[i] for s in shapes]
        if i != axis:
            dims.append(merge_dims(column, node, i))
            continue
        complete = len(shapes) == len(items) and None not in column
        dims.append(sum(column) if complete else None)  # type: ignore[arg-type]
    return [TensorType(dtype, tuple(dims), device)]


def _cat_unknown_count(node: Node, element: TensorType) -> TensorType:
    if element.shape is None:
        return element
    rank = len(element.shape)
    if rank == 0:
        raise ShapeError(f"{node.kind}: 0-d tensors cannot be concatenated")
    axis = _constant_axis(node, 1, rank, 0)
    if axis is None:
        return element.with_shape((None,) * rank)
    return element.with_shape(replace_dim(element.shape, axis, None))


def _stack(node: Node) -> list[Type]:
    items, common = tensor_items(node.inputs[0])
    count: Dim = None if items is None else len(items)
    if items is None:
        items = [common]
    elif not items:
        raise ShapeError(f"{node.kind}: need at least one tensor to stack")
    dtype, device = items_dtype(items), items_device(items, node)
    rank = _common_rank(items, node)
    if rank is None:
        return [TensorType(dtype, None, device)]
    axis = _constant_axis(node, 1, rank + 1, 0)
    if axis is None:
        return [TensorType(dtype, (None,) * (rank + 1), device)]
    shapes = [t.shape for t in items if t.shape is not None]
    dims = tuple(merge_dims([s[i] for s in shapes], node, i) for i in range(rank))
    return [TensorType(dtype, dims[:axis] + (count,) + dims[axis:], device)]


SHAPE = (PURE,)
VIEWS = (PURE, VIEW)
"""numpy returns a view of the input (``reshape`` when it can)."""
ALWAYS_VIEWS = (PURE, VIEW, ALWAYS_VIEW)
"""numpy always returns a view of the input."""

defop("tensor::transpose(a: Tensor, axes: ints? = None) -> Tensor", _transpose, ALWAYS_VIEWS,
      (".T", "np.transpose", ".transpose"), "permute the axes (reverse them when axes is None)")
defop("tensor::reshape(a: Tensor, shape: ints) -> Tensor", _reshape, VIEWS,
      (".reshape", "np.reshape"), "the same elements in a new shape; one -1 is inferred",
      sizes=("shape",))
defop("tensor::expand_dims(a: Tensor, axis: ints) -> Tensor", _expand_dims, ALWAYS_VIEWS,
      ("np.expand_dims",), "insert size-1 axes at the given output positions")
defop("tensor::squeeze(a: Tensor, axis: ints? = None) -> Tensor", _squeeze, ALWAYS_VIEWS,
      (".squeeze", "np.squeeze"), "remove size-1 axes (all of them when axis is None)")
defop("tensor::select(a: Tensor, axis: int, index: int) -> Tensor", _select, ALWAYS_VIEWS,
      ("x[i]",), "the slice at `index` along `axis`, dropping the axis; negative index counts "
      "from the end")
defop("tensor::slice(a: Tensor, axis: int, start: int? = None, stop: int? = None, "
      "step: int? = None) -> Tensor", _slice, ALWAYS_VIEWS, ("x[a:b:c]",),
      "basic slicing a[start:stop:step] along one axis")
defop("tensor::size(a: Tensor, axis: int) -> int", _size, SHAPE + (ZERO_DERIVATIVE, SHAPE_ONLY),
      ("x.shape[i]",),
      "the size of one axis")
defop("tensor::shape(a: Tensor) -> int[]", _shape, (FRESH, ZERO_DERIVATIVE, SHAPE_ONLY),
      (".shape",),
      "the shape: a list of ints in the IR, a tuple of ints at run time (numpy's)")
defop("tensor::ndim(a: Tensor) -> int", _ndim, SHAPE + (ZERO_DERIVATIVE, SHAPE_ONLY),
      (".ndim", "np.ndim"), "the rank")
defop("tensor::dtype(a: Tensor) -> str", _dtype, SHAPE + (ZERO_DERIVATIVE, SHAPE_ONLY),
      (".dtype",),
      "the name of the dtype (``np.zeros(3, dtype=x.dtype)``); known once the function is "
      "specialized, where it folds to a constant")
defop("tensor::chunk(a: Tensor, chunks: int, axis: int = 0) -> (Tensor, ...)", _chunk,
      ALWAYS_VIEWS,
      ("ops.chunk",), "`chunks` pieces of ceil(n / chunks) along `axis`, the last one shorter "
      "(torch.chunk); `chunks` must be a constant")
defop("tensor::split(a: Tensor, sections: int, axis: int = 0) -> (Tensor, ...)", _split,
      ALWAYS_VIEWS,
      ("np.split",), "`sections` equal pieces along `axis` (np.split with an int)")
defop("tensor::split_list(a: Tensor, sections: int, axis: int = 0) -> Tensor[]", _split_list,
      (FRESH, VIEW), (), "np.split with a count that is an argument: a new list of the pieces "
      "(a split once the count is known)", sizes=("sections",))
defop("tensor::unbind(a: Tensor, axis: int = 0) -> Tensor[]", _unbind, (FRESH, VIEW),
      ("ops.unbind",), "a new list of the slices along `axis`")
defop("tensor::cat(tensors: Tensor[], axis: int = 0) -> Tensor", _cat, SHAPE,
      ("np.concatenate", "ops.cat"), "join tensors along an existing axis")
defop("tensor::stack(tensors: Tensor[], axis: int = 0) -> Tensor", _stack, SHAPE,
      ("np.stack", "ops.stack"), "join same-shape tensors along a new axis")
