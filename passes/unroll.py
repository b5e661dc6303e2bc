"""Loop unrolling: repeat a for-loop's body to save per-iteration overhead.

Two forms, as in TorchScript's ``loop_unrolling.cpp``:

- a for-loop with a constant trip count ``n <= MAX_FULL_UNROLL_TRIPS`` whose body times ``n``
  stays within ``MAX_FULL_UNROLL_NODES`` is replaced by ``n`` copies of its body, the counter
  becoming the constants ``0 .. n-1``;
- other for-loops with a body of at most ``MAX_PARTIAL_BODY`` nodes become a loop of
  ``n // factor`` trips running ``factor`` copies of the body (counter ``j * factor + k``), then
  the original loop as an epilogue for the ``n % factor`` remaining trips (counter offset).

Copies run in the original order, so side effects (list appends, prints) happen in the same order.
While-loops (a condition that is not the constant True) are left alone.

Why the defaults are small: the generated code is Python, where a loop iteration costs tens of
nanoseconds while each op of the body costs a microsecond or more; unrolling saves little and
makes the generated code (and its compile time) grow with the copies. benchmarks/hoisting.py
measured the LSTM layer (one thread, time relative to no unrolling): unrolled by 8, 0.98 at
T=100 B=64 I=H=512 and 0.98 at T=100 B=8 I=H=64; fully unrolled, 1.00 at T=100 B=8 (compile time
0.37 s instead of 0.014 s) and 0.99 at T=8. So partial unrolling is off by default
(``DEFAULT_FACTOR = 1``) and full unrolling is kept for small loops, where it costs nothing and
the constant counter can fold (``range(3)`` over a tuple of weights, a fixed number of layers).
"""

from __future__ import annotations

from ir.core import Block, Graph, Node, Value, clone_node
from ir.kinds import CONSTANT, LOOP
from ir.types import INT
from passes.licm import constant_trip_count, is_for_loop

NAME = "unroll"
BY_FACTOR_NAME = "unroll-by-8"
"""The pass that unrolls like TorchScript (factor 8 with an epilogue), for explicit pipelines."""

PYTORCH_FACTOR = 8
"""TorchScript's kUnrollFactor; what ``unroll_loops(graph, factor=PYTORCH_FACTOR)`` uses."""
DEFAULT_FACTOR = 1
"""The factor the pipeline uses: 1 turns partial unrolling off, since on a Python-executed graph
it measured no faster at any size (see benchmarks/hoisting.py) while multiplying the code."""
MAX_PARTIAL_BODY = 32
"""TorchScript's kMaxBodySize: a larger body gains nothing relative to its own cost."""
MAX_FULL_UNROLL_TRIPS = 16
"""Full unrolling is for short fixed loops; TorchScript allows 64 (kMaxBodyRepeats), but a
100-step RNN unrolled into straight-line Python only grows the code."""
MAX_FULL_UNROLL_NODES = 64
"""Bound on body size times trips for a full unroll: the generated code stays readable and
compiling it stays cheap."""


def body_size(block: Block) -> int:
    """The work in a block: its nodes and nested nodes, constants not counted."""
    return sum(1 for n in block.walk() if n.kind != CONSTANT)


def _insert(graph: Graph, kind: str, inputs: list[Value]) -> Value:
    return graph.insert_typed(kind, inputs).output


def clone_body_before(loop: Node, before: Node, counter: Value,
                      carried: list[Value]) -> list[Value]:
    """Copy ``loop``'s body before ``before`` with the given counter and carried values.

    Returns the carried values the copy produces.
    """
    body = loop.blocks[0]
    vmap: dict[Value, Value] = {body.params[0]: counter}
    vmap.update(zip(body.params[1:], carried))
    graph = loop.graph
    for node in body:
        clone_node(node, graph, vmap).insert_before(before)
    return [vmap.get(v, v) for v in body.returns[1:]]


def unroll_fully(loop: Node, trips: int) -> None:
    """Replace ``loop`` by ``trips`` copies of its body."""
    graph = loop.graph
    carried = list(loop.inputs[2:])
    for k in range(trips):
        with graph.inserting_before(loop):
            counter = graph.constant(k)
        carried = clone_body_before(loop, loop, counter, carried)
    for out, value in zip(loop.outputs, carried):
        out.replace_all_uses_with(value)
    loop.erase()


def _trip_split(graph: Graph, loop: Node, factor: int) -> tuple[Value, Value, Value]:
    """(main trips, epilogue trips, epilogue counter offset) for unrolling by ``factor``."""
    trips = constant_trip_count(loop)
    if trips is not None:
        main = trips // factor
        return graph.constant(main), graph.constant(trips - main * factor), graph.constant(
            main * factor)
    n = _insert(graph, "prim::max", [loop.inputs[0], graph.constant(0)])  # no negative trips
    f = graph.constant(factor)
    main = _insert(graph, "tensor::floordiv", [n, f])
    offset = _insert(graph, "tensor::mul", [main, f])
    return main, _insert(graph, "tensor::sub", [n, offset]), offset


def unroll_by_factor(loop: Node, factor: int) -> None:
    """Run ``factor`` body copies per trip of a new loop, then ``loop`` for the remainder."""
    graph = loop.graph
    body = loop.blocks[0]
    with graph.inserting_before(loop):
        main_trips, rest_trips, offset = _trip_split(graph, loop, factor)
        main = graph.create(LOOP, [main_trips, loop.inputs[1], *loop.inputs[2:]],
                            [v.type for v in loop.outputs], nblocks=1,
                            names=[v.name for v in loop.outputs], source=loop.source)
        main.insert_before(loop)
    new_body = main.blocks[0]
    j = new_body.add_param(INT, body.params[0].name)
    carried = [new_body.add_param(p.type, p.name) for p in body.params[1:]]
    end = new_body.return_node
    with graph.inserting_before(end):
        base = _insert(graph, "tensor::mul", [j, graph.constant(factor)])
    for k in range(factor):
        with graph.inserting_before(end):
            counter = base if k == 0 else _insert(graph, "tensor::add", [base, graph.constant(k)])
        carried = clone_body_before(loop, end, counter, carried)
    with graph.inserting_before(end):
        keep_going = graph.constant(True)
    new_body.set_returns([keep_going, *carried])
    _make_epilogue(loop, rest_trips, offset, main.outputs)


def _make_epilogue(loop: Node, trips: Value, offset: Value, carried: list[Value]) -> None:
    """Turn ``loop`` into the remainder loop: ``trips`` trips from counter ``offset`` on."""
    if trips.is_constant and trips.constant == 0:
        for out, value in zip(loop.outputs, carried):
            out.replace_all_uses_with(value)
        loop.erase()
        return
    loop.set_input(0, trips)
    for k, value in enumerate(carried):
        loop.set_input(2 + k, value)
    body = loop.blocks[0]
    counter = body.params[0]
    if not counter.uses:
        return
    graph = loop.graph
    first = body.param_node.next
    assert first is not None
    with graph.inserting_before(first):
        shifted = _insert(graph, "tensor::add", [counter, offset])
    counter.replace_uses_after(shifted, shifted.node)


def plan(loop: Node, factor: int) -> str | None:
    """"full", "factor" or None: how ``loop`` should be unrolled."""
    if not is_for_loop(loop):
        return None
    size = body_size(loop.blocks[0])
    trips = constant_trip_count(loop)
    small = trips is not None and trips * size <= MAX_FULL_UNROLL_NODES
    if small and trips <= MAX_FULL_UNROLL_TRIPS:  # type: ignore[operator]
        return "full"
    if factor <= 1 or size > MAX_PARTIAL_BODY or (trips is not None and trips < factor):
        return None
    return "factor"


def unroll_loops(graph: Graph, factor: int) -> bool:
    """Unroll the graph's for-loops, innermost first; True when one changed."""
    loops = [n for n in graph.walk() if n.kind == LOOP]
    changed = False
    for loop in reversed(loops):  # inner loops come after their outer loop in program order
        how = plan(loop, factor)
        if how == "full":
            unroll_fully(loop, constant_trip_count(loop) or 0)
        elif how == "factor":
            unroll_by_factor(loop, factor)
        changed |= how is not None
    return changed


def run(graph: Graph) -> bool:
    """Unroll with the default thresholds (``DEFAULT_FACTOR`` is read at each run)."""
    return unroll_loops(graph, DEFAULT_FACTOR)


def run_by_factor(graph: Graph) -> bool:
    """Unroll by TorchScript's factor of 8 (full unrolls as ``run``)."""
    return unroll_loops(graph, PYTORCH_FACTOR)
