"""Reverse-mode differentiation of a shape-specialized graph into a forward and a backward graph.

``differentiate(graph)`` rewrites ``graph`` (a clone the caller owns) into the *augmented forward*:
the original outputs followed by the intermediates the backward needs (only those), and builds the
*backward*: inputs are one cotangent per forward output followed by the saved values; outputs are
one cotangent per forward input (None for inputs that are not differentiable).

Straight-line code goes node by node in reverse through the rule table (``rules.VJP_RULES``).
Control flow is differentiated symbolically:

- ``prim::If``: the backward is an If on the saved condition whose branches are the backward of
  each forward branch; it returns the branches' contributions to outer values.
- ``prim::Loop``: the backward is a reverse loop over the same trip count (a counter is added to
  while-loops). Loop-carried cotangents are carried backwards; contributions to outer values are
  accumulated in extra carried values, except an outer tensor read as ``u[i]`` by the iteration
  counter, whose slice cotangents are collected in a list and stacked once after the loop.
- Lists made in the function (literals, appends, ``unbind``): a list read after it changed has a
  backward list of its items' cotangents kept in step with it (as long as the list is at each
  point of the forward), started at its last read (from a stack's cotangent, else zeros) and
  added into by each read; the reverse of each append pops its item's cotangent from the end.
  A list never changed and read at constant indices gives each read's cotangent to its item.
  A read whose item the backward cannot follow back (a list made by slicing, an ``if`` or a
  loop; an argument the function changes) is refused, never given a zero.
- List arguments (``differentiate(graph, list_items)``): a list of tensors the function only
  reads is specialized to its items (loops indexing it by their counter unrolled, then retyped
  as a tuple, ``passes.autodiff.lists``); its cotangent is a list with one array per item.
- Tuples: cotangents are kept per element and pass through construct/unpack/index; an outer
  tuple read in an If branch or loop body gets its contribution back as a tuple.
- Optionals: the cotangent of an ``Optional[Tensor]`` is a tensor (none reaches a None), passed
  through ``unchecked_unwrap_optional`` and If outputs.
- Dicts of tensors: the cotangent of a dict is a dict of its keys' cotangents, updated as reads
  and writes are undone in reverse (``passes.autodiff.dicts``); a dict argument's gradient is one.
- Outputs that are lists, dicts or tuples holding them: their cotangents have the output's
  structure and start the backward of what built them (``passes.autodiff.outputs``).

Backward If outputs and reverse-loop carried values are typed to cover what flows into them: a
cotangent's type can be less precise than its forward value's.

Where each part lives: the reverse walk with Ifs and loops in ``walk``, the op rules in
``rules/`` (one module per op family), tuples in ``tuple_vjps``, lists in ``list_cts`` (the backward
lists of item cotangents), ``list_vjps`` and ``join_vjps`` (stack, concatenate), dicts in
``dicts``, output seeding in ``outputs``, the preparatory rewrites and activity analysis in
``prepare``, and the builder in ``context``.

Last, ``passes.autodiff.soundness`` checks that every value on a path from a differentiated input
to an output got a cotangent: a construct the backward does not handle is refused (``IRError``
naming its node: "cannot differentiate ...: the gradient would silently be zero") instead of
giving a zero gradient. Rules give cotangents through ``BlockGrad.add_ct``, which records them
for the check.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ir.core import Graph, Node, Value
from ir.errors import IRError
from ir.types import ListType, TensorType, TupleType, Type
from passes.autodiff.context import BlockGrad, Differentiator, covering
from passes.autodiff.dict_types import refine_dict_values, tuple_dict_inputs
from passes.autodiff.dicts import check_dicts, dict_ct, is_dict
from passes.autodiff.list_cts import is_graph_input
from passes.autodiff.lists import (
    CHANGES,
    MAX_TRIPS,
    handed_back,
    read_only_list_inputs,
    refusal,
)
from passes.autodiff.needed import needed_values
from passes.autodiff.outputs import seed_outputs
from passes.autodiff.prepare import (
    active_values,
    hoist_loop_invariants,
    lower_dropout,
    refine_stacked_lists,
)
from passes.autodiff.regions import differentiable_regions, log_regions, logging_regions
from passes.autodiff.rules import NON_DIFFERENTIABLE
from passes.autodiff.soundness import STORES, check_gradient_paths
from passes.autodiff.tuple_lists import split_tuple_lists
from passes.autodiff.walk import backprop_block


@dataclass
class Gradient:
    """The result of ``differentiate``."""

    forward: Graph
    """returns the original outputs, then the saved values."""
    backward: Graph
    """takes one cotangent per original output, then the saved values; returns one cotangent
    per forward input (None where the input is not differentiable)."""
    num_outputs: int
    """how many of the forward's outputs are the original ones."""
    differentiable: list[bool]
    """per forward input: whether a gradient is computed for it."""
    dict_inputs: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    """dict arguments both graphs take as the tuple of their values at these keys (input
    position -> keys); the backward returns their gradients as such tuples."""
    regions: Graph | None = None
    """the forward as differentiated, its active regions grouped into
    ``prim::DifferentiableGraph`` nodes (``passes.autodiff.regions``): a view, not what runs."""

    @property
    def num_saved(self) -> int:
        return len(self.forward.outputs) - self.num_outputs


def differentiate(graph: Graph, list_items: Mapping[int, Sequence[Type]] | None = None,
                  dict_items: Mapping[int, Mapping[Any, Type]] | None = None,
                  wrt: Collection[int] | None = None, regions: bool = False) -> Gradient:
    """Turn ``graph`` (modified in place) into an augmented forward and build its backward.

    ``list_items`` gives, for graph inputs that are lists, the types of the items of the list
    the graph is specialized for (input position -> one type per item). A list of tensors the
    function only reads then gets a gradient per item (a list), even when its items' shapes
    differ and it is read at a loop's counter (``passes.autodiff.lists``). ``dict_items`` does
    the same for dict arguments (input position -> key -> type): one only read at constant keys
    becomes a tuple (``Gradient.dict_inputs``). ``wrt`` names the input positions to
    differentiate (None: every one that can hold a derivative); the backward returns None for
    the others, and neither differentiates nor saves what only their gradients need. With
    ``regions`` (or ``RNNSCRIPT_LOG=passes``), ``Gradient.regions`` shows the split into
    differentiable regions.
    """
    from passes.shape_prop import propagate_block
    lower_dropout(graph)
    split_tuple_lists(graph)
    dict_inputs = tuple_dict_inputs(graph, dict_items or {})
    if dict_inputs:
        propagate_block(graph.block)
    refine_dict_values(graph, {k: t for k, t in (dict_items or {}).items()
                               if k not in dict_inputs})
    lists = read_only_list_inputs(graph, list_items or {})
    if refine_stacked_lists(graph, lists):
        # unrolled layers and per-step slices are new loop bodies: give them the loop rewrites
        # (the input projection hoisted out of each layer's loop) before the backward mirrors
        # them, then re-refine what those rewrites re-typed
        from passes import RNN_PIPELINE, run_pipeline
        run_pipeline(graph, RNN_PIPELINE)
        refine_stacked_lists(graph, lists)
    hoist_loop_invariants(graph)
    varied = active_values(graph, NON_DIFFERENTIABLE, wrt)
    # active: varied and needed by an output's cotangent; a differentiated input no output
    # needs stays active, so its gradient is zeros
    active = (varied & needed_values(graph, NON_DIFFERENTIABLE)) | (varied & set(graph.inputs))
    check_dicts(graph, active)
    view = differentiable_regions(graph, active) if regions or logging_regions() else None
    if view is not None:
        log_regions(view)
    ad = Differentiator(graph, active)
    root = BlockGrad(ad, graph.block, ad.backward.block)
    ad.root = root
    num_outputs = len(graph.outputs)
    seed_outputs(root, graph)
    backprop_block(root)
    _refuse_lost_list_cotangents(root, lists)
    results, differentiable = [], []
    for v in graph.inputs:
        ok = v in active
        differentiable.append(ok)
        if not ok:
            results.append(root.const(None))
        elif v in lists:
            results.append(_list_of_items(root, v, root.ct.get(v), len(lists[v])))
        elif is_dict(v):
            results.append(dict_ct(root, v))
        elif isinstance(v.type, ListType) and root.ct.get(v) is None:
            raise IRError("cannot differentiate with respect to a list argument the function "
                          "changes: pass the arrays as separate arguments or a tuple, and build "
                          "a new list in the function", _first_change(v))
        else:
            results.append(root.materialize(v, root.ct.get(v)))
    ad.backward.set_outputs(results)
    check_gradient_paths(graph, [v for v in graph.inputs if v in active], ad.given)
    graph.set_outputs(list(graph.outputs) + ad.saved)
    return Gradient(graph, ad.backward, num_outputs, differentiable, dict_inputs, view)


def _refuse_lost_list_cotangents(root: BlockGrad, lists: Mapping[Value, object]) -> None:
    """Every cotangent given to a list or gathered by its reads must have been handed on to its
    items by the list's maker (or be a read-only list argument's): none may end as a zero."""
    ad = root.ad
    for v in ad.forward.inputs:
        if (isinstance(v.type, ListType) and v not in lists and not handed_back(v)
                and (root.ct.get(v) is not None or ad.read_cts.get(v))):
            users = [use.node for use in v.uses]
            changes = [n for n in users if n.kind in CHANGES] or users
            raise refusal(changes[0], "cannot differentiate with respect to a list argument "
                          "the function changes (appends to it, stores into it) or returns",
                          "pass the arrays as separate arguments or a tuple, and build a new "
                          "list in the function")
    lost = [v for v, g in root.ct.items() if g is not None and isinstance(v.type, ListType)
            and not is_graph_input(v)]
    lost += [v for v, reads in ad.read_cts.items() if reads and not is_graph_input(v)]
    if lost:
        raise refusal(lost[0].node, "cannot differentiate the items of this list: the "
                      "backward cannot follow them back", "build the list with a literal or "
                      "appends")


def _list_of_items(root: BlockGrad, v: Value, g, n: int) -> Value:
    """The cotangent of a list argument of ``n`` items retyped as a tuple, as a list (the
    argument's kind)."""
    t = v.type
    for use in v.uses:
        # a read out of range stays a list read: say so rather than blame a non-constant index
        i = use.node.inputs[1] if len(use.node.inputs) > 1 else None
        if i is not None and i.is_constant and not -n <= int(i.constant) < n:
            raise IRError(f"cannot differentiate reading a list argument of {n} items at "
                          f"index {i.constant}: it is past the end (the plain function raises "
                          "IndexError there)", use.node)
    if not isinstance(t, TupleType):  # still a list: a read at a non-constant index remains
        reads = [u.node for u in v.uses if u.node.kind == "prim::ListIndex"]
        raise IRError("cannot differentiate reading a list argument at a non-constant index "
                      f"(only counted loops of at most {MAX_TRIPS} trips are unrolled to make "
                      "the index constant): pass the items as one stacked array and index that",
                      reads[0] if reads else None)
    parts = root.structured(g) if g is not None else [None] * len(t.elements)
    items = [root._element(gk, tk, v, k) for k, (gk, tk) in enumerate(zip(parts, t.elements))]
    item_t = covering([i.type for i in items], TensorType())
    return root.emit("prim::ListConstruct", *items, types=[ListType(item_t)]).output


def _first_change(v: Value) -> Node | None:
    """The first node that writes into list ``v`` (an append, a store), if any."""
    for use in v.uses:
        if use.index == 0 and use.node.kind in STORES:
            return use.node
    return None


def prune_unused_saved(grad: Gradient) -> bool:
    """Drop saved values the (optimized) backward no longer reads, from both graphs."""
    changed = False
    first = grad.num_outputs
    for k in reversed(range(grad.num_saved)):
        param = grad.backward.inputs[first + k]
        if param.uses:
            continue
        grad.backward.block.erase_param(first + k)
        grad.forward.block.return_node.remove_input(first + k)
        changed = True
    return changed


__all__ = ["Gradient", "differentiate", "prune_unused_saved"]
