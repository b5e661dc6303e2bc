"""What two natively compiled copies of one loop share: the machine code of loops that differ
only in run-time sizes (``shapes.RunTimeShapes``) is looked up by the loop's fingerprint and
``layout_facts``, and the keys of its ints and doubles name the loop's values by position
(``encode`` / ``decode`` over ``objects``)."""

from __future__ import annotations

from typing import Any

from fuser.cpu.loop import slots
from fuser.cpu.loop.body import SLOT_WRITES, known_array, write_parts, write_target
from fuser.cpu.loop.layouts import Layout, block_copy
from fuser.cpu.loop.program import LoopProgram
from ir.core import Node, Value


def layout_facts(prog: LoopProgram, layouts: dict[Value, Layout], plans: dict[Node, Any]) -> tuple:
    """What of the layouts the builder's code depends on: the values kernels write into
    their slots (``slots.into``), then per node, a kernel's key and plan classes, or whether a
    slot write copies whole blocks."""
    (body,) = prog.node.blocks
    into = slots.into(prog, layouts)
    facts: list[Any] = [tuple(k for k, v in enumerate(prog.produced) if v in into)]
    for n in body:
        if n in plans:
            facts.append((prog.kernels[n].key, plans[n].classes))
        elif n.kind in SLOT_WRITES:
            _, axis, _, value = write_parts(n)
            facts.append(known_array(value) is not None and block_copy(
                layouts[write_target(n)], int(axis.constant), layouts[value]))
        else:
            facts.append(None)
    return tuple(facts)


def objects(prog: LoopProgram) -> list[Any]:
    """The loop's inputs, its body's parameters, nodes and values, in an order two copies of
    one loop share (what the keys of a variant's ints name, by position)."""
    (body,) = prog.node.blocks
    out = [*prog.node.inputs, *body.params]
    for n in body:
        out += [n, *n.inputs, *n.outputs]
    return list(dict.fromkeys(out))


def encode(key: tuple, at: dict[Any, int]) -> tuple:
    return tuple(("at", at[x]) if isinstance(x, (Node, Value)) else x for x in key)


def decode(key: tuple, objects: list[Any]) -> tuple:
    return tuple(objects[x[1]] if isinstance(x, tuple) and x[:1] == ("at",) else x for x in key)
