"""Container arguments that hold containers, given to the graph as their arrays, one input each.

A list or dict type has one item type, so a ``List[Dict[str, Tensor]]`` of layers (each a dict of
a weight matrix and a bias vector) types every weight as a tensor of unknown rank, and the
backward needs each one's shape. The backward follows the containers a graph builds
(``[...]``, ``{...}``) once the loops over them are unrolled and they are read at constant
indices and keys, which the cleanup pipeline then forwards to the items themselves. So, before
specialization, each such argument the function only reads (``Layout``, ``only_read``) is
replaced by new graph inputs, one per array, appended after the others; the graph builds the
container from them where it starts, and the original input is left unused. The caller passes
the arrays (``leaves``) and gets their gradients back in the argument's structure
(``rebuild``), as JAX does with pytrees.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ir.core import PARAM, Graph, Value
from ir.kinds import IF, LOOP
from ir.registry import FRESH, WRITES, lookup
from ir.types import DictType, ListType, TupleType, Type
from passes.autodiff.lists import MAX_TRIPS, counter_loops, unroll_indexed_loops
from passes.autodiff.refusals import refuse
from passes.licm import constant_trip_count
from passes.unroll import unroll_fully

CONTAINERS = (ListType, DictType, TupleType)

Layout = tuple
"""The structure of a container argument: ``("list", children)``, ``("tuple", children)`` or
``("dict", keys, children)``, a child being a ``Layout`` or None for an array."""

_READS = {"prim::ListIndex": 0, "prim::TupleIndex": 0, "prim::DictGetItem": 0, "prim::len": 0,
          "prim::ListUnpack": 0, "prim::TupleUnpack": 0, "prim::DictContains": 0,
          "prim::DictKeys": 0}
"""The uses of a container (kind -> the container's input index) that read it without changing
it or letting it reach anything else; their container results are followed in turn."""


def layout_of(value: Any, is_array: Callable[[Any], bool]) -> Layout | None:
    """The layout of ``value`` when it is a list, tuple or dict holding at least one list or
    dict, with arrays (``is_array``) at every leaf; else None (a NamedTuple, a flat container,
    a number or None among the items)."""
    found = _layout(value, is_array)
    if not isinstance(found, tuple) or not any(isinstance(c, tuple) for c in found[-1]):
        return None
    return found


def _layout(value: Any, is_array: Callable[[Any], bool]) -> Layout | None | bool:
    """A layout, None for an array, False for anything else."""
    if is_array(value):
        return None
    t = type(value)
    if t is list or t is tuple:
        children = [_layout(v, is_array) for v in value]
        items: tuple = ("list" if t is list else "tuple", tuple(children))
    elif t is dict and all(type(k) in (str, int) for k in value):
        children = [_layout(v, is_array) for v in value.values()]
        items = ("dict", tuple(value), tuple(children))
    else:
        return False
    if not value or any(c is False for c in children):
        return False
    return items


def leaves(value: Any, layout: Layout | None) -> list[Any]:
    """The arrays of ``value`` in the order of ``layout``'s leaves."""
    if layout is None:
        return [value]
    items = value.values() if layout[0] == "dict" else value
    return [leaf for v, child in zip(items, layout[-1]) for leaf in leaves(v, child)]


def count(layout: Layout | None) -> int:
    """The number of arrays ``layout`` holds."""
    return 1 if layout is None else sum(count(c) for c in layout[-1])


def rebuild(layout: Layout | None, flat: Sequence[Any]) -> Any:
    """The container of ``layout`` holding ``flat`` (one item per leaf, in order)."""
    if layout is None:
        return flat[0]
    items, at = [], 0
    for child in layout[-1]:
        n = count(child)
        items.append(rebuild(child, flat[at:at + n]))
        at += n
    if layout[0] == "dict":
        return dict(zip(layout[1], items))
    return items if layout[0] == "list" else tuple(items)


def only_read(v: Value) -> bool:
    """Whether the container ``v``, and every container read out of it, is only read (indexed,
    unpacked, measured, tested for a key) by the graph."""
    work, seen = [v], {v}
    while work:
        for use in work.pop().uses:
            if _READS.get(use.node.kind) != use.index:
                return False
            for out in use.node.outputs:
                if out not in seen and isinstance(out.type, CONTAINERS):
                    seen.add(out)
                    work.append(out)
    return True


def writes_only_fresh(graph: Graph, inputs_too: bool = False) -> bool:
    """Whether every list or dict the graph changes is one it made (a literal, a comprehension's
    list): then no change can reach a container of an argument, even one that another argument
    or a global also holds (``f(layers, layers[0])`` writing through the second), so the arrays
    a flattened argument holds are the ones it reads. ``inputs_too``: or a container the graph
    is passed itself (a Momentum's ``self.v[i] = ...``), for flattening containers of arrays
    alone: a change through a container read out of another is the change this refuses, and
    the call passes no container at two inputs it flattens (``shared_positions``)."""
    for node in graph.walk():
        op = lookup(node.kind)
        if op is None:
            continue
        for k, v in enumerate(node.inputs):
            if not isinstance(v.type, (ListType, DictType)) or WRITES not in op.effects_on(k):
                continue
            if not (_made_fresh(v) or inputs_too and v.node is graph.block.param_node):
                return False
    return True


def _made_fresh(v: Value) -> bool:
    """Whether every list or dict ``v`` may be is made by the graph: by an op making a new one,
    or carried by a loop or chosen by a branch from such lists (the list an optimizer's first
    call makes, ``self.v = []``, filled by a loop and updated by the next)."""
    work, seen = [v], {v}
    while work:
        v = work.pop()
        node = v.node
        if node.kind == PARAM:
            owner = node.owner.owner  # the node holding the block (None: the graph's inputs)
            k = node.outputs.index(v)
            if owner is None or owner.kind != LOOP or k == 0:
                return False
            found = [owner.inputs[k + 1], node.owner.returns[k]]
        elif node.kind == LOOP:
            k = node.outputs.index(v)
            found = [node.inputs[k + 2], node.blocks[0].returns[k + 1]]
        elif node.kind == IF:
            k = node.outputs.index(v)
            found = [b.returns[k] for b in node.blocks]
        else:
            maker = lookup(node.kind)
            if maker is None or FRESH not in maker.traits:
                return False
            found = []
        for u in found:
            if u not in seen:
                seen.add(u)
                work.append(u)
    return True


def flatten_inputs(graph: Graph, layouts: Mapping[int, Layout],
                   leaf_types: Mapping[int, Sequence[Type]]) -> dict[int, Layout]:
    """Replace each graph input ``k`` of ``layouts`` that is only read by new inputs typed
    ``leaf_types[k]`` (appended in the order of ``k``), the container being built from them at
    the graph's start. Returns the inputs replaced, in that order."""
    done: dict[int, Layout] = {}
    flat = all(child is None for layout in layouts.values() for child in layout[-1])
    if not writes_only_fresh(graph, inputs_too=flat):
        return done
    for k, layout in layouts.items():
        v = graph.inputs[k]
        if not only_read(v):
            continue
        names = iter(range(count(layout)))
        types = iter(leaf_types[k])
        first = graph.block.nodes[0] if graph.block.nodes else graph.block
        with graph.inserting_before(first):
            built = _build(graph, layout, lambda: graph.add_input(
                next(types), f"{v.name or 'arg'}_{next(names)}"))
        v.replace_all_uses_with(built)
        done[k] = layout
    return done


def unroll_reads(graph: Graph) -> bool:
    """Unroll the loops that read a list built from a flattened argument at their counter
    (``for layer in layers``; at most ``MAX_TRIPS`` trips), so every read is at a constant
    index; True when one was."""
    built = {n.output: () for n in graph.walk()
             if n.kind == "prim::ListConstruct" and n.attrs.get(REBUILT)}
    changed = False
    while unroll_indexed_loops(built) or _unroll_keyed_loop(graph):
        changed = True
    return changed


def _unroll_keyed_loop(graph: Graph) -> bool:
    """Unroll a loop reading a rebuilt dict at a key its counter picks from a list of constant
    keys (``for key in params.keys(): params[key] -= ...``, the keys being the call's); True
    when one was."""
    for node in graph.walk():
        if node.kind != "prim::DictConstruct" or not node.attrs.get(REBUILT):
            continue
        for use in node.output.uses:
            key = use.node.inputs[1] if use.node.kind == "prim::DictGetItem" else None
            if key is None or key.is_constant or key.node.kind != "prim::ListIndex":
                continue
            keys = key.node.inputs[0].node
            if keys.kind != "prim::ListConstruct" or not all(v.is_constant for v in keys.inputs):
                continue
            loops = counter_loops(key.node.inputs[1])
            trips = constant_trip_count(loops[0]) if loops else None
            if trips is not None and trips <= MAX_TRIPS:
                unroll_fully(loops[0], trips)
                return True
    return False


def check_rebuilt_reads(graph: Graph) -> None:
    """Refuse, at the reading line, a read of a rebuilt list that unrolling did not make
    constant: the backward cannot follow a container of containers read at a run-time index."""
    for node in graph.walk():
        if node.kind != "prim::ListConstruct" or not node.attrs.get(REBUILT):
            continue
        for use in node.output.uses:
            user = use.node
            if user.kind == "prim::ListIndex" and not user.inputs[1].is_constant:
                raise refuse(
                    "cannot differentiate a list of containers (an argument such as "
                    "List[Dict[str, Tensor]]) read at an index not known when compiling: a loop "
                    f"over it is unrolled when it runs a constant number of at most {MAX_TRIPS} "
                    "trips (for layer in layers, for i in range(len(layers))); pass the arrays "
                    "as separate lists or a tuple, or read it at constant indices", user)


REBUILT = "rebuilt"
"""Attribute of the ``prim::ListConstruct`` or ``prim::DictConstruct`` that rebuilds a
flattened argument."""


def _build(graph: Graph, layout: Layout, new_input: Callable[[], Value]) -> Value:
    items = [new_input() if child is None else _build(graph, child, new_input)
             for child in layout[-1]]
    if layout[0] == "dict":
        pairs = [x for key, item in zip(layout[1], items) for x in (graph.constant(key), item)]
        return graph.insert_typed("prim::DictConstruct", pairs, attrs={REBUILT: True}).output
    if layout[0] == "list":
        return graph.insert_typed("prim::ListConstruct", items, attrs={REBUILT: True}).output
    return graph.insert_typed("prim::TupleConstruct", items).output


__all__ = ["Layout", "check_rebuilt_reads", "count", "flatten_inputs", "layout_of", "leaves",
           "only_read", "rebuild", "unroll_reads", "writes_only_fresh"]
