"""Peeling a loop's first trip where it narrows a carried value's type, or where a branch
tells it from the others.

Real loops often start a carried value as None and let the steps replace it: ``c = None``
before a loop whose step does ``if c is None: c = np.zeros(...)`` (DLFS2's stateful layers). The
carried type is then the join of both
(``Float(1, 128)?``), which a native loop (``fuser.cpu.loop``) cannot hold. Running the first
trip on its own, before the loop, gives the loop that trip's results as its initial values, so
its carried types are what a step returns:

    %outs = prim::If(%trips > 0)
      block0():            # the first trip, then the loop over the others
        <body with counter 0>
        %rest = prim::Loop(%trips - 1, True, <the first trip's results>)
          block0(%i, ...):  # the body, its counter read as %i + 1
        -> (%rest)
      block1():            # no trip: the initial values
        -> (<initial values>)

An accumulator that starts as a number (``loss = 0`` before ``loss += row_losses``, rows of
shape (B, 1)) is carried as an array of unknown rank for the same reason; after its first trip
it has the steps' shape. Such loops are also peeled before differentiation
(``run_accumulators``), which needs each carried value's rank.

A step that branches on ``t > 0`` (Karpathy's LSTM: ``prevc = C[t - 1] if t > 0 else c0``) is
peeled the same way: in the first trip the test is ``0 > 0``, in the loop it is True, and
the branches fold away on both sides. This too runs before differentiation
(``run_accumulators``): the differentiated step then has no branch, so the forward saves no
flag per step and the reverse loop holds no ``If``, and both can run natively.

A loop counting down (``for t in reversed(range(n))``, its backward) that branches on
``t > 0`` has its last trip peeled instead: the loop over the trips before it, then the body
once more with ``t`` 0 (``peel_last``).

It runs after differentiation (in ``LAYOUT_PIPELINE``), on the graphs the executor compiles, and
only on for-loops carrying in a None that the body returns as a value that cannot be None, or
whose body has an ``if`` on such a test of its counter.
When it peels a loop it re-propagates types and folds what the narrower types decide (an ``h is
None`` test in the step, the unwrap of an Optional that no longer is one); a graph without such
a loop costs one walk.
"""

from __future__ import annotations

from ir.core import Block, Graph, Node, Value
from ir.kinds import IF, LOOP
from ir.types import BOOL, FLOAT, INT, TensorType, Type, is_subtype
from passes.licm import is_for_loop
from passes.shape_prop import is_none_by_type
from passes.unroll import clone_body_before

NAME = "peel-first-trip"
ACCUMULATORS_NAME = "peel-accumulators"


def narrows(loop: Node) -> bool:
    """Whether ``loop`` carries a value in as None (or an Optional) that its body returns as
    something that cannot be None: the steps replace the initial None."""
    if not is_for_loop(loop):
        return False
    body = loop.blocks[0]
    return any(is_none_by_type(init.type) is not False and is_none_by_type(ret.type) is False
               and not is_subtype(out.type, ret.type) and is_subtype(ret.type, out.type)
               for init, out, ret in zip(loop.inputs[2:], loop.outputs, body.returns[1:]))


def starts_as_number(loop: Node) -> bool:
    """Whether ``loop`` carries in a number or a 0-d array that its steps make an array of
    unknown rank: ``loss = 0`` before ``loss += row_losses`` of shape (B, 1). The first trip
    gives it the steps' shape; peeled, the loop carries that shape (which differentiation and
    a native loop need)."""
    if not is_for_loop(loop):
        return False
    return any(_number_or_0d(init.type) and isinstance(out.type, TensorType)
               and out.type.shape is None
               for init, out in zip(loop.inputs[2:], loop.outputs))


def _number_or_0d(t: Type) -> bool:
    return t in (INT, FLOAT, BOOL) or isinstance(t, TensorType) and t.shape == ()


_FIRST_TRIP_TESTS = {
    # (kind, the counter's side, the constant): the value for a counter of 1 or more
    ("tensor::gt", 0, 0): True, ("tensor::ge", 0, 1): True, ("tensor::eq", 0, 0): False,
    ("tensor::ne", 0, 0): True, ("tensor::lt", 1, 0): True, ("tensor::le", 1, 1): True,
    ("tensor::eq", 1, 0): False, ("tensor::ne", 1, 0): True,
}
"""Tests of a loop's counter that tell the first trip from the others (``t > 0``, ``t == 0``
...): after the first trip is peeled, each is a constant in the loop."""


def first_trip_tests(loop: Node) -> dict[Node, bool]:
    """The tests in ``loop``'s body that only tell its first trip from the others, which an
    ``if`` decides (``prevh = Hout[t - 1] if t > 0 else h0``: a branch in every step, which a
    native loop cannot run), with their value on the other trips; empty unless ``loop`` is a
    for-loop."""
    if not is_for_loop(loop):
        return {}
    return _tests_of(loop.blocks[0].params[0])


def last_trip_tests(loop: Node) -> dict[Node, bool]:
    """Likewise the tests that tell a for-loop's last trip from the others, on the step of a
    loop counting down to 0 (``for t in reversed(range(n))``: ``t = (n - 1) - i``; Karpathy's
    backward ``if t > 0: dC[t - 1] += ...``)."""
    if not is_for_loop(loop):
        return {}
    index = loop.blocks[0].params[0]
    trips = loop.inputs[0]
    found: dict[Node, bool] = {}
    for use in index.uses:
        node = use.node
        if node.kind != "tensor::sub" or use.index != 1:
            continue
        start = node.inputs[0]
        made = start.node
        if (start.is_constant and trips.is_constant and type(start.constant) is int
                and start.constant == trips.constant - 1) or (
                made.kind == "tensor::sub" and made.inputs[0] is trips
                and made.inputs[1].is_constant and made.inputs[1].constant == 1):
            found.update(_tests_of(node.output))
    return found


def _tests_of(count: Value) -> dict[Node, bool]:
    """The tests of ``count`` (a loop's counter, or a step counting down) against a constant
    that an ``if`` reads and that tell 0 from the counts after it (``_FIRST_TRIP_TESTS``)."""
    found = {}
    for use in count.uses:
        node = use.node
        other = node.inputs[1 - use.index] if len(node.inputs) == 2 else None
        if other is None or not other.is_constant or type(other.constant) is not int:
            continue
        value = _FIRST_TRIP_TESTS.get((node.kind, use.index, other.constant))
        if value is not None and any(u.node.kind == IF for u in node.output.uses):
            found[node] = value
    return found


def _inside_a_branch_on_trips(loop: Node) -> Block:
    """Move ``loop`` into the first block of a new ``If(trips > 0)`` whose other block gives the
    initial values; the If's outputs replace the loop's. Returns that first block (its returns
    still to be set)."""
    graph: Graph = loop.graph
    with graph.inserting_before(loop):
        some = graph.insert_typed("tensor::gt", [loop.inputs[0], graph.constant(0)]).output
    branch = graph.create(IF, [some], [v.type for v in loop.outputs], nblocks=2,
                          names=[v.name for v in loop.outputs], source=loop.source)
    branch.insert_before(loop)
    first, none = branch.blocks
    none.set_returns(list(loop.inputs[2:]))
    for out, result in zip(loop.outputs, branch.outputs):
        out.replace_all_uses_with(result)
    loop.move_before(first.return_node)
    return first


def peel(loop: Node) -> None:
    """Run ``loop``'s first trip before it, inside an ``If`` on the trip count (above)."""
    graph: Graph = loop.graph
    trips = loop.inputs[0]
    first = _inside_a_branch_on_trips(loop)
    with graph.inserting_before(loop):
        counter = graph.constant(0)
    carried = clone_body_before(loop, loop, counter, list(loop.inputs[2:]))
    with graph.inserting_before(loop):
        rest = graph.insert_typed("tensor::sub", [trips, graph.constant(1)]).output
    loop.set_input(0, rest)
    for k, value in enumerate(carried):
        loop.set_input(2 + k, value)
    first.set_returns(list(loop.outputs))
    body = loop.blocks[0]
    index = body.params[0]
    if index.uses:
        start = body.param_node.next
        assert start is not None
        with graph.inserting_before(start):
            shifted = graph.insert_typed("tensor::add", [index, graph.constant(1)]).output
        index.replace_uses_after(shifted, shifted.node)


def peel_last(loop: Node) -> None:
    """Run ``loop``'s last trip after it, inside an ``If`` on the trip count:

        %outs = prim::If(%trips > 0)
          block0():            # the loop over the trips before the last, then the last
            %rest = prim::Loop(%trips - 1, True, <initial values>)
            <body with counter %trips - 1, carried %rest>
            -> (<the last trip's results>)
          block1():            # no trip: the initial values
            -> (<initial values>)
    """
    graph: Graph = loop.graph
    trips = loop.inputs[0]
    first = _inside_a_branch_on_trips(loop)
    end = first.return_node
    with graph.inserting_before(loop):
        rest = graph.insert_typed("tensor::sub", [trips, graph.constant(1)]).output
    loop.set_input(0, rest)
    first.set_returns(clone_body_before(loop, end, rest, list(loop.outputs)))


def run_accumulators(graph: Graph) -> bool:
    """Peel the for-loops whose carried numbers become arrays (``starts_as_number``) or whose
    step branches on its first trip (``first_trip_tests``), then re-type: run before
    differentiation, so that the loop it differentiates carries one shape and has no branch
    on its counter."""
    from passes import canonicalize, constant_prop, dce, shape_prop
    loops = [n for n in graph.walk() if n.kind == LOOP and (starts_as_number(n)
                                                            or first_trip_tests(n))]
    for loop in loops:
        tests = first_trip_tests(loop)
        peel(loop)
        for test, value in tests.items():
            with graph.inserting_before(test):
                test.output.replace_all_uses_with(graph.constant(value))
    if loops:
        shape_prop.run(graph)
        canonicalize.run(graph)
        constant_prop.run(graph)
        dce.run(graph)
    return bool(loops)


def run(graph: Graph) -> bool:
    """Peel every for-loop whose first trip narrows a carried type, or whose body branches on
    its first or last trip (innermost last: a loop peeled moves into a branch, its inner loops
    with it), then re-type and clean up."""
    from passes import canonicalize, constant_prop, dce, shape_prop
    loops = [n for n in graph.walk() if n.kind == LOOP and (
        narrows(n) or starts_as_number(n) or first_trip_tests(n) or last_trip_tests(n))]
    if not loops:
        return False
    for loop in loops:
        tests = first_trip_tests(loop)
        if narrows(loop) or starts_as_number(loop) or tests:
            peel(loop)
        else:
            tests = last_trip_tests(loop)
            peel_last(loop)
        for test, value in tests.items():  # the loop runs the trips but the peeled one
            with graph.inserting_before(test):
                test.output.replace_all_uses_with(graph.constant(value))
    shape_prop.run(graph)
    canonicalize.run(graph)
    constant_prop.run(graph)
    dce.run(graph)
    return True
