"""``sorted(items, key=..., reverse=...)``, ``list.sort`` and ``list.reverse`` (a
``FunctionCompiler`` mixin): sorting numbers, strings and tuples of them, by a key written as a
one-argument lambda; the in-place methods written back item by item, so every name of the list
sees the order."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.types import BOOL, FLOAT, INT, STR, ListType, TensorType, TupleType, Type

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


class SortingMixin:
    """``sorted`` and the list methods that reorder a list."""

    def builtin_sorted(self: FunctionCompiler, node: ast.Call) -> Any:
        """``sorted(items, key=lambda x: ..., reverse=...)`` of a list or tuple of numbers,
        strings or tuples of them; the keys are a comprehension of the lambda's body."""
        keywords = {kw.arg: kw.value for kw in node.keywords}
        if len(node.args) != 1 or set(keywords) - {"key", "reverse"}:
            raise self.error(node, "sorted() takes one list and the keywords key and reverse")
        items = self.sortable_list(self.expr(node.args[0]), node.args[0], "sorted()")
        reverse = self.expr(keywords["reverse"]) if "reverse" in keywords else self.const(False)
        if reverse.type not in (BOOL, INT):
            raise self.error(keywords["reverse"], f"sorted(reverse=...) must be a bool, not "
                             f"{reverse.type}")
        keys = self.const(None)
        if "key" in keywords and not _is_none(keywords["key"]):
            keys = self.sort_keys(items, keywords["key"])
        elif not _sortable(items.type.element):
            raise self.error(node.args[0], f"sorted() of a list of {items.type.element} is not "
                             "supported: give a key that makes numbers or tuples of numbers")
        return self.emit_value("prim::sorted", [items, keys, reverse])

    def sortable_list(self: FunctionCompiler, value: Any, node: ast.AST, what: str) -> Any:
        """``value`` as a list (a tuple's items in a new list)."""
        t = value.type
        if isinstance(t, TupleType) and t.elements and len(set(t.elements)) == 1:
            return self.emit("prim::ListConstruct", self.tuple_items(value),
                             [ListType(t.elements[0])]).output
        if not isinstance(t, ListType):
            raise self.error(node, f"{what} of a {t} is not supported (pass a list)")
        return value

    def sort_keys(self: FunctionCompiler, items: Any, key: ast.expr) -> Any:
        """The list ``[key(x) for x in items]`` for a one-argument lambda ``key``."""
        args = key.args if isinstance(key, ast.Lambda) else None
        if args is None or len(args.args) != 1 or args.vararg or args.kwarg or \
                args.kwonlyargs or args.defaults or args.posonlyargs:
            raise self.error(key, "sorted(key=...) must be a lambda of one argument here "
                             "(lambda item: ...)")
        tag = self.new_flag("sorted")
        self.frame.set(tag, items)
        comp = ast.ListComp(elt=key.body, generators=[ast.comprehension(
            target=ast.Name(args.args[0].arg, ast.Store()), iter=ast.Name(tag, ast.Load()),
            ifs=[], is_async=0)])
        ast.fix_missing_locations(ast.copy_location(comp, key))
        keys = self.expr(comp)
        if isinstance(keys.type.element, TensorType):  # numpy scalars (a score np.log(p[j])):
            # Python orders them by value, as the floats they hold
            comp.elt = ast.copy_location(ast.Call(ast.Name("float", ast.Load()), [key.body], []),
                                         key.body)
            ast.fix_missing_locations(comp)
            keys = self.expr(comp)
        if not _sortable(keys.type.element):
            raise self.error(key, f"sorted(key=...) gives {keys.type.element}: only numbers, "
                             "strings and tuples of them are supported as keys")
        return keys

    def list_reverse(self: FunctionCompiler, lst: Any, node: ast.Call) -> Any:
        """``items.reverse()`` in place, written as Python the differentiation knows:
        ``copy = [items[n - 1 - i] for i in range(n)]``, then ``items[i] = copy[i]`` for each
        ``i``."""
        if node.args or node.keywords:
            raise self.error(node, "list.reverse() takes no arguments")
        items, copy, n, i = (self.new_flag(k) for k in ("reverse", "reversed", "n", "i"))
        self.frame.set(items, lst)
        self.emit_source(f"{n} = len({items})\n"
                         f"{copy} = [{items}[{n} - 1 - {i}] for {i} in range({n})]\n"
                         f"for {i} in range({n}):\n    {items}[{i}] = {copy}[{i}]\n", node)
        return self.const(None)

    def list_sort(self: FunctionCompiler, lst: Any, node: ast.Call) -> Any:
        """``items.sort(key=..., reverse=...)`` in place (NeuralTalk's beam search:
        ``beam_candidates.sort(reverse=True)``): ``sorted``'s list written back item by item,
        so every name of the list sees the order."""
        if node.args or set(kw.arg for kw in node.keywords) - {"key", "reverse"}:
            raise self.error(node, "list.sort() takes only the keywords key and reverse")
        items, ordered, i = (self.new_flag(k) for k in ("sort", "sorted", "i"))
        self.frame.set(items, lst)
        keywords = "".join(f", {kw.arg}={ast.unparse(kw.value)}" for kw in node.keywords)
        self.emit_source(f"{ordered} = sorted({items}{keywords})\n"
                         f"for {i} in range(len({items})):\n    {items}[{i}] = {ordered}[{i}]\n",
                         node)
        return self.const(None)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _sortable(t: Type) -> bool:
    """Numbers, strings and tuples of them: what Python orders without a key."""
    if t in (BOOL, INT, FLOAT, STR):
        return True
    return isinstance(t, TupleType) and all(_sortable(e) for e in t.elements)
