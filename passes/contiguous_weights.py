"""Contiguous weights: copy a loop-invariant transposed weight to contiguous storage once.

An RNN step multiplies by a transposed weight, ``hx @ w_hh.T``; after licm the transpose is a
loop-invariant view computed before the loop. BLAS runs a small GEMM against that strided view
several times slower than against a contiguous array (at B=8, H=64 about 16 us instead of 3.4 us
per step; a few percent at B=64, H=512), so the copy made once pays for itself within a step::

    %wt = tensor::transpose(%w_hh, %none)
    %wt_c = tensor::contiguous(%wt)                  // inserted right after the transpose
    loop: %p = tensor::matmul(%hx, %wt_c)            // was matmul(%hx, %wt)

Only matmul operands inside a loop that are transposes defined outside that loop are rewritten;
other uses of the transpose (a hoisted projection, a returned value) keep the view, which BLAS
takes without a copy. So does a matrix-vector product (``np.dot(w_hh.T, dh)`` with ``dh`` a
vector or one column): numpy's ``gemv`` reads the transposed view as fast as a copy, and a
native loop runs it on the weight's own storage (``fuser.cpu.loop``), so a copy would only cost
an allocation per call. The values are unchanged: ``contiguous`` is the identity on values.
The pass runs after differentiation (in the executor's pipeline), so autodiff never sees it.

A loop-invariant operand of a float dtype narrower than the product's (a float32 weight beside
float64 activations: ``np.zeros`` makes float64 buffers, as in Karpathy's batched LSTM) is cast
once before the loop as well (``tensor::astype``, after the contiguous copy): numpy's product of
a float64 and a float32 matrix casts the float32 one and multiplies in float64 each step, so the
values are the same, and a native loop, which multiplies matrices of one dtype, can take it.
"""

from __future__ import annotations

from ir.core import Block, Graph, Node, Value
from ir.kinds import CONTIGUOUS, LOOP, MATMUL, TRANSPOSE
from ir.types import TensorType

NAME = "contiguous-weights"


def loops_in(block: Block) -> list[Node]:
    """Every ``prim::Loop`` in ``block``, at any depth."""
    return [node for node in block.walk() if node.kind == LOOP]


def invariant_transposed_operands(loop: Node) -> list[tuple[Node, int]]:
    """(matmul, input index) pairs in ``loop`` whose operand is a transpose made outside it."""
    found = []
    for node in loop.blocks[0].walk():
        if node.kind != MATMUL:
            continue
        for k, value in enumerate(node.inputs):
            if (value.node.kind == TRANSPOSE and not value.defined_inside(loop)
                    and not is_vector(node.inputs[1 - k], k)):
                found.append((node, k))
    return found


def is_vector(other: Value, k: int) -> bool:
    """Whether a matmul's ``other`` operand (the one beside the transposed operand ``k``) makes
    it a matrix-vector product: a vector, a column on the right or a row on the left."""
    t = other.type
    shape = getattr(t, "shape", None)
    if shape is None:
        return False
    if len(shape) == 1:
        return True
    return len(shape) == 2 and shape[0 if k == 1 else 1] == 1


def contiguous_copy(value: Value, copies: dict[Value, Value]) -> Value:
    """The one ``contiguous(value)`` node, inserted right after the node defining ``value``."""
    known = copies.get(value)
    if known is not None:
        return known
    graph = value.node.graph
    node = graph.create_typed(CONTIGUOUS, [value], names=[value.name]).insert_after(value.node)
    copies[value] = node.output
    return node.output


WIDER = {"float32": "float64"}
"""A narrower float dtype and the one a product with the wider one computes in."""


def invariant_narrow_operands(loop: Node) -> list[tuple[Node, int]]:
    """(matmul, input index) pairs in ``loop`` whose operand, made outside it, has a float dtype
    narrower than the product's."""
    found = []
    for node in loop.blocks[0].walk():
        out = node.output.type if node.kind == MATMUL else None
        if not isinstance(out, TensorType) or out.dtype is None:
            continue
        for k, value in enumerate(node.inputs):
            t = value.type
            if (isinstance(t, TensorType) and t.dtype is not None
                    and WIDER.get(t.dtype) == out.dtype and not value.defined_inside(loop)):
                found.append((node, k))
    return found


def cast_copy(value: Value, dtype: str, casts: dict[Value, Value]) -> Value:
    """The one ``astype(value, dtype)`` node, inserted right after the node defining ``value``."""
    known = casts.get(value)
    if known is not None:
        return known
    graph = value.node.graph
    const = graph.create_typed("prim::Constant", [], {"value": dtype}).insert_after(value.node)
    node = graph.create_typed("tensor::astype", [value, const.output],
                              names=[value.name]).insert_after(const)
    casts[value] = node.output
    return node.output


def run(graph: Graph) -> bool:
    """Give every matmul in a loop a contiguous copy of its loop-invariant transposed operands
    and a cast of its loop-invariant operands of a narrower float dtype."""
    copies: dict[Value, Value] = {}
    casts: dict[Value, Value] = {}
    changed = False
    for loop in loops_in(graph.block):
        for matmul, k in invariant_transposed_operands(loop):
            matmul.set_input(k, contiguous_copy(matmul.inputs[k], copies))
            changed = True
        for matmul, k in invariant_narrow_operands(loop):
            dtype = matmul.output.type.dtype  # type: ignore[union-attr]
            matmul.set_input(k, cast_copy(matmul.inputs[k], dtype, casts))
            changed = True
    return changed
