"""Module methods: ``self`` as a compile-time object, its members, and calls of submodules.

A mixin of ``FunctionCompiler``. While a method of a ``Module`` compiles, ``self`` is not an IR
value but the module object itself, so ``self.cell`` is the submodule (its ``forward`` is compiled
and called), ``for layer in self.layers`` unrolls over the ``ModuleList``, and ``self.hidden`` or
``self.training`` are constants. Those constants are recorded as ``Guard``s in the
``ModuleSession``: the compiled code is valid while every guard holds (``train()`` / ``eval()``
flip one, so the module recompiles). Parameters and array attributes are not constants: each
becomes a graph input (an ``AttrRef``) read from the module at call time, so an optimizer step on
``param.data`` is seen by the compiled code. A callee's ``AttrRef`` inputs become inputs of the
caller, up to the top-level method.
"""

from __future__ import annotations

import ast
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ir.registry import NOT_CONSTANT
from ir.types import ANY, Type, erase_shape
from script.errors import ScriptError, SignatureError
from script.frontend.exprs import NOT_STATIC, constant_value
from script.frontend.function_tables import is_function_table
from script.frontend.object_args import ObjectSeq
from script.frontend.signature import type_of
from script.module import Module, ModuleList, Parameter, is_array, is_module, state_version

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler
    from script.frontend.definition import FunctionDef

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()
"""``read_member`` of a name the module does not have."""


def unwrap_module(obj: Any) -> Any:
    """A ``ScriptModule`` stands for the Python module it compiled."""
    return getattr(obj, "python_module", obj) if is_module(obj) else obj


def is_module_sequence(obj: Any) -> bool:
    """A ``ModuleList``, or a list/tuple whose items are all modules."""
    if isinstance(obj, ModuleList):
        return True
    return isinstance(obj, (list, tuple)) and bool(obj) and all(is_module(m) for m in obj)


def same(a: Any, b: Any) -> bool:
    """Guard equality: identity, or equal values of the same type (``1`` is not ``True``),
    tuples item by item (``(2, 3)`` is not ``(2.0, 3)``), floats with their sign (``-0.0`` is
    not ``0.0``: ``1 / x`` differs) and NaN the same as NaN."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return (a == b and math.copysign(1.0, a) == math.copysign(1.0, b)) or (a != a and b != b)
    return a == b


def read_member(owner: Any, name: str) -> Any:
    """What ``owner.<name>`` holds (the Parameter object itself for a parameter)."""
    d = owner.__dict__
    for table in (d["_parameters"], d["_modules"], d):
        if name in table:
            return table[name]
    return getattr(type(owner), name, MISSING)


@dataclass(frozen=True, eq=False)
class Guard:
    """A compile-time fact about a module: ``read()`` must still give ``expected``."""

    read: Callable[[], Any]
    expected: Any

    def holds(self) -> bool:
        return same(self.read(), self.expected)


@dataclass(frozen=True, eq=False)
class AttrRef:
    """A module attribute that is a graph input: a parameter, an array or a container of arrays.

    ``read()`` gives its current value (a parameter's ``.data``)."""

    owner: Any
    """the (Python) module holding it."""
    name: str
    """the attribute name."""
    type: Type
    """its IR type, shapes left unknown (the executor specializes on the actual arrays)."""

    @property
    def key(self) -> tuple[int, str]:
        return (id(self.owner), self.name)

    @property
    def parameter(self) -> Parameter | None:
        """The ``Parameter`` object, or None for a plain attribute."""
        return self.owner.__dict__["_parameters"].get(self.name)

    def read(self) -> Any:
        param = self.owner.__dict__["_parameters"].get(self.name)
        return param.data if param is not None else self.owner.__dict__[self.name]


class ModuleSession:
    """One compilation of a module tree: its guards and its compiled methods, by object.

    A guard on a module member or a ``ModuleList``'s items (``module_state``) can only fail
    after a change ``script.module.state_version`` counts, so once all guards held the session
    checks those again only when that number moved; the others (a global's value) every time."""

    def __init__(self) -> None:
        self.guards: dict[Any, Guard] = {}
        self.methods: dict[tuple[int, Any], FunctionDef] = {}
        self._compiling: list[tuple[int, Any]] = []
        self._unversioned: list[Guard] = []
        """the guards checked at every call (not on module state)."""
        self._held_at: int | None = None
        """the ``state_version`` at which every guard last held (None: check them all)."""

    def guard(self, key: Any, read: Callable[[], Any], expected: Any,
              module_state: bool = False) -> None:
        if key in self.guards:
            return
        self.guards[key] = guard = Guard(read, expected)
        if not module_state:
            self._unversioned.append(guard)
        self._held_at = None

    def guards_hold(self) -> bool:
        version = state_version()  # read first: a change while checking is seen next time
        if version == self._held_at:
            return all(g.holds() for g in self._unversioned)
        if not all(g.holds() for g in list(self.guards.values())):
            return False
        self._held_at = version
        return True

    def method(self, owner: Any, fn: Any, where: Callable[[str], ScriptError],
               compile_method: Callable[[Any, Any, ModuleSession], FunctionDef]) -> FunctionDef:
        """The method ``fn`` of ``owner``, compiled by ``compile_method(fn, owner, session)``
        once per session."""
        key = (id(owner), fn)
        found = self.methods.get(key)
        if found is not None:
            return found
        if key in self._compiling:
            raise where(f"recursive calls are not supported: '{fn.__qualname__}' is already "
                        "being compiled")
        self._compiling.append(key)
        try:
            fdef = compile_method(fn, owner, self)
        finally:
            self._compiling.pop()
        self.methods[key] = fdef
        return fdef


def method_function(owner: Any, name: str) -> Any:
    """The plain function behind method ``name`` of ``owner`` (None when there is none)."""
    fn = inspect.getattr_static(type(owner), name, None)
    if isinstance(fn, staticmethod):
        return None
    fn = getattr(fn, "python_fn", fn)  # a method decorated with @script
    return fn if inspect.isfunction(fn) else None


class ModuleMixin:
    """Module members and calls of ``FunctionCompiler``."""

    def bind_self(self: FunctionCompiler, params: list[ast.arg]) -> list[ast.arg]:
        """A method's first parameter: a module's ``self`` is the object, known statically."""
        if not params:
            raise self.error(self.tree, "a method needs a 'self' parameter")
        if self.owner is None:
            return params
        self.namespace[params[0].arg] = self.owner
        return params[1:]

    # -- members ----------------------------------------------------------------------------------
    def module_member(self: FunctionCompiler, owner: Any, name: str, node: ast.AST) -> Any:
        """``owner.<name>`` as a compile-time object (guarded), or NOT_STATIC when it is a graph
        input (a parameter or an array)."""
        owner = unwrap_module(owner)
        value = read_member(owner, name)
        if value is MISSING:
            raise self.error(node, f"module '{type(owner).__name__}' has no attribute '{name}' "
                             "(attributes must be created in __init__)")
        if isinstance(value, Parameter) or (name in owner.__dict__ and _is_dynamic(value)):
            return NOT_STATIC
        if name not in owner.__dict__ and name not in owner.__dict__["_modules"]:
            return self.class_member(owner, name, value, node)
        self.guard_member(owner, name, value)
        if isinstance(value, ModuleList):
            items = tuple(value)
            self.guard(("items", id(value)), lambda ml=value: tuple(ml), items,
                       module_state=True)
        return unwrap_module(value)

    def class_member(self: FunctionCompiler, owner: Any, name: str, value: Any,
                     node: ast.AST) -> Any:
        """A member found on the module's class: a method or a class-level constant. Checked
        at every call (assigning a class attribute moves no module state): a call that finds
        another value, or one the object itself holds, compiles again."""
        self.guard_global(("class", id(owner), name), lambda: read_member(owner, name), value)
        if inspect.isfunction(value) or hasattr(value, "python_fn"):
            fn = getattr(value, "python_fn", value)
            if fn.__module__ == Module.__module__:
                raise self.error(node, f"'{name}' of a module cannot be called from scripted "
                                 "code")
            return getattr(owner, name)
        if isinstance(value, (staticmethod, classmethod)):
            return getattr(owner, name)
        if isinstance(value, property):
            raise self.unsupported(node, f"the property '{name}' in scripted code")
        return value

    def guard_member(self: FunctionCompiler, owner: Any, name: str, value: Any) -> None:
        if self.session is not None:
            self.session.guard((id(owner), name), lambda: read_member(owner, name), value,
                               module_state=True)

    def guard(self: FunctionCompiler, key: Any, read: Callable[[], Any], expected: Any,
              module_state: bool = False) -> None:
        if self.session is not None:
            self.session.guard(key, read, expected, module_state)

    def module_value(self: FunctionCompiler, owner: Any, name: str, node: ast.AST) -> Any:
        """``owner.<name>`` read as a value: a graph input or a constant."""
        member = self.module_member(owner, name, node)
        if member is NOT_STATIC:
            return self.attr_input(unwrap_module(owner), name, node)
        if isinstance(member, list) and any(is_module(m) for m in member):
            raise self.error(node, f"attribute '{name}' is a list mixing modules and other "
                             "values; keep modules in a ModuleList of modules only")
        return self.static_value(node, member)

    def attr_input(self: FunctionCompiler, owner: Any, name: str, node: ast.AST) -> Any:
        """The graph input standing for attribute ``name`` of ``owner`` (one per attribute)."""
        key = (id(owner), name)
        value = self.attr_values.get(key)
        if value is not None:
            return value
        ref = AttrRef(owner, name, self.attribute_type(owner, name, node))
        return self.add_attr_input(ref)

    def add_attr_input(self: FunctionCompiler, ref: AttrRef) -> Any:
        value = self.attr_values.get(ref.key)
        if value is None:
            value = self.graph.add_input(ref.type, ref.name)
            self.attr_values[ref.key] = value
            self.attr_refs.append(ref)
        return value

    def attribute_type(self: FunctionCompiler, owner: Any, name: str, node: ast.AST) -> Type:
        current = AttrRef(owner, name, ANY).read()
        where = f"attribute '{name}' of module '{type(owner).__name__}'"
        if isinstance(current, (list, tuple)) and any(is_module(m) for m in current):
            raise self.error(node, f"{where} is a list mixing modules and other values; keep "
                             "modules in a ModuleList of modules only")
        try:
            return erase_shape(type_of(current, ANY, where))
        except SignatureError as exc:
            raise self.error(node, f"{where} has a type scripted code cannot use: {exc}"
                             ) from None

    # -- module lists -----------------------------------------------------------------------------
    def static_subscript(self: FunctionCompiler, node: ast.Subscript) -> Any:
        """``self.layers[k]`` / ``self.layers[::-1]`` with constant ``k`` and bounds."""
        base = self.resolve_static(node.value)
        if isinstance(base, ObjectSeq):
            return self.object_seq_subscript(base, node)
        if is_function_table(base):  # ACTIVATIONS[name]
            return self.table_item(base, node)
        if base is NOT_STATIC or not is_module_sequence(base):
            return NOT_STATIC
        items = tuple(unwrap_module(m) for m in base)
        spelling = ast.unparse(node.value)
        return self.static_item(items, node, f"'{spelling}' (a module list)",
                                "its modules may have different types", spelling)

    # -- calls ----------------------------------------------------------------------------------
    def call_module(self: FunctionCompiler, owner: Any, name: str, node: ast.Call) -> Any:
        """``self.cell(x)`` (``forward``) or ``self.helper(x)``: compile the method and call it."""
        owner = unwrap_module(owner)
        if self.session is None:
            raise self.error(node, f"the module '{type(owner).__name__}' can only be called "
                             "from a method of a scripted module (script the module)")
        fn = method_function(owner, name)
        if fn is None:
            raise self.error(node, f"module '{type(owner).__name__}' has no method '{name}' "
                             "that scripted code can call")
        return self.call_module_function(owner, fn, node)

    def call_module_function(self: FunctionCompiler, owner: Any, fn: Any, node: ast.Call
                             ) -> Any:
        """Call ``fn``, a method of the module ``owner``'s class or of a base class."""
        fdef = self.session.method(owner, fn, lambda message: self.error(node, message),
                                   self.compile_module_method)
        return self.call_function(fdef, node)


def _is_dynamic(value: Any) -> bool:
    """A plain attribute read at call time (arrays, containers, objects) rather than a constant
    or a compile-time object (modules, functions, classes)."""
    if is_array(value) or isinstance(value, (list, dict)):
        return True
    if is_module(value) or callable(value) or inspect.ismodule(value):
        return False
    return constant_value(value) is NOT_CONSTANT
