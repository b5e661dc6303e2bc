"""Names a function reads from its module or closure: global arrays are inputs, scalars guarded.

A mixin of ``FunctionCompiler``. Plain Python looks a global up when the line runs, so a compiled
function must see what an optimizer step (``W -= lr * g``, ``W[...] = ...``) or a rebinding
(``mod.W = np.ones(3)``) did since it compiled. Two rules do that:

- A global or closure **array** (also one reached through an attribute, ``cfg.W``) is never a
  constant: it becomes a graph input (a ``GlobalRef``) read at every call, after the arguments,
  like a module's parameters (``modules.AttrRef``). Its dtype and shape are part of the
  specialization key, as an argument's are, and its contents are never folded. Differentiation
  treats it as a constant (its gradient is not returned).
- A global or closure **scalar** (number, string, None, or a tuple of those) is compiled in as a
  constant: loops, shapes and dtypes are decided with it. A ``Guard`` records the value; a call
  that finds another value compiles the function again.

Functions, classes and modules a function names are resolved once, when it compiles.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ir.registry import NOT_CONSTANT
from ir.types import ANY, Type, erase_shape
from script.errors import SignatureError
from script.frontend.exprs import NOT_STATIC, constant_value
from script.frontend.modules import Guard
from script.frontend.signature import type_of
from script.module import is_array, is_module

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


@dataclass(frozen=True, eq=False)
class Source:
    """Where a captured name lives: ``read()`` gives what the name holds now."""

    key: tuple[Any, str]
    """(id of the dict, cell or object holding it, or its own source's key; name): one per
    binding."""
    read: Callable[[], Any]
    owner: Any
    """the globals dict, closure cell or object the name is read from."""


@dataclass(frozen=True, eq=False)
class GlobalRef:
    """A global (or closure, or attribute-of-a-global) array read at every call: a graph input
    after the arguments. Has the interface of ``AttrRef`` (``key``, ``name``, ``type``,
    ``read()``, ``parameter``), so callers, modules and freeze pass it on the same way."""

    source: Source
    name: str
    """how the function spells it (``W``, ``cfg.W``)."""
    type: Type
    """its IR type, shapes left unknown (the executor specializes on the actual array)."""

    @property
    def key(self) -> tuple[Any, str]:
        return self.source.key

    @property
    def owner(self) -> Any:
        return self.source.owner

    @property
    def parameter(self) -> None:
        """Not a module parameter: no ``.grad`` to accumulate into."""
        return None

    def read(self) -> Any:
        return self.source.read()


def _global(scope: dict[str, Any], name: str) -> Any:
    """``scope[name]``, failing as Python fails on a global that was deleted."""
    try:
        return scope[name]
    except KeyError:
        raise NameError(f"name '{name}' is not defined") from None


def guards_hold(guards: dict[Any, Guard]) -> bool:
    return all(g.holds() for g in guards.values())


class GlobalsMixin:
    """Captured names of ``FunctionCompiler``."""

    def captured_value(self: FunctionCompiler, node: ast.expr, obj: Any) -> Any:
        """The value of a name or attribute chain that is not a local (``obj`` is what it holds
        now): a graph input for an array, else a constant, guarded when the name can change."""
        source = self.capture_source(node)
        if source is not None and is_array(obj):
            return self.add_attr_input(GlobalRef(source, ast.unparse(node),
                                                 self.global_type(node, obj)))
        value = self.static_value(node, obj)
        if source is not None and constant_value(obj) is not NOT_CONSTANT:
            self.guard_global(source.key, source.read, obj)
        return value

    def capture_source(self: FunctionCompiler, node: ast.expr) -> Source | None:
        """Where ``node`` (a global or closure name, or an attribute of a compile-time object)
        is read from; None for builtins and anything else."""
        if isinstance(node, ast.Name):
            return None if self.frame.find(node.id) is not None else self.name_source(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve_static(node.value)
            if base is NOT_STATIC or is_module(base):
                return None
            attr, outer = node.attr, self.capture_source(node.value)
            if outer is None:
                return Source((id(base), attr), lambda: getattr(base, attr), base)
            # through the name holding the object: rebinding `cfg` is seen too
            return Source((outer.key, attr), lambda: getattr(outer.read(), attr), base)
        return None

    def name_source(self: FunctionCompiler, name: str) -> Source | None:
        code = getattr(self.fn, "__code__", None)
        if code is None:
            return None
        if name in code.co_freevars:
            cell = (self.fn.__closure__ or ())[code.co_freevars.index(name)]
            return Source((id(cell), name), lambda: cell.cell_contents, cell)
        scope = getattr(self.fn, "__globals__", {})
        if name not in scope:
            return None
        return Source((id(scope), name), lambda: _global(scope, name), scope)

    def global_type(self: FunctionCompiler, node: ast.expr, obj: Any) -> Type:
        try:
            return erase_shape(type_of(obj, ANY, f"the global '{ast.unparse(node)}'"))
        except SignatureError as exc:
            raise self.error(node, f"{exc}; scripted code cannot use it") from None

    def guard_global(self: FunctionCompiler, key: Any, read: Callable[[], Any],
                     expected: Any) -> None:
        """Record that the compiled code assumes ``read()`` gives ``expected`` (also in the
        module compilation, which then compiles a new variant when it changes)."""
        self.guards.setdefault(key, Guard(read, expected))
        if self.session is not None:
            self.session.guard(("global", *key), read, expected)
