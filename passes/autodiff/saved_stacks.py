"""Saved stacks: a value the backward of a loop reads once per step is saved as one stacked
array instead of a list of the steps' arrays.

Differentiating a loop saves each step's value the backward needs on a list
(``context._save_per_iteration``): the forward appends to it, the backward reads item ``t`` in
its reverse step ``t``::

    forward:                                     backward:
      %v_saved = prim::ListConstruct()             prim::Loop(%100, %true)
      prim::Loop(%100, %true)                        block0(%k):
        block0(%i):                                    %t = tensor::sub(%99, %k)
          prim::ListAppend(%v_saved, %v)               %v = prim::ListIndex(%v_saved, %t)
      return (..., %v_saved)

A native loop hands such a list back as one view object per step (an LSTM layer saves seven
values: 700 views a call at T=100, ~90 us of a 1 ms training forward at B=8, H=64). Here the
forward returns ``tensor::stack(%v_saved, 0)`` and the backward reads ``tensor::select(%v_saved,
0, %t)``: the executor's ``stack-to-slots`` then writes each step's value into one preallocated
array as the step makes it, which the backward's native loop reads by pointer arithmetic.

Conditions: the list is made empty in the block of a counted loop (a constant trip count of at
least one, so ``stack`` never sees an empty list) whose body appends to it once, at its top
level, an array a tensor op of the body makes, or a state the loop carries (not a view, not an
``if``'s result, which may be a placeholder where only one branch makes the value). A step's
kernel writes an array it makes into its slot as it computes it; a carried state is copied into
its slot, one copy a step, which the backward then saves: its weight gradient's product reads
the stack of the states ``h_t`` itself (``batch_accumulation``) where it copied each step's
``h_t`` into a stack of its own. Carried states up to ``CARRIED_MAX_BYTES`` a step only: an
LSTM layer at T=100, B=8, H=64 took 0.76 ms a training forward on one thread instead of 0.81
(200 view objects fewer), but at B=64, H=512 the copies made the forward 5% slower. The
forward uses the list only there and in its return, once; the backward only reads it with
``prim::ListIndex``; the item's dtype and shape are fully known (so the items stack) and it is
not on CUDA (``stack-to-slots`` leaves those, and a stack would be a copy a list does not
need).
It runs on the pair after the backward's cleanup and before the forward's pipeline."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ir.core import Value
from ir.kinds import LIST_APPEND, LIST_CONSTRUCT, LIST_INDEX, LOOP, SELECT, STACK
from ir.registry import lookup
from ir.types import TensorType
from passes.licm import constant_trip_count

CARRIED_MAX_BYTES = 4096
"""The largest carried state saved as a stack (bytes a step): a list of them costs a view object
a step, a stack a copy a step, and the copy grows with the state. Measured in one process against
lists (LSTM layer, T=100, float32, default threads, medians of alternated calls; forward /
forward and backward): B=8, H=64 (2 KB) 0.93x / 0.96x (0.93x / 0.97x on one thread); 4 KB
(B=8, H=128; B=16, H=64) 0.997-1.018x / 0.977-0.994x; 8 KB 1.005x / 1.010x; 32 KB 1.014x /
0.985x; 128 KB (B=64, H=512) 1.054x / 1.012x."""


def _stacked_type(out: Value, param: Value) -> TensorType | None:
    """The stack's type when forward output ``out`` is a saved per-step list the backward
    reads as ``param`` and the conditions hold, else None."""
    lst = out.node
    if lst.kind != LIST_CONSTRUCT or lst.inputs or lst.owner is None \
            or lst.owner.owner is not None:
        return None
    uses = [u.node for u in out.uses]
    stores = [n for n in uses if n.kind == LIST_APPEND]
    if len(uses) != 2 or len(stores) != 1 or uses.count(lst.owner.return_node) != 1:
        return None
    store = stores[0]
    body = store.owner
    loop = body.owner if body is not None else None
    if (loop is None or loop.kind != LOOP or body is not loop.blocks[0]
            or loop.owner is not lst.owner or store.inputs[0] is not out):
        return None
    value = store.inputs[1]
    op = lookup(value.node.kind)
    carried = value.node is body.param_node and value is not body.params[0]
    if not carried and (value.node.owner is not body or op is None or op.is_view
                        or not value.node.kind.startswith("tensor::")):
        return None  # (a view, an if's result, which may be a placeholder one branch
        # returns in place of a value only the other makes: not an array the step makes)
    trips = constant_trip_count(loop)
    t = value.type
    if not trips or not (isinstance(t, TensorType) and t.dtype is not None
                         and t.shape is not None and all(type(d) is int for d in t.shape)
                         and t.device != "cuda"):
        return None
    if carried and np.dtype(t.dtype).itemsize * math.prod(t.shape) > CARRIED_MAX_BYTES:
        return None
    if not param.uses or any(u.node.kind != LIST_INDEX or u.index != 0 for u in param.uses):
        return None
    return TensorType(t.dtype, (trips, *t.shape), t.device)


def stack_saved_lists(grad: Any) -> bool:
    """Save each per-step list of ``grad`` (a ``Gradient``) that qualifies as its stack."""
    first = grad.num_outputs
    forward, backward = grad.forward, grad.backward
    changed = False
    for k in range(grad.num_saved):
        out = forward.outputs[first + k]
        param = backward.inputs[first + k]
        stacked = _stacked_type(out, param)
        if stacked is None:
            continue
        with forward.inserting_before(forward.block.return_node):
            axis = forward.constant(0)
            stack = forward.insert(STACK, [out, axis], [stacked], names=[out.name])
        forward.block.return_node.set_input(first + k, stack.output)
        param.type = stacked
        for use in list(param.uses):
            read = use.node
            with backward.inserting_before(read):
                zero = backward.constant(0)
                select = backward.insert(SELECT, [param, zero, read.inputs[1]],
                                         [read.output.type])
            read.output.replace_all_uses_with(select.output)
            read.erase()
        changed = True
    return changed


__all__ = ["stack_saved_lists"]
