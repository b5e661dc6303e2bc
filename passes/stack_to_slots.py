"""Stack to slots: a list filled once per step of a counted loop and stacked after it becomes a
preallocated array written one slice per step.

A recurrent layer collects its outputs in a list and stacks them after the loop::

    %outputs = prim::ListConstruct()
    prim::Loop(%N, %true, ...)                       // N a constant >= 1, no early exit
      block0(%i, ...):
        ...
        prim::ListAppend(%outputs, %hy)              // (or ListExtend with [%hy]), once a step
    %y = tensor::stack(%outputs, %zero)

``stack`` then reads every step's array again, long after it was written (from memory, not from
the cache: at T=100, B=64, H=512 that is 11 ms of a 320 ms forward), and the list keeps every
step's array alive until then. Instead the buffer is allocated before the loop and each step
copies its value in while it is still in the cache::

    %y = tensor::empty((N, *shape), dtype)
    prim::Loop(...)
      block0(%i, ...):
        tensor::write_slot(%y, 0, %i, %hy)

Conditions: the list is made empty in the loop's block and used only by the one store at the top
level of the loop body and by one ``stack`` along axis 0 after the loop; the loop is a ``for``
(constant trip count of at least one, a constant true condition it keeps returning), so the store
runs exactly once per step with the step counter as its slot; the stored value's dtype and shape
are fully known; not on CUDA (``empty`` allocates host memory). ``stack`` makes a new array, and
so does ``empty``: nothing else can see the buffer, so the result is the same array of values.
The pass runs in the executor's layout pipeline, after differentiation: autodiff never sees the
side-effecting ``write_slot``.
"""

from __future__ import annotations

from ir.core import Block, Graph, Node, Value
from ir.kinds import EMPTY, LIST_APPEND, LIST_CONSTRUCT, LIST_EXTEND, LOOP, STACK
from ir.registry import const
from ir.types import TensorType
from passes.licm import constant_trip_count

NAME = "stack-to-slots"


def _stored_value(store: Node) -> Value | None:
    """The one item a store puts into its list: ``append(v)`` or ``extend([v])``."""
    if store.kind == LIST_APPEND:
        return store.inputs[1]
    if store.kind == LIST_EXTEND:
        items = store.inputs[1]
        if items.node.kind == LIST_CONSTRUCT and len(items.node.inputs) == 1 \
                and len(items.uses) == 1:
            return items.node.inputs[0]
    return None


def _candidate(lst: Node) -> tuple[Node, Node, Node, Value, int] | None:
    """(loop, store, stack, value, trips) when ``lst`` has the pattern, else None."""
    if lst.inputs or len(lst.outputs) != 1:
        return None
    uses = [u.node for u in lst.output.uses]
    if len(uses) != 2:
        return None
    stores = [n for n in uses if n.kind in (LIST_APPEND, LIST_EXTEND)]
    stacks = [n for n in uses if n.kind == STACK]
    if len(stores) != 1 or len(stacks) != 1:
        return None
    store, stack = stores[0], stacks[0]
    loop = store.owner.owner if store.owner is not None else None
    if loop is None or loop.kind != LOOP or loop.owner is not lst.owner:
        return None
    if store.inputs[0] is not lst.output or stack.owner is not lst.owner:
        return None
    if not (lst.is_before(loop) and loop.is_before(stack)) or const(stack, 1) != 0:
        return None
    trips = constant_trip_count(loop)
    value = _stored_value(store)
    if not trips or value is None:  # a loop that may not run: stack([]) raises
        return None
    t = value.type
    if not (isinstance(t, TensorType) and t.dtype is not None and t.shape is not None
            and all(type(d) is int for d in t.shape) and t.device != "cuda"):
        return None
    return loop, store, stack, value, trips


def _rewrite(graph: Graph, lst: Node, loop: Node, store: Node, stack: Node, value: Value,
             trips: int) -> None:
    t = value.type
    assert isinstance(t, TensorType) and t.shape is not None
    with graph.inserting_before(loop):
        shape = graph.constant((trips, *t.shape))
        dtype = graph.constant(t.dtype)
        buf = graph.insert_typed(EMPTY, [shape, dtype], names=[stack.output.name]).output
    body: Block = loop.blocks[0]
    with graph.inserting_before(store):
        axis = graph.constant(0)
        graph.insert("tensor::write_slot", [buf, axis, body.params[0], value], [])
    items = store.inputs[1] if store.kind == LIST_EXTEND else None
    store.erase()
    if items is not None and not items.uses:
        items.node.erase()
    stack.output.replace_all_uses_with(buf)
    stack.erase()
    lst.erase()


def _lists_in(block: Block) -> list[Node]:
    return [n for n in block.walk() if n.kind == LIST_CONSTRUCT]


def run(graph: Graph) -> bool:
    """Rewrite every list that a counted loop fills once a step and that is only stacked."""
    changed = False
    for lst in _lists_in(graph.block):
        if lst.owner is None:  # erased by an earlier rewrite (the [%v] of an extend)
            continue
        found = _candidate(lst)
        if found is not None:
            _rewrite(graph, lst, *found)
            changed = True
    return changed
