"""What a fusion group reads: the walk both kernel backends (CPU and CUDA) share.

A group's tensor reads are *leaves*: a group input seen through the chunk/split views on the way
to it. Its writes are *stores*: a whole output, or one piece of an output that a ``cat`` makes
(the piece is written at its offset along the cat's axis; the kernel iterates over the pieces'
shape). ``analyze`` walks a group subgraph from its outputs, collects the leaves in argument order
and checks every computing node against the backend's rule table; the backends differ only in
their tables and storage dtypes, passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass, field

from ir.core import CONSTANT, Graph, Node, Value
from ir.types import TensorType


# -- the group's structure: views and leaves ---------------------------------------------------
@dataclass(frozen=True, slots=True)
class View:
    """One chunk/split piece on the way from a group output to a leaf."""

    axis: int
    """the axis, counted from the right (-1 is the last), so it survives broadcasting."""
    index: int
    """which piece."""
    pieces: int
    """how many pieces the axis is cut into."""
    kind: str
    """``chunk`` (ceil-sized pieces, torch.chunk) or ``split`` (equal pieces)."""

    def piece_size(self, n: int) -> int:
        return -(-n // self.pieces) if self.kind == "chunk" else n // self.pieces


@dataclass(frozen=True, slots=True)
class Leaf:
    """A tensor read of the kernel: group input ``input`` cut by ``views`` (leaf axes, inner
    view first)."""

    input: int
    """index of the subgraph input."""
    views: tuple[tuple[int, View], ...]
    """(axis of the input, view) pairs, the view nearest the input first."""
    dtype: str
    """the input's dtype (the storage the kernel loads)."""


VIEW_OPS: dict[str, str] = {"tensor::chunk": "chunk", "tensor::split": "split"}
"""Ops a group may contain that cut their input into pieces read at offsets (no compute)."""


def seen_by(operand: Value, views: tuple[View, ...]) -> tuple[View, ...]:
    """The views of an elementwise op's result that its ``operand`` sees: those along an axis
    the operand broadcasts (size 1, or missing) take all of it there (``k - x[1:2, 0:1]``,
    chunked along rows, reads that one element in every piece)."""
    t = operand.type
    if not isinstance(t, TensorType) or t.shape is None:
        return views
    rank = len(t.shape)
    return tuple(v for v in views if rank + v.axis >= 0 and t.shape[rank + v.axis] != 1)


def leaf_for(value: Value, views: tuple[View, ...]) -> Leaf:
    """The leaf reading subgraph input ``value`` through ``views`` (outermost view last).

    Views along an axis the input broadcasts (size 1, or missing) do not reach it.
    """
    t = value.type
    assert isinstance(t, TensorType) and t.shape is not None
    rank = len(t.shape)
    kept = []
    for view in views:
        axis = rank + view.axis
        if axis >= 0 and t.shape[axis] != 1:
            kept.append((axis, view))
    return Leaf(value.index, tuple(kept), t.dtype or "")


@dataclass(frozen=True, slots=True)
class Store:
    """One write of the kernel: ``value`` at each point of the iteration space, into group
    output ``output`` (at piece ``index`` of ``pieces`` along ``axis`` for a cat's output)."""

    output: int
    """index of the group output."""
    value: Value
    """the subgraph value computed and stored."""
    axis: int = -1
    """the cat's axis, counted from the right."""
    index: int = 0
    """which piece."""
    pieces: int = 1
    """how many pieces (1: the whole output)."""


CAT = "tensor::cat"


@dataclass
class KernelSpec:
    """What a compiled kernel reads and writes, independent of sizes."""

    graph: Graph
    """the group's subgraph."""
    leaves: list[Leaf]
    """the tensor reads, in argument order."""
    array_inputs: list[int]
    """subgraph inputs passed as arrays (tensors), in tuple order."""
    scalar_inputs: list[int]
    """subgraph inputs passed as Python numbers (doubles)."""
    out_dtypes: list[str]
    """dtype of each output."""
    leaf_index: dict[Leaf, int] = field(default_factory=dict)
    stores: list[Store] = field(default_factory=list)
    """the writes, in argument order (one per output unless a cat's output is among them)."""


def view_of(node: Node, index: int) -> View:
    """The view that output ``index`` of a chunk/split node takes of its input."""
    t = node.inputs[0].type
    assert isinstance(t, TensorType) and t.shape is not None
    pieces = node.inputs[1].constant
    axis = node.inputs[2].constant if len(node.inputs) > 2 else 0
    axis = axis % len(t.shape) - len(t.shape)
    return View(axis, index, int(pieces), VIEW_OPS[node.kind])


def admits(node: Node, rules: Container[str], accepts: dict[str, Callable[[Node], bool]],
           bool_results: Container[str], storage: Container[str]) -> bool:
    """Does a backend with these tables have code for ``node`` (with its constant arguments)?"""
    if node.kind not in rules or len(node.outputs) != 1:
        return False
    t = node.outputs[0].type
    if not isinstance(t, TensorType) or t.dtype not in storage:
        return False
    if t.dtype == "bool" and node.kind not in bool_results:
        return False
    check = accepts.get(node.kind)
    return check is None or check(node)


def analyze(graph: Graph, storage: Container[str], can_generate: Callable[[Node], bool],
            backend: str, cats: bool = False) -> KernelSpec:
    """Find the leaves and stores of ``graph``; ValueError for an input, output or node the
    backend (named ``backend`` in the message) cannot generate. ``cats``: the backend stores cat
    pieces at offsets (a cat's output must then be a group output only)."""
    array_inputs, scalar_inputs = [], []
    for v in graph.inputs:
        t = v.type
        if not isinstance(t, TensorType):
            scalar_inputs.append(v.index)
            continue
        if t.dtype not in storage or t.shape is None or None in t.shape:
            raise ValueError(f"group input %{v.name} has type {t}: need a known float/bool "
                             "dtype and shape")
        array_inputs.append(v.index)
    out_dtypes = []
    for v in graph.outputs:
        t = v.type
        if not isinstance(t, TensorType) or t.dtype not in storage:
            raise ValueError(f"group output %{v.name} has type {t}")
        out_dtypes.append(t.dtype)
    spec = KernelSpec(graph, [], array_inputs, scalar_inputs, out_dtypes)
    for i, v in enumerate(graph.outputs):
        spec.stores.extend(_stores_of(i, v, backend, cats))
    seen: set[tuple[Value, tuple[View, ...]]] = set()
    stack: list[tuple[Value, tuple[View, ...]]] = [(s.value, ()) for s in reversed(spec.stores)]
    while stack:
        v, views = stack.pop()
        if (v, views) in seen:
            continue
        seen.add((v, views))
        if v.is_param:
            if isinstance(v.type, TensorType):
                _add_leaf(spec, leaf_for(v, views))
            continue
        node = v.node
        if node.kind == CONSTANT:
            continue
        if node.kind in VIEW_OPS:
            stack.append((node.inputs[0], (view_of(node, v.index),) + views))
            continue
        if node.kind == CAT:
            raise ValueError(f"{CAT} output %{v.name} is read inside the group")
        if not can_generate(node):
            raise ValueError(f"the {backend} fuser cannot generate {node.kind}")
        stack.extend((u, seen_by(u, views)) for u in reversed(node.inputs))
    return spec


def _stores_of(output: int, v: Value, backend: str, cats: bool) -> list[Store]:
    """The stores that write group output ``v``: one, or one per piece of a cat."""
    if v.is_param or v.node.kind != CAT:
        return [Store(output, v)]
    if not cats:
        raise ValueError(f"the {backend} fuser cannot generate {CAT}")
    node = v.node
    pieces = node.inputs[0].node.inputs if node.inputs[0].node.kind == "prim::ListConstruct" \
        else ()
    t = v.type
    assert isinstance(t, TensorType) and t.shape is not None
    shapes = {p.type.shape for p in pieces if isinstance(p.type, TensorType)}
    if not pieces or len(shapes) != 1 or len(pieces) != sum(
            isinstance(p.type, TensorType) for p in pieces):
        raise ValueError(f"{CAT} of %{v.name}: the pieces must be tensors of one shape")
    axis = node.inputs[1].constant if len(node.inputs) > 1 else 0
    if not isinstance(axis, int):
        raise ValueError(f"{CAT} of %{v.name}: the axis must be a constant")
    axis = axis % len(t.shape) - len(t.shape)
    return [Store(output, p, axis, j, len(pieces)) for j, p in enumerate(pieces)]


def _add_leaf(spec: KernelSpec, leaf: Leaf) -> None:
    if leaf not in spec.leaf_index:
        spec.leaf_index[leaf] = len(spec.leaves)
        spec.leaves.append(leaf)
