"""Branches (a ``FunctionCompiler`` mixin): ``if`` statements and conditional expressions as
``prim::If``, and branches that do not compile.

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

from ir.core import Graph, Node
from ir.ops.prim import DEFERRED_ERROR
from ir.registry import constant_of
from ir.types import TensorType, is_number, unify
from script.errors import ScriptError
from script.frontend.exprs import none_checks

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


__all__ = ["BranchMixin", "holds_deferred"]
