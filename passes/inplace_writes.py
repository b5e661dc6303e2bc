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
  first value is not the loop's own (a constant the loop fills, an array read after the loop
  starts) gets a copy of it before the loop: one copy a call instead of one a step;
- every other reader of the old array (and of a view of it) is in the write's block before the
  write, or inside a node there before it, so nothing reads the old contents after the store;
- the write is not in a loop the old array comes from outside of (the next step would read the
  stored array where it reads the one from before the loop).

Arithmetic whose first operand is such an array, with nothing reading its old value afterwards,
stores into it likewise (``acc = acc + g`` as numpy's ``acc += g``: a gradient summed over a
loop's steps updates one array instead of making one a step) when the result has the operand's
type: the node is marked ``IN_PLACE_ATTR``; so is a ``clip`` whose result is put back over the
whole array it clipped (``np.clip(g, -5, 5, out=g)``, which clips ``g`` in place).

A write into a region of such an array whose value is that same region with a part of it
replaced (``h[t, :, 0] = 1``: ``select_put_(h, select_put(select(h, 0, t), 1, 1, 0), 0, t)``)
stores the part into the region itself (``h[t][:, 0] = 1``, numpy's own view write) and the
copy of the region and the copy back go, when nothing reads the region's old contents after.

It runs last in the executor's pipelines (after fusion, which could otherwise move a reader past
the store); autodiff and the other passes never see the in-place ops.
"""

from __future__ import annotations

from ir.core import Graph, Node, Use, Value
from ir.kinds import LIST_APPEND, SELECT
from ir.ops.elementwise import AUGMENTED, IN_PLACE_ATTR
from ir.ops.index_put import IN_PLACE
from ir.registry import ALIASES, WRITES, effects_on_input
from ir.types import TensorType
from passes import ownership

NAME = "inplace-writes"

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


_MADE = frozenset(f"tensor::{name}" for name in (
    "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like"))
"""arrays made from a shape and a fill alone: one the passes merged with an equal one (two
``np.zeros((T, B, H))`` buffers) is made again for a write that would otherwise copy it."""


def _made_again(graph: Graph, write: Node) -> None:
    """Give ``write`` an array of its own when its old array is a ``_MADE`` one something else
    still reads (or one from outside the loop the write is in): the same op again, just before
    the write, instead of the copy the pure write makes."""
    old = write.inputs[0]
    made = old.node
    if made.kind not in _MADE or not _never_written(old) or (
            ownership.readers_done(old, write, skip=write)
            and not ownership.in_loop_around(write, old)):
        return
    with graph.inserting_before(write):
        again = graph.insert_typed(made.kind, list(made.inputs)).output
    write.set_input(0, again)


def _never_written(value: Value) -> bool:
    """Whether nothing stores into ``value`` (a ``write_slot`` filling it, arithmetic in place),
    through any view or container of it: each reader only reads it."""
    for use in value.uses:
        effects = effects_on_input(use.node, use.index)
        if WRITES in effects or (use.index == 0 and use.node.attrs.get(IN_PLACE_ATTR)):
            return False
        if ALIASES in effects and not all(_never_written(out) for out in use.node.outputs):
            return False
    return True


_REGION_READS = {"tensor::select_put_": "tensor::select", "tensor::slice_put_": "tensor::slice"}
"""an in-place write -> the view op reading its region."""


def _same_arguments(a: list[Value], b: list[Value]) -> bool:
    return len(a) == len(b) and all(
        x is y or (x.is_constant and y.is_constant and type(x.constant) is type(y.constant)
                   and x.constant == y.constant) for x, y in zip(a, b))


def _region_part(write: Node) -> Node | None:
    """The pure write ``inner`` whose result in-place ``write`` puts back over the region of its
    array that ``inner`` copied (``select_put_(h, select_put(select(h, 0, t), v, 1, 0), 0, t)``),
    when ``inner`` may store into that region (a view) instead: nothing but the put back reads
    the copy, and no reader of the array or of the region runs between the part's store and the
    put back (or reads them after it); None otherwise."""
    read = _REGION_READS.get(write.kind)
    if read is None:
        return None
    old, value, *where = write.inputs
    inner = value.node
    if inner.kind not in IN_PLACE or len(value.uses) != 1 or inner.owner is not write.owner:
        return None
    region = inner.inputs[0]
    view = region.node
    if view.kind != read or view.inputs[0] is not old \
            or not _same_arguments(list(view.inputs[1:]), where) or region.type != value.type \
            or view.owner is not write.owner or inner.inputs[1] is region:
        return None
    if not (ownership.readers_done(region, inner, skip=inner)
            and ownership.readers_done(old, inner, skip=(view, write))):
        return None
    return inner


_VIEWS = frozenset({SELECT, "tensor::slice"})


def _views_read_later(old: Value, write: Node) -> tuple[Node, ...]:
    """The ``select``s and ``slice``s of ``old`` made before ``write`` in its block whose
    readers only read them (no write through the view) and some of which run after ``write``:
    a copy of each (a row, where the write would copy the whole array) lets the write store into
    ``old`` (``prevh = H[t - 1]`` saved for a backward, then ``H[t] = v``)."""
    found = []
    for use in old.uses:
        view = use.node
        if view.kind not in _VIEWS or use.index != 0 or view.owner is not write.owner \
                or not view.is_before(write) or ownership.readers_done(view.output, write):
            continue
        if not all(_reads_only(u) for u in view.output.uses):
            return ()
        found.append(view)
    return tuple(found)


def _reads_only(use: Use) -> bool:
    """Whether ``use`` reads its value without writing through it or keeping a view of it
    anywhere but in a new array or a list of saved values (a copy does the same there)."""
    effects = effects_on_input(use.node, use.index)
    if WRITES in effects or (use.index == 0 and use.node.attrs.get(IN_PLACE_ATTR)):
        return False
    if ALIASES not in effects or ownership.fresh_op(use.node):
        return True
    return use.node.kind == LIST_APPEND and use.index == 1


def _copied(graph: Graph, view: Node) -> None:
    """Have the readers of ``view`` read a copy of it, made right after it."""
    out = view.output
    with graph.inserting_before(view.next):
        copy = graph.insert_typed("tensor::copy", [out]).output
    for use in list(out.uses):
        if use.node is not copy.node:
            use.node.set_input(use.index, copy)


def run(graph: Graph) -> bool:
    """Make every write whose old array nothing reads afterwards a write in place, and mark
    arithmetic storing into such an array (``IN_PLACE_ATTR``); a clip put back over the whole
    array it clipped clips that array in place instead (numpy's ``np.clip(g, lo, hi, out=g)``:
    no new array, no copy back); a part of a region put back over it is stored into the
    region."""
    changed = False
    for write in [n for n in graph.block.walk() if n.kind == "tensor::slice_put"]:
        clip = _clip_back(write)
        if clip is None or ownership.in_loop_around(clip, clip.inputs[0]) \
                or not ownership.own(clip.inputs[0], set()) \
                or not ownership.readers_done(clip.inputs[0], clip, skip=(clip, write)):
            continue
        clip.attrs[IN_PLACE_ATTR] = True
        write.output.replace_all_uses_with(clip.output)
        write.erase()
        changed = True
    for node in [n for n in graph.block.walk() if n.kind in IN_PLACE or _augmentable(n)]:
        if node.kind in IN_PLACE:
            _made_again(graph, node)
        old = node.inputs[0]
        if old is node.inputs[1] or ownership.in_loop_around(node, old):
            continue
        views = ()
        if not ownership.readers_done(old, node, skip=node):
            views = _views_read_later(old, node)
            if not views or not ownership.readers_done(old, node, skip=(node, *views)):
                continue
        if not ownership.own(old, set()):
            continue
        for view in views:
            _copied(graph, view)
        if node.kind in IN_PLACE:
            _in_place(graph, node)
        else:
            node.attrs[IN_PLACE_ATTR] = True
        changed = True
    again = True
    while again:  # a part of a part (h[t][i][:, 0] = 1) once the outer write is a view write
        again = False
        for write in [n for n in graph.block.walk() if n.kind in _REGION_READS]:
            inner = _region_part(write)
            if inner is None:
                continue
            _in_place(graph, inner)
            write.output.replace_all_uses_with(write.inputs[0])
            write.erase()
            changed = again = True
    return changed
