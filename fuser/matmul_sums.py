"""Sums of products: ``A1 @ B1 + A2 @ B2`` outside loops becomes one ``tensor::matmul_sum``.

A cell called as a function computes its gates as ``np.dot(x, Wx) + np.dot(h, Wh) + b``: two
products, each written to an array of its own and read back by the sum. As one product whose
tasks compute their columns of both in turn (``fuser.cpu.products.matmul_sum``) neither exists
on its own, the helper threads are woken once, and the sum is not a pass over memory::

    %p = tensor::matmul(%x, %Wx)     // each read only by the sum
    %q = tensor::matmul(%h, %Wh)
    %s = tensor::add(%p, %q)
  ->
    %s = tensor::matmul_sum(%x, %Wx, %h, %Wh)

A sum of three or more products becomes one ``matmul_sum`` of them all. Only where the
backend computes the sum as one product (its ``matmul_sum_for``: host float matrices of one
dtype, static shapes, large enough products), outside loops (a loop's products are the native
loop's), and with results of one shape (no broadcast by the sum). It runs after
differentiation, before fusion (in the executor's pipelines).
"""

from __future__ import annotations

from fuser.backend import backend_of
from ir.core import Graph, Node, Value
from ir.kinds import ADD, LOOP, MATMUL
from ir.types import TensorType

NAME = "matmul-sums"
MATMUL_SUM = "tensor::matmul_sum"




def _term(value: Value) -> list[Value] | None:
    """The operands of a product ``value`` only the sum reads, as ``matmul_sum`` takes them."""
    node = value.node
    if node.kind not in (MATMUL, MATMUL_SUM) or len(value.uses) != 1:
        return None
    if not all(_matrix(v) for v in (*node.inputs, value)):
        return None
    return list(node.inputs)


def _matrix(value: Value) -> bool:
    t = value.type
    return (isinstance(t, TensorType) and t.shape is not None and len(t.shape) == 2
            and all(isinstance(d, int) for d in t.shape) and t.device != "cuda"
            and t.dtype in ("float32", "float64"))


def _rewrite(graph: Graph, node: Node) -> bool:
    if node.kind != ADD or len(node.inputs) != 2 or node.inside_kind(LOOP):
        return False
    terms = [_term(v) for v in node.inputs]
    out = node.output.type
    if None in terms or not all(v.type == out for v in node.inputs):
        return False
    operands = [v for term in terms for v in term]  # type: ignore[union-attr]
    if len({v.type.dtype for v in operands}) != 1:  # type: ignore[union-attr]
        return False
    total = graph.create_typed(MATMUL_SUM, operands, source=node.source,
                               names=[node.output.name])
    total.insert_before(node)
    backend = backend_of(total)
    if (total.output.type != out or backend is None or backend.matmul_sum_for is None
            or backend.matmul_sum_for(total) is None):
        total.erase()
        return False
    products = [v.node for v in node.inputs]
    node.output.replace_all_uses_with(total.output)
    node.erase()
    for product in products:
        product.erase()
    return True


def run(graph: Graph) -> bool:
    """Make every sum of products outside loops one ``matmul_sum`` (see the module docstring)."""
    changed = False
    for node in [n for n in graph.walk() if n.kind == ADD]:
        changed |= _rewrite(graph, node)
    return changed
