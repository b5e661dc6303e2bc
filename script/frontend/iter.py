"""What a ``for`` loop iterates over: ``range``, ``enumerate``, ``zip``, ``ops.unbind``, lists,
tuples and tensors.

A mixin of ``FunctionCompiler``. A plan is either static (a tuple: the loop is unrolled, each
element with its own type) or dynamic (a trip count computed before the loop and a function that
emits the i-th element inside the loop body).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.registry import constant_of
from ir.types import (
    BOOL,
    INT,
    STR,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
)
from script.errors import ScriptError
from script.frontend.env import Static, assigned_names, end_of, stored_names, walk_same_function
from script.frontend.exprs import NOT_STATIC
from script.frontend.modules import is_module_sequence, read_member, unwrap_module
from script.frontend.object_args import ObjectArg, ObjectSeq
from script.frontend.op_lookup import op_for_object
from script.module import is_module

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


@dataclass
class StaticPlan:
    """Iterate over values known at compile time (a tuple's elements): the loop is unrolled."""

    items: list[Any]
    limit: Any = None
    """a run-time count the unrolled loop stops at (``zip`` of a list of objects and a list of
    run-time length stops at the shorter): item ``k`` runs only while ``k < limit``; None when
    every item runs."""


@dataclass(frozen=True)
class Deferred:
    """An item of an unrolled loop emitted only when its iteration runs (``xs[k]`` of a list
    that may be shorter, the ``k``-th element of a ``range``)."""

    make: Callable[[], Any]


def realize(item: Any) -> Any:
    """An unrolled loop's item with its ``Deferred`` parts emitted (nested in tuples too)."""
    if isinstance(item, Deferred):
        return realize(item.make())
    if type(item) is tuple:
        return tuple(realize(part) for part in item)
    return item


@dataclass
class DynamicPlan:
    """Iterate ``trip`` times; ``element(i)`` emits the i-th element inside the loop body."""

    trip: Any
    element: Callable[[Any], Any]
    arithmetic: bool = False
    """whether ``element(i)`` is int arithmetic on ``i`` (a range): it may be emitted for any
    ``i``, after the loop too."""


class IterMixin:
    """Iteration plans of ``FunctionCompiler``."""

    def iteration_plan(self: FunctionCompiler, node: ast.expr) -> StaticPlan | DynamicPlan:
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            static = self.resolve_static(node)
            if isinstance(static, ObjectSeq):
                return StaticPlan([Static(item) for item in self.object_items(static)])
            if static is not NOT_STATIC and is_module_sequence(static):
                return StaticPlan([Static(unwrap_module(m)) for m in static])
        if isinstance(node, ast.List) and not any(isinstance(e, ast.Starred) for e in node.elts):
            # `for g in [dW, db]:` iterates the arrays themselves: g is another name of each
            return StaticPlan([self.expr(e) for e in node.elts])
        if isinstance(node, ast.Call):
            obj = self.resolve_static(node.func)
            handlers = {builtins.range: self.range_plan, builtins.enumerate: self.enumerate_plan,
                        builtins.zip: self.zip_plan, builtins.reversed: self.reversed_plan}
            for fn, handler in handlers.items():
                if obj is fn:
                    return handler(node)
            op = op_for_object(obj) if obj is not NOT_STATIC else None
            if op is not None and op.kind == "tensor::unbind":
                a, axis = self.bind_op_arguments(op, node, ast.unparse(node.func), None)
                return self.axis_plan(a, axis, node)
        return self.value_plan(self.expr(node), node)

    def value_plan(self: FunctionCompiler, value: Any, node: ast.AST) -> StaticPlan | DynamicPlan:
        t = value.type
        if isinstance(t, OptionalType) and isinstance(t.element, (ListType, DictType, TensorType)):
            # an Optional container: Python's TypeError where it is None (``zip(us, Bs)`` with
            # ``Bs`` left None), else the container
            test = self.emit_value("prim::IsNone", [value])
            self.emit_if(test, lambda: self.raise_exception(
                "'NoneType' object is not iterable", "TypeError"), lambda: None, end_of(node), node)
            return self.value_plan(self.emit_value("prim::unchecked_unwrap_optional", [value]),
                                   node)
        if isinstance(t, TupleType):
            return StaticPlan(self.tuple_items(value))
        if isinstance(t, ClassType) and t.named_tuple:
            return StaticPlan(self.named_tuple_items(value))
        if isinstance(t, DictType):  # iterating a dict iterates its keys
            return self.value_plan(self.emit_value("prim::DictKeys", [value]), node)
        if isinstance(t, ListType):
            return DynamicPlan(self.emit_value("prim::len", [value]),
                               lambda i: self.emit_value("prim::ListIndex", [value, i]))
        if isinstance(t, TensorType):
            return self.axis_plan(value, self.const(0), node)
        if t == STR:  # its characters
            return DynamicPlan(self.emit_value("prim::str_op", [self.const("__len__"), value]),
                               lambda i: self.emit_value("prim::str_op", [
                                   self.const("__getitem__"), value, i]))
        raise self.error(node, f"cannot iterate over a value of type {t}")

    def axis_plan(self: FunctionCompiler, tensor: Any, axis: Any, node: ast.AST) -> DynamicPlan:
        if not isinstance(tensor.type, TensorType):
            raise self.error(node, f"unbind needs a Tensor, not {tensor.type}")
        trip = self.emit_value("tensor::size", [tensor, axis])
        t = tensor.type
        if t.rank == 1 and t.dtype is not None and np.dtype(t.dtype).kind in "iu":
            # numpy yields integer scalars (np.int64), which index, count and compare as ints
            # (x[t], t - 1, max(0, t - k)): the loop variable is an int
            return DynamicPlan(trip, lambda i: self.emit_value(
                "prim::Int", [self.emit_value("tensor::select", [tensor, axis, i])]))
        return DynamicPlan(trip, lambda i: self.emit_value("tensor::select", [tensor, axis, i]))

    def range_plan(self: FunctionCompiler, node: ast.Call) -> DynamicPlan:
        if node.keywords or not 1 <= len(node.args) <= 3:
            raise self.error(node, "range() takes 1 to 3 positional arguments")
        values = [self.as_index(self.expr(a)) for a in node.args]
        for arg, value in zip(node.args, values):
            if value.type not in (INT, BOOL):
                raise self.error(arg, f"range() arguments must be ints, not {value.type}")
        if len(values) == 1:
            values = [self.const(0), values[0], self.const(1)]
        elif len(values) == 2:
            values.append(self.const(1))
        start, stop, step = values
        step_c = constant_of(step)
        if not isinstance(step_c, int):  # a step known when the code runs (a batch size)
            self.emit_if(self.binary("==", step, self.const(0), node),
                         lambda: self.raise_exception("range() arg 3 must not be zero",
                                                      "ValueError"), lambda: None,
                         end_of(node), node)
            # len(range(a, b, s)) = max(0, ceil((b - a) / s)), ceil(x / s) = -(-x // s)
            back = self.binary("//", self.binary("-", start, stop, node), step, node)
            count = self.binary("-", self.const(0), back, node)
            return DynamicPlan(self.emit_value("prim::max", [count, self.const(0)]),
                               lambda i: self.binary("+", start, self.binary(
                                   "*", i, step, self.where), self.where), arithmetic=True)
        if step_c == 0:
            raise self.error(node, "the step of range() must not be zero")
        return DynamicPlan(self.range_length(start, stop, step_c),
                           lambda i: self.range_element(start, step_c, i), arithmetic=True)

    def range_length(self: FunctionCompiler, start: Any, stop: Any, step: int) -> Any:
        a, b = constant_of(start), constant_of(stop)
        if isinstance(a, int) and isinstance(b, int):
            return self.const(len(range(a, b, step)))
        if a == 0 and step == 1:
            return stop  # a negative count runs no iterations
        # len(range(a, b, s)) = max(0, (b - a + s - 1) // s) for s > 0, (b - a + s + 1) // s else
        span = self.binary("-", stop, start, self.where)
        span = self.binary("+", span, self.const(step - 1 if step > 0 else step + 1), self.where)
        count = self.binary("//", span, self.const(step), self.where)
        return self.emit_value("prim::max", [count, self.const(0)])

    def range_element(self: FunctionCompiler, start: Any, step: int, i: Any) -> Any:
        value = i if step == 1 else self.binary("*", i, self.const(step), self.where)
        if constant_of(start) == 0:
            return value
        return self.binary("+", start, value, self.where)

    def enumerate_plan(self: FunctionCompiler, node: ast.Call) -> StaticPlan | DynamicPlan:
        if len(node.args) not in (1, 2) or any(k.arg != "start" for k in node.keywords):
            raise self.error(node, "enumerate() takes an iterable and an optional start")
        start_node = node.args[1] if len(node.args) == 2 else next(
            (k.value for k in node.keywords), None)
        start = self.expr(start_node) if start_node is not None else self.const(0)
        if start.type != INT:
            raise self.error(node, f"the start of enumerate() must be an int, not {start.type}")
        inner = self.iteration_plan(node.args[0])
        pair = lambda i, item: self.static_tuple(  # noqa: E731
            [self.range_element(start, 1, i), item])
        if isinstance(inner, StaticPlan):
            return StaticPlan([pair(self.const(k), item) for k, item in enumerate(inner.items)],
                              inner.limit)
        return DynamicPlan(inner.trip, lambda i: pair(i, inner.element(i)))

    def spread_zip(self: FunctionCompiler, node: ast.For) -> ast.stmt:
        """``for q, k, v in zip(*heads)`` with ``heads`` a list (or a tuple): ``zip(heads[0],
        heads[1], heads[2])``, as many lists as the target names, run when the list holds that
        many (Python's unpacking raises when it does not and the zip yields anything: so does
        this); ``node`` itself for any other loop."""
        it, target = node.iter, node.target
        if not (isinstance(it, ast.Call) and len(it.args) == 1 and not it.keywords
                and isinstance(it.args[0], ast.Starred) and isinstance(target, ast.Tuple)
                and not any(isinstance(e, ast.Starred) for e in target.elts)
                and self.resolve_static(it.func) is builtins.zip):
            return node
        source = it.args[0].value
        value = self.expr(source)
        if not isinstance(value.type, (ListType, TupleType)):
            raise self.error(source, f"zip(*...) of a {value.type}: pass a list or a tuple")
        n = len(target.elts)
        name = self.new_flag("zipped")
        self.frame.set(name, value)
        lists = [ast.Subscript(ast.Name(name, ast.Load()), ast.Constant(k), ast.Load())
                 for k in range(n)]
        call = ast.Call(func=it.func, args=lists, keywords=[])
        loop = ast.For(target=target, iter=ast.copy_location(call, it), body=node.body,
                       orelse=node.orelse, type_comment=node.type_comment)
        if not isinstance(value.type, ListType):
            return ast.fix_missing_locations(ast.copy_location(loop, node))
        # Python raises only when the zip yields an item (every list non-empty); an empty
        # zip runs nothing
        empty = self.new_flag("empty")
        self.emit_source(
            f"{empty} = len({name}) == 0\n"
            f"for {name}_l in {name}:\n"
            f"    if len({name}_l) == 0:\n"
            f"        {empty} = True\n"
            f"if len({name}) != {n} and not {empty}:\n"
            f"    raise ValueError({'zip(*' + ast.unparse(source) + ')'!r} + ' of ' + "
            f"str(len({name})) + ' lists cannot unpack into {n} names')\n", node)
        guarded = ast.If(test=ast.Compare(
            ast.Call(ast.Name("len", ast.Load()), [ast.Name(name, ast.Load())], []),
            [ast.Eq()], [ast.Constant(n)]), body=[ast.copy_location(loop, node)], orelse=[])
        return ast.fix_missing_locations(ast.copy_location(guarded, node))

    def zip_plan(self: FunctionCompiler, node: ast.Call) -> StaticPlan | DynamicPlan:
        if node.keywords or not node.args:
            raise self.error(node, "zip() takes one or more iterables")
        plans = [self.iteration_plan(a) for a in node.args]
        if any(isinstance(p, StaticPlan) for p in plans):
            return self.unrolled_zip(plans)
        trip = plans[0].trip  # type: ignore[union-attr]
        for p in plans[1:]:
            trip = self.emit_value("prim::min", [trip, p.trip])  # type: ignore[union-attr]
        return DynamicPlan(trip, lambda i: self.emit_value(
            "prim::TupleConstruct", [p.element(i) for p in plans]))  # type: ignore[union-attr]

    def unrolled_zip(self: FunctionCompiler, plans: list[StaticPlan | DynamicPlan]
                     ) -> StaticPlan:
        """``zip`` with an unrolled iterable (a list of objects): as many items as the shortest
        unrolled one, stopping earlier at a run-time count (``limit``) shorter than that, as
        Python's ``zip`` stops at its shortest iterable. The other iterables' items are emitted
        only in the iterations that run."""
        n = min(len(p.items) for p in plans if isinstance(p, StaticPlan))
        limits = [p.limit if isinstance(p, StaticPlan) else p.trip for p in plans]
        limit = None
        for count in limits:
            fixed = constant_of(count) if count is not None else None
            if type(fixed) is int:
                n = max(0, min(n, fixed))
            elif count is not None:
                limit = count if limit is None else self.emit_value("prim::min", [limit, count])
        items = [self.static_tuple([
            p.items[k] if isinstance(p, StaticPlan)
            else Deferred(lambda p=p, k=k: p.element(self.const(k))) for p in plans])
            for k in range(n)]
        return StaticPlan(items, limit)

    def reversed_plan(self: FunctionCompiler, node: ast.Call) -> StaticPlan | DynamicPlan:
        """``reversed(x)``: unrolled items backwards, or the i-th element from the end."""
        if node.keywords or len(node.args) != 1:
            raise self.error(node, "reversed() takes exactly one argument")
        inner = self.iteration_plan(node.args[0])
        if isinstance(inner, StaticPlan) and inner.limit is not None:
            raise self.error(node, "reversed() of a zip: a zip is not reversible in Python "
                             "either (zip the reversed lists instead)")
        if isinstance(inner, StaticPlan):
            return StaticPlan(inner.items[::-1])
        last = self.binary("-", inner.trip, self.const(1), node)
        return DynamicPlan(inner.trip, lambda i: inner.element(self.binary("-", last, i, node)),
                           inner.arithmetic)

    def indexes_objects_per_step(self: FunctionCompiler, node: ast.For) -> bool:
        """Whether the body of ``node`` indexes a list of plain objects or a ``ModuleList`` with
        an index that may change per iteration (it names the loop's variable or a name the body
        assigns, other than an inner loop's variable): ``self.layers[i]`` in ``for i in
        range(...)``."""
        target = set(stored_names(node.target))
        inner = {name for sub in walk_same_function(node.body) if isinstance(sub, ast.For)
                 for name in stored_names(sub.target)} - target
        varying = (target | set(assigned_names(node.body))) - inner
        for sub in walk_same_function(node.body):
            if not isinstance(sub, ast.Subscript) or isinstance(sub.slice, ast.Slice):
                continue
            if any(isinstance(n, ast.Name) and n.id in varying for n in ast.walk(sub.slice)) \
                    and _indexed_per_item(self.static_chain(sub.value)):
                return True
        return False

    def static_chain(self: FunctionCompiler, node: ast.expr) -> Any:
        """What a name or attribute chain is bound to at compile time (an ``ObjectSeq``, an
        ``ObjectArg``, a module or ``ModuleList``...), or None; emits nothing and raises
        nothing."""
        if isinstance(node, ast.Name):
            found = self.frame.find(node.id)
            if found is None and is_module(self.namespace.get(node.id)):
                return self.namespace[node.id]  # a module method's self
            return found.obj if isinstance(found, Static) else None
        if isinstance(node, ast.Subscript):  # self.layers[i].cells, i a constant by now
            base = self.static_chain(node.value)
            items = base.items if isinstance(base, ObjectSeq) else \
                tuple(base) if is_module_sequence(base) else ()
            index = self.static_index(node.slice)
            if index is not None and -len(items) <= index < len(items):
                return unwrap_module(items[index])
            return None
        if not isinstance(node, ast.Attribute):
            return None
        base = self.static_chain(node.value)
        if is_module(base):
            return unwrap_module(read_member(unwrap_module(base), node.attr))
        if not isinstance(base, ObjectArg):
            return None
        try:
            return self.object_arg_member(base, node)
        except ScriptError:
            return None

    def static_index(self: FunctionCompiler, node: ast.expr) -> int | None:
        """An index that is an int literal or a name bound to a constant int, else None."""
        if isinstance(node, ast.Constant):
            return node.value if type(node.value) is int else None
        found = self.frame.find(node.id) if isinstance(node, ast.Name) else None
        value = constant_of(found) if hasattr(found, "type") else None
        return value if type(value) is int else None

    def unrolled_steps(self: FunctionCompiler, plan: DynamicPlan) -> StaticPlan | DynamicPlan:
        """A loop with a constant trip count (``range(len(layers))``) unrolled, so that an index
        computed from its variable is a constant in each copy of the body; a run-time count
        stays a loop (and a list of objects indexed in it is refused at the index)."""
        count = constant_of(plan.trip)
        if type(count) is not int:
            return plan
        return StaticPlan([Deferred(lambda k=k: plan.element(self.const(k)))
                           for k in range(max(count, 0))])

    def static_tuple(self: FunctionCompiler, items: list[Any]) -> Any:
        """A loop element made of several parts: a tuple value, or a compile-time tuple when a
        part is a compile-time object (a module of a ``ModuleList``)."""
        if any(isinstance(item, (Static, tuple, Deferred)) for item in items):
            return tuple(items)
        return self.emit_value("prim::TupleConstruct", items)


def _indexed_per_item(chain: Any) -> bool:
    """A list whose items the compiler picks when compiling: of plain objects (each with its own
    attribute inputs) or of modules (each with its own methods)."""
    return isinstance(chain, ObjectSeq) or is_module_sequence(chain)
