"""Code for the subgraph nodes: a fusion group as a call of its backend's native kernel (into
the slots its outputs are stored in, or workspace arrays), inline numpy arithmetic for a small
group of numbers, a group no backend compiles as a generated Python function of its own
(``FunctionWriter.write_subgraph_call``). Each writer takes the ``codegen.FunctionWriter`` and
the node."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

import ir
from ir.core import Node, Value
from ir.ops.elementwise import UFUNC_ATTR
from ir.registry import ARRAY_RESULT
from script.runtime import op_writers
from script.runtime.instrument import stage
from script.runtime.slot_writes import overlap_checks, slot_writes, update_writes

if TYPE_CHECKING:
    from script.runtime.codegen import FunctionWriter


def write_fusion_group(w: FunctionWriter, node: Node) -> None:
    """A fusion group calls the native kernel of its device's fuser backend (CUDA when its
    tensors are CuPy arrays, else CPU); groups the backend cannot compile run as Python."""
    from fuser.backend import backend_of
    backend = backend_of(node)
    if backend is None:
        w.write_subgraph_call(node)
        return
    if numbers_only(node):
        _write_inline_group(w, node)
        return
    try:
        with stage("native compile"):
            kernel = backend.compile_group(node.subgraph)
    except ValueError:
        w.write_subgraph_call(node)
        return
    site = getattr(kernel, "site", None)  # each call site keeps its own fast path (CPU)
    kernel = site() if site is not None else kernel
    # a kernel with ``into`` (CPU) writes straight into the slots its outputs are stored in
    writes = slot_writes(node) if hasattr(kernel, "into") else {}
    updates = update_writes(node) if hasattr(kernel, "into") else {}
    sites = [op_writers.allocation(w, node, v) for v in node.outputs] if hasattr(
        kernel, "into") and not writes and not updates else []
    if not writes and not updates and not any(sites):
        op_writers.write_call(w, node, kernel, "_kernel")
    else:
        _write_into_slots(w, node, kernel, writes, sites, updates)
    for k, v in enumerate(node.outputs):  # a ufunc's 0-d result is a numpy scalar, as numpy's
        if k not in writes and isinstance(v.type, ir.TensorType) and v.type.shape == () and \
                v.type.device != "cuda":
            _write_scalar_result(w, node, w.ns.name(v), node.subgraph.outputs[k])


def _write_scalar_result(w: FunctionWriter, node: Node, name: str, inner: Value) -> None:
    """A kernel's 0-d output as numpy gives it: a numpy scalar for a ufunc's result (``np.tanh``
    of a 0-d array is a ``np.float64``), an array for the ``ARRAY_RESULT`` ops (``np.where``,
    ``copy``; a where a ufunc's composite ends with is marked ``UFUNC_ATTR``), and for
    ``astype`` what its operand is (a numpy scalar's cast is one, a 0-d array's is an array)."""
    while inner.node.kind == "tensor::astype" and not inner.is_param:
        inner = inner.node.inputs[0]
    if inner.is_param:
        outer = w.ns.name(node.inputs[inner.index])
        w.emit(f"if type({outer}) is not np.ndarray: {name} = {name}[()]")
    else:
        op = ir.registry.lookup(inner.node.kind)
        if op is None or ARRAY_RESULT not in op.traits or inner.node.attrs.get(UFUNC_ATTR):
            w.emit(f"{name} = {name}[()]")


SCALAR_GROUP_NODES = 4
"""A host fusion group of 0-d values with at most this many nodes runs as numpy's arithmetic on
numbers, inline: a kernel call (about a microsecond) costs more than their numpy calls (a tenth
to a third of that each: a loss summed over a loop's steps); a native loop still compiles the
group as its own."""


def numbers_only(node: Node) -> bool:
    """Whether fusion group ``node`` runs inline as numpy's arithmetic on numbers (see
    ``SCALAR_GROUP_NODES``)."""
    return len(node.subgraph.block.nodes) <= SCALAR_GROUP_NODES and all(
        isinstance(v.type, ir.TensorType) and v.type.shape == () and v.type.device != "cuda"
        for v in node.outputs)


def _write_inline_group(w: FunctionWriter, node: Node) -> None:
    """The group's subgraph written into the function, its inputs named as the group's."""
    sub = node.subgraph
    for inner, outer in zip(sub.inputs, node.inputs):
        w.ns.names[inner] = w.ns.name(outer)
    for n in sub.block:
        w.write_plain_node(n)
    w.assign_values(node.outputs, sub.outputs)


def _write_into_slots(w: FunctionWriter, node: Node, kernel: Any, writes: dict[int, Node],
                      sites: list[str | None], updates: dict[int, Node]) -> None:
    """The kernel writes output ``k`` into the slot ``writes[k]`` stores it in (taken before the
    call; the ``write_slot`` emits nothing), into the caller's array ``updates[k]`` writes into
    (the ``write_into`` emits nothing: its result is that array), or into the workspace array
    ``sites[k]`` (a large output outside loops, so a call does not page-fault a fresh array
    in); the output is what ``Kernel.into`` returns."""
    outs, copies = [], []
    for k in range(len(node.outputs)):
        update = updates.get(k)
        if update is not None:
            outs.append(_update_target(w, node, update, copies))
            continue
        write = writes.get(k)
        if write is None:
            outs.append(sites[k] if sites and sites[k] else "None")
            continue
        buf, axis, idx, _ = (w.ns.name(v) for v in write.inputs)
        slot = w.ns.fresh("_slot")
        # the trailing Ellipsis keeps a 0-d item a view (buf[i] of a 1-D buf is a numpy scalar)
        w.emit(f"{slot} = {buf}[{':, ' * write.inputs[1].constant}{idx}, ...]")
        outs.append(slot)
        w.elided.add(write)
    name = w.ns.fresh("_kernel")
    w.consts[name] = kernel
    args = "".join(f", {w.ns.name(v)}" for v in node.inputs)
    targets = ", ".join(w.ns.name(v) for v in node.outputs)
    w.emit(f"{targets} = {name}.into(({', '.join(outs)},){args})")
    for target, dst, k in copies:  # (an input overlapping the array: computed apart, copied)
        w.emit(f"if {target} is None: {dst}[...] = {w.ns.name(node.outputs[k])}")
    for write in updates.values():
        if write.output.uses:
            w.emit(f"{w.ns.name(write.output)} = {w.ns.name(write.inputs[0])}")


def _update_target(w: FunctionWriter, node: Node, write: Node,
                   copies: list[tuple[str, str, int]]) -> str:
    """The array output ``k`` of ``node`` is computed in: the one ``write`` writes into, or,
    where the group reads an array sharing memory with it when it runs (``overlap_checks``),
    None (a new array, which is then copied into it)."""
    w.elided.add(write)
    dst = w.ns.name(write.inputs[0])
    others = overlap_checks(node, write)
    if not others:
        return dst
    if "_may_share" not in w.consts:
        w.consts["_may_share"] = np.may_share_memory
    target = w.ns.fresh("_into")
    shared = " or ".join(f"_may_share({dst}, {w.ns.name(v)})" for v in others)
    w.emit(f"{target} = None if {shared} else {dst}")
    copies.append((target, dst, node.outputs.index(write.inputs[1])))
    return target
