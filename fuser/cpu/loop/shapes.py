"""Loops over arrays whose sizes are known only at run time (``Double(*, 400)``: a sentence of
``T = len(x)`` words): ``RunTimeShapes`` compiles such a loop when it is reached, for the shapes
the arrays entering it have then.

The loop is copied into a graph of its own whose inputs are the values it reads from outside
and its initial carried values, typed with the concrete dtype and shape of each array whose
type has an unknown size; shape propagation then types the copied body, and the copy is
analyzed (``LoopProgram``) and compiled (``NativeLoop``) as any loop of known shapes. Each
specialization is kept per key (the dtypes and shapes of those arrays), so a later call with
the same shapes runs at once, and a call whose shapes cannot run natively (a shape error, a
refused body) runs the Python loop. The machine code of a native loop does not depend on sizes
(they are run-time arguments): specializations whose types agree but for the run-time sizes
(``_fingerprint``) share it, so a new length costs the analysis, not a new LLVM module.

Whether the body can run natively at all is decided when compiling: the copy is specialized
once with every unknown size set to ``PROBE_SIZE``; a refusal then (an op with no native code)
keeps the loop Python, and ``explain`` reports it.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from fuser.cpu.loop.body import LoopRefused
from fuser.cpu.loop.program import LoopProgram
from fuser.cpu.loop.rows import row_split
from fuser.cpu.loop.runtime import NativeLoop
from ir.core import Graph, Node, Value, clone_node
from ir.registry import ShapeError
from ir.types import ListType, TensorType, Type, is_subtype

PROBE_SIZE = 3
"""the size an unknown dimension gets when compiling, to see whether the body runs natively."""
MAX_SHAPES = 256
"""specializations kept per loop; calls with further shapes run the Python loop."""


def run_time_shaped(t: Type) -> bool:
    """Whether ``t`` is an array of known dtype and rank with a size known only at run time."""
    return (isinstance(t, TensorType) and t.dtype is not None and t.shape is not None
            and None in t.shape)


def outside_values(node: Node) -> list[Value]:
    """The values from outside loop ``node`` its body reads (constants excluded), in first-use
    order."""
    (body,) = node.blocks
    inside = set(body.params)
    seen: set[Value] = set()
    out = []
    for n in body:
        for v in n.inputs:
            if v not in inside and v not in seen and not _copied_constant(v):
                seen.add(v)
                out.append(v)
        inside.update(n.outputs)
    return out


def _copied_constant(v: Value) -> bool:
    """A constant the copy of the loop gets as a constant of its own: anything but an array."""
    return v.is_constant and not isinstance(v.type, (TensorType, ListType))


class RunTimeShapes:
    """A loop whose arrays have sizes known only at run time: ``loop(trip, free, inits)`` (free:
    ``outside_values`` in order) runs it natively, specialized on its arrays' shapes, or
    returns None (the caller runs the Python loop)."""

    runtime_shapes = True

    def __init__(self, node: Node):
        self.node = node
        self.free = outside_values(node)
        trip, _, *carried = node.inputs
        self.shaped_free = [k for k, v in enumerate(self.free) if run_time_shaped(v.type)]
        self.shaped_inits = [k for k, v in enumerate(carried) if run_time_shaped(v.type)]
        self.specialized: dict[tuple, tuple[NativeLoop, list[int]] | None] = {}
        self.lock = threading.Lock()
        self.code: dict[Any, Any] = {}
        """the machine code the specializations share (``NativeLoop.shared``)."""
        if not (self.shaped_free or self.shaped_inits):
            raise LoopRefused("no array of the loop has a size known only at run time")
        probe = [t.with_shape(tuple(PROBE_SIZE if d is None else d for d in t.shape))
                 for t in self._types()]
        try:
            self._specialize(probe)
        except ShapeError as e:
            raise LoopRefused(f"the body does not type with sizes {PROBE_SIZE} ({e})") from None

    @property
    def calls(self) -> int:
        """How many calls ran natively."""
        return sum(found[0].calls for found in list(self.specialized.values())
                   if found is not None)

    def __repr__(self) -> str:
        return f"<fuser.cpu.RunTimeShapes {len(self.specialized)} shapes>"

    def _types(self) -> list[TensorType]:
        """The declared types of the arrays with run-time sizes (free values, then inits)."""
        carried = self.node.inputs[2:]
        return ([self.free[k].type for k in self.shaped_free]  # type: ignore[misc]
                + [carried[k].type for k in self.shaped_inits])

    def __call__(self, trip: Any, free: tuple, inits: tuple) -> tuple | None:
        arrays = [free[k] for k in self.shaped_free] + [inits[k] for k in self.shaped_inits]
        key = []
        for a in arrays:
            if type(a) is not np.ndarray:
                return None
            key.append((a.dtype, a.shape))
        found = self.specialized.get(key := tuple(key), False)  # type: ignore[assignment]
        if found is False:
            found = self._compile(key)
        if found is None:
            return None
        native, positions = found
        return native(trip, tuple([free[k] for k in positions]), inits)

    def _compile(self, key: tuple) -> tuple[NativeLoop, list[int]] | None:
        with self.lock:
            found = self.specialized.get(key, False)
            if found is not False:
                return found
            if len(self.specialized) >= MAX_SHAPES:
                return None
            types = [declared.with_shape(shape) for declared, (_, shape) in
                     zip(self._types(), key)]
            if any(np.dtype(declared.dtype) != dtype or not is_subtype(t, declared)
                   for declared, t, (dtype, _) in zip(self._types(), types, key)):
                found = None  # not the arrays the types promise: numpy says what happens
            else:
                try:
                    found = self._specialize(types)
                except (ShapeError, LoopRefused):
                    found = None
            self.specialized[key] = found
            return found

    def _specialize(self, types: list[TensorType]) -> tuple[NativeLoop, list[int]]:
        """The native loop of a copy of the loop whose run-time-sized arrays have ``types``, and
        per value it reads from outside, its position in ``free``."""
        from passes.shape_prop import propagate_graph
        node = self.node
        graph = Graph(name="loop")
        vmap: dict[Value, Value] = {}
        given = dict(zip([self.free[k] for k in self.shaped_free]
                         + [node.inputs[2 + k] for k in self.shaped_inits], types))
        (body,) = node.blocks
        inside = {v for n in body for v in n.outputs}
        constants = [v for n in body for v in n.inputs if _copied_constant(v) and v not in inside]
        for v in [*self.free, *node.inputs, *constants]:
            if v in vmap:
                continue
            if _copied_constant(v):
                vmap[v] = graph.constant(v.constant, v.type)
            else:
                vmap[v] = graph.add_input(given.get(v, v.type), v.name)
        copy = clone_node(node, graph, vmap)
        graph.block.append(copy)
        for v in copy.outputs:
            graph.add_output(v)
        propagate_graph(graph)
        prog = LoopProgram.of(copy)
        prog.batch = row_split(prog)
        native = NativeLoop(prog, self.code,
                            _fingerprint(copy, [d for t in types for d in t.shape]))
        position = {vmap[v]: k for k, v in enumerate(self.free)}
        return native, [position[v] for v in native.prog.free]


def _fingerprint(loop: Node, sizes: list[Any]) -> tuple | None:
    """The types of every value of a specialized copy of the loop, each size it was given at
    run time written as the position of its first occurrence in ``sizes``; None when one is 0
    or 1 (sizes the analysis treats apart: an empty reduction, a broadcast).

    Two copies of one loop with the same fingerprint compare every pair of sizes alike (two
    sizes are equal in one exactly when they are in the other), and no size given at run time
    equals a size the types hold for another reason, so the analysis decides alike and the
    builder makes the same code: only the sizes, run-time arguments of that code, differ."""
    given = [d for d in sizes if isinstance(d, int)]
    if any(d < 2 for d in given):
        return None
    first = {d: k for k, d in reversed(list(enumerate(given)))}

    def canonical(t: Type) -> Any:
        if isinstance(t, TensorType) and t.shape is not None:
            return (t.dtype, tuple(("size", first[d]) if d in first else d for d in t.shape))
        return str(t)

    (body,) = loop.blocks
    values = [*loop.inputs, *body.params]
    for n in body:
        values += [*n.inputs, *n.outputs]
    return tuple(canonical(v.type) for v in values)
