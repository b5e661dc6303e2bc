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

import inspect
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
    methods: dict[Any, Any] = field(default_factory=dict)
    """compiled methods (``FunctionDef``, None for one scripted code cannot call) by the
    Python function (a method found in a base class is compiled for this class)."""
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
        init = find_in_mro(info.cls, "__init__")
        if init is object.__init__:  # a class of methods only: no fields
            info.type = ClassType(info.type.name, ())
            info.init = NO_INIT
            return
        if not inspect.isfunction(init):
            raise ScriptError(f"the __init__ of script class '{info.cls.__qualname__}' is not "
                              "a Python function: it cannot be compiled")
        provisional = info.type
        info.fields.clear()
        info.compiling = True
        try:
            fdef = info.compile(init, self_type=provisional)
        finally:
            info.compiling = False
        info.type = ClassType(provisional.name, tuple(info.fields.items()))
        fdef.graph.inputs[0].type = info.type
        fdef.arg_types[0] = info.type
        info.init = fdef


def find_in_mro(cls: type, name: str, after: type | None = None) -> Any:
    """``name`` in the first class of ``cls.__mro__`` that defines it (after the class
    ``after``, as ``super(after, obj).name`` looks it up for an object of class ``cls``), as
    that class stores it; None when none does."""
    mro = cls.__mro__
    start = 0 if after is None else mro.index(after) + 1
    return next((vars(k)[name] for k in mro[start:] if name in vars(k)), None)


def compile_class_method(info: ClassInfo, name: str) -> FunctionDef | None:
    """A script class's method (found along its MRO), compiled with ``self`` typed as the
    class; None when it has no such method scripted code can call."""
    return compile_class_function(info, find_in_mro(info.cls, name))


def compile_class_function(info: ClassInfo, fn: Any) -> FunctionDef | None:
    """The function ``fn`` (a method of the class or of a base class) compiled as a method of
    the script class ``info``; None when it is not a Python function."""
    if not inspect.isfunction(fn):
        return None
    with _lock:
        if fn not in info.methods:
            info.methods[fn] = info.compile(fn, self_type=info.type)
        return info.methods[fn]
