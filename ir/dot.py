"""A picture of a graph: Graphviz DOT text (``graph.to_dot()``).

Every node is a box labelled with its kind and result types; edges follow values from producer to
user. Fusion groups and differentiable graphs are clusters holding their subgraph's nodes (edges
enter and leave the cluster where the subgraph's inputs and outputs are), loops and ifs are nested
clusters with one inner cluster per block: the loop's (or if's) own node heads the cluster and
stands for the block parameters and the node's results; each block ends in a return node.
Constants are left out unless ``constants=True`` (they would crowd the picture).

``dot -Tsvg graph.dot -o graph.svg`` (Graphviz) draws it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ir.core import CONSTANT, SUBGRAPH, Block, Graph, Node, Value

CLUSTER_STYLE: dict[str, str] = {
    "prim::FusionGroup": 'style="filled,rounded"; fillcolor="#e3f2fd"; color="#1565c0"',
    "prim::DifferentiableGraph": 'style="filled,rounded"; fillcolor="#fff3e0"; color="#ef6c00"',
    "prim::Loop": 'style="rounded"; color="#2e7d32"',
    "prim::If": 'style="rounded,dashed"; color="#6a1b9a"',
}
"""Cluster attributes by the kind of the node a cluster draws."""


def quote(text: str) -> str:
    """A DOT double-quoted string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


@dataclass
class DotWriter:
    """Writes one graph as DOT; ``source`` maps each value to the DOT node that makes it."""

    constants: bool = False
    lines: list[str] = field(default_factory=list)
    source: dict[Value, str] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)
    counter: int = 0
    subgraphs: dict[str, int] = field(default_factory=dict)
    """subgraph kind -> how many were drawn (clusters are labelled ``kind_K``)."""

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def box(self, depth: int, ident: str, label: str, extra: str = "") -> None:
        self.emit(depth, f"{ident} [label={quote(label)}{extra}];")

    def connect(self, values: tuple[Value, ...] | list[Value], target: str) -> None:
        for v in values:
            src = self.source.get(v)
            if src is not None:  # a constant left out of the picture
                self.edges.append((src, target))

    # -- graph, blocks, nodes -------------------------------------------------------------------
    def write_graph(self, graph: Graph) -> str:
        self.emit(0, f"digraph {quote(graph.name or 'graph')} {{")
        self.emit(1, "rankdir=TB;")
        self.emit(1, 'node [shape=box, style=rounded, fontname="Helvetica", fontsize=10];')
        self.emit(1, 'edge [fontname="Helvetica", fontsize=9];')
        for k, v in enumerate(graph.inputs):
            ident = f"input{k}"
            self.box(1, ident, f"%{v.name or k} : {v.type}", ", shape=ellipse")
            self.source[v] = ident
        self.write_nodes(graph.block, 1)
        for k, v in enumerate(graph.outputs):
            ident = f"output{k}"
            self.box(1, ident, f"return {v.type}", ", shape=ellipse")
            self.connect([v], ident)
        for src, dst in self.edges:
            self.emit(1, f"{src} -> {dst};")
        self.emit(0, "}")
        return "\n".join(self.lines) + "\n"

    def write_nodes(self, block: Block, depth: int) -> None:
        for node in block:
            self.write_node(node, depth)

    def write_node(self, node: Node, depth: int) -> None:
        if node.kind == CONSTANT and not self.constants:
            return
        if isinstance(node.attrs.get(SUBGRAPH), Graph):
            self.write_subgraph_node(node, depth)
            return
        if node.blocks:
            self.write_control_flow(node, depth)
            return
        ident = self.fresh("n")
        self.box(depth, ident, node_label(node))
        self.connect(node.inputs, ident)
        for v in node.outputs:
            self.source[v] = ident

    def write_subgraph_node(self, node: Node, depth: int) -> None:
        sub: Graph = node.attrs[SUBGRAPH]
        cluster = self.fresh("cluster_")
        index = self.subgraphs.get(node.kind, 0)
        self.subgraphs[node.kind] = index + 1
        self.emit(depth, f"subgraph {cluster} {{")
        self.emit(depth + 1, f"label={quote(f'{node.kind}_{index}')};")
        self.emit(depth + 1, CLUSTER_STYLE.get(node.kind, 'style="rounded"') + ";")
        for outer, inner in zip(node.inputs, sub.inputs):
            if outer in self.source:
                self.source[inner] = self.source[outer]
        self.write_nodes(sub.block, depth + 1)
        self.emit(depth, "}")
        for outer, inner in zip(node.outputs, sub.outputs):
            if inner in self.source:
                self.source[outer] = self.source[inner]

    def write_control_flow(self, node: Node, depth: int) -> None:
        cluster = self.fresh("cluster_")
        head = self.fresh("n")
        self.emit(depth, f"subgraph {cluster} {{")
        self.emit(depth + 1, f"label={quote(node.kind)};")
        self.emit(depth + 1, CLUSTER_STYLE.get(node.kind, 'style="rounded"') + ";")
        self.box(depth + 1, head, node_label(node), ", shape=hexagon")
        self.connect(node.inputs, head)
        for k, block in enumerate(node.blocks):
            self.write_block_cluster(block, k, head, depth + 1)
        self.emit(depth, "}")
        for v in node.outputs:
            self.source[v] = head

    def write_block_cluster(self, block: Block, index: int, head: str, depth: int) -> None:
        self.emit(depth, f"subgraph {self.fresh('cluster_')} {{")
        self.emit(depth + 1, f"label={quote(f'block{index}')};")
        self.emit(depth + 1, 'style="dotted";')
        for v in block.params:
            self.source[v] = head
        self.write_nodes(block, depth + 1)
        ret = self.fresh("ret")
        returns = ", ".join(str(v.type) for v in block.returns)
        self.box(depth + 1, ret, f"-> ({returns})", ", shape=plaintext")
        self.connect(block.returns, ret)
        self.emit(depth, "}")


def node_label(node: Node) -> str:
    """``kind`` on the first line, then the result types; a constant shows its value."""
    label = node.kind
    if node.kind == CONSTANT:
        value = repr(node.attrs.get("value"))
        label += "\n" + (value if len(value) <= 40 else value[:37] + "...")
    if node.source is not None:
        label += f"  # {node.source}"
    types = ", ".join(str(v.type) for v in node.outputs)
    return f"{label}\n{types}" if types else label


def to_dot(graph: Graph, constants: bool = False) -> str:
    """The Graphviz DOT text of ``graph`` (see the module docstring for what it draws)."""
    return DotWriter(constants=constants).write_graph(graph)
