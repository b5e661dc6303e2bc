"""Lists of tuples read item by item in a loop, read as one list per field of the tuples.

A hand-written backward reads each step's cache from the list of tuples its forward built:
``x, prev_h, Wx, Wh, next_h = cache[t]`` in ``for t in reversed(range(T))`` (CS231n's
``rnn_backward``). A native loop (``fuser.cpu.loop``) reads lists of arrays, not of tuples. When
nothing changes the list from the loop on (an argument the function only reads, or a list
whose appends and stores all run before the loop), each read ``cache[t]`` in the loop that is
only unpacked or indexed by constants becomes reads ``column_k[t]`` of
``column_k = prim::ListColumn(cache, k)`` (``[c[k] for c in cache]``), made once just before the
loop: the same arrays at the same index (and the same ``IndexError`` out of range).

It runs after differentiation (in ``LAYOUT_PIPELINE``), on the graphs the executor compiles.
"""

from __future__ import annotations

from ir.core import Graph, Node, Value
from ir.kinds import LIST_INDEX, LOOP
from ir.registry import ONLY_READS, effects_on_input
from ir.types import ListType, TupleType

NAME = "tuple-columns"

COLUMN = "prim::ListColumn"


def _unpacked_only(read: Node) -> bool:
    """Whether the tuple ``read`` gives is only unpacked or indexed by constants."""
    return bool(read.output.uses) and all(
        u.node.kind == "prim::TupleUnpack"
        or (u.node.kind == "prim::TupleIndex" and u.node.inputs[1].is_constant)
        for u in read.output.uses)


def _loop_around(read: Node, lst: Value) -> Node | None:
    """The node of the list's block that holds ``read`` when it is a loop, else None."""
    home = lst.node.owner
    if home is None:
        return None
    outer = read.ancestor_in(home)
    return outer if outer is not None and outer.kind == LOOP and outer is not read else None


def _settled_before(lst: Value, loop: Node) -> bool:
    """Whether every use of ``lst`` that may change it runs before ``loop``."""
    home = lst.node.owner
    for use in lst.uses:
        if effects_on_input(use.node, use.index) == ONLY_READS:
            continue
        if use.node.kind == COLUMN:
            continue
        at = use.node.ancestor_in(home)  # type: ignore[arg-type]
        if at is None or at is loop or not at.is_before(loop):
            return False
    return True


def run(graph: Graph) -> bool:
    """Read every list of tuples a loop reads item by item through columns (above)."""
    changed = False
    columns: dict[tuple[Value, Node, int], Value] = {}
    for read in [n for n in graph.walk() if n.kind == LIST_INDEX]:
        lst, index = read.inputs
        t = lst.type
        if not (isinstance(t, ListType) and isinstance(t.element, TupleType)
                and _unpacked_only(read)):
            continue
        loop = _loop_around(read, lst)
        if loop is None or not _settled_before(lst, loop):
            continue

        def column(k: int) -> Value:
            key = (lst, loop, k)
            if key not in columns:
                with graph.inserting_before(loop):
                    columns[key] = graph.insert_typed(
                        COLUMN, [lst, graph.constant(k)], source=read.source).output
            return columns[key]

        for use in list(read.output.uses):
            user = use.node
            chosen = (range(len(user.outputs)) if user.kind == "prim::TupleUnpack"
                      else [int(user.inputs[1].constant)])
            outs = user.outputs if user.kind == "prim::TupleUnpack" else [user.output]
            for k, out in zip(chosen, outs):
                with graph.inserting_before(user):
                    item = graph.insert_typed(LIST_INDEX, [column(k), index],
                                              source=read.source).output
                out.replace_all_uses_with(item)
            user.erase()
        read.erase()
        changed = True
    return changed
