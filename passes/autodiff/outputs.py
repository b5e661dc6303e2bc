"""Cotangents of a graph's outputs: one backward input per output, in the output's structure.

A tensor output's cotangent is added to the tensor's; a tuple's (or a NamedTuple's) is split per
element. A list or a dict is mutable, so its cotangent cannot wait for the reverse walk to reach
the node that built it: the returned value is the list or dict as the last write left it. So a
returned list's cotangent starts its items' cotangents at the list's last use
(``list_cts.whole_list_at_end``; a list in a returned tuple is handled where the tuple is built),
and a returned dict starts its dict of cotangents from the output's (``passes.autodiff.dicts``). A
tuple that holds a dict is taken apart where the return statement built it. The caller passes
cotangent lists and dicts the backward may consume (fresh copies).

Anything else that would drop an output's cotangent is refused.
"""

from __future__ import annotations

from typing import Any

from ir.core import Graph, Value
from ir.types import DictType, ListType, TupleType, Type
from passes.autodiff.context import elements_of
from passes.autodiff.dicts import set_dict_ct
from passes.autodiff.list_cts import whole_list_at_end
from passes.autodiff.refusals import refuse


def seed_outputs(root: Any, graph: Graph) -> None:
    """Add one backward input per output of ``graph`` and seed the walk with it."""
    for out in graph.outputs:
        ct = root.ad.backward.add_input(out.type, f"grad_{out.name}" if out.name else "grad")
        root.ad.gave(out)  # by the caller
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
        whole_list_at_end(root, out, ct, out.node)  # returned twice: both cotangents add up
        return
    if isinstance(t, TupleType) and holds_dict(t):
        node = out.node
        if node.kind != "prim::TupleConstruct" or len(out.uses) != 1:
            raise refuse("cannot differentiate returning a tuple holding a dict that the "
                         "return statement did not build: return (a, d) directly", out)
        for item, g in zip(node.inputs, root.structured(ct)):
            seed(root, graph, item, g)
            root.ad.gave(item, by=node)  # through the tuple, taken apart here
        return
    root.add_ct(out, _split(root, ct))


def holds_dict(t: Type) -> bool:
    """Is ``t`` a dict, or a tuple holding one?"""
    if isinstance(t, TupleType):
        return any(holds_dict(e) for e in t.elements)
    return isinstance(t, DictType)


def _split(root: Any, ct: Value) -> Any:
    """A tuple (or NamedTuple) cotangent as nested per-element cotangents (what the reverse walk
    keeps)."""
    if elements_of(ct.type) is not None:
        return [_split(root, v) for v in root.structured(ct)]
    return ct


__all__ = ["holds_dict", "seed", "seed_outputs"]
