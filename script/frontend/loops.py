"""Loops: ``for`` and ``while`` as ``prim::Loop`` nodes, ``for`` over a tuple unrolled, ``break``
and ``continue``.

A mixin of ``FunctionCompiler`` (statements in general: ``script.frontend.stmts``). ``break`` and
``continue`` set hidden boolean flags (the loop's ``LoopContext``); a loop's condition becomes
``not break_flag``. A value the body assigns is carried by the loop with the type its first
iteration gives it, widened until the body's types settle (``loop_type``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ir.registry import constant_of
from ir.types import (
    ANY,
    INT,
    TENSOR,
    ListType,
    TensorType,
    Type,
    is_number,
    unify,
)
from script.frontend.env import (
    RETURN_FLAG,
    LoopContext,
    MaybeUnbound,
    Static,
    Undefined,
    assigned_names,
    contains_return,
    describe_variable,
    display_name,
    end_of,
    loaded_names,
    loop_exits,
    only_augmented,
    stored_names,
    walk_same_function,
)
from script.frontend.iter import DynamicPlan, StaticPlan, realize
from script.frontend.sequences import is_shape

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


MAX_TRIP_COUNT = 2**63 - 1
"""The trip count of a ``while`` loop (it runs until its condition is false)."""


class LoopMixin:
    """``for``, ``while``, ``break`` and ``continue``."""

    def visit_Break(self: FunctionCompiler, node: ast.Break) -> None:
        self.loop_flag(node, "break")

    def visit_Continue(self: FunctionCompiler, node: ast.Continue) -> None:
        self.loop_flag(node, "continue")

    def loop_flag(self: FunctionCompiler, node: ast.stmt, kind: str) -> None:
        if not self.loops:
            raise self.error(node, f"'{kind}' outside a loop")
        flag = getattr(self.loops[-1], f"{kind}_flag")
        self.frame.set(flag, self.const(True))
        self.frame.exited = True

    # -- loops ------------------------------------------------------------------------------------
    def visit_While(self: FunctionCompiler, node: ast.While) -> None:
        if node.orelse:
            raise self.unsupported(node, "while/else")
        cond = self.condition_value(node.test)
        if constant_of(cond) is False:
            return
        self.emit_loop(node, self.const(MAX_TRIP_COUNT), cond, None,
                       lambda: self.condition_value(node.test), [])

    def visit_For(self: FunctionCompiler, node: ast.For) -> None:
        if node.orelse:
            raise self.unsupported(node, "for/else")
        if node.type_comment:
            raise self.unsupported(node, "a type comment on a for loop")
        spread = self.spread_zip(node)
        if spread is not node:  # `for q, k, v in zip(*heads)`: zip(heads[0], ...) in an if
            self.visit(spread)
            return
        plan = self.iteration_plan(node.iter)
        if isinstance(plan, DynamicPlan) and self.indexes_objects_per_step(node):
            plan = self.unrolled_steps(plan)
        if isinstance(plan, StaticPlan):
            self.emit_unrolled(node, plan)
            return
        self.emit_loop(node, plan.trip, self.const(True),
                       lambda i: self.assign(node.target, plan.element(i), node.target), None,
                       stored_names(node.target),
                       plan.element if plan.arithmetic and isinstance(node.target, ast.Name)
                       else None)

    def loop_context(self: FunctionCompiler, node: ast.For | ast.While) -> Any:
        has_break, has_continue = loop_exits(node.body)
        target = stored_names(node.target) if isinstance(node, ast.For) else []
        exposed = upward_exposed(node.body) - set(target)
        statics = {n: found for n in assigned_names(node.body) + target
                   if isinstance(found := self.frame.find(n), Static)}
        return LoopContext(self.new_flag("break") if has_break else None,
                           self.new_flag("continue") if has_continue else None,
                           frozenset(name for name, _ in loaded_names(node)),
                           exposed | loaded_names_of(getattr(node, "test", None)), statics)

    def emit_loop(self: FunctionCompiler, node: ast.For | ast.While, trip: Any, cond: Any,
                  bind_target: Callable[[Any], None] | None,
                  next_cond: Callable[[], Any] | None, target_names: list[str],
                  element: Callable[[Any], Any] | None = None) -> None:
        """A ``prim::Loop`` carrying the live names the body assigns that exist before it.
        ``element``: the target's value at a step, int arithmetic (a range), for the target
        after the loop: its last value, unbound when the loop ran no iterations."""
        ctx = self.loop_context(node)
        live = self.live_names(end_of(node)) | ctx.reads
        written = {n for n in written_arrays(node.body)
                   if isinstance(getattr(self.frame.find(n), "type", None), TensorType)}
        assigned = list(dict.fromkeys(assigned_names(node.body) + target_names + sorted(written)
                                      + self.loop_attribute_vars(node)))
        in_place = only_augmented(node.body)
        carried = [n for n in assigned if hasattr(self.frame.find(n), "type")
                   and (n.startswith("$") or n in live)
                   and not (n in in_place and isinstance(self.frame.find(n).type, ListType)
                            and not is_shape(self.frame.find(n)))]
        # (``s += ...`` extends a list in place but rebinds a shape, a tuple at run time)
        initials = [self.frame.find(n) for n in carried]
        late = self.bound_in_every_step(node, ctx, assigned, carried)
        carried += late
        initials += [self.uninitialized(ANY) for _ in late]  # (typed by the body's value)
        loop = self.emit("prim::Loop", [trip, cond, *initials], [], nblocks=1)
        types: list[Type] = [v.type for v in initials]  # type: ignore[union-attr]
        self.loops.append(ctx)
        mark = self.attribute_sets_mark()
        self.carried_attributes.append(frozenset(carried))
        try:
            nexts, exit_cond = self.settle_loop(loop, node, ctx, carried, types, bind_target,
                                                next_cond)
        finally:
            self.loops.pop()
            self.carried_attributes.pop()
        self.lost_in_loop(self.attribute_sets_since(mark) - set(carried))
        block = loop.blocks[0]
        block.add_return(exit_cond)
        for k, (name, value) in enumerate(zip(carried, nexts)):
            t = block.params[k + 1].type
            block.add_return(self.coerce(value, t, block))
            initial = loop.inputs[k + 2]
            if initial.node.kind == "prim::Uninitialized" and initial.type != t:
                with self.graph.inserting_before(loop):
                    loop.set_input(k + 2, self.uninitialized(t))
            elif is_number(initial.type) and isinstance(t, TensorType):
                with self.graph.inserting_before(loop):
                    loop.set_input(k + 2, self.number_tensor(initial, weak=True))
            self.frame.set(name, loop.add_output(t, _hint(name)))
        if written:
            self.check_loop_writes(loop, node, carried, written)
        if late:
            ran = self.binary(">", trip, self.const(0), node)
            for name in late:
                self.frame.set(name, MaybeUnbound(self.frame.find(name), ran))
        if element is not None and not ctx.break_flag and target_names[0] not in carried \
                and self.frame.find(target_names[0]) is None \
                and _bound_once(self.tree, target_names[0]):
            last = element(self.binary("-", trip, self.const(1), node))
            bound = self.binary(">", trip, self.const(0), node)
            self.frame.set(target_names[0], MaybeUnbound(last, bound))
        for name in assigned:
            if name not in carried and self.frame.find(name) is None:
                self.frame.set(name, Undefined(
                    f"'{name}' is only assigned inside the loop and is undefined after it "
                    "when the loop runs no iterations; assign it before the loop"))
        self.store_after_loop(frozenset(carried))

    def bound_in_every_step(self: FunctionCompiler, node: ast.For | ast.While, ctx: Any,
                            assigned: list[str], carried: list[str]) -> list[str]:
        """The names a ``for`` loop's body binds in every step (a plain assignment at its top
        level, no ``break`` or ``continue``), bound nowhere else and read in the code after the
        loop but not in the body before that assignment: carried from an uninitialized value,
        after the loop they hold the last step's value, unbound when it ran no iterations, as
        in Python (``for t in ...: g = step(...)`` then ``g["da_prev"]``)."""
        if not isinstance(node, ast.For) or ctx.break_flag or ctx.continue_flag:
            return []
        end = end_of(node)  # (read in the code after it; not in an enclosing loop's next step,
        # where this loop binds the name again before reading it)
        after = {name for name, pos in self.reads if pos >= end}
        every = _bound_at_top(node.body)
        return [n for n in assigned if n in every and n in after and n not in ctx.exposed
                and n not in carried and self.frame.find(n) is None
                and _bound_once(self.tree, n)]

    def settle_loop(self: FunctionCompiler, loop: Any, node: ast.AST, ctx: Any,
                    carried: list[str], types: list[Type], bind_target: Any, next_cond: Any
                    ) -> tuple[list[Any], Any]:
        """Emit the body until the carried types are stable (a pass may widen them)."""
        from ir.core import Block
        start = passed = len(self.deferred_errors)
        for _ in range(4):
            block = loop.blocks[0]
            narrowed = self.narrowed_fields()
            _, (nexts, exit_cond) = self.emit_in_block(
                block, lambda b=block: self.loop_body(b, node, ctx, carried, types, bind_target,
                                                      next_cond))
            widened = [self.loop_type(name, t, value, node)
                       for name, t, value in zip(carried, types, nexts)]
            # a field the body assigns is no longer narrowed in the next iteration either
            if widened == types and self.narrowed_fields() == narrowed:
                self.check_discarded_errors(start, passed)
                return nexts, exit_cond
            passed = len(self.deferred_errors)
            types = widened
            block.erase_contents()
            loop.blocks[0] = Block(self.graph, owner=loop)
        raise self.error(node, "the types of the variables this loop changes do not settle")

    def check_discarded_errors(self: FunctionCompiler, start: int, passed: int) -> None:
        """The branches deferred (``branches.defer_branch``) by the passes over a loop's body
        that the last pass replaced (``deferred_errors[start:passed]``, compiled with the types
        of the first iteration) still raise in the last: one that compiled there (the types
        widened) is the error it was, raised now, as the first iteration would fail."""
        final = self.deferred_errors[passed:]
        kept = {e.fields for e in final}
        for error in self.deferred_errors[start:passed]:
            if error.fields not in kept:
                raise error
        self.deferred_errors[start:] = final

    def loop_body(self: FunctionCompiler, block: Any, node: Any, ctx: Any, carried: list[str],
                  types: list[Type], bind_target: Any, next_cond: Any) -> tuple[list[Any], Any]:
        index = block.add_param(INT, "i")
        self.frame.loop_body = True
        for name, t in zip(carried, types):
            self.frame.set(name, block.add_param(t, _hint(name)))
        for flag in (ctx.break_flag, ctx.continue_flag):
            if flag:
                self.frame.set(flag, self.const(False))
        if bind_target is not None:
            bind_target(index)
        self.emit_stmts(node.body)
        for name, before in ctx.statics.items():  # (not carried: the next step must see it)
            after = self.frame.find(name)
            if not (isinstance(after, Static) and after.obj is before.obj):
                raise self.error(node, f"'{name}' refers to another object after an iteration "
                                 "of the loop (a function, module or other compile-time object "
                                 "must be the same in every iteration): assign it before the "
                                 "loop, or give each object its own name")
        exits = [f for f in (ctx.break_flag,) if f]
        if self.return_flags and contains_return(node.body):
            exits.append(RETURN_FLAG)
        stay = self.negate(self.any_flag(exits)) if exits else self.const(True)
        if next_cond is not None and exits:
            mark = self.attribute_sets_mark()
            stay = self.short_circuit(stay, True, next_cond, node)
            if self.attribute_sets_since(mark):  # (assigned on the path not breaking only)
                raise self.error(getattr(node, "test", node), "a method this condition calls "
                                 "assigns an attribute, in a loop that can leave by break or "
                                 "return: the compiled code cannot follow it; call the method "
                                 "in the loop's body")
        elif next_cond is not None:
            stay = next_cond()
        return [self.frame.find(n) for n in carried], stay

    def loop_type(self: FunctionCompiler, name: str, before: Type, value: Any, node: ast.AST
                  ) -> Type:
        if value.node.kind == "prim::Uninitialized":
            return before
        if before == ANY:
            return value.type
        if is_number(before) and isinstance(value.type, TensorType) and \
                name not in self.declared:
            return TENSOR  # an accumulator `loss = 0` that `loss += x.sum()` makes a tensor
        joined = unify(before, value.type)
        if joined is None:
            raise self.error(node, f"{describe_variable(name)} has type {before} before the "
                             f"loop and type {value.type} after an iteration")
        return self.declared.get(name, joined)

    def emit_unrolled(self: FunctionCompiler, node: ast.For, plan: StaticPlan) -> None:
        """``for x in <tuple>``: the body once per element, each with its own types."""
        ctx = self.loop_context(node)
        self.loops.append(ctx)
        try:
            if ctx.break_flag:
                self.frame.set(ctx.break_flag, self.const(False))
            self.unroll_from(node, plan, 0, ctx)
        finally:
            self.loops.pop()

    def unroll_from(self: FunctionCompiler, node: ast.For, plan: StaticPlan, k: int, ctx: Any
                    ) -> None:
        """Iteration ``k`` of an unrolled loop and, after it, the rest; when the plan has a
        run-time ``limit``, all of it only while ``k < limit``."""
        if k == len(plan.items):
            return
        if plan.limit is None:
            self.unrolled_step(node, plan, k, ctx)
            return
        runs = self.binary("<", self.const(k), plan.limit, node)
        self.emit_if(runs, lambda: self.unrolled_step(node, plan, k, ctx), lambda: None,
                     end_of(node), node)

    def unrolled_step(self: FunctionCompiler, node: ast.For, plan: StaticPlan, k: int, ctx: Any
                      ) -> None:
        outer = self.frame
        self.frame = outer.child()
        try:
            if ctx.continue_flag:
                self.frame.set(ctx.continue_flag, self.const(False))
            self.assign(node.target, realize(plan.items[k]), node.target)
            self.emit_stmts(node.body)
        finally:
            inner, self.frame = self.frame, outer
        outer.vars.update(inner.vars)
        outer.refined.update(inner.refined)
        outer.fields.update(inner.fields)
        flags = [f for f in (ctx.break_flag,) if f]
        if self.return_flags and contains_return(node.body):
            flags.append(RETURN_FLAG)
        if inner.left_function and not flags:
            outer.exited = outer.left_function = True  # the body always raises
            return
        rest = lambda: self.unroll_from(node, plan, k + 1, ctx)  # noqa: E731
        if flags:
            self.guarded(flags, rest, end_of(node), node)
        else:
            rest()


def loaded_names_of(node: ast.AST | None) -> frozenset[str]:
    """The names read in ``node`` (a while loop's condition is read before every step)."""
    return frozenset(name for name, _ in loaded_names(node)) if node is not None else frozenset()


def _hint(name: str) -> str:
    return display_name(name)


def written_arrays(stmts: list[ast.stmt]) -> set[str]:
    """Names written into in place in ``stmts``: ``x[...] = v``, ``x[...] += v``, ``x.fill(v)``,
    ``x[...].fill(v)``, ``out=x`` (``out=x[t]``), ``np.add.at(x, ...)``, ``np.copyto(x, v)``."""
    found = set()
    for node in walk_same_function(stmts):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = [t for target in node.targets for t in ast.walk(target)]
        elif isinstance(node, ast.AugAssign):  # a[t][j] += v writes into a, as a[t, j] += v
            targets = [node.target]
            while isinstance(targets[-1], ast.Subscript):
                targets.append(targets[-1].value)
        elif isinstance(node, ast.Call):
            bases = [kw.value for kw in node.keywords if kw.arg == "out"]  # np.tanh(z, out=z)
            if isinstance(node.func, ast.Attribute) and node.func.attr == "fill":
                bases.append(node.func.value)
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("at", "copyto") \
                    and node.args:
                bases.append(node.args[0])  # np.add.at(dW, x, dout), np.copyto(z, v)
            for base in bases:
                while isinstance(base, ast.Subscript):
                    base = base.value
                if isinstance(base, ast.Name):
                    found.add(base.id)
        for t in targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                found.add(t.value.id)
    return found


def _bound_at_top(body: list[ast.stmt]) -> set[str]:
    """The names a plain assignment at the top level of ``body`` binds."""
    found: set[str] = set()
    for stmt in body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else []
        for target in targets:
            found.update(n.id for n in ast.walk(target)
                         if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return found


def _bound_once(function: ast.AST, name: str) -> bool:
    """Whether ``name`` is bound in one place only in ``function`` (the ``for`` target whose
    value after its loop ``MaybeUnbound`` holds: no other binding can meet it)."""
    stores = [n for n in walk_same_function(function.body)  # type: ignore[attr-defined]
              if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)]
    return len(stores) == 1


def upward_exposed(stmts: list[ast.stmt]) -> frozenset[str]:
    """Names a loop body may read before assigning them (so a value from the previous step):
    every name read, but those a plain assignment binds before their first read, at the top
    level or in both branches of an ``if`` (or, for reads in a nested loop's body, in that
    body)."""
    exposed: set[str] = set()
    _bind_in_order(stmts, set(), exposed)
    return frozenset(exposed)


def _bind_in_order(stmts: list[ast.stmt], bound: set[str], exposed: set[str]) -> set[str]:
    """Add to ``exposed`` the names ``stmts`` read before binding them (``bound``: bound
    already); the names bound after them, whichever way they run."""
    bound = set(bound)
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            exposed |= {name for name, _ in loaded_names(stmt.test) if name not in bound}
            then = _bind_in_order(stmt.body, bound, exposed)
            other = _bind_in_order(stmt.orelse, bound, exposed)
            bound |= then & other
            continue
        if isinstance(stmt, (ast.For, ast.While)):  # a nested loop binds nothing for sure
            head = stmt.iter if isinstance(stmt, ast.For) else stmt.test
            exposed |= {name for name, _ in loaded_names(head) if name not in bound}
            targets = {n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)} \
                if isinstance(stmt, ast.For) else set()
            _bind_in_order(stmt.body, bound | targets, exposed)
            _bind_in_order(stmt.orelse, bound, exposed)
            continue
        exposed |= {name for name, _ in loaded_names(stmt) if name not in bound}
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            bound |= {n.id for t in targets for n in ast.walk(t)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                      and _binds_name(t, n)}
    return bound


def _binds_name(target: ast.expr, name: ast.Name) -> bool:
    """Whether ``name`` in ``target`` is bound as a whole (not the base of ``x[i] = ``)."""
    return isinstance(target, (ast.Name, ast.Tuple, ast.List, ast.Starred))

