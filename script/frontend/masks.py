"""Boolean masks: ``m1 & m2``, ``m1 | m2``, ``m1 ^ m2`` of masks, and writes through a mask
(``z[m] = np.exp(-x[m])``, ``loss[np.isnan(loss)] = 0``) as ``np.where`` of the whole arrays.

A mixin of ``FunctionCompiler``. Reads through a mask are refused (their size depends on the
values); a write through a mask of the array's shape keeps it.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.core import Value
from ir.types import BOOL, TensorType, is_number
from script.frontend.op_lookup import op_for_object

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

MASK_OPERATORS = {ast.BitAnd: ("&", "tensor::logical_and"), ast.BitOr: ("|", "tensor::logical_or"),
                  ast.BitXor: ("^", "tensor::ne")}
"""operators that combine boolean masks: their spelling, and the op each is there."""


def _is_bool(t: Any) -> bool:
    return t == BOOL or isinstance(t, TensorType) and t.dtype == "bool"


_MASK_FUNCTIONS = (np.isnan, np.isinf, np.isfinite)
"""numpy's functions of an array that give a boolean mask with no effects (composites here, not
ops of the registry)."""


def plain_read(node: ast.expr) -> bool:
    """A name, a number, an attribute of a name, or a subscript of those by such indices and
    slices (``k[0]``, ``x[:, t]``): an expression with no effects (evaluating it twice is
    evaluating it once)."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, str)) or node.value is None or \
            node.value is Ellipsis
    if isinstance(node, ast.Attribute):
        return plain_read(node.value)
    if isinstance(node, ast.Slice):
        return all(b is None or plain_read(b) for b in (node.lower, node.upper, node.step))
    if isinstance(node, ast.Tuple):
        return all(plain_read(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return plain_read(node.operand)
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
        return plain_read(node.left) and plain_read(node.right)
    if isinstance(node, ast.Subscript):
        return plain_read(node.value) and plain_read(node.slice)
    return False


class MaskMixin:
    """Mask operators and writes through masks in ``FunctionCompiler``."""

    def mask_operator(self: FunctionCompiler, node: ast.BinOp) -> Any:
        """``m1 & m2``, ``m1 | m2``, ``m1 ^ m2`` of boolean arrays (or bools): numpy's logical
        and, or, xor of masks. Of integers (bitwise) they are refused."""
        lhs, rhs = self.expr(node.left), self.expr(node.right)
        if not (_is_bool(lhs.type) and _is_bool(rhs.type)):
            symbol = MASK_OPERATORS[type(node.op)][0]
            raise self.error(node, f"the operator {symbol} of {lhs.type} and {rhs.type} is not "
                             "supported (it is for boolean arrays and bools: masks)")
        return self.emit_value(MASK_OPERATORS[type(node.op)][1], [lhs, rhs])

    def mask_not(self: FunctionCompiler, node: ast.UnaryOp) -> Any:
        """``~m`` of a boolean array: numpy's logical not; of anything else refused (``~`` of
        an int is bitwise, of a bool an int)."""
        operand = self.expr(node.operand)
        if isinstance(operand.type, TensorType) and operand.type.dtype == "bool":
            return self.emit_value("tensor::logical_not", [operand])
        raise self.error(node, f"the operator ~ of {operand.type} is not supported (it is "
                         "for boolean arrays; use np.logical_not or not)")

    def assign_masked(self: FunctionCompiler, target: ast.expr, value_node: ast.expr) -> bool:
        """``z[m] = np.exp(-x[m])`` with a boolean array ``m`` of ``z``'s shape (CS231n's stable
        sigmoid): the selected elements computed elementwise over the whole arrays, then
        ``z = np.where(m, value, z)`` cast to ``z``'s dtype. The value may only combine numbers
        and arrays read through the same mask with elementwise ops, so that each selected
        element is computed from the elements at its own position; False when ``m`` is not a
        boolean array."""
        if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                and (isinstance(target.slice, (ast.Name, ast.Compare))
                     or isinstance(target.slice, ast.Attribute) and plain_read(target.slice)
                     or isinstance(target.slice, (ast.Call, ast.UnaryOp, ast.BinOp))
                     and self.is_pure_mask(target.slice))):
            return False
        if isinstance(target.slice, ast.Name):  # x[m] reads through the same mask: x[m] = f(x[m])
            mask, mask_name = self.frame.find(target.slice.id), target.slice.id
        else:  # y[x < 0] = v, loss[np.isnan(loss)] = 0: an expression with no effects
            mask, mask_name = self.expr(target.slice), None  # (evaluated again if not a mask)
        if not (isinstance(mask, Value) and isinstance(mask.type, TensorType)
                and mask.type.dtype == "bool"):
            if mask_name is None:  # the write's index, evaluated once (`y[s.pop() > 0] = v`)
                self.evaluated_indices = {id(target.slice): mask}
            return False
        if not self.is_masked_elementwise(value_node, mask_name):
            raise self.error(value_node, "a write through a boolean mask is supported for a "
                             "number or an elementwise expression of arrays read through the "
                             f"same mask ({target.value.id}[m] = np.exp(-x[m])); write "
                             f"{target.value.id} = np.where(m, ..., {target.value.id})")
        name = target.value.id
        old = self.frame.find(name)
        if not isinstance(old, Value) or not isinstance(old.type, TensorType):
            raise self.error(target, f"'{name}' is not an array")
        self.masked_by, saved = mask, self.masked_by
        self.masked_reads = []
        try:
            value = self.expr(value_node)
        finally:
            self.masked_by = saved
        chosen = self.emit_value("tensor::where", [mask, value, old])
        for other in [mask, chosen, *self.masked_reads]:
            self.require_same_shape(other, old, target)
        aliases = self.check_write(name, old, target)
        new = self.emit_value("tensor::astype", [chosen, self.emit_value("tensor::dtype",
                                                                          [old])])
        for alias in [name, *aliases]:
            self.frame.set(alias, new)
        return True

    def is_pure_mask(self: FunctionCompiler, node: ast.expr) -> bool:
        """Whether ``node`` may be a boolean mask computed with no effects: an elementwise
        call (``np.isnan(x)``), ``~m``, ``m1 & m2`` or ``m1 | m2`` of comparisons, names and
        such calls."""
        if isinstance(node, (ast.Name, ast.Compare)):  # (a comparison: as a written index)
            return True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)):
            return self.is_pure_mask(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr,
                                                                ast.BitXor)):
            return self.is_pure_mask(node.left) and self.is_pure_mask(node.right)
        if isinstance(node, ast.Call) and not node.keywords:
            fn = self.resolve_static(node.func)
            op = op_for_object(fn)
            return (fn in _MASK_FUNCTIONS or op is not None and op.is_elementwise
                    and op.is_pure) and all(
                plain_read(a)
                or self.is_pure_mask(a) for a in node.args)
        return False

    def require_same_shape(self: FunctionCompiler, a: Value, b: Value, node: ast.AST) -> None:
        """A ValueError at run time unless ``a`` has ``b``'s shape (the same number of axes
        and of elements, and ``a`` broadcast with ``b`` where that could hide a difference)."""
        for kind in ("tensor::ndim", "tensor::numel"):
            same = self.binary("==", self.emit_value(kind, [a]), self.emit_value(kind, [b]),
                               node)
            self.emit_if(same, lambda: None, lambda: self.raise_exception(
                "a boolean mask, and each array read through it, must have the shape of the "
                "array written through it (other masks are not supported)", "ValueError"),
                (getattr(node, "end_lineno", 0) or 0, 0), node)

    def is_masked_elementwise(self: FunctionCompiler, node: ast.expr, mask: str | None
                              ) -> bool:
        """Whether ``node`` combines numbers and ``x[mask]`` reads with elementwise ops only."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (int, float, bool))
        if isinstance(node, ast.Subscript):
            return mask is not None and isinstance(node.value, ast.Name) and \
                isinstance(node.slice, ast.Name) and node.slice.id == mask
        if isinstance(node, ast.BinOp):
            return not isinstance(node.op, ast.MatMult) and \
                self.is_masked_elementwise(node.left, mask) and \
                self.is_masked_elementwise(node.right, mask)
        if isinstance(node, ast.UnaryOp):
            return self.is_masked_elementwise(node.operand, mask)
        if isinstance(node, ast.Name):
            value = self.frame.find(node.id)
            return isinstance(value, Value) and is_number(value.type)
        if isinstance(node, ast.Call) and not node.keywords:
            op = op_for_object(self.resolve_static(node.func))
            return op is not None and op.is_elementwise and all(
                self.is_masked_elementwise(a, mask) for a in node.args)
        return False

