"""Subscripts: indexing and slicing of tensors (basic indexing, one ``tensor::select`` or
``tensor::slice`` per axis; integer arrays in ``script.frontend.numpy_calls``), tuples, named
tuples, lists and dicts.

A mixin of ``FunctionCompiler``: every method here returns the IR ``Value`` of the expression.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.core import Value
from ir.registry import NOT_CONSTANT, constant_of
from ir.types import BOOL, INT, STR, ClassType, DictType, ListType, TensorType, TupleType, unify
from script.frontend.env import end_of
from script.frontend.none_tests import is_none_literal
from script.frontend.whole_writes import ZERO_D_ITEM

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


class IndexMixin:
    """``x[i]``, ``x[a:b]``, ``x[..., None]`` and their kin."""

    def visit_Subscript(self: FunctionCompiler, node: ast.Subscript) -> Any:
        record = self.keywords_of(node.value)
        if record is not None:
            return self.keywords_subscript(record, node)
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape" and \
                not isinstance(node.slice, ast.Slice):
            base = self.expr(node.value.value)
            if isinstance(base.type, TensorType):
                axis = self.index_value(node.slice)
                return self.emit_value("tensor::size", [base, axis])
        value = self.expr(node.value)
        t = value.type
        if isinstance(t, TensorType):
            return self.index_tensor(value, node.slice, node)
        if isinstance(t, TupleType):
            return self.index_tuple(value, node.slice, node)
        if isinstance(t, ClassType) and t.named_tuple:
            return self.index_named_tuple(value, node.slice)
        if isinstance(t, ListType):
            if isinstance(node.slice, ast.Slice):
                return self.emit_value("prim::ListSlice", [value, *self.slice_bounds(node.slice)])
            return self.emit_value("prim::ListIndex", [value, self.index_value(node.slice)])
        if isinstance(t, DictType):
            key = self.expr(node.slice)
            if unify(key.type, t.key) != t.key:
                self.widen_dict(value, key.type, t.value, self.error(
                    node.slice, f"a key of {t} must be {t.key}, not {key.type}"))
            return self.emit_value("prim::DictGetItem", [value, key])
        if t == STR:
            return self.string_index(value, node.slice)
        raise self.error(node, f"a value of type {t} is not subscriptable")

    def index_once(self: FunctionCompiler, node: ast.expr) -> Any:
        """An index expression of the write being compiled: the value it was already evaluated
        to where an earlier reading of the write took it (``evaluated_indices``), else its
        value now; so an index with effects (``y[s.pop()] = v``) runs once."""
        found = getattr(self, "evaluated_indices", {}).pop(id(node), None)
        return found if found is not None else self.expr(node)

    def index_value(self: FunctionCompiler, node: ast.expr) -> Any:
        """An index expression: must be an int."""
        value = self.as_index(self.index_once(node))  # (an item of an int array: its int)
        if value.type not in (INT, BOOL):
            what = "a Tensor here (its value is int(k); integer arrays index arrays: W[idx], " \
                "U[:, idx] or o[rows, cols])" if isinstance(value.type, TensorType) else \
                str(value.type)
            raise self.error(node, f"an index must be an int, not {what}")
        return value

    def slice_bounds(self: FunctionCompiler, node: ast.Slice) -> list[Any]:
        bounds = []
        for part in (node.lower, node.upper, node.step):
            bounds.append(self.const(None) if part is None else self.index_value(part))
        return bounds

    def index_tuple(self: FunctionCompiler, value: Any, index: ast.expr, node: ast.AST) -> Any:
        if isinstance(index, ast.Slice):
            bounds = self.slice_bounds(index)
            if any(constant_of(b) is NOT_CONSTANT for b in bounds):
                raise self.error(index, "tuple slice bounds must be constants")
            return self.emit_value("prim::TupleSlice", [value, *bounds])
        i = self.index_value(index)
        if not isinstance(constant_of(i), int):
            raise self.error(index, "a tuple index must be a constant int")
        return self.emit_value("prim::TupleIndex", [value, i])

    def index_tensor(self: FunctionCompiler, value: Any, index: ast.expr, node: ast.AST) -> Any:
        """Basic indexing: one ``tensor::select`` / ``tensor::slice`` per indexed axis."""
        if self.masked_by is not None and isinstance(index, ast.Name) and \
                self.frame.find(index.id) is self.masked_by:
            self.masked_reads.append(value)
            return value  # x[m] in the value of a masked write: the whole x (assign_masked)
        items = [self.new_axis_as_none(i)
                 for i in (index.elts if isinstance(index, ast.Tuple) else [index])]
        gathered = self.integer_array_index(value, items)
        if gathered is not None:
            return gathered
        ellipses = [k for k, item in enumerate(items) if _is_ellipsis(item)]
        if len(ellipses) > 1:
            raise self.error(index, "an index can only have a single ellipsis ('...')")
        self.check_index_count(value, items, index)
        if not items and value.type.rank in (0, None):  # y[()] of 0-d: numpy's scalar, a copy
            return self.scalar_of(value, node)
        if ellipses:
            cut = ellipses[0]
            value = self.index_axes(value, items[cut + 1:], from_end=True)
            value = self.index_axes(value, items[:cut], from_end=False)
            if value.node.kind == "tensor::select":  # (x[i, j, ...]: numpy's 0-d view, no item)
                value.node.attrs[ELLIPSIS_ATTR] = True
            return value
        return self.index_axes(value, items, from_end=False)

    def scalar_of(self: FunctionCompiler, value: Any, node: ast.AST) -> Any:
        """``y[()]``: of a 0-d array its item, a new value (a reshape the writes cannot see
        through); of any other, the array itself (decided when specializing)."""
        def item() -> Value:
            read = self.emit_value("tensor::reshape", [value, self.const(())])
            read.node.attrs[ZERO_D_ITEM] = True  # numpy's scalar (``whole_writes``)
            return read

        if value.type.rank == 0:
            return item()
        name = f"$item_{id(node)}"
        zero_d = self.is_0d(value, node)
        self.emit_if(zero_d, lambda: self.frame.set(name, item()),
                     lambda: self.frame.set(name, value), end_of(node), node)
        result = self.frame.find(name)
        del self.frame.vars[name]
        return result

    def check_index_count(self: FunctionCompiler, value: Any, items: list[ast.expr],
                          index: ast.expr) -> None:
        """numpy's IndexError for more indices than axes, where no op of the subscript would
        find it: its full slices (``x[:, :]``) are no ops, and the items after an ellipsis count
        their axes from the end, those before it from the front (``x[:, ..., -1]`` of a 1-D x)."""
        used = sum(1 for item in items if not (_is_ellipsis(item) or is_none_literal(item)))
        if not used or not (any(_is_ellipsis(item) for item in items) or any(
                isinstance(item, ast.Slice) and item.lower is None and item.upper is None
                and item.step is None for item in items)):
            return
        rank = value.type.rank
        message = f"too many indices for array: {used} were indexed"
        if rank is not None:
            if used > rank:
                raise self.error(index, f"{message}, but the array has {rank} axes")
            return
        enough = self.binary(">=", self.emit_value("tensor::ndim", [value]), self.const(used),
                             index)
        self.emit_if(enough, lambda: None, lambda: self.raise_exception(message, "IndexError"),
                     end_of(index), index)

    def new_axis_as_none(self: FunctionCompiler, item: ast.expr) -> ast.expr:
        """``np.newaxis`` in a subscript read as the ``None`` it is."""
        if isinstance(item, ast.Attribute) and item.attr == "newaxis" and \
                self.resolve_static(item) is None:
            return ast.copy_location(ast.Constant(None), item)
        return item

    def index_axes(self: FunctionCompiler, value: Any, items: list[ast.expr], from_end: bool
                   ) -> Any:
        """Apply index items to consecutive axes from the front, or (after an ellipsis) to the
        last axes, the last item first (``x[..., 0, None]``: the new axis goes after the
        others, the 0 picks from the axis before it)."""
        axis = 0
        for item in reversed(items) if from_end else items:
            saved, self.where = self.where, item
            try:
                value = self.index_axis(value, item, -axis - 1 if from_end else axis)
            finally:
                self.where = saved
            # a select drops its axis: the next item's axis keeps the number
            if isinstance(item, ast.Slice) or is_none_literal(item):
                axis += 1
        return value

    def index_axis(self: FunctionCompiler, value: Any, item: ast.expr, axis: int) -> Any:
        if is_none_literal(item):  # x[:, None], x[..., None]: a new axis of size 1 here
            return self.emit_value("tensor::expand_dims", [value, self.const(axis)])
        if not isinstance(item, ast.Slice):
            return self.emit_value("tensor::select",
                                   [value, self.const(axis), self.index_value(item)])
        if item.lower is None and item.upper is None and item.step is None:
            return value  # a full slice ':' keeps the axis as it is
        bounds = self.slice_bounds(item)
        return self.emit_value("tensor::slice", [value, self.const(axis), *bounds])

    def visit_Slice(self: FunctionCompiler, node: ast.Slice) -> Any:
        raise self.unsupported(node, "a slice outside a subscript")


ELLIPSIS_ATTR = "ellipsis"
"""Attribute of the last ``tensor::select`` of a subscript with an ellipsis: a 0-d result is a
view there, not numpy's scalar (``script.frontend.aliases``)."""


def _is_ellipsis(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis
