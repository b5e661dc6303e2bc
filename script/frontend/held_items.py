"""Whether a list or dict this function made holds each of its arrays at one place.

``l[i] += v`` on an item updates its array in place in numpy, so every place of the container
holding that array sees the update; the compiled code stores a new array at ``l[i]`` alone.
The two agree where the container holds the array once, which ``held_twice`` decides from what
the function put into the container (``ListConstruct`` / ``DictConstruct`` inputs and the
``PUTS``: appends, item stores, inserts):

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

from typing import Any

from ir.alias import holds_storage
from ir.core import PARAM, Node, Value
from ir.types import TensorType
from script.frontend.aliases import PUTS, carried_as, new_array_roots

Root = Any
"""a node's id (``new_array_roots``), or (container, element) for the arrays a container the
function made holds at an element of its tuple items."""


def held_twice(item: Value) -> bool:
    """Whether the list or dict ``item`` was read from may hold that array at another place
    too: ``l.append(l[0])``, ``l[1] = l[0]``, ``[a, a]``, or one array appended at every step
    of a loop. False where the container is not a literal of this function (one the caller
    passed is refused by ``check_item_update`` anyway)."""
    names = _container_names(item.node.inputs[0])
    return names is not None and (not names or _roots_held_once(names, 0) is None)


_UNSEEN_PUTS = frozenset({"prim::ListExtend", "prim::ListConstruct", "prim::DictConstruct",
                          "prim::CallFunction"})
"""uses of a container after which items may be put into it that its own uses do not show:
``l.extend(...)`` / ``l += [...]``, the container kept in another list or dict, or passed to
a function."""


def _roots_held_once(names: list[Value], depth: int) -> dict[int | None, set[Root]] | None:
    """The roots of the arrays the container ``names`` holds, per element of its tuple items
    (None: items that are arrays), where it holds each array once; None where it may not."""
    made = names[0].node
    puts = [(v, made) for v in (made.inputs[1::2] if made.kind == "prim::DictConstruct"
                                else made.inputs)]
    for use in (u for name in names for u in name.uses):
        if use.index == 0 and use.node.kind in PUTS:
            puts.append((use.node.inputs[PUTS[use.node.kind]], use.node))
        elif use.node.kind in _UNSEEN_PUTS or use.node.kind in PUTS:
            return None  # extended, or kept where other code may put items into it
    found: dict[int | None, set[Root]] = {}
    seen: dict[Root, list[Value]] = {}  # root -> the arrays put that hold it
    for value, at in puts:
        if _same_place(value, at, names):
            continue
        parts = [(None, value)]
        if value.node.kind == "prim::TupleConstruct":
            parts = list(enumerate(value.node.inputs))
        for element, part in parts:
            if not isinstance(part.type, TensorType):
                if holds_storage(part.type):
                    return None  # (a tuple a helper made, a list: not followed)
                continue
            roots = _put_roots(part, at, made, depth)
            if roots is None or any(not _steps_apart(other, part)
                                    for r in roots for other in seen.get(r, ())):
                return None
            for r in roots:
                seen.setdefault(r, []).append(part)
            found.setdefault(element, set()).update(roots)
    return found


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


def _put_roots(value: Value, at: Node, made: Node, depth: int) -> set[Root] | None:
    """The roots of the arrays ``at`` puts into the container ``made`` made, where it puts a
    new one at each step of the loops the container outlives; None otherwise."""
    where: dict[int, Any] = {}
    roots = new_array_roots(value, outside=True, where=where)
    if roots is not None:
        return None if _put_every_step(value, where, at, made) else set(roots)
    return _item_per_step(value, at, made, depth)


def _item_per_step(value: Value, at: Node, made: Node, depth: int) -> set[Root] | None:
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
    names = _container_names(source)
    if not names or names[0].node is made or source.defined_inside(loops[0]) or any(
            use.node.kind in PUTS and use.node.is_inside(loops[0])
            for name in names for use in name.uses):  # (its items moved by the loop)
        return None
    held = _roots_held_once(names, depth + 1)
    if held is None or element not in held:
        return None
    return held[element]


def _loops_outlived(at: Node, made: Node) -> list[Node]:
    """The loops enclosing ``at`` that do not enclose ``made``, innermost first."""
    loops = []
    block = at.owner
    while block is not None and block.owner is not None:
        loop = block.owner
        if loop.kind == "prim::Loop" and not made.is_inside(loop):
            loops.append(loop)
        block = loop.owner
    return loops


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


def _container_names(value: Value) -> list[Value] | None:
    """The values a list or dict made by a literal of this function is, through the loops that
    carry it: the literal's value first. None where it is not a literal here; [] where it is
    ``l + [...]`` or a slice, or a loop step binds the name to another container (not
    followed)."""
    while True:
        node = value.node
        if node.kind == "prim::Loop":
            if node.blocks[0].returns[1 + value.index] is not node.blocks[0].params[
                    1 + value.index]:
                return []  # (a step binds another container: not followed)
            value = node.inputs[2 + value.index]
        elif node.kind == PARAM and node.owner is not None and node.owner.owner is not None \
                and node.owner.owner.kind == "prim::Loop" and value.index >= 1:
            returns = node.owner.returns
            if len(returns) > value.index and returns[value.index] is not value:
                return []
            value = node.owner.owner.inputs[1 + value.index]
        else:
            break
    if value.node.kind in ("prim::ListAdd", "prim::ListSlice"):
        return []  # (the items of other lists, which may hold an array twice: not followed)
    if value.node.kind not in ("prim::ListConstruct", "prim::DictConstruct"):
        return None  # (a branch's, a helper's, an argument: not followed)
    names, todo = [value], [value]
    while todo:
        for use in todo.pop().uses:
            for other in carried_as(use.node, use.index):
                if other not in names:
                    names.append(other)
                    todo.append(other)
    return names
