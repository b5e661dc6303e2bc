"""numpy functions that rearrange an array's items: ``np.flip`` (slices with step -1 along the
axes given, or ``tensor::flip`` of every axis), ``np.fliplr`` / ``np.flipud``, ``np.take``
(without an axis, of the flattened array) and ``np.concatenate`` (of lists of arrays too, each
stacked first as numpy makes it an array).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.core import Value
from ir.registry import op_def
from ir.types import NONE, ListType, TensorType
from script.frontend.none_tests import is_none_literal

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


def _is_list_of_arrays(v: Any) -> bool:
    return isinstance(v, Value) and isinstance(v.type, ListType) and isinstance(
        v.type.element, TensorType)


class ArrangementMixin:
    """Rearranging numpy functions of ``FunctionCompiler`` (see the module docstring)."""

    def numpy_flip(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.flip(m, axis): m[..., ::-1, ...] along each given axis (a view); without an
        axis (or ``axis=None``), along every axis."""
        given = dict(zip(["m", "axis"], node.args)) | {kw.arg: kw.value for kw in node.keywords}
        if len(node.args) > 2 or set(given) - {"m", "axis"} or "m" not in given:
            raise self.error(node, "np.flip() takes an array and an axis")
        if "axis" not in given or is_none_literal(given["axis"]):
            out = self.expr(given["m"])
            if not isinstance(out.type, TensorType):
                raise self.error(given["m"], f"np.flip() of a {out.type}: pass an array")
            return self.emit_value("tensor::flip", [out])
        try:  # a literal: 0, -1, (0, 2)
            value = ast.literal_eval(given["axis"])
        except ValueError:
            axis = self.expr(given["axis"])  # a name bound to a constant
            value = axis.constant if axis.is_constant else None
        axes = value if isinstance(value, tuple) else (value,)
        if not axes or not all(type(a) is int for a in axes):
            raise self.error(node, "np.flip() needs its axis (an int, a tuple of ints or None) "
                             "as a constant here: np.flip(x, axis=0) is x[::-1]")
        out = self.expr(given["m"])
        if not isinstance(out.type, TensorType):
            raise self.error(given["m"], f"np.flip() of a {out.type}: pass an array")
        for a in axes:
            out = self.emit_value("tensor::slice", [out, self.const(a), self.const(None),
                                                    self.const(None), self.const(-1)])
        return out

    def numpy_concatenate(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.concatenate: the op, but a tuple or list literal holding lists of arrays (numpy
        makes each an array first, ``np.concatenate((H_f, H_b), axis=2)``) has those lists
        stacked."""
        items = node.args[0].elts if node.args and isinstance(
            node.args[0], (ast.Tuple, ast.List)) else []
        if any(isinstance(e, ast.Name) and _is_list_of_arrays(self.frame.find(e.id))
               for e in items):
            joined = []
            for e in items:
                v = self.expr(e)
                if _is_list_of_arrays(v):
                    v = self.emit_value("tensor::stack", [v, self.const(0)])
                joined.append(v)
            given = {kw.arg: kw.value for kw in node.keywords}
            if len(node.args) > 2 or set(given) - {"axis"}:
                raise self.error(node, "np.concatenate() takes the arrays and an axis here")
            where = node.args[1] if len(node.args) > 1 else given.get("axis")
            axis = self.expr(where) if where is not None else self.const(0)
            return self.emit_value("tensor::cat", [
                self.emit_value("prim::ListConstruct", joined), axis])
        return self.call_op(op_def("tensor::cat"), node, display="np.concatenate")

    def numpy_take(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.take(a, indices, axis=None): without an axis (or ``axis=None``), the items of the
        flattened array, as numpy's; along an axis, ``a[:, idx]``'s take."""
        a, indices, axis = self.numpy_args(node, "np.take", ["a", "indices", "axis"], 2)
        if not isinstance(a.type, TensorType):
            raise self.error(node.args[0], f"np.take() of a {a.type}: pass an array")
        if axis is None or (axis.is_constant and axis.constant is None) or axis.type == NONE:
            a = self.emit_value("tensor::reshape", [a, self.const((-1,))])
            axis = self.const(0)
        return self.emit_value("tensor::take", [a, indices, axis])

    def numpy_flip_lr(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.fliplr(m): m[:, ::-1] (at least 2-D); np.flipud(m): m[::-1] (at least 1-D)."""
        name = node.func.attr if isinstance(node.func, ast.Attribute) else "flip"
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, f"np.{name}() takes one array")
        out = self.expr(node.args[0])
        t = out.type
        need = 2 if name == "fliplr" else 1
        if not isinstance(t, TensorType) or (t.shape is not None and len(t.shape) < need):
            raise self.error(node.args[0], f"np.{name}() of a {t}: pass an array of at least "
                             f"{need} axes")
        axis = 1 if name == "fliplr" else 0
        return self.emit_value("tensor::slice", [out, self.const(axis), self.const(None),
                                                 self.const(None), self.const(-1)])
