"""Python code generation: one Python function per optimized graph, one line per node.

Like torch.fx's code generator: values get legal, non-shadowing Python names from their hints;
control flow becomes Python ``if``/``for``/``while``; every ``tensor::`` op calls its eager
implementation in ``script.ops`` unless the backend table has a faster spelling; constants that are
not plain literals are bound as globals of the generated function.
"""

from __future__ import annotations

import builtins
import copy
import keyword
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import ir
from fuser.workspace import Workspace
from ir.alias import StorageClasses
from ir.core import Block, Graph, Node, Value
from ir.ops.elementwise import AUGMENTED, CASTING_ATTR, IN_PLACE_ATTR
from ir.ops.numpy_ops import SCALAR_ATTR
from ir.ops.prim import DEFERRED_ERROR
from passes.devices import call_device
from script import ops
from script.errors import ScriptError
from script.frontend.classes import python_class
from script.runtime import (
    contractions,
    device_code,
    group_writers,
    op_writers,
    sanitize,
    temporaries,
    weak_numbers,
)
from script.runtime.instrument import stage
from script.runtime.spellings import NUMPY_CODE, PRIM_CODE

INT64_MAX = 2**63 - 1

Emit = Callable[["FunctionWriter", Node, list[str]], str]
"""An op's code: given the writer, the node and its input expressions, the expression (or
statement, for nodes without outputs) computing it."""

UNCHECKED = frozenset({"prim::Constant", "prim::Uninitialized"})
"""Nodes whose outputs the sanitizer leaves alone: constants have their type by construction, and
an Uninitialized placeholder (None at run time) stands on paths that never read it."""

_RESERVED = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {
    "np", "ops", "_k", "_check_type", "_workspace"}


@dataclass
class Namespace:
    """Legal, unique Python names for values (torch.fx's approach)."""

    used: set[str] = field(default_factory=lambda: set(_RESERVED))
    names: dict[Value, str] = field(default_factory=dict)

    def name(self, value: Value) -> str:
        if (known := self.names.get(value)) is not None:
            return known
        base = _identifier(value.name or "v")
        candidate, k = base, 0
        while candidate in self.used:
            k += 1
            candidate = f"{base}_{k}"
        self.used.add(candidate)
        self.names[value] = candidate
        return candidate

    def fresh(self, hint: str) -> str:
        candidate, k = hint, 0
        while candidate in self.used:
            k += 1
            candidate = f"{hint}_{k}"
        self.used.add(candidate)
        return candidate


def _identifier(hint: str) -> str:
    text = "".join(c if c.isalnum() or c == "_" else "_" for c in hint)
    if not text or text[0].isdigit():
        text = "v" + text
    return text


@dataclass
class FunctionWriter:
    """Writes one graph as Python source plus the globals it needs."""

    backend: dict[str, Callable[..., str]]
    ns: Namespace = field(default_factory=Namespace)
    lines: list[str] = field(default_factory=list)
    consts: dict[str, Any] = field(default_factory=dict)
    indent: int = 1
    profiler: Any = None
    """an ``instrument.Instrument`` (the profiler) to build instrumented code for; None for the
    fast code."""
    elided: set[Node] = field(default_factory=set)
    """nodes that emit nothing: a ``write_slot`` whose value a kernel wrote into its slot, a
    product an einsum computes with its sum (``contractions``)."""
    einsums: dict[Node, tuple[str, Value, Value]] = field(default_factory=dict)
    """sums computed as ``np.einsum(subscripts, a, b)`` (``script.runtime.contractions``)."""
    classes: StorageClasses | None = None
    """which values of the graph the caller may receive (constants among them are copied)."""
    checks: bool = False
    """emit a shape/dtype check of every value against its static type
    (``script.runtime.sanitize``)."""
    lists_hold_placeholders: bool = False
    """the graph's lists may hold ``prim::Uninitialized`` placeholders (None)."""
    workspace: Workspace = field(default_factory=Workspace)
    """the arrays the function allocates on each call, kept for its next call."""
    device: str | None = None
    """``cuda`` for a function called with CuPy arrays (``script.runtime.device_code``)."""
    inlined: set[Node] = field(default_factory=set)
    """nodes written as an expression in their reader's statement (``inline``)."""

    def emit(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def const_expr(self, value: Any) -> str:
        """A literal for simple constants; a global name for everything else."""
        if value is None or isinstance(value, (bool, str)):
            return repr(value)
        if isinstance(value, int):
            return repr(int(value)) if value >= 0 else f"({int(value)!r})"
        if type(value) is float and math.isfinite(value):  # not np.float64: numpy's strong type
            return repr(float(value)) if value >= 0 else f"({float(value)!r})"
        name = self.ns.fresh("_c")
        self.consts[name] = value
        return name

    def write_block(self, block: Block) -> None:
        released = temporaries.released_after(block)
        pending: list[Value] = []  # (an inlined node's reads are evaluated by its reader)
        open_: set[Node] = set()  # inlined nodes whose reader is still to come
        for node in [*block, None]:  # (None: after the last node)
            if node is not None:
                self.write_node(node)
                pending += released.get(node, ())
                open_ = {n for n in open_ if n.output.uses[0].node is not node}
                if node in self.inlined:
                    open_.add(node)
                if open_:
                    continue
            for value in pending:
                if (name := temporaries.release_name(self, value)) is not None:
                    self.emit(f"del {name}")
            pending = []

    def write_node(self, node: Node) -> None:
        if node in self.elided:  # a write_slot whose value a kernel computed in its slot
            return
        if self.profiler is not None:
            self.profiler.write_node(self, node, self.write_plain_node)
        else:
            self.write_plain_node(node)
        if node.kind not in UNCHECKED and node not in self.inlined:
            self.write_checks(node.outputs, node, "output")

    def write_checks(self, values: Sequence[Value], node: Node | None, what: str) -> None:
        """With ``checks``: a statement per value verifying its run-time dtype and shape
        against its static type (an error names the node, the source line and both)."""
        if not self.checks:
            return
        check = self.consts.setdefault("_check_type", sanitize.check)
        assert check is sanitize.check
        for k, value in enumerate(values):
            t = self.ns.fresh("_type")
            self.consts[t] = sanitize.static_type(value, self.lists_hold_placeholders)
            place = sanitize.where(node, f"{what} {k} (%{value.name or '?'})")
            self.emit(f"_check_type({self.ns.name(value)}, {t}, {place!r})")

    def write_subgraph_call(self, node: Node) -> None:
        """A subgraph node without a native kernel runs its subgraph as Python (a function of
        its own, generated here)."""
        # a profiled differentiable graph times its own nodes; a fusion group is timed as a whole
        profiler = self.profiler if node.kind != "prim::FusionGroup" else None
        fn, _ = generate(node.subgraph, self.backend, name="subgraph", profiler=profiler)
        op_writers.write_call(self, node, fn, "_sub")

    def write_plain_node(self, node: Node) -> None:
        if self.device == "cuda" and device_code.write_node(self, node):
            return
        self.write_host_node(node)

    def write_host_node(self, node: Node) -> None:
        if weak_numbers.is_weak_number(node):  # the number itself (see weak_numbers)
            self.assign(node, self.ns.name(node.inputs[1]))
            return
        numbers = [] if node.attrs.get(IN_PLACE_ATTR) else \
            weak_numbers.inputs_as_arrays(node, self.backend)
        if not numbers:
            self.write_op(node)
            if node.kind == "tensor::array" and node.attrs.get(SCALAR_ATTR):
                name = self.ns.name(node.output)  # np.float64(0): the numpy scalar
                self.emit(f"{name} = {name}[()]")
            return
        saved = {v: self.ns.name(v) for v in numbers}
        as_array = device_code.number_as_array if self.device == "cuda" else \
            weak_numbers.as_array
        convert = self.consts.setdefault("_as_array", as_array)
        assert convert is as_array
        for v, name in saved.items():
            self.ns.names[v] = self.ns.fresh("_array")
            self.emit(f"{self.ns.names[v]} = _as_array({name})")
        try:
            self.write_op(node)
        finally:
            self.ns.names.update(saved)

    def write_op(self, node: Node) -> None:
        if node in self.einsums:
            subscripts, a, b = self.einsums[node]
            self.assign(node, f"np.einsum({subscripts!r}, {self.ns.name(a)}, {self.ns.name(b)})")
            return
        special = STRUCTURE_WRITERS.get(node.kind)
        if special is not None:
            special(self, node)
            return
        if node.kind == "tensor::astype" and CASTING_ATTR in node.attrs:  # dtypes unknown
            op_writers.write_same_kind_astype(self, node)  # when compiling: checked at run time
            return
        if node.attrs.get(IN_PLACE_ATTR) and self.ns.name(node.inputs[0]).isidentifier() \
                and self.ns.name(node.inputs[0]) not in self.consts:
            target = self.ns.name(node.inputs[0])  # numpy's a += b: the result is a, updated
            if node.kind == "tensor::clip":  # np.clip(a, lo, hi, out=a)
                lo, hi = (self.ns.name(v) for v in node.inputs[1:])
                self.emit(f"np.clip({target}, {lo}, {hi}, out={target})")
            else:
                self.emit(f"{target} {AUGMENTED[node.kind]} {self.ns.name(node.inputs[1])}")
            self.emit(f"{self.ns.name(node.output)} = {target}")
            return
        if op_writers.write_ufunc_into_workspace(self, node):
            return
        args = [self.ns.name(v) for v in node.inputs]
        expr = self.expression(node, args)
        if self.inline(node, expr):
            return
        self.assign(node, expr)

    def inline(self, node: Node, expr: str) -> bool:
        """Write ``node``'s array as ``expr`` in its reader's statement where
        ``temporaries.inlinable``; its reader's output is checked where values are."""
        if not temporaries.inlinable(self, node):
            return False
        self.ns.names[node.output] = f"({expr})"
        self.inlined.add(node)
        return True

    def expression(self, node: Node, args: list[str]) -> str:
        rule = self.backend.get(node.kind) or PRIM_CODE.get(node.kind)
        if rule is not None:
            return rule(*args)
        if node.kind.startswith("tensor::"):
            return f"ops.{node.kind.split('::', 1)[1]}({', '.join(args)})"
        raise ir.IRError(f"no code generation rule for {node.kind}", node)

    def assign(self, node: Node, expr: str) -> None:
        if not node.outputs:
            self.emit(expr)
            return
        targets = [self.ns.name(v) for v in node.outputs]
        if len(targets) == 1 and _returns_tuple(node.kind):
            # ops.chunk(x, 1) / np.split(x, 1) return a 1-tuple: unpack its only element
            self.emit(f"{targets[0]}, = {expr}")
        elif len(targets) == 1:
            self.emit(f"{targets[0]} = {expr}")
        else:
            self.emit(f"{', '.join(targets)} = {expr}")

    def assign_values(self, targets: list[Value], sources: list[Value] | tuple[Value, ...]) -> None:
        pairs = [(self.ns.name(t), self.ns.name(s)) for t, s in zip(targets, sources)]
        pairs = [(t, s) for t, s in pairs if t != s]
        if not pairs:
            return
        lhs = ", ".join(t for t, _ in pairs)
        rhs = ", ".join(s for _, s in pairs)
        self.emit(f"{lhs} = {rhs}")


def _write_constant(w: FunctionWriter, node: Node) -> None:
    # constants are used by name: a literal inline, anything else as a global of the function
    value = node.attrs.get("value")
    if w.device == "cuda":
        value = device_code.to_device(value, scalars=False)  # copied once, numbers stay
    elif _scalar_operand(value, node):
        value = value[()]
    expr = w.const_expr(value)
    if w.classes is not None and w.classes.escapes(node.output) and holds_mutable(value):
        # the caller may receive it: each evaluation makes its own, as the source would
        w.consts["_fresh_copy"] = fresh_copy
        if any(_in_a_loop_below(use.node, node) for use in node.output.uses):
            # used in a loop the constant sits outside of (hoisted or merged with an equal
            # constant by the passes): every use makes its own, so no two items share memory
            w.ns.names[node.output] = f"_fresh_copy({expr})"
            return
        w.emit(f"{w.ns.name(node.output)} = _fresh_copy({expr})")
        return
    w.ns.names[node.output] = expr


def _scalar_operand(value: Any, node: Node) -> bool:
    """Whether a 0-d array constant is only an operand of elementwise ops (an accumulator's
    start, ``s = 0.0`` then ``s += x[i] * y[i]``), so its numpy scalar computes the same: the
    two promote alike, and numpy's arithmetic on a scalar costs about a tenth of a 0-d
    array's."""
    if type(value) is not np.ndarray or value.shape != ():
        return False
    return all(use.node.kind in _ARITHMETIC and IN_PLACE_ATTR not in use.node.attrs
               for use in node.output.uses)


_ARITHMETIC = frozenset(f"tensor::{name}" for name in (
    "add", "sub", "mul", "div", "floordiv", "mod", "pow", "neg", "maximum", "minimum"))
"""ops whose result is a new value however their 0-d operands are held."""


def _in_a_loop_below(user: Node, node: Node) -> bool:
    """Whether ``user`` runs in a loop body nested inside the block that holds ``node``."""
    block = user.owner
    while block is not None and block is not node.owner:
        outer = block.owner
        if outer is None:
            return False
        if outer.kind == "prim::Loop":
            return True
        block = outer.owner
    return False


def holds_mutable(value: Any) -> bool:
    """Whether a constant holds something the caller could mutate: an array, a list, a dict."""
    if isinstance(value, tuple):
        return any(holds_mutable(v) for v in value)
    if isinstance(value, (list, dict)):
        return True
    return hasattr(value, "shape") and not isinstance(value, np.generic)


def fresh_copy(value: Any) -> Any:
    """A copy of a constant's arrays and containers (items shared within it stay shared)."""
    if isinstance(value, (tuple, list, dict)):
        return copy.deepcopy(value)
    return value.copy(order="K")  # a numpy or CuPy array


def _write_if(w: FunctionWriter, node: Node) -> None:
    cond = w.ns.name(node.inputs[0])
    w.emit(f"if {cond}:")
    for k, block in enumerate(node.blocks):
        if k == 1:
            w.emit("else:")
        w.indent += 1
        start = len(w.lines)
        w.write_block(block)
        w.assign_values(node.outputs, block.returns)
        if len(w.lines) == start:
            w.emit("pass")
        w.indent -= 1


def _write_loop(w: FunctionWriter, node: Node) -> None:
    """A loop the device's backend compiles natively calls that (``fuser.cpu.loop``), with the
    Python loop as the fallback for arguments the native code does not take; other loops are
    Python ``for``/``while`` loops."""
    native = _native_loop(w, node)
    if native is not None and any(w.ns.name(v).startswith("_fresh_copy(")
                                  for v in native.free):
        native = None  # the loop makes a fresh copy of a constant at each use: Python does that
    if native is None:
        _write_python_loop(w, node)
        return
    name = w.ns.fresh("_loop")
    w.consts[name] = native
    result = w.ns.fresh("_carried")
    trip, _, *carried = node.inputs
    free = "".join(f"{w.ns.name(v)}, " for v in native.free)
    inits = "".join(f"{w.ns.name(v)}, " for v in carried)
    w.emit(f"{result} = {name}({w.ns.name(trip)}, ({free}), ({inits}))")
    w.emit(f"if {result} is None:")
    w.indent += 1
    _write_python_loop(w, node)
    w.indent -= 1
    if node.outputs:
        w.emit("else:")
        w.indent += 1
        w.emit(f"{', '.join(w.ns.name(v) for v in node.outputs)}, = {result}")
        w.indent -= 1


def _native_loop(w: FunctionWriter, node: Node) -> Any:
    """The backend's native form of loop ``node``; None when it has none (or when profiling:
    the profiler times the body's nodes one by one)."""
    if w.profiler is not None:
        return None
    from fuser.backend import backend_of
    backend = backend_of(node)
    if backend is None or backend.compile_loop is None:
        return None
    try:
        with stage("native compile"):
            return backend.compile_loop(node)
    except ValueError:
        return None


def _write_python_loop(w: FunctionWriter, node: Node) -> None:
    trip, cond, *carried = node.inputs
    (body,) = node.blocks
    counter, *params = body.params
    body_cond, *results = body.returns
    w.assign_values(params, carried)
    is_for = _is_true(cond) and _is_true(body_cond)
    i = w.ns.name(counter)
    trip_name = w.ns.name(trip)
    if is_for:
        w.emit(f"for {i} in range({trip_name}):")
    else:
        c = w.ns.fresh("_cond")
        w.emit(f"{c} = {w.ns.name(cond)}")
        w.emit(f"{i} = 0")
        w.emit(f"while {c} and {i} < {trip_name}:")
    w.indent += 1
    w.write_checks(params, node, "carried value")  # the types must hold on every iteration
    start = len(w.lines)
    w.write_block(body)
    w.assign_values(params, results)
    if not is_for:
        w.emit(f"{c} = {w.ns.name(body_cond)}")
        w.emit(f"{i} += 1")
    if len(w.lines) == start:
        w.emit("pass")
    w.indent -= 1
    w.assign_values(node.outputs, params)


def _write_tuple_unpack(w: FunctionWriter, node: Node) -> None:
    src = w.ns.name(node.inputs[0])
    if not node.outputs:
        return
    targets = ", ".join(w.ns.name(v) for v in node.outputs)
    w.emit(f"{targets}{',' if len(node.outputs) == 1 else ''} = {src}")


def _write_raise(w: FunctionWriter, node: Node) -> None:
    """``raise`` of the exception class the source named; builtin classes only. A branch that
    did not compile (``DEFERRED_ERROR``) and that the specialization keeps raises its error
    here, before any code runs."""
    deferred = node.attrs.get(DEFERRED_ERROR)
    if deferred is not None:
        raise ScriptError(*deferred)
    name = node.attrs.get("exception", "AssertionError")
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = RuntimeError
    w.consts.setdefault(f"_exc_{cls.__name__}", cls)
    w.emit(f"raise _exc_{cls.__name__}({w.ns.name(node.inputs[0])})")


def _class_const(w: FunctionWriter, node: Node) -> str:
    """The Python class of a NamedTuple / script-class node's output, as a global name."""
    cls = python_class(node.output.type.name)
    name = w.ns.fresh(f"_cls_{_identifier(cls.__name__)}")
    w.consts[name] = cls
    return name


def _write_named_tuple(w: FunctionWriter, node: Node) -> None:
    args = ", ".join(w.ns.name(v) for v in node.inputs)
    w.assign(node, f"{_class_const(w, node)}({args})")


def _write_create_object(w: FunctionWriter, node: Node) -> None:
    cls = _class_const(w, node)
    w.assign(node, f"{cls}.__new__({cls})")


def _write_get_attr(w: FunctionWriter, node: Node) -> None:
    w.assign(node, f"{w.ns.name(node.inputs[0])}.{node.attrs['name']}")


def _write_set_attr(w: FunctionWriter, node: Node) -> None:
    obj, value = (w.ns.name(v) for v in node.inputs)
    w.emit(f"{obj}.{node.attrs['name']} = {value}")


STRUCTURE_WRITERS: dict[str, Callable[[FunctionWriter, Node], None]] = {
    "tensor::matmul": op_writers.write_matmul,
    "tensor::matmul_sum": op_writers.write_matmul_sum,
    "tensor::sum": op_writers.write_sum,
    "tensor::select_put": op_writers.write_select_put,
    "tensor::empty": op_writers.write_empty,
    "tensor::take": op_writers.write_take,
    "tensor::layer_norm": op_writers.write_layer_norm,
    "tensor::layer_norm_backward": op_writers.write_layer_norm_backward,
    "prim::NamedTupleConstruct": _write_named_tuple,
    "prim::CreateObject": _write_create_object,
    "prim::GetAttr": _write_get_attr,
    "prim::LoadAttr": _write_get_attr,
    "prim::SetAttr": _write_set_attr,
    "prim::RaiseException": _write_raise,
    "prim::Constant": _write_constant,
    "prim::If": _write_if,
    "prim::Loop": _write_loop,
    "prim::TupleUnpack": _write_tuple_unpack,
    "prim::ListUnpack": _write_tuple_unpack,
    "prim::FusionGroup": group_writers.write_fusion_group,
    "prim::DifferentiableGraph": FunctionWriter.write_subgraph_call,
}


def _returns_tuple(kind: str) -> bool:
    """Whether the eager op returns a tuple of tensors (``(Tensor, ...)`` in its schema)."""
    op = ir.registry.lookup(kind)
    return op is not None and op.results.startswith("(") and op.results != "()"


def _is_true(v: Value) -> bool:
    return v.is_constant and v.constant is True


def generate_source(graph: Graph, backend: dict[str, Callable[..., str]] | None = None,
                    name: str = "forward", profiler: Any = None) -> tuple[str, dict[str, Any]]:
    """The Python source of ``graph`` as a function ``name`` and the globals it needs
    (instrumented for ``profiler`` when one is given)."""
    checks = sanitize.enabled()
    w = FunctionWriter(NUMPY_CODE if backend is None else backend, profiler=profiler,
                       classes=StorageClasses(graph), checks=checks,
                       lists_hold_placeholders=checks and sanitize.lists_hold_placeholders(graph),
                       device=call_device(graph))
    w.einsums = contractions.find(graph)
    w.elided.update(n.inputs[0].node for n in w.einsums)
    params = [w.ns.name(v) for v in graph.inputs]
    w.write_checks(graph.inputs, None, f"{name}: input")
    w.write_block(graph.block)
    outs = [w.ns.name(v) for v in graph.outputs]
    if len(outs) == 1:
        w.emit(f"return {outs[0]}")
    elif outs:
        w.emit(f"return ({', '.join(outs)})")
    else:
        w.emit("return None")
    header = f"def {name}({', '.join(params)}):"
    if w.workspace.sites:
        w.consts["_workspace"] = w.workspace  # the function owns its arrays (``generate``)
    return "\n".join([header, *w.lines]) + "\n", w.consts


def generate(graph: Graph, backend: dict[str, Callable[..., str]] | None = None,
             name: str = "forward", profiler: Any = None) -> tuple[Callable[..., Any], str]:
    """Compile ``graph`` to a Python function; returns (function, source). With ``profiler``
    (an ``instrument.Instrument``) every node is written through it: for profiling only. The
    function's ``__rnnscript_workspace__`` is the ``fuser.workspace.Workspace`` of the arrays it
    allocates on each call (None when it has no allocation site)."""
    source, consts = generate_source(graph, backend, name, profiler)
    env: dict[str, Any] = {"np": np, "ops": ops, "math": math, **consts}
    code = compile(source, f"<rnnscript {graph.name or name}>", "exec")
    exec(code, env)  # the source is generated from the IR, never taken from user data
    fn = env[name]
    fn.__rnnscript_source__ = source
    fn.__rnnscript_workspace__ = consts.get("_workspace")
    return fn, source
