"""Arguments that are containers of containers, given to a specialization as their arrays.

A list or dict type has one item type, so ``List[Dict[str, Tensor]]`` layers of weights of
different shapes type every weight as an array of unknown rank: nothing fuses, and the backward
cannot be built. A specialization is made for one structure of each argument (its signature key
holds every array's shape), so such an argument that the function only reads is replaced by one
graph input per array (``passes.autodiff.nested_inputs``): the graph rebuilds the container at
its start, loops over it are unrolled and its reads forwarded to the arrays. The compiled code
then takes the arrays after the call's own inputs; ``with_leaves`` reads them out of the
arguments for it, with code made for the structure (a few indexing operations per array).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ir.core import Graph
from ir.types import TENSOR, DictType, ListType, TensorType, TupleType, Type
from passes.autodiff.nested_inputs import (
    Layout,
    flatten_inputs,
    layout_of,
    leaves,
    writes_only_fresh,
)
from passes.item_types import forward_stores
from script.frontend.signature import type_of
from script.module import is_array

Nested = tuple[tuple[int, Layout], ...]
"""The flattened arguments of a specialization, in the order their arrays follow the inputs:
(position, layout)."""


def nested_layouts(d: Any, args: tuple[Any, ...], items: list[Any] | None = None
                   ) -> dict[int, Layout]:
    """The call's arguments (not its globals) that are containers holding containers of
    arrays, by position; with ``items`` (per input, its items' types, or None where the
    specialization does not know them), also the lists of arrays among every input,
    attributes included, whose items differ in type (``params`` of an optimizer)."""
    found = {}
    for k, a in enumerate(args[:len(d.arg_names)]):
        layout = layout_of(a, is_array)
        if layout is not None:
            found[k] = layout
    if items is not None:
        for k, a in enumerate(args):
            if k not in found and _mixed_arrays(a, items[k]):
                found[k] = ("list", (None,) * len(a)) if type(a) is list else \
                    ("dict", tuple(a), (None,) * len(a))
    return found


def _mixed_arrays(value: Any, items: Any) -> bool:
    """Whether ``value`` is a list of two or more arrays, or a dict of them by str or int keys,
    of items typed ``items`` (the specialization knows each item's type, and the length or
    keys) that are not all of one type."""
    if type(value) is list:
        known = isinstance(items, tuple) and len(items) == len(value)
        arrays, types = value, items
    elif type(value) is dict:
        known = isinstance(items, dict) and items.keys() == value.keys() and \
            all(type(key) in (str, int) for key in value)
        arrays, types = value.values(), known and items.values()
    else:
        return False
    return known and len(value) >= 2 and all(map(is_array, arrays)) and len(set(types)) > 1


def flatten_nested(graph: Graph, d: Any, args: tuple[Any, ...], types: list[Type],
                   items: list[Any], lossy_only: bool = False) -> Nested:
    """Replace the nested container arguments ``graph`` only reads by their arrays (graph
    inputs appended after the others), extending the call's ``types`` and ``items`` for
    ``specialize``; returns what was flattened. With ``lossy_only``, only those whose type
    does not know every array's dtype and shape (a list of uniform tuples keeps them, and
    its loops run natively as they are)."""
    layouts = nested_layouts(d, args, items if lossy_only else None)
    if lossy_only:
        layouts = {k: v for k, v in layouts.items() if _lossy(types[k])}
    if not layouts:
        return ()
    leaf_types = {k: [type_of(x, TENSOR, f"{d.name}(): argument '{d.input_names()[k]}'")
                      for x in leaves(args[k], layout)] for k, layout in layouts.items()}
    done = flatten_inputs(graph, layouts, leaf_types)
    for k in done:
        types.extend(leaf_types[k])
        items.extend([None] * len(leaf_types[k]))
    return tuple(done.items())


def forward_item_stores(graph: Graph, items: list[Any]) -> bool:
    """Once the loops over flattened arguments are unrolled, the list inputs the graph changes
    only by storing at constant indices (``self.v[i] = ...``) read back what was stored, and
    their other reads the call's items, and so do the lists the graph makes and fills
    (``item_types.forward_stores``), unless a container read out of another is changed too
    (which may be one of them)."""
    if not writes_only_fresh(graph, inputs_too=True):
        return False
    changed = False
    for v, found in zip(graph.inputs, items):
        if isinstance(found, (tuple, dict)) and isinstance(v.type, (ListType, DictType)) and \
                v.uses:
            changed |= forward_stores(graph, v, found)
    for node in graph.block.nodes:  # (the ones it makes: an optimizer's first call's state)
        if node.kind in ("prim::ListConstruct", "prim::DictConstruct") and node.output.uses:
            changed |= forward_stores(graph, node.output)
    return changed


def _lossy(t: Type) -> bool:
    """Whether a container type leaves an array's dtype or a dimension unknown."""
    if isinstance(t, TensorType):
        return t.dtype is None or t.shape is None or None in t.shape
    if isinstance(t, ListType):
        return _lossy(t.element)
    if isinstance(t, DictType):
        return _lossy(t.value)
    if isinstance(t, TupleType):
        return any(map(_lossy, t.elements))
    return False


def leaf_reader(nested: Nested) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """A function of a call's inputs giving the arrays of its flattened arguments, in order."""
    reads = [f"a[{k}]" + "".join(f"[{step!r}]" for step in path)
             for k, layout in nested for path in _paths(layout)]
    return eval(f"lambda a: ({', '.join(reads)},)")  # noqa: S307 -- indices and keys only


def _paths(layout: Layout | None) -> list[tuple[Any, ...]]:
    if layout is None:
        return [()]
    steps = layout[1] if layout[0] == "dict" else range(len(layout[-1]))
    return [(step, *rest) for step, child in zip(steps, layout[-1]) for rest in _paths(child)]


def with_leaves(fn: Callable[..., Any], nested: Nested) -> Callable[..., Any]:
    """``fn`` (compiled code taking the flattened arrays after the inputs) as a function of the
    inputs alone; ``fn`` itself when nothing was flattened."""
    if not nested:
        return fn
    read = leaf_reader(nested)

    def call(*args: Any) -> Any:
        return fn(*args, *read(args))
    call.__wrapped__ = getattr(fn, "__wrapped__", fn)  # type: ignore[attr-defined]  # (for tools)
    return call


__all__ = ["Nested", "flatten_nested", "forward_item_stores", "is_array", "leaf_reader",
           "nested_layouts", "with_leaves"]
