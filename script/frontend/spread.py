"""Spread arguments in calls, ``f(*params)``, ``f(x, *params, y)``, and spread items in list
and tuple literals, ``[*xs, y]``, ``(*xs, y)``.

A tuple (a literal, a tuple-typed value, a named tuple) spreads into its items wherever a call
takes positional arguments: its length is part of its type. A list's length is not known when a
function compiles (a ``List[Tensor]`` argument, a list built by appends), so a list spreads into
a callee whose positional parameters say how many items it must hold (a scripted or plain Python
function, an op, a builtin), after a check, when the call runs, that it holds that many; the
items are read as ``a, b, c = params`` reads them (their gradients flow back into the list's
items). A list literal only read since it was made is unpacked as it is. A list spread into a
callee that takes any number of arguments, or whose defaults leave its length open, is refused
with the unpacking to write; so is one spread into a tuple literal (a tuple's length is part of
its type), unless its length is known there.
"""

from __future__ import annotations

import ast
import builtins
import inspect
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ir.registry import NO_DEFAULT, OpDef
from ir.types import ClassType, ListType, TensorType, TupleType, Type, erase_shape, unify
from script.frontend.env import end_of
from script.frontend.exprs import operator_op

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


class SpreadItem(ast.expr):
    """An item of a spread tuple, already compiled, standing where an argument was."""

    _fields = ()

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value
        """the item's IR value."""


class SpreadList(ast.expr):
    """``*xs`` of a list value: how many items it holds, the callee's parameters decide."""

    _fields = ()

    def __init__(self, value: Any, source: ast.expr, callee: str) -> None:
        super().__init__()
        self.value = value
        """the list's IR value."""
        self.source = source
        """the spread expression, for messages."""
        self.callee = callee
        """the called expression as written, for messages."""


_SIMPLE = (ast.Name, ast.Constant, ast.Attribute)
"""arguments whose value cannot change while a later ``*`` argument is evaluated."""


class SpreadMixin:
    """Spread-argument handling of ``FunctionCompiler``."""

    def spread_arguments(self: FunctionCompiler, node: ast.Call) -> ast.Call:
        """``node`` with its ``*`` arguments replaced by their items, evaluated left to right as
        Python evaluates them (an argument before a ``*`` one is compiled first)."""
        last = max(k for k, a in enumerate(node.args) if isinstance(a, ast.Starred))
        args: list[ast.expr] = []
        for k, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                args += self.spread(arg, node)
            elif k < last and not isinstance(arg, _SIMPLE):
                args.append(ast.copy_location(SpreadItem(self.expr(arg)), arg))
            else:
                args.append(arg)
        return ast.copy_location(ast.Call(func=node.func, args=args, keywords=node.keywords),
                                 node)

    def spread(self: FunctionCompiler, arg: ast.Starred, call: ast.Call) -> list[ast.expr]:
        source = arg.value
        if isinstance(source, (ast.Tuple, ast.List)) and \
                not any(isinstance(e, ast.Starred) for e in source.elts):
            return list(source.elts)  # f(*(a, b)) and f(*[a, b]) are f(a, b)
        value = self.expr(source)
        t = value.type
        if isinstance(t, TupleType):
            items = self.tuple_items(value)
        elif isinstance(t, ClassType) and t.named_tuple:
            items = self.named_tuple_items(value)
        elif isinstance(t, ListType):
            return [ast.copy_location(SpreadList(value, source, ast.unparse(call.func)), arg)]
        else:
            hint = " (ops.unbind splits a tensor into a tuple)" \
                if isinstance(t, TensorType) else ""
            raise self.error(arg, f"cannot spread a value of type {t} into a call: "
                             f"*{ast.unparse(source)} must be a tuple or a list{hint}")
        return [ast.copy_location(SpreadItem(item), arg) for item in items]

    def list_with_spreads(self: FunctionCompiler, node: ast.List, element: Type | None) -> Any:
        """``[a, *xs, b]``: a new list of the items, a spread tuple's items and a spread list's
        items (whatever it holds when the literal runs), in order: the leading items' literal,
        extended by each list and appended each item after it."""
        parts: list[tuple[bool, Any]] = []  # (is a spread list, value)
        for elt in node.elts:
            if not isinstance(elt, ast.Starred):
                parts.append((False, self.expr(elt)))
                continue
            value = self.expr(elt.value)
            if isinstance(value.type, TupleType):
                parts += [(False, item) for item in self.tuple_items(value)]
            elif isinstance(value.type, ListType):
                parts.append((True, value))
            else:
                raise self.error(elt, f"cannot spread a value of type {value.type} into a list: "
                                 f"*{ast.unparse(elt.value)} must be a tuple or a list")
        lead = next((k for k, (spread, _) in enumerate(parts) if spread), len(parts))
        types = [v.type.element if spread else v.type for spread, v in parts]
        joined: Type | None = element or types[0]
        for t in types:
            joined = unify(joined, t) if joined is not None else None
        if joined is None:
            raise self.error(node, "list elements have different types: " +
                             ", ".join(str(t) for t in types))
        out = self.list_literal([v for _, v in parts[:lead]], erase_shape(joined), node)
        for spread, value in parts[lead:]:
            self.emit("prim::ListExtend" if spread else "prim::ListAppend", [out, value], [])
        return out

    def tuple_spread_items(self: FunctionCompiler, elt: ast.Starred) -> list[Any]:
        """``*xs`` in a tuple literal, ``(*xs, y)``: the items of a tuple or named tuple, or of
        a list whose length is known here (a literal only read since). A tuple's length is part
        of its type, so a list whose length is only known when the code runs is refused."""
        value = self.expr(elt.value)
        t, text = value.type, ast.unparse(elt.value)
        if isinstance(t, TupleType):
            return self.tuple_items(value)
        if isinstance(t, ClassType) and t.named_tuple:
            return self.named_tuple_items(value)
        if not isinstance(t, ListType):
            raise self.error(elt, f"cannot spread a value of type {t} into a tuple: *{text} "
                             "must be a tuple or a list")
        n = known_length(value, self.graph.insert_point.owner)
        if n is None:
            raise self.error(elt, f"*{text} in a tuple literal is not supported: the list's "
                             "length is not known when compiling and a tuple's length is part "
                             f"of its type (build a list literal instead, [*{text}, ...], or "
                             f"unpack it first, as in a, b = {text})")
        return self.emit("prim::ListUnpack", [value], [t.element] * n).outputs if n else []

    def visit_SpreadItem(self: FunctionCompiler, node: SpreadItem) -> Any:
        return node.value

    def visit_SpreadList(self: FunctionCompiler, node: SpreadList) -> Any:
        raise self.list_spread_error(node, "")

    def list_spread_error(self: FunctionCompiler, node: SpreadList, why: str) -> Any:
        text = ast.unparse(node.source)
        why = why or "a list's length is not known when compiling"
        return self.error(node, f"*{text} in a call of {node.callee}() is not supported: {why} "
                          f"(unpack it first, as in a, b = {text}, and pass the items; or spread "
                          "a tuple)")

    def refuse_list_spread(self: FunctionCompiler, node: ast.Call) -> None:
        """A call whose callee takes any number of arguments: a list spread is refused."""
        for arg in node.args:
            if isinstance(arg, SpreadList):
                raise self.list_spread_error(arg, "")

    def spread_into_library(self: FunctionCompiler, params: tuple[list[str], set[str]] | None,
                            node: ast.Call, method: bool = False) -> ast.Call:
        """``node`` (a call of an op, a numpy function or a builtin, or a tensor method when
        ``method``; ``params``: its ``positional_params``) with its list spread replaced by the
        list's items: as many as the list was built with when that is known here, else as many
        as the callee's positional parameters take, checked when the call runs. A callee that
        takes any number of arguments (or has defaults that leave the count open) is refused."""
        node = self.spread_known_lists(node)
        if not any(isinstance(a, SpreadList) for a in node.args):
            return node
        callee = next(a for a in node.args if isinstance(a, SpreadList)).callee
        if method and len(node.args) == 1 and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("reshape", "transpose"):  # x.reshape(*s) is x.reshape(s)
            spread = node.args[0]
            assert isinstance(spread, SpreadList)
            return ast.copy_location(ast.Call(func=node.func, args=[ast.copy_location(
                SpreadItem(spread.value), spread)], keywords=node.keywords), node)
        if params is None:
            why = f"{callee}() takes any number of arguments and the list's length is not " \
                "known when compiling"
            raise self.list_spread_error(next(a for a in node.args
                                              if isinstance(a, SpreadList)), why)
        shown, defaults = params
        return self.fill_list_spread(callee, node, shown[1:] if method else shown, defaults)

    def spread_known_lists(self: FunctionCompiler, node: ast.Call) -> ast.Call:
        """``node`` with each list spread whose length is known here replaced by its items."""
        args: list[ast.expr] = []
        for arg in node.args:
            n = known_length(arg.value, self.graph.insert_point.owner) \
                if isinstance(arg, SpreadList) else None
            if n is None:
                args.append(arg)
                continue
            assert isinstance(arg, SpreadList)
            element = arg.value.type.element
            items = self.emit("prim::ListUnpack", [arg.value], [element] * n).outputs if n else []
            args += [ast.copy_location(SpreadItem(item), arg) for item in items]
        return ast.copy_location(ast.Call(func=node.func, args=args, keywords=node.keywords),
                                 node)

    def fill_list_spread(self: FunctionCompiler, callee: str, node: ast.Call, shown: list[str],
                         defaults: Collection[str]) -> ast.Call:
        """``node`` with its list spread replaced by the items that fill the parameters the
        other arguments leave (``shown``: the positional parameters left to the call;
        ``defaults``: those that have a default), after a check, when the call runs, that the
        list holds that many (Python's TypeError otherwise)."""
        node = self.spread_known_lists(node)
        spreads = [k for k, a in enumerate(node.args) if isinstance(a, SpreadList)]
        if not spreads:
            return node
        k = spreads[0]
        spread = node.args[k]
        assert isinstance(spread, SpreadList)
        if len(spreads) > 1:
            raise self.list_spread_error(node.args[spreads[1]], "two lists share the "
                                         f"parameters of {callee}()")
        named = [p for p, name in enumerate(shown) if name in {kw.arg for kw in node.keywords}]
        limit = named[0] if named else len(shown)
        count = limit - (len(node.args) - 1)
        if count < 0:
            raise self.error(node, f"{callee}() takes {limit} positional arguments but at "
                             f"least {len(node.args) - 1} were given")
        defaulted = [name for name in shown[k:limit] if name in defaults]
        if defaulted:
            raise self.list_spread_error(spread, f"the defaults of {callee}() "
                                         f"({', '.join(defaulted)}) leave the list's length open")
        self.check_spread_length(spread, count, f"{callee}() takes {limit} positional "
                                 f"argument{'s' if limit != 1 else ''}")
        element = spread.value.type.element
        items = self.emit("prim::ListUnpack", [spread.value], [element] * count).outputs \
            if count else []
        filled = [ast.copy_location(SpreadItem(item), spread) for item in items]
        return ast.copy_location(ast.Call(func=node.func, args=node.args[:k] + filled +
                                          node.args[k + 1:], keywords=node.keywords), node)

    def check_spread_length(self: FunctionCompiler, spread: SpreadList, count: int,
                            takes: str) -> None:
        """Raise Python's TypeError when the call runs if the spread list does not hold
        ``count`` items (``takes``: what the callee takes, for the message)."""
        text = ast.unparse(spread.source)
        fits = self.emit_value(operator_op("==").kind, [
            self.emit_value("prim::len", [spread.value]), self.const(count)])
        message = f"{takes}, but the list {text} spread into it (*{text}) does not hold " \
            f"{count} item{'s' if count != 1 else ''}"
        self.emit_if(fits, lambda: None, lambda: self.raise_exception(message, "TypeError"),
                     end_of(spread), spread)


READS = ("prim::ListIndex", "prim::len", "prim::ListUnpack")
"""Uses that read a list without changing it or keeping it anywhere."""


def known_length(lst: Any, block: Any) -> int | None:
    """The length of list ``lst`` at the end of ``block`` so far, when a literal made it there
    and it has only been read since (no append, no alias that could change it); else None."""
    maker = lst.node
    if maker.kind != "prim::ListConstruct" or maker.owner is not block:
        return None
    if any(use.node.kind not in READS or use.index != 0 for use in lst.uses):
        return None
    return len(maker.inputs)


def positional_params(obj: Any, op: OpDef | None) -> tuple[list[str], set[str]] | None:
    """The positional parameters of ``op`` (the op ``obj`` stands for) or else of the library
    function ``obj`` (their names, and those with a default), or None when it takes any number
    of them or they are not known. A Python builtin takes what Python's takes (``max`` any number,
    where its op takes two), and an op with a shape argument any number of ints
    (``x.reshape(*shape)``)."""
    builtin = obj is not None and getattr(builtins, getattr(obj, "__name__", ""), None) is obj
    if op is not None and not builtin:
        if op.variadic or any(a.kind.rstrip("?") == "ints" for a in op.args):
            return None
        return [a.name for a in op.args], {a.name for a in op.args if a.default is not NO_DEFAULT}
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # max, min, print: no signature, any number of arguments
        return None
    params = [p for p in signature.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    return [p.name for p in params], {p.name for p in params if p.default is not p.empty}
