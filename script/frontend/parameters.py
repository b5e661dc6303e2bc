"""The parameters of a function being compiled (a ``FunctionCompiler`` mixin): their names,
types (annotations, type comments, defaults, the types a call gives a called function's
unannotated ones, a ``*args`` tuple) and defaults, and annotations resolved to types."""

from __future__ import annotations

import ast
import inspect
from types import ModuleType
from typing import Any

from ir.types import (
    FLOAT,
    INT,
    NONE,
    TENSOR,
    AnyType,
    DictType,
    ListType,
    OptionalType,
    Type,
    is_subtype,
)
from script.frontend.annotations import (
    AnnotationError,
    bare_container,
    declared,
    evaluate_annotation,
    type_from_annotation,
)
from script.frontend.env import is_function_value
from script.frontend.signature import dtype_name

_NO_DEFAULT = object()


class ParameterMixin:
    """Parameters and annotations of ``FunctionCompiler``."""

    # -- parameters -----------------------------------------------------------------------------
    def parameters(self) -> tuple[list[str], list[Type], dict[str, object]]:
        args = self.tree.args
        override = getattr(self, "arg_types_override", None) or {}
        if args.vararg is not None and args.vararg.arg not in override:
            raise self.error(args.vararg, "*args is not supported in the function scripted "
                             "itself (a function it calls may take *args); take a tuple or "
                             "list instead")
        if args.kwonlyargs:
            raise self.error(args.kwonlyargs[0], "keyword-only arguments are not supported")
        if args.kwarg is not None and self.keyword_names is None:
            raise self.error(args.kwarg, "**kwargs is not supported in the function scripted "
                             "itself (a function it calls may take **kwargs); take the "
                             "arguments by name")
        params = args.posonlyargs + args.args
        if self.owner is not None or self.self_type is not None:
            params = self.bind_self(params)
        if args.vararg is not None:
            self.check_varargs(args.vararg, override[args.vararg.arg])
            params = params + [args.vararg]  # the tuple of the call's further arguments
        if args.kwarg is not None:
            self.check_varargs(args.kwarg, override[args.kwarg.arg])
            params = params + [args.kwarg]  # the tuple of its extra keyword arguments' values
        names = [a.arg for a in params]
        defaults = {p: v.default for p, v in inspect.signature(self.fn).parameters.items()
                    if v.default is not inspect.Parameter.empty}
        # dtype=np.float64: the parameter holds a dtype's name, as np.zeros and .astype take it
        self.dtype_params = [p for p, v in defaults.items() if dtype_name(v) is not None]
        defaults |= {p: dtype_name(defaults[p]) for p in self.dtype_params}
        self.check_dtype_uses(self.dtype_params)
        types = self.comment_types(params)
        if types is None:
            annotations = getattr(self.fn, "__annotations__", {})
            if "return" in annotations and not bare_container(annotations["return"],
                                                              self.namespace):
                self.return_type = self.resolve_annotation(annotations["return"],
                                                           self.tree.returns or self.tree)
            types = [self.parameter_type(a, defaults) for a in params]
        if self.self_type is not None:
            types[0] = self.self_type
        override = getattr(self, "arg_types_override", None) or {}
        types = [override.get(n, t) for n, t in zip(names, types)]
        self.return_type = override.get("return", self.return_type)
        for name, t in zip(names, types):
            if name in override and (defaults.get(name) is None
                                     or type(defaults.get(name)) in (int, float, bool)):
                continue  # a default a call passes another type for: not used here
            if name in defaults and not isinstance(defaults[name], ModuleType) and \
                    not is_function_value(defaults[name]):  # both compile-time objects
                self.check_default(params[names.index(name)], t, defaults[name])
        return names, types, defaults

    def unannotated_name(self: Any, name: str) -> bool:
        """Is ``name`` a parameter without an annotation?"""
        names = {a.arg for a in self.tree.args.posonlyargs + self.tree.args.args}
        return name in names and name not in declared(self.fn) and \
            not self.tree.type_comment

    def unannotated_parameter(self: Any, value: Any) -> bool:
        """Is ``value`` the input of a parameter without an annotation?"""
        return value in self.graph.inputs and self.unannotated_name(value.name)

    def parameter_hint(self: Any, name: str, a: Any, b: Any) -> str:
        """For a parameter without an annotation (an array, or None for ``=None``) that a
        branch makes a container: the annotation to write."""
        kinds = [v.type for v in (a, b) if isinstance(v.type, (ListType, DictType))]
        if not kinds or not self.unannotated_name(name):
            return ""
        example = "List[Tensor]" if isinstance(kinds[0], ListType) else "Dict[str, float]"
        return (f"; the parameter '{name}' has no annotation, so it is taken as an array: "
                f"annotate the container it holds, e.g. {name}: Optional[{example}] = None")

    def check_dtype_uses(self, names: list[str]) -> None:
        """A dtype parameter is read only where a dtype is taken (``dtype=d``, ``.astype(d)``,
        ``np.dtype(d)``): it holds the dtype's name, which equals ``np.dtype(d)`` but not a
        scalar type (``np.float32 == "float32"`` is False in Python)."""
        if not names:
            return
        allowed: set[int] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.keyword) and node.arg == "dtype":
                allowed.add(id(node.value))
            if isinstance(node, ast.Call) and len(node.args) == 1 and (
                    isinstance(node.func, ast.Attribute) and node.func.attr in ("astype", "dtype")):
                allowed.add(id(node.args[0]))
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id in names and id(node) not in allowed:
                raise self.error(node, f"'{node.id}' holds a dtype (its default is one): it is "
                                 f"taken as dtype={node.id}, .astype({node.id}) or "
                                 f"np.dtype({node.id}) (compare np.dtype({node.id}) == ...); "
                                 "other uses are not supported")

    def check_varargs(self, vararg: ast.arg, t: Type) -> None:
        """Each argument ``*args`` takes must fit its annotation (``*args: Tensor``)."""
        annotation = getattr(self.fn, "__annotations__", {}).get(vararg.arg)
        if annotation is None:
            return
        each = self.resolve_annotation(annotation, vararg.annotation or vararg)
        for k, item in enumerate(getattr(t, "elements", ())):
            if not is_subtype(item, each):
                raise self.error(vararg, f"*{vararg.arg} takes {each} arguments, and argument "
                                 f"{k} of it is {item}")

    def comment_types(self, params: list[ast.arg]) -> list[Type] | None:
        comment = self.tree.type_comment
        if not comment:
            return None
        try:
            sig = ast.parse(comment, mode="func_type")
        except SyntaxError:
            raise self.error(self.tree, f"cannot parse the type comment '{comment}'") from None
        if self.self_type is not None:  # a type comment leaves out `self`
            sig.argtypes.insert(0, ast.Constant(value="Tensor"))
        if len(sig.argtypes) != len(params):
            raise self.error(self.tree, f"the type comment gives {len(sig.argtypes)} argument "
                             f"types for {len(params)} parameters")
        types = [self.resolve_annotation(ast.unparse(t), self.tree) for t in sig.argtypes]
        self.return_type = self.resolve_annotation(ast.unparse(sig.returns), self.tree)
        return types

    def parameter_type(self, arg: ast.arg, defaults: dict[str, object]) -> Type:
        annotations = declared(self.fn)
        if arg.arg in getattr(self, "objects", {}):
            return NONE  # a plain object: its attributes are inputs (object_args)
        default = defaults.get(arg.arg, _NO_DEFAULT)
        if arg.arg in annotations:
            t = self.resolve_annotation(annotations[arg.arg], arg.annotation or arg)
            if default is None and t != NONE and not isinstance(t, (OptionalType, AnyType)):
                return OptionalType(t)  # `b: np.array = None`: PEP 484's implicit Optional
            return t
        if default is None:
            return OptionalType(TENSOR)  # `h=None`: an optional array
        if isinstance(default, (bool, int, float, str, tuple)):
            from ir.constants import constant_type
            return constant_type(default)
        return TENSOR

    def check_default(self, arg: ast.arg, t: Type, default: object) -> None:
        from ir.constants import constant_type
        try:
            dt = constant_type(default)
        except TypeError:
            raise self.error(arg, f"the default value of '{arg.arg}' is a "
                             f"{type(default).__name__}, which cannot be a constant") from None
        if not is_subtype(dt, t) and not (dt == NONE and t == TENSOR) and not (
                dt == INT and t == FLOAT):  # `u: float = 0`: an int where a float is declared
            raise self.error(arg, f"the default value of '{arg.arg}' has type {dt}, but the "
                             f"parameter is declared as {t}")

    def resolve_annotation(self, annotation: Any, node: ast.AST) -> Type:
        try:
            return type_from_annotation(annotation, self.namespace)
        except AnnotationError as exc:
            raise self.error(node, str(exc)) from None

    def annotation_type(self, node: ast.expr) -> Type:
        """The type an annotation expression in the body (``x: List[int] = []``) denotes."""
        try:
            value = evaluate_annotation(ast.unparse(node), self.namespace)
            return type_from_annotation(value, self.namespace)
        except AnnotationError as exc:
            raise self.error(node, str(exc)) from None
