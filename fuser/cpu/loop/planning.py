"""A variant's plan: the layout (shape, strides, item size) of every value a loop's steps read
or make for the arrays of one call, and the sizes, strides, offsets and kernel plans the
machine code reads from its ints (``LoopBuilder.ints``' keys) to run those layouts."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fuser.cpu import blas
from fuser.cpu.loop import coop, regions
from fuser.cpu.loop.body import (
    CONSTRUCTORS,
    LAYER_NORMS,
    PIECES,
    PURE_WRITE,
    REDUCTIONS,
    SLOT_WRITES,
    VIEWS,
    WRITES,
    int_list,
    known_array,
    reduction,
    split_pieces,
    write_parts,
    write_target,
)
from fuser.cpu.loop.layouts import (
    Layout,
    Unplannable,
    as_matrix,
    block_copy,
    broadcast,
    c_layout,
    dense,
    gemm_operand,
    list_item_layouts,
    slot_prefix,
    unit_axes,
)
from fuser.cpu.loop.program import LoopProgram
from ir.core import Node, Value


def plan(prog: LoopProgram, arrays: list[np.ndarray], items_at: tuple,
         choose_gemm: Callable[..., int]) -> tuple[dict[Value, Layout], dict[Any, int],
                                                  dict[Node, Any], list[np.ndarray]]:
    """The layouts of the loop's values for these arrays (``items_at``: the strides of the
    lists' items), the ints the machine code reads (``LoopBuilder.ints``' keys), the fusion
    groups' kernel plans and the constant arrays the steps copy; ``choose_gemm(layout of A,
    A as a GEMM operand, B as one, m, n, k)`` picks each matmul's kernel. ``Unplannable`` when
    these layouts cannot run natively."""
    layouts: dict[Value, Layout] = {}
    for v, a in zip(prog.free_arrays, arrays):
        layouts[v] = (a.shape, a.strides, a.itemsize)
    for p in prog.params:
        layouts[p] = c_layout(p.type)  # type: ignore[arg-type]
    for v in prog.produced:
        layouts[v] = c_layout(v.type)  # type: ignore[arg-type]
    ints: dict[Any, int] = {}
    plans: dict[Node, Any] = {}
    constants: list[np.ndarray] = []
    """the constant arrays of the body, as the steps copy them (kept alive with the code)."""
    (body,) = prog.node.blocks
    for v in prog.sequenced:
        shape, _, item = layouts[v]
        ints[("seq", v)] = int(np.prod(shape, dtype=np.int64)) * item
    ints[("ndarray",)] = id(np.ndarray)
    item_layouts = list_item_layouts(prog, items_at, ints)
    for n in body:
        if n.kind == "prim::DictGetItem":
            layouts[n.output] = c_layout(prog.item_types[n.inputs[0]])
        elif n.kind in ("prim::ListIndex", "prim::ListPop"):
            lst = n.inputs[0]
            if int_list(lst):
                continue  # an int
            if lst not in prog.unbound:
                layouts[n.output] = item_layouts[lst]
                continue
            x, ax = prog.unbound[lst]
            shape, strides, item = layouts[x]
            ax = ax + len(shape) if ax < 0 else ax
            layouts[n.output] = (shape[:ax] + shape[ax + 1:], strides[:ax] + strides[ax + 1:],
                                 item)
            ints[("dim", n)], ints[("stride", n)] = shape[ax], strides[ax]
        elif n.kind == "tensor::select":
            x, axis, _ = n.inputs
            shape, strides, item = layouts[x]
            ax = int(axis.constant)
            ax = ax + len(shape) if ax < 0 else ax
            if not 0 <= ax < len(shape):
                raise Unplannable
            layouts[n.output] = (shape[:ax] + shape[ax + 1:], strides[:ax] + strides[ax + 1:],
                                 item)
            ints[("dim", n)], ints[("stride", n)] = shape[ax], strides[ax]
        elif regions.is_region_write(n):
            regions.plan(n, layouts, ints)
        elif n.kind in SLOT_WRITES:
            buf, axis, _, value = write_parts(n)
            if n.kind == "tensor::select_put_":
                layouts[n.output] = layouts[buf]
            if n.kind == PURE_WRITE:  # the old array is copied whole first
                if not dense(*layouts[buf]):
                    raise Unplannable
                shape, _, item = layouts[buf]
                ints[("copy bytes", n)] = int(np.prod(shape, dtype=np.int64)) * item
            shape, strides, item = layouts[write_target(n)]
            ax = int(axis.constant)
            ints[("dim", n)], ints[("stride", n)] = shape[ax], strides[ax]
            if known_array(value) is None:  # a number filling the slot (a dense row)
                ints[("fill count", n)] = int(np.prod(shape[1:], dtype=np.int64))
                continue
            if not block_copy(layouts[write_target(n)], ax, layouts[value]):
                # element by element along the value's axes (a transposed gradient)
                v_shape, v_strides, _ = layouts[value]
                if not v_shape or prog.batch is not None:
                    raise Unplannable  # (row ranges copy whole blocks)
                regions.plan_copy(n, v_shape, v_strides, strides[:ax] + strides[ax + 1:],
                                  ints)
                continue
            block_shape = shape[ax + 1:]
            outer = slot_prefix(shape[:ax], strides[:ax])
            assert outer is not None
            ints[("bytes", n)] = int(np.prod(block_shape, dtype=np.int64)) * item
            if ax > 0:  # the slot is `outer` blocks, `outer stride` bytes apart
                ints[("outer", n)], ints[("outer stride", n)] = outer
        elif n.kind in ("prim::TupleUnpack", "prim::TupleIndex"):
            items = prog.tuples[n.inputs[0]]
            chosen = (items if n.kind == "prim::TupleUnpack"
                      else [items[int(n.inputs[1].constant)]])
            for out, item in zip(n.outputs, chosen):
                if item in layouts:
                    layouts[out] = layouts[item]
        elif n.kind == "tensor::slice":
            x, axis, start, stop, step = n.inputs
            shape, strides, item = layouts[x]
            ax = int(axis.constant)
            ax = ax + len(shape) if ax < 0 else ax
            picked = range(shape[ax])[slice(start.constant, stop.constant, step.constant)]
            out_shape = tuple(n.output.type.shape)  # type: ignore[union-attr]
            if len(picked) != out_shape[ax]:
                raise Unplannable
            first = picked.start if len(picked) else 0
            ints[("slice offset", n)] = first * strides[ax]
            out_strides = list(strides)
            out_strides[ax] = strides[ax] * picked.step
            layouts[n.output] = (out_shape, tuple(out_strides), item)
        elif n.kind in PIECES:  # views: the input at an offset, with its strides
            found = split_pieces(n)
            assert found is not None
            ax, piece, _ = found
            shape, strides, item = layouts[n.inputs[0]]
            for k, out in enumerate(n.outputs):
                ints[("piece offset", n, k)] = k * piece * strides[ax]
                layouts[out] = (tuple(out.type.shape), strides, item)  # type: ignore
        elif n.kind == "tensor::reshape":
            if n.output in prog.same:
                layouts[n.output] = layouts[n.inputs[0]]
            elif dense(*layouts[n.inputs[0]]):
                layouts[n.output] = c_layout(n.output.type)  # type: ignore[arg-type]
            else:  # a view when only axes of length 1 come or go, else numpy would copy
                layouts[n.output] = unit_axes(layouts[n.inputs[0]],
                                              tuple(n.output.type.shape))  # type: ignore
        elif n.kind == "tensor::cat":
            pieces = prog.constructed[n.inputs[0]]
            shape, _, item = layouts[n.output]
            ax = int(n.inputs[1].constant)
            ax = ax + len(shape) if ax < 0 else ax
            inner = int(np.prod(shape[ax + 1:], dtype=np.int64)) * item
            ints[("cat outer", n)] = int(np.prod(shape[:ax], dtype=np.int64))
            ints[("cat row", n)] = int(np.prod(shape[ax:], dtype=np.int64)) * item
            offset = 0
            for k, v in enumerate(pieces):
                p_shape, p_strides, _ = layouts[v]
                prefix = slot_prefix(p_shape[:ax], p_strides[:ax])
                if prefix is None or not dense(p_shape[ax:], p_strides[ax:], item):
                    raise Unplannable
                block = p_shape[ax] * inner
                ints[("cat offset", n, k)] = offset
                ints[("cat block", n, k)] = block
                ints[("cat stride", n, k)] = prefix[1] if prefix[0] > 1 else block
                offset += block
        elif n.kind == "tensor::matmul":
            a, bm = n.inputs
            la, lb = as_matrix(layouts[a], row=True), as_matrix(layouts[bm], row=False)
            ga, gb = gemm_operand(la), gemm_operand(lb)
            if ga is None or gb is None:
                raise Unplannable
            (m, k), (_, nn) = la[0], lb[0]
            flags = [blas.CBLAS_TRANS if g[0] else blas.CBLAS_NO_TRANS for g in (ga, gb)]
            own = choose_gemm(la, ga, gb, m, nn, k)
            incx = 1 if gb[0] else gb[1]  # B's one column, for the matrix-vector kernel
            for j, value in enumerate((m, nn, k, *flags, ga[1], gb[1], max(nn, 1), own,
                                       incx)):
                ints[("gemm", n, j)] = value
        elif n.kind in REDUCTIONS and n.output in prog.same:
            layouts[n.output] = layouts[n.inputs[0]]
        elif n.kind in REDUCTIONS:
            pair = prog.products.get(n)
            if pair is None:
                shape, strides, item = layouts[n.inputs[0]]
            else:  # the operands of a product, broadcast to its shape
                shape = tuple(n.inputs[0].type.shape)  # type: ignore[union-attr]
                (_, strides, item), (_, strides_b, _) = (
                    broadcast(layouts[v], shape) for v in pair)
                for a, s_ in enumerate(strides_b):
                    ints[("reduce stride b", n, a)] = s_
            found = reduction(n)
            assert found is not None
            axes, out_axis = found
            out_shape, out_strides, _ = layouts[n.output]
            ints[("reduce count", n)] = int(np.prod(out_shape, dtype=np.int64))
            ints[("reduce n", n)] = int(np.prod([shape[a] for a in axes], dtype=np.int64))
            for a, (d, s) in enumerate(zip(shape, strides)):
                ints[("reduce dim", n, a)], ints[("reduce stride", n, a)] = d, s
                o = out_axis[a]
                ints[("reduce out stride", n, a)] = (
                    0 if a in axes or o is None else out_strides[o])
        elif n.kind in LAYER_NORMS:  # the row kernels read whole C-ordered rows
            if not all(dense(*layouts[v]) for v in n.inputs
                       if v in layouts and not v.is_constant):
                raise Unplannable
            shape = layouts[n.inputs[1 if n.kind == "tensor::layer_norm_backward" else 0]][0]
            ints[("layer norm rows", n)] = int(np.prod(shape[:-1], dtype=np.int64))
        elif n.kind in VIEWS and n.output in prog.same:
            layouts[n.output] = layouts[n.inputs[0]]
        elif n.kind == "tensor::broadcast_to":
            layouts[n.output] = broadcast(layouts[n.inputs[0]],
                                          tuple(n.output.type.shape))  # type: ignore
        elif n.kind == "tensor::transpose":
            shape, strides, item = layouts[n.inputs[0]]
            perm = n.inputs[1].constant
            perm = range(len(shape) - 1, -1, -1) if perm is None else perm
            layouts[n.output] = (tuple(shape[int(a)] for a in perm),
                                 tuple(strides[int(a)] for a in perm), item)
            if layouts[n.output][0] != tuple(n.output.type.shape):  # type: ignore
                raise Unplannable
        elif n.kind == "tensor::expand_dims":
            shape, strides, item = layouts[n.inputs[0]]
            out_shape = tuple(n.output.type.shape)  # type: ignore[union-attr]
            given = n.inputs[1].constant
            new = {int(a) % len(out_shape) for a in (
                given if isinstance(given, (tuple, list)) else (given,))}
            rest = iter(strides)
            layouts[n.output] = (out_shape, tuple(0 if a in new else next(rest)
                                                  for a in range(len(out_shape))), item)
        elif n.kind in CONSTRUCTORS:
            ints[("fill count", n)] = int(np.prod(layouts[n.output][0], dtype=np.int64))
        elif n.kind == "prim::Constant" and n.output in prog.produced:
            data = np.ascontiguousarray(n.output.constant, np.dtype(n.output.type.dtype))
            if data.shape != layouts[n.output][0]:
                raise Unplannable
            constants.append(data)
            ints[("constant", n)], ints[("constant bytes", n)] = data.ctypes.data, data.nbytes
        elif n in prog.kernels:
            kernel = prog.kernels[n]
            inputs = prog.kernel_inputs[n]
            plan = kernel.make_plan([layouts[inputs[i]] for i, _ in kernel.array_slots],
                                    split=False)
            if plan is None or plan.fn is None or len(plan.pointers) != 1:
                raise Unplannable
            for v, shape in zip(n.outputs, plan.shapes):
                if tuple(shape) != layouts[v][0]:
                    raise Unplannable
            plans[n] = plan
            ints[("plan", n)] = plan.pointers[0]
    if prog.batch is not None:
        ints[("r0",)] = 0
        ints.update({("private", v): 0 for v in prog.private})
        ints.update({("private init", p): 0 for p in prog.partials})
        for v, (shape, strides, _) in layouts.items():
            ints[("row stride", v)] = strides[0] if shape else 0
        for n in body:
            if n.kind in WRITES:
                buf = n.inputs[0]
                ax = int(write_parts(n)[1].constant)  # rows: the axis after a first
                ints[("slot rows", n)] = layouts[buf][1][1 if ax == 0 else 0]  # slot axis
    coop.plan_ints(prog, layouts, ints, constants)
    return layouts, ints, plans, constants
