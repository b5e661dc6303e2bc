"""``isinstance(x, cls)`` and ``hasattr(x, name)`` in scripted code: decided from ``x``'s type
when compiling, as Python decides them when the code runs.

``cls`` is a class or a tuple of classes (``isinstance(h, tuple)``, ``isinstance(state,
(tuple, list))``), and the bare ``typing`` aliases stand for their classes (``typing.Tuple`` is
``tuple``). An ``Optional`` value tests ``x is None`` when the code runs (``NoneType`` or the
other type's answer). What the types cannot decide is a ScriptError: an array whose number of
axes is not known against ``np.ndarray``, ``float`` or ``int`` (a 0-d result of a reduction is
a numpy scalar, a ``float`` subclass, not an array), and subscripted generics
(``isinstance(x, List[int])``, a TypeError in Python).

``hasattr`` of a plain object argument (or an object one holds) asks the call's object: the
answer is compiled in, and a call whose object answers otherwise compiles again (a presence
check among the attributes read per call). Of any other value it asks the value's class (an
array's: ``np.ndarray``; a script class's fields and methods)."""

from __future__ import annotations

import ast
import typing
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.kinds import PARAM
from ir.types import (
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
)
from script.frontend import classes
from script.frontend.annotations import class_type
from script.frontend.object_args import ArgAttrRef, ObjectArg, ObjectSeq

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

_ALIASES = {typing.Tuple: tuple, typing.List: list, typing.Dict: dict}


class InstanceMixin:
    """``isinstance`` for ``FunctionCompiler``."""

    def builtin_isinstance(self: FunctionCompiler, node: ast.Call) -> Any:
        if node.keywords or len(node.args) != 2:
            raise self.error(node, "isinstance() takes exactly 2 arguments")
        value = self.expr(node.args[0])
        spec = node.args[1]
        classes = [self.instance_class(e) for e in spec.elts] if isinstance(spec, ast.Tuple) \
            else [self.instance_class(spec)]
        t = value.type
        if not isinstance(t, OptionalType):
            return self.const(any(_is_instance(value, t, cls, self, node) for cls in classes))
        none_ok = any(issubclass(type(None), cls) for cls in classes)  # (object, Hashable)
        other_ok = any(_is_instance(value, t.element, cls, self, node) for cls in classes)
        if none_ok == other_ok:
            return self.const(none_ok)
        is_none = self.emit_value("prim::IsNone", [value])  # decided when the code runs
        return is_none if none_ok else self.negate(is_none)

    def builtin_hasattr(self: FunctionCompiler, node: ast.Call) -> Any:
        if node.keywords or len(node.args) != 2:
            raise self.error(node, "hasattr() takes exactly 2 arguments")
        name = node.args[1]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            attr = self.expr(name)
            if not (attr.is_constant and isinstance(attr.constant, str)):
                raise self.error(name, "hasattr() needs the attribute's name as a constant "
                                 "string here")
            attr_name = attr.constant
        else:
            attr_name = name.value
        owner = self.resolve_static(node.args[0])
        if isinstance(owner, ObjectArg):
            present = hasattr(owner.example, attr_name)
            self.add_attr_input(ArgAttrRef(
                owner.param, owner.path + (attr_name,), f"hasattr({owner.spelling}, "
                f"{attr_name!r})", BOOL, bool, constant=present, check="hasattr"))
            return self.const(present)
        if isinstance(owner, ObjectSeq):
            return self.const(hasattr(owner.kind, attr_name))
        t = self.expr(node.args[0]).type
        if isinstance(t, OptionalType):
            raise self.error(node.args[0], "hasattr() of an Optional value: test 'is None' "
                             "first")
        if isinstance(t, ClassType):
            return self.const(t.field_type(attr_name) is not None
                              or hasattr(classes.python_class(t.name), attr_name))
        py = np.ndarray if isinstance(t, TensorType) else _python_class(t)
        if py is None:
            raise self.error(node, f"hasattr() of a value of type {t} is not supported")
        return self.const(hasattr(py, attr_name))

    def instance_class(self: FunctionCompiler, node: ast.expr) -> Any:
        """The class (or ``typing`` alias) ``node`` names."""
        if isinstance(node, ast.Call) and ast.unparse(node) == "type(None)":
            return type(None)
        obj = self.resolve_static(node)
        obj = _ALIASES.get(obj, obj)
        if isinstance(obj, type):
            return obj
        raise self.error(node, f"isinstance() needs a class or a tuple of classes, not "
                         f"'{ast.unparse(node)}' (subscripted types such as List[int] are not "
                         "classes)")


def _is_instance(value: Any, t: Type, cls: type, c: FunctionCompiler, node: ast.AST) -> bool:
    """Whether ``value`` of type ``t`` (not Optional) is an instance of ``cls``."""
    if cls is object:
        return True
    if isinstance(t, TensorType):
        if cls in (np.ndarray, float, int, np.generic, np.number, np.floating, np.integer):
            _an_array(value, t, c, node)
            return cls is np.ndarray
        return False
    py = _python_class(t)
    if py is not None:  # (its subclasses' instances are of another type: never this one)
        return issubclass(py, cls)  # an ABC too: None is Hashable, a tuple a Sequence
    if isinstance(t, ClassType):
        if t.named_tuple and cls is tuple:
            return True
        target = class_type(cls)
        return target is not None and target == t
    raise c.error(node, f"isinstance() of a value of type {t} is not supported")


_SIMPLE = {NONE: type(None), INT: int, FLOAT: float, STR: str, BOOL: bool}


def _python_class(t: Type) -> type | None:
    """The Python class of a value of a number, string, None or container type; None for
    arrays, script classes and anything else."""
    for kind, py in ((TupleType, tuple), (ListType, list), (DictType, dict)):
        if isinstance(t, kind):
            return py
    return _SIMPLE.get(t)


def _an_array(value: Any, t: TensorType, c: FunctionCompiler, node: ast.AST) -> None:
    """An array argument, or one with at least one axis, is an ndarray (never a float); a
    result that may be 0-d may be a numpy scalar where numpy computed it: refused."""
    if value.node.kind == PARAM and value.node.owner is c.graph.block:
        return
    if t.shape is None or len(t.shape) == 0:
        raise c.error(node, "isinstance() against a number or array class of an array that "
                      "may have no axes is not supported (numpy makes a 0-d result a scalar, "
                      "a float subclass, not an ndarray): test x.ndim instead")
