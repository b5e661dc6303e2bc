"""Array layouts and the kernel cache every backend's kernels share.

A call's *layouts* are, per array input in tuple order, its (shape, byte strides, itemsize).
``read_layout`` turns them into what every kernel needs to know about its reads: the iteration
shape (the leaves' broadcast shape) and each leaf's element offset (chunks), shape and element
strides; ``aligned`` and ``collapse`` then give the strides over the iteration dims and merge
dims every access steps through as one. How a backend calls its code from there (slabs of rows
x cols on the CPU, one launch of a grid-stride loop on CUDA) is its own.

Kernels are cached by ``canonical_key``: the group's structure with sizes abstracted to the
broadcast pattern, so a new batch size reuses the kernel.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from fuser.analysis import KernelSpec
from ir.core import CONSTANT, Graph
from ir.types import ListType, TensorType

Layouts = Sequence[tuple[tuple[int, ...], tuple[int, ...], int]]
"""Per array input: (shape, byte strides, itemsize)."""


@dataclass(frozen=True, slots=True)
class Reads:
    """Where each leaf is read for one call's layouts."""

    shape: tuple[int, ...]
    """the iteration shape: the broadcast of the leaves' shapes."""
    offsets: tuple[int, ...]
    """each leaf's element offset in its input (chunks)."""
    shapes: tuple[tuple[int, ...], ...]
    """each leaf's shape (its input's, cut by its views)."""
    strides: tuple[tuple[int, ...], ...]
    """each leaf's element strides over its own dims."""

    def aligned(self) -> list[list[int]]:
        """Each leaf's element strides over the iteration dims (0 where it broadcasts)."""
        return [aligned(s, st, self.shape) for s, st in zip(self.shapes, self.strides)]


def read_layout(spec: KernelSpec, layouts: Layouts) -> Reads | None:
    """The reads of ``spec``'s leaves for array inputs of these layouts; None when a stride is
    not a whole number of elements."""
    slot_of = {inp: k for k, inp in enumerate(spec.array_inputs)}
    offsets, shapes, strides = [], [], []
    for leaf in spec.leaves:
        shape, bstrides, itemsize = layouts[slot_of[leaf.input]]
        if any(s % itemsize for s in bstrides):
            return None
        estrides = tuple(s // itemsize for s in bstrides)
        shape, offset = list(shape), 0
        for axis, view in leaf.views:
            piece = view.piece_size(shape[axis])
            offset += view.index * piece * estrides[axis]
            shape[axis] = piece
        offsets.append(offset)
        shapes.append(tuple(shape))
        strides.append(estrides)
    out_shape = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
    return Reads(out_shape, tuple(offsets), tuple(shapes), tuple(strides))


def aligned(shape: Sequence[int], strides: Sequence[int], out: tuple[int, ...]) -> list[int]:
    """A leaf's element strides over the output's dims: 0 where it broadcasts."""
    lead = len(out) - len(shape)
    return [0 if d < lead or shape[d - lead] == 1 else strides[d - lead] for d in range(len(out))]


def collapse(shape: tuple[int, ...], strides: list[list[int]]) -> list[tuple[int, list[int]]]:
    """(size, per-access stride) per dimension, size-1 dims dropped, and adjacent dims merged
    where every access steps through them as one (a contiguous output always does)."""
    dims: list[tuple[int, list[int]]] = []
    for d in reversed(range(len(shape))):
        if shape[d] == 1:
            continue
        st = [s[d] for s in strides]
        if dims:
            size, inner = dims[0]
            if all(a == b * size for a, b in zip(st, inner)):
                dims[0] = (size * shape[d], inner)
                continue
        dims.insert(0, (shape[d], st))
    return dims


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The strides of a C-contiguous array of ``shape`` (in units of ``itemsize``)."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.insert(0, step)
        step *= max(n, 1)
    return tuple(strides)


def array_slots(spec: KernelSpec) -> list[tuple[int, np.dtype]]:
    """(subgraph input index, numpy dtype) of each array input, in tuple order."""
    graph = spec.graph
    return [(i, np.dtype(graph.inputs[i].type.dtype))  # type: ignore[union-attr]
            for i in spec.array_inputs]


def contiguous_layouts(spec: KernelSpec) -> list[tuple[tuple[int, ...], tuple[int, ...], int]]:
    """The layouts of C-contiguous array inputs of the subgraph's own shapes (the common call,
    compiled when a kernel is made)."""
    graph = spec.graph
    layouts = []
    for i, dtype in array_slots(spec):
        shape = tuple(graph.inputs[i].type.shape)  # type: ignore[union-attr]
        layouts.append((shape, c_strides(shape, dtype.itemsize), dtype.itemsize))
    return layouts


# -- the cache ------------------------------------------------------------------------------------
def canonical_key(graph: Graph) -> str:
    """The group's structure with sizes abstracted to 1 / ``*`` (the broadcast pattern)."""
    ids: dict[Any, int] = {}
    lines = []
    for v in graph.inputs:
        ids[v] = len(ids)
        lines.append(f"in {_pattern(v.type)}")
    for node in graph.nodes():
        args = ",".join(str(ids[u]) for u in node.inputs)
        value = f"={node.attrs.get('value')!r}" if node.kind == CONSTANT else ""
        outs = ",".join(_pattern(o.type) for o in node.outputs)
        for o in node.outputs:
            ids[o] = len(ids)
        lines.append(f"{node.kind}{value}({args})->{outs}")
    lines.append("return " + ",".join(str(ids[v]) for v in graph.outputs))
    return "\n".join(lines)


def _pattern(t: Any) -> str:
    if isinstance(t, ListType):  # a cat's pieces
        return f"{_pattern(t.element)}[]"
    if not isinstance(t, TensorType) or t.shape is None:
        return str(t)
    dims = ",".join("1" if d == 1 else "*" for d in t.shape)
    return f"{t.dtype}[{dims}]"


K = TypeVar("K")


class KernelCache(Generic[K]):
    """Kernels by key, each made once per process (under ``lock``, so concurrent first calls
    make it once)."""

    def __init__(self, lock: Any | None = None):
        self.lock = threading.RLock() if lock is None else lock
        self._kernels: dict[Any, K] = {}

    def get(self, key: Any, make: Callable[[], K]) -> K:
        """The kernel cached under ``key``, or ``make()``'s (cached when it returns)."""
        kernel = self._kernels.get(key)
        if kernel is not None:
            return kernel
        with self.lock:
            kernel = self._kernels.get(key)
            if kernel is None:
                kernel = self._kernels[key] = make()
        return kernel

    def __len__(self) -> int:
        return len(self._kernels)
