"""The SSA IR: ``Value``, ``Node``, ``Block`` and ``Graph``.

TorchScript's model in plain Python. A ``Graph`` owns one top-level ``Block``. A ``Block`` is a
doubly linked list of ``Node``s between two sentinels: a ``prim::Param`` node whose outputs are the
block parameters and a ``prim::Return`` node whose inputs are the block results, so every use of a
value is a (node, input index) pair. Use lists are changed only through ``Node.inputs``,
``Node.set_input``, ``Value.replace_all_uses_with`` and ``Node.erase``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ir.errors import IRError
from ir.kinds import CONSTANT as CONSTANT
from ir.kinds import PARAM as PARAM
from ir.kinds import RETURN as RETURN
from ir.types import Type
from ir.value import Use as Use
from ir.value import Value as Value

SUBGRAPH = "Subgraph"
"""The attribute name under which subgraph nodes (FusionGroup, DifferentiableGraph) keep a Graph."""


@dataclass(frozen=True, slots=True)
class SourceRange:
    """Where a node came from in the user's source; printed as ``# file:line:col``."""

    file: str
    """the file name as the user would recognise it."""
    line: int
    """1-based line."""
    col: int
    """0-based column, as Python's ast reports it."""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class Node:
    """An operation: ``kind``, inputs, outputs, attributes and nested blocks."""

    __slots__ = ("kind", "_inputs", "_input_uses", "outputs", "attrs", "blocks", "owner", "prev",
                 "next", "source")

    def __init__(self, kind: str, inputs: Sequence[Value] = (), output_types: Sequence[Type] = (),
                 attrs: dict[str, Any] | None = None, source: SourceRange | None = None,
                 names: Sequence[str | None] | None = None):
        self.kind = kind
        """``namespace::name``, e.g. ``tensor::add`` or ``prim::If``."""
        self._inputs: list[Value] = []
        self._input_uses: list[Use] = []
        """the ``Use`` each input's value holds for this node (removed in O(1))."""
        self.outputs: list[Value] = []
        """the values this node defines, in order."""
        self.attrs: dict[str, Any] = dict(attrs or {})
        """static attributes (``value`` of a constant, ``Subgraph`` of a fusion group, ...)."""
        self.blocks: list[Block] = []
        """nested blocks (two for ``prim::If``, one for ``prim::Loop``)."""
        self.owner: Block | None = None
        """the block this node is in, or None while detached."""
        self.prev: Node | None = None
        self.next: Node | None = None
        self.source = source
        """the source position the node came from, if any."""
        for v in inputs:
            self.add_input(v)
        names = list(names or ())
        names += [None] * (len(output_types) - len(names))  # a short list must not drop outputs
        for t, n in zip(output_types, names):
            self.add_output(t, n)

    def __repr__(self) -> str:
        return f"<Node {self.kind}>"

    # -- inputs ------------------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[Value, ...]:
        return tuple(self._inputs)

    @inputs.setter
    def inputs(self, values: Sequence[Value]) -> None:
        self.remove_all_inputs()
        for v in values:
            self.add_input(v)

    def add_input(self, value: Value) -> None:
        if not isinstance(value, Value):
            raise IRError(f"input of {self.kind} must be a Value, got {type(value).__name__}")
        use = Use(self, len(self._inputs))
        value.uses.append(use)
        self._inputs.append(value)
        self._input_uses.append(use)

    def set_input(self, index: int, value: Value) -> None:
        _drop_use(self._inputs[index], self._input_uses[index])
        use = Use(self, index)
        value.uses.append(use)
        self._inputs[index] = value
        self._input_uses[index] = use

    def insert_input(self, index: int, value: Value) -> None:
        values = list(self._inputs)
        values.insert(index, value)
        self.inputs = values

    def remove_input(self, index: int) -> None:
        values = list(self._inputs)
        del values[index]
        self.inputs = values

    def remove_all_inputs(self) -> None:
        for v, use in zip(self._inputs, self._input_uses):
            _drop_use(v, use)
        self._inputs = []
        self._input_uses = []

    # -- outputs and blocks ----------------------------------------------------------------------
    def add_output(self, type: Type, name: str | None = None) -> Value:
        v = Value(type, self, len(self.outputs), name)
        self.outputs.append(v)
        return v

    def insert_output(self, index: int, type: Type, name: str | None = None) -> Value:
        v = Value(type, self, index, name)
        self.outputs.insert(index, v)
        _renumber(self.outputs)
        return v

    def erase_output(self, index: int) -> None:
        v = self.outputs[index]
        if v.uses:
            raise IRError(f"cannot erase output {index} of {self.kind}: it still has uses")
        del self.outputs[index]
        _renumber(self.outputs)

    @property
    def output(self) -> Value:
        """The single output; an IRError when the node has not exactly one."""
        if len(self.outputs) != 1:
            raise IRError(f"{self.kind} has {len(self.outputs)} outputs, not 1")
        return self.outputs[0]

    def add_block(self) -> Block:
        b = Block(self.graph_or_none, owner=self)
        self.blocks.append(b)
        return b

    # -- position ---------------------------------------------------------------------------------
    @property
    def graph_or_none(self) -> Graph | None:
        return None if self.owner is None else self.owner.graph

    @property
    def graph(self) -> Graph:
        if self.owner is None:
            raise IRError(f"{self.kind} is not in a graph")
        return self.owner.graph

    def insert_before(self, other: Node) -> Node:
        """Insert this (detached) node right before ``other``; returns self."""
        if self.owner is not None:
            raise IRError(f"{self.kind} is already in a block")
        if other.prev is None or other.owner is None:
            raise IRError("cannot insert before a block's parameters")
        _link(other.prev, self, other)
        return self

    def insert_after(self, other: Node) -> Node:
        """Insert this (detached) node right after ``other``; returns self."""
        if other.next is None:
            raise IRError("cannot insert after a block's return")
        return self.insert_before(other.next)

    def move_before(self, other: Node) -> None:
        self.detach()
        self.insert_before(other)

    def move_after(self, other: Node) -> None:
        self.detach()
        self.insert_after(other)

    def detach(self) -> None:
        """Unlink from the block, keeping inputs and outputs (to re-insert elsewhere)."""
        if self.owner is None:
            return
        assert self.prev is not None and self.next is not None
        self.prev.next, self.next.prev = self.next, self.prev
        self.prev = self.next = None
        self.owner = None

    def erase(self) -> None:
        """Remove the node; its outputs must be unused. Nested blocks are erased too."""
        for v in self.outputs:
            if v.uses:
                raise IRError(f"cannot erase {self.kind}: output %{v.name or v.index} "
                              "still has uses")
        for b in reversed(self.blocks):
            b.erase_contents()
        self.remove_all_inputs()
        self.detach()

    def is_before(self, other: Node) -> bool:
        """True when ``self`` comes strictly before ``other`` in program order.

        Nodes in nested blocks are ordered by their ancestor in the common block.
        """
        a, b = self, other
        chain_a = _ancestry(a)
        chain_b = _ancestry(b)
        ids_b = {id(n.owner): n for n in chain_b}
        for n in chain_a:
            m = ids_b.get(id(n.owner))
            if m is None:
                continue
            if n is m:
                return False
            return n.owner.index_of_before(n, m)  # type: ignore[union-attr]
        return False

    def walk(self) -> Iterator[Node]:
        """The nodes nested inside this node's blocks, in order (not the node itself)."""
        for b in self.blocks:
            yield from b.walk()

    # -- nesting ----------------------------------------------------------------------------------
    def ancestor_in(self, block: Block) -> Node | None:
        """This node, or the node holding it at some depth, that lies in ``block``; None when
        the node is not inside ``block``."""
        node: Node | None = self
        while node is not None and node.owner is not block:
            node = node.owner.owner if node.owner is not None else None
        return node

    def is_inside(self, other: Node) -> bool:
        """Is this node in one of ``other``'s blocks, at any depth (not ``other`` itself)?"""
        block = self.owner
        while block is not None and block.owner is not None:
            if block.owner is other:
                return True
            block = block.owner.owner
        return False

    def enclosing(self, kind: str) -> list[Node]:
        """The nodes of ``kind`` in one of whose blocks this node is, at any depth, innermost
        first (``prim::Loop``: the loops around it)."""
        found = []
        block = self.owner
        while block is not None and block.owner is not None:
            if block.owner.kind == kind:
                found.append(block.owner)
            block = block.owner.owner
        return found

    def inside_kind(self, kind: str) -> bool:
        """Is this node in a block of a node of ``kind`` (``prim::Loop``: in a loop), at any
        depth?"""
        block = self.owner
        while block is not None and block.owner is not None:
            if block.owner.kind == kind:
                return True
            block = block.owner.owner
        return False

    def values_defined_inside(self) -> set[Value]:
        """The values defined in this node's blocks, at any depth: block parameters and node
        outputs (not this node's own outputs)."""
        values: set[Value] = set()
        for b in self.blocks:
            values.update(b.params)
            for n in b.walk():
                values.update(n.outputs)
                for inner in n.blocks:
                    values.update(inner.params)
        return values

    @property
    def subgraph(self) -> Graph:
        g = self.attrs.get(SUBGRAPH)
        if not isinstance(g, Graph):
            raise IRError(f"{self.kind} has no subgraph")
        return g


class Block:
    """An ordered list of nodes with parameters and results."""

    __slots__ = ("graph", "owner", "param_node", "return_node")

    def __init__(self, graph: Graph | None, owner: Node | None = None):
        self.graph = graph  # type: ignore[assignment]
        """the graph the block belongs to."""
        self.owner = owner
        """the node holding this block, or None for a graph's top block."""
        self.param_node = Node(PARAM)
        """sentinel whose outputs are the block parameters."""
        self.return_node = Node(RETURN)
        """sentinel whose inputs are the block results."""
        self.param_node.owner = self.return_node.owner = self
        self.param_node.next = self.return_node
        self.return_node.prev = self.param_node

    @property
    def params(self) -> list[Value]:
        return self.param_node.outputs

    @property
    def returns(self) -> tuple[Value, ...]:
        return self.return_node.inputs

    def add_param(self, type: Type, name: str | None = None) -> Value:
        return self.param_node.add_output(type, name)

    def insert_param(self, index: int, type: Type, name: str | None = None) -> Value:
        return self.param_node.insert_output(index, type, name)

    def erase_param(self, index: int) -> None:
        self.param_node.erase_output(index)

    def add_return(self, value: Value) -> None:
        self.return_node.add_input(value)

    def set_returns(self, values: Sequence[Value]) -> None:
        self.return_node.inputs = values

    def __iter__(self) -> Iterator[Node]:
        """The nodes of this block in order; safe against erasing the current node."""
        n = self.param_node.next
        while n is not None and n is not self.return_node:
            nxt = n.next
            yield n
            n = nxt

    @property
    def nodes(self) -> list[Node]:
        return list(self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def append(self, node: Node) -> Node:
        """Insert ``node`` at the end of the block (before the return); returns it."""
        return node.insert_before(self.return_node)

    def prepend(self, node: Node) -> Node:
        return node.insert_after(self.param_node)

    def walk(self) -> Iterator[Node]:
        """Every node in this block and its nested blocks, in program order (pre-order)."""
        for n in self:
            yield n
            for b in n.blocks:
                yield from b.walk()

    def erase_contents(self) -> None:
        """Erase every node of the block (last first) and its results; used when dropping it."""
        self.return_node.remove_all_inputs()
        for n in reversed(self.nodes):  # users come after their producers: erase them first
            _force_erase(n)

    def index_of_before(self, a: Node, b: Node) -> bool:
        """True when ``a`` precedes ``b``, both in this block."""
        n = a.next
        while n is not None:
            if n is b:
                return True
            n = n.next
        return False


class Graph:
    """A function: input values, one top-level block, result values."""

    __slots__ = ("block", "_insert_point", "name", "device")

    def __init__(self, name: str | None = None):
        self.block = Block(self)
        """the top-level block; its parameters are the graph inputs."""
        self._insert_point: Node = self.block.return_node
        self.name = name
        """an optional label (the scripted function's name)."""
        self.device: str | None = None
        """the device every call of it runs on when its inputs do not say (``cuda``: the
        backward of a call on CuPy arrays, whose inputs may be lists of tensors); None: the
        inputs' (``passes.devices.call_device``)."""

    @property
    def inputs(self) -> list[Value]:
        return self.block.params

    @property
    def outputs(self) -> tuple[Value, ...]:
        return self.block.returns

    def add_input(self, type: Type, name: str | None = None) -> Value:
        return self.block.add_param(type, name)

    def add_output(self, value: Value) -> None:
        self.block.add_return(value)

    def set_outputs(self, values: Sequence[Value]) -> None:
        self.block.set_returns(values)

    # -- building ---------------------------------------------------------------------------------
    @property
    def insert_point(self) -> Node:
        """New nodes made by ``insert`` go right before this node."""
        return self._insert_point

    def set_insert_point(self, before: Node | Block) -> None:
        """Insert before ``before``; a block means its end."""
        self._insert_point = before.return_node if isinstance(before, Block) else before

    @contextmanager
    def inserting_before(self, before: Node | Block) -> Iterator[None]:
        saved = self._insert_point
        self.set_insert_point(before)
        try:
            yield
        finally:
            self._insert_point = saved

    def create(self, kind: str, inputs: Sequence[Value] = (), output_types: Sequence[Type] = (),
               attrs: dict[str, Any] | None = None, nblocks: int = 0,
               source: SourceRange | None = None,
               names: Sequence[str | None] | None = None) -> Node:
        """A detached node of this graph (insert it with ``insert_before`` / ``Block.append``)."""
        node = Node(kind, inputs, output_types, attrs, source, names)
        for _ in range(nblocks):
            node.blocks.append(Block(self, owner=node))
        return node

    def insert(self, kind: str, inputs: Sequence[Value] = (), output_types: Sequence[Type] = (),
               attrs: dict[str, Any] | None = None, nblocks: int = 0,
               source: SourceRange | None = None,
               names: Sequence[str | None] | None = None) -> Node:
        """Create a node and insert it at the insert point; returns the node."""
        node = self.create(kind, inputs, output_types, attrs, nblocks, source, names)
        return node.insert_before(self._insert_point)

    def create_typed(self, kind: str, inputs: Sequence[Value] = (),
                     attrs: dict[str, Any] | None = None, source: SourceRange | None = None,
                     names: Sequence[str | None] | None = None) -> Node:
        """A detached node whose outputs are typed by its op's rule (``ir.registry``); a
        ``ShapeError`` when the inputs do not fit the op."""
        from ir.registry import infer_types
        node = self.create(kind, inputs, (), attrs, source=source)
        names = list(names or ())
        for k, t in enumerate(infer_types(node)):
            node.add_output(t, names[k] if k < len(names) else None)
        return node

    def insert_typed(self, kind: str, inputs: Sequence[Value] = (),
                     attrs: dict[str, Any] | None = None, source: SourceRange | None = None,
                     names: Sequence[str | None] | None = None) -> Node:
        """``create_typed`` and insert at the insert point; returns the node."""
        return self.create_typed(kind, inputs, attrs, source, names).insert_before(
            self._insert_point)

    def constant(self, value: Any, type: Type | None = None, name: str | None = None) -> Value:
        """Insert a ``prim::Constant`` at the insert point and return its value."""
        from ir.constants import constant_type
        t = type if type is not None else constant_type(value)
        return self.insert(CONSTANT, (), (t,), {"value": value}, names=[name]).output

    # -- traversal --------------------------------------------------------------------------------
    def nodes(self) -> list[Node]:
        """The top-level nodes in order."""
        return self.block.nodes

    def walk(self) -> Iterator[Node]:
        """Every node, nested blocks included, in program order (not entering subgraphs)."""
        return self.block.walk()

    def clone(self) -> Graph:
        """A deep copy: new values and nodes, subgraph attributes cloned too."""
        g = Graph(self.name)
        g.device = self.device
        vmap: dict[Value, Value] = {}
        for v in self.inputs:
            vmap[v] = g.add_input(v.type, v.name)
        clone_block_into(self.block, g.block, vmap)
        return g

    def verify(self) -> None:
        """Raise ``VerifyError`` naming the node when the graph is malformed."""
        from ir.verify import verify
        verify(self)

    def __str__(self) -> str:
        from ir.printer import print_graph
        return print_graph(self)

    def to_dot(self, constants: bool = False) -> str:
        """Graphviz DOT text of this graph (``ir.dot``): subgraphs and blocks as clusters."""
        from ir.dot import to_dot
        return to_dot(self, constants)

    def __repr__(self) -> str:
        return f"<Graph {self.name or ''} with {len(self.inputs)} inputs>"


def clone_node(node: Node, graph: Graph, vmap: dict[Value, Value]) -> Node:
    """A detached copy of ``node`` whose inputs are looked up in ``vmap`` (missing -> same value).

    Outputs and nested block values are added to ``vmap``. Subgraph attributes are deep-copied.
    """
    attrs = {k: (v.clone() if isinstance(v, Graph) else v) for k, v in node.attrs.items()}
    new = graph.create(node.kind, [vmap.get(v, v) for v in node.inputs],
                       [v.type for v in node.outputs], attrs, source=node.source,
                       names=[v.name for v in node.outputs])
    for old, nv in zip(node.outputs, new.outputs):
        vmap[old] = nv
    for b in node.blocks:
        nb = Block(graph, owner=new)
        new.blocks.append(nb)
        for p in b.params:
            vmap[p] = nb.add_param(p.type, p.name)
        clone_block_into(b, nb, vmap)
    return new


def clone_block_into(src: Block, dst: Block, vmap: dict[Value, Value]) -> None:
    """Append copies of ``src``'s nodes to ``dst`` and set ``dst``'s returns (params pre-mapped)."""
    graph = dst.graph
    for n in src:
        dst.append(clone_node(n, graph, vmap))
    for v in src.returns:
        dst.add_return(vmap.get(v, v))


def _ancestry(node: Node) -> list[Node]:
    chain = [node]
    while (b := chain[-1].owner) is not None and b.owner is not None:
        chain.append(b.owner)
    return chain


def _link(prev: Node, node: Node, nxt: Node) -> None:
    prev.next = node
    node.prev = prev
    node.next = nxt
    nxt.prev = node
    node.owner = nxt.owner
    for b in node.blocks:
        _set_graph(b, nxt.owner.graph if nxt.owner else None)


def _set_graph(block: Block, graph: Graph | None) -> None:
    if block.graph is graph:
        return
    block.graph = graph  # type: ignore[assignment]
    for n in block:
        for b in n.blocks:
            _set_graph(b, graph)


def _drop_use(value: Value, use: Use) -> None:
    if use not in value.uses:
        raise IRError(f"use list of {value!r} is missing its use by {use.node.kind}")
    value.uses.remove(use)


def _renumber(outputs: list[Value]) -> None:
    for i, v in enumerate(outputs):
        v.index = i


def _force_erase(node: Node) -> None:
    for b in reversed(node.blocks):
        b.erase_contents()
    node.remove_all_inputs()
    node.detach()
