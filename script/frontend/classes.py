"""Script classes and NamedTuples: user-defined record types usable inside scripted code.

``script(cls)`` on a plain class with an ``__init__`` registers it as a script class: scripted code
can construct it (``Foo(a, b)``), read and write its fields and call its methods; the field types
come from the assignments to ``self.<field>`` in ``__init__``. Instances are real instances of the
Python class, so they cross the boundary both ways. NamedTuple classes (``typing.NamedTuple`` or
``collections.namedtuple``, whose untyped fields are Tensors) need no registration: scripted code
constructs them, reads fields by name or index and unpacks them. Both are ``ir.ClassType``s;
``python_class(name)`` gives the Python class the generated code instantiates.

``ObjectMixin`` is the part of ``FunctionCompiler`` that compiles those constructs.
"""

from __future__ import annotations

import ast
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ir.registry import NOT_CONSTANT, constant_of
from ir.types import TENSOR, ClassType, Type, is_subtype

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler, FunctionDef


@dataclass(eq=False)
class ClassInfo:
    """What the compiler knows about one registered class."""

    cls: type
    """the Python class."""
    type: ClassType
    """its IR type (for a script class, fields known once ``__init__`` has compiled)."""
    fields: dict[str, Type] = field(default_factory=dict)
    """field name -> type, in definition order."""
    methods: dict[str, Any] = field(default_factory=dict)
    """compiled methods (``FunctionDef``) by name."""
    init: Any = None
    """the compiled ``__init__`` (script classes)."""
    compiling: bool = False
    """``__init__`` is being compiled (the type is still provisional)."""


_by_class: dict[type, ClassInfo] = {}
_by_name: dict[str, ClassInfo] = {}
_lock = threading.RLock()


def is_named_tuple_class(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields")


def register_script_class(cls: type) -> type:
    """``script(cls)``: make ``cls`` usable from scripted code; returns ``cls`` unchanged."""
    from script.errors import ScriptError
    if "__init__" not in vars(cls):
        raise ScriptError(f"script class '{cls.__qualname__}' needs an __init__ that assigns "
                          "its fields")
    with _lock:
        if cls not in _by_class:
            _register(cls, ClassType(_unique_name(cls)))
    return cls


def class_type(cls: Any) -> ClassType | None:
    """The IR type of a NamedTuple class or a registered script class, else None."""
    info = _by_class.get(cls) if isinstance(cls, type) else None
    if info is not None:
        if info.init is None and not info.type.named_tuple and not info.compiling:
            compile_init(info)
        return info.type
    if not is_named_tuple_class(cls):
        return None
    with _lock:
        if cls not in _by_class:
            _register_named_tuple(cls)
    return _by_class[cls].type


def class_info(t: ClassType) -> ClassInfo:
    """The registration behind a class type."""
    return _by_name[t.name]


def python_class(name: str) -> type:
    """The Python class of the class type called ``name`` (for generated code)."""
    return _by_name[name].cls


def _unique_name(cls: type) -> str:
    name, k = cls.__qualname__.replace("<locals>.", ""), 0
    candidate = name
    while candidate in _by_name and _by_name[candidate].cls is not cls:
        k += 1
        candidate = f"{name}_{k}"
    return candidate


def _register(cls: type, t: ClassType) -> ClassInfo:
    info = ClassInfo(cls, t, dict(t.fields))
    _by_class[cls] = info
    _by_name[t.name] = info
    return info


def _register_named_tuple(cls: type) -> None:
    from script.errors import ScriptError
    from script.frontend.annotations import AnnotationError, type_from_annotation
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
    _register(cls, ClassType(_unique_name(cls), tuple(fields), named_tuple=True))


def compile_init(info: ClassInfo) -> None:
    """Compile a script class's ``__init__``: its ``self.<field> = ...`` assignments define the
    fields, and so the final class type."""
    from script.frontend.compiler import compile_method
    with _lock:
        if info.init is not None:
            return
        provisional = info.type
        info.fields.clear()
        info.compiling = True
        try:
            fdef = compile_method(info.cls.__init__, self_type=provisional)
        finally:
            info.compiling = False
        info.type = ClassType(provisional.name, tuple(info.fields.items()))
        fdef.graph.inputs[0].type = info.type
        fdef.arg_types[0] = info.type
        info.init = fdef


def compile_class_method(info: ClassInfo, name: str) -> FunctionDef | None:
    """A script class's method, compiled with ``self`` typed as the class."""
    from script.frontend.compiler import compile_method
    with _lock:
        if name not in info.methods:
            fn = vars(info.cls).get(name)
            info.methods[name] = compile_method(fn, self_type=info.type) if callable(fn) \
                and hasattr(fn, "__code__") else None
        return info.methods[name]


class ObjectMixin:
    """Construction, fields and methods of NamedTuples and script-class objects."""

    def construct(self: FunctionCompiler, cls: type, node: ast.Call) -> Any:
        t = class_type(cls)
        assert t is not None
        if t.named_tuple:
            return self.construct_named_tuple(cls, t, node)
        info = class_info(t)
        obj = self.emit("prim::CreateObject", [], [t]).output
        self.call_function(info.init, node, bound=(obj,))
        return obj

    def construct_named_tuple(self: FunctionCompiler, cls: type, t: ClassType,
                              node: ast.Call) -> Any:
        names = [n for n, _ in t.fields]
        if len(node.args) > len(names):
            raise self.error(node, f"{cls.__name__}() takes {len(names)} arguments but "
                             f"{len(node.args)} were given")
        values = dict(zip(names, (self.expr(a) for a in node.args)))
        for kw in node.keywords:
            if kw.arg not in names or kw.arg in values:
                raise self.error(kw, f"{cls.__name__}() got an unexpected or repeated "
                                 f"argument '{kw.arg}'")
            values[kw.arg] = self.expr(kw.value)
        defaults = getattr(cls, "_field_defaults", {})
        items = []
        for name, ft in t.fields:
            if name not in values and name not in defaults:
                raise self.error(node, f"{cls.__name__}() missing argument '{name}'")
            value = values[name] if name in values else self.static_value(node, defaults[name])
            if not is_subtype(value.type, ft):
                raise self.error(node, f"field '{name}' of {cls.__name__} is {ft}, not "
                                 f"{value.type}")
            items.append(value)
        return self.emit("prim::NamedTupleConstruct", items, [t]).output

    def object_attribute(self: FunctionCompiler, base: Any, name: str, node: ast.AST) -> Any:
        t = base.type
        info = class_info(t)
        if name in info.fields:
            kind = "prim::GetAttr" if t.named_tuple else "prim::LoadAttr"
            return self.emit(kind, [base], [info.fields[name]], {"name": name}).output
        if not t.named_tuple and callable(vars(info.cls).get(name)):
            raise self.unsupported(node, f"using the method '{name}' as a value")
        raise self.error(node, f"'{info.cls.__name__}' object has no attribute '{name}'")

    def named_tuple_items(self: FunctionCompiler, value: Any) -> list[Any]:
        if value.node.kind == "prim::NamedTupleConstruct":
            return list(value.node.inputs)
        return [self.emit("prim::GetAttr", [value], [ft], {"name": n}).output
                for n, ft in value.type.fields]

    def index_named_tuple(self: FunctionCompiler, value: Any, index: ast.expr) -> Any:
        items = self.named_tuple_items(value)
        if isinstance(index, ast.Slice):
            bounds = [constant_of(b) for b in self.slice_bounds(index)]
            if NOT_CONSTANT in bounds:
                raise self.error(index, "NamedTuple slice bounds must be constants")
            return self.emit_value("prim::TupleConstruct", items[slice(*bounds)])
        i = constant_of(self.index_value(index))
        if not isinstance(i, int):
            raise self.error(index, "a NamedTuple index must be a constant int")
        if not -len(items) <= i < len(items):
            raise self.error(index, f"index {i} out of range for {value.type}")
        return items[i]

    def call_object_method(self: FunctionCompiler, base: Any, name: str, node: ast.Call) -> Any:
        info = class_info(base.type)
        fdef = None if base.type.named_tuple else compile_class_method(info, name)
        if fdef is None:
            raise self.error(node.func, f"'{info.cls.__name__}' object has no method '{name}' "
                             "that scripted code can call")
        return self.call_function(fdef, node, bound=(base,))

    def assign_field(self: FunctionCompiler, target: ast.Attribute, value: Any) -> None:
        """``obj.field = value`` on a script-class object (``__init__`` defines the fields)."""
        base = self.expr(target.value)
        t = base.type
        if not isinstance(t, ClassType):
            raise self.unsupported(target, f"assigning an attribute of a {t}")
        info = class_info(t)
        if t.named_tuple:
            raise self.error(target, f"cannot assign to field '{target.attr}' of the NamedTuple "
                             f"'{info.cls.__name__}': NamedTuples are immutable")
        declared = info.fields.get(target.attr)
        if declared is None:
            if not self.defining_fields(base):
                raise self.error(target, f"'{info.cls.__name__}' object has no attribute "
                                 f"'{target.attr}' (fields are created in __init__)")
            info.fields[target.attr] = declared = value.type
        if not is_subtype(value.type, declared):
            raise self.error(target, f"field '{target.attr}' of '{info.cls.__name__}' has type "
                             f"{declared}, not {value.type}")
        self.emit("prim::SetAttr", [base, value], [], {"name": target.attr})

    def defining_fields(self: FunctionCompiler, base: Any) -> bool:
        """Inside a script class's ``__init__``, assigning ``self.<new field>`` defines it."""
        return self.self_type is not None and self.fn.__name__ == "__init__" and \
            bool(self.graph.inputs) and base is self.graph.inputs[0]
