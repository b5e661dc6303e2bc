"""Peephole rewrites, one small rule per op kind, applied until none fires.

Every rule is ``(node) -> bool`` (True when it rewrote something) in the ``RULES`` table. Identities
that could change a result's type are applied only when the types prove they don't: ``x * 1`` is
``x`` only when ``x`` already has the result's dtype and shape (broadcasting against a constant
array, or a float constant on an int tensor, would change them). Identities that turn a new array
into one of the op's inputs (``IDENTITY_RULES``) apply only to values the caller never receives
(``ir.alias``): ``return x * 1.0`` gives a new array in Python, and mutating it must not change
``x``. A copy (``x.copy()``, ``x.astype(x.dtype)``) may also hand the caller ``x`` itself when
``x`` is a new array of this graph that the caller would not otherwise reach: a stacked layer
output cast to the dtype it already has costs no copy then.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ir.alias import StorageClasses, may_share_input
from ir.core import CONSTANT, Graph, Node, Value
from ir.ops.elementwise import CASTING_ATTR
from ir.registry import NOT_CONSTANT, WRITES, ShapeError, const, constant_of, lookup
from ir.types import FLOAT, NONE, OptionalType, TensorType, TupleType
from passes.numpy_lowering import NUMPY_RULES, mixed_matmul_cast

NAME = "canonicalize"
SETTLES = True
"""a second run on the graph this pass leaves changes nothing (``run_pipeline``)."""

MAX_ROUNDS = 100
"""Sweeps over the graph before giving up on a fixed point (each sweep shrinks the graph, so a
real program converges in a handful; the bound only guards against two rules undoing each other)."""


# -- helpers -------------------------------------------------------------------------------------
def forward_outputs(node: Node, values: list[Value]) -> bool:
    """Make every reader of ``node``'s outputs read ``values`` instead, then drop ``node``."""
    for out, v in zip(node.outputs, values):
        out.replace_all_uses_with(v)
    node.erase()
    return True


def replace_with_constant(node: Node, value: Any) -> bool:
    """Replace ``node``'s single output by a constant of the same type."""
    out = node.output
    graph = node.graph
    c = graph.create(CONSTANT, (), (out.type,), {"value": value}, names=[out.name])
    c.insert_before(node)
    return forward_outputs(node, [c.output])


def _is_unit(value: Value, unit: int) -> bool:
    """A constant equal to ``unit`` (0 or 1): a non-bool number or an array of that value."""
    c = constant_of(value)
    if isinstance(c, np.ndarray):
        return c.dtype != np.bool_ and c.size > 0 and bool(np.all(c == unit))
    return isinstance(c, (int, float, np.number)) and not isinstance(c, bool) and c == unit


def _same_result(x: Value, out: Value, other: Value) -> bool:
    """Is ``out`` known to have exactly ``x``'s type, whatever broadcasting ``other`` brings?"""
    if x.type != out.type:
        return False
    t = x.type
    if not isinstance(t, TensorType):
        return True
    if t.dtype is None or t.shape is None:
        return False
    # a constant array could broadcast against an unknown dim: then x's shape must be fully known
    return not isinstance(constant_of(other), np.ndarray) or None not in t.shape


def _producer(value: Value, kind: str) -> Node | None:
    return value.node if value.node.kind == kind else None


def _axes_none(node: Node) -> bool:
    return len(node.inputs) < 2 or constant_of(node.inputs[1]) is None


# -- rules ---------------------------------------------------------------------------------------
def _identity_operand(units: dict[int, int], signed_zero: bool = False
                       ) -> Callable[[Node], bool]:
    """``x op c -> x`` when input ``i`` is the constant ``units[i]`` and the type is unchanged.
    ``signed_zero`` (addition): a float ``x`` only for a negative zero ``c``, as ``-0.0 + 0.0``
    is ``+0.0`` (``1 / (x * 0 + 0.0)`` is ``inf`` for every ``x``)."""

    def rule(node: Node) -> bool:
        if len(node.inputs) != 2:
            return False
        for i, unit in units.items():
            x, c = node.inputs[1 - i], node.inputs[i]
            if _is_unit(c, unit) and _same_result(x, node.output, c) and not (
                    signed_zero and _is_float(x) and not _negative_zero(c)):
                return forward_outputs(node, [x])
        return False

    return rule


def _is_float(v: Value) -> bool:
    t = v.type
    if isinstance(t, TensorType):
        return t.dtype is None or np.dtype(t.dtype).kind in "fc"
    return t == FLOAT


def _negative_zero(v: Value) -> bool:
    c = constant_of(v)
    return bool(np.all(np.signbit(c))) if isinstance(c, (float, np.ndarray, np.floating)) \
        else False


def double_transpose(node: Node) -> bool:
    """``x.T.T -> x`` (full reversal of the axes, twice)."""
    inner = _producer(node.inputs[0], node.kind)
    if inner is None or not _axes_none(node) or not _axes_none(inner):
        return False
    return forward_outputs(node, [inner.inputs[0]])


def double_negation(node: Node) -> bool:
    """``-(-x) -> x`` (not for bools: ``-(-True)`` is the int 1)."""
    inner = _producer(node.inputs[0], node.kind)
    if inner is None or inner.inputs[0].type != node.output.type:
        return False
    return forward_outputs(node, [inner.inputs[0]])


def reshape_of_reshape(node: Node) -> bool:
    """``x.reshape(a).reshape(b) -> x.reshape(b)``: only the last shape matters."""
    inner = _producer(node.inputs[0], node.kind)
    if inner is None:
        return False
    node.set_input(0, inner.inputs[0])
    return True


def broadcast_to_own_shape(node: Node) -> bool:
    """``np.broadcast_to(x, s) -> x`` where ``x``'s static shape is ``s`` (``x op= v`` checks
    that ``x op v`` keeps ``x``'s shape this way); ``sum_to(x, s) -> x`` too (a gradient
    summed to its input's shape, ``s`` read at run time where the shapes were not known when
    it was differentiated)."""
    t, out = node.inputs[0].type, node.output.type
    if not (isinstance(t, TensorType) and t.shape is not None and None not in t.shape
            and isinstance(out, TensorType) and out.shape == t.shape):
        return False
    return forward_outputs(node, [node.inputs[0]])


def tuple_unpack_of_construct(node: Node) -> bool:
    """``a, b = (x, y) -> x, y``."""
    ctor = _producer(node.inputs[0], "prim::TupleConstruct")
    if ctor is None or len(ctor.inputs) != len(node.outputs):
        return False
    return forward_outputs(node, list(ctor.inputs))


def list_unpack_of_construct(node: Node) -> bool:
    """``a, b = [x, y] -> x, y`` when every use of the list only reads it (so nothing changed
    it): ``Wx, Wh, b = params`` in a function called with ``[Wx, Wh, b]``."""
    ctor = _producer(node.inputs[0], "prim::ListConstruct")
    if ctor is None or len(ctor.inputs) != len(node.outputs) or \
            not _only_read(ctor.output, _LIST_READS):
        return False
    return forward_outputs(node, list(ctor.inputs))


def list_add_of_constructs(node: Node) -> bool:
    """``[a, b] + [c] -> [a, b, c]`` when nothing else uses the two lists (a helper's
    ``np.hstack(args + [ones])`` of a list its caller built)."""
    kind = node.inputs[0].node.kind  # (shapes too: `(n, h, 4) + x.shape[2:]`)
    ctors = [_producer(v, kind) for v in node.inputs]
    if kind not in _BUILDS or any(c is None or len(c.output.uses) != 1 for c in ctors) or \
            node.inputs[0] is node.inputs[1]:
        return False
    items = [v for c in ctors for v in c.inputs]  # type: ignore[union-attr]
    joined = node.graph.create(kind, items, [node.output.type], source=node.source)
    return forward_outputs(node, [joined.insert_before(node).output])


_LIST_READS = frozenset({"prim::ListIndex", "prim::ListUnpack", "prim::ListAdd", "prim::len"})
_BUILDS = ("prim::ListConstruct", "prim::ShapeConstruct")
"""the ops that build a new list of their inputs (a shape's list of ints is one)."""


def _only_read(container: Value, reads: frozenset[str]) -> bool:
    """Every use of ``container`` is one of ``reads``, an array op or a pure op whose result
    nothing uses (a list of dicts whose items were forwarded): nothing changes it."""
    return all(u.node.kind in reads or u.node.kind.startswith("tensor::") or
               (u.node.kind in _PURE_BUILDS and not u.node.output.uses) for u in container.uses)


_PURE_BUILDS = frozenset({"prim::ListConstruct", "prim::TupleConstruct", "prim::DictConstruct"})


def dict_get_of_construct(node: Node) -> bool:
    """``{"W": w, "b": b}["W"] -> w`` for a constant key when every use of the dict only reads
    it (the last pair of a repeated key is the one kept, as in Python)."""
    ctor = _producer(node.inputs[0], "prim::DictConstruct")
    key = constant_of(node.inputs[1])
    if ctor is None or type(key) not in (int, str) or not _only_read(ctor.output, _DICT_READS):
        return False
    pairs = ctor.inputs
    found = [pairs[i + 1] for i in range(0, len(pairs), 2)
             if type(k := constant_of(pairs[i])) is type(key) and k == key]
    if not found or any(constant_of(pairs[i]) is NOT_CONSTANT for i in range(0, len(pairs), 2)):
        return False
    return forward_outputs(node, [found[-1]])


def dict_contains_of_construct(node: Node) -> bool:
    """``k in {"W": w, "b": b}`` for a constant ``k`` when every key is a constant and every
    use of the dict only reads it: a constant (the dead branch of ``if "b" in layer`` goes)."""
    ctor = _producer(node.inputs[0], "prim::DictConstruct")
    key = constant_of(node.inputs[1])
    if ctor is None or type(key) not in (int, str) or not _only_read(ctor.output, _DICT_READS):
        return False
    keys = [constant_of(ctor.inputs[i]) for i in range(0, len(ctor.inputs), 2)]
    if any(type(k) not in (int, str) for k in keys):
        return False
    return replace_with_constant(node, any(type(k) is type(key) and k == key for k in keys))


def dict_keys_of_construct(node: Node) -> bool:
    """``list({"W": w, "b": b})`` (``d.keys()``, ``for k in d``) when every key is a constant
    and every use of the dict only reads it: the list literal of the keys, in order."""
    ctor = _producer(node.inputs[0], "prim::DictConstruct")
    if ctor is None or not _only_read(ctor.output, _DICT_READS):
        return False
    keys = [constant_of(ctor.inputs[i]) for i in range(0, len(ctor.inputs), 2)]
    if any(type(k) not in (int, str) for k in keys) or len(set(keys)) != len(keys):
        return False
    with node.graph.inserting_before(node):
        items = [node.graph.constant(k) for k in keys]
    made = node.graph.create("prim::ListConstruct", items, [node.output.type],
                             source=node.source)
    made.insert_before(node)
    return forward_outputs(node, [made.output])


_DICT_READS = frozenset({"prim::DictGetItem", "prim::len", "prim::DictContains",
                         "prim::DictKeys"})


def appends_into_literal(node: Node) -> bool:
    """``l = []; l.append(a); l.append(b)`` (a comprehension once unrolled) -> ``l = [a, b]``
    where the appends are in the literal's block and come before every other use of the list:
    nothing sees the list between them, so the literal of all the items, made at the last
    append, is the same list to every later reader (which ``[...][k]`` then forwards)."""
    lst = node.output
    appends = [u.node for u in lst.uses if u.node.kind == "prim::ListAppend" and u.index == 0]
    if not appends or any(a.owner is not node.owner for a in appends):
        return False
    order = {n: k for k, n in enumerate(node.owner.nodes)}
    appends.sort(key=order.__getitem__)
    last = order[appends[-1]]
    for use in lst.uses:
        user = use.node
        if user in appends:
            continue
        while user.owner is not node.owner:  # a use nested in a later node counts as it
            if user.owner is None or user.owner.owner is None:
                return False
            user = user.owner.owner
        if order.get(user, last) < last:  # (the block's return comes after every node)
            return False
    made = node.graph.create("prim::ListConstruct",
                             [*node.inputs, *(a.inputs[1] for a in appends)],
                             [lst.type], source=node.source, names=[lst.name])
    made.insert_after(appends[-1])
    for a in appends:
        a.erase()
    return forward_outputs(node, [made.output])


def extend_by_literal(node: Node) -> bool:
    """``l += [a, b]`` (``l.extend([a, b])``) -> ``l.append(a); l.append(b)`` when nothing else
    reads the literal: the same items at the same places, and no list made only to be copied
    from (a reverse pass then hands each append's cotangent to its item directly)."""
    lst, other = node.inputs
    ctor = _producer(other, "prim::ListConstruct")
    if ctor is None or other is lst or len(other.uses) != 1:
        return False
    graph = node.graph
    for item in ctor.inputs:
        graph.create("prim::ListAppend", [lst, item], [], source=node.source).insert_before(node)
    node.erase()
    ctor.erase()
    return True


def list_index_of_construct(node: Node) -> bool:
    """``[x, y, z][k] -> the k-th item`` for a constant ``k`` when every use of the list only
    reads it (indexing, ``+``, ``len``, array ops such as ``np.hstack``): nothing changes it."""
    ctor = _producer(node.inputs[0], "prim::ListConstruct")
    k = constant_of(node.inputs[1])
    if ctor is None or type(k) is not int or not -len(ctor.inputs) <= k < len(ctor.inputs) or \
            not _only_read(ctor.output, _LIST_READS):
        return False
    return forward_outputs(node, [ctor.inputs[k]])


def list_slice_of_construct(node: Node) -> bool:
    """``[x, y, z][:-1] -> [x, y]`` for constant bounds when every use of the list only reads
    it (``a, b = np.split(x, (d, 2 * d))[:-1]``): the slice is a new list of those items."""
    ctor = node.inputs[0].node
    bounds = [constant_of(v) for v in node.inputs[1:]]
    if ctor.kind not in _BUILDS or any(b is not None and type(b) is not int for b in bounds) or \
            bounds[2] == 0 or not _only_read(ctor.output, _LIST_READS | {"prim::ListSlice"}):
        return False
    made = node.graph.create(ctor.kind, list(ctor.inputs)[slice(*bounds)],
                             [node.output.type], source=node.source)
    return forward_outputs(node, [made.insert_before(node).output])


def tuple_index_of_construct(node: Node) -> bool:
    """``(x, y)[1] -> y``."""
    ctor = _producer(node.inputs[0], "prim::TupleConstruct")
    i = constant_of(node.inputs[1])
    if ctor is None or not isinstance(i, int) or not -len(ctor.inputs) <= i < len(ctor.inputs):
        return False
    return forward_outputs(node, [ctor.inputs[i]])


def len_of_known(node: Node) -> bool:
    """``len`` of a tuple, or of a tensor whose first dimension is known; ``len(x.shape)`` is
    ``x.ndim`` (which folds, and decides ifs, once ``x``'s number of axes is known)."""
    shape = _producer(node.inputs[0], "tensor::shape")
    if shape is not None:
        return forward_outputs(node, [_insert_before(node, "tensor::ndim", [shape.inputs[0]])])
    t = node.inputs[0].type
    if isinstance(t, TupleType):
        return replace_with_constant(node, len(t.elements))
    ctor = node.inputs[0].node  # a list literal, or a static shape's list of sizes
    if ctor.kind in _BUILDS and _only_read(ctor.output, _LIST_READS):
        return replace_with_constant(node, len(ctor.inputs))
    if isinstance(t, TensorType) and t.shape and t.shape[0] is not None:
        return replace_with_constant(node, t.shape[0])
    return False


def matmul_of_batch_by_matrix(node: Node) -> bool:
    """``a @ w`` with ``a`` of shape (..., m, k) and a 2-D ``w``: one 2-D matmul of ``a``'s rows,
    ``(a.reshape(-1, k) @ w).reshape(..., m, n)``. numpy runs a batched product as one small GEMM
    per batch element (measured 4x slower at (100, 8, 64) @ (64, 256), 1.6x at (100, 64, 512) @
    (512, 2048)); the rows of a batch are just more rows of one GEMM."""
    a, w = node.inputs
    ta, tw, out = a.type, w.type, node.output.type
    if not all(isinstance(t, TensorType) and t.shape is not None and None not in t.shape
               for t in (ta, tw, out)):
        return False
    if len(ta.shape) < 3 or len(tw.shape) != 2:  # type: ignore[union-attr, arg-type]
        return False
    k = tw.shape[0]  # type: ignore[union-attr, index]
    # the row count spelled out, not -1: numpy cannot infer -1 when k is 0
    rows = math.prod(ta.shape[:-1])  # type: ignore[union-attr, index]
    flat = _insert_before(node, "tensor::reshape", [a, _constant_before(node, (rows, k))])
    product = _insert_before(node, "tensor::matmul", [flat, w])
    shape = _constant_before(node, tuple(out.shape))  # type: ignore[union-attr, arg-type]
    return forward_outputs(node, [_insert_before(node, "tensor::reshape", [product, shape])])


def slice_as_split(node: Node) -> bool:
    """``x[:, H:2*H]`` of an axis of static size ``n``: when the slice is one of ``n // size``
    equal pieces, it is that piece of ``np.split(x, n // size, axis)``, a view the fuser reads at
    an offset (``fuser.analysis.VIEW_OPS``) like an LSTM's ``chunk``; a slice stays a barrier to
    fusion. DLFS2's LSTM writes its gates as ``A[:, :H]`` ... ``A[:, 3*H:]``."""
    x, axis, start, stop, step = node.inputs
    t = x.type
    if not (isinstance(t, TensorType) and t.shape is not None and axis.is_constant
            and start.is_constant and stop.is_constant and step.is_constant):
        return False
    if step.constant not in (None, 1):
        return False
    ax = axis.constant
    if not isinstance(ax, int) or not -len(t.shape) <= ax < len(t.shape):
        return False
    n = t.shape[ax]
    if n is None or any(not (b is None or isinstance(b, int)) for b in (start.constant,
                                                                          stop.constant)):
        return False
    picked = range(n)[slice(start.constant, stop.constant)]
    size = len(picked)
    if size == 0 or size == n or n % size or picked.start % size:
        return False
    split = node.graph.create_typed("tensor::split", [x, _constant_before(node, n // size),
                                                      axis], source=node.source)
    split.insert_before(node)
    return forward_outputs(node, [split.outputs[picked.start // size]])


def split_list_of_count(node: Node) -> bool:
    """``split_list(a, n, axis)`` of a constant ``n`` (an argument the specialization bound) is
    the list literal of ``split``'s pieces, which the backward and list rewrites follow; not
    where the split would be refused (numpy raises then, when it runs)."""
    if constant_of(node.inputs[1]) is NOT_CONSTANT:
        return False
    try:
        split = node.graph.create_typed("tensor::split", node.inputs, source=node.source)
    except ShapeError:
        return False
    split.insert_before(node)
    pieces = node.graph.create("prim::ListConstruct", split.outputs, [node.output.type],
                               source=node.source)
    pieces.insert_before(node)
    return forward_outputs(node, [pieces.output])


def _insert_before(at: Node, kind: str, inputs: list[Value]) -> Value:
    return at.graph.create_typed(kind, inputs, source=at.source).insert_before(at).output


def _constant_before(at: Node, value: Any) -> Value:
    with at.graph.inserting_before(at):
        return at.graph.constant(value)


def unwrap_non_optional(node: Node) -> bool:
    """``unchecked_unwrap_optional(x) -> x`` when ``x`` is not an Optional to begin with."""
    t = node.inputs[0].type
    if isinstance(t, OptionalType) or t == NONE:
        return False
    return forward_outputs(node, [node.inputs[0]])


RULES: dict[str, Callable[[Node], bool]] = {
    "tensor::transpose": double_transpose,
    "tensor::reshape": reshape_of_reshape,
    "tensor::matmul": lambda node: mixed_matmul_cast(node) or matmul_of_batch_by_matrix(node),
    "tensor::slice": slice_as_split,
    "tensor::split_list": split_list_of_count,
    "tensor::broadcast_to": broadcast_to_own_shape,
    "tensor::sum_to": broadcast_to_own_shape,
    "prim::TupleUnpack": tuple_unpack_of_construct,
    "prim::ListUnpack": list_unpack_of_construct,
    "prim::ListAdd": list_add_of_constructs,
    "prim::ListIndex": list_index_of_construct,
    "prim::ListSlice": list_slice_of_construct,
    "prim::ListConstruct": appends_into_literal,
    "prim::ListExtend": extend_by_literal,
    "prim::DictGetItem": dict_get_of_construct,
    "prim::DictContains": dict_contains_of_construct,
    "prim::DictKeys": dict_keys_of_construct,
    "prim::TupleIndex": tuple_index_of_construct,
    "prim::len": len_of_known,
    "prim::unchecked_unwrap_optional": unwrap_non_optional,
    **NUMPY_RULES,
}
"""kind -> peephole rule."""

IDENTITY_RULES: dict[str, Callable[[Node], bool]] = {
    "tensor::neg": double_negation,
    "tensor::mul": _identity_operand({1: 1, 0: 1}),
    "tensor::add": _identity_operand({1: 0, 0: 0}, signed_zero=True),
    "tensor::sub": _identity_operand({1: 0}),
    "tensor::div": _identity_operand({1: 1}),
}
"""kind -> peephole rule replacing the op's new array by one of its inputs: applied only when the
caller cannot receive the result."""


def _is_no_op_copy(node: Node) -> bool:
    """``x.copy()``, or ``x.astype(d)`` where ``x`` is known to have dtype ``d`` already."""
    x = node.inputs[0]
    if not isinstance(x.type, TensorType) or x.type != node.output.type:
        return False
    if node.kind == "tensor::copy":
        return True
    dtype = const(node, 1)
    return dtype is not NOT_CONSTANT and dtype == x.type.dtype is not None


def _new_array(value: Value) -> bool:
    """Is ``value`` an array this graph makes (a non-view tensor op's result, or a view of one)?
    Not an argument, a constant, a container's item or a block's result."""
    node = value.node
    while True:
        op = lookup(node.kind)
        if op is None or not node.kind.startswith("tensor::") or node.blocks:
            return False
        if not may_share_input(node):
            return True
        bases = [v for v in node.inputs if isinstance(v.type, TensorType)]
        if len(bases) != 1:
            return False
        node = bases[0].node


def _writes_arrays(graph: Graph) -> bool:
    """Does any op of ``graph`` store into an array in place (``write_slot``, ``select_put_``)?
    (A node with blocks is judged by the nodes inside them.)"""
    for node in graph.walk():
        op = lookup(node.kind)
        if op is None or node.blocks:
            continue
        if any(WRITES in op.effects_on(i) and isinstance(v.type, TensorType)
               for i, v in enumerate(node.inputs)):
            return True
    return False


def no_op_copy(node: Node, classes: StorageClasses, in_place: bool) -> bool:
    """``x.copy() -> x`` and ``x.astype(x.dtype) -> x`` when nobody can tell the copy from ``x``:
    the caller never receives it, or ``x`` is a new array of this graph that the caller does not
    otherwise reach. Not in a graph that stores into arrays in place (``in_place``): the copy
    could be what keeps a store from changing ``x``."""
    if in_place or not _is_no_op_copy(node):
        return False
    x = node.inputs[0]
    if classes.any_escapes(node) and (classes.escapes(x) or not _new_array(x)):
        return False
    classes.join(x, node.output)  # x now reaches the caller wherever the copy did
    return forward_outputs(node, [x])


def same_kind_cast(node: Node) -> bool:
    """The cast of an in-place update (``astype[casting="same_kind"]``) once both dtypes are
    known: a plain cast where numpy's same-kind rule allows it, else preceded by the
    ``TypeError`` numpy raises when the update runs (``x += 1.5`` on an int array)."""
    src, dst = node.inputs[0].type, node.output.type
    if not (isinstance(src, TensorType) and isinstance(dst, TensorType)) or \
            src.dtype is None or dst.dtype is None:
        return False
    del node.attrs[CASTING_ATTR]
    if not np.can_cast(src.dtype, dst.dtype, "same_kind"):
        message = (f"Cannot cast ufunc output from dtype('{src.dtype}') to dtype('{dst.dtype}') "
                   "with casting rule 'same_kind' (an in-place update keeps the array's dtype: "
                   "write x = x + v for a new array)")
        raise_ = node.graph.create("prim::RaiseException", (_constant_before(node, message),),
                                   (), {"exception": "TypeError"}, source=node.source)
        raise_.insert_before(node)
    return True


COPY_RULES = ("tensor::copy", "tensor::astype")
"""kinds rewritten by ``no_op_copy``."""


def sweep(graph: Graph) -> bool:
    """Apply the rules once to every node (nested blocks included)."""
    changed = False
    classes = StorageClasses(graph)
    in_place = _writes_arrays(graph)
    for node in list(graph.walk()):
        if node.kind in COPY_RULES:
            if CASTING_ATTR in node.attrs and node.owner is not None:
                changed |= same_kind_cast(node)
            elif node.owner is not None:
                changed |= no_op_copy(node, classes, in_place)
            continue
        rule = RULES.get(node.kind)
        if rule is None:
            rule = IDENTITY_RULES.get(node.kind)
            if rule is not None and node.owner is not None and classes.any_escapes(node):
                continue
        if rule is not None and node.owner is not None:
            changed |= rule(node)
    return changed


def run(graph: Graph) -> bool:
    """Apply the peephole rules until none fires."""
    changed = False
    for _ in range(MAX_ROUNDS):
        if not sweep(graph):
            break
        changed = True
    return changed

