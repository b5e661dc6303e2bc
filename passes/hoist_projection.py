"""Input-projection hoisting ("automatic premul"): one matmul over the whole sequence.

An RNN layer loops over the time steps of a sequence ``x`` and multiplies each step by the same
input weight::

    for x_t in ops.unbind(x, 0):          # or: for t in range(x.shape[0]): x_t = x[t]
        gates = x_t @ w_ih.T + hx @ w_hh.T + ...

Every step's ``x_t @ W`` can be computed before the loop by one large matmul, which keeps the
BLAS busy instead of paying a call per step (the cuDNN "premul" trick, done automatically)::

    %x2 = tensor::reshape(%x, (-1, I))          # (T*B, I), a view of x
    %p2 = tensor::matmul(%x2, %W)               # (T*B, G)
    %p = tensor::reshape(%p2, (-1, B, G))       # (T, B, G)
    loop: %p_t = tensor::select(%p, 0, %i)      # replaces x_t @ W

A loop-invariant bias added directly to the product (``x_t @ W + b`` with ``b`` no wider than the
product) moves with it. The rewrite applies only to a for-loop whose counter indexes axis 0 of
``x`` and whose trip count is the length of that axis (``range(x.shape[0])``, ``unbind(x, 0)``),
so every row of the projection is used; and only when ``W`` (and the bias) are defined outside
the loop (loop-invariant code motion runs first and moves ``W = w_ih.T`` there). The results equal
the per-step products up to float rounding (one GEMM instead of T).
"""

from __future__ import annotations

from ir.core import Graph, Node, Value
from ir.kinds import ADD, LOOP, MATMUL, RESHAPE, SELECT, SIZE, TUPLE_CONSTRUCT
from ir.registry import const
from ir.types import INT, TensorType, Type
from passes.licm import is_for_loop

NAME = "hoist-projection"


def _rank(value: Value) -> int | None:
    t = value.type
    return t.rank if isinstance(t, TensorType) and t.shape is not None else None


def covers_sequence(loop: Node, x: Value) -> bool:
    """Does the for-loop run once per index of axis 0 of ``x``?"""
    if not is_for_loop(loop):
        return False
    trips = loop.inputs[0]
    if trips.node.kind == SIZE and trips.node.inputs[0] is x and const(trips.node, 1) == 0:
        return True
    t = x.type
    known = isinstance(t, TensorType) and t.shape is not None and t.shape[0] is not None
    return known and const(loop, 0) == t.shape[0]  # type: ignore[union-attr, index]


def step_of(value: Value, loop: Node) -> Value | None:
    """The sequence ``x`` when ``value`` is ``select(x, 0, i)``, x invariant, i the counter."""
    node = value.node
    if node.kind != SELECT or node.owner is not loop.blocks[0]:
        return None
    x, index = node.inputs[0], node.inputs[2]
    if const(node, 1) != 0 or index is not loop.blocks[0].params[0] or x.defined_inside(loop):
        return None
    return x if covers_sequence(loop, x) else None


def invariant_bias(product: Node, loop: Node) -> Node | None:
    """The ``add`` of a loop-invariant bias that is the product's only use, if there is one."""
    out = product.output
    if len(out.uses) != 1 or out.uses[0].node.kind != ADD:
        return None
    add = out.uses[0].node
    other = add.inputs[1 - out.uses[0].index]
    if other is out or other.defined_inside(loop) or add.output.type != out.type:
        return None
    return add


def projection_candidate(node: Node, loop: Node) -> Value | None:
    """The sequence ``x`` when ``node`` is ``select(x, 0, i) @ W`` with a 2-D invariant ``W``."""
    if node.kind != MATMUL or node.inputs[1].defined_inside(loop):
        return None
    x = step_of(node.inputs[0], loop)
    if x is None or _rank(node.inputs[1]) != 2 or (_rank(x) or 0) < 2:
        return None
    return x


def _insert(graph: Graph, kind: str, inputs: list[Value], name: str | None = None) -> Value:
    """Insert a single-output node at the insert point, typed by its op's rule."""
    return graph.insert_typed(kind, inputs, names=[name]).output


def _dim(graph: Graph, x: Value, axis: int) -> int | Value:
    """Axis ``axis`` of ``x``: an int when the shape is known, else a ``tensor::size`` value."""
    t = x.type
    size = t.shape[axis] if isinstance(t, TensorType) and t.shape is not None else None
    if size is not None:
        return size
    return graph.insert(SIZE, [x, graph.constant(axis)], [INT]).output


def _shape(graph: Graph, dims: list[int | Value]) -> Value:
    """A shape argument: one tuple constant when every size is known, else a tuple of ints."""
    if all(isinstance(d, int) for d in dims):
        return graph.constant(tuple(dims))
    items = [d if isinstance(d, Value) else graph.constant(d) for d in dims]
    return _insert(graph, TUPLE_CONSTRUCT, items)


def _projection_type(x: Value, weight: Value, inferred: Type) -> Type:
    """``x.shape[:-1] + (G,)``: what the reshape makes, also when some sizes are only known at
    run time (a reshape to a computed shape infers no shape at all)."""
    xt, wt = x.type, weight.type
    if not isinstance(xt, TensorType) or xt.shape is None or not isinstance(inferred, TensorType):
        return inferred
    cols = wt.shape[1] if isinstance(wt, TensorType) and wt.shape is not None else None
    return inferred.with_shape(xt.shape[:-1] + (cols,))


def sequence_projection(graph: Graph, x: Value, weight: Value, bias: Value | None) -> Value:
    """Insert ``x @ weight (+ bias)`` over the whole sequence as one 2-D matmul; returns it."""
    rank = _rank(x) or 0
    if rank == 2:
        product = _insert(graph, MATMUL, [x, weight], "x_proj")
    else:
        flat = _insert(graph, RESHAPE, [x, _shape(graph, [-1, _dim(graph, x, rank - 1)])])
        flat_product = _insert(graph, MATMUL, [flat, weight])
        dims = [-1] + [_dim(graph, x, a) for a in range(1, rank - 1)] + [_dim(graph, weight, 1)]
        product = _insert(graph, RESHAPE, [flat_product, _shape(graph, dims)], "x_proj")
        product.type = _projection_type(x, weight, product.type)
    if bias is None:
        return product
    return _insert(graph, ADD, [product, bias], "x_proj")


def hoist_one(node: Node, loop: Node, x: Value) -> None:
    """Replace ``select(x, 0, i) @ W (+ b)`` in the loop by a row of the hoisted projection."""
    graph = loop.graph
    add = invariant_bias(node, loop)
    replaced = add if add is not None else node
    bias = None if add is None else add.inputs[1 - node.output.uses[0].index]
    with graph.inserting_before(loop):
        projection = sequence_projection(graph, x, node.inputs[1], bias)
        zero = graph.constant(0)
    with graph.inserting_before(replaced):
        row = _insert(graph, SELECT, [projection, zero, loop.blocks[0].params[0]],
                      replaced.output.name)
    row.type = replaced.output.type  # the same values: keep what shape propagation proved
    replaced.output.replace_all_uses_with(row)
    replaced.erase()
    if add is not None:
        node.erase()


def hoist_in_loop(loop: Node) -> bool:
    """Hoist every input projection of ``loop``'s body; True when one moved."""
    changed = False
    for node in loop.blocks[0].nodes:  # a copy: hoisting erases the node and its bias add
        if node.owner is None:
            continue
        x = projection_candidate(node, loop)
        if x is None:
            continue
        hoist_one(node, loop, x)
        changed = True
    return changed


def run(graph: Graph) -> bool:
    """Hoist the input projections of every for-loop over a sequence (nested loops included)."""
    loops = [n for n in graph.walk() if n.kind == LOOP]
    changed = False
    for loop in loops:
        changed |= hoist_in_loop(loop)
    return changed
