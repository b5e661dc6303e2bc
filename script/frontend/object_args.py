"""Plain Python objects as arguments: ``p: Params`` where ``Params`` is an ordinary class.

Numpy RNN code keeps its weights in plain objects (``p.W_f.v``, ``layer.U``). Such an argument is
not an IR value: while the function compiles, its name stands for an ``ObjectArg`` (a
compile-time placeholder holding the call's object as an example), an attribute that holds
another plain object is another ``ObjectArg``, and an attribute that holds anything else (an
array, a number, a list...) is a graph input (an ``ArgAttrRef``) read from the call's object at
every call, after the arguments, like a global array (``globals.GlobalRef``). Its dtype and
shape, or its type, are part of the call signature, so a call with other shapes specializes
again. Which attributes hold objects and which hold values is the object's *layout*; a call
whose layout differs from the one compiled compiles the function again (``read_inputs``).

Attributes are read, never assigned: ``p.W = ...`` is a ScriptError.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.types import ANY, INT, NONE, STR, DictType, Type, erase_shape
from script.errors import ScriptError, SignatureError
from script.frontend.annotations import (
    AnnotationError,
    evaluate_annotation,
    function_namespace,
    is_plain_class,
)
from script.frontend.signature import type_of

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


def is_plain_object(value: Any) -> bool:
    """An instance of a plain class (``is_plain_class``): what an object argument may be."""
    return is_plain_class(type(value)) and hasattr(value, "__dict__")


@dataclass(frozen=True, eq=False)
class ObjectArg:
    """A plain object argument, or an object reached through its attributes, at compile time."""

    param: int
    """the position of the argument among the graph's inputs."""
    path: tuple[str, ...]
    """the attributes followed from the argument (``()`` for the argument itself)."""
    spelling: str
    """how the code names it (``p.W_f``)."""
    example: Any
    """what it is in the call the function is compiled for (decides the layout)."""


@dataclass(frozen=True, eq=False)
class ArgAttrRef:
    """An attribute of an object argument holding a value: a graph input after the arguments,
    read from the call's argument (``read_inputs``). Has ``GlobalRef``'s interface."""

    param: int
    """the position of the argument among the graph's inputs."""
    path: tuple[str, ...]
    """the attribute path from the argument."""
    name: str
    """how the code spells it (``p.W_f.v``)."""
    type: Type
    """its IR type, shapes left unknown (the executor specializes on the actual value)."""
    kind: type
    """the Python type it had when compiled: a call that finds another compiles again."""

    @property
    def key(self) -> tuple[Any, ...]:
        return ("argument", self.param, self.path)

    @property
    def parameter(self) -> None:
        return None

    def read(self) -> Any:
        raise ScriptError(f"'{self.name}' is an attribute of an argument: it is read per call")


def plain_class_params(fn: Any) -> tuple[str, ...]:
    """The parameters of ``fn`` annotated with a plain class (string annotations resolved in
    its namespace; one that does not resolve is left to the compiler to report)."""
    namespace: dict[str, Any] | None = None
    found = []
    for name, annotation in getattr(fn, "__annotations__", {}).items():
        if name == "return":
            continue
        if isinstance(annotation, str):
            namespace = function_namespace(fn) if namespace is None else namespace
            try:
                annotation = evaluate_annotation(annotation, namespace)
            except AnnotationError:
                continue
        if is_plain_class(annotation):
            found.append(name)
    return tuple(found)


def read_inputs(refs: list[Any], inputs: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """What the ``attr_refs`` read in a call whose bound arguments are ``inputs``; None when an
    object argument does not have the layout the function compiled for (an attribute path read
    that does not cross plain objects, or ends at a value of another Python type). The object
    arguments themselves are plain objects (``check_object_argument``)."""
    values = []
    for ref in refs:
        if type(ref) is not ArgAttrRef:
            values.append(ref.read())
            continue
        path = ref.path
        value = getattr(inputs[ref.param], path[0], _MISSING)  # the argument: checked already
        for attr in path[1:]:
            if not is_plain_object(value):
                return None
            value = getattr(value, attr, _MISSING)
        if type(value) is not ref.kind:
            return None
        values.append(value)
    return tuple(values)


_MISSING: Any = object()


def check_object_argument(name: str, value: Any, function: str) -> None:
    """SignatureError unless ``value`` can be passed for the parameter ``name``, annotated with
    a plain class."""
    if not is_plain_object(value):
        what = f"an array of shape {value.shape}" if isinstance(value, np.ndarray) else \
            f"a value of type {type(value).__name__}"
        raise SignatureError(f"{function}(): argument '{name}' is annotated with a plain class, "
                             f"whose objects' attributes are read per call; got {what}")


def _declared(value: Any) -> Type:
    """What an attribute's value is checked against: a dict's keys decide its key type."""
    if isinstance(value, dict) and value:
        keys = {type(k) for k in value}
        if keys == {str}:
            return DictType(STR, ANY)
        if keys == {int}:
            return DictType(INT, ANY)
    return ANY


class ObjectArgMixin:
    """Reading the attributes of plain object arguments in ``FunctionCompiler``."""

    def object_param(self: FunctionCompiler, name: str, param: int, example: Any) -> Any:
        """What the name of an object parameter is bound to while the body compiles: the graph
        input itself is a placeholder (None at run time)."""
        self.graph.add_input(NONE, name)
        return ObjectArg(param, (), name, example)

    def object_arg_member(self: FunctionCompiler, owner: ObjectArg, node: ast.Attribute) -> Any:
        """``owner.<attr>`` at compile time: an ``ObjectArg`` for an attribute holding a plain
        object; else None (its value is a graph input, ``object_arg_value``)."""
        value = self.object_arg_example(owner, node)
        if is_plain_object(value):
            return ObjectArg(owner.param, owner.path + (node.attr,),
                             f"{owner.spelling}.{node.attr}", value)
        return None

    def object_arg_example(self: FunctionCompiler, owner: ObjectArg, node: ast.Attribute
                           ) -> Any:
        if not hasattr(owner.example, node.attr):
            raise self.error(node, f"'{owner.spelling}' ({type(owner.example).__name__} object) "
                             f"has no attribute '{node.attr}'")
        value = getattr(owner.example, node.attr)
        if inspect.ismethod(value) or inspect.isfunction(value):
            raise self.unsupported(node, f"calling the method '{node.attr}' of the plain object "
                                   f"argument '{owner.spelling}' (its attributes are read; make "
                                   "the method a function taking the object, or script the "
                                   "class)")
        return value

    def object_arg_value(self: FunctionCompiler, owner: ObjectArg, node: ast.Attribute) -> Any:
        """The graph input standing for ``owner.<attr>`` when it holds a value."""
        value = self.object_arg_example(owner, node)
        name = f"{owner.spelling}.{node.attr}"
        if is_plain_object(value):
            raise self.error(node, f"'{name}' is a {type(value).__name__} object: scripted code "
                             "reads the attributes of an object argument (its arrays and "
                             "numbers), it cannot use the object itself as a value")
        try:
            t = erase_shape(type_of(value, _declared(value), f"'{name}'"))
        except SignatureError as exc:
            raise self.error(node, f"{exc}; scripted code cannot read it") from None
        return self.add_attr_input(ArgAttrRef(owner.param, owner.path + (node.attr,), name, t,
                                              type(value)))

    def object_arguments(self: FunctionCompiler, fn: Any, node: ast.Call) -> dict[str, Any]:
        """The object arguments a call passes for the parameters of ``fn`` annotated with a
        plain class, by parameter name (each must be an object argument or one reached from
        it)."""
        wanted = plain_class_params(fn)
        if not wanted:
            return {}
        try:
            names = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            return {}
        given = list(zip(names, node.args)) + [(kw.arg, kw.value) for kw in node.keywords]
        found = {}
        for name, arg in given:
            if name not in wanted:
                continue
            obj = self.resolve_static(arg)
            if not isinstance(obj, ObjectArg):
                raise self.error(arg, f"{fn.__qualname__}() argument '{name}' is annotated with "
                                 "a plain class: pass it an object argument of this function "
                                 "(or an object one holds)")
            found[name] = obj
        return found

    def callee_ref(self: FunctionCompiler, fdef: Any, ref: Any, objects: dict[str, Any]
                   ) -> Any:
        """A callee's attribute input as the caller's: an attribute of an object the caller
        passed is the same attribute path from the caller's own argument."""
        if not isinstance(ref, ArgAttrRef):
            return ref
        owner = objects[fdef.arg_names[ref.param]]
        return ArgAttrRef(owner.param, owner.path + ref.path,
                          ".".join((owner.spelling, *ref.path)), ref.type, ref.kind)

    def object_arg_as_value(self: FunctionCompiler, node: ast.AST, owner: ObjectArg) -> Any:
        raise self.error(node, f"'{owner.spelling}' is a {type(owner.example).__name__} object "
                         "argument: scripted code reads its attributes "
                         f"('{owner.spelling}.<name>'), it cannot use the object itself as a "
                         "value (pass the attributes instead)")
