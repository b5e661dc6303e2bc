"""``**kwargs`` of a function the compiled code calls, and ``**`` in calls.

A call of ``def helper(x, scale=1.0, **kwargs)`` gathers the keyword arguments no parameter
takes into ``kwargs``, as Python does. Their names are known where the call is compiled, so
``kwargs`` is a compile-time record (``Keywords``): the names, and one tuple value passed as
the parameter holding the values in that order; ``helper`` is compiled once per set of names
(and of types). In its body ``kwargs`` is read by name (``kwargs["shift"]``,
``kwargs.get("shift", 0.0)``, ``"shift" in kwargs``, ``len(kwargs)``) or passed on whole
(``x.reshape(*args, **kwargs)``, ``inner(x, **kwargs)``), which spells each name as a keyword
argument. ``**`` of a dict literal with string keys spells its items the same way. Other uses
(iterating it, storing it, a ``**`` of a dict known only when the code runs) are a ScriptError
saying so; the function scripted itself still cannot take ``**kwargs`` (its callers pass
values, whose names are not known when it compiles).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ir.core import Value
from script.frontend.env import Static

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


@dataclass(frozen=True, eq=False)
class Keywords:
    """``**kwargs`` in the body of a function compiled for these keyword names."""

    names: tuple[str, ...]
    value: Value
    """the tuple parameter holding the values, in the order of ``names``."""
    spelling: str
    """the parameter's name."""


class KeywordsMixin:
    """``**kwargs`` parameters and ``**`` arguments for ``FunctionCompiler``."""

    keyword_names: tuple[str, ...] | None = None
    """for a function compiled for a call with extra keyword arguments: their names (the
    ``**kwargs`` parameter's record); None elsewhere."""

    def keywords_of(self: FunctionCompiler, node: ast.expr) -> Keywords | None:
        """The ``Keywords`` a name stands for, else None."""
        if isinstance(node, ast.Name):
            found = self.frame.find(node.id)
            if isinstance(found, Static) and isinstance(found.obj, Keywords):
                return found.obj
        return None

    def keyword_value(self: FunctionCompiler, kw: Keywords, name: str) -> Any:
        return self.emit_value("prim::TupleIndex", [kw.value, self.const(kw.names.index(name))])

    def spread_keywords(self: FunctionCompiler, node: ast.Call) -> ast.Call:
        """``f(x, **kwargs)`` / ``f(x, **{"axis": 1})``: each name a keyword argument."""
        keywords: list[ast.keyword] = []
        for kw in node.keywords:
            if kw.arg is not None:
                keywords.append(kw)
                continue
            record = self.keywords_of(kw.value)
            if record is not None:
                for name in record.names:
                    flag = self.new_flag("kw")
                    self.frame.set(flag, self.keyword_value(record, name))
                    keywords.append(ast.copy_location(ast.keyword(
                        arg=name, value=ast.copy_location(ast.Name(id=flag, ctx=ast.Load()),
                                                          kw)), kw))
                continue
            literal = kw.value
            if isinstance(literal, ast.Dict) and all(
                    isinstance(k, ast.Constant) and isinstance(k.value, str)
                    for k in literal.keys):
                keywords += [ast.copy_location(ast.keyword(arg=k.value, value=v), kw)  # type: ignore[union-attr]
                             for k, v in zip(literal.keys, literal.values)]
                continue
            raise self.unsupported(kw, "** of a dict whose keys are known only when the code "
                                   "runs (pass the arguments by name, or pass on a function's "
                                   "own **kwargs)")
        names = [kw.arg for kw in keywords]
        for k, name in enumerate(names):
            if name in names[:k]:
                raise self.error(node, f"got multiple values for keyword argument '{name}'")
        return ast.copy_location(ast.Call(func=node.func, args=node.args, keywords=keywords),
                                 node)

    def keywords_subscript(self: FunctionCompiler, kw: Keywords, node: ast.Subscript) -> Any:
        """``kwargs["name"]``: KeyError (a ScriptError here) for a name the call did not pass."""
        key = node.slice
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise self.error(key, f"'{kw.spelling}' is read with a constant string key here")
        if key.value not in kw.names:
            raise self.error(node, f"KeyError: {key.value!r} (the call passes "
                             f"{', '.join(kw.names) or 'no keyword arguments'} to "
                             f"**{kw.spelling})")
        return self.keyword_value(kw, key.value)

    def keywords_method(self: FunctionCompiler, kw: Keywords, name: str, node: ast.Call
                        ) -> Any:
        """``kwargs.get("name", default)``."""
        if name != "get" or node.keywords or not 1 <= len(node.args) <= 2 or not (
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            raise self.unsupported(node, f"{ast.unparse(node.func)}() (**{kw.spelling} is "
                                   "read by name: kwargs['name'], kwargs.get('name', default), "
                                   "'name' in kwargs, len(kwargs), or passed on: f(**kwargs))")
        key = node.args[0].value
        if key in kw.names:
            return self.keyword_value(kw, key)
        return self.expr(node.args[1]) if len(node.args) == 2 else self.const(None)

    def keywords_value_refused(self: FunctionCompiler, kw: Keywords, node: ast.AST) -> Any:
        return self.unsupported(node, f"using **{kw.spelling} as a value (it is read by name: "
                                "kwargs['name'], kwargs.get('name', default), 'name' in kwargs, "
                                "len(kwargs), or passed on: f(**kwargs))")
