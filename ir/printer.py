"""Print a ``Graph`` as TorchScript-style text; ``ir.parser.parse`` reads it back exactly.

```
graph(%x : Float(64, 512),
      %w : Tensor):
  %2 : int = prim::Constant[value=1]()
  %3 : Tensor = tensor::matmul(%x, %w) # cell.py:12:4
  %r : Float(64, 512) = prim::FusionGroup_0(%3, %x)
  return (%r)
with prim::FusionGroup_0 = graph(%p : Float(64, 512), ...):
  ...
```

Value names come from ``Value.name`` hints and are made unique per graph (nested blocks included;
each subgraph section has its own names). A node holding a ``Subgraph`` attribute prints as
``kind_K`` and its graph follows the ``return`` in a ``with kind_K = graph(...)`` section.
Printing is iterative, so deeply nested blocks do not exhaust Python's recursion limit.

Large arrays print elided. To keep them, pass a constant table: ``print_graph(g, constants={})``
puts each array of more than ``INLINE_ARRAY_LIMIT`` elements into the dict under a name
(``c0``, ``c1``, ...; one name per array object) and prints a reference to it,
``array(Float(512, 2048), ref="c0")``, which ``ir.parse(text, constants=table)`` resolves.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ir.core import SUBGRAPH, Block, Graph, Node, Value
from ir.types import DTYPE_NAMES, TensorType, Type

INLINE_ARRAY_LIMIT = 64
"""Arrays with more elements print elided (``array(Float(512, 2048), ...)``)."""

_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.]")


def print_graph(graph: Graph, constants: dict[str, np.ndarray] | None = None) -> str:
    """The text of ``graph`` and, after its ``return``, the sections of its subgraphs.

    With ``constants``, large arrays go into that table and print as references to it.
    """
    out: list[str] = []
    pending: list[tuple[str, Graph]] = [("", graph)]
    while pending:  # pre-order: a section's own sections come right after it
        prefix, g = pending.pop()
        sections = _GraphPrinter(g, out, constants).print(prefix)
        pending.extend(reversed(sections))
    return "\n".join(out) + "\n"


def format_attribute(value: Any, constants: dict[str, np.ndarray] | None = None) -> str:
    """An attribute value as the parser reads it (``1``, ``1.0``, ``"s"``, ``(1, 2)``, ...);
    large arrays go into ``constants`` when it is given."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return str(None if value is None else bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))  # always has '.', 'e', 'inf' or 'nan': never reads as an int
    if isinstance(value, str):
        return quote_string(value)
    if isinstance(value, np.dtype):
        return quote_string(value.name)
    if isinstance(value, Type):
        return str(value)
    if isinstance(value, tuple):
        if len(value) == 1:
            return f"({format_attribute(value[0], constants)},)"
        return "(" + ", ".join(format_attribute(v, constants) for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(format_attribute(v, constants) for v in value) + "]"
    if isinstance(value, np.ndarray):
        return _format_array(value, constants)
    return f"<{type(value).__name__}>"  # not part of the text format; the parser rejects it


def quote_string(s: str) -> str:
    """``s`` in double quotes with Python-compatible escapes."""
    parts = ['"']
    for ch in s:
        if ch in '"\\':
            parts.append("\\" + ch)
        elif ch in _SIMPLE_ESCAPES:
            parts.append(_SIMPLE_ESCAPES[ch])
        elif ch.isprintable():
            parts.append(ch)
        else:
            code = ord(ch)
            parts.append(f"\\x{code:02x}" if code < 0x100 else
                         f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    parts.append('"')
    return "".join(parts)


_SIMPLE_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _format_array(a: np.ndarray, constants: dict[str, np.ndarray] | None) -> str:
    if a.dtype.name not in DTYPE_NAMES:
        return f"<ndarray {a.dtype.name}>"
    head = str(TensorType(a.dtype.name, tuple(a.shape)))
    if a.size > INLINE_ARRAY_LIMIT and constants is not None:
        return f"array({head}, ref={quote_string(_table_name(a, constants))})"
    if a.size > INLINE_ARRAY_LIMIT:
        return f"array({head}, ...)"
    items = ", ".join(format_attribute(x) for x in a.reshape(-1).tolist())
    return f"array({head}, [{items}])"


def _table_name(a: np.ndarray, constants: dict[str, np.ndarray]) -> str:
    """The name of ``a`` in the constant table, adding it under a fresh name if it is new."""
    for name, known in constants.items():
        if known is a:
            return name
    k = len(constants)
    while f"c{k}" in constants:
        k += 1
    constants[f"c{k}"] = a
    return f"c{k}"


class _Namer:
    """Unique names for the values of one graph (its nested blocks included)."""

    def __init__(self, graph: Graph):
        self.names: dict[Value, str] = {}
        self.used: set[str] = set()
        self.reserved = {h for v in _all_values(graph) if (h := clean_hint(v.name)) is not None}
        """hints some value will ask for: numbers and ``.N`` suffixes avoid them."""
        self.counter = 0
        self.suffix: dict[str, int] = {}
        """per hint, where the search for a free ``hint.N`` resumes (the used set only grows)."""

    def __call__(self, v: Value) -> str:
        name = self.names.get(v)
        if name is None:
            name = self._fresh(clean_hint(v.name))
            self.names[v] = name
            self.used.add(name)
        return name

    def _fresh(self, hint: str | None) -> str:
        if hint is not None and hint not in self.used:
            return hint
        if hint is not None:
            n = self.suffix.get(hint, 1)
            while f"{hint}.{n}" in self.used or f"{hint}.{n}" in self.reserved:
                n += 1
            self.suffix[hint] = n + 1
            return f"{hint}.{n}"
        while str(self.counter) in self.used or str(self.counter) in self.reserved:
            self.counter += 1
        return str(self.counter)


def clean_hint(hint: str | None) -> str | None:
    """A name hint made legal in the text (``[A-Za-z0-9_.]+``), or None when there is none."""
    if not hint:
        return None
    return _BAD_NAME_CHARS.sub("_", hint)


def _all_values(graph: Graph) -> list[Value]:
    values: list[Value] = []
    blocks = [graph.block]
    while blocks:
        block = blocks.pop()
        values.extend(block.params)
        for node in block:
            values.extend(node.outputs)
            blocks.extend(node.blocks)
    return values


class _GraphPrinter:
    """Prints one graph's header, body and return; collects its subgraph sections."""

    def __init__(self, graph: Graph, out: list[str],
                 constants: dict[str, np.ndarray] | None = None):
        self.graph = graph
        self.out = out
        self.constants = constants
        self.name = _Namer(graph)
        self.sections: list[tuple[str, Graph]] = []

    def print(self, prefix: str) -> list[tuple[str, Graph]]:
        """Append the lines; returns ``("with kind_K = ", subgraph)`` for each section."""
        params = ",\n      ".join(self._decl(v) for v in self.graph.inputs)
        self.out.append(f"{prefix}graph({params}):")
        self._print_body(self.graph.block)
        self.out.append(f"  return ({self._uses(self.graph.outputs)})")
        return [(f"with {label} = ", sub) for label, sub in self.sections]

    def _print_body(self, top: Block) -> None:
        # an explicit stack instead of recursion: ("nodes", iterator, indent),
        # ("block", block, index, indent) or ("end", block, indent)
        stack: list[tuple[Any, ...]] = [("nodes", iter(top), "  ")]
        while stack:
            task = stack.pop()
            if task[0] == "nodes":
                node = next(task[1], None)
                if node is None:
                    continue
                stack.append(task)
                self.out.append(task[2] + self._node_line(node))
                inner = task[2] + "  "
                blocks = list(enumerate(node.blocks))
                stack.extend(("block", b, i, inner) for i, b in reversed(blocks))
            elif task[0] == "block":
                _, block, index, indent = task
                params = ", ".join(self._decl(v) for v in block.params)
                self.out.append(f"{indent}block{index}({params}):")
                stack.append(("end", block, indent + "  "))
                stack.append(("nodes", iter(block), indent + "  "))
            else:
                _, block, indent = task
                self.out.append(f"{indent}-> ({self._uses(block.returns)})")

    def _node_line(self, node: Node) -> str:
        outs = ", ".join(self._decl(v) for v in node.outputs)
        kind = node.kind
        sub = node.attrs.get(SUBGRAPH)
        if isinstance(sub, Graph):
            kind = f"{node.kind}_{len(self.sections)}"
            self.sections.append((kind, sub))
        attrs = sorted(((k, v) for k, v in node.attrs.items() if not (k == SUBGRAPH and sub is v)),
                       key=lambda kv: kv[0])
        attr_text = ""
        if attrs:
            attr_text = "[" + ", ".join(f"{k}={format_attribute(v, self.constants)}"
                                        for k, v in attrs) + "]"
        line = f"{outs} = {kind}{attr_text}({self._uses(node.inputs)})"
        if node.source is not None:
            line += f" # {node.source}"
        return line

    def _decl(self, v: Value) -> str:
        return f"%{self.name(v)} : {v.type}"

    def _uses(self, values: Any) -> str:
        return ", ".join(f"%{self.name(v)}" for v in values)
