"""Tests for None (a ``FunctionCompiler`` mixin): ``v is None`` / ``is not None``, ``v == None``
of a value that is not an array, and an Optional number used as an operand, which raises
Python's TypeError where it is None.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.types import ANY, BOOL, FLOAT, INT, NONE, OptionalType, TensorType
from script.frontend.env import Static, end_of

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


class NoneTestMixin:
    """None tests of ``FunctionCompiler``."""

    def is_none(self: FunctionCompiler, op: ast.cmpop, left: ast.expr, right: ast.expr,
                node: ast.AST) -> Any:
        """``v is None`` / ``v is not None``: decided when compiling unless ``v`` is Optional."""
        if is_none_literal(left):
            left, right = right, left
        if not is_none_literal(right):
            raise self.error(node, "'is' / 'is not' are only supported with None")
        negate = isinstance(op, ast.IsNot)
        if isinstance(left, ast.Name) and isinstance(self.frame.find(left.id), Static):
            return self.const(negate)  # a compile-time object (a function passed) is not None
        t = self.expr(left).type
        if t == NONE or not isinstance(t, OptionalType):
            return self.const((t == NONE) != negate)
        test = self.emit_value("prim::IsNone", [self.expr(left)])
        return self.negate(test) if negate else test

    def equals_none(self: FunctionCompiler, op: ast.cmpop, left: ast.expr, right: ast.expr,
                    node: ast.AST) -> Any:
        """``v == None`` / ``v != None`` of a value that is not an array: ``v is None`` (what
        Python's ``==`` gives for numbers, strings, containers and None); an array compares
        elementwise in numpy, which is refused."""
        value = right if is_none_literal(left) else left
        if isinstance(value, ast.Name) and isinstance(self.frame.find(value.id), Static):
            return self.const(isinstance(op, ast.NotEq))
        v = self.expr(value)
        inner = v.type.element if isinstance(v.type, OptionalType) else v.type
        if isinstance(inner, TensorType) or inner == ANY:
            raise self.error(node, f"{ast.unparse(node)}: an array compares with None "
                             "elementwise in numpy; to test for a missing value write "
                             f"'{ast.unparse(value)} is None' or 'is not None'")
        equal = isinstance(op, ast.Eq)
        if not isinstance(v.type, OptionalType):
            return self.const((v.type == NONE) == equal)
        test = self.emit_value("prim::IsNone", [v])
        return test if equal else self.negate(test)

    def unwrap_operand(self: FunctionCompiler, value: Any, symbol: str, node: ast.AST) -> Any:
        """An Optional number as an operand of ``symbol`` (``out + X[t]`` of a
        ``List[Optional[int]]``): the number, after Python's TypeError where it is None."""
        if not (isinstance(value.type, OptionalType) and value.type.element in (INT, FLOAT, BOOL)):
            return value
        test = self.emit_value("prim::IsNone", [value])
        message = f"unsupported operand type(s) for {symbol}: a number and 'NoneType'"
        self.emit_if(test, lambda: self.raise_exception(message, "TypeError"), lambda: None,
                     end_of(node), node)
        return self.emit_value("prim::unchecked_unwrap_optional", [value])


def is_none_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


__all__ = ["NoneTestMixin", "is_none_literal"]
