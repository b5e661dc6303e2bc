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
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ir.core import Value
from ir.types import STR, DictType, TensorType
from script.frontend.env import Static, at_position

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

    def spread_keywords(self: FunctionCompiler, node: ast.Call) -> ast.expr:
        """``f(x, **kwargs)`` / ``f(x, **{"axis": 1})``: each name a keyword argument; ``f(x,
        **d)`` of a dict value: ``dict_keywords``."""
        keywords: list[ast.keyword] = []
        spread: ast.keyword | None = None
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
            if spread is not None:
                raise self.unsupported(kw, "a second ** of a dict in one call")
            spread = kw
        names = [kw.arg for kw in keywords]
        for k, name in enumerate(names):
            if name in names[:k]:
                raise self.error(node, f"got multiple values for keyword argument '{name}'")
        call = ast.copy_location(ast.Call(func=node.func, args=node.args, keywords=keywords),
                                 node)
        return call if spread is None else self.dict_keywords(call, spread)

    def dict_keywords(self: FunctionCompiler, call: ast.Call, spread: ast.keyword) -> ast.expr:
        """``linear(x, **layer)`` with ``layer`` a dict whose keys are known only when the code
        runs (picoGPT's ``linear(x, **c_attn)``): the callee's parameters the call leaves open
        are read from it by name (``w=layer["w"]``), after a check that it holds every
        required one and nothing else, raising Python's ``TypeError``. A parameter with a
        default is read where the dict holds it (a conditional call per such parameter, at most
        ``MAX_OPTIONAL``, decided when the dict is known); one annotated as a number, which a
        dict of arrays cannot give, must not be in one."""
        fn = self.resolve_static(call.func)
        fn = getattr(fn, "python_fn", fn)
        if not inspect.isfunction(fn):
            raise self.unsupported(spread, "** of a dict whose keys are known only when the "
                                   "code runs, into anything but a Python function (pass the "
                                   "arguments by name)")
        value = self.expr(spread.value)
        if not (isinstance(value.type, DictType) and value.type.key == STR):
            raise self.error(spread.value, f"** of a {value.type}: pass a dict with str keys")
        given = {kw.arg for kw in call.keywords}
        required, optional = [], []
        params = list(inspect.signature(fn).parameters.values())
        for k, p in enumerate(params):
            if p.kind == p.VAR_KEYWORD:
                raise self.unsupported(spread, f"** of a dict whose keys are known only when "
                                       f"the code runs, into {fn.__name__}(**{p.name}) (pass "
                                       "the arguments by name)")
            if p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY) or p.name in given or (
                    p.kind == p.POSITIONAL_OR_KEYWORD and k < len(call.args)):
                continue
            if p.default is p.empty:
                required.append(p.name)
            elif not (isinstance(value.type.value, TensorType)
                      and _number_annotation(fn, p.name)):
                optional.append(p.name)
        if len(optional) > MAX_OPTIONAL:
            raise self.unsupported(spread, f"** of a dict into {fn.__name__}(), whose "
                                   f"parameters {', '.join(optional)} may or may not come "
                                   "from it (pass them by name)")
        name = self.new_flag("kwd")
        self.frame.set(name, value)
        where = f"{fn.__name__}()"
        allowed = tuple(required + optional)
        self.emit_source(
            f"for {name}_k in {name}:\n"
            f"    if {name}_k not in {allowed!r}:\n"
            f"        raise TypeError(f\"{where} got an unexpected keyword argument "
            f"'{{{name}_k}}' from **{ast.unparse(spread.value)}\")\n"
            + "".join(f"if {p!r} not in {name}:\n"
                      f"    raise TypeError(\"{where} missing 1 required argument: '{p}'\")\n"
                      for p in required), call)

        def read(p: str) -> ast.keyword:
            item = ast.Subscript(ast.Name(name, ast.Load()), ast.Constant(p), ast.Load())
            return ast.keyword(arg=p, value=item)

        def variants(rest: list[str], chosen: list[str]) -> ast.expr:
            if not rest:
                return ast.Call(func=call.func, args=call.args, keywords=[
                    *call.keywords, *map(read, required + chosen)])
            test = ast.Compare(ast.Constant(rest[0]), [ast.In()], [ast.Name(name, ast.Load())])
            return ast.IfExp(test, variants(rest[1:], chosen + rest[:1]),
                             variants(rest[1:], chosen))
        return ast.fix_missing_locations(at_position(variants(optional, []), call))

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


MAX_OPTIONAL = 2
"""Parameters with a default a ``**`` of a dict may or may not give (each doubles the calls)."""


def _number_annotation(fn: Any, name: str) -> bool:
    """Whether ``fn``'s parameter ``name`` is annotated as a Python number or string (a dict
    of arrays cannot hold one)."""
    annotation = getattr(fn, "__annotations__", {}).get(name)
    return annotation in (int, float, bool, str, "int", "float", "bool", "str")
