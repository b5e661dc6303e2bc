"""Containers: dict literals and methods, ``in``, list comprehensions, ``reversed``, and the
builtins ``sum``, ``list`` and ``dict``.

A mixin of ``FunctionCompiler``. Dicts are insertion-ordered and mutable, with ``str`` or ``int``
keys; ``keys()`` / ``values()`` / ``items()`` make lists (iterating a dict iterates its keys). A
list comprehension becomes an empty list and a loop appending to it; its loop variables are
renamed so they do not leak into the enclosing function, as in Python 3.
"""

from __future__ import annotations

import ast
import builtins
import copy
from typing import TYPE_CHECKING, Any

from ir.core import PARAM
from ir.types import (
    ANY,
    BOOL,
    FLOAT,
    INT,
    STR,
    TENSOR,
    DictType,
    ListType,
    TensorType,
    TupleType,
    Type,
    erase_shape,
    unify,
)
from script.errors import ScriptError

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


def _empty_message(name: str) -> str:
    """This Python's message for ``min([])`` / ``max([])``."""
    try:
        getattr(builtins, name)([])
    except ValueError as exc:
        return str(exc)
    return f"{name}() arg is an empty sequence"


class ContainerMixin:
    """Dict, membership, comprehension and ``reversed`` visitors of ``FunctionCompiler``."""

    # -- membership -------------------------------------------------------------------------------
    def contains(self: FunctionCompiler, container: Any, item: Any, node: ast.AST) -> Any:
        t = container.type
        if isinstance(t, ListType):
            if unify(t.element, item.type) is None:
                raise self.error(node, f"'in' tests a {item.type} against a list of {t.element}")
            return self.emit_value("prim::ListContains", [container, item])
        if isinstance(t, DictType):
            self.check_dict_key(container, item, node)
            return self.emit_value("prim::DictContains", [container, item])
        if t == STR:
            return self.string_contains(container, item, node)
        if isinstance(t, TupleType):
            return self.tuple_contains(container, item, node)
        raise self.unsupported(node, f"'in' on a value of type {t}")

    # -- dicts ------------------------------------------------------------------------------------
    def visit_Dict(self: FunctionCompiler, node: ast.Dict, declared: DictType | None = None
                   ) -> Any:
        if any(k is None for k in node.keys):
            raise self.unsupported(node, "** unpacking inside a dict literal")
        items = []
        for key, value in zip(node.keys, node.values):
            items += [self.expr(key), self.expr(value)]  # type: ignore[arg-type]
        if declared is None:
            hinted = self.literal_type(node)
            declared = hinted if isinstance(hinted, DictType) else None
            out = self.dict_literal(node, items, declared)
            return self.note_literal(out, node, items[1::2])
        return self.dict_literal(node, items, declared)

    def dict_literal(self: FunctionCompiler, node: ast.Dict, items: list[Any],
                     declared: DictType | None) -> Any:
        """A dict of ``items`` (key, value, key, value...) typed ``declared`` (None: the items')."""
        if declared is not None:
            items[1::2] = self.number_items(items[1::2], declared.value)
        if not items:  # an empty literal is Dict[str, Tensor] unless annotated
            return self.emit("prim::DictConstruct", [], [declared or DictType(STR, TENSOR)]
                             ).output
        for key in items[0::2]:
            if key.type not in (STR, INT):
                raise self.error(node, f"dict keys must be str or int, not {key.type}")
        out = self.emit("prim::DictConstruct", items,
                        [declared] if declared is not None else None).output
        if declared is not None and out.type != declared:
            raise self.error(node, f"a dict literal of type {out.type} cannot be a {declared}")
        return out

    def check_key(self: FunctionCompiler, t: DictType, key: Any, node: ast.AST) -> None:
        if key.type != t.key and not (t.key == INT and key.type == BOOL):
            raise self.error(node, f"a key of {t} must be {t.key}, not {key.type}")

    def check_dict_key(self: FunctionCompiler, d: Any, key: Any, node: ast.AST) -> None:
        """``key`` is a key of ``d``'s type (or ``d``'s empty literal is retyped to fit)."""
        try:
            self.check_key(d.type, key, node)
        except ScriptError as error:
            self.widen_dict(d, key.type, d.type.value, error)

    def check_store(self: FunctionCompiler, d: Any, key: Any, value: Any, node: ast.AST,
                    key_node: ast.AST) -> Any:
        """``d[key] = value`` fits ``d``'s type (or its literal is retyped to fit): the value
        stored (a numpy scalar into a dict of numbers is the number)."""
        t = d.type
        self.check_dict_key(d, key, key_node)
        if unify(t.value, value.type) != t.value:
            return self.widen_or_number(value, t.value, f"cannot store {_a(str(value.type))} in "
                                        f"a {t}", node,
                                        lambda error: self.widen_dict(d, t.key, value.type, error))
        return value

    def dict_args(self: FunctionCompiler, node: ast.Call, name: str, low: int, high: int
                  ) -> list[Any]:
        if node.keywords or not low <= len(node.args) <= high:
            count = str(low) if low == high else f"{low} to {high}"
            raise self.error(node, f"dict.{name}() takes {count} arguments")
        return [self.expr(a) for a in node.args]

    def dict_get(self: FunctionCompiler, d: Any, node: ast.Call) -> Any:
        args = self.dict_args(node, "get", 1, 2)
        self.check_dict_key(d, args[0], node)
        default = args[1] if len(args) == 2 else self.const(None)
        try:
            return self.emit_value("prim::DictGet", [d, args[0], default])
        except ScriptError as error:  # `hist = {}` then `hist.get(k, 0) + 1`: values are ints
            self.widen_dict(d, d.type.key, default.type, error)

    def dict_setdefault(self: FunctionCompiler, d: Any, node: ast.Call) -> Any:
        """``d.setdefault(key, default)``: stores ``default`` under a key ``d`` lacks; the
        value under the key either way."""
        args = self.dict_args(node, "setdefault", 2, 2)
        self.check_dict_key(d, args[0], node)
        names = [self.new_flag(k) for k in ("dict", "key", "default", "found")]
        for name, value in zip(names, (d, *args)):
            self.frame.set(name, value)
        dv, kv, vv, found = names
        self.emit_source(f"if {kv} not in {dv}:\n    {dv}[{kv}] = {vv}\n"
                         f"{found} = {dv}[{kv}]\n", node)
        return self.frame.find(found)

    def dict_keys(self: FunctionCompiler, d: Any, node: ast.Call) -> Any:
        self.dict_args(node, "keys", 0, 0)
        return self.emit_value("prim::DictKeys", [d])

    def dict_values(self: FunctionCompiler, d: Any, node: ast.Call) -> Any:
        self.dict_args(node, "values", 0, 0)
        return self.emit_value("prim::DictValues", [d])

    def dict_items(self: FunctionCompiler, d: Any, node: ast.Call) -> Any:
        self.dict_args(node, "items", 0, 0)
        return self.emit_value("prim::DictItems", [d])

    def set_dict_item(self: FunctionCompiler, d: Any, key_node: ast.expr, value: Any,
                      node: ast.AST) -> None:
        key = self.expr(key_node)
        value = self.check_store(d, key, value, node, key_node)
        self.emit("prim::DictSetItem", [d, key, value], [])

    # -- reversed ---------------------------------------------------------------------------------
    def builtin_reversed(self: FunctionCompiler, node: ast.Call) -> Any:
        (value,) = self.builtin_args(node, "reversed", 1)
        if not isinstance(value.type, ListType):
            raise self.error(node, f"reversed() of a {value.type} is not supported outside a "
                             "for loop")
        none = self.const(None)
        return self.emit_value("prim::ListSlice", [value, none, none, self.const(-1)])

    # -- sum, list, dict -----------------------------------------------------------------------
    def builtin_sum(self: FunctionCompiler, node: ast.Call) -> Any:
        """``sum(items, start=0)``: ``acc = start`` then ``acc = acc + item`` for each item, as
        Python adds them (a generator expression is read as the list comprehension)."""
        keywords = {kw.arg: kw.value for kw in node.keywords}
        given = [*node.args, *keywords.values()]
        if not 1 <= len(node.args) <= 2 or set(keywords) - {"start"} or len(given) > 2:
            raise self.error(node, "sum() takes an iterable and a start value")
        items = self.expr(self.iterable_as_list(node.args[0]))
        start = self.expr(given[1]) if len(given) == 2 else self.const(0)
        if not isinstance(items.type, (ListType, TupleType, TensorType)):
            raise self.error(node.args[0], f"sum() of a {items.type} is not supported (pass a "
                             "list or tuple of numbers or Tensors)")
        t = items.type
        floats = t.element == FLOAT if isinstance(t, ListType) else \
            isinstance(t, TupleType) and FLOAT in t.elements
        if floats and start.type in (INT, BOOL):  # an int sum becomes a float: start as one
            start = self.emit_value("prim::Float", [start])
        acc, seq, item = (self.new_flag(k) for k in ("sum", "summed", "item"))
        self.frame.set(seq, items)
        self.frame.set(acc, start)
        self.emit_source(f"for {item} in {seq}:\n    {acc} = {acc} + {item}\n", node)
        return self.frame.find(acc)

    def extremum(self: FunctionCompiler, node: ast.Call, name: str) -> Any:
        """``min`` / ``max`` of two or more numbers (the first extreme one, as Python's: left to
        right, pairwise), or of one list or tuple of numbers (``max(x.shape)``; an empty one
        raises Python's ValueError)."""
        if len(node.args) == 1 and not node.keywords:
            return self.extremum_of_items(node, name)
        if len(node.args) > 2 and not node.keywords:
            values = [self.expr(a) for a in node.args]
        else:
            values = self.builtin_args(node, name, 2)
        for v in values:
            if v.type not in (BOOL, INT, FLOAT) and not isinstance(v.type, TensorType):
                raise self.error(node, f"{name}() of a {v.type} is not supported (use "
                                 f"np.{name}imum for tensors)")
        if any(isinstance(v.type, TensorType) for v in values):
            if not all(isinstance(v.type, TensorType) or v.node.kind == PARAM for v in values):
                # (a carried number, m = -np.inf before the loop: an array from the first step)
                raise self.error(node, f"{name}() of a number and an array: Python gives back "
                                 "whichever wins, the number itself or the array's item, whose "
                                 "types differ; write np.{name}imum(a, b) for an array, or "
                                 "make both arrays (an accumulator started as a number and "
                                 "carried by a loop is one)".replace("{name}", name))
            return self.extremum_by_comparison(values, name, node)
        result = values[0]
        for v in values[1:]:
            result = self.emit_value(f"prim::{name}", [result, v])
        return result

    def extremum_by_comparison(self: FunctionCompiler, values: list[Any], name: str,
                               node: ast.Call) -> Any:
        """``max(m, x[i])`` of arrays (0-d ones, numpy's scalars; ``m`` carried by a loop from
        ``m = -np.inf``): as Python's, the first value unless a later one compares greater
        (``max``) or less (``min``): that value itself, its dtype kept (``np.maximum`` would
        promote). An array of more than one item raises numpy's ValueError at the comparison,
        as in Python."""
        names = [self.new_flag("operand") for _ in values]
        for flag, v in zip(names, values):
            self.frame.set(flag, v)
        acc, op = self.new_flag(name), ">" if name == "max" else "<"
        self.emit_source(f"{acc} = {names[0]}\n" + "".join(
            f"if {flag} {op} {acc}:\n    {acc} = {flag}\n" for flag in names[1:]), node)
        return self.frame.find(acc)

    def extremum_of_items(self: FunctionCompiler, node: ast.Call, name: str) -> Any:
        items = self.expr(self.iterable_as_list(node.args[0]))
        t = items.type
        numbers = t.element in (BOOL, INT, FLOAT) if isinstance(t, ListType) else \
            isinstance(t, TupleType) and bool(t.elements) and all(
                e in (BOOL, INT, FLOAT) for e in t.elements)
        if not numbers:
            raise self.error(node.args[0], f"{name}() of a {t} is not supported (of a list or "
                             f"tuple of numbers it is; np.{name}(x) for an array)")
        acc, seq, item = (self.new_flag(k) for k in (name, "items", "item"))
        self.frame.set(seq, items)
        self.emit_source(f"if len({seq}) == 0:\n"
                         f"    raise ValueError({_empty_message(name)!r})\n"
                         f"{acc} = {seq}[0]\n"
                         f"for {item} in {seq}[1:]:\n    {acc} = {name}({acc}, {item})\n", node)
        return self.frame.find(acc)

    def builtin_list(self: FunctionCompiler, node: ast.Call) -> Any:
        """``list()`` is ``[]``; ``list(items)`` the comprehension ``[x for x in items]`` (a new
        list of a list's, a tuple's or a range's items, a dict's keys...)."""
        if node.keywords or len(node.args) > 1:
            raise self.error(node, "list() takes at most one argument")
        if not node.args:
            return self.expr(ast.copy_location(ast.List(elts=[], ctx=ast.Load()), node))
        arg = node.args[0]
        comp = self.iterable_as_list(arg)
        return self.expr(comp if isinstance(comp, ast.ListComp) else _items_of(arg))

    def builtin_tuple(self: FunctionCompiler, node: ast.Call) -> Any:
        """``tuple()`` is ``()``; ``tuple(items)`` the tuple ``(*items,)`` (a tuple's own items, a
        list's whose length is known when compiling: a tuple's length is part of its type)."""
        if node.keywords or len(node.args) > 1:
            raise self.error(node, "tuple() takes at most one argument")
        if not node.args:
            return self.emit_value("prim::TupleConstruct", [])
        value = self.expr(node.args[0])
        if isinstance(value.type, TupleType):
            return value
        made = value.node
        if made.kind == "prim::ListConstruct" and len(value.uses) == 0:
            return self.emit_value("prim::TupleConstruct", list(made.inputs))
        raise self.error(node, f"tuple() of a {value.type} whose length is known only when "
                         "the code runs (a comprehension, map(), a list built by appends) is "
                         "not supported: a tuple's length is part of its type; write the "
                         "tuple literal, (a, b), or keep the list")

    def builtin_map(self: FunctionCompiler, node: ast.Call) -> Any:
        """``map(f, xs)`` / ``map(f, xs, ys)`` as the list comprehension ``[f(x) for x in xs]``
        (``zip`` over several); a lambda's body is the item itself, its parameters the loop
        variables. A list where Python gives an iterator: the same items, read once or more."""
        if node.keywords or len(node.args) < 2:
            raise self.error(node, "map() takes a function and at least one iterable")
        fn, iterables = node.args[0], node.args[1:]
        if isinstance(fn, ast.Lambda):
            a = fn.args
            if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs or \
                    len(a.args) != len(iterables):
                raise self.error(fn, f"map() of a lambda takes one plain parameter per "
                                 f"iterable ({len(iterables)} here)")
            names, elt = [p.arg for p in a.args], fn.body
        else:
            names = [self.new_flag("map") for _ in iterables]
            elt = ast.Call(fn, [ast.Name(n, ast.Load()) for n in names], [])
        if len(names) == 1:
            target: ast.expr = ast.Name(names[0], ast.Store())
            source = iterables[0]
        else:
            target = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
            source = ast.Call(ast.Name("zip", ast.Load()), list(iterables), [])
        comp = ast.ListComp(elt=elt, generators=[ast.comprehension(
            target=target, iter=source, ifs=[], is_async=0)])
        return self.expr(ast.fix_missing_locations(ast.copy_location(comp, node)))

    def builtin_zip(self: FunctionCompiler, node: ast.Call) -> Any:
        """``zip(xs, ys)`` as a value (passed to a function, assigned): the list of its tuples,
        ``[(x, y) for x, y in zip(xs, ys)]``, where Python gives an iterator (the same items,
        read once or more, as ``map``)."""
        return self.expr(_items_of(node))

    def builtin_enumerate(self: FunctionCompiler, node: ast.Call) -> Any:
        """``enumerate(xs)`` as a value: the list of its (index, item) tuples, as ``zip``."""
        return self.expr(_items_of(node))

    def builtin_dict(self: FunctionCompiler, node: ast.Call) -> Any:
        """``dict(a=w, b=v)`` is the literal ``{"a": w, "b": v}``; ``dict(items, **kw)`` a new
        dict of a dict's items (of its type) or of (key, value) pairs, then the keywords."""
        if len(node.args) > 1:
            raise self.error(node, "dict() takes at most one positional argument")
        keys = [ast.copy_location(ast.Constant(kw.arg), kw) for kw in node.keywords]
        values = [kw.value for kw in node.keywords]
        if not node.args:
            return self.expr(ast.copy_location(ast.Dict(keys=keys, values=values), node))
        source = self.expr(self.iterable_as_list(node.args[0]))
        t = source.type
        pairs = isinstance(t, ListType) and isinstance(t.element, TupleType) and \
            len(t.element.elements) == 2
        if not isinstance(t, DictType) and not pairs:
            raise self.error(node.args[0], f"dict() of a {t} is not supported (pass a dict or a "
                             "list of (key, value) pairs)")
        declared = t if isinstance(t, DictType) else None
        made = self.dict_literal(ast.copy_location(ast.Dict([], []), node), [], declared)
        copy_, src, k, v = (self.new_flag(x) for x in ("dict", "items", "k", "v"))
        self.frame.set(copy_, made)
        self.frame.set(src, source)
        if declared is not None:  # d[k] reads: the form the differentiation follows
            self.emit_source(f"for {k} in {src}:\n    {copy_}[{k}] = {src}[{k}]\n", node)
        else:
            self.emit_source(f"for {k}, {v} in {src}:\n    {copy_}[{k}] = {v}\n", node)
        for key, value in zip(keys, values):
            self.set_dict_item(self.frame.find(copy_), key, self.expr(value), value)
        return self.frame.find(copy_)

    def iterable_as_list(self: FunctionCompiler, node: ast.expr) -> ast.expr:
        """What ``sum``, ``list`` and ``dict`` read from an iterable argument: a generator
        expression as the list comprehension of its items, ``range`` / ``zip`` / ``enumerate``
        as ``[x for x in ...]`` (they are values only as a loop's iterable); else ``node``."""
        if isinstance(node, ast.GeneratorExp):
            return ast.copy_location(ast.ListComp(elt=node.elt, generators=node.generators),
                                     node)
        if isinstance(node, ast.Call) and self.resolve_static(node.func) in (range, zip,
                                                                            enumerate):
            return _items_of(node)
        return node

    # -- comprehensions ---------------------------------------------------------------------------
    def visit_ListComp(self: FunctionCompiler, node: ast.ListComp) -> Any:
        """``[elt for x in it if cond]``: a new list, appended to by a loop."""
        tag, comp = self.renamed_comprehension(node, "comp")
        result = self.emit("prim::ListConstruct", [], [ListType(ANY)]).output
        self.frame.set(tag, result)
        append = ast.Expr(ast.Call(
            func=ast.Attribute(ast.Name(tag, ast.Load()), "append", ast.Load()),
            args=[comp.elt], keywords=[]))
        self.visit(_located(_loops(comp.generators, append, read_items=False), node))
        element = self.appended_type(result)
        if element is None:
            raise self.error(node, "the element type of this comprehension is unknown")
        # a comprehension makes a list like a literal does: later appends of another shape or dtype
        # are as legal as in Python (shape propagation specializes the items it can prove)
        result.type = ListType(erase_shape(element))
        return result

    def visit_DictComp(self: FunctionCompiler, node: ast.DictComp) -> Any:
        """``{k: v for x in it if cond}``: a new dict (typed by what is stored, as ``d = {}``
        is), stored into by a loop; ``d.items()`` of a named dict is read as ``d[k]``."""
        tag, comp = self.renamed_comprehension(node, "dcomp")
        store = ast.Subscript(ast.Name(tag, ast.Load()), comp.key, ast.Store())
        body = ast.Assign(targets=[store], value=comp.value)
        start = ast.Assign(targets=[ast.Name(tag, ast.Store())], value=ast.Dict([], []))
        self.visit(_located(start, node))
        self.visit(_located(_loops(comp.generators, body, read_items=True), node))
        return self.frame.find(tag)

    def renamed_comprehension(self: FunctionCompiler, node: Any, kind: str
                              ) -> tuple[str, Any]:
        """A fresh name for the comprehension's result, and a copy of ``node`` whose loop
        variables are renamed after it (they do not leak into the function)."""
        self.flag_counter += 1
        tag = f"${kind}{self.flag_counter}"
        renames: dict[str, str] = {}
        for gen in node.generators:
            if gen.is_async:
                raise self.unsupported(gen, "async comprehensions")
            for name in ast.walk(gen.target):
                if isinstance(name, ast.Name):
                    renames[name.id] = f"{tag}_{name.id}"
        return tag, _Renamer(renames).visit(copy.deepcopy(node))

    def appended_type(self: FunctionCompiler, lst: Any) -> Type | None:
        element: Type | None = None
        for use in lst.uses:
            if use.node.kind == "prim::ListAppend":
                t = use.node.inputs[1].type
                element = t if element is None else unify(element, t)
        return element


def _loops(generators: list[ast.comprehension], body: ast.stmt, read_items: bool) -> ast.stmt:
    """``body`` inside the comprehension's loops and conditions (``read_items``: ``for k, v in
    d.items()`` as ``for k in d: v = d[k]``, ``_keys_of_items``)."""
    for gen in reversed(generators):
        for cond in reversed(gen.ifs):
            body = ast.If(test=cond, body=[body], orelse=[])
        target, iterable, read = _keys_of_items(gen) if read_items else (gen.target, gen.iter, [])
        body = ast.For(target=target, iter=iterable, body=[*read, body], orelse=[])
    return body


def _located(stmt: ast.stmt, at: ast.AST) -> ast.stmt:
    """``stmt`` at ``at``'s position (its parts without one at their parent's)."""
    return ast.fix_missing_locations(ast.copy_location(stmt, at))


def _keys_of_items(gen: ast.comprehension) -> tuple[ast.expr, ast.expr, list[ast.stmt]]:
    """``for k, v in d.items()`` of a dict named ``d`` as ``for k in d: v = d[k]`` (the reads
    the differentiation follows); any other generator as it is: (target, iterable, the
    statements that start the body)."""
    it, target = gen.iter, gen.target
    if (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute)
            and it.func.attr == "items" and isinstance(it.func.value, ast.Name)
            and not it.args and not it.keywords and isinstance(target, ast.Tuple)
            and len(target.elts) == 2 and all(isinstance(e, ast.Name) for e in target.elts)):
        key, value = target.elts
        read = ast.Assign(targets=[value], value=ast.Subscript(
            ast.Name(it.func.value.id, ast.Load()), ast.Name(key.id, ast.Load()), ast.Load()))
        return key, it.func.value, [read]
    return target, it, []


def _items_of(node: ast.expr) -> ast.ListComp:
    """``[$item for $item in node]``."""
    item = "$item"
    return ast.copy_location(ast.ListComp(elt=ast.Name(item, ast.Load()), generators=[
        ast.comprehension(target=ast.Name(item, ast.Store()), iter=node, ifs=[], is_async=0)]),
        node)


class _Renamer(ast.NodeTransformer):
    """Rename a comprehension's loop variables (they are local to it)."""

    def __init__(self, renames: dict[str, str]):
        self.renames = renames

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.renames:
            node.id = self.renames[node.id]
        return node


def _a(noun: str) -> str:
    """``noun`` with its indefinite article (``an int``, ``a Tensor``)."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"
