"""Canonicalization rules writing numpy functions whose meaning depends on numbers of axes as the
ops they then are: ``np.dot`` as a matmul or a multiplication, ``np.vstack`` / ``np.hstack`` /
``np.column_stack`` as ``np.stack`` or ``np.concatenate``, ``np.swapaxes`` as ``np.transpose``,
``np.flip`` without an axis as slices with step -1, and ``np.stack(hs[1:])`` of a list whose
items have one shape as ``np.stack(hs)`` sliced (which differentiation follows); ``x.shape``
of a static shape as the list of its sizes.

The front end cannot choose (an argument's number of axes is known only once the function is
specialized), so it writes ``tensor::dot`` / ``tensor::vstack`` / ``tensor::hstack`` /
``tensor::column_stack``; after shape
propagation these rules turn them into the ops the loop passes, the fuser and the differentiation
know. A rule leaves its op alone where the ranks are still unknown or mixed: the eager op then
computes numpy's result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ir.core import Node, Value
from ir.kinds import IF as IF_KIND
from ir.ops.numpy_ops import moved_axes
from ir.ops.shape import const_ints, tensor_items
from ir.registry import (
    ALIASES,
    NOT_CONSTANT,
    ONLY_READS,
    constant_of,
    effects_on_input,
    infer_types,
)
from ir.types import BOOL, INT, INT_DTYPES, ListType, TensorType, Type, is_number, unify


def _rank(v: Value) -> int | None:
    """The number of axes of a tensor (0 for a Python number), None when unknown."""
    t = v.type
    if is_number(t):
        return 0
    return t.rank if isinstance(t, TensorType) else None


def _replace(node: Node, kind: str, inputs: list[Value]) -> bool:
    """Replace ``node``'s output by ``kind(*inputs)`` inserted before it."""
    new = node.graph.create(kind, inputs, [], source=node.source)
    for t in infer_types(new):
        new.add_output(t)
    new.insert_before(node)
    node.output.replace_all_uses_with(new.output)
    node.erase()
    return True


def _constant(node: Node, value: Any) -> Value:
    with node.graph.inserting_before(node):
        return node.graph.constant(value)


def dot_as_matmul(node: Node) -> bool:
    """``np.dot(a, b)`` is ``a * b`` when an operand is 0-d and ``a @ b`` when ``b`` has at most 2
    axes (numpy.dot's definition)."""
    a, b = node.inputs
    ra, rb = _rank(a), _rank(b)
    if ra is None or rb is None:
        return False
    if ra == 0 or rb == 0:
        return _scale(node)
    if rb <= 2:
        return _replace(node, "tensor::matmul", [a, b])
    return False


LIST_STORES = {"prim::ListAppend": 1, "prim::ListInsert": 2, "prim::ListSetItem": 2}
"""list ops that put an item into their list: the item's input index."""
LIST_READS = frozenset({"prim::len", "prim::ListIndex", "prim::ListSlice", "prim::ListPop",
                        "prim::ListContains", "tensor::vstack", "tensor::hstack",
                        "tensor::column_stack", "tensor::dstack", "tensor::cat",
                        "tensor::stack"})
"""ops that read a list (or remove items) without putting an item into it or sharing it."""


def _stored_types(lst: Value) -> list[Type] | None:
    """The types of every item a list made by a construct in this graph can hold: the
    construct's items and every value stored into it; None when the list is shared with an op
    that could store another (a call, another container)."""
    if lst.node.kind != "prim::ListConstruct":
        return None
    types = [v.type for v in lst.node.inputs]
    for use in lst.uses:
        index = LIST_STORES.get(use.node.kind)
        if index is not None and use.index == 0:
            types.append(use.node.inputs[index].type)
        elif use.node.kind not in LIST_READS:
            return None
    return types


def _scale(node: Node) -> bool:
    """``np.dot`` with a 0-d operand: a multiplication in the dtype np.dot gives, which takes a
    Python number as an array (float64 for a float), not as a weak scalar."""
    a, b = node.inputs
    out = node.output.type
    if not isinstance(out, TensorType) or out.dtype is None:
        return False
    inputs = []
    for v in (a, b):
        t = v.type
        if isinstance(t, TensorType) and t.dtype != out.dtype:
            with node.graph.inserting_before(node):
                dtype = node.graph.constant(out.dtype)
            new = node.graph.create("tensor::astype", [v, dtype], [], source=node.source)
            for rt in infer_types(new):
                new.add_output(rt)
            v = new.insert_before(node).output
        inputs.append(v)
    return _replace(node, "tensor::mul", inputs)


def _item_rank(node: Node) -> int | None:
    """The one number of axes every item of a joining op's sequence has, or None."""
    items, common = tensor_items(node.inputs[0])
    types: list[Type] | None = items if items is not None else [common]
    if common.shape is None and items is None:
        types = _stored_types(node.inputs[0])
    ranks = {t.rank if isinstance(t, TensorType) else None for t in types or [TensorType()]}
    return ranks.pop() if len(ranks) == 1 else None


def _sequence(node: Node) -> Value:
    """The joining op's items as a list: a tuple construct becomes a list construct of its items
    (the form whose gradient the differentiation knows for ``np.concatenate``)."""
    seq = node.inputs[0]
    if seq.node.kind != "prim::TupleConstruct" or not seq.node.inputs:
        return seq
    element = _covering([v.type for v in seq.node.inputs])
    with node.graph.inserting_before(node):
        return node.graph.insert("prim::ListConstruct", list(seq.node.inputs),
                                 [ListType(element)], source=seq.node.source).output


def _covering(types: list[Type]) -> Type:
    joined: Type | None = types[0]
    for t in types[1:]:
        joined = unify(joined, t) if joined is not None else None
    return joined if joined is not None else TensorType()


def vstack_as_join(node: Node) -> bool:
    """``np.vstack`` of 1-D arrays is ``np.stack(items, 0)``, of arrays with 2 or more axes
    ``np.concatenate(items, 0)``, of 0-d and 1-D ones among matrices (or 0-d ones alone) the
    concatenation of their 2-D forms."""
    return _join_along(node, 0)


def column_stack_as_join(node: Node) -> bool:
    """``np.column_stack`` of 1-D arrays is ``np.stack(items, 1)``, of arrays with 2 or more
    axes ``np.concatenate(items, 1)`` (``np.hstack``'s join)."""
    return _join_along(node, 1)


def dstack_as_join(node: Node) -> bool:
    """``np.dstack`` of 2-D arrays is ``np.stack(items, 2)``, of arrays with 3 or more axes
    ``np.concatenate(items, 2)``; of 0-d or 1-D ones it stays numpy's."""
    rank = _item_rank(node)
    if rank is None or rank < 2:
        return False
    kind = "tensor::stack" if rank == 2 else "tensor::cat"
    return _replace(node, kind, [_sequence(node), _constant(node, 2)])


def _join_along(node: Node, axis: int) -> bool:
    """1-D items stacked along ``axis``, items of 2 or more axes concatenated along it; 0-d
    and 1-D items among others (or 0-d ones alone) made 2-D first (``_promoted_items``)."""
    rank = _item_rank(node)
    if rank is None or rank == 0:
        return _promoted_items(node, axis, 2)
    kind = "tensor::stack" if rank == 1 else "tensor::cat"
    return _replace(node, kind, [_sequence(node), _constant(node, axis)])


def _promoted_items(node: Node, axis: int, ndmin: int) -> bool:
    """numpy's join of items of fewer than ``ndmin`` axes among others: ``np.vstack([row,
    matrix])`` (pyESN's ``np.vstack([laststate, np.zeros((n, N))])``), ``np.column_stack([column,
    matrix])``, ``np.vstack((1, u))`` of a number and a column (Mantas Lukosevicius' ESN): a
    0-d item becomes ``(1,) * ndmin``, a 1-D one (``ndmin`` 2) a row or column
    (``expand_dims(item, axis)``), and the items are concatenated along ``axis``, as numpy does.
    Only for a list or tuple literal that nothing else uses, whose items have at most
    ``ndmin`` axes."""
    seq = node.inputs[0]
    if seq.node.kind not in ("prim::ListConstruct", "prim::TupleConstruct") or \
            len(seq.uses) != 1:
        return False
    ranks = {v.type.rank if isinstance(v.type, TensorType) else None for v in seq.node.inputs}
    if None in ranks or not ranks or max(ranks) > ndmin or ranks == {ndmin}:
        return False
    items = []
    for v in seq.node.inputs:
        rank = v.type.rank
        if rank == 0:
            kind, arg = "tensor::reshape", _constant(node, (1,) * ndmin)
        elif rank < ndmin:
            kind, arg = "tensor::expand_dims", _constant(node, axis)
        else:
            items.append(v)
            continue
        new = node.graph.create(kind, [v, arg], [], source=node.source)
        for t in infer_types(new):
            new.add_output(t)
        items.append(new.insert_before(node).output)
    with node.graph.inserting_before(node):
        joined = node.graph.insert("prim::ListConstruct", items,
                                   [ListType(_covering([v.type for v in items]))],
                                   source=seq.node.source).output
    return _replace(node, "tensor::cat", [joined, _constant(node, axis)])


def hstack_as_join(node: Node) -> bool:
    """``np.hstack`` of 0-d arrays is ``np.stack(items, 0)``, of 1-D arrays (0-d ones among
    them made 1-D) ``np.concatenate(items, 0)``, of others ``np.concatenate(items, 1)``."""
    rank = _item_rank(node)
    if rank is None:
        return _promoted_items(node, 0, 1)  # numbers among vectors: np.hstack((1.0, v))
    if rank == 0:
        return _replace(node, "tensor::stack", [_sequence(node), _constant(node, 0)])
    return _replace(node, "tensor::cat", [_sequence(node), _constant(node, 0 if rank == 1 else 1)])


def swapaxes_as_transpose(node: Node) -> bool:
    """``np.swapaxes(a, i, j)`` is ``np.transpose(a, axes)`` with axes ``i`` and ``j`` of the
    identity permutation exchanged."""
    a, i, j = node.inputs
    rank = _rank(a)
    if rank is None or not i.is_constant or not j.is_constant:
        return False
    axes = list(range(rank))
    p, q = int(i.constant) % max(rank, 1), int(j.constant) % max(rank, 1)
    axes[p], axes[q] = axes[q], axes[p]
    with node.graph.inserting_before(node):
        perm = node.graph.constant(tuple(axes))
    return _replace(node, "tensor::transpose", [a, perm])


def moveaxis_as_transpose(node: Node) -> bool:
    """``np.moveaxis(a, source, destination)`` is ``np.transpose(a, axes)`` with the axes it
    moves in their places and the others in order."""
    rank = _rank(node.inputs[0])
    source, destination = const_ints(node, 1), const_ints(node, 2)
    if rank is None or source is NOT_CONSTANT or destination is NOT_CONSTANT:
        return False
    order = moved_axes(source, destination, rank, node)
    with node.graph.inserting_before(node):
        perm = node.graph.constant(tuple(order))
    return _replace(node, "tensor::transpose", [node.inputs[0], perm])


def flip_as_slices(node: Node) -> bool:
    """``np.flip(a)`` is ``a[::-1, ::-1, ...]``: a slice with step -1 along every axis."""
    (a,) = node.inputs
    rank = _rank(a)
    if rank is None:
        return False
    graph, out = node.graph, a
    with graph.inserting_before(node):
        for axis in range(rank):
            inputs = [out, graph.constant(axis), graph.constant(None), graph.constant(None),
                      graph.constant(-1)]
            step = graph.create("tensor::slice", inputs, [], source=node.source)
            for t in infer_types(step):
                step.add_output(t)
            out = step.insert_before(node).output
    node.output.replace_all_uses_with(out)
    node.erase()
    return True


def mixed_matmul_cast(node: Node) -> bool:
    """``a @ w`` of a float32 and a float64 array is numpy's float64 product of the float32
    operand cast (the buffers of ported code are float64, ``np.zeros``'s default, its weights
    float32): the cast made explicit, so that a loop-invariant weight is cast once before the
    loop and the product in the loop is of one dtype (which a native loop needs)."""
    a, b = node.inputs
    ta, tb, out = a.type, b.type, node.output.type
    floats = ("float32", "float64")
    if not (isinstance(ta, TensorType) and isinstance(tb, TensorType)
            and isinstance(out, TensorType) and ta.dtype in floats and tb.dtype in floats
            and ta.dtype != tb.dtype and out.dtype == "float64"):
        return False
    with node.graph.inserting_before(node):
        dtype = node.graph.constant("float64")
    cast = node.graph.create_typed("tensor::astype", [a if ta.dtype == "float32" else b, dtype],
                                   source=node.source).insert_before(node).output
    node.set_input(0 if ta.dtype == "float32" else 1, cast)
    return True


def _scalar_index(v: Value) -> bool:
    """An int, or a 0-d array of ints (``V[t]`` of an int array: numpy's scalar)."""
    t = v.type
    return t == INT or (isinstance(t, TensorType) and t.shape == () and t.dtype in INT_DTYPES)


def _as_int(at: Node, v: Value) -> Value:
    if v.type == INT:
        return v
    return at.graph.create_typed("prim::Int", [v], source=at.source).insert_before(at).output


def _written(v: Value) -> bool:
    """Whether a write into a copy of ``v`` (``y[0] = 1`` on ``y = b[:, V[t]]``) reads it."""
    return any("_put" in u.node.kind for u in v.uses)


def scalar_take_as_select(node: Node) -> bool:
    """``b[:, V[t]]``, a take at a 0-d int array (an item of an int array, numpy's scalar), is
    numpy's basic indexing at that int: ``select(b, 1, int(V[t]))``. A native loop then reads
    the row in place (it reads ints, not 0-d arrays, as indices); the gradient adds into one
    slot instead of scattering. Not where the result is written into."""
    a, indices, axis = node.inputs
    if not _scalar_index(indices) or indices.type == INT or not axis.is_constant or _written(
            node.output):
        return False
    return _replace(node, "tensor::select", [a, axis, _as_int(node, indices)])


def scalar_pairs_as_select(node: Node) -> bool:
    """``b[j, V[t]]`` at ints or 0-d int arrays: ``select(select(b, 0, j), 0, int(V[t]))``."""
    a, rows, cols = node.inputs
    if not (_scalar_index(rows) and _scalar_index(cols)) or _written(node.output):
        return False
    if not isinstance(a.type, TensorType) or a.type.rank is None or a.type.rank < 2:
        return False
    with node.graph.inserting_before(node):
        zero = node.graph.constant(0)
    row = node.graph.create_typed("tensor::select", [a, zero, _as_int(node, rows)],
                                  source=node.source).insert_before(node).output
    return _replace(node, "tensor::select", [row, zero, _as_int(node, cols)])


def stack_of_list_slice(node: Node) -> bool:
    """``np.stack(hs[1:], axis)`` (the states after the initial one) as ``np.stack(hs,
    axis)`` sliced along ``axis``: the same array where every item of ``hs`` has one static
    shape (the list's item type), and a stack of a whole list is what differentiation follows.
    A check that the slice holds an item keeps numpy's ValueError for an empty one; the list
    must not change between the slice and the stack."""
    sliced = node.inputs[0].node
    if sliced.kind != "prim::ListSlice" or len(node.inputs) != 2:
        return False
    lst, axis = sliced.inputs[0], constant_of(node.inputs[1])
    item = lst.type.element if isinstance(lst.type, ListType) else None
    if not isinstance(item, TensorType) or item.shape is None or None in item.shape or \
            type(axis) is not int or not -len(item.shape) - 1 <= axis <= len(item.shape):
        return False
    for use in lst.uses:  # a change between the slice and the stack, or another name for it
        effects = effects_on_input(use.node, use.index)
        if use.node is not sliced and (ALIASES in effects or (
                effects != ONLY_READS and sliced.is_before(use.node)
                and use.node.is_before(node))):
            return False
    graph = node.graph
    with graph.inserting_before(node):
        count = graph.insert("prim::len", [sliced.output], [INT]).output
        empty = graph.insert("tensor::eq", [count, graph.constant(0)], [BOOL]).output
        check = graph.insert(IF_KIND, [empty], [], nblocks=2, source=node.source)
        with graph.inserting_before(check.blocks[0].return_node):
            message = graph.constant("need at least one array to stack")
            graph.insert("prim::RaiseException", [message], [], {"exception": "ValueError"},
                         source=node.source)
        whole = graph.create_typed("tensor::stack", [lst, node.inputs[1]], source=node.source)
        whole.insert_before(node)
        axis_value = graph.constant(axis)
    return _replace(node, "tensor::slice", [whole.output, axis_value, *sliced.inputs[1:]])


def static_shape(node: Node) -> bool:
    """``x.shape`` of an array whose shape the types know: a list of those ints, which a slice
    or a sum of shapes reads (``g.reshape((n, h, 4) + g.shape[2:])`` then has a static shape)."""
    t = node.inputs[0].type
    if not isinstance(t, TensorType) or t.shape is None or None in t.shape:
        return False
    with node.graph.inserting_before(node):
        sizes = [node.graph.constant(int(d)) for d in t.shape]
    return _replace(node, "prim::ShapeConstruct", sizes)


def constant_shape_as_tuple(node: Node) -> bool:
    """A shape list of constant sizes that only array ops read (``g.reshape(shape)``) as the
    constant tuple of them: the reshape inside a loop then needs no list (a native loop builds
    none)."""
    sizes = tuple(constant_of(v) for v in node.inputs)
    if not sizes or any(type(d) is not int for d in sizes) or \
            not all(u.node.kind.startswith("tensor::") for u in node.output.uses):
        return False
    with node.graph.inserting_before(node):
        shape = node.graph.constant(sizes)
    node.output.replace_all_uses_with(shape)
    node.erase()
    return True


NUMPY_RULES: dict[str, Callable[[Node], bool]] = {
    "tensor::shape": static_shape,
    "prim::ShapeConstruct": constant_shape_as_tuple,
    "tensor::stack": stack_of_list_slice,
    "tensor::take": scalar_take_as_select,
    "tensor::index_pairs": scalar_pairs_as_select,
    "tensor::flip": flip_as_slices,
    "tensor::dot": dot_as_matmul,
    "tensor::vstack": vstack_as_join,
    "tensor::hstack": hstack_as_join,
    "tensor::column_stack": column_stack_as_join,
    "tensor::dstack": dstack_as_join,
    "tensor::swapaxes": swapaxes_as_transpose,
    "tensor::moveaxis": moveaxis_as_transpose,
}
"""kind -> canonicalization rule (merged into ``passes.canonicalize.RULES``)."""
