"""Group formation: collect maximal sets of fusible elementwise ops into ``prim::FusionGroup``s.

A node is fusible when the registry marks it elementwise and the CPU backend has a rule for it
(``fuser.cpu.codegen.RULES``), or when it is a ``chunk``/``split`` into equal pieces along a
constant axis (read inside the kernel at offsets, never copied); its tensors must have fully known
shapes and a float32, float64 or bool dtype. Groups form in every block (loop and if bodies
included) and in the subgraphs of other subgraph nodes.

Within a block, nodes with side effects (and nodes whose blocks contain any) cut the block into
segments; a group never spans two segments, so no op moves across a side effect. Inside a segment,
a producer joins its consumer's group when the merged group still leaves the graph acyclic: no path
from the producer's group to the consumer's group may leave and re-enter them. Every value a group
makes that is used outside it becomes a group output; all outputs must have the same shape (the
kernel's iteration space).

A group is kept only when it holds at least ``MIN_COMPUTE_OPS`` (2) computing ops (chunk/split
and constants do not count): one op alone gains nothing from a kernel, its call costs about as much
as numpy's. The group node is placed at its last member; nodes between its members that use its
outputs move after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import fuser
from fuser.cpu.codegen import STORAGE, VIEW_OPS, can_generate
from ir.core import CONSTANT, SUBGRAPH, Block, Graph, Node, Value
from ir.registry import lookup
from ir.types import BOOL, FLOAT, INT, NONE, STR, TensorType

FUSION_GROUP = "prim::FusionGroup"
MIN_COMPUTE_OPS = 2
"""The fewest computing ops a group must hold to be worth a kernel call."""
_SCALARS = (INT, FLOAT, BOOL)


def fuse_elementwise(graph: Graph) -> bool:
    """Form fusion groups in ``graph`` (shape-specialized); True when any group was made.

    Does nothing while fusion is disabled (``fuser.set_enabled(False)``, RNNSCRIPT_FUSION=0).
    """
    if not fuser.is_enabled():
        return False
    return _fuse_block(graph.block, graph)


def _fuse_block(block: Block, graph: Graph) -> bool:
    changed = False
    for node in block.nodes:
        for inner in node.blocks:
            changed |= _fuse_block(inner, graph)
        sub = node.attrs.get(SUBGRAPH)
        if isinstance(sub, Graph) and node.kind != FUSION_GROUP:
            changed |= _fuse_block(sub.block, sub)
    return _BlockFuser(block, graph).run() or changed


# -- which nodes may join a group ------------------------------------------------------------------
def is_fusible(node: Node) -> bool:
    """Can ``node`` be part of a fusion group?"""
    if node.kind in VIEW_OPS:
        return _fusible_view(node)
    op = lookup(node.kind)
    if op is None or not op.is_elementwise or not can_generate(node):
        return False
    return all(_fusible_input(v) for v in node.inputs)


def _known_tensor(t: object) -> bool:
    return (isinstance(t, TensorType) and t.dtype in STORAGE and t.shape is not None
            and None not in t.shape)


def _fusible_input(v: Value) -> bool:
    if _known_tensor(v.type):
        return True
    if v.type in _SCALARS:
        return True
    return v.is_constant and v.type in (STR, NONE)  # astype's dtype, clip's open side


def _fusible_view(node: Node) -> bool:
    src = node.inputs[0]
    if not _known_tensor(src.type) or not all(_known_tensor(o.type) for o in node.outputs):
        return False
    rest = node.inputs[1:]
    if not all(v.is_constant and isinstance(v.constant, int) for v in rest):
        return False
    sizes = {o.type.shape for o in node.outputs}  # type: ignore[union-attr]
    return len(sizes) == 1  # equal pieces: one iteration space for all of them


def _is_barrier(node: Node) -> bool:
    """A node no group may span: it has side effects, or holds a block that has."""
    op = lookup(node.kind)
    if op is None or op.has_side_effects:
        return True
    return any(_is_barrier(n) for b in node.blocks for n in b)


def _is_compute(node: Node) -> bool:
    return node.kind not in VIEW_OPS and node.kind != CONSTANT


# -- grouping within one block ---------------------------------------------------------------------
@dataclass(eq=False)
class _Group:
    members: list[Node] = field(default_factory=list)


class _BlockFuser:
    """Greedy consumer-driven merging in one block, then materialization of the groups."""

    def __init__(self, block: Block, graph: Graph):
        self.block = block
        self.graph = graph
        self.nodes = block.nodes
        self.pos = {n: i for i, n in enumerate(self.nodes)}
        self.segment: dict[Node, int] = {}
        seg = 0
        for n in self.nodes:
            if _is_barrier(n):
                seg += 1
                self.segment[n] = -seg  # a barrier is a segment of its own
                continue
            self.segment[n] = seg
        self.users = {n: self._users_in_block(n) for n in self.nodes}
        self.group: dict[Node, _Group] = {}
        for n in self.nodes:
            if is_fusible(n):
                self.group[n] = _Group([n])

    def _users_in_block(self, node: Node) -> list[Node]:
        found: dict[Node, None] = {}
        for v in node.outputs:
            for use in v.uses:
                user = self._ancestor_in_block(use.node)
                if user is not None:
                    found[user] = None
        return list(found)

    def _ancestor_in_block(self, node: Node) -> Node | None:
        while node.owner is not None and node.owner is not self.block:
            owner = node.owner.owner
            if owner is None:
                return None
            node = owner
        return node if node.owner is self.block and node.kind != "prim::Return" else None

    def run(self) -> bool:
        changed = True
        while changed:
            changed = False
            for node in reversed(self.nodes):
                if node in self.group:
                    changed |= self._absorb_producers(node)
        made = False
        for g in self._final_groups():
            made |= _Materializer(self.block, self.graph, g.members).run()
        return made

    def _absorb_producers(self, node: Node) -> bool:
        changed = False
        for v in node.inputs:
            producer = v.node
            if producer not in self.group or producer.owner is not self.block:
                continue
            if self.group[producer] is self.group[node]:
                continue
            if self._try_merge(self.group[producer], self.group[node]):
                changed = True
        return changed

    def _try_merge(self, a: _Group, b: _Group) -> bool:
        """Merge producer group ``a`` into consumer group ``b`` when that stays legal."""
        if self.segment[a.members[0]] != self.segment[b.members[0]]:
            return False
        if self._path_outside(a, b):
            return False
        members = sorted(a.members + b.members, key=self.pos.__getitem__)
        if not _single_output_shape(members):
            return False
        b.members = members
        for n in a.members:
            self.group[n] = b
        return True

    def _path_outside(self, a: _Group, b: _Group) -> bool:
        """Is there a path from ``a`` to ``b`` through a node in neither (a cycle if merged)?"""
        limit = max(self.pos[n] for n in b.members)
        inside = set(a.members) | set(b.members)
        stack = [u for n in a.members for u in self.users[n] if u not in inside]
        seen: set[Node] = set()
        while stack:
            n = stack.pop()
            if n in seen or self.pos[n] > limit:
                continue
            seen.add(n)
            if n in inside:
                return True
            group = self.group.get(n)
            nodes = group.members if group is not None else [n]
            for m in nodes:
                seen.add(m)
                stack.extend(self.users[m])
        return False

    def _final_groups(self) -> list[_Group]:
        groups: dict[int, _Group] = {}
        for g in self.group.values():
            groups.setdefault(id(g), g)
        kept = [g for g in groups.values()
                if sum(1 for n in g.members if _is_compute(n)) >= MIN_COMPUTE_OPS]
        return sorted(kept, key=lambda g: self.pos[g.members[-1]])


def _single_output_shape(members: list[Node]) -> bool:
    """Do all values the group would export have one shape?"""
    inside = set(members)
    shapes = set()
    for n in members:
        for v in n.outputs:
            if any(use.node not in inside for use in v.uses):
                shapes.add(v.type.shape)  # type: ignore[union-attr]
    return len(shapes) <= 1


# -- building the FusionGroup node -----------------------------------------------------------------
class _Materializer:
    """Replaces one group's member nodes by a ``prim::FusionGroup`` with their subgraph."""

    def __init__(self, block: Block, graph: Graph, members: list[Node]):
        self.block = block
        self.graph = graph
        self.inside = set(members)
        # the current block order: an earlier group may have moved some members down
        self.members = [n for n in block if n in self.inside]

    def run(self) -> bool:
        outputs = [v for n in self.members for v in n.outputs
                   if any(use.node not in self.inside for use in v.uses)]
        if not outputs:
            return False  # dead: DCE removes it
        sub, inputs = self._subgraph(outputs)
        last = self.members[-1]
        node = self.graph.create(FUSION_GROUP, inputs, [v.type for v in outputs],
                                 {SUBGRAPH: sub}, names=[v.name for v in outputs])
        node.insert_after(last)
        self._move_dependents_after(node)
        for old, new in zip(outputs, node.outputs):
            old.replace_all_uses_with(new)
        for n in reversed(self.members):
            n.erase()
        return True

    def _subgraph(self, outputs: list[Value]) -> tuple[Graph, list[Value]]:
        from ir.core import clone_node
        sub = Graph()
        vmap: dict[Value, Value] = {}
        inputs: list[Value] = []
        for n in self.members:
            for v in n.inputs:
                if v in vmap or v.node in self.inside:
                    continue
                if v.is_constant and not isinstance(v.type, TensorType):
                    # scalar constants are copied in: the kernel folds them into its code
                    c = sub.create(CONSTANT, (), (v.type,), {"value": v.constant}, names=[v.name])
                    vmap[v] = sub.block.append(c).output
                    continue
                vmap[v] = sub.add_input(v.type, v.name)
                inputs.append(v)
            sub.block.append(clone_node(n, sub, vmap))
        sub.set_outputs([vmap[v] for v in outputs])
        return sub, inputs

    def _move_dependents_after(self, group_node: Node) -> None:
        """Nodes between the first and last member that read a member's output (directly or
        through each other) must follow the group node; their order is kept."""
        tainted = set(self.inside)
        moved: list[Node] = []
        n = self.members[0].next
        while n is not None and n is not group_node:
            if n not in self.inside and any(_reads_any(n, tainted)):
                tainted.add(n)
                moved.append(n)
            n = n.next
        anchor = group_node
        for m in moved:
            m.move_after(anchor)
            anchor = m


def _reads_any(node: Node, producers: set[Node]):
    """For each input of ``node`` (its nested blocks included), whether a producer made it."""
    for v in node.inputs:
        yield v.node in producers
    for b in node.blocks:
        # a block's results are inputs of its return sentinel, which block iteration skips:
        # an `if` branch returning a member's output reads it too
        for v in b.returns:
            yield v.node in producers
        for inner in b:
            yield from _reads_any(inner, producers)
