"""Inlining of scripted calls: each ``prim::CallFunction`` becomes a copy of its callee's body.

The callee graph (attribute ``Subgraph``) is not changed: its nodes are cloned at the call site with
the callee's inputs mapped to the call's arguments, source positions kept. Calls inside the inlined
body and inside nested blocks are expanded too.
"""

from __future__ import annotations

from ir.core import SUBGRAPH, Graph, Node, Value, clone_node
from ir.errors import IRError
from ir.kinds import CALL

NAME = "inline"


MAX_DEPTH = 64
"""Nested expansions before a call chain is treated as recursion (which cannot be inlined)."""


def inline_call(call: Node) -> list[Node]:
    """Replace ``call`` by its callee's nodes; returns the calls the inlined body contains."""
    callee = call.attrs[SUBGRAPH]
    if not isinstance(callee, Graph):
        raise IRError(f"{call.kind} has no callee graph")
    if len(callee.inputs) != len(call.inputs) or len(callee.outputs) != len(call.outputs):
        raise IRError(f"call of {call.attrs.get('name', '<function>')}: arity does not match")
    graph = call.graph
    vmap: dict[Value, Value] = dict(zip(callee.inputs, call.inputs))
    new_calls = []
    for node in callee.block:
        clone = clone_node(node, graph, vmap).insert_before(call)
        new_calls += [n for n in [clone, *clone.walk()] if n.kind == CALL]
    for out, result in zip(call.outputs, callee.outputs):
        out.replace_all_uses_with(vmap.get(result, result))
    call.erase()
    return new_calls


def run(graph: Graph) -> bool:
    """Inline every call, transitively."""
    pending = [(n, 0) for n in graph.walk() if n.kind == CALL]
    changed = bool(pending)
    while pending:
        call, depth = pending.pop()
        if depth >= MAX_DEPTH:
            name = call.attrs.get("name", "<function>")
            raise IRError(f"cannot inline {name}: calls nest deeper than {MAX_DEPTH} (recursion?)")
        pending += [(n, depth + 1) for n in inline_call(call)]
    return changed
