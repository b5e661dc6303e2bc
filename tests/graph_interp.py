"""A tiny reference interpreter for frontend graphs, used only by the frontend tests.

It runs a graph node by node, ``tensor::NAME`` through the eager op library ``script.ops.NAME``
and ``prim::`` ops as plain Python, so the frontend's graphs can be checked against the Python
function they came from without the optimizing executor.
"""

from __future__ import annotations

from typing import Any

from ir.core import Block, Graph, Node, Value


class ScriptRuntimeError(Exception):
    """A ``prim::RaiseException`` that ran."""


def run_graph(graph: Graph, *args: Any) -> Any:
    env: dict[Value, Any] = dict(zip(graph.inputs, args))
    (result,) = run_block(graph.block, env)
    return result


def run_block(block: Block, env: dict[Value, Any]) -> list[Any]:
    for node in block:
        results = run_node(node, env)
        for value, result in zip(node.outputs, results):
            env[value] = result
    return [env[v] for v in block.returns]


def run_node(node: Node, env: dict[Value, Any]) -> list[Any]:
    args = [env[v] for v in node.inputs]
    if node.kind == "prim::If":
        return run_block(node.blocks[0 if args[0] else 1], env)
    if node.kind == "prim::Loop":
        return run_loop(node, args, env)
    if node.kind == "prim::CallFunction":
        return [run_graph(node.attrs["Subgraph"], *args)]
    if node.kind in PRIMS:
        result = PRIMS[node.kind](node, *args)
        return list(result) if len(node.outputs) > 1 else [result] if node.outputs else []
    if node.kind.startswith("tensor::"):
        import script.ops
        result = getattr(script.ops, node.kind.split("::", 1)[1])(*args)
        return list(result) if len(node.outputs) > 1 else [result]
    raise NotImplementedError(node.kind)


def run_loop(node: Node, args: list[Any], env: dict[Value, Any]) -> list[Any]:
    trip, cond, *carried = args
    body = node.blocks[0]
    i = 0
    while cond and i < trip:
        env[body.params[0]] = i
        for param, value in zip(body.params[1:], carried):
            env[param] = value
        cond, *carried = run_block(body, env)
        i += 1
    return carried


def _raise(node: Node, message: str) -> None:
    raise ScriptRuntimeError(message)


def _list_append(node: Node, lst: list, value: Any) -> None:
    lst.append(value)


def _list_extend(node: Node, lst: list, other: list) -> None:
    lst.extend(other)


def _list_insert(node: Node, lst: list, i: int, value: Any) -> None:
    lst.insert(i, value)


def _list_set(node: Node, lst: list, i: int, value: Any) -> None:
    lst[i] = value


def _list_unpack(node: Node, lst: list) -> list:
    if len(lst) != len(node.outputs):
        raise ScriptRuntimeError(f"cannot unpack {len(lst)} values into {len(node.outputs)}")
    return lst


PRIMS = {
    "prim::Constant": lambda node: node.attrs["value"],
    "prim::Uninitialized": lambda node: None,
    "prim::TupleConstruct": lambda node, *items: tuple(items),
    "prim::TupleUnpack": lambda node, t: t,
    "prim::TupleIndex": lambda node, t, i: t[i],
    "prim::TupleSlice": lambda node, t, a, b, c: t[a:b:c],
    "prim::ListConstruct": lambda node, *items: list(items),
    "prim::ListUnpack": _list_unpack,
    "prim::ListIndex": lambda node, lst, i: lst[i],
    "prim::ListSlice": lambda node, lst, a, b, c: lst[a:b:c],
    "prim::sorted": lambda node, items, keys, reverse: sorted(items, reverse=reverse)
    if keys is None else [items[k] for k in sorted(range(len(items)), key=keys.__getitem__,
                                                   reverse=reverse)],
    "prim::ListAdd": lambda node, a, b: a + b,
    "prim::ListMul": lambda node, a, n: a * n,
    "prim::ListAppend": _list_append,
    "prim::ListExtend": _list_extend,
    "prim::ListInsert": _list_insert,
    "prim::ListSetItem": _list_set,
    "prim::ListPop": lambda node, lst, i: lst.pop(i),
    "prim::ListContains": lambda node, lst, v: v in lst,
    "prim::len": lambda node, x: len(x),
    "prim::DictGetItem": lambda node, d, k: d[k],
    "prim::unchecked_unwrap_optional": lambda node, x: x,
    "prim::RaiseException": _raise,
    "prim::Print": lambda node, *values: print(*values),
    "prim::Bool": lambda node, x: bool(x),
    "prim::Int": lambda node, x: int(x),
    "prim::Float": lambda node, x: float(x),
    "prim::IsNone": lambda node, x: x is None,
    "prim::min": lambda node, a, b: min(a, b),
    "prim::max": lambda node, a, b: max(a, b),
    "prim::abs": lambda node, a: abs(a),
}
