"""Python type annotations -> IR types.

Annotations arrive as objects (``int``, ``Tuple[Tensor, Tensor]``, ``np.ndarray``), as strings
(``from __future__ import annotations``) or as ``# type: (Tensor, int) -> Tensor`` comments. String
forms are evaluated against the function's globals with the ``typing`` names available, so a
module that only imports ``Tensor`` still resolves ``"Tuple[Tensor, Tensor]"``.
"""

from __future__ import annotations

import builtins
import enum
import sys
import types
import typing
from typing import Any

import numpy as np

from ir.types import (
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    TENSOR,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TupleType,
    Type,
)
from script.errors import ScriptError
from script.frontend import classes


class AnnotationError(Exception):
    """An annotation the language has no type for; the caller attaches the source position."""


_SCALARS: dict[Any, Type] = {int: INT, float: FLOAT, bool: BOOL, str: STR,
                             None: NONE, type(None): NONE}
_TYPING_NAMES: dict[str, Any] = {
    "Tuple": typing.Tuple, "List": typing.List, "Dict": typing.Dict,  # noqa: UP006
    "Optional": typing.Optional, "Union": typing.Union, "Any": typing.Any,
}


def is_tensor_annotation(obj: Any) -> bool:
    """``script.Tensor`` (recognised by name to avoid an import cycle), ``"Tensor"``,
    ``np.ndarray``, or ``np.array`` (the function, which code annotates arrays with too:
    Apache TVM's ``lstm_python(Xs: np.array, ...)``)."""
    if obj == "Tensor" or obj is np.ndarray or obj is np.array:
        return True
    name = getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None) or ""
    return name == "Tensor" and module.startswith("script")


def function_namespace(fn: Any) -> dict[str, Any]:
    """The names a function body can see: builtins, then globals, then its closure."""
    scope: dict[str, Any] = dict(vars(builtins))
    scope.update(getattr(fn, "__globals__", {}))
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    for name, cell in zip(code.co_freevars if code else (), cells):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell: a closure variable assigned later
            continue
    return scope


def evaluate_annotation(text: str, namespace: dict[str, Any]) -> Any:
    """Evaluate a string annotation against ``namespace`` (globals and closure), with the
    typing names and ``Tensor`` available as fallbacks."""
    scope = dict(_TYPING_NAMES)
    scope["Tensor"] = "Tensor"
    scope.update(namespace)
    try:
        return eval(text, {"__builtins__": builtins}, scope)  # noqa: S307
    except Exception as exc:  # a NameError or SyntaxError inside the user's annotation
        raise AnnotationError(f"cannot resolve the annotation {text!r}: {exc}") from None


BARE_CONTAINERS = (tuple, list, dict, typing.Tuple, typing.List, typing.Dict)
"""Return annotations that name a container without its items (``-> tuple``): the result's
type is inferred from the code, as without an annotation (Python does not check either)."""


def bare_container(annotation: Any, namespace: dict[str, Any]) -> bool:
    """Whether ``annotation`` (an object or its string) is one of ``BARE_CONTAINERS``."""
    if isinstance(annotation, str):
        try:
            annotation = evaluate_annotation(annotation, namespace)
        except AnnotationError:
            return False
    return any(annotation is c for c in BARE_CONTAINERS)


def declared(fn: Any) -> dict[str, Any]:
    """``fn``'s annotations, but for a parameter annotated with a bare container (``p: dict``,
    ``xs: list``), which is typed by the call as an unannotated one is: Python checks neither,
    and the container's items are the call's."""
    annotations = getattr(fn, "__annotations__", None) or {}
    if not any(_maybe_bare(a) for a in annotations.values()):
        return annotations
    namespace = getattr(fn, "__globals__", {})
    return {name: a for name, a in annotations.items()
            if name == "return" or not bare_container(a, namespace)}


def _maybe_bare(annotation: Any) -> bool:
    return isinstance(annotation, str) or any(annotation is c for c in BARE_CONTAINERS)


def type_from_annotation(obj: Any, namespace: dict[str, Any] | None = None) -> Type:
    """The IR type an annotation object denotes; AnnotationError when there is none."""
    if isinstance(obj, str):
        if obj == "Tensor":
            return TENSOR
        return type_from_annotation(evaluate_annotation(obj, namespace or {}), namespace)
    if isinstance(obj, typing.ForwardRef):
        return type_from_annotation(obj.__forward_arg__, namespace)
    if is_tensor_annotation(obj):
        return TENSOR
    if _hashable(obj) and obj in _SCALARS:
        return _SCALARS[obj]
    return _generic_type(obj, namespace)


def _hashable(obj: Any) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def _generic_type(obj: Any, namespace: dict[str, Any] | None) -> Type:
    if isinstance(obj, type):
        t = class_type(obj)  # a NamedTuple or a script class
        if t is not None:
            return t
    origin = typing.get_origin(obj)
    args = typing.get_args(obj)
    if origin is tuple:
        return _tuple_type(obj, args, namespace)
    if origin is list:
        if len(args) != 1:
            raise AnnotationError("List needs one element type, e.g. List[Tensor]")
        return ListType(type_from_annotation(args[0], namespace))
    if origin is dict:
        return _dict_type(args, namespace)
    if origin is typing.Union or origin is types.UnionType:
        return _union_type(obj, args, namespace)
    if is_plain_class(obj):
        raise AnnotationError(f"the annotation {_describe(obj)} is a plain class: its objects "
                              "can only be arguments of the scripted function itself (their "
                              "attributes are read per call; pass a callee the attributes "
                              "it needs); here use Tensor, int, float, "
                              "bool, str, None, Tuple, List, Dict, Optional, a NamedTuple "
                              "class or a @script class")
    raise AnnotationError(f"the annotation {_describe(obj)} is not a supported type "
                          "(supported: Tensor, int, float, bool, str, None, Tuple, List, "
                          "Dict, Optional, NamedTuple classes, @script classes, and plain "
                          "classes for arguments)")


_NOT_PLAIN = (tuple, list, dict, set, frozenset, np.ndarray, np.generic, BaseException, type,
              enum.Enum)


def is_plain_class(obj: Any) -> bool:
    """A user class that is neither a NamedTuple, a @script class, a container, an array nor a
    module (``script.Module``): its objects can be arguments read through their attributes
    (``script.frontend.object_args``)."""
    found = _plain_classes.get(obj) if isinstance(obj, type) else False
    if found is None:
        found = _plain_classes[obj] = _is_plain_class(obj)
    return found and classes.info_of(obj) is None  # scripted since: not plain any more


_plain_classes: dict[type, bool] = {}
"""``is_plain_class`` by class (it runs at every call of a function with object arguments)."""


_LIBRARY_MODULES = ("builtins", "typing", "collections", "abc", "enum", "numpy", "cupy")
"""Classes of these packages are types or library objects, never plain user classes."""


def _is_plain_class(obj: Any) -> bool:
    if not isinstance(obj, type) or issubclass(obj, _NOT_PLAIN) or \
            obj.__module__.split(".")[0] in _LIBRARY_MODULES:
        return False
    if is_tensor_annotation(obj) or classes.info_of(obj) is not None:
        return False
    return not any(hasattr(c, "__rnnscript_module__") or c.__name__ == "Module"
                   and c.__module__.startswith("script") for c in obj.__mro__)


def _tuple_type(obj: Any, args: tuple[Any, ...], namespace: dict[str, Any] | None) -> Type:
    if args == ((),):  # Tuple[()] is the empty tuple
        return TupleType(())
    if len(args) == 2 and args[1] is Ellipsis:
        raise AnnotationError(f"variable-length tuples ({_describe(obj)}) are not supported; "
                              "use List[...]")
    return TupleType(tuple(type_from_annotation(a, namespace) for a in args))


def _dict_type(args: tuple[Any, ...], namespace: dict[str, Any] | None) -> Type:
    if len(args) != 2:
        raise AnnotationError("Dict needs a key and a value type, e.g. Dict[str, Tensor]")
    key = type_from_annotation(args[0], namespace)
    if key not in (STR, INT):
        raise AnnotationError(f"dict keys must be str or int, not {key}")
    return DictType(key, type_from_annotation(args[1], namespace))


def _union_type(obj: Any, args: tuple[Any, ...], namespace: dict[str, Any] | None) -> Type:
    others = [a for a in args if a is not type(None)]
    if len(others) == 1 and len(args) == 2:
        return OptionalType(type_from_annotation(others[0], namespace))
    raise AnnotationError(f"{_describe(obj)}: only Optional[T] / T | None unions are supported")


def _describe(obj: Any) -> str:
    if isinstance(obj, type):
        return f"'{obj.__module__}.{obj.__qualname__}'" if obj.__module__ != "builtins" \
            else f"'{obj.__qualname__}'"
    return f"'{obj}'"


def class_type(cls: Any) -> ClassType | None:
    """The IR type of a NamedTuple class or a registered script class, else None (a script
    class's ``__init__`` compiles on first use: it defines the fields)."""
    info = classes.info_of(cls)
    if info is not None:
        if info.init is None and not info.type.named_tuple and not info.compiling:
            classes.compile_init(info)
        return info.type
    if not classes.is_named_tuple_class(cls):
        return None
    return classes.register_named_tuple(cls, _named_tuple_fields).type


def _named_tuple_fields(cls: type) -> list[tuple[str, Type]]:
    """A NamedTuple's fields and their types (untyped fields are Tensors)."""
    namespace = dict(vars(sys.modules.get(cls.__module__, sys)))
    annotations = getattr(cls, "__annotations__", {})
    fields = []
    for name in cls._fields:
        try:
            t = type_from_annotation(annotations[name], namespace) if name in annotations \
                else TENSOR
        except AnnotationError as exc:
            raise ScriptError(f"field '{name}' of NamedTuple '{cls.__qualname__}': {exc}"
                              ) from None
        fields.append((name, t))
    return fields
