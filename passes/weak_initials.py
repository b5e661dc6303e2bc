"""Numbers a loop turns into tensors (``loss = 0.0`` before ``loss += x[n]``): the graph walks
that tell shape propagation (``passes.shape_prop``'s ``_settle_weak_initials``) which dtype
numpy's first update gives such a number."""

from __future__ import annotations

from ir.core import CONSTANT, Value
from ir.kinds import IF, LOOP, RETURN
from ir.types import TensorType, is_number

WEAK_DTYPE = "weak_dtype"
"""Attribute of the ``tensor::full`` the frontend makes of a number a loop turns into a tensor
(``loss = 0`` before ``loss += x.sum()``): its dtype is the one the loop's first iteration gives
(``passes.shape_prop``'s ``_settle_weak_initials``)."""


def made_dtype(v: Value, depth: int = 0) -> str | None:
    """The dtype of the tensor an iteration returns in place of the number it was given: of
    ``v``, or where ``v`` is an If's output (``if x[n] > 0.5: loss += x[n]``), the one dtype of
    its branches' tensors (a branch that hands the number on keeps it: numpy's next ``+=``
    promotes it as the weak number it is). None where a tensor's dtype is not known, or two
    differ."""
    t = v.type
    if isinstance(t, TensorType) and t.dtype is not None:
        return t.dtype
    if v.node.kind != IF or depth > 8:
        return None
    k = v.node.outputs.index(v)
    found = {made_dtype(b.returns[k], depth + 1) for b in v.node.blocks
             if not is_number(b.returns[k].type)}
    return found.pop() if len(found) == 1 else None


def first_update_dtype(param: Value) -> str | None:
    """The one dtype of the tensors a step makes straight from the number it is given, through
    the ifs and inner loops that hand the number on (``loss + x[i, j]`` under an if in an inner
    loop; ``loss * 0.5`` after it in a second if reads the first's result, not the number):
    numpy's first update makes the weak number an array of that dtype, which later steps carry.
    None where there is none, or two."""
    found: set[str] = set()
    seen: set[int] = set()
    todo = [param]
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        for use in v.uses:
            user = use.node
            if user.kind == LOOP and use.index >= 2:  # carried into an inner loop
                todo.append(user.blocks[0].params[use.index - 1])
            elif user.kind == RETURN and user.owner is not None and user.owner.owner is not None:
                owner = user.owner.owner  # handed on by a branch (or a step) unchanged
                if owner.kind == IF:
                    todo.append(owner.outputs[use.index])
                elif owner.kind == LOOP and use.index >= 1:
                    todo.append(owner.outputs[use.index - 1])
            else:
                found.update(out.type.dtype for out in user.outputs
                             if isinstance(out.type, TensorType) and out.type.dtype is not None
                             and out.type.dtype != "bool")
    return found.pop() if len(found) == 1 else None


def is_weak(v: Value) -> bool:
    producer = v.node
    return bool(producer.attrs.get(WEAK_DTYPE)) and producer.inputs[2].node.kind == CONSTANT \
        and producer.inputs[2].node.attrs.get("value") is None
