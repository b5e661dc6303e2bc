"""Cotangents of a graph's outputs: one backward input per output, in the output's structure.

A tensor output's cotangent is added to the tensor's; a tuple's is split per element. A list or
a dict is mutable, so its cotangent cannot wait for the reverse walk to reach the node that
built it: the returned value is the list or dict as the last write left it. So a returned list
(built by ``[...]`` and appends) starts its list of item cotangents from the output's, which the
reverse of each append pops from the end and the literal's items read by position; a returned
dict starts its dict of cotangents from the output's (``passes.autodiff.dicts``). A tuple that
holds either is taken apart where the return statement built it. The caller passes cotangent
lists and dicts the backward may consume (fresh copies).

Anything else that would drop an output's cotangent is refused.
"""

from __future__ import annotations

from typing import Any

from ir.core import RETURN, Graph, Value
from ir.registry import lookup
from ir.types import DictType, ListType, TupleType, Type
from passes.autodiff.dicts import set_dict_ct
from passes.autodiff.refusals import refuse

LIST_GROWTH = ("prim::ListAppend", "prim::ListExtend")
"""The only writes to a returned list whose reverse the backward knows (pop from the end)."""


def seed_outputs(root: Any, graph: Graph) -> None:
    """Add one backward input per output of ``graph`` and seed the walk with it."""
    for out in graph.outputs:
        ct = root.ad.backward.add_input(out.type, f"grad_{out.name}" if out.name else "grad")
        seed(root, graph, out, ct)


def seed(root: Any, graph: Graph, out: Value, ct: Value) -> None:
    """Give output ``out`` (or an element of a returned tuple) its cotangent ``ct``."""
    if not root.is_active(out):
        return
    t = out.type
    if isinstance(t, DictType):
        set_dict_ct(root, out, ct)
        return
    if isinstance(t, ListType):
        _seed_list(root, out, ct)
        return
    if isinstance(t, TupleType) and holds_container(t):
        node = out.node
        if node.kind != "prim::TupleConstruct" or len(out.uses) != 1:
            raise refuse("cannot differentiate returning a tuple of lists or dicts that the "
                         "return statement did not build: return (a, b) directly", out)
        for item, g in zip(node.inputs, root.structured(ct)):
            seed(root, graph, item, g)
        return
    root.add_ct(out, _split(root, ct))


def holds_container(t: Type) -> bool:
    """Is ``t`` a list or dict, or a tuple holding one?"""
    if isinstance(t, TupleType):
        return any(holds_container(e) for e in t.elements)
    return isinstance(t, (ListType, DictType))


def _split(root: Any, ct: Value) -> Any:
    """A tuple cotangent as nested per-element cotangents (what the reverse walk keeps)."""
    if isinstance(ct.type, TupleType):
        return [_split(root, v) for v in root.structured(ct)]
    return ct


def _seed_list(root: Any, lst: Value, ct: Value) -> None:
    if _only_returned(root, lst):  # an argument handed back: its cotangent passes through
        root.add_ct(lst, ct)
        return
    if lst.node.kind != "prim::ListConstruct":
        raise refuse("cannot differentiate returning a list that was not built in the function "
                     "by [...] and appends", lst)
    for use in lst.uses:
        op = lookup(use.node.kind)
        if use.node.kind == RETURN or (op is not None and not op.has_side_effects):
            continue
        if use.node.kind not in LIST_GROWTH or use.index != 0:
            raise refuse(f"cannot differentiate a returned list changed by {use.node.kind} "
                         "(only appends and extends are undone)", use.node)
    if lst in root.ad.list_cts:
        raise refuse("cannot differentiate a list returned twice", lst)
    root.ad.list_cts[lst] = ct


def _only_returned(root: Any, lst: Value) -> bool:
    """A list argument whose only uses return it (directly or in the returned tuple)."""
    graph = root.ad.forward
    if lst not in graph.inputs:
        return False
    ret = graph.block.return_node
    return all(use.node is ret or (use.node.kind == "prim::TupleConstruct" and
                                   [u.node for u in use.node.output.uses] == [ret])
               for use in lst.uses)


__all__ = ["holds_container", "seed", "seed_outputs"]
