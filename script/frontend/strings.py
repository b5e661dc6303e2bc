"""Strings in scripted code: their methods (``s.lower()``, ``s.startswith("lstm")``,
``s.split(",")``), ``s[i]``, ``s[a:b]``, ``a in s``, ``a + b`` and ``s * n``, as the string ops
of ``ir/ops/strings.py``; and ``x in (a, b, ...)`` of a tuple, as ``x == a or x == b ...``.

A string op whose inputs are constants folds when compiling, and a ``str`` argument that
decides an ``if`` through them is compiled in (``passes.static_ints``): ``if
cell.lower() == "gru":`` picks its branch when the function is specialized."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.types import BOOL, FLOAT, INT, NONE, STR, ListType, TupleType, Type

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

_TAKES: dict[str, tuple[int, int, tuple[str, ...]]] = {
    **{name: (1, 3, ("str", "int", "int")) for name in ("startswith", "endswith", "find",
                                                        "rfind", "count", "index", "rindex")},
    **{name: (0, 0, ()) for name in ("isdigit", "isalpha", "isalnum", "isspace", "islower",
                                     "isupper", "lower", "upper", "capitalize", "title")},
    **{name: (0, 1, ("str?",)) for name in ("strip", "lstrip", "rstrip")},
    "replace": (2, 3, ("str", "str", "int")),
    "split": (0, 2, ("str?", "int")),
    "join": (1, 1, ("strs",)),
}
"""method -> (fewest, most arguments, the kind of each): ``str`` / ``int`` / ``str?`` (or
None) / ``strs`` (a list or tuple of strings)."""


class StringMixin:
    """String visitors of ``FunctionCompiler``."""

    def string_method(self: FunctionCompiler, base: Any, name: str, node: ast.Call) -> Any:
        """``s.name(args)``: a method of ``_TAKES``."""
        if name not in _TAKES:
            raise self.error(node.func, f"'str' has no attribute '{name}' (the string methods "
                             f"supported: {', '.join(sorted(_TAKES))})")
        if node.keywords:
            raise self.error(node.keywords[0], f"str.{name}() takes its arguments by position "
                             "here")
        low, high, kinds = _TAKES[name]
        if not low <= len(node.args) <= high:
            count = str(low) if low == high else f"{low} to {high}"
            raise self.error(node, f"str.{name}() takes {count} arguments, not "
                             f"{len(node.args)}")
        args = []
        for arg, kind in zip(node.args, kinds):
            value = self.expr(arg)
            if not _fits(value.type, kind):
                raise self.error(arg, f"str.{name}(): an argument must be "
                                 f"{_KIND_NAMES[kind]}, not {value.type}")
            args.append(value)
        return self.emit_value("prim::str_op", [self.const(name), base, *args])

    def string_index(self: FunctionCompiler, value: Any, index: ast.expr) -> Any:
        """``s[i]`` and ``s[a:b:c]``."""
        if isinstance(index, ast.Slice):
            return self.emit_value("prim::str_slice", [value, *self.slice_bounds(index)])
        return self.emit_value("prim::str_op", [self.const("__getitem__"), value,
                                                self.index_value(index)])

    def string_binary(self: FunctionCompiler, symbol: str, lhs: Any, rhs: Any) -> Any:
        """``a + b`` of strings and ``s * n`` / ``n * s``; None for other operands."""
        if symbol == "+" and lhs.type == rhs.type == STR:
            return self.emit_value("prim::str_op", [self.const("__add__"), lhs, rhs])
        if symbol == "*" and {lhs.type, rhs.type} in ({STR, INT}, {STR, BOOL}):
            text, count = (lhs, rhs) if lhs.type == STR else (rhs, lhs)
            return self.emit_value("prim::str_op", [self.const("__mul__"), text, count])
        if symbol == "%" and lhs.type == STR and _formattable(rhs.type):
            return self.emit_value("prim::str_op", [self.const("__mod__"), lhs, rhs])
        return None

    def visit_JoinedStr(self: FunctionCompiler, node: ast.JoinedStr) -> Any:
        """An f-string of numbers and strings: each field ``format``ted as Python does
        (``f"{t:03d}"``, ``f"{x!r}"``), the pieces joined; folded when they are constants."""
        text = self.const("")
        for part in node.values:
            if isinstance(part, ast.Constant):
                piece = self.const(part.value)
            else:
                piece = self.formatted(part)
            text = self.string_binary("+", text, piece)
        return text

    def formatted(self: FunctionCompiler, part: ast.FormattedValue) -> Any:
        spec = ""
        if part.format_spec is not None:
            if not all(isinstance(p, ast.Constant) for p in part.format_spec.values):
                raise self.error(part, "a format spec computed when the code runs is not "
                                 "supported")
            spec = ":" + "".join(p.value for p in part.format_spec.values)
        conversion = "" if part.conversion == -1 else "!" + chr(part.conversion)
        value = self.expr(part.value)
        if value.type not in (BOOL, INT, FLOAT, STR, NONE):
            raise self.error(part.value, f"an f-string field of type {value.type} is not "
                             "supported (numbers and strings are)")
        return self.emit_value("prim::str_op", [self.const("format"),
                                                self.const("{" + conversion + spec + "}"), value])

    def string_contains(self: FunctionCompiler, text: Any, item: Any, node: ast.AST) -> Any:
        """``item in text`` of strings."""
        if item.type != STR:
            raise self.error(node, f"'in <string>' requires a str on the left, not {item.type}")
        return self.emit_value("prim::str_op", [self.const("__contains__"), text, item])

    def tuple_contains(self: FunctionCompiler, items: Any, item: Any, node: ast.AST) -> Any:
        """``item in (a, b, ...)``: ``item == a or item == b ...`` (strings and numbers)."""
        found = self.const(False)
        for other in self.tuple_items(items):
            if not (_comparable(item.type) and _comparable(other.type)
                    and (item.type == STR) == (other.type == STR)):
                raise self.error(node, f"'in' of a tuple compares strings or numbers here, not "
                                 f"{item.type} with {other.type}")
            same = self.binary("==", item, other, node)
            found = same if found.is_constant and found.constant is False else \
                self.either(found, same, node)
        return found

    def either(self: FunctionCompiler, a: Any, b: Any, node: ast.AST) -> Any:
        """``a or b`` of two bools (both computed already: the comparisons have no effects)."""
        if a.is_constant:
            return self.const(True) if a.constant else b
        if b.is_constant:
            return self.const(True) if b.constant else a
        return self.emit_value("tensor::logical_or", [a, b])


_KIND_NAMES = {"str": "a str", "int": "an int", "str?": "a str or None",
               "strs": "a list or tuple of strings"}


def _fits(t: Type, kind: str) -> bool:
    if kind == "str":
        return t == STR
    if kind == "int":
        return t in (INT, BOOL)
    if kind == "str?":
        return t in (STR, NONE)
    if isinstance(t, ListType):
        return t.element == STR
    return isinstance(t, TupleType) and all(e == STR for e in t.elements)


def _comparable(t: Type) -> bool:
    return t in (STR, INT, FLOAT, BOOL)


def _formattable(t: Type) -> bool:
    """A number, a string or None, or a tuple of them: what ``"%d" % n`` formats."""
    if isinstance(t, TupleType):
        return all(map(_formattable, t.elements))
    return t in (BOOL, INT, FLOAT, STR, NONE)
