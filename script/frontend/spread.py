"""Spread arguments in calls: ``f(*params)``, ``f(x, *params, y)``.

A tuple (a literal, a tuple-typed value, a named tuple) spreads into its items wherever a call
takes positional arguments: its length is part of its type. A list's length is not known when a
function compiles (a ``List[Tensor]`` argument, a list literal that may have grown, a list built
by appends), so a list spreads only into a scripted or plain Python function, whose parameters
say how many items it must hold; the items are read as ``a, b, c = params`` reads them (their
gradients flow back into the list's items). A list spread anywhere else (an op, a builtin), or
where the callee's defaults leave its length open, is refused with the unpacking to write.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.types import ClassType, ListType, TensorType, TupleType
from script.frontend.env import end_of
from script.frontend.exprs import operator_op

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler
    from script.frontend.definition import FunctionDef


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

    def fill_list_spread(self: FunctionCompiler, fdef: FunctionDef, node: ast.Call,
                         shown: list[str]) -> ast.Call:
        """``node`` with its list spread replaced by the items that fill the parameters the
        other arguments leave (``shown``: the positional parameters left to the call)."""
        spreads = [k for k, a in enumerate(node.args) if isinstance(a, SpreadList)]
        if not spreads:
            return node
        k = spreads[0]
        spread = node.args[k]
        assert isinstance(spread, SpreadList)
        if len(spreads) > 1:
            raise self.list_spread_error(node.args[spreads[1]], "two lists share the "
                                         f"parameters of {fdef.name}()")
        named = [p for p, name in enumerate(shown) if name in {kw.arg for kw in node.keywords}]
        limit = named[0] if named else len(shown)
        count = limit - (len(node.args) - 1)
        if count < 0:
            raise self.error(node, f"{fdef.name}() takes {limit} positional arguments but at "
                             f"least {len(node.args) - 1} were given")
        defaulted = [name for name in shown[k:limit] if name in fdef.defaults]
        if defaulted:
            raise self.list_spread_error(spread, f"the defaults of {fdef.name}() "
                                         f"({', '.join(defaulted)}) leave the list's length open")
        if count == 0:  # nothing to unpack: an item left over is Python's TypeError
            empty = self.emit_value(operator_op("==").kind, [
                self.emit_value("prim::len", [spread.value]), self.const(0)])
            message = f"{fdef.name}() takes {limit} positional arguments but more were given"
            self.emit_if(empty, lambda: None, lambda: self.raise_exception(message, "TypeError"),
                         end_of(node), node)
        element = spread.value.type.element
        items = self.emit("prim::ListUnpack", [spread.value], [element] * count).outputs \
            if count else []
        filled = [ast.copy_location(SpreadItem(item), spread) for item in items]
        return ast.copy_location(ast.Call(func=node.func, args=node.args[:k] + filled +
                                          node.args[k + 1:], keywords=node.keywords), node)
