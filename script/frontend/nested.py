"""Functions defined inside the compiled one: ``def step(h, x): ...`` in its body, or
``act = lambda z: np.tanh(z)``.

Such a function is compiled as a function of its own (per call site, for the types of the
call's arguments), and what it reads from the enclosing function (its free names: ``W`` in
``def step(h): return np.tanh(h @ W)``) becomes extra parameters (lambda lifting). Every call
``step(h)`` in the enclosing body is rewritten, before anything is compiled, to pass those
names too (``step(h, W=W)``), so a call reads them where it is written, as Python reads a
closure's variables when the function runs: an assignment to ``W`` between the ``def`` and
the call is seen, and the analyses that ask which names are read later (in-place writes,
loop-carried values) see the call read ``W``.

Names the nested function reads that name compile-time objects in the enclosing function
(an array module alias ``xp = np``, another nested function) are handed to its compiler as
they are. Not supported, with a ``ScriptError``: ``nonlocal`` (return the new value instead),
decorators, a nested function used other than by calling it (passed, returned, stored), a
name both defined by a ``def`` and assigned, recursion, and defaults that are not constants.
"""

from __future__ import annotations

import ast
import copy
import inspect
import symtable
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from script.errors import ScriptError, SourceInfo
from script.frontend.env import Static, describe_object, walk_same_function

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

FREE = "_rnnscript_free"
"""Set on the keywords the rewrite adds to a call (``W=W``): the enclosing function's values
of the nested function's free names."""


@dataclass(eq=False)
class LocalFunction:
    """A function defined in the body of the one being compiled (bound to its name as a
    ``Static``)."""

    name: str
    tree: ast.FunctionDef
    """the lifted definition: its own parameters, then one per free name."""
    frees: tuple[str, ...]
    shim: Any
    """stands for the function where the compiler asks a Python function (its globals and
    closure are the enclosing function's; its signature is the lifted one)."""
    defaults: dict[str, Any] = field(default_factory=dict)
    compiled: dict[Any, Any] = field(default_factory=dict)
    """(argument types, compile-time objects) -> its ``FunctionDef``."""
    compiling: bool = False

    def without(self, names: frozenset[str]) -> tuple[ast.FunctionDef, Shim]:
        """The definition and its shim without the parameters of the free ``names`` (they
        are compile-time objects of the enclosing function, bound in the callee's body)."""
        if not names:
            return self.tree, self.shim
        return without_params(self.shim.outer, self.tree, names, self.defaults, self.shim)


def without_params(outer: Any, tree: ast.FunctionDef, names: frozenset[str],
                   defaults: dict[str, Any], like: Shim | None = None
                   ) -> tuple[ast.FunctionDef, Shim]:
    """``tree`` without the parameters ``names`` (bound to compile-time objects in the body:
    a nested function's free names, the functions a call passes), and the shim the compiler
    reads it through (named as ``like``, or as ``outer`` itself)."""
    tree = copy.copy(tree)
    tree.args = copy.copy(tree.args)
    tree.args.args = [a for a in tree.args.args if a.arg not in names]
    kept = [(a, d) for a, d in zip(tree.args.kwonlyargs, tree.args.kw_defaults)
            if a.arg not in names]
    tree.args.kwonlyargs, tree.args.kw_defaults = [a for a, _ in kept], [d for _, d in kept]
    shim = Shim(outer, tree, defaults)
    if like is None:
        shim.__qualname__ = getattr(outer, "__qualname__", tree.name)
    return tree, shim


class Shim:
    """What the compiler reads of a Python function, for a nested one."""

    def __init__(self, outer: Any, tree: ast.FunctionDef, defaults: dict[str, Any]):
        self.outer = outer
        self.tree = tree
        """the function's tree, without the parameters bound to compile-time objects."""
        self.__name__ = tree.name
        self.__qualname__ = f"{getattr(outer, '__qualname__', '?')}.<locals>.{tree.name}"
        self.__module__ = getattr(outer, "__module__", None)
        self.__globals__ = getattr(outer, "__globals__", {})
        self.__code__ = getattr(outer, "__code__", None)
        self.__closure__ = getattr(outer, "__closure__", None)
        self.__annotations__ = {a.arg: ast.unparse(a.annotation)
                                for a in [*tree.args.args, tree.args.vararg]
                                if a is not None and a.annotation is not None}
        if tree.returns is not None:
            self.__annotations__["return"] = ast.unparse(tree.returns)
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        varargs = [tree.args.vararg] if tree.args.vararg is not None else []
        self.__signature__ = inspect.Signature([
            inspect.Parameter(a.arg, kind, default=defaults.get(a.arg, inspect.Parameter.empty))
            for a in [*tree.args.args, *varargs]],
            __validate_parameters__=False)  # free names (and *args) follow defaults

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self.__qualname__} is compiled with the function that defines it")


def lift(tree: ast.FunctionDef, source: SourceInfo, outer: Any,
         visible: dict[str, tuple[str, ...]]) -> tuple[ast.FunctionDef, list[LocalFunction]]:
    """``tree`` with its nested functions lifted: the definitions it holds (``LocalFunction``s,
    in source order, each bound where its ``def`` runs) and a copy of ``tree`` whose calls of
    them, and of the nested functions of enclosing functions in ``visible`` (name -> free
    names), pass their free names as keywords. ``tree`` itself when it has none."""
    if any(_table_lambdas(n) for n in walk_same_function(tree.body)):
        tree = copy.deepcopy(tree)
        _hoist_table_lambdas(tree)
    found = [n for n in walk_same_function(tree.body) if _is_definition(n)]
    if not found and not (visible and _calls(tree, visible)):
        return tree, []
    tree = copy.deepcopy(tree)
    defs: list[ast.FunctionDef] = []
    for node in walk_same_function(tree.body):
        if isinstance(node, ast.FunctionDef):
            defs.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_definition(node):
            defs.append(_as_def(node))
    _replace_lambda_assignments(tree)
    names = {d.name for d in defs}
    for node in walk_same_function(tree.body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in names:
            raise ScriptError.at(node, source, f"'{node.id}' is assigned here and also names "
                                 "a nested function: give one of them another name")
    frees = _free_names(tree, defs, source)
    by_name: dict[str, set[str]] = {name: set() for name in names}
    for d, f in zip(defs, frees):
        by_name[d.name] |= f
    known = {**{k: set(v) for k, v in visible.items()}, **by_name}
    changed = True
    while changed:  # a nested function calling another reads what that one reads
        changed = False
        for name, f in by_name.items():
            extra = set().union(*(known[g] for g in f if g in known and g != name)) - f - {name}
            if extra:
                f |= extra
                changed = True
    order = {name: tuple(sorted(f)) for name, f in {**known, **by_name}.items()}
    _rewrite_calls(tree.body, order)
    lifted = []
    for d in defs:
        _check_definition(d, source)
        defaults = _defaults(d, source)
        own = {a.arg for a in d.args.args}
        extra = [n for n in order[d.name] if n not in own]
        d.args.args = d.args.args + [ast.copy_location(ast.arg(arg=n), d) for n in extra]
        lifted.append(LocalFunction(d.name, d, tuple(extra), Shim(outer, d, defaults), defaults))
    return tree, lifted


def _is_definition(node: ast.AST) -> bool:
    if isinstance(node, ast.FunctionDef):
        return True
    if isinstance(node, ast.Assign):
        return (len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Lambda))
    return False


def _table_lambdas(node: ast.AST) -> list[tuple[Any, ast.Lambda]]:
    """``acts = {"sigmoid": lambda x: ..., "tanh": np.tanh}`` (Apache TVM's ``str2act``): the
    (key, lambda) pairs of a dict literal of constant keys assigned to a name."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Dict)):
        return []
    if not all(isinstance(k, ast.Constant) for k in node.value.keys):
        return []
    return [(k.value, v) for k, v in zip(node.value.keys, node.value.values)  # type: ignore[union-attr]
            if isinstance(v, ast.Lambda)]


def _hoist_table_lambdas(tree: ast.FunctionDef) -> None:
    """Each lambda of a dict literal of functions (``_table_lambdas``) as a nested function
    defined right before the assignment, the dict naming it: the table's items are then
    functions (``function_tables``)."""
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for node in list(ast.walk(tree)):
        for field_name, value in ast.iter_fields(node):
            if not isinstance(value, list) or not any(_table_lambdas(s) for s in value):
                continue
            body: list[Any] = []
            for stmt in value:
                for key, fn in _table_lambdas(stmt):
                    name = "_".join([stmt.targets[0].id, *"".join(  # type: ignore[attr-defined]
                        c if c.isalnum() else " " for c in str(key)).split()])
                    while name in taken:
                        name += "_"
                    taken.add(name)
                    assign = ast.copy_location(ast.Assign(
                        targets=[ast.copy_location(ast.Name(id=name, ctx=ast.Store()), fn)],
                        value=fn), fn)
                    assign.end_lineno, assign.end_col_offset = fn.end_lineno, fn.end_col_offset
                    body.append(_as_def(assign))
                    at = stmt.value.values.index(fn)  # type: ignore[attr-defined]
                    stmt.value.values[at] = ast.copy_location(  # type: ignore[attr-defined]
                        ast.Name(id=name, ctx=ast.Load()), fn)
                body.append(stmt)
            setattr(node, field_name, body)


def _calls(tree: ast.FunctionDef, visible: dict[str, tuple[str, ...]]) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in visible
               for n in walk_same_function(tree.body))


def _as_def(node: ast.Assign) -> ast.FunctionDef:
    """``act = lambda z: body`` as ``def act(z): return body``."""
    target = node.targets[0]
    assert isinstance(target, ast.Name) and isinstance(node.value, ast.Lambda)
    body = ast.copy_location(ast.Return(value=node.value.body), node.value.body)
    fdef = ast.FunctionDef(name=target.id, args=node.value.args, body=[body],
                           decorator_list=[], returns=None, type_comment=None)
    ast.copy_location(fdef, node)
    fdef.end_lineno, fdef.end_col_offset = node.end_lineno, node.end_col_offset
    node._rnnscript_def = fdef  # type: ignore[attr-defined]
    return fdef


def _replace_lambda_assignments(tree: ast.AST) -> None:
    """Put each ``_as_def`` definition in place of its assignment."""
    for node in ast.walk(tree):
        for name, value in ast.iter_fields(node):
            if isinstance(value, list):
                setattr(node, name, [getattr(v, "_rnnscript_def", v) for v in value])


def _free_names(tree: ast.FunctionDef, defs: list[ast.FunctionDef], source: SourceInfo
                ) -> list[set[str]]:
    """Each definition's free names (read from the enclosing function), by Python's own
    symbol tables of the (lambda-free) enclosing function."""
    text = ast.unparse(ast.Module(body=[tree], type_ignores=[]))
    try:
        table = symtable.symtable(text, "<nested>", "exec").get_children()[0]
    except (SyntaxError, IndexError) as exc:
        raise ScriptError.at(tree, source, f"cannot read the nested functions' names: {exc}"
                             ) from None
    children = [c for c in table.get_children() if c.get_type() == "function"
                and c.get_name() in {d.name for d in defs}]
    if len(children) != len(defs):
        raise ScriptError.at(defs[0], source, "cannot match the nested functions to their "
                             "definitions (name each nested function differently)")
    result = []
    for d, child in zip(defs, children):
        if child.get_name() != d.name:
            raise ScriptError.at(d, source, "cannot match the nested functions to their "
                                 "definitions (name each nested function differently)")
        result.append(set(child.get_frees()))
    return result


def _rewrite_calls(body: list[ast.stmt], frees: dict[str, tuple[str, ...]]) -> None:
    for node in walk_same_function(body):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in frees:
            have = {kw.arg for kw in node.keywords}
            for name in frees[node.func.id]:
                if name in have:
                    continue
                value = ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
                value.end_lineno, value.end_col_offset = node.end_lineno, node.end_col_offset
                kw = ast.copy_location(ast.keyword(arg=name, value=value), node)
                setattr(kw, FREE, True)
                node.keywords.append(kw)


def _check_definition(d: ast.FunctionDef, source: SourceInfo) -> None:
    if d.decorator_list:
        raise ScriptError.at(d.decorator_list[0], source, "decorators on a nested function are "
                             "not supported")
    for node in walk_same_function(d.body):
        if isinstance(node, ast.Nonlocal):
            raise ScriptError.at(node, source, "nonlocal is not supported: return the new "
                                 "value from the nested function and assign it where it is "
                                 "called")


def _defaults(d: ast.FunctionDef, source: SourceInfo) -> dict[str, Any]:
    args = d.args
    if args.kwarg or args.kwonlyargs or args.posonlyargs:
        where = args.kwarg or (args.kwonlyargs or args.posonlyargs)[0]
        raise ScriptError.at(where, source, "a nested function takes plain parameters and "
                             "*args only (no **kwargs, keyword-only or positional-only ones)")
    out = {}
    for a, default in zip(args.args[len(args.args) - len(args.defaults):], args.defaults):
        try:
            out[a.arg] = ast.literal_eval(default)
        except ValueError:
            raise ScriptError.at(default, source, "a nested function's default must be a "
                                 "constant (a number, string, None or tuple of them)") from None
    return out


class NestedMixin:
    """Nested functions in ``FunctionCompiler``: their definitions and calls."""

    def lift_nested(self: FunctionCompiler, tree: ast.FunctionDef) -> ast.FunctionDef:
        """``tree`` with its nested functions lifted (``lift``); keeps their definitions."""
        visible = {name: obj.frees for name, obj in self.presets.items()
                   if isinstance(obj, LocalFunction)}
        self.unlifted = tree
        lifted_tree, functions = lift(tree, self.source, self.fn, visible)
        self.local_functions = {id(f.tree): f for f in functions}
        return lifted_tree

    def visit_FunctionDef(self: FunctionCompiler, node: ast.FunctionDef) -> None:
        function = self.local_functions.get(id(node))
        if function is None:
            raise self.error(node, "nested function definitions are not supported here")
        self.frame.set(node.name, Static(function))

    def call_local_function(self: FunctionCompiler, function: LocalFunction, node: ast.Call
                            ) -> Any:
        """``step(h, x)``: the nested function compiled for the types of this call's arguments
        and of the enclosing values of its free names, and called with them."""
        if function.compiling:
            raise self.error(node, f"recursive calls are not supported: '{function.name}' "
                             "is already being compiled")
        own = [kw for kw in node.keywords if not getattr(kw, FREE, False)]
        args = [self.expr(a) for a in node.args]
        keywords = {kw.arg: self.expr(kw.value) for kw in own}
        presets: dict[str, Any] = {}
        for kw in node.keywords:
            if not getattr(kw, FREE, False):
                continue
            found = self.frame.find(kw.arg)
            if found is None and (self.owner is not None or self.self_type is not None) and \
                    kw.arg == self.unlifted.args.args[0].arg:
                raise self.error(node, f"'{function.name}' reads '{kw.arg}': a nested function "
                                 f"cannot read the module or object itself; read what it needs "
                                 f"before it (W = {kw.arg}.W) and use that")
            if found is None:
                raise self.error(node, f"'{function.name}' reads '{kw.arg}' of the enclosing "
                                 "function, which has no value where it is called here")
            if isinstance(found, Static):
                if not isinstance(found.obj, (LocalFunction, types.ModuleType)):
                    raise self.error(node, f"'{function.name}' reads '{kw.arg}', "
                                     f"{describe_object(found.obj)}: pass it as an argument")
                presets[kw.arg] = found.obj
                continue
            keywords[kw.arg] = self.expr(kw.value)
        params = [a.arg for a in function.tree.args.args]
        named = len(params) - len(function.frees)
        vararg = function.tree.args.vararg
        if vararg is not None:  # the arguments past the named ones are the tuple *args
            keywords[vararg.arg] = self.emit_value("prim::TupleConstruct", args[named:])
            args = args[:named]
        if len(args) > named:
            raise self.error(node, f"{function.name}() takes {named} arguments but "
                             f"{len(args)} were given")
        bound = {**dict(zip(params, args)), **keywords}
        annotated = function.shim.__annotations__
        override = {name: value.type for name, value in bound.items()
                    if name in params and name not in annotated}
        if vararg is not None:
            override[vararg.arg] = keywords[vararg.arg].type
        key = (tuple(sorted(override.items(), key=lambda item: item[0])),
               tuple(sorted((name, id(obj)) for name, obj in presets.items())))
        fdef = function.compiled.get(key)
        if fdef is None:
            function.compiling = True
            try:
                tree, shim = function.without(frozenset(presets))
                compiler = type(self)(shim, tree, self.source, presets=presets)
                compiler.arg_types_override = override
                compiler.enclosing_names = function.frees
                fdef = compiler.compile()
            finally:
                function.compiling = False
            function.compiled[key] = fdef
        return self.call_function(fdef, self.call_of_values(node, args, keywords))
