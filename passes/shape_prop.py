"""Shape and dtype propagation: refine every value's type from the graph's input types.

``specialize(graph, input_types)`` narrows the inputs to a call signature and propagates;
the ``shape-prop`` pass re-propagates from the current input types. Each node's output types come
from its op's rule in the registry. ``prim::If`` outputs unify the two blocks' results. A
``prim::Loop`` body is propagated until its carried types reach a fixed point (widening with
``unify``, and forgetting shapes after a few rounds) so a value whose shape changes from one
iteration to the next ends up with an unknown dimension rather than a wrong one.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ir.constants import exact_in
from ir.core import CONSTANT, SUBGRAPH, Block, Graph, Node, Use, Value
from ir.kinds import CALL, IF, LOOP, RETURN, UNINITIALIZED
from ir.registry import (
    ALIASES,
    ONLY_READS,
    ShapeError,
    effects_on_input,
    infer_types,
    lookup,
)
from ir.types import (
    BOOL,
    INT,
    NONE,
    STR,
    AnyType,
    DictType,
    ListType,
    OptionalType,
    ScalarType,
    TensorType,
    TupleType,
    Type,
    erase_shape,
    is_number,
    is_subtype,
)
from passes import local_items
from passes.devices import place_on_call_device
from passes.item_types import (
    ITEM_TYPES,
    KEY_PRESENT,
    STORES,
    annotate_item_reads,
    local_containers,
    reads_before_changes,
)
from passes.local_items import join
from passes.weak_initials import (
    WEAK_DTYPE,
    first_update_dtype,
    is_weak,
    made_dtype,
)

RAISE = "prim::RaiseException"

NAME = "shape-prop"
SETTLES = True
"""a second run on the graph this pass leaves changes nothing (``run_pipeline``)."""

MAX_LOOP_ROUNDS = 4
"""Rounds of widening a loop's carried types before forgetting their shapes. Each round can only
forget information (a dimension, a rank, a dtype), so real loops settle in two or three rounds."""


def specialize(graph: Graph, input_types: Sequence[Type],
               input_items: Sequence[Any] | None = None) -> None:
    """Give the graph inputs ``input_types`` (each a subtype of the declared type) and propagate.

    ``input_items`` gives, per input, the types of a list's items (a tuple) or a dict's (by key),
    or None: reads of such a container the graph never changes (``params[0]``, ``p["W"]``,
    ``a, b = params``) get their own item's type, so a cell written over a weight list types
    (and fuses) as one written over separate arguments.

    Raises ShapeError naming the input when a type does not fit, and any ShapeError an op's rule
    raises (with the node's source position).
    """
    if len(input_types) != len(graph.inputs):
        raise ShapeError(f"expected {len(graph.inputs)} input types, got {len(input_types)}")
    for i, (value, t) in enumerate(zip(graph.inputs, input_types)):
        if not is_subtype(t, value.type):
            raise ShapeError(f"input {i} (%{value.name or i}): {t} is not a subtype of "
                             f"the declared {value.type}")
    for value, t in zip(graph.inputs, input_types):
        value.type = _kept_items(value, t) if isinstance(t, (ListType, DictType)) else t
    for value, t, items in zip(graph.inputs, input_types, input_items or ()):
        if items is not None and value.type == t and all(_only_reads(u, value)
                                                         for u in value.uses):
            annotate_item_reads(value, items)  # (a declared type may equal the call's too)
        elif items is not None and _plain_item(_item_of(t)):  # changed by the function: the
            annotate_item_reads(value, items,  # reads before its first change read its items
                                reads_before_changes(value, _only_reads))
    propagate_graph(graph)


def propagate_graph(graph: Graph) -> bool:
    """Propagate through the whole graph, then drop the If branches the types rule out (their
    ops were not typed, and may not accept the specialized types: ``if x.ndim == 2:`` for a 1-D
    ``x``) and propagate again from the branches kept, until no If is left to drop.

    The lists and dicts the graph builds and keeps to itself (``local_containers``) get the
    join of the items stored into them as their item type, so reads give it back: see
    ``_propagate_with_local_items``. True when it dropped or folded nodes."""
    locals_ = local_containers(graph)
    _propagate_with_local_items(graph, locals_)
    rewritten = False
    while _drop_ruled_out_branches(graph) | _drop_unreachable(graph):
        # (until none is left: a branch dropped may decide another's condition, as
        # ``if not flag and x.shape[0] != 1: x = x.T`` decides the ifs on ``x``'s shape)
        rewritten = True
        _propagate_with_local_items(graph, local_containers(graph))
    while _fold_dtypes(graph):
        rewritten = True
        _propagate_with_local_items(graph, local_containers(graph))
    place_on_call_device(graph)
    return rewritten


MAX_ITEM_ROUNDS = 6
"""Whole-graph propagations that may widen the item types of local containers before they fall
back to plain tensors. Each round can only forget something (a dimension, the rank, the dtype),
so item types settle in two or three rounds."""


def _propagate_with_local_items(graph: Graph, containers: Sequence[Value]) -> None:
    """Propagate the graph with each container in ``containers`` typed by what is stored into
    it: its item type starts as nothing, its construction and every store (met in program
    order, loops until they settle) widen it by the stored items' types, and a read gives the
    type so far. The graph is propagated again until a whole round leaves every item type as
    it found it: then every read was given the join of everything stored, wherever it is."""
    if not containers:
        propagate_block(graph.block)
        return
    general = {c: local_items.general_items(c.type) for c in containers}
    _settle_weak_items(graph, general)
    states = {c: local_items.Items(general[c]) for c in containers}
    local_items.STATES.update(states)
    try:
        for round_ in range(MAX_ITEM_ROUNDS):
            before = {c: (s.element, None if s.keys is None else dict(s.keys))
                      for c, s in states.items()}
            propagate_block(graph.block)
            if round_ == 0 and any(s.blind for s in states.values()):
                for c, state in states.items():
                    state.element = local_items.independent_items(c, state)
                continue
            if all((s.element, s.keys) == before[c] for c, s in states.items()):
                return
            if round_ == MAX_ITEM_ROUNDS - 2:  # last chance: plain tensors settle at once
                for s in states.values():
                    s.element, s.keys = s.general, None
        raise ShapeError("item types of local containers do not settle")  # pragma: no cover
    finally:
        for c in states:
            local_items.STATES.pop(c, None)


PROBE = TensorType("float16", ())
"""What a weak number item is read as while probing the dtype numpy gives it: a dtype below
every other float, so a store comes out float32 (or float64) only when something other than the
number makes it so, as numpy's promotion of a Python number (weak) does."""


def _settle_weak_items(graph: Graph, general: Mapping[Value, Type]) -> None:
    """Give the weak number items of local containers (``accs = [0.0, 0.0]`` that a later
    ``accs[0] += np.sum(x)`` makes hold tensors: ``tensor::full[weak_dtype]`` items) numpy's
    dtype, as ``_settle_weak_initials`` does for a loop-carried number. The graph is propagated
    once with every item of such a container read as a 0-d ``PROBE`` array; when everything
    stored into it is then a float32 or float64 array of one dtype (any shape), each number
    exact in it becomes a 0-d array of that dtype (``0.0 + np.float32(s)`` is float32, so is
    ``0 + x`` of a float32 ``x``). Otherwise they stay weak: code generation writes them as the
    Python numbers they are (``script.runtime.weak_numbers``)."""
    weak = {c: [v.node for v in items] for c in general
            if (items := local_items.built_items(c.node)) and all(is_weak(v) for v in items)}
    if not weak:
        return
    states = {c: local_items.Items(general[c], probe=PROBE) for c in weak}
    local_items.STATES.update(states)
    try:
        propagate_block(graph.block)
    except ShapeError:
        return
    finally:
        for c in states:
            local_items.STATES.pop(c, None)
            c.type = local_items.with_items(c.type, general[c])
    for c, nodes in weak.items():
        t = states[c].element
        if not isinstance(t, TensorType) or t.dtype not in ("float32", "float64"):
            continue
        for full in dict.fromkeys(nodes):
            number = full.inputs[1].node.attrs.get("value")
            if type(number) in (int, float) and exact_in(number, t.dtype):
                set_number_dtype(full, t.dtype, WEAK_DTYPE)


def _fold_dtypes(graph: Graph) -> bool:
    """Replace each ``x.dtype`` (``tensor::dtype``) of a tensor whose dtype the types know by
    its constant name, so the ops it is passed to (``np.zeros(3, dtype=x.dtype)``) type their
    results. Done on settled types only: inside a loop a dtype may still widen."""
    folded = False
    for node in list(graph.walk()):
        t = node.inputs[0].type if node.kind == "tensor::dtype" else None
        if not isinstance(t, TensorType) or t.dtype is None or not node.output.uses:
            continue
        with graph.inserting_before(node):
            name = graph.insert(CONSTANT, (), [STR], {"value": t.dtype})
        node.output.replace_all_uses_with(name.output)
        folded = True
    return folded


def _drop_ruled_out_branches(graph: Graph) -> bool:
    """Replace each If whose condition the final types decide by the block it takes."""
    dropped = False
    for node in list(graph.walk()):
        if node.kind != "prim::If" or not _attached(node, graph):
            continue
        taken = static_condition(node.inputs[0])
        if taken is None:
            continue
        block = node.blocks[0 if taken else 1]
        for inner in list(block.nodes):
            inner.move_before(node)
        for out, v in zip(node.outputs, block.returns):
            out.replace_all_uses_with(v)
        node.erase()
        dropped = True
    return dropped


def _drop_unreachable(graph: Graph) -> bool:
    """Erase what follows a raise in its block (it never runs, and was not typed: see
    ``propagate_block``); a value of it that the block still returns becomes
    ``prim::Uninitialized`` of its type."""
    dropped = False
    for raising in [n for n in graph.walk() if n.kind == RAISE]:
        if not _attached(raising, graph):
            continue
        block = raising.owner
        assert block is not None
        later = [n for n in list(block.nodes)[list(block.nodes).index(raising) + 1:]
                 if n.kind != UNINITIALIZED]  # (the stand-ins of an earlier round stay)
        for node in reversed(later):
            for out in node.outputs:
                if out.uses:
                    stand_in = graph.create(UNINITIALIZED, (), [out.type])
                    out.replace_all_uses_with(stand_in.insert_after(raising).output)
            node.erase()
            dropped = True
    return dropped


def _kept_items(value: Value, t: ListType | DictType) -> Type:
    """``t`` for a list or dict argument of arrays, numbers or tuples of them that the function
    only reads; else the declared type (or
    one of plain tensors): an append or a store may put items of another shape into it, which
    the items' specialized type would contradict."""
    item = _item_of(t)
    if _plain_item(item) and all(_only_reads(u, value) for u in value.uses):
        return t
    if isinstance(value.type, type(t)):
        return value.type
    if not isinstance(item, TensorType):
        return t
    return ListType(TensorType()) if isinstance(t, ListType) else DictType(t.key, TensorType())


def _item_of(t: Type) -> Type:
    """A list's element type, a dict's value type (anything else itself)."""
    return t.element if isinstance(t, ListType) else t.value if isinstance(t, DictType) else t


def _plain_item(t: Type) -> bool:
    """An array or a number, or a tuple of such (a step's cache: ``(x, prev_h, next_h)``)."""
    if isinstance(t, TupleType):
        return all(_plain_item(e) for e in t.elements)
    return isinstance(t, (TensorType, ScalarType))


def _only_reads(use: Use, container: Value) -> bool:
    """Does this use neither change the container's items nor keep it (or its items) where
    something else could change them (a slice or ``l + m`` is a new list of the argument's item
    type, which may be mutated)?"""
    if use.node.kind == RETURN:  # returned by the function itself: not an alias inside it
        return use.node.owner is container.node.owner
    if use.node.kind == "prim::DictKeys":  # a new list of the keys: nothing of the items
        return True
    return effects_on_input(use.node, use.index) == ONLY_READS


def _attached(node: Node, graph: Graph) -> bool:
    """Is ``node`` still in ``graph`` (not in a block of an If already dropped)?"""
    block = node.owner
    while block is not None and block is not graph.block:
        owner = block.owner
        if owner is None or owner.owner is None:
            return False
        block = owner.owner
    return block is graph.block


def propagate_block(block: Block) -> None:
    """Recompute the output types of every node of ``block``, in order, up to one that always
    raises: what follows never runs (``f(**d)`` of a dict without a required key raises
    TypeError before the callee's ops read it), so its types are not checked."""
    for node in block:
        propagate_node(node)
        if always_raises(node):
            return


def always_raises(node: Node) -> bool:
    """Whether ``node`` raises whenever it runs: a raise, or an If whose branches that can be
    taken (by the types: ``static_condition``) each hold one at their top level."""
    if node.kind == RAISE:
        return True
    if node.kind != IF:
        return False
    taken = static_condition(node.inputs[0])
    blocks = node.blocks if taken is None else [node.blocks[0 if taken else 1]]
    return all(any(always_raises(n) for n in block) for block in blocks)


_FIXED: dict[Node, Type] = {}
"""Nodes whose output type ``fixed_types`` holds during a propagation (keyed by the node)."""


@contextmanager
def fixed_types(types: Mapping[Node, Type]) -> Iterator[None]:
    """Within the ``with`` block, propagation gives each of these single-output nodes its type
    instead of the one its rule infers, nested blocks included: a caller that knows more than
    the rules (the length of a list where it is stacked) re-types what follows from it."""
    _FIXED.update(types)
    try:
        yield
    finally:
        for node in types:
            _FIXED.pop(node, None)


def propagate_node(node: Node) -> None:
    """Recompute ``node``'s output types (and its blocks' / subgraph's types)."""
    fixed = _FIXED.get(node)
    if fixed is not None:
        node.output.type = fixed
        return
    if node.kind == IF:
        return _propagate_if(node)
    if node.kind == LOOP:
        return _propagate_loop(node)
    if isinstance(node.attrs.get(SUBGRAPH), Graph):
        return _propagate_subgraph(node)
    try:
        types = infer_types(node)
    except ShapeError as e:
        raise ShapeError(_with_source(str(e), node)) from e
    known = node.attrs.get(ITEM_TYPES)
    if known is not None and len(known) == len(types):
        types = [k if is_subtype(k, t) else t for k, t in zip(known, types)]
    if local_items.STATES:
        if len(node.outputs) == 1 and node.output in local_items.STATES:
            types = [local_items.construct(node)]
            _set_types(node.outputs, types, node)
            return
        if node.inputs and node.inputs[0] in local_items.STATES:
            state = local_items.STATES[node.inputs[0]]
            if node.kind in STORES:
                local_items.store(node)
            elif state.element is None and state.probe is None:
                state.blind.add(node)
            elif node.kind == "prim::DictGetItem":
                held = local_items.key_read(node)
                if held is not None and is_subtype(held, types[0]):
                    types = [held]
    _set_types(node.outputs, [_widened_for_stores(v, t) for v, t in zip(node.outputs, types)],
               node)


def _widened_for_stores(value: Value, t: Type) -> Type:
    """A new list's type covering the items stored into it later (``unbind(x, 0)`` then
    ``.append(y)`` with another shape): its items may be any of them, so reads must not assume
    the first ones' shape."""
    if not isinstance(t, ListType):
        return t
    element = t.element
    stores = [stored for use in value.uses if use.index == 0
              for stored in local_items.items_stored(use.node)]
    if stores and _filled_only_here(value):
        element = stores[0]  # `hs = []` then `hs.append(h)`: its items are what is stored
    for stored in stores:
        element = join(element, stored, AnyType())
    return t if element == t.element else ListType(element)


def _filled_only_here(value: Value) -> bool:
    """Is ``value`` a new empty list whose every item comes from a store this function makes
    into it directly (no use that could store out of sight: a call, a loop or branch it flows
    into, another container keeping it)?"""
    if value.node.kind != "prim::ListConstruct" or value.node.inputs:
        return False
    for use in value.uses:
        op = lookup(use.node.kind)
        if op is None or use.node.blocks or ALIASES in op.effects_on(use.index):
            return False
    return True


def _with_source(message: str, node: Node) -> str:
    return message if node.source is None else f"{message} (at {node.source})"


def _set_types(values: Sequence[Value], types: Sequence[Type], node: Node) -> None:
    if len(values) != len(types):
        raise ShapeError(_with_source(
            f"{node.kind} has {len(values)} outputs but its rule gives {len(types)}", node))
    for v, t in zip(values, types):
        v.type = t


def _propagate_if(node: Node) -> None:
    then_block, else_block = node.blocks
    taken = static_condition(node.inputs[0])
    # a branch the types already rule out (``x is None`` for an x known to be None, or not) is
    # not propagated: its ops may not accept the specialized types, and constant-prop drops it
    if taken is not False:
        propagate_block(then_block)
    if taken is not True:
        propagate_block(else_block)
    pairs = zip(then_block.returns, else_block.returns, node.outputs)
    types = [a.type if taken else b.type if taken is False else join(a.type, b.type, out.type)
             for a, b, out in pairs]
    _set_types(node.outputs, types, node)


def static_condition(cond: Value) -> bool | None:
    """The value of an If condition when the types alone decide it, else None."""
    producer = cond.node
    if producer.kind == CONSTANT:
        value = producer.attrs.get("value")
        return value if isinstance(value, bool) else None
    if producer.kind == "prim::IsNone":
        return is_none_by_type(producer.inputs[0].type)
    if producer.kind == "prim::DictContains" and KEY_PRESENT in producer.attrs:
        return bool(producer.attrs[KEY_PRESENT])  # "b" in layer, of the call's dict
    if producer.kind == IF and cond.type == BOOL:  # ``a and b``: the value the branch taken gives
        taken = static_condition(producer.inputs[0])
        if taken is None:
            return None
        return static_condition(producer.blocks[0 if taken else 1].returns[
            producer.outputs.index(cond)])
    if producer.kind == "tensor::logical_not" and cond.type == BOOL:
        inner = static_condition(producer.inputs[0])
        return None if inner is None else not inner
    compare = INT_COMPARISONS.get(producer.kind)
    if compare is not None and cond.type == BOOL:
        a, b = (static_int(v) for v in producer.inputs)
        return None if a is None or b is None else compare(a, b)
    return None


_LIST_READS = frozenset({"prim::len", "prim::ListIndex", "tensor::stack", "tensor::cat"})
"""uses of a list literal that leave its length as built."""

INT_COMPARISONS = {"tensor::eq": operator.eq, "tensor::ne": operator.ne, "tensor::lt": operator.lt,
                   "tensor::le": operator.le, "tensor::gt": operator.gt, "tensor::ge": operator.ge}
"""comparisons that decide an If when both sides are ints the types know (``x.ndim == 2``)."""


def static_int(v: Value) -> int | None:
    """An int the types decide: a constant, ``x.ndim``, ``x.size`` or ``x.shape[i]`` of a tensor
    whose shape is known that far; else None."""
    producer = v.node
    if producer.kind == CONSTANT:
        value = producer.attrs.get("value")
        return value if type(value) is int else None
    if producer.kind == "prim::len" and producer.inputs[0].node.kind == "prim::ListConstruct":
        items = producer.inputs[0]  # a literal only read: its length (a loop of no trips,
        if all(u.node.kind in _LIST_READS for u in items.uses):  # unrolled, left it empty)
            return len(items.node.inputs)
        return None
    t = producer.inputs[0].type if producer.inputs else None
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    if producer.kind == "tensor::ndim":
        return len(t.shape)
    if producer.kind == "tensor::numel" and None not in t.shape:
        return math.prod(t.shape)  # type: ignore[arg-type]
    if producer.kind == "tensor::size":
        axis = static_int(producer.inputs[1])
        if axis is not None and -len(t.shape) <= axis < len(t.shape):
            return t.shape[axis]
    return None


def is_none_by_type(t: Type) -> bool | None:
    """True for NoneType, False for a type that cannot hold None, None when it may."""
    if t == NONE:
        return True
    if isinstance(t, (OptionalType, AnyType)):
        return None
    return False


def _propagate_loop(node: Node) -> None:
    _settle_weak_initials(node)
    body = node.blocks[0]
    declared = [p.type for p in body.params[1:]]
    types = [v.type for v in node.inputs[2:]]
    # a value carried from an uninitialized one (``for t in ...: g = ...`` with no ``g``
    # before: never read before the body binds it) is typed by what the body binds alone
    unset = [k for k, v in enumerate(node.inputs[2:]) if v.node.kind == UNINITIALIZED]
    for round_ in range(MAX_LOOP_ROUNDS + 1):
        _set_types(body.params, [INT, *types], node)
        propagate_block(body)
        returned = [v.type for v in body.returns[1:]]
        if round_ == 0 and unset:
            bound = [returned[k] if k in unset and body.returns[1 + k] is not body.params[1 + k]
                     else t for k, t in enumerate(types)]
            if bound != types:
                types = bound
                continue
        if all(is_subtype(r, t) for r, t in zip(returned, types)):
            break
        types = [_carried_join(t, r, d) for t, r, d in zip(types, returned, declared)]
        if round_ >= MAX_LOOP_ROUNDS - 1:
            types = [erase_shape(t) for t in types]
    else:
        raise ShapeError(_with_source("loop-carried types do not settle: " + ", ".join(
            f"{t} becomes {r}" for t, r in zip(types, returned) if not is_subtype(r, t)), node))
    for k in unset:  # the uninitialized value of the type carried
        initial = node.inputs[2 + k]
        if not is_subtype(initial.type, types[k]):
            graph = node.owner.graph  # type: ignore[union-attr]
            stand_in = graph.create(UNINITIALIZED, (), [types[k]])
            stand_in.insert_before(node)
            node.set_input(2 + k, stand_in.output)
    _set_types(node.outputs, types, node)


def _settle_weak_initials(node: Node) -> None:
    """Give each carried number made a tensor (``WEAK_DTYPE``) numpy's dtype: propagate the body
    once with the number itself carried, as numpy's first iteration runs, and take the dtype of
    the tensor it returns (``0 + np.float32(x)`` is float32). Without one it keeps the number's
    own dtype (int64, float64), as ``np.asarray(0)`` has."""
    weak = [k for k, v in enumerate(node.inputs[2:]) if is_weak(v)]
    if not weak:
        return
    body = node.blocks[0]
    types = [v.type for v in node.inputs[2:]]
    for k in weak:
        types[k] = node.inputs[2 + k].node.inputs[1].type
    try:
        _set_types(body.params, [INT, *types], node)
        propagate_block(body)
    except ShapeError:
        return
    for k in weak:
        dtype = made_dtype(body.returns[1 + k]) or first_update_dtype(body.params[1 + k])
        if dtype is not None:
            set_number_dtype(node.inputs[2 + k].node, dtype, WEAK_DTYPE)


def set_number_dtype(full: Node, dtype: str, mark: str) -> None:
    """Make the ``tensor::full`` of a number whose dtype was left open (its attribute ``mark``,
    which goes) an array of ``dtype``."""
    graph = full.owner.graph
    with graph.inserting_before(full):
        const = graph.insert(CONSTANT, (), [STR], {"value": dtype})
    full.set_input(2, const.output)
    del full.attrs[mark]
    propagate_node(full)



def _carried_join(before: Type, after: Type, declared: Type) -> Type:
    """A loop-carried type widened by what an iteration returns; a number an iteration makes a
    tensor (a weak initial's first round) becomes that tensor, as in numpy."""
    if is_number(before) and isinstance(after, TensorType):
        return after
    return join(before, after, declared)


def _propagate_subgraph(node: Node) -> None:
    sub = node.attrs[SUBGRAPH]
    if node.kind == CALL:
        sub = sub.clone()  # the callee is shared by every call site: type a private copy
    if len(sub.inputs) != len(node.inputs):
        raise ShapeError(_with_source(f"{node.kind}: {len(node.inputs)} inputs for a subgraph "
                                      f"of {len(sub.inputs)}", node))
    for inner, outer in zip(sub.inputs, node.inputs):
        inner.type = outer.type
    propagate_block(sub.block)
    _set_types(node.outputs, [v.type for v in sub.outputs], node)


def _all_types(graph: Graph) -> list[Type]:
    types = [v.type for v in graph.inputs]
    for node in graph.walk():
        types += [v.type for v in node.outputs]
        for b in node.blocks:
            types += [v.type for v in b.params]
    return types


def run(graph: Graph) -> bool:
    """Re-propagate types from the current input types; True when any type changed."""
    before = _all_types(graph)
    rewritten = propagate_graph(graph)  # (a dropped branch may hold no value: no type changes)
    return rewritten or _all_types(graph) != before
