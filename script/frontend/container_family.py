"""Every name a list or dict may have, and the literals that made it: its family.

``held_items`` reads what was put into the container an item update reads from, so it needs
every value that may be that container: a loop's parameter and result, an ``if``'s result, an
element of a tuple, an item of another list or dict, an attribute, a called function's parameter
or result. ``container_family`` takes them from the storage classes (``ir.alias``: values that
may be the same memory share one location) of this function's graph, the graphs of the functions
it calls included, and sorts the nodes that made them:

- literals (``[...]``, ``{...}``, a comprehension's list) of this function or of a function it
  calls once: ``Family.origins``, whose puts ``held_items`` follows;
- an argument of this function: the caller's container, whose items are the caller's memory
  (``check_item_update`` refuses updating those by itself);
- anything else (``l + [...]``, ``l[:]``, ``[a] * 2``, a function called at two places or
  deeper, an op not known here): containers holding other containers' items, not followed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ir.alias import StorageClasses
from ir.core import PARAM, SUBGRAPH, Graph, Node, Use, Value
from ir.types import OptionalType, Type, is_mutable
from script.frontend.aliases import PUTS

_LITERALS = ("prim::ListConstruct", "prim::DictConstruct")

_NAMES = frozenset({"prim::If", "prim::Loop", "prim::TupleIndex", "prim::TupleUnpack",
                    "prim::ListIndex", "prim::DictGetItem", "prim::DictGet", "prim::ListUnpack",
                    "prim::ListPop", "prim::GetAttr", "prim::LoadAttr"})
"""ops whose result is a container some other value of its location already is (an ``if``'s or
a loop's result, a tuple's element, an item read from a list, dict or object)."""


@dataclass
class Family:
    """The values that may be one list or dict (``names``), the literals among them
    (``origins``), and, for each called function a name lives in, the one call running it."""

    names: list[Value] = field(default_factory=list)
    origins: list[Value] = field(default_factory=list)
    calls: dict[int, Node] = field(default_factory=dict)
    """id(a called function's graph) -> the node of this function calling it."""
    caller: bool = False
    """whether one of the names is an argument of this function (the caller's container)."""

    def call_of(self, node: Node) -> Node | None:
        """The call of this function running ``node``'s graph; None for this function's own."""
        return self.calls.get(id(_graph_of(node)))

    def anchor(self, origin: Value, at: Node) -> Node | None:
        """The node standing for where ``origin``'s container is made, as seen from ``at`` (a
        put into it): in ``at``'s graph, and outside every loop whose steps may pass that
        container on to the next (a loop carrying it): the literal itself, the call that gave
        it back, or such a loop. None where ``at`` is in a function the container was passed
        into (its puts are not followed)."""
        made = origin.node
        where = self.call_of(made)
        if where is not None and self.call_of(at) is None:
            made = where  # (made by a called function, put into here)
        elif self.call_of(at) is not where:
            return None
        carried = {id(v) for v in self.names if v.node.kind == PARAM and v.index >= 1}
        kept = any(_kept_elsewhere(u) for v in self.names for u in v.uses)
        block = made.owner
        while block is not None and block.owner is not None:
            loop = block.owner
            if loop.kind == "prim::Loop" and (kept or any(id(p) in carried
                                                          for p in loop.blocks[0].params)):
                made = loop
            block = loop.owner
        return made


def _kept_elsewhere(use: Use) -> bool:
    """Whether ``use`` keeps the container in another one or an object, from where a later step
    of a loop may reach it (``d["l"] = [...]`` in one step, ``d["l"].append(a)`` in each)."""
    kind = use.node.kind
    return kind in PUTS and use.index == PUTS[kind] or kind == "prim::SetAttr" or \
        kind in ("prim::ListConstruct", "prim::DictConstruct", "prim::TupleConstruct")


def _graph_of(node: Node) -> Graph:
    """The graph whose top block holds ``node`` at some depth (a nested block made before its
    node was inserted has no graph of its own)."""
    block = node.owner
    while block.owner is not None:  # type: ignore[union-attr]
        block = block.owner.owner  # type: ignore[union-attr]
    return block.graph  # type: ignore[union-attr]


def _container(t: Type | None) -> bool:
    return t is not None and is_mutable(t.element if isinstance(t, OptionalType) else t)


def container_family(value: Value, storage: StorageClasses, graph: Graph) -> Family | None:
    """The family of the list or dict ``value`` in ``graph`` (this function's, ``storage`` its
    storage classes); None where one of its names was made by an op not followed (see the
    module docstring)."""
    family = Family()
    calls: dict[int, list[Node]] = {}  # id(a called function's graph) -> the calls running it
    depth: dict[int, int] = {id(graph): 0}  # id(a graph) -> how deep its calls nest
    values: list[Value] = list(graph.inputs)
    todo = [graph]
    while todo:
        g = todo.pop()
        for node in g.walk():
            values += node.outputs + [p for b in node.blocks for p in b.params]
            if SUBGRAPH in node.attrs:
                sub = node.subgraph
                calls.setdefault(id(sub), []).append(node)
                if id(sub) not in depth:
                    depth[id(sub)] = depth[id(g)] + 1
                    values += sub.inputs
                    todo.append(sub)
    for v in values:
        if not _container(v.type) or not storage.same_location(v, value):
            continue
        family.names.append(v)
        node = v.node
        home = _graph_of(node) if node.owner is not None else graph
        if home is not graph:
            if len(calls[id(home)]) != 1 or depth[id(home)] != 1:
                return None  # (called at two places, or by a called function: not followed)
            family.calls[id(home)] = calls[id(home)][0]
        if node.kind in _LITERALS:
            family.origins.append(v)
        elif node.kind == PARAM and node.owner is graph.block:
            family.caller = True
        elif not (node.kind == PARAM or node.kind in _NAMES or SUBGRAPH in node.attrs):
            return None
    return family
