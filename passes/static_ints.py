"""Static int arguments: the int parameters whose value gives an array's shape, the bool
parameters whose value decides an ``if``, and the str parameters compared with a constant
string or deciding an ``if`` through string ops (``if mode == "train":``, ``if
name.startswith("lstm"):``, decided when compiling like a bool's ``if``).

``sizing_inputs(graph)`` finds, once per function, the graph inputs declared ``int`` (or
``Optional[int]``, or a tuple of ints) whose value flows into an operand that sizes an array: an
argument an op names in its ``sizes`` fact (``np.zeros``'s shape, ``reshape``'s shape, ``np.tile``'s
reps, ``np.arange``'s bounds, ``np.repeat``'s count), through int arithmetic, tuple and list
construction and ``if`` results, callees included (the analysis runs on an inlined copy); and
the inputs declared ``bool`` that decide an ``if`` (directly, or through ``not``, ``and``, ``or``
of bools). A bool has two values, so keying it by value costs at most two specializations, and
the branch not taken is dropped: a loop whose body held the ``if`` has none left (``if
teacher_forcing:`` inside a recurrence), and can run natively.

The call signature then holds the values of those arguments (``script.frontend.signature``), and
``bind_static_ints`` replaces each by its value in the specialized graph, so the arrays it sizes
have static shapes: ``np.zeros((x.shape[0], n))`` with ``n = 200`` is ``Double(300, 200)``, and a
loop carrying it can run natively. An int that only counts loop trips or enters arithmetic on
arrays is not traced there and stays keyed by its type: a new value compiles nothing.

``trip_inputs(graph)`` finds the other int inputs that are a loop's trip count (``for t in
range(n)``). A call whose value for one equals an axis of an array argument (``n ==
x.shape[0]``) or the length of a list or tuple argument is keyed by that value, which its
specialization compiles in as ``bind_static_ints`` does: the loop is then the one
``range(x.shape[0])`` writes, whose trip count and reads are known when compiling (a read of
every row of ``x`` is a product over the whole sequence before the loop). Any other value keys
the call by its type, as before: at most one more specialization per array axis length.
"""

from __future__ import annotations

from collections.abc import Mapping

from ir.core import Graph, Value
from ir.kinds import CONSTANT, IF, LOOP, PARAM, TUPLE_CONSTRUCT
from ir.registry import lookup
from ir.types import BOOL, INT, STR, ListType, OptionalType, TupleType, Type
from passes import inline


def sizing_inputs(graph: Graph) -> tuple[int, ...]:
    """The positions of ``graph``'s int inputs whose value sizes an array, of its bool inputs
    that decide an ``if`` and of its str inputs compared with a constant string, in order."""
    graph = graph.clone()
    inline.run(graph)
    candidates = {v: k for k, v in enumerate(graph.inputs) if _int_like(v.type)}
    flags = {v: k for k, v in enumerate(graph.inputs) if v.type == BOOL}
    words = {v: k for k, v in enumerate(graph.inputs) if v.type == STR}
    if not candidates and not flags and not words:
        return ()
    found: set[int] = set()
    seen: set[Value] = set()
    for node in graph.walk():
        if node.kind == IF and (flags or words):
            _trace_flags(node.inputs[0], flags, found, words)
        if node.kind == "prim::str_eq" and any(v.is_constant for v in node.inputs):
            found.update(words[v] for v in node.inputs if v in words)  # mode == "train"
        op = lookup(node.kind)
        sizes = op.extra.get("sizes", ()) if op is not None else ()
        for k, arg in enumerate(op.args if sizes else ()):
            if arg.name in sizes and k < len(node.inputs):
                _trace(node.inputs[k], candidates, found, seen)
    return tuple(sorted(found))


def trip_inputs(graph: Graph, sizing: tuple[int, ...] = ()) -> tuple[int, ...]:
    """The positions of ``graph``'s int inputs, other than ``sizing``, that are a loop's trip
    count (``range(n)``; not an offset, ``range(x.shape[0] - k)``, whose value matching an
    axis would be a coincidence)."""
    if not any(v.type == INT and k not in sizing for k, v in enumerate(graph.inputs)):
        return ()
    graph = graph.clone()
    inline.run(graph)
    candidates = {v: k for k, v in enumerate(graph.inputs)
                  if v.type == INT and k not in sizing}
    return tuple(sorted({candidates[node.inputs[0]] for node in graph.walk()
                         if node.kind == LOOP and node.inputs[0] in candidates}))


def _trace(value: Value, candidates: dict[Value, int], found: set[int], seen: set[Value]) -> None:
    """Add to ``found`` the candidate inputs ``value`` is computed from through int-valued
    nodes (a loop's or block's parameter, or any non-int value, ends the search)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in candidates:
            found.add(candidates[v])
            continue
        node = v.node
        if node.kind in (PARAM, CONSTANT) or not _holds_ints(v.type):
            continue
        if node.kind == IF:
            stack += [block.returns[v.index] for block in node.blocks]
        elif not node.blocks:
            stack += node.inputs


def _trace_flags(value: Value, flags: dict[Value, int], found: set[int],
                 words: dict[Value, int]) -> None:
    """Add to ``found`` the bool inputs ``value`` (an ``if``'s condition) is computed from
    through ``not`` and the ``if``s that ``and`` and ``or`` make, and the str inputs it is
    computed from through string ops (``if name.startswith("lstm"):``)."""
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        if v in seen or v.type != BOOL:
            continue
        seen.add(v)
        if v in flags:
            found.add(flags[v])
            continue
        node = v.node
        if node.kind == IF:
            stack += [node.inputs[0], *(block.returns[v.index] for block in node.blocks)]
        elif node.kind in STRING_OPS:
            _trace_words(node.inputs, words, found)
        elif not node.blocks and node.kind not in (PARAM, CONSTANT):
            if all(x.type == BOOL for x in node.inputs):
                stack += node.inputs


STRING_OPS = ("prim::str_eq", "prim::str_op", "prim::str_slice")


def _trace_words(values: list[Value], words: dict[Value, int], found: set[int]) -> None:
    """Add to ``found`` the str inputs ``values`` are computed from through string ops."""
    stack, seen = list(values), set()
    while stack:
        v = stack.pop()
        if v in seen or v.type != STR:
            continue
        seen.add(v)
        if v in words:
            found.add(words[v])
        elif v.node.kind in STRING_OPS:
            stack += v.node.inputs


def _int_like(t: Type) -> bool:
    """A parameter type whose values ``bind_static_ints`` can compile in."""
    if isinstance(t, OptionalType):
        return t.element == INT
    if isinstance(t, TupleType):
        return bool(t.elements) and all(e == INT for e in t.elements)
    return t == INT


def _holds_ints(t: Type) -> bool:
    if isinstance(t, (TupleType, ListType)):
        items = t.elements if isinstance(t, TupleType) else (t.element,)
        return all(e == INT for e in items)
    return t == INT or (isinstance(t, OptionalType) and t.element == INT)


def bind_static_ints(graph: Graph, values: Mapping[int, int | tuple[int, ...]]) -> None:
    """Replace the uses of each input ``k`` of ``values`` by constants of ``values[k]`` (an int
    or a bool, or a tuple of ints), defined at the top of the graph; the inputs stay."""
    with graph.inserting_before(graph.block.param_node.next):
        for k, value in values.items():
            if isinstance(value, tuple):
                items = [graph.constant(x, INT) for x in value]
                bound = graph.insert(TUPLE_CONSTRUCT, items, [TupleType((INT,) * len(items))])
                bound = bound.output
            else:
                bound = graph.constant(value)
            graph.inputs[k].replace_all_uses_with(bound)
