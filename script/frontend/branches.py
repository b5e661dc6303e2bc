"""Branches (a ``FunctionCompiler`` mixin): ``if`` statements and conditional expressions as
``prim::If``, where their branches meet (one output per name either branch bound, a number
beside an array made a 0-d array), and branches that do not compile.

A branch that does not compile (a method an array lacks, a function the language does not
know), under a condition known only when the code runs, raises its ``ScriptError`` instead
(``defer_branch``): a ``prim::RaiseException`` holding the error (``DEFERRED_ERROR``), which
code generation raises where a specialization keeps the branch. A call that decides the
condition drops it: ``saver is not None`` where no saver is passed, a helper's ``if
return_all:`` left at its default False, ``x.ndim == 1`` of a 2-D array, a dict of functions
indexed with a known key (``function_tables``). Where neither branch compiles the first
one's error is raised, and an error later in the function is the first deferred one
(``FunctionCompiler.compile``): it came first in the source.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ir.core import Block, Graph, Node, Value
from ir.kinds import UNINITIALIZED
from ir.ops.prim import DEFERRED_ERROR
from ir.registry import constant_of
from ir.types import TensorType, Type, is_number, unify
from passes.weak_numbers import JOINED_NUMBER
from script.errors import ScriptError
from script.frontend.env import Frame, Static, Undefined, display_name
from script.frontend.literal_types import is_tuple_of_numbers_for
from script.frontend.none_tests import none_checks

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


class BranchMixin:
    """``if`` statements and conditional expressions of ``FunctionCompiler``."""

    def emit_if(self: FunctionCompiler, cond: Any, then_fn: Callable[[], Any],
                else_fn: Callable[[], Any], after: tuple[int, int], stmt: ast.AST,
                refine: tuple[list[str], list[str]] = ([], [])) -> None:
        folded = constant_of(cond)
        if isinstance(folded, bool):  # a static condition: only the taken branch exists
            self.refine(refine[0] if folded else refine[1])
            (then_fn if folded else else_fn)()
            return
        node = self.emit("prim::If", [cond], [], nblocks=2)
        frames = []
        failed: ScriptError | None = None
        for block, fn, names in zip(node.blocks, (then_fn, else_fn), refine):
            try:
                frame, _ = self.emit_in_block(block, lambda f=fn, n=names: (self.refine(n), f()))
            except ScriptError as error:
                if failed is not None:
                    raise failed from None  # neither branch compiles: the first one's error
                failed = error
                frame = self.defer_branch(block, error)
            frames.append(frame)
        self.merge_branches(node, (frames[0], frames[1]), after, stmt)

    def defer_branch(self: FunctionCompiler, block: Any, error: ScriptError,
                     value_type: Any = None) -> Any:
        """A branch that does not compile, for a condition known only when the code runs: it
        raises ``error`` instead, which code generation raises where a specialization keeps the
        branch (``script.runtime.codegen``). A call can decide the condition (``saver is not
        None`` where no saver is passed, a helper's ``if return_all:`` left at its default
        False), and then the branch is gone. An error later in the function is this one's
        (``compile_once``): it came first in the source. Returns the branch's frame, or for a
        conditional expression's branch (``value_type``) its value, never computed (see the
        module docstring)."""
        for done in reversed(block.nodes):
            done.erase()
        self.deferred_errors.append(error)

        def raises() -> Any:
            self.emit("prim::RaiseException", [self.const(str(error))], [],
                      {"exception": "ScriptError", DEFERRED_ERROR: error.fields})
            if value_type is not None:
                return self.uninitialized(value_type)
            self.frame.exited = self.frame.left_function = True
            return None

        frame, value = self.emit_in_block(block, raises)
        return frame if value_type is None else value

    def visit_IfExp(self: FunctionCompiler, node: ast.IfExp) -> Any:
        cond = self.condition_value(node.test)
        folded = constant_of(cond)
        if isinstance(folded, bool):
            return self.expr(node.body if folded else node.orelse)
        if_node = self.emit("prim::If", [cond], [], nblocks=2)
        true_names, false_names = none_checks(node.test)
        values: list[Any] = []
        failed: ScriptError | None = None
        for block, branch, refine in zip(if_node.blocks, (node.body, node.orelse),
                                         (true_names, false_names)):
            try:
                _, value = self.emit_in_block(block, lambda b=branch, r=refine: (
                    self.refine(r), self.expr(b))[1])
            except ScriptError as error:  # see defer_branch
                if failed is not None:
                    raise failed from None
                failed, value = error, None
            values.append(value)
        if failed is not None:
            k = values.index(None)
            values[k] = self.defer_branch(if_node.blocks[k], failed, values[1 - k].type)
        t = unify(values[0].type, values[1].type)
        if t is None and {is_number(v.type) for v in values} == {True, False} and \
                all(is_number(v.type) or isinstance(v.type, TensorType) for v in values):
            t = TensorType()  # `x.sum() if n else 0.0`: the number a 0-d tensor
        if t is None:
            raise self.error(node, f"the branches of the conditional expression have types "
                             f"{values[0].type} and {values[1].type}")
        for block, value in zip(if_node.blocks, values):
            block.add_return(self.coerce(value, t, block))
        if_node.add_output(t)
        return if_node.output


    # -- where the branches meet --------------------------------------------------------------
    def coerce(self: FunctionCompiler, value: Value, type: Type, block: Block) -> Value:
        """``value`` itself, or for a placeholder of another type a new placeholder at the end of
        ``block`` typed ``type``."""
        if is_number(value.type) and isinstance(type, TensorType):
            with self.graph.inserting_before(block):  # (a constant: passes.weak_numbers)
                made = self.number_tensor(value)
                if value.node.kind == "prim::Constant":
                    made.node.attrs[JOINED_NUMBER] = True
                return made
        if is_tuple_of_numbers_for(value, type) and not is_placeholder(value):
            with self.graph.inserting_before(block):  # `return 0.0, g` beside a 0-d array
                return self.number_items_as_tensors(value, type)
        if not is_placeholder(value) or value.type == type:
            return value
        with self.graph.inserting_before(block):
            return self.uninitialized(type)

    def merge_branches(self: FunctionCompiler, node: Node, frames: tuple[Frame, Frame],
                       after: tuple[int, int], stmt: ast.AST) -> None:
        """Give the If ``node`` one output per live name either branch (re)defined.

        A name both branches bind to one value made before the If needs no output, but it is
        still rebound to that value: the branches assigned it, whatever it held before."""
        true_frame, false_frame = frames
        live = self.live_names(after)
        names = list(dict.fromkeys([*true_frame.vars, *false_frame.vars]))
        for name in names:
            if not name.startswith("$") and name not in live:
                continue
            outer = self.frame.find(name)
            # a branch that only tested the name (`if h is None: h = ...` has an else where
            # h is not None) gives its narrowed value
            values = [frame.vars.get(name, frame.refined.get(name, outer))
                      for frame in (true_frame, false_frame)]
            for k, frame in enumerate((true_frame, false_frame)):
                if frame.left_function and not isinstance(values[k], Value) and \
                        isinstance(values[1 - k], Value):
                    other = values[1 - k]
                    assert isinstance(other, Value)
                    values[k] = self.placeholder_in(node.blocks[k], other.type)
            if values[0] is values[1]:
                if values[0] is not outer:
                    self.frame.set(name, values[0])
                continue
            if isinstance(values[0], Static) or isinstance(values[1], Static):
                self.merge_static(name, values)
                continue
            missing = [b for b, v in zip(("true", "false"), values) if not isinstance(v, Value)]
            if missing:
                self.frame.set(name, Undefined(
                    f"'{display_name(name)}' is not defined in the {missing[0]} branch"
                    + (" (the object had no such attribute when the function was called)"
                       if name.startswith("$@") else "")))
                continue
            self.add_if_output(node, name, values, stmt)  # type: ignore[arg-type]
        if true_frame.exited and false_frame.exited:
            self.frame.exited = True
        if true_frame.left_function and false_frame.left_function:
            self.frame.left_function = True

    def merge_static(self: FunctionCompiler, name: str, values: list[Any]) -> None:
        same = isinstance(values[0], Static) and isinstance(values[1], Static) and \
            values[0].obj is values[1].obj
        self.frame.set(name, values[0] if same else Undefined(
            f"'{name}' refers to different objects in the two branches of an if (a module or "
            "other compile-time object must be the same on every path)"))

    def add_if_output(self: FunctionCompiler, node: Node, name: str, values: list[Value],
                      stmt: ast.AST) -> None:
        t = self.join_type(name, values[0], values[1], stmt,
                           ("in the true branch", "in the false branch"))
        out = node.add_output(t, display_name(name))
        for block, value in zip(node.blocks, values):
            block.add_return(self.coerce(value, t, block))
        self.frame.set(name, out)

    def placeholder_in(self: FunctionCompiler, block: Block, type: Type) -> Value:
        with self.graph.inserting_before(block):
            return self.uninitialized(type)


def is_placeholder(value: Value) -> bool:
    """A ``prim::Uninitialized``: stands for a value no path will read."""
    return value.node.kind == UNINITIALIZED


def holds_deferred(nodes: Iterable[Node]) -> bool:
    """Whether one of ``nodes``, or a graph one calls (``prim::CallFunction``'s ``Subgraph``),
    holds a deferred error."""
    for node in nodes:
        if DEFERRED_ERROR in node.attrs:
            return True
        sub = node.attrs.get("Subgraph")
        if isinstance(sub, Graph) and holds_deferred(sub.walk()):
            return True
    return False


__all__ = ["BranchMixin", "holds_deferred", "is_placeholder"]
