"""Shapes as tuples: ``x.shape == (2, 3)``, ``(n, 2) + x.shape[2:]``.

A mixin of ``FunctionCompiler``. ``x.shape`` is a list of ints in the IR (its length is known
only once the function is specialized) and a tuple at run time, as in numpy; where Python mixes
it with a tuple of ints the frontend makes the tuple a ``prim::ShapeConstruct`` (an int list in
the IR, a tuple at run time): ``+`` concatenates them into a tuple, and ``==`` / ``!=`` compare
the length and then each item, short-circuited. Against ``x.shape`` itself the length is
``x.ndim`` and the items ``x.shape[k]``, which the specialization knows: ``if x.shape == (2,
3):`` compiles only the branch taken, as ``if x.ndim == 2:`` does. A list of numbers repeated
(``[0.0] * n``) is here too, and ``a, b = x.shape`` (one ``tensor::size`` per target, after
Python's check of the count where the rank is not known to be right).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.types import BOOL, FLOAT, INT, STR, ListType, TensorType, TupleType, Type, is_subtype
from script.frontend.env import NOT_STATIC, end_of

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler



def numbers_sequence(t: Type) -> bool:
    """A list or tuple of numbers (which numpy functions take as a 1-d array)."""
    if isinstance(t, ListType):
        return t.element in (INT, FLOAT, BOOL)
    return isinstance(t, TupleType) and all(  # () too: numpy's empty float64 array
        e in (INT, FLOAT, BOOL) for e in t.elements)


def numbers_dtype(t: Type) -> str | None:
    """The dtype of the array numpy makes of numbers of type ``t`` (None: numpy's choice)."""
    kinds = {t.element} if isinstance(t, ListType) else set(getattr(t, "elements", (t,)))
    if not kinds:
        return "float64"  # np.array(()): an empty tuple
    return {INT: "int64", FLOAT: "float64", BOOL: "bool"}.get(next(iter(kinds))) \
        if len(kinds) == 1 else None

class SequenceMixin:
    """Tuple/list-of-int mixing for ``FunctionCompiler``."""

    def assign_shape(self: FunctionCompiler, target: ast.expr, value: ast.expr) -> bool:
        """``a, b = x.shape``: one ``tensor::size`` per target."""
        if not (isinstance(target, ast.Tuple) and isinstance(value, ast.Attribute)
                and value.attr == "shape") or \
                any(isinstance(e, ast.Starred) for e in target.elts):
            return False
        if self.resolve_static(value.value) is not NOT_STATIC:
            return False
        base = self.expr(value.value)
        if not isinstance(base.type, TensorType):
            return False
        n = len(target.elts)
        if base.type.shape is None or len(base.type.shape) != n:  # (else it folds)
            self.check_rank(base, n, target)
        for axis, elt in enumerate(target.elts):
            self.assign(elt, self.emit_value("tensor::size", [base, self.const(axis)]), target)
        return True

    def check_rank(self: FunctionCompiler, base: Any, n: int, node: ast.AST) -> None:
        """Python's ``ValueError`` for ``a, b = x.shape`` where ``x`` has another number of axes
        than targets (a constant once the function is specialized)."""
        ndim = self.emit_value("tensor::ndim", [base])

        def fails() -> None:
            self.emit_if(self.binary("<", ndim, self.const(n), node),
                         lambda: self.raise_exception(
                             f"not enough values to unpack (expected {n})", "ValueError"),
                         lambda: self.raise_exception(
                             f"too many values to unpack (expected {n})", "ValueError"),
                         end_of(node), node)

        self.emit_if(self.binary("==", ndim, self.const(n), node), lambda: None, fails,
                     end_of(node), node)

    def repeat_list(self: FunctionCompiler, lhs: Any, rhs: Any, node: ast.AST) -> Any:
        """``[0.0] * n`` / ``n * [0.0]``: a list of numbers or strings repeated; a list of
        arrays is refused (its n items would be one array, which a write changes in all)."""
        items, count = (lhs, rhs) if isinstance(lhs.type, ListType) else (rhs, lhs)
        if items.type.element not in (INT, FLOAT, BOOL, STR):
            raise self.error(node, f"repeating a list of {items.type.element} with * is not "
                             "supported (its items would be one object n times): write a "
                             "comprehension, [x.copy() for _ in range(n)]")
        return self.emit_value("prim::ListMul", [items, count])

    def int_sequences(self: FunctionCompiler, lhs: Any, rhs: Any) -> bool:
        """One side is a list of ints, the other a tuple of ints."""
        kinds = {_kind(lhs.type), _kind(rhs.type)}
        return kinds == {"list", "tuple"}

    def concat_int_sequences(self: FunctionCompiler, lhs: Any, rhs: Any) -> Any:
        """``(n, 2) + x.shape[2:]``: the tuple a ``prim::ShapeConstruct``, so that joined with a
        shape (a tuple at run time) it makes a tuple, as in numpy (and joined with a real list
        it raises Python's TypeError)."""
        parts = [self.as_int_list(v) for v in (lhs, rhs)]
        return self.emit_value("prim::ListAdd", parts)

    def as_int_list(self: FunctionCompiler, value: Any) -> Any:
        if isinstance(value.type, ListType):
            return value
        return self.emit("prim::ShapeConstruct", self.tuple_items(value),
                         [ListType(INT)]).output

    def compare_int_sequences(self: FunctionCompiler, op: ast.cmpop, lhs: Any, rhs: Any,
                              node: ast.AST) -> Any:
        """``seq == tuple`` / ``seq != tuple`` with one side a list of ints."""
        if isinstance(rhs.type, ListType):
            lhs, rhs = rhs, lhs
        if not is_shape(lhs):  # a list is never equal to a tuple in Python
            return self.const(isinstance(op, ast.NotEq))
        items = self.tuple_items(rhs)
        base = lhs.node.inputs[0] if lhs.node.kind == "tensor::shape" else None
        length = self.emit_value("tensor::ndim", [base]) if base is not None else \
            self.emit_value("prim::len", [lhs])
        same_length = self.binary("==", length, self.const(len(items)), node)
        result = self.short_circuit(same_length, True,
                                    lambda: self.same_items(base, lhs, items, 0, node), node)
        return self.negate(result) if isinstance(op, ast.NotEq) else result

    def same_items(self: FunctionCompiler, base: Any, lst: Any, items: list[Any], k: int,
                   node: ast.AST) -> Any:
        """``lst[k] == items[k] and ...``, each test nested in the one before: a test the
        specialization rules out (a rank too small) never reaches the ones after it."""
        if k == len(items):
            return self.const(True)
        same = self.binary("==", self.item_of(base, lst, k), items[k], node)
        return self.short_circuit(same, True,
                                  lambda: self.same_items(base, lst, items, k + 1, node), node)

    def item_of(self: FunctionCompiler, base: Any, lst: Any, k: int) -> Any:
        if base is not None:
            return self.emit_value("tensor::size", [base, self.const(k)])
        return self.emit_value("prim::ListIndex", [lst, self.const(k)])


def is_shape(value: Any) -> bool:
    """Is ``value`` a shape (a tuple in numpy): ``x.shape``, a slice of one, one joined with a
    tuple by ``+``, an ``if``'s output that is a shape on both paths, or an item read from a list
    literal of shapes (``shapes = [x.shape, x.shape[1:]]; s = shapes[0]``)?"""
    items = literal_items_read(value)
    if items is not None:
        return bool(items) and all(map(is_shape, items))
    producer = value.node
    if producer.kind in ("tensor::shape", "prim::ShapeConstruct"):
        return True
    if producer.kind in ("prim::ListSlice", "prim::ListAdd"):
        lists = [v for v in producer.inputs if isinstance(v.type, ListType)]
        return all(map(is_shape, lists))
    if producer.kind == "prim::If":
        k = producer.outputs.index(value)
        return all(is_shape(block.returns[k]) for block in producer.blocks)
    if producer.kind == "prim::Param" and value.index >= 1:  # a loop's carried value
        loop = producer.owner.owner if producer.owner is not None else None
        return (loop is not None and loop.kind == "prim::Loop"
                and is_shape(loop.inputs[value.index + 1]))
    if producer.kind == "prim::Loop":
        return is_shape(producer.inputs[value.index + 2])
    return False


READS = ("prim::ListIndex", "prim::len", "prim::ListUnpack")
"""Uses that read a list without changing it or keeping it anywhere."""


def literal_items_read(value: Any) -> list[Any] | None:
    """The items of a list literal that ``value`` may be, when it was read from one (``l[i]``,
    ``a, b = l``; at a constant index, the one item) in the literal's own block, and nothing
    before the read could have changed the list (only reads of it came first): else None."""
    read = value.node
    if read.kind not in ("prim::ListIndex", "prim::ListUnpack"):
        return None
    lst = read.inputs[0]
    maker = lst.node
    if maker.kind != "prim::ListConstruct" or maker.owner is not read.owner:
        return None
    for use in lst.uses:
        top = use.node  # the node of the read's block that is or holds the use
        while top is not None and top.owner is not read.owner:
            top = top.owner.owner if top.owner is not None else None
        if top is None or (top is not read and top.is_before(read) and not _only_reads(use.node)):
            return None
    items = list(maker.inputs)
    if read.kind == "prim::ListUnpack":
        return [items[value.index]] if len(read.outputs) == len(items) else items
    index = read.inputs[1]
    if index.is_constant and -len(items) <= int(index.constant) < len(items):
        return [items[int(index.constant)]]
    return items


def _only_reads(user: Any) -> bool:
    """``user`` reads a list without changing it or keeping it anywhere (a tuple never used is
    what ``a, b = l1, l2`` leaves)."""
    return user.kind in READS or (user.kind == "prim::TupleConstruct" and not user.output.uses)


def _kind(t: Any) -> str | None:
    if isinstance(t, ListType) and t.element in (INT, BOOL):
        return "list"
    if isinstance(t, TupleType) and all(is_subtype(e, INT) or e == BOOL for e in t.elements):
        return "tuple"
    return None

