"""Reading the caller's arrays around writes into them: Adam's ``self.m[i] += ...`` then
``self.m[i]``.

``tensor::write_into`` writes into the caller's array itself and returns it (the same memory,
a *version* of it). Two rules keep every read on the right side of every write, whatever order
later passes compute things in:

- a read after the write reads the version: the frontend forwards a later read of the same
  path (``X``, ``self.W``, ``self.m[i]`` with the same ``i``) in the block of the write or one
  nested in it to the write's result (``Versions``), so it follows the write by data flow;
- whatever reads the array before the write must feed the write (be one of its ancestors), or
  an earlier write in its block (writes keep their order), so it is computed before it: Adam's
  ``(1 - beta1) * (grads[i] - self.m[i])`` is the write's value (``misplaced_read``); in a
  loop, the array must be read at a path the step makes (``self.m[i]`` with the loop's ``i``),
  not one the same in every step, which LICM would read once before the loop.

The rest is refused at the read (a ``ScriptError`` naming the line): a read before the write that
the write does not need (``a = X * 2; X[...] += 1; use(a)``), a read after a write made in a
branch or a loop the read is not in, a read of another item of a container written at an index
the compiler cannot tell apart (``self.m[j]`` beside ``self.m[i]``), and a read inside a loop of
an array the loop writes at a path made before the loop or the same in every step (each step
would need the last step's array). Paths are told apart at compile time only; that two paths
are two arrays is checked at each call (``writes_apart`` with ``reads``: every array of a
written input apart from every other array the call is passed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ir.core import PARAM, Block, Node, Value
from ir.registry import NOT_CONSTANT, SIDE_EFFECTS, constant_of, lookup
from ir.types import TensorType
from ir.versions import ITEM_READS as READS
from ir.versions import WRITE_INTO as WRITE
from ir.versions import readers, unversioned


def item_key(read: Node) -> Any:
    """The index of an item read: its constant (``("=", 0)``, ``("=", "W")``; ``("-", -1)``
    for a negative one, which may be any item) or its value."""
    index = read.inputs[1]
    folded = constant_of(index)
    if folded is not NOT_CONSTANT and isinstance(folded, (int, str)) and \
            not isinstance(folded, bool):
        return ("-" if isinstance(folded, int) and folded < 0 else "=", folded)
    return index


def path_of(value: Value, top: Node) -> tuple | None:
    """The path of the caller's array ``value`` is (a version of): ``(input,)`` for an input,
    ``(container input, key)`` for an item of one; None for any other value."""
    value = unversioned(value)
    node = value.node
    if node is top:
        return (value,)
    if node.kind in READS and node.inputs[0].node is top:
        return (node.inputs[0], item_key(node))
    return None


def _constant(key: Any) -> bool:
    """A key naming one item apart from every other constant key."""
    return isinstance(key, tuple) and key[0] == "="


def _nested_in(block: Block | None, outer: Block) -> bool:
    while block is not None:
        if block is outer:
            return True
        block = block.owner.owner if block.owner is not None else None
    return False


@dataclass
class Versions:
    """The last write into each path, in the block it was made in (``forward``)."""

    latest: dict[tuple, Value] = field(default_factory=dict)

    def note(self, write: Node, top: Node) -> None:
        path = path_of(write.inputs[0], top)
        if path is None:
            return
        if len(path) == 2:  # another index of the container may be this array: forget it
            for other in [p for p in self.latest if len(p) == 2 and p[0] is path[0]]:
                if other != path and not (_constant(other[1]) and _constant(path[1])):
                    del self.latest[other]
        self.latest[path] = write.output

    def forward(self, value: Value, top: Node, block: Block) -> Value:
        """The last version of the caller's array ``value`` reads where that version is
        defined (its write's block or one nested in it), else ``value``."""
        if not self.latest or value.node.kind == WRITE or \
                not isinstance(value.type, TensorType):
            return value
        path = path_of(value, top)
        version = self.latest.get(path) if path is not None else None
        if version is None or version.node.owner is None or \
                not _nested_in(block, version.node.owner):
            return value
        return version  # (the read just made goes when unused: a name may hold it)


# -- the check ------------------------------------------------------------------------------------
def _ancestors(node: Node, cache: dict[Node, set[Node]]) -> set[Node]:
    """The nodes whose results ``node`` computes from, or that decide whether it runs (the
    condition of a branch it is in), in the same step of every loop it is in, through blocks (a
    branch's or loop's results come from its blocks; a step's parameters from what the loop
    starts from)."""
    found = cache.get(node)
    if found is not None:
        return found
    found = set()
    seen: set[int] = set()
    todo = list(node.inputs)
    block = node.owner  # and what decides whether it runs (a branch's condition)
    while block is not None and block.owner is not None:
        todo += block.owner.inputs
        block = block.owner.owner
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        n = v.node
        if n.kind == PARAM:  # a step's parameter: what the loop starts from (the last
            owner = n.owner.owner if n.owner is not None else None  # step's results ran in
            if owner is not None:  # another step: no read of this step runs before the write)
                todo += owner.inputs
            continue
        if n in found:
            continue
        found.add(n)
        todo += n.inputs
        for b in n.blocks:
            todo += b.return_node.inputs
    cache[node] = found
    return found


def _varies(x: Value, loop: Node, memo: dict[int, bool]) -> bool:
    """Whether ``x`` may differ between the steps of ``loop``: it comes from the step's own
    parameters (its counter, a carried value) or from an op with side effects. An inner loop's
    counter varies with its trip count only (unrolled, it is constants); anything else it cannot
    tell is taken as the same in every step."""
    if not x.defined_inside(loop) or x.node.kind == "prim::Constant":
        return False
    if id(x) in memo:
        return memo[id(x)]
    memo[id(x)] = False  # (a cycle through a carried value)
    node = x.node
    if node.kind == PARAM:
        owner = node.owner.owner if node.owner is not None else None
        found = owner is loop or (owner is not None and owner.kind == "prim::Loop" and
                                  x.index == 0 and _varies(owner.inputs[0], loop, memo))
    else:
        op = lookup(node.kind)
        found = (op is not None and SIDE_EFFECTS in op.traits) or \
            any(_varies(i, loop, memo) for i in node.inputs)
    memo[id(x)] = found
    return found


def _invariant(values: list[Value], loop: Node) -> bool:
    """Whether ``values`` may be the same array in every step of ``loop``: made before it, or
    read inside it at a path that does not change from step to step (which LICM may read once,
    before the loop, also once an inner loop is unrolled)."""
    memo: dict[int, bool] = {}
    return any(not _varies(v, loop, memo) for v in values)


def _before(write: Node, cache: dict[Node, set[Node]]) -> set[Node]:
    """What runs before ``write`` whatever the passes reorder: what it computes from, and the
    earlier writes in its block with what they compute from (writes keep their order)."""
    before = set(_ancestors(write, cache))
    for earlier in _earlier_writes(write):
        before |= {earlier} | _ancestors(earlier, cache)
    return before


def _against(values: list[Value], write: Node, cache: dict[Node, set[Node]]
             ) -> Node | None:
    """A read of the array ``values`` hold that may land on the other side of ``write`` (into
    that array, or one it may be): one that does not run before it, or one in a loop around it
    reading a path the same in every step."""
    reading = [r for r in readers(values) if r is not write]
    before = _before(write, cache)
    for reader in reading:
        if reader not in before:
            return reader
    for loop in write.enclosing("prim::Loop"):
        if _invariant(values, loop):
            for reader in reading:
                if reader.is_inside(loop):
                    return reader
    return None


def _chain(group: list[Value]) -> tuple[list[Value], list[Node]]:
    """The values of one path (its reads before any write, then each write's result) and the
    writes into it."""
    values: list[Value] = list(group)
    writes: list[Node] = []
    todo = list(group)
    while todo:
        v = todo.pop()
        for u in v.uses:
            if u.node.kind == WRITE and u.index == 0 and u.node not in writes:
                writes.append(u.node)
                values.append(u.node.output)
                todo.append(u.node.output)
    return values, writes


def misplaced_read(group: list[Value]) -> tuple[Node, Node] | None:
    """(a read, the write it is on the wrong side of) for the array ``group`` holds (reads of
    one path before any write) and its versions, or None when each read feeds the next write
    or reads a version no later write follows (module doc)."""
    cache: dict[Node, set[Node]] = {}
    todo = [list(group)]
    while todo:
        values = todo.pop()
        for write in [u.node for v in values for u in v.uses
                      if u.node.kind == WRITE and u.index == 0]:
            reader = _against(values, write, cache)
            if reader is not None:
                return reader, write
            todo.append([write.output])
    return None


def misplaced_across(groups: dict[Any, list[Value]]) -> tuple[Node, Node] | None:
    """(a read, a write) where the read, of a path of a container, may read the array a write
    at another of its paths writes (an index not known when compiling, or a negative one) and
    may land on the other side of it; None where every such read runs before every such write
    (Deep Learning from Scratch 2's ``clip_grads``: a loop summing the gradients' squares, then
    a loop scaling them)."""
    chains = {key: _chain(values) for key, values in groups.items()}
    cache: dict[Node, set[Node]] = {}
    for key, (values, _) in chains.items():
        for other, (_, writes) in chains.items():
            if other == key or _constant(key) and _constant(other):
                continue
            for write in writes:
                reader = _against(values, write, cache)
                if reader is not None:
                    return reader, write
    return None


def _earlier_writes(write: Node) -> list[Node]:
    """The writes before ``write`` in its block: side effects keep their order, so what feeds
    one is computed before ``write`` too (Nesterov's ``params[key] += m * m * self.v[key]``
    before ``self.v[key] *= m``)."""
    found = []
    node = write.prev
    while node is not None and node.kind != PARAM:
        if node.kind == WRITE:
            found.append(node)
        node = node.prev
    return found


def item_groups(holder: Value) -> dict[Any, list[Value]]:
    """The item reads of the container ``holder``, by key."""
    groups: dict[Any, list[Value]] = {}
    for use in holder.uses:
        if use.node.kind in READS and use.index == 0:
            groups.setdefault(item_key(use.node), []).append(use.node.output)
    return groups


__all__ = ["Versions", "item_groups", "misplaced_across", "misplaced_read", "path_of",
           "unversioned"]
