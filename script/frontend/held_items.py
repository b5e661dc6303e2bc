"""Whether a list or dict this function made holds each of its arrays at one place.

``l[i] += v`` on an item updates its array in place in numpy, so every place of the container
holding that array sees the update; the compiled code stores a new array at ``l[i]`` alone.
The two agree where the container holds the array once, which ``held_twice`` decides from what
the function put into it: the items of each literal that may have made it and the ``PUTS``
(appends, item stores, inserts) through each of its names, an ``if``'s or a loop's result, a
tuple's element, a called function's parameter or result (``container_family``):

- each array put must be one this function made (``aliases.new_array_roots``), no two puts may
  be the same array, and a put in a loop the container outlives must put a new array at each
  step (one made in the step, or a carried value each step makes anew);
- an item read from another container the function made is a new array at each step where the
  loop's counter indexes it (``dict([(k, np.zeros_like(v)) for k, v in model.items()])``
  fills the dict from the list by its index), and that container holds each of its arrays
  once (decided the same way).

Anything else (an item read at a fixed index, ``l.append(l[0])``, ``l[1] = l[0]``) may be an
array put elsewhere too: the update is refused (``WriteMixin.check_item_update``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ir.alias import StorageClasses, holds_storage
from ir.core import PARAM, SUBGRAPH, Graph, Node, Value
from ir.types import TensorType
from script.frontend.aliases import PUTS, call_inputs, new_array_roots
from script.frontend.container_family import Family, container_family

Root = Any
"""a node's id (``new_array_roots``), or (container, element) for the arrays a container the
function made holds at an element of its tuple items."""


def held_twice(item: Value, storage: StorageClasses, graph: Graph,
               loop: Node | None = None) -> bool:
    """Whether the list or dict ``item`` was read from may hold that array at another place
    too: ``l.append(l[0])``, ``l[1] = l[0]``, ``[a, a]``, or one array appended at every step
    of a loop. False where no literal of this function (or of a function it called) made the
    container: the caller's (``check_item_update`` refuses updating its items anyway).

    Only puts that may run before the update count: those before it, and those anywhere in
    ``loop``, the outermost loop around it whose steps update the same container (a put later in
    the step runs before the next step's update; the function's whole graph is checked again
    once compiled, ``check_item_updates``)."""
    family = container_family(item.node.inputs[0], storage, graph)
    return family is None or \
        _roots_held_once(family, storage, graph, 0, _runs_before(family, item.node, loop)) is None


def _runs_before(family: Family, update: Node, loop: Node | None) -> Callable[[Node], bool]:
    """Whether a put (of ``family``'s container) may run before ``update``: it comes before it,
    or it is anywhere in ``loop`` (see ``held_twice``)."""
    def before(at: Node) -> bool:
        at = family.call_of(at) or at
        return at.is_before(update) or (loop is not None and at.is_inside(loop))
    return before


def held_made_in(item: Value, storage: StorageClasses, graph: Graph, step: Node,
                 loop: Node | None) -> bool:
    """Whether every array the container ``item`` was read from may hold at the update is one
    made in the step of the loop ``step`` it runs in (none a loop carries from an earlier step,
    made before the loop, or the caller's): then nothing before that step, nor anything later
    in it but inside ``loop`` (see ``held_twice``), can hold it too."""
    family = container_family(item.node.inputs[0], storage, graph)
    puts = None if family is None or family.caller else \
        _puts(family, _runs_before(family, item.node, loop))
    if puts is None:
        return False
    for value, at in [(v, origin.node) for origin in family.origins  # type: ignore[union-attr]
                      for v in _literal_items(origin.node)] + puts:
        parts = value.node.inputs if value.node.kind == "prim::TupleConstruct" else [value]
        for part in parts:
            if not isinstance(part.type, TensorType):
                if holds_storage(part.type):
                    return False
                continue
            where: dict[int, Any] = {}
            call = family.call_of(at)
            if new_array_roots(part, None if call is None else call_inputs(call), outside=True,
                               where=where) is None or not all(
                    p.defined_inside(step) if isinstance(p, Value) else p.is_inside(step)
                    for p in where.values()):
                return False
    return True


_UNSEEN_PUTS = frozenset({"prim::ListExtend", "prim::CallFunction"})
"""uses of a container after which items may be put into it that its names' uses do not show:
``l.extend(...)`` / ``l += [...]``, or the container passed to a function whose graph is not
known (one whose graph is known has its parameter among the names)."""


def _roots_held_once(family: Family, storage: StorageClasses, graph: Graph, depth: int,
                     before: Callable[[Node], bool] | None = None
                     ) -> dict[int | None, set[Root]] | None:
    """The roots of the arrays the containers of ``family`` hold, per element of their tuple
    items (None: items that are arrays), where each holds each array once; None where one may
    not. ``before``: which puts count (all where None)."""
    puts = _puts(family, before)
    if puts is None:
        return None
    found: dict[int | None, set[Root]] = {}
    for origin in family.origins:
        made = origin.node
        seen: dict[Root, list[Value]] = {}  # root -> the arrays put that hold it
        for value, at in [(v, made) for v in _literal_items(made)] + puts:
            anchor = family.anchor(origin, at)
            if anchor is None:
                return None
            if _same_place(value, at, family.names):
                continue
            parts = [(None, value)]
            if value.node.kind == "prim::TupleConstruct":
                parts = list(enumerate(value.node.inputs))
            for element, part in parts:
                if not isinstance(part.type, TensorType):
                    if holds_storage(part.type):
                        return None  # (a tuple a helper made, a list: not followed)
                    continue
                roots = _put_roots(part, at, anchor, family, storage, graph, depth)
                if roots is None or any(not _steps_apart(other, part)
                                        for r in roots for other in seen.get(r, ())):
                    return None
                for r in roots:
                    seen.setdefault(r, []).append(part)
                found.setdefault(element, set()).update(roots)
    return found


def _puts(family: Family, before: Callable[[Node], bool] | None
          ) -> list[tuple[Value, Node]] | None:
    """The values put into ``family``'s containers through any of their names, with the node
    putting each (those ``before`` accepts; all where None); None where items may be put that
    no name's use shows (``_UNSEEN_PUTS``)."""
    puts: list[tuple[Value, Node]] = []
    for use in (u for name in family.names for u in name.uses):
        if use.index == 0 and use.node.kind in PUTS:
            if before is None or before(use.node):
                puts.append((use.node.inputs[PUTS[use.node.kind]], use.node))
        elif use.node.kind in _UNSEEN_PUTS and SUBGRAPH not in use.node.attrs:
            return None  # extended, or passed where other code may put items into it
    return puts


def _literal_items(made: Node) -> list[Value]:
    """The values a list or dict literal puts (a dict's values)."""
    return list(made.inputs[1::2] if made.kind == "prim::DictConstruct" else made.inputs)


def _steps_apart(a: Value, b: Value) -> bool:
    """Whether ``a`` and ``b`` are a value a loop carries and the loop's result for it (``for
    ...: hs.append(h); h = f(h)`` then ``hs.append(h)``): the result is what the last step
    gave back, a step's own new array (``_put_every_step`` checked the carried value's puts),
    or, where no step ran, the value it started as, which no step put."""
    for p, r in ((a, b), (b, a)):
        loop = r.node
        if loop.kind == "prim::Loop" and p.node.kind == PARAM and \
                p.node.owner is loop.blocks[0] and p.index == r.index + 1:
            return True
    return False


def _same_place(value: Value, at: Node, names: list[Value]) -> bool:
    """Whether ``at`` stores back at its key of a dict the array it read there, or stored there,
    written into (``xs[t][k] = 1``: ``xs[t] = select_put(xs[t], ...)``): the same array at the
    same place."""
    if at.kind != "prim::DictSetItem":  # (a list's index may move: inserts, pops)
        return False
    written = False
    while value.node.kind.startswith("tensor::") and value.node.kind.endswith("_put"):
        value, written = value.node.inputs[0], True
    if not written:
        return False
    read, key = value.node, at.inputs[1]
    if read.kind in ("prim::DictGetItem", "prim::ListIndex"):
        return read.inputs[0] in names and read.inputs[1] is key
    return any(use.index == 0 and use.node is not at and use.node.kind == at.kind and
               use.node.inputs[1] is key and use.node.inputs[2] is value
               for name in names for use in name.uses)  # (the array stored there, read back)


def _put_roots(value: Value, at: Node, made: Node, family: Family, storage: StorageClasses,
               graph: Graph, depth: int) -> set[Root] | None:
    """The roots of the arrays ``at`` puts into a container made at ``made`` (see
    ``Family.anchor``), where it puts a new one at each step of the loops the container
    outlives; None otherwise. In a called function, its parameters are the caller's values."""
    where: dict[int, Any] = {}
    call = family.call_of(at)
    roots = new_array_roots(value, None if call is None else call_inputs(call), outside=True,
                            where=where)
    if roots is not None:
        return None if _put_every_step(value, where, at, made) else set(roots)
    return _item_per_step(value, at, made, family, storage, graph, depth)


def _item_per_step(value: Value, at: Node, made: Node, family: Family,
                   storage: StorageClasses, graph: Graph, depth: int) -> set[Root] | None:
    """``value`` read from a container this function made at the counter of the one loop the
    container ``made`` outlives (``pairs[i]``, or an element of that tuple): a new item at each
    step. Its roots are those of the arrays the other container holds there, where it holds
    each once."""
    element = None
    read = value
    if value.node.kind == "prim::TupleUnpack":
        element, read = value.index, value.node.inputs[0]
    if read.node.kind != "prim::ListIndex" or depth > 4:
        return None
    source, index = read.node.inputs[0], read.node.inputs[1]
    loops = _loops_outlived(at, made)
    if len(loops) != 1 or index.node.kind != PARAM or index.index != 0 or \
            index.node.owner is not loops[0].blocks[0]:
        return None
    other = container_family(source, storage, graph)
    if other is None or other.caller or not other.origins or \
            storage.same_location(source, family.names[0]) or source.defined_inside(loops[0]) or \
            any(name.node.owner is loops[0].blocks[0] or
                any(use.node.kind in PUTS and use.node.is_inside(loops[0]) for use in name.uses)
                for name in other.names):  # (its items moved, or it rebound, by the loop)
        return None
    held = _roots_held_once(other, storage, graph, depth + 1)
    if held is None or element not in held:
        return None
    return held[element]


def _loops_outlived(at: Node, made: Node) -> list[Node]:
    """The loops enclosing ``at`` that do not enclose ``made``, innermost first."""
    return [loop for loop in at.enclosing("prim::Loop") if not made.is_inside(loop)]


def _put_every_step(value: Value, where: dict[int, Any], at: Node, made: Node) -> bool:
    """Whether ``at`` may put the same array (``value``, whose roots are placed in ``where``)
    into the container ``made`` made at two steps of a loop: one the container outlives whose
    step does not make ``value`` anew (a loop parameter a step gives back made anew is a new
    array at each step)."""
    for loop in _loops_outlived(at, made):
        places = where
        if value.node.kind == PARAM and value.node.owner is loop.blocks[0] and \
                value.index >= 1:
            returns = loop.blocks[0].returns
            if len(returns) <= value.index:
                return True  # (a step being compiled: what it gives back is not known)
            places = {}
            if new_array_roots(returns[value.index], outside=True, where=places) is None:
                return True
        if not all(
                (p.defined_inside(loop) if isinstance(p, Value) else p.is_inside(loop))
                for p in places.values()):
            return True
    return False
