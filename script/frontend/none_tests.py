"""Tests for None (a ``FunctionCompiler`` mixin): ``v is None`` / ``is not None``, ``v == None``
of a value that is not an array, an Optional number used as an operand, which raises
Python's TypeError where it is None, and an Optional compared with ``==`` / ``!=``, False /
True where it is None (``compare_optional``).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.types import ANY, BOOL, FLOAT, INT, NONE, STR, OptionalType, TensorType
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

    def operand_hint(self: FunctionCompiler, value: Any) -> str:
        """For an operand that is a parameter without an annotation and a None default (an
        ``Optional[Tensor]``): the annotation to write where it holds a number."""
        if value.type != OptionalType(TensorType()) or not self.unannotated_parameter(value):
            return ""
        return (f"; the parameter '{value.name}' has no annotation and a None default, so it "
                "is taken as an optional array: where it holds a number, annotate it, e.g. "
                f"{value.name}: Optional[int] = None")

    def compare_optional(self: FunctionCompiler, op: ast.cmpop, lhs: Any, rhs: Any,
                         node: ast.AST) -> Any:
        """``layout == 1`` of an ``Optional[int]``: False (``!=``: True) where it is None, as
        Python's ``None == 1``, else the comparison of the value. So is ``if layout == 1:`` of
        an optional array (an unannotated ``layout=None``, the ONNX reference GRU's): its
        truth value where it is an array, as the ``if`` takes numpy's."""
        if not isinstance(lhs.type, OptionalType) or (
                optional_scalar(rhs.type) and not optional_scalar(lhs.type)):
            lhs, rhs = rhs, lhs
        equal = isinstance(op, ast.Eq)
        is_none = self.emit_value("prim::IsNone", [lhs])

        def compared() -> Any:  # in the branch where it is not None
            value = self.emit_value("prim::unchecked_unwrap_optional", [lhs])
            return self.to_bool(self.binary("==" if equal else "!=", value, rhs, node), node)

        return self.short_circuit(self.negate(is_none) if equal else is_none, equal, compared,
                                  node)


def is_none_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None




def optional_scalar(t: Any) -> bool:
    """An ``Optional`` number or string (``layout: Optional[int] = None``)."""
    return isinstance(t, OptionalType) and t.element in (INT, FLOAT, BOOL, STR)


def array_or_none(lhs: Any, rhs: Any) -> bool:
    """An optional array compared with a number."""
    for a, b in ((lhs, rhs), (rhs, lhs)):
        if isinstance(a.type, OptionalType) and isinstance(a.type.element, TensorType) and \
                b.type in (INT, FLOAT, BOOL):
            return True
    return False


__all__ = ["NoneTestMixin", "array_or_none", "is_none_literal", "optional_scalar"]


def none_checks(test: ast.expr) -> tuple[list[str], list[str]]:
    """Names a condition proves not None when true / when false (``x is not None and ...``)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and \
            isinstance(test.ops[0], (ast.Is, ast.IsNot)):
        left, right = test.left, test.comparators[0]
        if is_none_literal(left):
            left, right = right, left
        key = _narrowable(left)
        if key is not None and is_none_literal(right):
            return ([key], []) if isinstance(test.ops[0], ast.IsNot) else ([], [key])
        return [], []
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance" and len(test.args) == 2 and not test.keywords):
        # isinstance(x, (list, tuple)) is false for None: x is not None where it is true
        # (classes spelled as the builtins None is no instance of: a name could hold NoneType)
        key, spec = _narrowable(test.args[0]), test.args[1]
        classes = spec.elts if isinstance(spec, ast.Tuple) else [spec]
        if key is not None and all(isinstance(c, ast.Name) and c.id in _NOT_NONE
                                   for c in classes):
            return [key], []
        return [], []
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        true_names, false_names = none_checks(test.operand)
        return false_names, true_names
    if isinstance(test, ast.BoolOp):
        parts = [none_checks(v) for v in test.values]
        if isinstance(test.op, ast.And):
            return [n for p in parts for n in p[0]], []
        return [], [n for p in parts for n in p[1]]
    return [], []


def _known_not_none(before: list[ast.expr], is_and: bool) -> list[str]:
    """The names known not to be None where an operand of ``and`` (``or``) is evaluated: those
    the operands before it test, all true (false) there."""
    return [n for v in before for n in none_checks(v)[0 if is_and else 1]]


def _narrowable(node: ast.expr) -> str | None:
    """The key a None check narrows: a local's name, or ``"obj.name"`` for a field of a local
    object (``self.b``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


_NOT_NONE = ("list", "tuple", "dict", "int", "float", "str", "bool")
"""Classes ``isinstance(x, ...)`` of which proves ``x`` is not None (``none_checks``)."""
