"""Script classes and NamedTuples: user-defined record types usable inside scripted code.

``script(cls)`` on a plain class registers it as a script class: scripted code can construct it
(``Foo(a, b)``), read and write its fields and call its methods; the field types come from the
assignments to ``self.<field>`` in ``__init__`` (a class without one has no fields). Instances
are real instances of the Python class, so they cross the boundary both ways. NamedTuple classes
(``typing.NamedTuple`` or ``collections.namedtuple``, whose untyped fields are Tensors) need no
registration: scripted code constructs them, reads fields by name or index and unpacks them.
Both are ``ir.ClassType``s; ``python_class(name)`` gives the Python class the generated code
instantiates.

This module is the registry; ``annotations.class_type`` types a class (registering NamedTuples
on first sight) and ``objects.ObjectMixin`` compiles the constructs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ir.types import ClassType, Type
from script.errors import ScriptError

if TYPE_CHECKING:
    from script.frontend.definition import FunctionDef


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
    """the compiled ``__init__`` (script classes; ``NO_INIT`` for one without)."""
    compiling: bool = False
    """``__init__`` is being compiled (the type is still provisional)."""
    compile: Callable[..., Any] | None = None
    """the frontend's ``compile_method``, given by ``script(cls)`` at registration (script
    classes compile their ``__init__`` and methods with it)."""


NO_INIT = "no __init__"
"""``ClassInfo.init`` of a script class without ``__init__``: constructed with no arguments."""
_by_class: dict[type, ClassInfo] = {}
_by_name: dict[str, ClassInfo] = {}
_lock = threading.RLock()


def is_named_tuple_class(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields")


def register_script_class(cls: type, compile_method: Callable[..., Any]) -> type:
    """``script(cls)``: make ``cls`` usable from scripted code, its code compiled by
    ``compile_method(fn, self_type=...)``; returns ``cls`` unchanged."""
    if "__init__" not in vars(cls) and cls.__init__ is not object.__init__:
        raise ScriptError(f"script class '{cls.__qualname__}' needs its own __init__ that "
                          "assigns its fields (it inherits one)")
    with _lock:
        if cls not in _by_class:
            _register(cls, ClassType(_unique_name(cls))).compile = compile_method
    return cls


def info_of(cls: Any) -> ClassInfo | None:
    """The registration of a Python class, or None."""
    return _by_class.get(cls) if isinstance(cls, type) else None


def register_named_tuple(cls: type, field_types: Callable[[type], list[tuple[str, Type]]]
                         ) -> ClassInfo:
    """The registration of a NamedTuple class, made on first sight with its fields typed by
    ``field_types(cls)``."""
    with _lock:
        info = _by_class.get(cls)
        if info is None:
            t = ClassType(_unique_name(cls), tuple(field_types(cls)), named_tuple=True)
            info = _register(cls, t)
        return info


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


def compile_init(info: ClassInfo) -> None:
    """Compile a script class's ``__init__``: its ``self.<field> = ...`` assignments define the
    fields, and so the final class type."""
    if info.compile is None:
        raise ScriptError(f"class '{info.cls.__qualname__}' was not scripted: its __init__ "
                          "cannot be compiled")
    with _lock:
        if info.init is not None:
            return
        if "__init__" not in vars(info.cls):  # a class of methods only: no fields
            info.type = ClassType(info.type.name, ())
            info.init = NO_INIT
            return
        provisional = info.type
        info.fields.clear()
        info.compiling = True
        try:
            fdef = info.compile(info.cls.__init__, self_type=provisional)
        finally:
            info.compiling = False
        info.type = ClassType(provisional.name, tuple(info.fields.items()))
        fdef.graph.inputs[0].type = info.type
        fdef.arg_types[0] = info.type
        info.init = fdef


def compile_class_method(info: ClassInfo, name: str) -> FunctionDef | None:
    """A script class's method, compiled with ``self`` typed as the class."""
    with _lock:
        if name not in info.methods:
            fn = vars(info.cls).get(name)
            info.methods[name] = info.compile(fn, self_type=info.type) if callable(fn) \
                and hasattr(fn, "__code__") else None
        return info.methods[name]
