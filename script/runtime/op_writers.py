"""Code for the tensor ops whose generated code is not a plain call of ``script.ops``: matrix
products (numpy's ``np.dot`` in loops, the backend's GEMM for large ones, workspace outputs)
and sums of products, large elementwise ops writing into workspace arrays,
``empty`` from the workspace, the layer norm row kernels, in-place slot writes and sums spelled
as numpy calls; and ``write_call``, a node as a call of a Python callable bound as a global.
Each writer takes the ``codegen.FunctionWriter`` and the node."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

import ir
import ir.registry
from ir.core import Node, Value
from script import ops
from script.runtime import allocator, weak_numbers
from script.runtime.instrument import stage
from script.runtime.slot_writes import slot_writes

if TYPE_CHECKING:
    from script.runtime.codegen import FunctionWriter


def write_call(w: FunctionWriter, node: Node, fn: Callable[..., Any], hint: str) -> None:
    name = w.ns.fresh(hint)
    w.consts[name] = fn
    args = ", ".join(w.ns.name(v) for v in node.inputs)
    expr = f"{name}({args})"
    if len(node.outputs) > 1:
        targets = ", ".join(w.ns.name(v) for v in node.outputs)
        w.emit(f"{targets} = {expr}")
    else:
        w.assign(node, expr)


def same_kind_astype(a: Any, dtype: Any) -> Any:
    """The cast of an in-place update whose dtypes were not known when compiling (an item of
    a list of int and float arrays): numpy's ``TypeError`` where the kind would change."""
    source = getattr(a, "dtype", None)
    if source is not None and not np.can_cast(source, dtype, "same_kind"):
        raise TypeError(f"Cannot cast ufunc output from dtype('{source}') to "
                        f"dtype('{np.dtype(dtype)}') with casting rule 'same_kind' (an in-place "
                        "update keeps the array's dtype: write x = x + v for a new array)")
    return ops.astype(a, dtype)


def write_same_kind_astype(w: FunctionWriter, node: Node) -> None:
    write_call(w, node, same_kind_astype, "_same_kind")


def write_matmul(w: FunctionWriter, node: Node) -> None:
    """A large product of two matrices through the backend's ``matmul_for`` when it has one
    (the CPU's host-vector GEMM, in loops that stay Python too: its helper threads never wait
    for a core, where BLAS's spin for one); else in a loop ``np.dot`` for two matrices: the
    same GEMM as ``@`` with less call overhead (about 0.3 us, a tenth of a small RNN step's
    product); also for an outer product of a column and a row anywhere, which numpy's ``@``
    computes about 4x slower than ``np.dot``; the backend's ``@`` elsewhere."""
    args = [w.ns.name(v) for v in node.inputs]
    matrices = all(isinstance(v.type, ir.TensorType) and v.type.rank == 2 for v in node.inputs)
    product = backend_matmul(node) if matrices and not outer_product(node) else None
    if matrices and product is None and (in_loop(node) or outer_product(node)):
        w.assign(node, f"np.dot({args[0]}, {args[1]})")
        return
    if product is not None and write_with_epilogue(w, node):
        return
    out = allocation(w, node) if allocator.into_output(node) else None
    if product is not None:  # the backend's GEMM (into a workspace array when there is one)
        name = w.ns.fresh("_gemm")
        w.consts[name] = product
        into = f", out={out}" if out is not None else ""
        w.assign(node, f"{name}({args[0]}, {args[1]}{into})")
        return
    if out is not None:  # the product of a workspace array: no fresh pages per call
        w.assign(node, f"np.matmul({args[0]}, {args[1]}, out={out})")
        return
    w.assign(node, w.expression(node, args))


def write_matmul_sum(w: FunctionWriter, node: Node) -> None:
    """A sum of products (the ``matmul-sums`` rewrite) through the backend's ``matmul_sum_for``,
    into a workspace array when there is one; numpy's products and sum otherwise."""
    args = [w.ns.name(v) for v in node.inputs]
    from fuser.backend import backend_of
    backend = backend_of(node)
    product = None
    if backend is not None and backend.matmul_sum_for is not None:
        product = backend.matmul_sum_for(node)
    if product is None:
        w.assign(node, " + ".join(f"{a} @ {b}" for a, b in zip(args[::2], args[1::2])))
        return
    if write_with_epilogue(w, node):
        return
    out = allocation(w, node) if allocator.into_output(node) else None
    name = w.ns.fresh("_gemm")
    w.consts[name] = product
    into = f", out={out}" if out is not None else ""
    w.assign(node, f"{name}({', '.join(args)}{into})")


def write_with_epilogue(w: FunctionWriter, node: Node) -> bool:
    """A product (which the backend's GEMM computes) and the fusion group right after it, when
    that group reads the product, as one call of the backend's ``epilogue_for`` (the group
    computed over each task's columns of the product as the task ends); the group emits
    nothing then. The call gives the product too where another node reads it or the code
    checks every value. False under a profiler, where the group's outputs go into slots or the
    backend has no such function for them."""
    group, value = _group_after(node), node.output
    if (w.profiler is not None or w.device == "cuda" or group is None
            or group.kind != "prim::FusionGroup" or group in w.elided
            or all(u.node is not group for u in value.uses) or slot_writes(group)
            or weak_numbers.inputs_as_arrays(group, w.backend)):
        return False
    product_too = w.checks or any(u.node is not group for u in value.uses)
    from fuser.backend import backend_of
    backend = backend_of(group)
    if backend is None or backend is not backend_of(node) or backend.epilogue_for is None:
        return False
    def workspace(v: Value, product: bool = False) -> tuple | None:  # as ``allocation``'s
        found = allocator.workspace_array(v)
        if found is None or not w.workspace.keep or in_loop(node) or (
                product and not allocator.into_output(node)):
            return None
        return (w.workspace.site(), *found)

    arrays = (workspace(value, True), *[workspace(v) for v in group.outputs])
    with stage("native compile"):
        fused = backend.epilogue_for(node, group, product_too, arrays)
    if fused is None:
        return False
    name = w.ns.fresh("_fused")
    w.consts[name] = fused
    args = [w.ns.name(v) for v in node.inputs] + [
        w.ns.name(v) for v in group.inputs if v is not value]
    targets = [w.ns.name(v) for v in ([value] if product_too else []) + group.outputs]
    w.emit(f"{', '.join(targets)} = {name}({', '.join(args)})")
    w.write_checks(group.outputs, group, "output")
    w.elided.add(group)
    return True


BETWEEN = 4
"""The most pure nodes between a product and the fusion group its epilogue computes."""


def _group_after(node: Node) -> Node | None:
    """The fusion group right after the product ``node``, past at most ``BETWEEN`` pure nodes
    without blocks (``ops.chunk`` of the product for a later group) that none of its inputs
    comes from: computing the group at the product's place reorders it before pure nodes only."""
    between: set[Node] = set()
    n = node.next
    while n is not None and n.kind != "prim::FusionGroup":
        op = ir.registry.lookup(n.kind)
        if len(between) == BETWEEN or n.blocks or op is None or ir.registry.PURE not in op.traits:
            return None
        between.add(n)
        n = n.next
    if n is None or any(v.node in between for v in n.inputs):
        return None
    return n


def backend_matmul(node: Node) -> Any:
    """The device backend's product function for a matrix product outside loops, or None."""
    from fuser.backend import backend_of
    backend = backend_of(node)
    if backend is None or backend.matmul_for is None:
        return None
    return backend.matmul_for(node)


def write_take(w: FunctionWriter, node: Node) -> None:
    """``a[idx]`` inline where ``idx`` is known to have axes (a new array, as the op's result
    must be) or is 0-d and ``a`` a vector (a numpy scalar: ``B[j][obs[t]]``, a value of its own
    in numpy too); else ``ops.take``, which copies the view numpy gives for a 0-d index."""
    index, source = node.inputs[1].type, node.inputs[0].type
    names = [w.ns.name(v) for v in node.inputs]
    if isinstance(index, ir.TensorType) and index.shape is not None and len(index.shape) > 0:
        w.assign(node, w.expression(node, names))
        return
    if isinstance(index, ir.TensorType) and index.shape == () and \
            isinstance(source, ir.TensorType) and source.shape is not None and \
            len(source.shape) == 1 and source.device != "cuda":
        w.assign(node, f"{names[0]}[{names[1]}]")
        return
    write_call(w, node, ops.take, "_take")


def write_empty(w: FunctionWriter, node: Node) -> None:
    """A workspace array (``fuser.workspace``) for a large buffer of static shape; else
    ``np.empty``."""
    out = allocation(w, node)
    w.assign(node, out or w.expression(node, [w.ns.name(v) for v in node.inputs]))


def allocation(w: FunctionWriter, node: Node, output: Value | None = None) -> str | None:
    """``site.empty(shape, dtype)`` of a new site of the function's workspace for the output of
    ``node`` (or its ``output``; None: the op allocates it: in a loop, or a small,
    unknown-shape or GPU array)."""
    found = allocator.workspace_array(output or node.output)
    if found is None or not w.workspace.keep or in_loop(node):
        return None
    site, dtype = w.ns.fresh("_site"), w.ns.fresh("_dtype")
    w.consts[site], w.consts[dtype] = w.workspace.site(), found[1]
    return f"{site}.empty({found[0]!r}, {dtype})"


@functools.cache
def ufunc_spelling(kind: str) -> str | None:
    """The numpy ufunc an elementwise op is (its first ``np.`` spelling that is a ufunc, which
    takes ``out=``), or None."""
    op = ir.registry.lookup(kind)
    if op is None or not op.is_elementwise:
        return None
    return next((sp for sp in op.spellings if sp.startswith("np.")
                 and isinstance(getattr(np, sp[3:], None), np.ufunc)), None)


def write_ufunc_into_workspace(w: FunctionWriter, node: Node) -> bool:
    """A large float elementwise op outside loops as its ufunc writing into a workspace array
    (``np.add(a, b, out=_site.empty(...))``), so a call does not page-fault a fresh array in
    (an 8 MB sum: 2.7 ms fresh, 0.8 ms into a kept array). Only when every tensor operand has
    the output's dtype and the others are Python numbers, so numpy computes in that dtype as
    the operator would; False (nothing written) otherwise."""
    ufunc = ufunc_spelling(node.kind)
    if ufunc is None or len(node.outputs) != 1:
        return False
    out = node.output.type
    if not isinstance(out, ir.TensorType) or out.dtype not in ("float32", "float64"):
        return False
    for v in node.inputs:
        t = v.type
        if isinstance(t, ir.TensorType) and t.dtype == out.dtype and t.device != "cuda":
            continue
        if not (isinstance(t, ir.ScalarType) and t.name in ("int", "float")):
            return False
    into = allocation(w, node)
    if into is None:
        return False
    w.assign(node, f"{ufunc}({', '.join(w.ns.name(v) for v in node.inputs)}, out={into})")
    return True


def outer_product(node: Node) -> bool:
    """A product of an (n, 1) column and a (1, m) row off the GPU."""
    a, b = (v.type for v in node.inputs)
    return a.shape[1] == 1 and b.shape[0] == 1 and "cuda" not in (a.device, b.device)


def in_loop(node: Node) -> bool:
    return node.inside_kind("prim::Loop")


def row_kernel_dtype(node: Node, tensors: list[Value]) -> str | None:
    """The dtype of a row kernel for ``node``: its float32/float64 result on the CPU when every
    tensor in ``tensors`` (None constants aside) has that dtype; None otherwise (the eager op
    runs: CuPy arrays, other dtypes, mixed dtypes that promote)."""
    from fuser.cpu import layouts_supported, rowkernels
    out = node.outputs[0].type
    if not isinstance(out, ir.TensorType) or out.device == "cuda":
        return None
    if not rowkernels.supports(out.dtype) or not layouts_supported():
        return None
    for v in tensors:
        if v.is_constant and v.constant is None:
            continue
        t = v.type.element if isinstance(v.type, ir.OptionalType) else v.type
        if not isinstance(t, ir.TensorType) or t.dtype != out.dtype or t.device == "cuda":
            return None
    return out.dtype


def given(v: Value) -> bool:
    return not (v.is_constant and v.constant is None)


def write_row_kernel(w: FunctionWriter, node: Node,
                      make: Callable[[str, list[bool]], Callable[..., Any]]) -> None:
    """A call of the native row kernel ``make(dtype, which tensor inputs are given)`` when the
    node's tensors are numpy float arrays (the kernel falls back to the eager op for arguments
    it does not handle at run time); the eager op otherwise."""
    tensors = list(node.inputs[:3])
    dtype = row_kernel_dtype(node, tensors)
    if dtype is None:
        w.assign(node, w.expression(node, [w.ns.name(v) for v in node.inputs]))
        return
    with stage("native compile"):
        kernel = make(dtype, [given(v) for v in tensors])
    write_call(w, node, kernel, f"_{node.kind.split('::', 1)[1]}")


def write_layer_norm(w: FunctionWriter, node: Node) -> None:
    from fuser.cpu.rowkernels import layer_norm_forward
    write_row_kernel(w, node, lambda dtype, given: layer_norm_forward(
        dtype, given[1], given[2], ops.layer_norm))


def write_layer_norm_backward(w: FunctionWriter, node: Node) -> None:
    from fuser.cpu.rowkernels import layer_norm_backward
    write_row_kernel(w, node, lambda dtype, given: layer_norm_backward(
        dtype, given[2], ops.layer_norm_backward))


def write_select_put(w: FunctionWriter, node: Node) -> None:
    """``select_put`` along axis 0 as ``ops.select_put`` computes it, inline: a copy, then one
    ``__setitem__`` (the call's own work is most of a small array's write: a one-hot vector
    made per step)."""
    a, value, axis, index = (w.ns.name(v) for v in node.inputs)
    if axis != "0":
        w.assign(node, w.expression(node, [a, value, axis, index]))
        return
    out = w.ns.name(node.output)
    w.emit(f"{out} = {a}.copy()")
    w.emit(f"{out}[{index}] = {value}")


def write_sum(w: FunctionWriter, node: Node) -> None:
    """A host float array's sum over constant axes as ``ops.sum`` computes it (``a.sum(axis,
    keepdims=...)``) without the layers above numpy's reduction: ``np.add.reduce``, which the
    method calls (their Python cost is a third of a small vector's sum: a softmax per step)."""
    a, axis, keep = node.inputs
    t = a.type
    literal = axis.is_constant and (axis.constant is None or type(axis.constant) is int or (
        type(axis.constant) is tuple and all(type(k) is int for k in axis.constant)))
    if not (literal and keep.is_constant and isinstance(t, ir.TensorType)
            and t.dtype in ("float32", "float64") and t.device != "cuda"):
        w.assign(node, w.expression(node, [w.ns.name(v) for v in node.inputs]))
        return
    w.assign(node, f"np.add.reduce({w.ns.name(a)}, {w.ns.name(axis)}, None, None, "
                   f"{bool(keep.constant)})")
