"""In-place writes: a write into a region whose old array nothing reads afterwards stores into
that array instead of a copy.

The frontend makes ``h[t] = v`` a pure ``select_put(h, v, 0, t)`` (a new array: ``h`` copied, the
region set). In a loop that writes one row of a preallocated buffer per step that copy is the
whole buffer every step. This pass swaps such a write for its in-place twin (``select_put_``,
which stores into ``h`` and returns it) when the copy cannot be told apart:

- the old array is this graph's own: a non-view tensor op made it (or a pure write copied it, or
  a write done in place stored into such an array, or each branch of an If made one), or it is
  a loop parameter whose first value is
  such an array used only by the loop and whose next value is again the loop's own. A loop whose
  first value is not the loop's own (a constant the loop fills) gets a copy of it before the loop:
  one copy a call instead of one a step;
- every other reader of the old array (and of a view of it) is in the write's block before the
  write, or inside a node there before it, so nothing reads the old contents after the store;
- the write is not in a loop the old array comes from outside of (the next step would read the
  stored array where it reads the one from before the loop).

Arithmetic whose first operand is such an array, with nothing reading its old value afterwards,
stores into it likewise (``acc = acc + g`` as numpy's ``acc += g``: a gradient summed over a
loop's steps updates one array instead of making one a step) when the result has the operand's
type: the node is marked ``IN_PLACE_ATTR``; so is a ``clip`` whose result is put back over the
whole array it clipped (``np.clip(g, -5, 5, out=g)``, which clips ``g`` in place).

It runs last in the executor's pipelines (after fusion, which could otherwise move a reader past
the store); autodiff and the other passes never see the in-place ops.
"""

from __future__ import annotations

from ir.core import PARAM, Block, Graph, Node, Value
from ir.ops.elementwise import AUGMENTED, IN_PLACE_ATTR
from ir.ops.index_put import IN_PLACE
from ir.registry import lookup
from ir.types import TensorType

NAME = "inplace-writes"

_HOLDERS = frozenset({"prim::ListConstruct", "prim::TupleConstruct"})
"""Containers made of a value: done with it when their own readers are (a list concatenated)."""


def _fresh_op(node: Node) -> bool:
    """A tensor op whose outputs are new arrays (not views, not constants, not containers)."""
    op = lookup(node.kind)
    if node.attrs.get(IN_PLACE_ATTR):
        return False  # its result is its first operand's array
    if node.kind == "tensor::clip":  # returns its input only when both bounds are None
        return not all(v.is_constant and v.constant is None for v in node.inputs[1:])
    if node.kind.startswith("tensor::"):
        return op is not None and not op.is_view
    return node.kind == "prim::FusionGroup"


def _readers_done(value: Value, write: Node, skip: Node | tuple[Node, ...] | None = None
                  ) -> bool:
    """Whether every reader of ``value`` but ``skip`` (a node or nodes) is done before ``write``
    stores: it runs before the write in a block holding both (or inside a node there before it),
    or in another branch of an If the write is in; and views of ``value`` are likewise done by
    then."""
    skipped = skip if isinstance(skip, tuple) else (skip,)
    for use in value.uses:
        reader = use.node
        if reader in skipped:
            continue
        placed = _placement(reader, write)
        if placed is None:
            return False
        if placed == "other branch":
            continue
        if _fresh_op(reader):  # new arrays (a fusion kernel allocates its outputs too)
            continue
        if (reader.kind.startswith("prim::") and reader.kind not in _HOLDERS) or reader.blocks \
                or placed != "same block":
            return False  # a view read in a nested block, a structure op

        if not all(_readers_done(out, write) for out in reader.outputs):
            return False
    return True


def _placement(reader: Node, write: Node) -> str | None:
    """Where ``reader`` runs relative to ``write``: "same block" or "nested" (before it, in the
    innermost block holding both), "other branch" (another block of an If holding the write),
    or None (after it, or not known to be before)."""
    at: Node = write
    while at.owner is not None:
        block = at.owner
        mine = reader.ancestor_in(block)
        if mine is not None:
            if mine is at:
                return "other branch" if at.kind == "prim::If" and at is not write else None
            if not mine.is_before(at):
                return None
            return "same block" if mine is reader else "nested"
        if block.owner is None:
            return None
        at = block.owner
    return None


def _in_loop_around(write: Node, value: Value) -> bool:
    """Whether ``write`` runs in the body of a loop that ``value`` is defined outside of: a
    store into ``value`` there would change it for the next step, which reads it as it was
    before the loop (``[(w * 0.5) * k for k in range(3)]`` once ``w * 0.5`` is hoisted)."""
    home = value.node.owner
    block = write.owner
    while block is not None and block is not home:
        owner = block.owner
        if owner is None:
            return False
        if owner.kind == "prim::Loop":
            return True
        block = owner.owner
    return False


def _own(value: Value, seen: set[int]) -> bool:
    """Whether ``value`` is an array this graph made and nothing else holds (see the module
    docstring); a loop parameter under test counts as its own."""
    node = value.node
    if id(value) in seen:
        return True
    if node.kind in IN_PLACE:
        return True  # a pure write: a new array
    if node.kind in IN_PLACE.values() or node.attrs.get(IN_PLACE_ATTR):
        return _own(node.inputs[0], seen)
    if node.kind == PARAM:
        return _own_loop_param(value, seen)
    if node.kind == "prim::Loop":  # the array its parameter holds at the end
        return _own_loop_param(node.blocks[0].params[value.index + 1], seen)
    if node.kind == "prim::If":  # each branch's result is its own and reaches only the If's
        return all(_stays_in(b.returns[value.index], b, value.index)
                   and _own(b.returns[value.index], seen) for b in node.blocks)
    return _fresh_op(node) and isinstance(value.type, TensorType)


def _own_loop_param(param: Value, seen: set[int]) -> bool:
    block = param.node.owner
    loop = block.owner if block is not None else None
    if loop is None or loop.kind != "prim::Loop" or param.index < 1:
        return False
    k = param.index
    nxt = block.returns[k]
    if not (_stays_in(nxt, block, k) and _own(nxt, seen | {id(param)})):
        return False
    initial = loop.inputs[k + 1]
    if not (_own(initial, seen) and len(initial.uses) == 1):
        _copy_first(loop, k + 1)
    return True


def _stays_in(value: Value, block: Block, k: int) -> bool:
    """Whether ``value`` (or a view of it) reaches nothing but ``block``'s result ``k`` and
    readers inside ``block``: at the next step only the loop parameter holds it."""
    for use in value.uses:
        reader = use.node
        if reader is block.return_node:
            if use.index != k:
                return False
            continue
        if reader.ancestor_in(block) is None:
            return False
        if _fresh_op(reader):  # new arrays (a fusion kernel allocates its outputs too)
            continue
        if reader.kind.startswith("prim::") or reader.blocks or reader.owner is not block:
            return False
        if not all(_stays_in(out, block, k) for out in reader.outputs):
            return False
    return True


def _copy_first(loop: Node, index: int) -> None:
    """Give the loop a copy of its first value at ``index``: it is not the loop's own."""
    graph = loop.graph
    with graph.inserting_before(loop):
        copy = graph.insert_typed("tensor::copy", [loop.inputs[index]]).output
    loop.set_input(index, copy)


def _in_place(graph: Graph, write: Node) -> None:
    twin = graph.create_typed(IN_PLACE[write.kind], list(write.inputs), source=write.source,
                              names=[write.output.name])
    twin.insert_before(write)
    write.output.replace_all_uses_with(twin.output)
    write.erase()


def _augmentable(node: Node) -> bool:
    """Whether arithmetic ``node`` may store into its first operand: the result is an array of
    that operand's static dtype and shape (numpy's ``a += b`` neither broadcasts ``a`` nor casts;
    a 0-d result stays out: numpy's ``a + b`` of two 0-d arrays is a scalar, not an array)."""
    if node.kind not in AUGMENTED or len(node.inputs) != 2 or node.attrs.get(IN_PLACE_ATTR):
        return False
    t = node.output.type
    return (isinstance(t, TensorType) and t.dtype is not None and bool(t.shape)
            and all(isinstance(d, int) for d in t.shape)  # type: ignore[union-attr]
            and node.inputs[0].type == t)


def _clip_back(write: Node) -> Node | None:
    """The ``clip`` whose result ``write`` puts back over the whole array it clipped
    (``np.clip(g, -5, 5, out=g)``: ``slice_put(g, clip(g, -5, 5), 0, None, None, None)``),
    read by nothing else; None for any other write."""
    if write.kind != "tensor::slice_put":
        return None
    old, value, axis, *bounds = write.inputs
    if not (axis.is_constant and axis.constant == 0
            and all(b.is_constant and b.constant is None for b in bounds)):
        return None
    clip = value.node
    if clip.kind != "tensor::clip" or clip.inputs[0] is not old or len(value.uses) != 1 \
            or clip.owner is not write.owner or clip.attrs.get(IN_PLACE_ATTR):
        return None
    t = old.type
    if not (isinstance(t, TensorType) and t.shape and value.type == t):
        return None
    return clip


def run(graph: Graph) -> bool:
    """Make every write whose old array nothing reads afterwards a write in place, and mark
    arithmetic storing into such an array (``IN_PLACE_ATTR``); a clip put back over the whole
    array it clipped clips that array in place instead (numpy's ``np.clip(g, lo, hi, out=g)``:
    no new array, no copy back)."""
    changed = False
    for write in [n for n in graph.block.walk() if n.kind == "tensor::slice_put"]:
        clip = _clip_back(write)
        if clip is None or _in_loop_around(clip, clip.inputs[0]) \
                or not _own(clip.inputs[0], set()) \
                or not _readers_done(clip.inputs[0], clip, skip=(clip, write)):
            continue
        clip.attrs[IN_PLACE_ATTR] = True
        write.output.replace_all_uses_with(clip.output)
        write.erase()
        changed = True
    for node in [n for n in graph.block.walk() if n.kind in IN_PLACE or _augmentable(n)]:
        old = node.inputs[0]
        if old is node.inputs[1] or _in_loop_around(node, old) \
                or not _readers_done(old, node, skip=node):
            continue
        if not _own(old, set()):
            continue
        if node.kind in IN_PLACE:
            _in_place(graph, node)
        else:
            node.attrs[IN_PLACE_ATTR] = True
        changed = True
    return changed
