"""Batched matmul: fewer, larger matmuls (TorchScript's BatchMM, decided at compile time).

Side by side: matmuls in one block that share an operand, ``x @ W1, x @ W2, ...`` (an LSTM cell
written gate by gate), become one matmul on the concatenated other operand, split again::

    %y = tensor::matmul(%x, cat([%W1, %W2], 1));  %y1, %y2 = tensor::chunk(%y, 2, 1)

Tree: a plain sum of matmuls ``A1 @ B1 + A2 @ B2 + ...`` (each partial product used only by the
sum) becomes ``cat([A1, A2], 1) @ cat([B1, B2], 0)``: one matmul, no adds.

Both trade a concatenation for matmul calls. On numpy the trade pays only when the larger
concatenation is of loop-invariant operands (weights), which the licm run after this pass moves
before the loop, so it is paid once; measured per step (float32, one thread, microseconds)::

    side, 4 gates, (B, I=H):   4 matmuls   cat once + 1 matmul + chunk   cat every call
      B=8,  64                 7.6         5.9                          9.2
      B=64, 512                1115        920                          1896
    tree, x@W + h@U:           2 mm + add  cat(x, h) @ cat(W, U)         cat both every call
      B=8,  64                 7.4         6.7                          10.0
      B=64, 512                1723        1742                         2271

Hence the gates: the concatenated weights must be defined outside an enclosing loop, and the
tree's per-step concatenation of activations must be small (``MAX_TREE_STEP_CAT_NUMEL``).
Side by side needs no concatenation at all, in or out of loops, when the other operands are
adjacent slices of one matrix (``x @ W[:, :H], x @ W[:, H:2*H]``, a cell that cuts its gates'
weights out of one array): their concatenation is the slice of that matrix they cover together,
a view.
"""

from __future__ import annotations

from ir.core import Block, Graph, Node, Value
from ir.kinds import ADD, CAT, LOOP, MATMUL
from ir.types import ListType, TensorType, unify

NAME = "batch-matmul"

MIN_SIDE_BATCH = 2
"""Matmuls sharing an operand worth batching: already two calls cost more than one (table)."""
MIN_TREE_LEAVES = 2
"""Partial products worth one matmul (TorchScript uses 4 on GPU; on numpy two already pay)."""
MAX_TREE_STEP_CAT_NUMEL = 16384
"""Elements of the per-step concatenation of activations in a tree: 64 KiB of float32 stays in
cache, and beyond it the GEMM dominates so the copy is not repaid (B=64, I=H=512 measured 1%
slower)."""


def _static_2d(value: Value) -> tuple[int, int] | None:
    t = value.type
    if not isinstance(t, TensorType) or t.shape is None or len(t.shape) != 2 or None in t.shape:
        return None
    return (t.shape[0], t.shape[1])  # type: ignore[return-value]


def _dtype(value: Value) -> str | None:
    return value.type.dtype if isinstance(value.type, TensorType) else None


def innermost_loop(node: Node) -> Node | None:
    """The closest ``prim::Loop`` whose body contains ``node``."""
    block = node.owner
    while block is not None and block.owner is not None:
        if block.owner.kind == LOOP:
            return block.owner
        block = block.owner.owner
    return None


def hoistable(values: list[Value], at: Node) -> bool:
    """Are ``values`` all defined outside the innermost loop around ``at`` (so a concatenation of
    them is loop-invariant)?"""
    loop = innermost_loop(at)
    return loop is not None and not any(v.defined_inside(loop) for v in values)


def concatenate(graph: Graph, values: list[Value], axis: int) -> Value:
    """Insert ``cat([values...], axis)`` at the insert point."""
    element = values[0].type
    for v in values[1:]:
        element = unify(element, v.type) or TensorType()
    items = graph.create("prim::ListConstruct", values, [ListType(element)])
    items.insert_before(graph.insert_point)
    return graph.insert_typed(CAT, [items.output, graph.constant(axis)]).output


# -- side by side -------------------------------------------------------------------------------
def available_before(value: Value, node: Node) -> bool:
    """Is ``value`` defined before ``node`` (earlier in its block, or in an enclosing scope)?"""
    if value.node.owner is not node.owner:
        return True  # SSA: a value read in this block but defined elsewhere encloses it
    return value.node.is_before(node)


def side_group(block: Block, shared: Value, side: int) -> list[Node]:
    """The matmuls of ``block`` with ``shared`` as operand ``side`` that can be batched (in the
    order of the slices they take when their other operands are adjacent slices)."""
    group = [n for n in block if n.kind == MATMUL and n.inputs[side] is shared
             and n.inputs[1 - side] is not shared]
    if len(group) < MIN_SIDE_BATCH or _static_2d(shared) is None:
        return []
    first = group[0]
    group = [n for n in group if available_before(n.inputs[1 - side], first)
             and _static_2d(n.inputs[1 - side]) is not None
             and _dtype(n.inputs[1 - side]) == _dtype(first.inputs[1 - side])]
    if len(group) < MIN_SIDE_BATCH:
        return []
    axis = 1 if side == 0 else 0
    spans = {n: slice_span(n.inputs[1 - side], axis) for n in group}
    by_base: dict[Value, list[Node]] = {}
    for n in group:
        if spans[n] is not None:
            by_base.setdefault(spans[n][0], []).append(n)  # type: ignore[index]
    for nodes in by_base.values():
        nodes.sort(key=lambda n: spans[n][1])  # type: ignore[index]
        run = longest_adjacent(nodes, spans)
        if len(run) >= MIN_SIDE_BATCH:
            return run
    if not hoistable([n.inputs[1 - side] for n in group], first):
        return []
    return group


def slice_span(value: Value, axis: int) -> tuple[Value, int, int] | None:
    """(matrix, start, stop) when ``value`` is ``matrix`` sliced along ``axis`` with unit step
    and static bounds; None otherwise."""
    node = value.node
    if node.kind in ("tensor::chunk", "tensor::split"):  # consecutive pieces from the start
        base, _, ax = node.inputs
        if _static_2d(base) is None or not ax.is_constant or ax.constant not in (axis, axis - 2):
            return None
        sizes = [_static_2d(v) for v in node.outputs]
        if None in sizes:
            return None
        k = node.outputs.index(value)
        start = sum(size[axis] for size in sizes[:k])  # type: ignore[index]
        return base, start, start + sizes[k][axis]  # type: ignore[index]
    if node.kind != "tensor::slice" or len(node.inputs) != 5:
        return None
    base, ax, start, stop, step = node.inputs
    shape = _static_2d(base)
    if shape is None or not all(v.is_constant for v in (ax, start, stop, step)):
        return None
    if ax.constant not in (axis, axis - 2) or step.constant not in (None, 1):
        return None
    lo, hi, _ = slice(start.constant, stop.constant).indices(shape[axis])
    return (base, lo, hi) if lo < hi else None


def longest_adjacent(nodes: list[Node], spans: dict) -> list[Node]:
    """The longest run of ``nodes`` (sorted by start) whose slices follow each other."""
    best: list[Node] = []
    run: list[Node] = []
    for n in nodes:
        if run and spans[run[-1]][2] == spans[n][1]:
            run.append(n)
        else:
            run = [n]
        if len(run) > len(best):
            best = list(run)
    return best


def batch_side(group: list[Node], side: int) -> None:
    """Replace the matmuls of ``group`` (sharing operand ``side``) by one matmul and a split."""
    first = min(group, key=lambda n: n.owner.nodes.index(n))
    graph = first.graph
    shared = first.inputs[side]
    axis = 1 if side == 0 else 0  # x @ [W1 W2] splits columns, [A1; A2] @ W splits rows
    sizes = [_static_2d(n.output)[axis] for n in group]  # type: ignore[index]
    spans = [slice_span(n.inputs[1 - side], axis) for n in group]
    with graph.inserting_before(first):
        if all(spans) and len({s[0] for s in spans}) == 1:  # type: ignore[index]
            source, start, stop = spans[0][0], spans[0][1], spans[-1][2]  # type: ignore[index]
            whole = _static_2d(source)
            if whole is not None and start == 0 and stop == whole[axis]:
                other = source  # the slices cover the whole matrix
            else:
                bounds = [graph.constant(axis), graph.constant(start), graph.constant(stop),
                          graph.constant(None)]
                other = graph.insert_typed("tensor::slice", [source, *bounds]).output
        else:
            other = concatenate(graph, [n.inputs[1 - side] for n in group], axis)
        operands = [shared, other] if side == 0 else [other, shared]
        product = graph.insert_typed(MATMUL, operands).output
        pieces = split(graph, product, sizes, axis)
    for node, piece in zip(group, pieces):
        piece.name = node.output.name
        node.output.replace_all_uses_with(piece)
        node.erase()


def split(graph: Graph, value: Value, sizes: list[int], axis: int) -> list[Value]:
    """Pieces of ``sizes`` along ``axis``: one ``chunk`` when equal, slices otherwise."""
    if len(set(sizes)) == 1:
        chunk = [value, graph.constant(len(sizes)), graph.constant(axis)]
        return list(graph.insert_typed("tensor::chunk", chunk).outputs)
    pieces, start = [], 0
    for size in sizes:
        bounds = [graph.constant(axis), graph.constant(start), graph.constant(start + size)]
        piece = graph.insert_typed("tensor::slice", [value, *bounds, graph.constant(None)])
        pieces.append(piece.output)
        start += size
    return pieces


def batch_side_block(block: Block) -> bool:
    """Batch the matmuls sharing an operand in ``block`` (not nested blocks)."""
    changed = False
    for node in block.nodes:
        if node.owner is None or node.kind != MATMUL:
            continue
        for side in (0, 1):
            group = side_group(block, node.inputs[side], side)
            if group:
                batch_side(group, side)
                changed = True
                break
    return changed


# -- tree ------------------------------------------------------------------------------------
def product_sum(value: Value, block: Block, root: bool = False) -> list[Node] | None:
    """The matmuls summed into ``value`` by plain adds, each used once; None if not such a sum."""
    node = value.node
    if node.owner is not block or (not root and len(value.uses) != 1):
        return None
    if node.kind == MATMUL:
        return None if root else [node]
    if node.kind != ADD or any(v.type != node.output.type for v in node.inputs):
        return None  # not a plain sum: it broadcasts, promotes or adds a number
    left, right = product_sum(node.inputs[0], block), product_sum(node.inputs[1], block)
    return None if left is None or right is None else left + right


def tree_fits(root: Node, leaves: list[Node]) -> bool:
    """Same-shape 2-D products of one dtype, weights invariant, small activations."""
    if len(leaves) < MIN_TREE_LEAVES:
        return False
    lhs = [_static_2d(n.inputs[0]) for n in leaves]
    rhs = [_static_2d(n.inputs[1]) for n in leaves]
    if None in lhs or None in rhs or len({_dtype(v) for n in leaves for v in n.inputs}) != 1:
        return False
    if len({s[0] for s in lhs}) != 1 or len({s[1] for s in rhs}) != 1:  # type: ignore[index]
        return False
    if _static_2d(root.output) != (lhs[0][0], rhs[0][1]):  # type: ignore[index]
        return False  # the sum broadcast to a larger shape
    activations = sum(s[0] * s[1] for s in lhs)  # type: ignore[index]
    return hoistable([n.inputs[1] for n in leaves], root) and (
        activations <= MAX_TREE_STEP_CAT_NUMEL)


def batch_tree(root: Node, leaves: list[Node]) -> None:
    """Replace the sum at ``root`` by one matmul of concatenations; drop the partial nodes."""
    graph = root.graph
    with graph.inserting_before(root):
        lhs = concatenate(graph, [n.inputs[0] for n in leaves], 1)
        rhs = concatenate(graph, [n.inputs[1] for n in leaves], 0)
        product = graph.insert_typed(MATMUL, [lhs, rhs]).output
    product.name = root.output.name
    root.output.replace_all_uses_with(product)
    dead = [root]
    while dead:
        node = dead.pop()
        inputs = [v.node for v in node.inputs if v.node.kind in (ADD, MATMUL)]
        node.erase()
        dead += [n for n in inputs if n.owner is not None and not any(v.uses for v in n.outputs)]


def batch_tree_block(block: Block) -> bool:
    """Rewrite the sums of matmuls in ``block``, outermost sums first."""
    changed = False
    for node in reversed(block.nodes):
        if node.owner is None or node.kind != ADD:
            continue
        leaves = product_sum(node.output, block, root=True)
        if leaves is not None and tree_fits(node, leaves):
            batch_tree(node, leaves)
            changed = True
    return changed


def run(graph: Graph) -> bool:
    """Batch matmuls side by side, then sums of matmuls, in every block."""
    blocks = [graph.block] + [b for n in graph.walk() for b in n.blocks]
    changed = False
    for block in blocks:
        changed |= batch_side_block(block)
        changed |= batch_tree_block(block)
    return changed
