"""Cast writes: a value written into an array of another float dtype inside a loop is cast
first, as its own op.

``Hin[t, :, 1:n + 1] = X[t]`` with a float32 ``X`` and a float64 ``Hin`` (``np.zeros`` makes
float64) casts each item as numpy's assignment does. A native loop copies a region only between
arrays of one dtype (``fuser.cpu.loop``), so the loop ran as Python; with the cast an op of its
own (``tensor::astype`` to the array's dtype: numpy's unsafe cast, the assignment's), the write
is a plain copy and the cast a kernel of the loop::

    %w = tensor::slice_put(%buf, %x, %axis, %a, %b, %step)        // Double buf, Float x
    ->
    %x64 = tensor::astype(%x, "float64")
    %w = tensor::slice_put(%buf, %x64, %axis, %a, %b, %step)

The values are unchanged. The pass runs after differentiation (in the executor's pipeline).
"""

from __future__ import annotations

from ir.core import Graph, Node
from ir.kinds import LOOP
from ir.types import TensorType

NAME = "cast-writes"

WRITES = {"tensor::slice_put": 1, "tensor::slice_put_": 1, "tensor::select_put": 1,
          "tensor::select_put_": 1, "tensor::write_slot": 3}
"""The writes into an array and the index of the value each writes."""

FLOATS = ("float32", "float64")


def cast_value(node: Node) -> str | None:
    """The dtype a write in a loop casts its value to (its array's), or None: a value of the
    array's dtype, a number, or dtypes other than two floats."""
    at = WRITES.get(node.kind)
    if at is None or len(node.inputs) <= at:
        return None
    buf, value = node.inputs[0].type, node.inputs[at].type
    if not (isinstance(buf, TensorType) and isinstance(value, TensorType)):
        return None
    if buf.dtype not in FLOATS or value.dtype not in FLOATS or buf.dtype == value.dtype:
        return None
    return buf.dtype


def run(graph: Graph) -> bool:
    """Cast the value of every write in a loop whose array has another float dtype."""
    changed = False
    dtypes: dict[str, Node] = {}  # a constant per dtype, at the graph's start (not in a loop)
    for node in list(graph.block.walk()):
        dtype = cast_value(node)
        if dtype is None or not node.inside_kind(LOOP):
            continue
        at = WRITES[node.kind]
        value = node.inputs[at]
        const = dtypes.get(dtype)
        if const is None:
            const = dtypes[dtype] = graph.block.prepend(
                graph.create_typed("prim::Constant", [], {"value": dtype}))
        cast = graph.create_typed("tensor::astype", [value, const.output],
                                  source=node.source).insert_before(node)
        node.set_input(at, cast.output)
        changed = True
    return changed
