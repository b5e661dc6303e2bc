"""Lowering a specialized, frozen graph to ONNX nodes: values, scopes, containers, control flow.

Every IR value maps to a *symbol*: the name of an ONNX tensor (``str``), a Python constant known
at export time (number, bool, string, None), a ``tuple`` of symbols (tuples and NamedTuples), a
``list`` of symbols (a list whose items are all known at export time) or a ``Stacked`` list (the
items a loop appended, one per iteration: an ONNX ``Loop`` scan output). Constant-only work never
reaches the file: it folds to Python values here.

A ``prim::Loop`` becomes an ONNX ``Loop`` whose body is lowered in a child ``Lowering``; its
loop-carried tuples are flattened to loop-carried tensors and each list the body appends to once
per iteration becomes a scan output. A ``prim::If`` on a known condition is lowered as the taken
branch; on a run-time condition it becomes an ONNX ``If``, except a check (an ``if`` with no
outputs one branch of which raises: ``if h0.shape != ...: raise ValueError(...)``), of which the
other branch is lowered: ONNX has no exceptions, so an exported model does not check its inputs
the way the compiled function does. The tensor ops are the table in
``script.artifact.onnx_ops``; anything else is a ``ScriptError`` at the op's source line.
"""

from __future__ import annotations

import importlib
import itertools
import math
import re
from collections import ChainMap
from dataclasses import dataclass
from typing import Any

import numpy as np

from ir.core import Block, Node, Value
from ir.ops.prim import DEFERRED_ERROR
from ir.types import BOOL, FLOAT, INT, ClassType, ListType, ScalarType, TensorType, TupleType
from script.errors import ScriptError, at_node


class LazyModule:
    """A module imported on first use: ``onnx`` is an optional dependency, needed only when a
    model is exported, so importing ``script`` must not import it."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


helper = LazyModule("onnx.helper")
numpy_helper = LazyModule("onnx.numpy_helper")

SCALAR_DTYPES = {INT: np.dtype("int64"), FLOAT: np.dtype("float64"), BOOL: np.dtype("bool")}
"""The ONNX dtype of a run-time Python number (a 0-d tensor)."""

WEAK = {INT: 0, FLOAT: 0.0, BOOL: False}
"""Stand-ins for run-time Python numbers in dtype promotion (NumPy 2: Python scalars are weak)."""


@dataclass(eq=False)
class Stacked:
    """A list grown by a loop, one item per iteration: ``name`` is the items stacked on axis 0."""

    name: str
    """the ONNX tensor of the stacked items."""
    rank: int | None
    """the rank of the stacked tensor (one more than an item's), None when unknown."""


class Outputs(list):
    """What a rule returns for a node with several outputs: one symbol per output."""


class Uninitialized:
    """The value of ``prim::Uninitialized`` (a branch that returns before defining a name)."""


UNINITIALIZED = Uninitialized()


class Exporter:
    """What every scope of one export shares: unique names, dtypes, initializers, the opset."""

    def __init__(self, opset: int, rules: dict[str, Any]):
        self.opset = opset
        """the ONNX opset the model declares."""
        self.rules = rules
        """the lowering rule of each op kind (``onnx_ops.RULES``)."""
        self.initializers: list[Any] = []
        self.dtypes: dict[str, np.dtype] = {}
        """the element type of every ONNX tensor made so far."""
        self._taken: set[str] = set()
        self._counter = itertools.count()

    def fresh(self, hint: str | None = None) -> str:
        """A name not used anywhere in the model (subgraphs included)."""
        base = re.sub(r"[^A-Za-z0-9_.]", "_", hint or "") or "t"
        name = base
        while name in self._taken:
            name = f"{base}_{next(self._counter)}"
        self._taken.add(name)
        return name

    def initializer(self, array: np.ndarray, hint: str | None = None) -> str:
        """A graph initializer holding ``array`` (the main graph's; subgraphs see it)."""
        name = self.fresh(hint or "const")
        array = np.ascontiguousarray(array)
        self.initializers.append(numpy_helper.from_array(array, name))
        self.dtypes[name] = array.dtype
        return name


class Lowering:
    """One ONNX graph being built: the main graph, or the body of a Loop or a branch of an If."""

    def __init__(self, exporter: Exporter, parent: Lowering | None = None, in_loop: bool = False):
        self.x = exporter
        self.nodes: list[Any] = []
        self.env: ChainMap[Value, Any] = parent.env.new_child() if parent else ChainMap()
        """the symbol of each IR value; a body sees its enclosing scopes' (ONNX outer scope)."""
        self.in_loop = in_loop
        """True for a Loop body: the lists it appends to once per iteration become scan outputs."""
        self.appends: list[tuple[Value, str, int | None]] = []
        """(list value, appended tensor, its rank) for each outer list this loop body grows."""
        self.scanning: set[Value] = set(parent.scanning) if parent else set()
        """outer lists being grown by an enclosing loop: nothing else may read them."""

    # -- emitting -----------------------------------------------------------------------------
    def emit(self, op: str, inputs: list[str], dtype: Any = None, outputs: int = 1,
             hint: str | None = None, **attrs: Any) -> Any:
        """Add an ONNX node; its output name (or names when ``outputs`` > 1). The outputs' dtype
        is ``dtype``, else the first input's."""
        dtype = np.dtype(dtype) if dtype is not None else self.x.dtypes[inputs[0]]
        names = [self.x.fresh(hint or op.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, **attrs))
        for name in names:
            self.x.dtypes[name] = dtype
        return names[0] if outputs == 1 else names

    def const(self, value: Any, dtype: Any) -> str:
        """A tensor holding the export-time ``value`` as ``dtype``."""
        array = np.asarray(value, dtype=dtype)
        if array.size > 16:
            return self.x.initializer(array)
        name = self.x.fresh("c")
        self.nodes.append(helper.make_node("Constant", [], [name],
                                           value=numpy_helper.from_array(array, name)))
        self.x.dtypes[name] = array.dtype
        return name

    def tensor(self, sym: Any, dtype: Any = None, node: Node | None = None) -> str:
        """``sym`` as an ONNX tensor, cast to ``dtype`` when given."""
        if isinstance(sym, str):
            if dtype is None or self.x.dtypes[sym] == np.dtype(dtype):
                return sym
            return self.emit("Cast", [sym], dtype, to=onnx_type(dtype))
        if isinstance(sym, (bool, int, float, np.generic, np.ndarray)):
            if dtype is None:  # a Python int is int64 (not the platform's C long)
                plain_int = isinstance(sym, int) and not isinstance(sym, bool)
                dtype = np.int64 if plain_int else np.asarray(sym).dtype
            return self.const(sym, dtype)
        if isinstance(sym, Stacked):
            return self.tensor(sym.name, dtype, node)
        raise self.error(node, f"a {describe(sym)} cannot be an ONNX tensor")

    def int_vector(self, sym: Any, node: Node) -> str:
        """A 1-D int64 tensor from a tuple/list of ints (each known or computed) or an int."""
        items = list(sym) if isinstance(sym, (tuple, list)) else [sym]
        if all(isinstance(i, (int, np.integer)) for i in items):
            return self.const(np.array(items, dtype=np.int64).reshape(-1), np.int64)
        axes = self.const(np.array([0], np.int64), np.int64)
        parts = [self.emit("Unsqueeze", [self.tensor(i, np.int64, node), axes])
                 if not isinstance(i, (int, np.integer)) else self.const([i], np.int64)
                 for i in items]
        return self.emit("Concat", parts, axis=0)

    def error(self, node: Node | None, message: str) -> ScriptError:
        """The error for an op the export cannot express, at its source line."""
        if node is None:
            return ScriptError(f"export_onnx: {message}")
        return at_node(node, f"export_onnx: cannot export {node.kind}: {message}")

    # -- values ---------------------------------------------------------------------------------
    def sym(self, value: Value, node: Node | None = None) -> Any:
        """The symbol an IR value maps to."""
        if value in self.scanning:
            raise self.error(node, "a list grown by a loop is read inside that loop")
        return self.env[value]

    def bind(self, values: Any, syms: Any) -> None:
        for value, sym in zip(values, syms):
            self.env[value] = sym

    def lower_block(self, block: Block) -> None:
        """Lower the nodes of ``block`` into this scope (its params must be bound)."""
        for node in block:
            if DEFERRED_ERROR in node.attrs:  # a branch that did not compile and is kept
                raise ScriptError(*node.attrs[DEFERRED_ERROR])
            rule = self.x.rules.get(node.kind)
            if rule is None:
                raise self.error(node, "no ONNX equivalent")
            result = rule(self, node)
            if node.outputs:
                self.bind(node.outputs, result if isinstance(result, Outputs) else [result])

    def graph(self, name: str, inputs: list[Any], outputs: list[str]) -> Any:
        outs = [helper.make_tensor_value_info(o, onnx_type(self.x.dtypes[o]), None)
                for o in outputs]
        return helper.make_graph(self.nodes, name, inputs, outs)

    # -- control flow ---------------------------------------------------------------------------
    def lower_if(self, node: Node) -> Any:
        cond = self.sym(node.inputs[0], node)
        if not isinstance(cond, str):
            block = node.blocks[0] if cond else node.blocks[1]
            self.lower_block(block)
            return Outputs(self.sym(v, node) for v in block.returns)
        raising = [any(n.kind == "prim::RaiseException" for n in b.nodes) for b in node.blocks]
        for block in node.blocks:  # (a check's raising branch is not lowered)
            for n in block.walk():
                if DEFERRED_ERROR in n.attrs:
                    raise ScriptError(*n.attrs[DEFERRED_ERROR])
        if not node.outputs and any(raising) and not all(raising):  # a check: see the module doc
            self.lower_block(node.blocks[raising.index(False)])
            return Outputs([])
        branches, shapes = [], []
        for block in node.blocks:
            child = Lowering(self.x, self)
            child.lower_block(block)
            leaves, shape = [], []
            for out, v in zip(node.outputs, block.returns):
                flat, structure = flatten(child.sym(v, node))
                leaves += [child.tensor(s, out_dtype(out, s, child), node) for s in flat]
                shape.append(structure)
            outs = [child.emit("Identity", [leaf]) for leaf in leaves]
            branches.append(child.graph(f"{node.kind}_branch", [], outs))
            shapes.append(shape)
        if shapes[0] != shapes[1]:
            raise self.error(node, "the branches return differently structured values")
        n = len(branches[0].output)
        names = [self.x.fresh("if_out") for _ in range(n)]
        self.nodes.append(helper.make_node("If", [self.tensor(cond, np.bool_, node)], names,
                                           then_branch=branches[0], else_branch=branches[1]))
        for name, out in zip(names, branches[0].output):
            self.x.dtypes[name] = np.dtype(numpy_dtype(out.type.tensor_type.elem_type))
        leaves = iter(names)
        return Outputs(unflatten(s, leaves) for s in shapes[0])

    def lower_loop(self, node: Node) -> Any:
        """An ONNX ``Loop``: loop-carried tuples flattened to tensors, the lists the body grows
        as scan outputs."""
        trip = self.tensor(self.sym(node.inputs[0], node), np.int64, node)
        cond = self.tensor(self.sym(node.inputs[1], node), np.bool_, node)
        inits, shapes = [], []
        for v, param in zip(node.inputs[2:], node.blocks[0].params[1:]):
            flat, structure = flatten(self.sym(v, node))
            inits += [self.tensor(s, out_dtype(param, s, self), node) for s in flat]
            shapes.append(structure)
        body, graph = self._loop_body(node, inits, shapes)
        finals = [self.x.fresh("loop_out") for _ in inits]
        stacked = [self.x.fresh("scan_out") for _ in body.appends]
        self.nodes.append(helper.make_node("Loop", [trip, cond, *inits], finals + stacked,
                                           body=graph))
        for name, out in zip(finals + stacked, graph.output[1:]):
            self.x.dtypes[name] = self.x.dtypes[out.name]
        for (lst, _, rank), name in zip(body.appends, stacked):
            self.env[lst] = Stacked(name, None if rank is None else rank + 1)
        leaves = iter(finals)
        return Outputs(unflatten(s, leaves) for s in shapes)

    def _loop_body(self, node: Node, inits: list[str], shapes: list[Any]) -> tuple[Any, Any]:
        """The lowered body of loop ``node`` and its ONNX graph: (iteration, cond, carried...)
        -> (cond, carried..., scanned...)."""
        block = node.blocks[0]
        body = Lowering(self.x, self, in_loop=True)
        counter, cond_in = body.x.fresh("iteration"), body.x.fresh("cond_in")
        carried = [body.x.fresh("carried") for _ in inits]
        body.x.dtypes.update({counter: np.dtype(np.int64), cond_in: np.dtype(np.bool_)})
        body.x.dtypes.update({c: self.x.dtypes[i] for c, i in zip(carried, inits)})
        leaves = iter(carried)
        body.env[block.params[0]] = counter
        body.bind(block.params[1:], [unflatten(s, leaves) for s in shapes])
        body.lower_block(block)
        outs = [body.tensor(body.sym(block.returns[0], node), np.bool_, node)]
        for v, structure in zip(block.returns[1:], shapes):
            flat, shape = flatten(body.sym(v, node))
            if shape != structure:
                raise self.error(node, "a loop-carried value changes its structure")
            outs += flat
        outs = [body.tensor(s, self.x.dtypes[i], node) for s, i in zip(outs, [cond_in, *inits])]
        outs = [body.emit("Identity", [s]) for s in outs + [s for _, s, _ in body.appends]]
        ranks = [r for p in block.params[1:] for r in leaf_ranks(p.type)]
        ranks = ranks if len(ranks) == len(carried) else [None] * len(carried)
        inputs = [helper.make_tensor_value_info(counter, onnx_type(np.int64), []),
                  helper.make_tensor_value_info(cond_in, onnx_type(np.bool_), [])]
        inputs += [helper.make_tensor_value_info(c, onnx_type(self.x.dtypes[c]),
                                                 None if r is None else [None] * r)
                   for c, r in zip(carried, ranks)]
        return body, body.graph("loop_body", inputs, outs)

    def extend(self, node: Node) -> None:
        """``l += [x, ...]`` / ``l.extend(...)``: appends of the other list's known items."""
        lst, other = node.inputs
        items = self.sym(other, node)
        if not isinstance(items, (list, tuple)):
            raise self.error(node, f"extending a list by a {describe(items)}")
        t = other.type
        rank = rank_of_type(t.element) if isinstance(t, ListType) else None
        for item in items:
            self.append(node, lst, item, rank)

    def append(self, node: Node, lst: Value, item: Any, rank: int | None) -> None:
        """``lst.append(item)``: known items for a list of this scope, a scan output for a list
        a loop body grows."""
        target = self.sym(lst, node)
        if not isinstance(target, list):
            raise self.error(node, f"appending to a {describe(target)}")
        if lst in self.env.maps[0]:  # a list of this scope: its items are known here
            target.append(item)
            return
        if not self.in_loop:
            raise self.error(node, "a list defined outside a run-time condition is appended "
                             "to inside it")
        if target:
            raise self.error(node, "a loop appends to a list that is not empty before it")
        if any(lst is seen for seen, _, _ in self.appends):
            raise self.error(node, "a loop appends to the same list twice per iteration")
        self.appends.append((lst, self.tensor(item, None, node), rank))
        self.scanning.add(lst)


def flatten(sym: Any) -> tuple[list[Any], Any]:
    """The leaves of a (nested) tuple symbol, depth-first, and its structure."""
    if isinstance(sym, tuple):
        parts = [flatten(s) for s in sym]
        return [leaf for p in parts for leaf in p[0]], tuple(p[1] for p in parts)
    return [sym], None


def unflatten(structure: Any, leaves: Any) -> Any:
    if structure is None:
        return next(leaves)
    return tuple(unflatten(s, leaves) for s in structure)


def rank_of_type(t: Any) -> int | None:
    return t.rank if isinstance(t, TensorType) else (0 if isinstance(t, ScalarType) else None)


def leaf_ranks(t: Any) -> list[int | None]:
    """The rank of each leaf of a (nested) tuple or NamedTuple type, depth-first (None when
    unknown)."""
    if isinstance(t, TupleType):
        return [r for e in t.elements for r in leaf_ranks(e)]
    if isinstance(t, ClassType) and t.named_tuple:
        return [r for _, e in t.fields for r in leaf_ranks(e)]
    if isinstance(t, TensorType):
        return [t.rank]
    return [0 if isinstance(t, ScalarType) else None]


def out_dtype(value: Value, sym: Any, lowering: Lowering) -> Any:
    """The dtype an IR value is stored as: its tensor type's, a number's, or the symbol's."""
    t = value.type
    if isinstance(t, TensorType) and t.dtype is not None:
        return t.dtype
    if isinstance(t, ScalarType) and t in SCALAR_DTYPES:
        return SCALAR_DTYPES[t]
    if isinstance(sym, str):
        return lowering.x.dtypes[sym]
    return None


def describe(sym: Any) -> str:
    if isinstance(sym, list):
        return "list"
    if sym is None:
        return "None"
    return type(sym).__name__


def onnx_type(dtype: Any) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def numpy_dtype(elem_type: int) -> np.dtype:
    return helper.tensor_dtype_to_np_dtype(elem_type)


# -- structural ops: containers, scalars, control flow -------------------------------------------
def _constant(low: Lowering, node: Node) -> Any:
    value = node.attrs["value"]
    if isinstance(value, np.ndarray):
        return low.x.initializer(value, node.output.name)
    if isinstance(value, (list, tuple)):
        return tuple(value) if isinstance(value, tuple) else list(value)
    return value


def _tuple_index(low: Lowering, node: Node) -> Any:
    items, index = low.sym(node.inputs[0], node), low.sym(node.inputs[1], node)
    if not isinstance(index, int):
        raise low.error(node, "the index must be known at export time")
    return items[index]


def _named_field(low: Lowering, node: Node) -> Any:
    """A NamedTuple's field (``state.h``): its item at the field's position."""
    t = node.inputs[0].type
    if not (isinstance(t, ClassType) and t.named_tuple):
        raise low.error(node, f"cannot export {node.kind} of a {t}: only a NamedTuple's fields "
                        "are read in an exported model")
    names = [name for name, _ in t.fields]
    return low.sym(node.inputs[0], node)[names.index(node.attrs["name"])]


def _list_index(low: Lowering, node: Node) -> Any:
    items, index = low.sym(node.inputs[0], node), low.sym(node.inputs[1], node)
    if isinstance(items, Stacked):
        return low.emit("Gather", [items.name, low.tensor(index, np.int64, node)], axis=0)
    if not isinstance(index, int):
        raise low.error(node, "a list indexed by a value computed at run time")
    return items[index]


def _unpack(low: Lowering, node: Node) -> Any:
    items = low.sym(node.inputs[0], node)
    if not isinstance(items, (tuple, list)) or len(items) != len(node.outputs):
        raise low.error(node, f"cannot unpack a {describe(items)} here")
    return Outputs(items)


def _length(low: Lowering, node: Node) -> Any:
    items = low.sym(node.inputs[0], node)
    if isinstance(items, Stacked):
        shape = low.emit("Shape", [items.name], np.int64, start=0, end=1)
        return low.emit("Squeeze", [shape])
    if isinstance(items, (tuple, list)):
        return len(items)
    raise low.error(node, f"len() of a {describe(items)}")


def _is_none(low: Lowering, node: Node) -> Any:
    return low.sym(node.inputs[0], node) is None


def _number_cast(dtype: Any, python_type: type) -> Any:
    def rule(low: Lowering, node: Node) -> Any:
        x = low.sym(node.inputs[0], node)
        if isinstance(x, str):
            return low.tensor(x, dtype, node)
        return python_type(x)
    return rule


def _minmax(op: str, fn: Any) -> Any:
    def rule(low: Lowering, node: Node) -> Any:
        a, b = (low.sym(v, node) for v in node.inputs)
        if not isinstance(a, str) and not isinstance(b, str):
            return fn(a, b)
        dtype = out_dtype(node.output, a, low)
        return low.emit(op, [low.tensor(a, dtype, node), low.tensor(b, dtype, node)], dtype)
    return rule


def _abs(low: Lowering, node: Node) -> Any:
    a = low.sym(node.inputs[0], node)
    if not isinstance(a, str):
        return abs(a)
    dtype = out_dtype(node.output, a, low)
    return low.emit("Abs", [low.tensor(a, dtype, node)], dtype)


def _math(low: Lowering, node: Node) -> Any:
    name, *args = (low.sym(v, node) for v in node.inputs)
    if any(isinstance(a, str) for a in args):
        raise low.error(node, f"math.{name}() of a number known only when the model runs "
                        f"(np.{name} of an array exports)")
    return getattr(math, name)(*args)


STRUCTURE_RULES = {
    "prim::Constant": _constant,
    "prim::TupleConstruct": lambda low, n: tuple(low.sym(v, n) for v in n.inputs),
    "prim::NamedTupleConstruct": lambda low, n: tuple(low.sym(v, n) for v in n.inputs),
    "prim::TupleUnpack": _unpack,
    "prim::ListUnpack": _unpack,
    "prim::TupleIndex": _tuple_index,
    "prim::GetAttr": _named_field,
    "prim::ListIndex": _list_index,
    "prim::ListConstruct": lambda low, n: [low.sym(v, n) for v in n.inputs],
    "prim::ListAppend": lambda low, n: low.append(n, n.inputs[0], low.sym(n.inputs[1], n),
                                                  rank_of_type(n.inputs[1].type)),
    "prim::ListExtend": Lowering.extend,
    "prim::len": _length,
    "prim::IsNone": _is_none,
    "prim::unchecked_unwrap_optional": lambda low, n: low.sym(n.inputs[0], n),
    "prim::Uninitialized": lambda low, n: UNINITIALIZED,
    "prim::Float": _number_cast(np.float64, float),
    "prim::Int": _number_cast(np.int64, int),
    "prim::Bool": _number_cast(np.bool_, bool),
    "prim::min": _minmax("Min", min),
    "prim::max": _minmax("Max", max),
    "prim::abs": _abs,
    "prim::math": _math,
    "prim::If": Lowering.lower_if,
    "prim::Loop": Lowering.lower_loop,
}
"""Lowering rules for the structural ops, by kind: each returns the output symbol(s)."""
