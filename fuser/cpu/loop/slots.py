"""Values a native loop's kernel writes straight into the slot a ``write_slot`` stores them in.

A value the step makes lives in one of two buffers by step parity, and ``write_slot(buf, 0, i,
v)`` copies it into ``buf[i]`` (a ``memmove``): a layer's saved activations and the gradients of
its gates are written so, once a step each (``stack-to-slots``, ``slot-gradients``). At T=100,
B=64, H=512 the LSTM backward's gate gradients alone are 52 MB of such copies a call. Where the
kernel can write ``v`` in ``buf[i]`` itself, the copy goes:

- ``v`` is an output of one of the step's kernels that nothing else keeps beyond the step (not
  carried to the next step or out of the loop, not appended to a list, not a row range's own)
  and that the step only reads after (pure ops read it and its views: nothing writes into it,
  which would change the slot too);
- ``buf`` is an array made empty before the loop (``tensor::empty``: no other name can see
  it), written by this write only in the body and used after the loop only, along axis 0, with
  ``v``'s dtype and shape per slot;
- the index is the step counter, or a constant plus or minus it: a different slot each step, so
  nothing a step reads is overwritten (and computed before the kernel runs);
- per variant (``into``): the slot's layout is ``v``'s own, C-ordered, so the kernel's plan for
  ``v`` holds for the slot.

The write's bounds check then runs before the kernel (``builder._buffer``). Such a value has
no parity buffers: the call hands the code a placeholder in their places
(``runtime._UNTOUCHED``), which the code has no pointer of.
"""

from __future__ import annotations

from ir.core import Node, Value
from ir.kinds import ADD, EMPTY, WRITE_SLOT
from ir.registry import lookup
from ir.types import TensorType

INDEX_OPS = (ADD, "tensor::sub")


def _int_constant(v: Value) -> bool:
    return v.is_constant and type(v.constant) is int


def _steps_apart(idx: Value, counter: Value, before: Node) -> bool:
    """Whether ``idx`` is the counter, or a constant plus or minus it computed before
    ``before``."""
    if idx is counter:
        return True
    n = idx.node
    if n.kind not in INDEX_OPS or n.owner is not before.owner or not n.is_before(before):
        return False
    a, b = n.inputs
    return (a is counter and _int_constant(b)) or (b is counter and _int_constant(a))


def _only_read(v: Value, write: Node, kernels: dict) -> bool:
    """Whether the step only reads ``v`` and its views, by pure ops and kernels (and
    ``write``): nothing changes it in place after its slot is written."""
    seen, todo = set(), [v]
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        for u in x.uses:
            if (u.node is write and u.index == 3) or u.node in kernels:
                continue
            op = lookup(u.node.kind)
            if op is None or not op.is_pure or op.has_side_effects \
                    or not u.node.kind.startswith("tensor::"):
                return False  # (a tuple or list holding it: followed no further)
            if op.is_view:
                todo.extend(u.node.outputs)
    return True


def candidates(prog) -> dict[Value, Node]:  # noqa: ANN001 - a LoopProgram (no import cycle)
    """``v`` -> the ``write_slot`` its kernel may write it through (``prog``: a LoopProgram)."""
    loop = prog.node
    (body,) = loop.blocks
    carried = {prog.resolve(r) for r in prog.results}
    free = set(prog.free_arrays)
    found: dict[Value, Node] = {}
    for n in body:
        if n.kind != WRITE_SLOT:
            continue
        buf, axis, idx, value = n.inputs
        v = prog.resolve(value)
        if (v in found or v.node not in prog.kernels or v not in prog.produced
                or v in carried or v in prog.sequenced or v in prog.private
                or v in prog.partials or buf not in free or buf.node.kind != EMPTY
                or not (axis.is_constant and axis.constant == 0)
                or not _steps_apart(idx, prog.counter, v.node)):
            continue
        if any(u.node is not n and not (u.node.owner is loop.owner and loop.is_before(u.node))
               for u in buf.uses):
            continue  # read or written elsewhere in the body, or before the loop
        if not _only_read(v, n, prog.kernels):
            continue  # changed in place after the write (the slot keeps the old values)
        tb, tv = buf.type, v.type
        if not (isinstance(tb, TensorType) and isinstance(tv, TensorType) and tb.shape
                and tv.shape is not None and tuple(tb.shape[1:]) == tuple(tv.shape)
                and tb.dtype == tv.dtype):
            continue
        found[v] = n
    return found


def into(prog, layouts: dict) -> frozenset[Value]:  # noqa: ANN001 - a LoopProgram
    """The candidates (``prog.into_slots``) whose slot has their own layout in this variant."""
    out = []
    for v, n in prog.into_slots.items():
        shape, strides, item = layouts[n.inputs[0]]
        v_shape, v_strides, v_item = layouts[v]
        if (tuple(shape[1:]), tuple(strides[1:]), item) == (tuple(v_shape), tuple(v_strides),
                                                            v_item):
            out.append(v)
    return frozenset(out)
