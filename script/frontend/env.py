"""Scopes and the syntactic facts SSA construction needs.

A ``Frame`` maps Python names to IR values for one block; nested blocks get child frames, so an
If or a loop body can see the names defined before it and the frontend can see afterwards which
names a block (re)defined. The module-level functions answer questions about the ``ast`` alone:
which names a loop body assigns, whether a statement can ``return``/``break``/``continue``,
which names are read after a point (a cheap superset of liveness).
"""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ir.core import Value

RETURN_FLAG = "$did_return"
"""The hidden variable that is True once a ``return`` ran (early returns become flags)."""
RETURN_VALUE = "$retval"
"""The hidden variable holding the value an early ``return`` produced."""
BREAK_FLAG = "$break"
CONTINUE_FLAG = "$continue"


@dataclass(frozen=True, slots=True)
class Undefined:
    """A name that is bound on some paths only; reading it is an error with this message."""

    message: str


@dataclass(frozen=True, slots=True, eq=False)
class MaybeUnbound:
    """A name bound when ``bound`` (a bool value) is true at run time: a ``for`` loop's target
    after the loop (``for t in range(n)`` leaves ``t = n - 1``, and no ``t`` when n is 0).
    Reading it checks ``bound`` and raises ``UnboundLocalError`` as Python does."""

    value: Value
    bound: Value


@dataclass(frozen=True, slots=True, eq=False)
class Static:
    """A name bound to a compile-time Python object rather than an IR value: a submodule while a
    loop over a ``ModuleList`` is unrolled (``for layer in self.layers``), or after
    ``cell = self.cell``."""

    obj: object


@dataclass(eq=False)
class Frame:
    """The names one block defines, with a link to the enclosing block's frame."""

    parent: Frame | None = None
    vars: dict[str, Value | Undefined | Static] = field(default_factory=dict)
    """names (re)defined in this block, in definition order."""
    refined: dict[str, Value] = field(default_factory=dict)
    """Optional values known not to be None in this block (``if x is not None:``)."""
    fields: dict[str, tuple[Value, Value]] = field(default_factory=dict)
    """``"obj.name"`` -> (the object, its Optional field unwrapped) for a field known not to be
    None in this block (``if self.b is not None:``); see ``ObjectMixin.refine_field``."""
    exited: bool = False
    """the block ended in return/break/continue/raise: nothing after it runs."""
    left_function: bool = False
    """no later code reads the names this block lacks: it ended in return/raise, or it is the
    path of an exit flag (the code after it is guarded by the same flag). A name the other
    branch of an If defines may then be a placeholder here. Not so after a plain break or
    continue: the loop still carries the values of names defined before it."""
    loop_body: bool = False
    """the frame of a loop body: a name bound outside it that the body rebinds is lost after
    the loop unless the loop carries it."""

    def find(self, name: str) -> Value | Undefined | Static | None:
        """The innermost binding of ``name`` (refinements included), or None."""
        frame: Frame | None = self
        while frame is not None:
            if name in frame.refined:
                return frame.refined[name]
            if name in frame.vars:
                return frame.vars[name]
            frame = frame.parent
        return None

    def set(self, name: str, value: Value | Undefined | Static) -> None:
        """Bind ``name`` in this block (dropping a refinement of the old value)."""
        self.refined.pop(name, None)
        self.vars[name] = value

    def child(self) -> Frame:
        return Frame(parent=self)


def describe_object(obj: Any) -> str:
    """What a compile-time Python object is, for messages."""
    if isinstance(obj, types.ModuleType):
        return f"module '{obj.__name__}'"
    if callable(obj):
        return f"function '{getattr(obj, '__qualname__', obj)}'"
    return f"a {type(obj).__name__}"


# -- syntactic facts -----------------------------------------------------------------------------
def walk_same_function(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every ast node under ``nodes``, not entering nested functions, lambdas or classes."""
    stack = list(nodes)[::-1]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def walk_same_loop(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Like ``walk_same_function`` but not entering nested loops' bodies (their ``break`` and
    ``continue`` belong to them)."""
    stack = list(nodes)[::-1]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.For, ast.While)):
            stack.extend(reversed(node.orelse))
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def stored_names(target: ast.AST) -> list[str]:
    """The names an assignment target binds (``a, (b, *c)`` -> a, b, c)."""
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def assigned_names(stmts: Iterable[ast.stmt]) -> list[str]:
    """Names assigned anywhere in ``stmts`` (in first-assignment order), hidden flags included:
    a ``return`` inside assigns the return flag and value."""
    names: dict[str, None] = {}
    for node in walk_same_function(stmts):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = None
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names[node.id] = None
        elif isinstance(node, ast.Return):
            names[RETURN_FLAG] = None
            names[RETURN_VALUE] = None
    return list(names)


def only_augmented(stmts: Iterable[ast.stmt]) -> set[str]:
    """Names whose only assignments in ``stmts`` are augmented (``l += [x]``): for a list that
    is an in-place extend, so the name keeps its value."""
    plain, augmented, targets = set(), set(), set()
    for node in walk_same_function(stmts):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            augmented.add(node.target.id)
            targets.add(id(node.target))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and \
                id(node) not in targets:
            plain.add(node.id)
    return augmented - plain


def contains_return(stmts: Iterable[ast.AST]) -> bool:
    return any(isinstance(n, ast.Return) for n in walk_same_function(stmts))


def loop_exits(stmts: Iterable[ast.AST]) -> tuple[bool, bool]:
    """(has break, has continue) belonging to the loop whose body is ``stmts``."""
    kinds = {type(n) for n in walk_same_loop(stmts)}
    return ast.Break in kinds, ast.Continue in kinds


def exit_flags(stmt: ast.stmt, in_loop: bool) -> list[str]:
    """The hidden flags ``stmt`` may set: the statements after it run only when none is set."""
    flags = []
    if in_loop:
        has_break, has_continue = loop_exits([stmt])
        flags += [BREAK_FLAG] * has_break + [CONTINUE_FLAG] * has_continue
    if contains_return([stmt]):
        flags.append(RETURN_FLAG)
    return flags


def always_returns(stmts: list[ast.stmt]) -> bool:
    """True when every path through ``stmts`` ends in ``return`` or ``raise``."""
    for stmt in stmts:
        if isinstance(stmt, (ast.Return, ast.Raise)):
            return True
        if isinstance(stmt, ast.If) and always_returns(stmt.body) and always_returns(stmt.orelse):
            return True
    return False


def loaded_names(node: ast.AST) -> list[tuple[str, tuple[int, int]]]:
    """(name, position) of every read of a name under ``node``; ``x += 1`` reads ``x`` too."""
    reads = []
    for n in walk_same_function([node]):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            reads.append((n.id, (n.lineno, n.col_offset)))
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            reads.append((n.target.id, (n.target.lineno, n.target.col_offset)))
    return reads


Position = tuple[int, int]


def dominating_stores(body: list[ast.stmt]) -> dict[tuple[str, Position], list[Position]]:
    """For each read ``(name, position)`` under ``body``: where the plain assignments of
    ``name`` that every path to the read passes start (``h = ...`` as an earlier statement of a
    block holding the read: structured code enters a block at its top only). A write before
    such an assignment cannot be seen by the read through the old binding."""
    found: dict[tuple[str, Position], list[Position]] = {}

    def block(stmts: list[ast.stmt], before: dict[str, list[Position]]) -> None:
        stores = {name: list(at) for name, at in before.items()}
        for stmt in stmts:
            for read in loaded_names(stmt):
                found.setdefault(read, []).extend(stores.get(read[0], ()))
            for part in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, part, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt) and \
                        not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                    block(inner, stores)
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, (ast.Name, ast.Tuple, ast.List)):
                        for name in stored_names(target):
                            stores.setdefault(name, []).append((stmt.lineno, stmt.col_offset))

    block(body, {})
    return found


def at_position(tree: ast.AST, at: ast.AST) -> ast.AST:
    """Every node of ``tree`` (code the compiler writes for a construct) at ``at``'s source
    position, so that errors point at the user's code."""
    for sub in ast.walk(tree):
        if "lineno" in sub._attributes:
            ast.copy_location(sub, at)
    return tree


NOT_STATIC: Any = type("NotStatic", (), {"__repr__": lambda self: "<not static>"})()
"""``resolve_static`` of an expression that is not a compile-time Python object."""


def end_of(stmt: ast.AST) -> tuple[int, int]:
    return (stmt.end_lineno or stmt.lineno, stmt.end_col_offset or 0)  # type: ignore[attr-defined]


@dataclass
class LoopContext:
    """The flags a loop body's ``break`` / ``continue`` set."""

    break_flag: str | None
    continue_flag: str | None
    reads: frozenset[str]
    """names read anywhere in the loop: they are live throughout its body."""
    exposed: frozenset[str] = frozenset()
    """names the body may read before assigning them: they may be read after a point of the
    body in the next step (``writes.upward_exposed``)."""
    statics: dict[str, Any] = field(default_factory=dict)
    """names the body assigns that hold a compile-time object (``Static``) before the loop:
    every iteration must leave the same object there (``FunctionCompiler.loop_body``)."""


def display_name(name: str) -> str:
    """The value name a hidden variable prints with (``$did_return`` -> ``did_return``; an
    assigned attribute's, ``$@0 self.cache``, as the attribute)."""
    if name.startswith("$@"):
        return name.split(" ", 1)[1]
    return name.lstrip("$").rstrip("0123456789") if name.startswith("$") else name


def describe_variable(name: str) -> str:
    if name == RETURN_VALUE:
        return "the return value"
    if name.startswith("$@"):
        return f"attribute '{display_name(name)}'"
    return f"variable '{display_name(name)}'"


def is_function_value(obj: Any) -> bool:
    """A function passed as a value: a Python or numpy function, a numpy ufunc, a builtin or a
    scripted function (not a class, module or object)."""
    if isinstance(obj, type) or not callable(obj):
        return False
    if inspect.isfunction(obj) or inspect.isbuiltin(obj) or isinstance(obj, np.ufunc):
        return True
    return type(obj).__name__ == "_ArrayFunctionDispatcher" or hasattr(
        obj, "__rnnscript_function__") or inspect.isfunction(getattr(obj, "python_fn", None))
