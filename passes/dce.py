"""Dead-code elimination: drop nodes whose results nobody reads and that have no side effects.

Side effects come from the op registry: SIDE_EFFECTS ops are never removed; PURE, FRESH and
trait-less ops (reads of mutable lists, ``len``, random ops) are removed when unused. Unknown
kinds are kept. ``prim::If`` / ``prim::Loop`` lose unused outputs (and, for loops, loop-carried
values that only feed their own next value, and values every step passes on unchanged:
``invariant_carries``); a control-flow node whose blocks do something observable is kept. A
fresh container whose every user only writes into it (the registry's effects: ``append``,
``d[k] = v``, ``obj.f = v``) is removed with its writers.
"""

from __future__ import annotations

from ir.core import SUBGRAPH, Block, Graph, Node, Value
from ir.kinds import IF, LOOP
from ir.ops.elementwise import IN_PLACE_ATTR
from ir.registry import ALIASES, FRESH, READS, effects_on_input, lookup, only_writes_into
from ir.types import ScalarType, TensorType

NAME = "dce"
SETTLES = True
"""a second run on the graph this pass leaves changes nothing (``run_pipeline``)."""


def has_side_effects(node: Node) -> bool:
    """Does running ``node`` do anything observable besides defining its outputs?"""
    op = lookup(node.kind)
    if op is None or op.has_side_effects:
        return True
    sub = node.attrs.get(SUBGRAPH)
    if isinstance(sub, Graph) and any(has_side_effects(n) for n in sub.walk()):
        return True
    return any(has_side_effects(n) for n in node.walk())


def is_dead(node: Node) -> bool:
    """Unused outputs and nothing observable: the node can go."""
    return not any(v.uses for v in node.outputs) and not has_side_effects(node)


def prune_if_outputs(node: Node) -> bool:
    """Remove the unused outputs of a ``prim::If`` and the matching block results."""
    changed = False
    for k in reversed(range(len(node.outputs))):
        if node.outputs[k].uses:
            continue
        for block in node.blocks:
            block.return_node.remove_input(k)
        node.erase_output(k)
        changed = True
    return changed


def prune_loop_carried(node: Node) -> bool:
    """Remove the loop-carried values of a ``prim::Loop`` that nothing live needs.

    A carried value is live when the loop's output is used, or when something live in the body
    (the condition, a side effect, another live carried value) reads its block parameter.
    """
    body = node.blocks[0]
    n_carried = len(node.outputs)
    live = {k for k in range(n_carried) if node.outputs[k].uses}
    while True:
        roots = [body.returns[0]] + [body.returns[k + 1] for k in sorted(live)]
        needed = live_values(body, roots)
        grown = {k for k in range(n_carried) if body.params[k + 1] in needed} | live
        if grown == live:
            break
        live = grown
    dead = [k for k in range(n_carried) if k not in live]
    if not dead:
        return False
    for k in reversed(dead):
        body.return_node.remove_input(k + 1)
        node.remove_input(k + 2)
        node.erase_output(k)
    # what read a dead parameter fed only dead values: the sweep removes it, freeing the parameter
    sweep_block(body)
    for k in reversed(dead):
        body.erase_param(k + 1)
    return True


def invariant_carries(node: Node) -> bool:
    """Replace the carried values of a ``prim::Loop`` that every step passes on unchanged (the
    body returns its parameter as the next value: a reverse loop's gradient of a loss summed in
    the forward loop, ``grad_loss``) by the loop's input for them, in the body and after the
    loop; ``prune_loop_carried`` then removes the carry. Only tensors and numbers that the body
    only reads (no in-place write, no view of them that could be written): a step that writes
    one changes what the next step reads."""
    body = node.blocks[0]
    changed = False
    for k in range(len(node.outputs)):
        param, init = body.params[k + 1], node.inputs[k + 2]
        if body.returns[k + 1] is not param or not _read_only(param, body, k + 1):
            continue
        if not isinstance(param.type, (TensorType, ScalarType)) or param.type != init.type:
            continue
        param.replace_all_uses_with(init)
        node.outputs[k].replace_all_uses_with(init)
        changed = True
    return changed


def _read_only(value: Value, body: Block, slot: int | None = None) -> bool:
    """Whether the body only reads ``value``: its users are tensor ops and fusion groups that
    neither write it nor keep it anywhere but in the views they make (followed in turn); the
    body's return passes it on at ``slot`` alone (a parameter as its own next value), not as
    another carried value. Containers, objects, nested blocks and calls are refused: what they
    keep of it could be written later."""
    for use in value.uses:
        user = use.node
        if user is body.return_node:
            if slot is None or use.index != slot:
                return False
            continue
        if not (user.kind.startswith("tensor::") or user.kind == "prim::FusionGroup"):
            return False
        effects = effects_on_input(user, use.index)
        if user.attrs.get(IN_PLACE_ATTR) or not effects <= READ_OR_VIEW:
            return False
        if ALIASES in effects and not all(_read_only(v, body) for v in user.outputs):
            return False
    return True


READ_OR_VIEW = frozenset({READS, ALIASES})


def live_values(block: Block, roots: list[Value]) -> set[Value]:
    """The values ``roots`` and the block's side effects need, nested blocks included."""
    live: set[Value] = set(roots)
    _mark_block(block, live)
    return live


def _mark_block(block: Block, live: set[Value]) -> None:
    for node in reversed(block.nodes):
        if not has_side_effects(node) and not any(v in live for v in node.outputs):
            continue
        live.update(node.inputs)
        for inner in node.blocks:
            live.update(inner.returns)
            _mark_block(inner, live)


def removable_container(node: Node) -> bool:
    """A fresh container whose every use only writes into it: nobody can ever read it."""
    op = lookup(node.kind)
    if op is None or FRESH not in op.traits or len(node.outputs) != 1:
        return False
    uses = node.output.uses
    return bool(uses) and all(only_writes_into(u.node, u.index) for u in uses)


def sweep_block(block: Block) -> bool:
    """One backward sweep over ``block`` and its nested blocks; True when something went."""
    changed = False
    for node in reversed(block.nodes):
        if node.kind == IF:
            changed |= prune_if_outputs(node)
        elif node.kind == LOOP:
            changed |= invariant_carries(node)
            changed |= prune_loop_carried(node)
        for inner in node.blocks:
            changed |= sweep_block(inner)
        if removable_container(node):
            for writer in node.output.users:
                writer.erase()
        if is_dead(node):
            node.erase()
            changed = True
    return changed


def run(graph: Graph) -> bool:
    """Remove dead code until nothing more goes."""
    changed = False
    while sweep_block(graph.block):
        changed = True
    return changed
