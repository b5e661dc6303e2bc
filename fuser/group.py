"""Group formation: collect maximal sets of fusible elementwise ops into ``prim::FusionGroup``s.

Every question is asked of the backend of the device the node's tensors live on
(``fuser.backend.backend_of``): a CPU graph is fused by CPU rules, a CUDA graph by CUDA rules, and
a group never mixes backends. A node is fusible when the registry marks it elementwise and its
backend can generate it (``Backend.can_generate``: a rule for the kind, a stored dtype), or when it
is a ``chunk``/``split`` into equal pieces along a constant axis (read inside the kernel at
offsets, never copied); its tensors must have fully known shapes and a dtype the backend stores
(float32, float64 or bool; CUDA also float16). Groups form in every block (loop and if bodies
included) and in the subgraphs of other subgraph nodes.

Within a block, nodes with side effects (and nodes whose blocks contain any) cut the block into
segments; a group never spans two segments, so no op moves across a side effect. Inside a segment,
a producer joins its consumer's group when the merged group still leaves the graph acyclic: no path
from the producer's group to the consumer's group may leave and re-enter them. Every value a group
makes that is used outside it becomes a group output; all outputs must have the same shape (the
kernel's iteration space).

After producer/consumer merging, *sibling* groups are merged ("horizontal fusion"): two groups
(or a group and a lone fusible node; two lone nodes stay numpy calls) of one segment whose
exported values have the same iteration shape become one kernel when no path leads from one to
the other through nodes outside them. Pairs that read a common input are tried first. Groups of
views alone are never merged this way (a view is free; exporting it from a kernel copies it).

A ``cat`` of equal-shaped tensors along a constant axis (its list built by a ``ListConstruct`` used
only there) may join a group as a *store*: the kernel iterates over the pieces' shape and writes
each piece at its offset in the concatenated output, so the pieces are never materialized on
their own. The cat's output is only ever a group output, never read inside the group; its
iteration shape is that of its pieces. Only a backend with ``stores_cats`` forms such groups (the
CUDA backend has no stores at offsets).

A group is kept only when it holds at least ``MIN_COMPUTE_OPS`` (2) computing ops (chunk/split,
cat and constants do not count): one op alone gains nothing from a kernel, its call costs about
as much as numpy's; a group of 0-d values (numpy scalars) at least ``MIN_SCALAR_OPS``. The
group node is placed at its last member; nodes between its members that use its outputs move
after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import fuser
from fuser.analysis import VIEW_OPS
from fuser.backend import Backend, backend_of
from ir.alias import StorageClasses
from ir.core import SUBGRAPH, Block, Graph, Node, Value
from ir.kinds import CAT, CONSTANT, FUSION_GROUP, LIST_CONSTRUCT, PARAM, RETURN
from ir.registry import lookup
from ir.types import BOOL, FLOAT, INT, NONE, STR, TensorType

MIN_COMPUTE_OPS = 2
"""The fewest computing ops a group must hold to be worth a kernel call."""
MIN_SCALAR_OPS = 16
"""The fewest computing ops a group of 0-d values must hold: numpy's arithmetic on its scalars
costs about 0.1 us an op, a kernel call about 1-2 us (an HMM's forward recursion, a sum of five
products per element in a Python loop: 3.33 ms with these groups fused, 3.10 ms without;
numpy 1.6 ms)."""
MAX_INDEPENDENT_TRIES = 8
"""How many sibling groups that share no input a group tries to merge with (nearest first)."""
_SCALARS = (INT, FLOAT, BOOL)


def fuse_elementwise(graph: Graph) -> bool:
    """Form fusion groups in ``graph`` (shape-specialized); True when any group was made.

    Does nothing while fusion is disabled (``fuser.set_enabled(False)``, RNNSCRIPT_FUSION=0).
    """
    if not fuser.is_enabled():
        return False
    return _fuse_block(graph.block, graph, shared_views(graph))


def _fuse_block(block: Block, graph: Graph, views: set[Node]) -> bool:
    changed = False
    for node in block.nodes:
        for inner in node.blocks:
            changed |= _fuse_block(inner, graph, views)
        sub = node.attrs.get(SUBGRAPH)
        if isinstance(sub, Graph) and node.kind != FUSION_GROUP:
            changed |= _fuse_block(sub.block, sub, views)
    return _BlockFuser(block, graph, views).run() or changed


def shared_views(graph: Graph) -> set[Node]:
    """The view nodes (chunk, split) that must stay views: the caller can reach their result and
    the memory they view in some other way too (the viewed value is an argument, or is read by
    another node that may hand it out). A group writes each of its outputs into memory of its own,
    so a view inside one would come back as a copy that no longer shares memory as plain Python's
    does (``return [g], [ops.chunk(g, 1, 1)[0]]``)."""
    classes: StorageClasses | None = None
    found: set[Node] = set()
    for node in graph.walk():
        if node.kind not in VIEW_OPS:
            continue
        src = node.inputs[0]
        if src.node.kind != PARAM and all(u.node is node for u in src.uses):
            continue
        classes = classes or StorageClasses(graph)
        if classes.any_escapes(node):
            found.add(node)
    return found


# -- which nodes may join a group ------------------------------------------------------------------
def is_fusible(node: Node) -> bool:
    """Can ``node`` be part of a fusion group (by its device's backend's rules)?"""
    backend = backend_of(node)
    if backend is None:
        return False
    if node.kind == CAT:
        return fusible_cat(node)
    if node.kind in VIEW_OPS:
        return _fusible_view(node, backend)
    op = lookup(node.kind)
    if op is None or not op.is_elementwise or not backend.can_generate(node):
        return False
    return all(_fusible_input(v, backend) for v in node.inputs)


def _fusible_input(v: Value, backend: Backend) -> bool:
    if backend.knows(v.type):
        return True
    if v.type in _SCALARS:
        return True
    return v.is_constant and v.type in (STR, NONE)  # astype's dtype, clip's open side


def _fusible_view(node: Node, backend: Backend) -> bool:
    src = node.inputs[0]
    if not backend.knows(src.type) or not all(backend.knows(o.type) for o in node.outputs):
        return False
    rest = node.inputs[1:]
    if not all(v.is_constant and isinstance(v.constant, int) for v in rest):
        return False
    sizes = {o.type.shape for o in node.outputs}  # type: ignore[union-attr]
    return len(sizes) == 1  # equal pieces: one iteration space for all of them


def fusible_cat(node: Node) -> bool:
    """Can this ``cat`` be a group's store: pieces from a ``ListConstruct`` used only here, all
    of one known shape and the output's dtype, a constant axis, a backend that stores cats?"""
    lst, axis = node.inputs[0], node.inputs[1] if len(node.inputs) > 1 else None
    out = node.outputs[0].type
    backend = backend_of(node)
    if backend is None or not backend.stores_cats:
        return False
    if lst.node.kind != LIST_CONSTRUCT or len(lst.uses) != 1 or lst.node.owner is not node.owner:
        return False
    if axis is not None and not (axis.is_constant and isinstance(axis.constant, int)
                                 and not isinstance(axis.constant, bool)):
        return False
    pieces = lst.node.inputs
    if not pieces or not backend.knows(out):
        return False
    types = [p.type for p in pieces]
    if not all(backend.knows(t) and t.dtype == out.dtype for t in types):  # type: ignore
        return False
    shape = types[0].shape  # type: ignore[union-attr]
    return len(shape) > 0 and all(t.shape == shape for t in types)  # type: ignore[union-attr]


def _is_barrier(node: Node) -> bool:
    """A node no group may span: it has side effects, or holds a block that has."""
    op = lookup(node.kind)
    if op is None or op.has_side_effects:
        return True
    return any(_is_barrier(n) for b in node.blocks for n in b)


def _is_compute(node: Node) -> bool:
    return node.kind not in VIEW_OPS and node.kind not in (CONSTANT, CAT, LIST_CONSTRUCT)


def iteration_shape(value: Value) -> tuple[int, ...]:
    """The shape a kernel iterates over to make ``value``: a cat's is its pieces'."""
    if value.node.kind == CAT:
        return value.node.inputs[0].node.inputs[0].type.shape  # type: ignore[union-attr]
    return value.type.shape  # type: ignore[union-attr]


# -- grouping within one block ---------------------------------------------------------------------
@dataclass(eq=False)
class _Group:
    members: list[Node] = field(default_factory=list)
    backend: Backend | None = None
    """the backend that compiles it (groups of two backends never merge)."""


class _BlockFuser:
    """Greedy consumer-driven merging in one block, then materialization of the groups."""

    def __init__(self, block: Block, graph: Graph, views: set[Node]):
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
            if n.kind == CAT and is_fusible(n):
                lst = n.inputs[0].node
                if self.segment[lst] == self.segment[n]:  # the list is part of the cat
                    self.group[lst] = self.group[n] = _Group([lst, n], backend_of(n))
            elif n in views:
                continue  # must stay a view of memory the caller reaches otherwise
            elif n not in self.group and n.kind != LIST_CONSTRUCT and is_fusible(n):
                self.group[n] = _Group([n], backend_of(n))

    def _users_in_block(self, node: Node) -> list[Node]:
        found: dict[Node, None] = {}
        for v in node.outputs:
            for use in v.uses:
                user = use.node.ancestor_in(self.block)
                if user is not None and user.kind != RETURN:
                    found[user] = None
        return list(found)

    def run(self) -> bool:
        changed = True
        while changed:
            changed = False
            for node in reversed(self.nodes):
                if node in self.group:
                    changed |= self._absorb_producers(node)
        self._merge_siblings()
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
            if producer.kind == CAT:
                continue  # a cat's output is never read inside a kernel
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
        return self._join(b, a)

    def _join(self, into: _Group, other: _Group) -> bool:
        """Move ``other``'s members into ``into`` when the union is one kernel (one backend, one
        output shape, no cat read inside); True when joined."""
        if into.backend is not other.backend:
            return False
        members = sorted(into.members + other.members, key=self.pos.__getitem__)
        if not _single_output_shape(members) or _reads_cat(members):
            return False
        into.members = members
        for n in other.members:
            self.group[n] = into
        return True

    def _path_outside(self, a: _Group, b: _Group) -> bool:
        """Is there a path from ``a`` to ``b`` through a node in neither (a cycle if merged)?

        Data edges only go forward in the block, so a path that passes ``b``'s last member can
        only come back through a group (one node once made) with members on both sides of it:
        the search stops at such nodes unless a group straddles that position.
        """
        limit = max(self.pos[n] for n in b.members)
        if any(self.pos[g.members[0]] <= limit < self.pos[g.members[-1]]
               for g in self._unique_groups()):
            limit = len(self.nodes)
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

    # -- horizontal fusion ------------------------------------------------------------------------
    def _merge_siblings(self) -> None:
        """Merge groups of one segment and one iteration shape that no outside path connects,
        pairs with a common input first."""
        groups = [g for g in self._unique_groups() if any(_is_compute(n) for n in g.members)]
        groups.sort(key=lambda g: self.pos[g.members[0]])
        alive = set(map(id, groups))
        for a in groups:
            if id(a) not in alive:
                continue
            for b in self._sibling_candidates(a, groups, alive):
                if self._try_merge_siblings(a, b):
                    alive.discard(id(b))

    def _sibling_candidates(self, a: _Group, groups: list[_Group], alive: set[int]
                            ) -> list[_Group]:
        shape = _export_shape(a.members)
        seg = self.segment[a.members[0]]
        if shape is None:
            return []
        reads = {v for n in a.members for v in n.inputs if v.node not in a.members}
        here = self.pos[a.members[-1]]
        found = []
        for b in groups:
            if b is a or id(b) not in alive or self.segment[b.members[0]] != seg:
                continue
            if _export_shape(b.members) != shape:
                continue
            shares = any(v in reads for n in b.members for v in n.inputs)
            found.append((not shares, abs(self.pos[b.members[0]] - here), b))
        found.sort(key=lambda t: t[:2])
        # every group sharing an input, but only the nearest independent ones: each try walks
        # the graph, and far-apart groups are rarely independent
        sharing = sum(1 for t in found if not t[0])
        return [b for _, _, b in found[:sharing + MAX_INDEPENDENT_TRIES]]

    def _try_merge_siblings(self, a: _Group, b: _Group) -> bool:
        """Merge ``b`` into ``a`` when neither reaches the other through outside nodes and one
        of them is worth a kernel already (lone ops joining each other would make a new kernel
        call that costs more than the numpy calls it replaces, for small tensors)."""
        if _compute_ops(a) < MIN_COMPUTE_OPS and _compute_ops(b) < MIN_COMPUTE_OPS:
            return False
        if self._path_outside(a, b) or self._path_outside(b, a):
            return False
        return self._join(a, b)

    def _unique_groups(self) -> list[_Group]:
        groups: dict[int, _Group] = {}
        for g in self.group.values():
            groups.setdefault(id(g), g)
        return list(groups.values())

    def _final_groups(self) -> list[_Group]:
        kept = [g for g in self._unique_groups() if _compute_ops(g) >= (
            MIN_SCALAR_OPS if _export_shape(g.members) == () else MIN_COMPUTE_OPS)]
        return sorted(kept, key=lambda g: self.pos[g.members[-1]])


def _compute_ops(group: _Group) -> int:
    return sum(1 for n in group.members if _is_compute(n))


def _export_shapes(members: list[Node]) -> set[tuple[int, ...]]:
    """The iteration shapes of the values the group would export."""
    inside = set(members)
    shapes = set()
    for n in members:
        for v in n.outputs:
            if any(use.node not in inside for use in v.uses):
                shapes.add(iteration_shape(v))
    return shapes


def _single_output_shape(members: list[Node]) -> bool:
    """Do all values the group would export have one iteration shape?"""
    return len(_export_shapes(members)) <= 1


def _export_shape(members: list[Node]) -> tuple[int, ...] | None:
    """The one iteration shape of the group's exported values (None: none, or several)."""
    shapes = _export_shapes(members)
    return next(iter(shapes)) if len(shapes) == 1 else None


def _reads_cat(members: list[Node]) -> bool:
    """Would a member read a cat's output (which has another shape than the kernel's)?"""
    inside = set(members)
    return any(v.node.kind == CAT and v.node in inside for n in members for v in n.inputs)


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
        self._views_outside()
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

    def _views_outside(self) -> None:
        """A member view (a gate's chunk) of a value computed outside the group that nodes
        outside read too (a second group, after a product between them) is read there through
        a copy of the view made outside: the group would otherwise write it out as an output,
        a copy of memory that is already there."""
        from ir.core import clone_node
        for n in self.members:
            if n.kind not in VIEW_OPS or n.inputs[0].node in self.inside:
                continue
            if not any(u.node not in self.inside for v in n.outputs for u in v.uses):
                continue
            copy = clone_node(n, self.graph, {})
            copy.insert_before(n)
            for old, new in zip(n.outputs, copy.outputs):
                for use in [u for u in old.uses if u.node not in self.inside]:
                    use.node.set_input(use.index, new)

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
