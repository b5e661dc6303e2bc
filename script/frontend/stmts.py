"""Statements and control flow: assignment, if, return, raise, assert (loops:
``script.frontend.loops``).

A mixin of ``FunctionCompiler``. ``break``, ``continue`` and early ``return`` set hidden boolean
flags; the statements after one that may set a flag run under ``if not flag`` (TorchScript's
exit transform), and a loop's condition becomes ``not break_flag``. ``for`` over a tuple is
unrolled (each element may have its own type); every other ``for`` is a ``prim::Loop`` over an
index.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.core import PARAM
from ir.ops.elementwise import CASTING_ATTR
from ir.registry import constant_of
from ir.types import (
    BOOL,
    FLOAT,
    INT,
    STR,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    is_number,
)
from script.errors import ScriptError
from script.frontend.aliases import sole_made_item
from script.frontend.branches import holds_deferred
from script.frontend.env import (
    RETURN_FLAG,
    RETURN_VALUE,
    Static,
    contains_return,
    end_of,
    loop_exits,
)
from script.frontend.exprs import _OPERATORS, NOT_STATIC
from script.frontend.function_tables import TableChoice, is_function_table
from script.frontend.modules import MISSING, is_module_sequence, read_member, unwrap_module
from script.frontend.none_tests import none_checks
from script.frontend.object_args import ObjectArg, ObjectSeq, is_static_function
from script.frontend.sequences import is_shape, literal_items_read
from script.frontend.whole_writes import made_as_array
from script.module import is_module

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


def _holds_int_lists(t: Any) -> bool:
    """Whether a container of type ``t`` holds lists of ints (shapes, tuples at run time, are
    lists of ints in the IR)."""
    if isinstance(t, ListType):
        return t.element == ListType(INT)
    if isinstance(t, DictType):
        return t.value == ListType(INT)
    return isinstance(t, TupleType) and ListType(INT) in t.elements


def _taken_from_container(value: Any) -> bool:
    """Whether ``value`` (a list of ints) was taken out of a container of int lists that is not
    one of the function's arguments (whose int lists are lists): it may be a shape. Not when it
    was read from a list literal of list literals (``is_shape`` finds one of shapes)."""
    items = literal_items_read(value)
    if items and all(v.node.kind == "prim::ListConstruct" for v in items):
        return False
    for v in value.node.inputs:
        if _holds_int_lists(v.type) and not (
                v.node.kind == "prim::Param" and v.node.owner is not None
                and v.node.owner.owner is None):
            return True
    return False


class StmtMixin:
    """Statement visitors of ``FunctionCompiler``."""

    # -- statement lists and exits -------------------------------------------------------------
    def emit_stmts(self: FunctionCompiler, stmts: list[ast.stmt]) -> None:
        """Emit ``stmts``; after one that may exit, the rest runs only if it did not."""
        for k, stmt in enumerate(stmts):
            saved, self.statement = self.statement, stmt
            try:
                self.visit(stmt)
            finally:
                self.statement = saved
            rest = stmts[k + 1:]
            if self.frame.exited or not rest:
                return
            flags = self.pending_flags(stmt)
            if flags:
                self.guarded(flags, lambda r=rest: self.emit_stmts(r), end_of(stmts[-1]), stmt)
                return

    def pending_flags(self: FunctionCompiler, stmt: ast.stmt) -> list[str]:
        """The exit flags ``stmt`` may have set."""
        flags = []
        if self.loops:
            has_break, has_continue = loop_exits([stmt])
            loop = self.loops[-1]
            if has_break and loop.break_flag:
                flags.append(loop.break_flag)
            if has_continue and loop.continue_flag:
                flags.append(loop.continue_flag)
        if self.return_flags and contains_return([stmt]):
            flags.append(RETURN_FLAG)
        return flags

    def any_flag(self: FunctionCompiler, flags: list[str]) -> Any:
        """``flag1 or flag2 ...`` folded where flags are constants."""
        values = []
        for flag in flags:
            value = self.frame.find(flag)
            if not hasattr(value, "type"):
                continue
            folded = constant_of(value)
            if folded is True:
                return self.const(True)
            if folded is not False:
                values.append(value)
        if not values:
            return self.const(False)
        result = values[0]
        for value in values[1:]:
            result = self.emit_value("tensor::logical_or", [result, value])
        return result

    def guarded(self: FunctionCompiler, flags: list[str], emit_rest: Callable[[], Any],
                after: tuple[int, int], stmt: ast.AST) -> None:
        """Run ``emit_rest`` only when none of ``flags`` is set."""
        saved, self.where = self.where, stmt
        try:
            exited = self.any_flag(flags)
            self.emit_if(exited, self.abandon_path, emit_rest, after, stmt)
        finally:
            self.where = saved

    def abandon_path(self: FunctionCompiler) -> None:
        """The current block is the path of a set exit flag (see ``Frame.left_function``)."""
        self.frame.exited = self.frame.left_function = True

    # -- simple statements ------------------------------------------------------------------------
    def visit_Pass(self: FunctionCompiler, node: ast.Pass) -> None:
        return None

    def visit_With(self: FunctionCompiler, node: ast.With) -> None:
        """``with np.errstate(divide="ignore"):`` runs its body: the settings that only silence
        or report numpy's floating-point warnings, which the compiled code does not give,
        change nothing ('raise' and 'call' would change what runs, and are refused). Other
        context managers are refused."""
        call = node.items[0].context_expr if len(node.items) == 1 else None
        if not (isinstance(call, ast.Call) and node.items[0].optional_vars is None
                and self.resolve_static(call.func) is np.errstate):
            raise self.unsupported(node, "a with statement other than 'with np.errstate(...):'")
        for kw in call.keywords:
            if call.args or not (isinstance(kw.value, ast.Constant) and kw.value.value in (
                    "ignore", "warn", "print", "log")):
                raise self.error(call, "np.errstate() here takes 'ignore', 'warn', 'print' or "
                                 "'log' by keyword (the compiled code raises no "
                                 "FloatingPointError and calls no handler)")
        self.emit_stmts(node.body)

    def visit_Expr(self: FunctionCompiler, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring-like string statement
        if not isinstance(node.value, ast.Call):
            raise self.error(node, "an expression statement must be a call (its value would be "
                             "discarded)")
        if self.fill_call(node.value) or self.in_place_call(node.value):
            return
        result = self.expr(node.value)
        if result.node.kind == "prim::Constant" and not result.uses:
            result.node.erase()  # the None a call like list.append(...) evaluates to

    def visit_Assign(self: FunctionCompiler, node: ast.Assign) -> None:
        try:
            self.assign_statement(node)
        finally:
            self.evaluated_indices = {}  # (an index a reading of the write left unused)

    def assign_statement(self: FunctionCompiler, node: ast.Assign) -> None:
        if len(node.targets) == 1 and self.assign_shape(node.targets[0], node.value):
            return
        if len(node.targets) == 1 and self.assign_masked(node.targets[0], node.value):
            return
        static = self.resolve_static(node.value) if \
            isinstance(node.value, (ast.Name, ast.Attribute, ast.Subscript)) else NOT_STATIC
        if isinstance(node.value, (ast.Dict, ast.Call)):  # {"tanh": np.tanh, ...}
            table = self.function_table_literal(node.value)
            static = NOT_STATIC if table is None else table
        if static is not NOT_STATIC and (is_module(static) or is_module_sequence(static)
                                         or isinstance(static, (ModuleType, ObjectArg, ObjectSeq,
                                                                TableChoice))
                                         or is_static_function(static)
                                         or is_function_table(static)):
            # `cell = self.cell`, `xp = np`, `act = np.tanh`: compile-time names
            value: Any = Static(static)
            if isinstance(static, ObjectSeq) and \
                    any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
                value = tuple(Static(item) for item in self.object_items(static))
        else:
            value = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value, node)

    def assign(self: FunctionCompiler, target: ast.expr, value: Any, node: ast.AST) -> None:
        if isinstance(value, (Static, tuple)):
            self.assign_static(target, value, node)
            return
        if isinstance(target, ast.Name):
            self.bind(target.id, value, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(target.elts, value, target)
        elif isinstance(target, ast.Subscript):
            self.assign_item(target, value)
        elif isinstance(target, ast.Attribute):
            self.assign_attribute(target, value)
        else:
            raise self.unsupported(target, f"assigning to {ast.unparse(target)}")

    def assign_static(self: FunctionCompiler, target: ast.expr, value: Any, node: ast.AST
                      ) -> None:
        """Bind a compile-time object (``Static``) or a compile-time tuple of values and objects
        (an element of ``enumerate(self.layers)``)."""
        if isinstance(target, ast.Name) and isinstance(value, Static):
            self.frame.set(target.id, value)
            return
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, tuple):
            if len(target.elts) != len(value):
                raise self.error(node, f"cannot unpack {len(value)} values into "
                                 f"{len(target.elts)} targets")
            for elt, item in zip(target.elts, value):
                self.assign(elt, item, node)
            return
        if isinstance(value, tuple) and not any(isinstance(v, (Static, tuple)) for v in value):
            self.assign(target, self.emit_value("prim::TupleConstruct", list(value)), node)
            return
        if isinstance(target, ast.Attribute) and isinstance(value, Static) and \
                isinstance(self.resolve_static(target.value), ObjectArg):
            self.assign_attribute(target, value.obj)  # (refused there, saying what it is)
        raise self.error(target, f"cannot assign a module (or a tuple holding one) to "
                         f"{ast.unparse(target)}")

    def assign_attribute(self: FunctionCompiler, target: ast.Attribute, value: Any) -> None:
        owner = self.resolve_static(target.value)
        if owner is NOT_STATIC:
            self.assign_field(target, value)
            return
        if isinstance(owner, ObjectArg):
            self.store_attribute(owner, target, value)
            return
        if not is_module(owner):
            raise self.unsupported(target, "assigning to an attribute of a global object")
        owner = unwrap_module(owner)
        name, cls = target.attr, type(owner).__name__
        if target.attr in owner.__dict__["_parameters"]:
            raise self.error(target, f"cannot rebind the parameter '{name}' of module '{cls}' "
                             "in scripted code: a parameter's identity is fixed (update its "
                             ".data from Python instead)")
        if read_member(owner, name) is MISSING:
            raise self.error(target, f"cannot add the attribute '{name}' to module '{cls}' in "
                             "scripted code (dynamic attributes are not supported; create it "
                             "in __init__)")
        raise self.unsupported(target, f"assigning to the module attribute '{name}' in scripted "
                               "code (module attributes are constants or inputs there)")

    def assign_item(self: FunctionCompiler, target: ast.Subscript, value: Any,
                    frozen: bool = False) -> None:
        if isinstance(target.value, ast.Subscript) and not frozen:
            target, names = self.frozen_target(target)  # a[i][j] = v: i evaluated once
            try:
                return self.assign_item(target, value, True)
            finally:
                for name in names:
                    self.frame.vars.pop(name, None)
        base = self.expr(target.value)
        if isinstance(base.type, DictType):
            self.set_dict_item(base, target.slice, value, target)
            return
        if isinstance(base.type, TensorType):
            if not isinstance(target.value, ast.Name):
                if self.caller_write(target, base, value) or \
                        self.caller_part_write(target, base, value) or \
                        self.write_stored_item(target, base, value):
                    return
                self.write_index_chain(target, value)
                return
            self.write_array_item(target, value)
            return
        if not isinstance(base.type, ListType) or isinstance(target.slice, ast.Slice):
            raise self.unsupported(target, f"item assignment on a value of type {base.type}")
        index = self.index_value(target.slice)
        self.emit("prim::ListSetItem", [base, index, self.list_element(base, value, target)], [])

    def unpack(self: FunctionCompiler, targets: list[ast.expr], value: Any, node: ast.AST
               ) -> None:
        t = value.type
        starred = [k for k, e in enumerate(targets) if isinstance(e, ast.Starred)]
        if isinstance(t, TupleType):
            items = self.tuple_items(value)
        elif isinstance(t, ClassType) and t.named_tuple:
            items = self.named_tuple_items(value)
        elif isinstance(t, (ListType, TensorType)) and not starred:
            if isinstance(t, TensorType):  # `x, y, z = state`: the rows, as numpy iterates
                value = self.emit_value("tensor::unbind", [value, self.const(0)])
            element = value.type.element  # type: ignore[union-attr]
            items = list(self.emit("prim::ListUnpack", [value], [element] * len(targets))
                         .outputs)
        else:
            hint = " (use ops.unbind to split a tensor)" if isinstance(t, TensorType) else ""
            raise self.error(node, f"cannot unpack a value of type {t}{hint}")
        if starred:
            k, after = starred[0], len(targets) - starred[0] - 1
            if len(items) < len(targets) - 1:
                raise self.error(node, f"not enough values to unpack (expected at least "
                                 f"{len(targets) - 1}, got {len(items)})")
            middle = self.emit_value("prim::TupleConstruct", items[k:len(items) - after])
            items = items[:k] + [middle] + items[len(items) - after:]
        if len(items) != len(targets):
            raise self.error(node, f"cannot unpack {len(items)} values into {len(targets)} "
                             "targets")
        for target, item in zip(targets, items):
            self.assign(target.value if isinstance(target, ast.Starred) else target, item, node)

    def visit_AugAssign(self: FunctionCompiler, node: ast.AugAssign) -> None:
        names: list[str] = []
        if isinstance(node.target, ast.Subscript):  # its index evaluated once, as Python's
            target, names = self.frozen_target(node.target)
            node = ast.copy_location(ast.AugAssign(target, node.op, node.value), node)
        try:
            self.augmented(node)
        finally:
            for name in names:
                self.frame.vars.pop(name, None)

    def augmented(self: FunctionCompiler, node: ast.AugAssign) -> None:
        if self.caller_update(node):
            return
        target = node.target
        current = self.expr(_as_load(target))
        rhs = self.expr(node.value)
        if isinstance(current.type, ListType) and isinstance(node.op, ast.Add) and \
                not is_shape(current):
            if current.type == ListType(INT) and _taken_from_container(current):
                raise self.error(node, f"'{ast.unparse(target)} += ...' on a list of ints read "
                                 "from a container: it may hold a shape (a tuple, which += "
                                 "rebinds) or a list (which += extends in place); write "
                                 f"{ast.unparse(target)} = {ast.unparse(target)} + (...) for a "
                                 f"shape or {ast.unparse(target)}.extend(...) for a list")
            self.extend_list(current, rhs, node)  # lists are mutable: += extends in place
            return
        symbol = _OPERATORS.get(type(node.op))
        if symbol is None:
            raise self.unsupported(node, f"the augmented assignment {ast.unparse(node).split()[1]}")
        result = self.binary(symbol, current, rhs, node)
        # an item of a list the caller will see, made here: a 0-d array stays one, as numpy's
        keep_array = current.node.kind in ("prim::DictGetItem", "prim::ListIndex") and \
            isinstance(current.type, TensorType) and sole_made_item(current)
        result = self.keep_dtype_in_place(current, result, node, keep_array)
        if isinstance(target, ast.Name) and isinstance(current.type, TensorType):
            self.rebind_array(target.id, current, result, node)  # numpy: x changes in place
            return
        if current.node.kind in ("prim::DictGetItem", "prim::ListIndex") and \
                isinstance(current.type, TensorType):  # an array a container holds
            self.check_item_update(target, current, node)
        self.check_scalar_attribute_update(target, current, node)
        self.assign(target, result, node)

    def keep_dtype_in_place(self: FunctionCompiler, current: Any, result: Any,
                            node: ast.AugAssign, keep_array: bool = False) -> Any:
        """``x += v`` on an array writes into ``x``: the result keeps ``x``'s dtype (numpy casts
        a float64 result into a float32 array). A 0-d value may be a numpy scalar, which ``+=``
        replaces, so the cast is for arrays of rank >= 1 (an if on ``x.ndim``, decided when the
        function is specialized). An index with an Ellipsis reads an array even where it takes
        every axis (``y[..., 0]`` of a vector is a 0-d view, not a scalar): always cast."""
        if not (isinstance(current.type, TensorType) and isinstance(result.type, TensorType)):
            return result
        if _starts_as_a_number(current):
            return result  # an accumulator (`acc = 0`): its first update makes a new array
        name = f"$in_place_{id(node)}"
        index = node.target.slice if isinstance(node.target, ast.Subscript) else None
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        if any(isinstance(part, ast.Constant) and part.value is Ellipsis for part in parts) or \
                made_as_array(current):  # an array, 0-d or not: numpy writes into it
            is_scalar = self.const(False)
        else:
            is_scalar = self.is_0d(current, node)

        def cast() -> None:
            # numpy raises where x op v broadcasts to another shape than x's: so does this
            # (the cast's check first: numpy raises its TypeError before a shape error)
            dtype = self.emit_value("tensor::dtype", [current])
            cast = self.emit("tensor::astype", [result, dtype],
                             attrs={CASTING_ATTR: "same_kind"}).output
            shape = self.emit_value("tensor::shape", [current])
            self.frame.set(name, self.emit_value("tensor::broadcast_to", [cast, shape]))

        def scalar() -> None:  # (`keep_array`: np.copy of it, a 0-d array as numpy keeps one)
            self.frame.set(name, self.emit_value("tensor::copy", [result])
                           if keep_array else result)

        self.emit_if(is_scalar, scalar, cast, end_of(node), node)
        value = self.frame.find(name)
        del self.frame.vars[name]
        return value

    def visit_AnnAssign(self: FunctionCompiler, node: ast.AnnAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise self.unsupported(node.target, "an annotated assignment to anything but a name")
        declared = self.annotation_type(node.annotation)
        name = node.target.id
        if node.value is None:
            self.declared[name] = declared
            return
        if isinstance(node.value, ast.List) and isinstance(declared, ListType):
            value = self.visit_List(node.value, declared.element)
        elif isinstance(node.value, ast.Dict) and isinstance(declared, DictType):
            value = self.visit_Dict(node.value, declared)
        elif isinstance(node.value, ast.Constant) and node.value.value is None and \
                isinstance(declared, OptionalType):
            value = self.const(None, declared)
        else:
            value = self.expr_expecting(node.value, declared)
        self.declared[name] = declared
        self.bind(name, value, node)

    def visit_Assert(self: FunctionCompiler, node: ast.Assert) -> None:
        cond = self.condition_value(node.test)
        msg = node.msg

        def fails() -> None:  # the message is computed where the assertion fails, as in Python
            message = "AssertionError" if msg is None else \
                msg.value if isinstance(msg, ast.Constant) and isinstance(msg.value, str) else \
                self.exception_message(msg)
            self.raise_exception(message, "AssertionError")

        self.emit_if(cond, lambda: None, fails, end_of(node), node)
        self.refine(none_checks(node.test)[0])

    def raise_exception(self: FunctionCompiler, message: Any, exception: str) -> None:
        text = self.const(message) if isinstance(message, str) else message
        self.emit("prim::RaiseException", [text], [], {"exception": exception})
        self.frame.exited = self.frame.left_function = True

    def visit_Raise(self: FunctionCompiler, node: ast.Raise) -> None:
        if node.exc is None:
            raise self.unsupported(node, "a bare 'raise'")
        exc = node.exc
        args: list[ast.expr] = []
        if isinstance(exc, ast.Call):
            exc, args = exc.func, exc.args
        cls = self.resolve_static(exc)
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            raise self.error(node.exc, "only raising an exception class (with an optional "
                             "string message) is supported")
        message: Any = ""
        if len(args) > 1:
            raise self.unsupported(node.exc, "an exception with several arguments")
        if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            message = args[0].value
        elif args:
            message = self.exception_message(args[0])
        self.raise_exception(message, cls.__name__)

    def exception_message(self: FunctionCompiler, arg: ast.expr) -> Any:
        """A message computed when the exception is raised (``f"got {n}"``, ``str(k)``); one
        the language cannot compute (``"%d" % n``) is its source text, so that the exception
        is still raised, of its class, at its line."""
        before = set(self.graph.walk())
        try:
            value = self.expr(arg)
        except ScriptError:
            value = None
        made = [n for n in self.graph.walk() if n not in before]
        if value is not None and holds_deferred(made):
            value = None  # (a helper's branch that did not compile: not computable either)
            for n in reversed(made):
                if n.owner is not None and not any(v.uses for v in n.outputs):
                    n.erase()
        if value is not None and value.type == STR:
            return value
        if value is not None and value.type in (BOOL, INT, FLOAT):  # raise ValueError(n)
            return self.emit_value("prim::str_op", [self.const("format"), self.const("{}"),
                                                    value])
        return ast.unparse(arg)

    # -- return, break, continue -------------------------------------------------------------
    def visit_Return(self: FunctionCompiler, node: ast.Return) -> None:
        value = self.expr(node.value) if node.value is not None else self.const(None)
        value = self.check_return(value, node)
        self.frame.exited = self.frame.left_function = True
        if not self.return_flags:
            self.direct_return = value
            return
        self.frame.set(RETURN_VALUE, value)
        self.frame.set(RETURN_FLAG, self.const(True))

    def check_return(self: FunctionCompiler, value: Any, node: ast.Return) -> Any:
        """The value returned: ``value``, checked against the annotation; a numpy scalar where
        the annotation names ``bool``, ``int`` or ``float`` is converted to it."""
        expected = self.return_type
        if expected is None or value.type == expected:
            return value
        from ir.types import is_subtype
        if is_subtype(value.type, expected):
            return value
        if _numpy_scalar_of(value.type, expected):
            return self.emit_value(f"prim::{expected.name.capitalize()}", [value])
        name = self.fn.__qualname__
        if getattr(node, "implicit", False):
            raise self.error(self.tree, f"'{name}' is annotated to return {expected}, but not "
                             "every path returns a value")
        raise self.error(node, f"the return value has type {value.type}, but '{name}' is "
                         f"annotated to return {expected}")

    def widen_or_number(self: FunctionCompiler, value: Any, t: Any, message: str,
                        node: ast.AST, widen: Any) -> Any:
        """``value`` put into a container of ``t`` items it is not of: ``widen(error)`` retypes
        the container's literal to hold it (compiling again) or raises ``error``; a numpy scalar
        of the kind of numbers ``t`` names is then that number (``out.append(np.sum(x))`` into
        a ``List[float]``: numpy appends its ``np.float64``)."""
        hint = f" (its number is {t}(v) of a 0-d array v)" if is_number(t) and isinstance(
            value.type, TensorType) else ""
        try:
            widen(self.error(node, message + hint))
        except ScriptError:
            if not _numpy_scalar_of(value.type, t):
                raise
        return self.emit_value(f"prim::{t.name.capitalize()}", [value])

    # -- if -------------------------------------------------------------------------------------
    def visit_If(self: FunctionCompiler, node: ast.If) -> None:
        cond = self.condition_value(node.test)
        refine = none_checks(node.test)
        self.emit_if(cond, lambda: self.emit_stmts(node.body),
                     lambda: self.emit_stmts(node.orelse), end_of(node), node, refine)
        if refine[1] and not node.orelse and _always_exits(node.body) and not self.frame.exited:
            self.refine(refine[1])  # `if x is None: return ...` -> x is not None afterwards

def _always_exits(stmts: list[ast.stmt]) -> bool:
    """True when every path through ``stmts`` ends in return/raise/break/continue."""
    for stmt in stmts:
        if isinstance(stmt, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
            return True
        if isinstance(stmt, ast.If) and _always_exits(stmt.body) and _always_exits(stmt.orelse):
            return True
    return False


def _as_load(target: ast.expr) -> ast.expr:
    """The same target read as an expression (for ``x += y``), positions kept."""
    load = copy.deepcopy(target)
    for node in ast.walk(load):
        if hasattr(node, "ctx"):
            node.ctx = ast.Load()  # type: ignore[attr-defined]
    return load


def _starts_as_a_number(value: Any) -> bool:
    """Whether ``value`` is a loop-carried variable that starts as a number (an accumulator
    ``acc = 0`` that the loop makes a tensor: ``tensor::full[weak_dtype]`` before the loop)."""
    node = value.node
    block = node.owner if node.kind == PARAM else None
    loop = block.owner if block is not None else None
    if loop is None or loop.kind != "prim::Loop" or value.index < 1:
        return False
    start = loop.inputs[value.index + 1]
    return is_number(start.type) or bool(start.node.attrs.get("weak_dtype"))


def _numpy_scalar_of(t: Any, expected: Any) -> bool:
    """Whether ``t`` is a numpy scalar (a 0-d array in the graph) of the kind a ``bool``,
    ``int`` or ``float`` annotation names: what a numpy function of numbers returns
    (``np.maximum(a, b)`` of two bools is a ``np.bool_``) passes as Python's would; a 0-d value
    of a dtype not known yet passes as a float (``def loss(x: Tensor) -> float: return
    np.sum(x ** 2)``)."""
    if not isinstance(t, TensorType) or t.shape != ():
        return False
    if t.dtype is None:  # any real dtype converts to float (as a float32 numpy scalar would)
        return expected == FLOAT
    kinds = {BOOL: "b", INT: "biu", FLOAT: "biuf"}.get(expected)
    return kinds is not None and np.dtype(t.dtype).kind in kinds
