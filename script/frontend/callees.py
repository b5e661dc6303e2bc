"""Calls of Python functions and methods from scripted code (a ``FunctionCompiler`` mixin):
each callee is compiled to a ``FunctionDef`` (per set of argument types where the call gives
its unannotated parameters theirs, or packs its ``*args``) and called as ``prim::CallFunction``
with the arguments bound to its parameters, defaults filled in."""

from __future__ import annotations

import ast
import inspect
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ir.constants import constant_type
from ir.registry import NOT_CONSTANT, constant_of
from ir.types import BOOL, FLOAT, INT, NONE, TENSOR, OptionalType, TensorType, Type, is_subtype
from script.errors import ScriptError
from script.frontend.annotations import (
    AnnotationError,
    declared,
    function_namespace,
    type_from_annotation,
)
from script.frontend.definition import load_source
from script.frontend.env import is_function_value
from script.frontend.exprs import constant_value
from script.frontend.nested import without_params

if TYPE_CHECKING:
    from ir.core import Value
    from script.frontend.compiler import FunctionCompiler
    from script.frontend.definition import FunctionDef


class CalleeMixin:
    """Calls of Python functions, methods and scripted functions."""

    # -- scripted and plain Python functions -------------------------------------------------------
    def call_python_function(self: FunctionCompiler, fn: Any, node: ast.Call) -> Any:
        if fn.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
            return self.call_with_varargs(fn, node)
        functions = self.function_arguments(fn, node)
        if functions and not all(is_function_value(v) for v in functions.values()) and \
                self.object_arguments(fn, node):  # (constants: not beside plain objects)
            functions = {k: v for k, v in functions.items() if is_function_value(v)}
        if functions:
            return self.call_with_functions(fn, node, functions)
        objects = self.object_arguments(fn, node)
        if not objects:
            node, override = self.typed_by_the_call(fn, node)
            return self.call_function(self.compile_callee(fn, node, override=override), node)
        node, override = self.typed_by_the_call(fn, node, frozenset(objects))
        fdef = self.compile_callee(fn, node, *self.callee_examples(objects), override=override)
        return self.call_function(fdef, node, objects=objects)

    def function_arguments(self: FunctionCompiler, fn: Any, node: ast.Call) -> dict[str, Any]:
        """The functions a call passes (``rk4(f, x, dt)``, ``layer(x, act=np.tanh)``) or leaves
        at a function default (``def layer(x, act=sigmoid)``), by parameter name: names of a
        function, a numpy or ``script.ops`` function, or a scripted one."""
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            return {}
        plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        if any(p.kind not in plain for p in params):
            return {}
        given = list(zip([p.name for p in params], node.args)) + [
            (kw.arg, kw.value) for kw in node.keywords]
        annotations = {p.name: p.annotation for p in params}
        fixed = _never_rebound(fn)
        found = {}
        for name, arg in given:
            if isinstance(arg, (ast.Name, ast.Attribute)):
                obj = self.resolve_static(arg)
                if is_function_value(obj):
                    found[name] = obj
            elif name in fixed and self.deciding_constant(
                    arg, annotations.get(name, inspect.Parameter.empty)):
                found[name] = constant_of(self.expr(arg))
        passed = {name for name, _ in given}
        found.update({p.name: p.default for p in params
                      if p.name not in passed and is_function_value(p.default)})
        return found

    def deciding_constant(self: FunctionCompiler, arg: ast.expr, annotation: Any) -> bool:
        """Whether ``arg`` is a bool or str known when compiling, computed without calls
        (``False``, ``"lstm"``, ``self.num_directions == 2`` of an int attribute compiled in):
        the callee compiles for it, so the branches it decides are compiled alone (Paddle's
        ``split_states(states, bidirectional)`` returns a list of arrays on one, of pairs on
        the other); for a parameter without an annotation, or annotated with its type."""
        kinds = tuple(t for t in (bool, str) if annotation in (
            inspect.Parameter.empty, t, t.__name__))
        if isinstance(arg, ast.Constant):
            return type(arg.value) in kinds
        if not isinstance(arg, (ast.Compare, ast.UnaryOp, ast.BoolOp)) or any(
                isinstance(n, (ast.Call, ast.NamedExpr, ast.Lambda, ast.Subscript))
                for n in ast.walk(arg)):
            return False
        try:
            value = self.expr(arg)
        except ScriptError:
            return False
        return type(constant_of(value)) in kinds

    def call_with_functions(self: FunctionCompiler, fn: Any, node: ast.Call,
                            functions: dict[str, Any]) -> Any:
        """``fn`` compiled with the parameters ``functions`` names bound to those functions
        (once per set of them and of argument types), and called with its other arguments,
        by name: a function passed is called where ``fn`` calls it, as a global would be."""
        sig = inspect.signature(fn)
        try:  # Python's own binding: its TypeError for a call it would refuse
            bound = sig.bind(*node.args, **{kw.arg: kw.value for kw in node.keywords})
        except TypeError as exc:
            raise self.error(node, f"{fn.__qualname__}(): {exc}") from None
        kept = ast.copy_location(ast.Call(func=node.func, args=[], keywords=[
            ast.copy_location(ast.keyword(arg=name, value=value), value)
            for name, value in bound.arguments.items() if name not in functions]), node)
        tree, source = load_source(fn)
        tree, shim = without_params(fn, tree, frozenset(functions), {
            p.name: p.default for p in sig.parameters.values()
            if p.default is not inspect.Parameter.empty and p.name not in functions})
        kept, override = self.typed_by_the_call(shim, kept)
        fdef = self.compile_bound_callee(fn, shim, tree, source, functions, override or {},
                                         node)
        return self.call_function(fdef, kept)

    def typed_by_the_call(self: FunctionCompiler, fn: Any, node: ast.Call,
                          objects: frozenset[str] = frozenset()
                          ) -> tuple[ast.Call, dict[str, Type] | None]:
        """The types the call gives the unannotated parameters of ``fn`` (without a default, or
        with ``None``) that it passes other than an array (``def affine(x, W, b, scale)``
        called with ``0.5``, ``def layer(params, x)`` with a dict, ``def lse(a, axis=None)``
        with ``axis=1``): a number, string, list, dict or tuple is typed as passed (Optional
        where the default is None; such a parameter is otherwise an array), one left at its
        default None is None, and ``fn`` is compiled for those types. The arguments are
        computed once, in order: the call returned names them (not those of the parameters
        ``objects`` names, plain objects, left as written)."""
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return node, None
        annotations = declared(fn)
        plain = inspect.Parameter.POSITIONAL_OR_KEYWORD
        params = list(sig.parameters.values())
        open_names = {p.name for p in params if p.kind == plain and p.name not in annotations
                      and p.default in (inspect.Parameter.empty, None)
                      and p.name not in objects}  # other defaults type
        # a number default types the parameter unless the call passes another type: filterpy's
        # `predict(x, P, F=1, Q=0)` called with arrays for F and Q
        numbers = {p.name for p in params if p.kind == plain and p.name not in annotations
                   and type(p.default) in (int, float, bool)}
        open_names |= numbers
        optionals = _optional_annotations(fn, params, annotations)
        if not (open_names or optionals) or any(
                not isinstance(a, ast.expr) or type(a).__name__ == "SpreadList"
                for a in node.args):
            return node, None
        bound = [p.name for p in params[:len(node.args)]] + [kw.arg for kw in node.keywords]
        if not (open_names or optionals) or len(node.args) > len(params) or any(
                p.kind != plain for p in params[:len(node.args)]):
            return node, None
        static = {p.name for p in params if isinstance(p.default, ModuleType)} | objects
        values = [a if name in static else self.expr(a) for name, a in zip(bound, node.args)]
        keywords = {kw.arg: kw.value if kw.arg in static else self.expr(kw.value)
                    for kw in node.keywords}
        defaults = {p.name: p.default for p in params}
        override = {name: value.type for name, value in [*zip(bound, values), *keywords.items()]
                    if name in open_names - numbers and value.type != NONE and (
                        not _holds_array(value.type) or isinstance(value.type, OptionalType))}
        passed = [*zip(bound, values), *keywords.items()]
        fixed = _never_rebound(fn)  # (narrowed where the function never assigns None to it)
        override |= {name: TENSOR for name, value in passed
                     if name in open_names and name in fixed and defaults[name] is None
                     and isinstance(value.type, TensorType)}  # an array for `w=None`: an array
        override |= {name: NONE for name, value in passed  # helper(x, None) of `def helper(x, w)`
                     if name in open_names - numbers and value.type == NONE
                     and defaults[name] is inspect.Parameter.empty}
        override |= {name: optionals[name].element for name, value in passed  # type: ignore
                     if name in optionals and name in fixed and not isinstance(value, ast.AST)
                     and value.type != NONE and not isinstance(value.type, OptionalType)
                     and is_subtype(value.type, optionals[name].element)}  # type: ignore
        # (an Optional[int] passed on stays one, an optional array one too; a tuple passed for
        # `state=None` is a tuple: `if state is None` and `isinstance(state, tuple)` fold)
        for name, value in [*zip(bound, values), *keywords.items()]:
            if name in numbers and not isinstance(value, ast.AST) and not is_subtype(
                    value.type, constant_type(defaults[name])):
                override[name] = TENSOR if isinstance(value.type, TensorType) else value.type
        for name in open_names - set(bound):  # left at its default None: None here
            if defaults[name] is None:
                override[name] = NONE
        return self.call_of_values(node, values, keywords), override or None

    def call_with_varargs(self: FunctionCompiler, fn: Any, node: ast.Call,
                          receiver: dict[str, Any] | None = None) -> Any:
        """``f(w, a, b, scale=2.0)`` of ``def f(weights, *args, **kwargs)``: the arguments
        past the named ones are the tuple ``args``, the keyword arguments no parameter takes
        the record ``kwargs`` (``keywords``), and ``f`` is compiled for their types (and
        names). ``receiver``: for a method of a plain object argument, its ``self`` (parameter
        name -> the ``ObjectArg``)."""
        code = fn.__code__
        named = code.co_argcount - (1 if receiver else 0)
        packed = code.co_varnames[code.co_argcount + code.co_kwonlyargcount:]
        vararg = packed[0] if code.co_flags & inspect.CO_VARARGS else None
        kwarg = packed[1 if vararg else 0] if code.co_flags & inspect.CO_VARKEYWORDS else None
        star = f"*{vararg}" if vararg else f"**{kwarg}"
        if receiver is None and self.object_arguments(fn, node):
            raise self.unsupported(node, f"calling {fn.__qualname__}(), which takes {star}, "
                                   "with plain objects")
        args = [self.expr(a) for a in node.args]
        keywords = {kw.arg: self.expr(kw.value) for kw in node.keywords}
        for name in (vararg, kwarg):
            if name is not None and name in keywords:
                raise self.error(node, f"{fn.__qualname__}() got an unexpected keyword "
                                 f"argument '{name}'")
        override: dict[str, Type] = {}
        if vararg is not None:
            self.check_packed(fn, f"*{vararg}", node.args[named:], args[named:])
            keywords[vararg] = self.emit_value("prim::TupleConstruct", args[named:])
            override[vararg] = keywords[vararg].type
            args = args[:named]
        names = None
        if kwarg is not None:
            params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
            extra = {k: v for k, v in keywords.items() if k not in params and k != vararg}
            self.check_packed(fn, f"**{kwarg}", [node for kw in node.keywords if kw.arg in extra
                                          for node in [kw.value]], list(extra.values()))
            for k in extra:
                del keywords[k]
            keywords[kwarg] = self.emit_value("prim::TupleConstruct", list(extra.values()))
            override[kwarg] = keywords[kwarg].type
            names = tuple(extra)
        override |= self.types_of_open_parameters(fn, args, keywords, receiver is not None)
        call = self.call_of_values(node, args, keywords)
        if receiver:
            examples, demoted = self.callee_examples(receiver)
            fdef = self.compile_callee(fn, node, examples, demoted, override, names)
            return self.call_function(fdef, call, bound=(self.const(None),), objects=receiver)
        return self.call_function(self.compile_callee(fn, node, override=override,
                                                      keyword_names=names), call)

    def types_of_open_parameters(self: FunctionCompiler, fn: Any, args: list[Any],
                                 keywords: dict[str, Any], method: bool) -> dict[str, Type]:
        """``typed_by_the_call``'s types for the named parameters of a function that also
        takes ``*args`` / ``**kwargs``, from the call's values ``args`` (after ``self`` for a
        ``method``) and ``keywords``: an unannotated parameter passed a dict, list, number or
        tuple is typed as passed (it would otherwise be an array)."""
        annotations = declared(fn)
        plain = [p for p in inspect.signature(fn).parameters.values()
                 if p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD][1 if method else 0:]
        given = dict(zip((p.name for p in plain), args)) | {
            k: v for k, v in keywords.items() if any(p.name == k for p in plain)}
        found: dict[str, Type] = {}
        for p in plain:
            if p.name in annotations or p.default not in (inspect.Parameter.empty, None):
                continue
            value = given.get(p.name)
            if value is None:
                if p.default is None:
                    found[p.name] = NONE  # left at its default None
            elif not _holds_array(value.type) and value.type != NONE:
                t = value.type
                found[p.name] = t if isinstance(t, OptionalType) or p.default is not None \
                    else OptionalType(t)
        return found

    def check_packed(self: FunctionCompiler, fn: Any, name: str, nodes: list[ast.expr],
                     values: list[Any]) -> None:
        """Each argument packed into ``name`` (``*args`` / ``**kwargs``) fits its
        annotation."""
        annotation = getattr(fn, "__annotations__", {}).get(name.lstrip("*"))
        try:
            each = None if annotation is None else type_from_annotation(
                annotation, function_namespace(fn))
        except AnnotationError:
            each = None  # the callee's compilation reports it at its line
        for arg, value in zip(nodes, values):
            if each is not None and not is_subtype(value.type, each):
                raise self.error(arg, f"{fn.__qualname__}() takes {name} of {each}, not "
                                 f"{value.type}")

    def call_function(self: FunctionCompiler, fdef: FunctionDef, node: ast.Call,
                      bound: tuple[Any, ...] = (), objects: dict[str, Any] | None = None
                      ) -> Any:
        """Call a compiled function; ``bound`` are values for its first parameters (a script
        class's ``self``); ``objects`` the object arguments (``ObjectArg``s) passed for its
        parameters annotated with a plain class. A module method's attribute inputs are passed
        along."""
        objects = objects or {}
        params = fdef.arg_names
        shown = fdef.positional_names()[len(bound):]
        node = self.fill_list_spread(fdef.name, node, shown, fdef.defaults)
        if len(node.args) > len(shown):
            raise self.error(node, f"{fdef.name}() takes {len(shown)} arguments but "
                             f"{len(node.args)} were given")
        values: dict[str, Any] = dict(zip(params, bound))
        for name, arg in zip(shown, node.args):
            if name in objects:
                values[name] = self.const(None)
            elif not self.static_argument(fdef, name, arg):
                values[name] = self.expr(arg)
        for kw in node.keywords:
            if self.static_argument(fdef, kw.arg, kw.value):
                continue
            if kw.arg in objects:
                values[kw.arg] = self.const(None)
                continue
            if kw.arg not in params:
                raise self.error(kw, f"{fdef.name}() got an unexpected keyword argument "
                                 f"'{kw.arg}'")
            if kw.arg in values:
                raise self.error(kw, f"{fdef.name}() got multiple values for argument "
                                 f"'{kw.arg}'")
            values[kw.arg] = self.expr(kw.value)
        inputs = []
        for name, t in zip(params, fdef.arg_types):
            value = values.get(name)
            if value is None:
                value = self.default_argument(fdef, name, node)
            if t == FLOAT and value.type in (INT, BOOL):  # as an argument of the function
                value = self.emit_value("prim::Float", [value])  # called itself takes it
            if not is_subtype(value.type, t):
                error = self.error(node, f"{fdef.name}() argument '{name}' must be {t}, "
                                   f"not {value.type}")
                if not isinstance(value.type, OptionalType) or not (
                        is_subtype(NONE, t) or is_subtype(value.type.element, t)):
                    raise error
                value = self.optional_or_refused(value, error, t if is_subtype(NONE, t)
                                                 else None)
            inputs.append(value)
        inputs += [self.callee_input(fdef, ref, objects) for ref in fdef.attr_refs]
        for key, guard in fdef.guards.items():
            self.guard_global(key, guard.read, guard.expected)
        self.forget_fields()  # the callee may assign the fields of any object it reaches
        call = self.emit("prim::CallFunction", inputs, [fdef.return_type],
                         {"Subgraph": fdef.graph.clone(), "name": fdef.name})
        if fdef.attr_stores:
            self.callee_stored(fdef, objects)
        self.note_callee_writes(call, fdef)
        if fdef.array_results:
            self.array_items[call.output] = fdef.array_results
        return call.output

    def optional_or_refused(self: FunctionCompiler, value: Value, error: ScriptError,
                            none_as: Type | None = None) -> Value:
        """An Optional value where a callee or an op takes another type: with ``none_as``
        (a callee taking None, as another Optional type: ``self.rnn.forward(X, state)`` with
        ``state=None`` an unannotated optional array, for a state the callee takes as a tuple)
        None where it is None and ``error`` where it holds a value; without, the value where
        it holds one and ``error`` where it is None (``np.where(m, y, state)`` of a state that
        starts as an Optional argument). A specialization that keeps the refused path raises
        ``error`` when it compiles; one that knows which it is keeps the other path alone."""
        test = self.emit_value("prim::IsNone", [value])
        if none_as is not None:
            test = self.negate(test)
        if_node = self.emit("prim::If", [test], [], nblocks=2)
        t = none_as or value.type.element  # type: ignore[attr-defined]
        refused = self.defer_branch(if_node.blocks[0], error, t)
        _, kept = self.emit_in_block(if_node.blocks[1], lambda: self.const(None) if none_as
                                     else self.emit_value("prim::unchecked_unwrap_optional",
                                                          [value]))
        for block, v in zip(if_node.blocks, (refused, kept)):
            block.add_return(self.coerce(v, t, block))
        return if_node.add_output(t)

    def static_argument(self: FunctionCompiler, fdef: FunctionDef, name: str | None,
                        arg: ast.expr) -> bool:
        """True for an argument of a parameter with a module default (``xp=np``): it must be a
        module too, and is read at compile time (the ops do not depend on which one)."""
        if name not in fdef.static_args:
            return False
        if not isinstance(self.resolve_static(arg), ModuleType):
            raise self.error(arg, f"{fdef.name}() argument '{name}' must be an array module "
                             "(numpy or cupy), as its default is")
        return True

    def default_argument(self: FunctionCompiler, fdef: FunctionDef, name: str,
                         node: ast.Call) -> Any:
        if name not in fdef.defaults:
            raise self.error(node, f"{fdef.name}() missing required argument '{name}'")
        value = constant_value(fdef.defaults[name])
        if value is NOT_CONSTANT:
            raise self.error(node, f"the default of '{name}' in {fdef.name}() cannot be a "
                             "constant")
        return self.const(value)

    def call_of_values(self: FunctionCompiler, node: ast.Call, args: list[Any],
                       keywords: dict[str, Any]) -> ast.Call:
        """A call like ``node`` whose arguments are names of the values already computed (or
        the expressions, where ``args`` / ``keywords`` hold them)."""

        def name_of(value: Any) -> ast.expr:
            if isinstance(value, ast.expr):  # left to the call (an array module argument)
                return value
            flag = self.new_flag("arg")
            self.frame.set(flag, value)
            return ast.copy_location(ast.Name(id=flag, ctx=ast.Load()), node)

        call = ast.Call(func=node.func, args=[name_of(v) for v in args],
                        keywords=[ast.copy_location(ast.keyword(arg=k, value=name_of(v)), node)
                                  for k, v in keywords.items()])
        return ast.copy_location(call, node)


def _optional_annotations(fn: Any, params: list[Any], annotations: dict[str, Any]
                          ) -> dict[str, OptionalType]:
    """The parameters annotated ``Optional[...]`` (their types): a call passing a value that is
    not None compiles the function for that value's type (a callee then reads ``w.T`` of the
    array a call site passes)."""
    found = {}
    for p in params:
        if p.name not in annotations or p.kind != inspect.Parameter.POSITIONAL_OR_KEYWORD:
            continue
        try:
            t = type_from_annotation(annotations[p.name], function_namespace(fn))
        except AnnotationError:
            continue
        if isinstance(t, OptionalType):
            found[p.name] = t
    return found


def _never_rebound(fn: Any) -> set[str]:
    """The parameters of ``fn`` its body never assigns and no nested function or lambda
    reads: a constant passed for one stands for it everywhere (``deciding_constant``)."""
    tree = getattr(fn, "tree", None)  # (a shim: the tree it reads, without bound params)
    if not isinstance(tree, ast.FunctionDef):
        try:
            tree, _ = load_source(fn)
        except ScriptError:
            return set()
    params = {a.arg for a in tree.args.posonlyargs + tree.args.args + tree.args.kwonlyargs}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            params.discard(node.id)
        elif isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node is not tree:
            params -= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return params


def _holds_array(t: Type) -> bool:
    """An array or an Optional array: such a parameter keeps its declared (array) type."""
    return isinstance(t.element if isinstance(t, OptionalType) else t, TensorType)
