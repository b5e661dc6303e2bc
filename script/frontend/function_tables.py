"""Dicts of functions (a ``FunctionCompiler`` mixin): the lookup tables numpy code keeps its
activations, losses or regularizers in, known when compiling::

    ACTIVATIONS = {"tanh": np.tanh, "sigmoid": sigmoid}       # a global
    reg_types = dict(l1=l1_reg, l2=l2_reg)                     # a local literal
    ACTIVATIONS["sigmoid"](x)                                  # a constant key: that function
    reg_types[reg_type](W, lam)                                # a key known when the code runs
    act = ACTIVATIONS[name]; act(x)

A table's keys are str or int constants and each value a function the compiled code may call
(``object_args.is_static_function``). A run-time key picks the call among the table's
functions: Python's ``KeyError`` where the key is not in the table, then one branch per key
(``f0(x) if key == k0 else f1(x) if ...``), each compiled for the call's arguments; a call that
knows the key (a helper's default, a constant argument) keeps one. ``key in table`` and
``key in table.keys()`` read the keys. A global table is guarded like a global number: the
function compiles again when its keys or functions change.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ir.registry import NOT_CONSTANT, constant_of
from ir.types import BOOL, INT, STR
from script.frontend.env import Static, end_of
from script.frontend.nested import FREE, LocalFunction
from script.frontend.object_args import is_static_function

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


@dataclass(frozen=True, eq=False)
class TableChoice:
    """``table[key]`` for a ``key`` known only when the code runs (a graph value)."""

    table: dict[Any, Any]
    key: Any
    spelling: str


def is_function_table(obj: Any) -> bool:
    """A dict whose keys are str or int constants and whose values are functions (nested ones
    too: a lambda of the literal, ``nested``)."""
    return (type(obj) is dict and bool(obj)
            and all(type(k) in (str, int) for k in obj)
            and all(is_static_function(v) or isinstance(v, LocalFunction) for v in obj.values()))


class FunctionTableMixin:
    """Dicts of functions known when compiling."""

    def function_table_literal(self: FunctionCompiler, node: ast.expr) -> dict[Any, Any] | None:
        """``{"tanh": np.tanh, ...}`` or ``dict(tanh=np.tanh, ...)`` of functions: the table;
        else None (an ordinary dict, compiled as a value)."""
        if isinstance(node, ast.Dict):
            if not node.keys or any(k is None or not isinstance(k, ast.Constant)
                                    for k in node.keys):
                return None
            pairs = [(k.value, v) for k, v in zip(node.keys, node.values)]  # type: ignore[union-attr]
        elif isinstance(node, ast.Call) and not node.args and node.keywords and \
                all(kw.arg is not None for kw in node.keywords) and \
                isinstance(node.func, ast.Name) and self.resolve_static(node.func) is dict:
            pairs = [(kw.arg, kw.value) for kw in node.keywords]
        else:
            return None
        if not all(isinstance(v, (ast.Name, ast.Attribute)) for _, v in pairs):
            return None
        table = {}
        for key, value in pairs:
            found = self.resolve_static(value)
            if not (is_static_function(found) or isinstance(found, LocalFunction)):
                return None
            table[key] = found
        return table if is_function_table(table) else None

    def table_item(self: FunctionCompiler, table: dict[Any, Any], node: ast.Subscript) -> Any:
        """``table[key]``: the function under a constant key, else a ``TableChoice``."""
        self.guard_table(node.value, table)
        key = self.expr(node.slice)
        known = constant_of(key)
        spelling = ast.unparse(node.value)
        if known is NOT_CONSTANT:
            return TableChoice(table, key, spelling)
        if known not in table:
            raise self.error(node.slice, f"KeyError: {known!r} is not a key of '{spelling}' "
                             f"(its keys: {', '.join(repr(k) for k in table)})")
        found = table[known]
        if isinstance(found, LocalFunction):  # called through the table (its free names)
            return TableChoice({known: found}, key, spelling)
        return found

    def call_table_choice(self: FunctionCompiler, choice: TableChoice, node: ast.Call) -> Any:
        """``table[key](args)``: Python's ``KeyError`` for a key not in the table, then the
        call of the function under the key, one branch per key."""
        present = self.key_present(choice.table, choice.key)
        message = choice.key if choice.key.type == STR else self.emit_value(
            "prim::str_op", [self.const("format"), self.const("{}"), choice.key])
        self.emit_if(self.negate(present), lambda: self.raise_exception(message, "KeyError"),
                     lambda: None, end_of(node), node)
        key_name = self.new_flag("key")
        self.frame.set(key_name, choice.key)
        args = []
        for arg in node.args:  # each evaluated once, before the call, as Python does
            name = self.new_flag("arg")
            self.frame.set(name, self.expr(arg))
            args.append(ast.copy_location(ast.Name(id=name, ctx=ast.Load()), arg))
        keywords = []
        for kw in node.keywords:
            name = self.new_flag("arg")
            self.frame.set(name, self.expr(kw.value))
            keywords.append(ast.copy_location(ast.keyword(
                arg=kw.arg, value=ast.copy_location(ast.Name(id=name, ctx=ast.Load()), kw)),
                kw))
        choice_expr: ast.expr | None = None
        for key, fn in reversed(list(choice.table.items())):
            fn_name = f"{choice.spelling}[{key!r}]"  # (not a Python name: no clash; errors)
            self.frame.set(fn_name, Static(fn))
            frees = []  # a nested function's reads of this function's names
            for free in fn.frees if isinstance(fn, LocalFunction) else ():
                kw = ast.keyword(arg=free, value=ast.copy_location(
                    ast.Name(id=free, ctx=ast.Load()), node))
                setattr(kw, FREE, True)
                frees.append(ast.copy_location(kw, node))
            call = ast.copy_location(ast.Call(
                func=ast.copy_location(ast.Name(id=fn_name, ctx=ast.Load()), node.func),
                args=args, keywords=keywords + frees), node)
            if choice_expr is None:
                choice_expr = call
                continue
            test = ast.copy_location(ast.Compare(
                left=ast.copy_location(ast.Name(id=key_name, ctx=ast.Load()), node.func),
                ops=[ast.Eq()], comparators=[ast.copy_location(ast.Constant(key), node)]), node)
            choice_expr = ast.copy_location(ast.IfExp(test=test, body=call, orelse=choice_expr),
                                            node)
        assert choice_expr is not None
        return self.expr(choice_expr)

    def key_present(self: FunctionCompiler, table: dict[Any, Any], key: Any) -> Any:
        """Whether the value ``key`` is a key of ``table``: ``key == k0 or key == k1 ...`` (a
        call that knows the key folds it)."""
        found = None
        for k in table:
            if key.type == STR and type(k) is str:
                same = self.emit_value("prim::str_eq", [key, self.const(k)])
            elif key.type in (INT, BOOL) and type(k) is int:
                same = self.emit_value("tensor::eq", [key, self.const(k)])
            else:
                continue  # (a key of another type is never equal)
            found = same if found is None else self.emit_value("tensor::logical_or",
                                                                [found, same])
        return self.const(False) if found is None else found

    def table_of(self: FunctionCompiler, node: ast.expr) -> dict[Any, Any] | None:
        """The table ``node`` names (``acts``, ``acts.keys()``), or None."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "keys" and not node.args and not node.keywords:
            node = node.func.value
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return None
        found = self.resolve_static(node)
        if not is_function_table(found):
            return None
        self.guard_table(node, found)
        return found

    def guard_table(self: FunctionCompiler, node: ast.expr, table: dict[Any, Any]) -> None:
        """A global table (not a local literal): the compiled code assumes its keys and
        functions stay as they are now (``globals.guard_global``)."""
        source = self.capture_source(node)
        if source is not None:
            self.guard_global(("table", *source.key), lambda: _contents(source.read()),
                              _contents(table))


def _contents(table: Any) -> Any:
    """What a guard compares of a table: its keys and the identity of each function."""
    return tuple((k, id(v)) for k, v in table.items()) if type(table) is dict else id(table)


__all__ = ["FunctionTableMixin", "TableChoice", "is_function_table"]
