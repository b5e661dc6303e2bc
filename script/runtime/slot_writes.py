"""Which fusion-group outputs a kernel can write straight into the array that stores them.

A reverse loop copies each step's result into a stacked buffer (``tensor::write_slot(buf, axis,
t, o)``). When nothing can observe the slot before the write, the code generator hands the
kernel ``buf[t]`` as the output's storage (``Kernel.into``) and emits no copy; ``slot_writes``
decides when that is safe. Likewise an update of a caller's array (``p -= lr * g``, which
``fuser.updates`` makes part of the kernel computing its value) is computed in ``p`` itself
(``update_writes``).
"""

from __future__ import annotations

import ir
from ir.core import Block, Node, Value
from ir.ops.elementwise import IN_PLACE_ATTR
from ir.types import NONE, STR, TensorType, is_number
from script.runtime.spellings import NUMPY_CODE


def slot_writes(group: Node) -> dict[int, Node]:
    """The ``write_slot`` nodes a fusion group's outputs can be computed in place of, by output.

    Output ``o`` qualifies when its one ``write_slot`` use follows the group in its block, into a
    ``tensor::empty`` buffer at a constant axis; ``o`` and values that may be views of it are read
    only by ops of that block (not returned, carried, put in a container or read in a nested
    block); and no other node from the outermost construct holding the group to the write uses
    the buffer, none before it but ``write_slot`` s: nothing sees the slot change early, writes
    it while ``o`` is live or hands the kernel a view of it."""
    found: dict[int, Node] = {}
    for k, o in enumerate(group.outputs):
        write = _slot_write_of(group, o)
        if write is not None and all(write.inputs[0] is not f.inputs[0] for f in found.values()):
            found[k] = write
    return found


def _slot_write_of(group: Node, o: Value) -> Node | None:
    writes = [u for u in o.uses if u.node.kind == "tensor::write_slot"]
    if len(writes) != 1 or writes[0].index != 3:
        return None
    write = writes[0].node
    buf, axis, idx, _ = write.inputs
    block = group.owner
    if write.owner is not block or not group.is_before(write):
        return None
    if not (axis.is_constant and type(axis.constant) is int and axis.constant >= 0):
        return None
    if buf.node.kind != "tensor::empty" or buf is o or idx is o:
        return None
    if any(v.node.owner is block and v.node.kind != "prim::Param" and not v.node.is_before(group)
           for v in (buf, idx)):  # the slot is taken before the call
        return None
    if not (_confined(o, block, write) and _only_write_of(buf, group, write)):
        return None
    return write


def _fresh_result(node: Node) -> bool:
    """Whether ``node``'s tensor outputs are new arrays, never views of its inputs."""
    if node.kind == "tensor::matmul":
        return True
    if node.attrs.get(IN_PLACE_ATTR):
        return False  # its result is its first operand
    op = ir.registry.lookup(node.kind)
    return node.kind in NUMPY_CODE and op is not None and op.is_elementwise


def _confined(value: Value, block: Block, write: Node) -> bool:
    """Whether every node reading ``value`` or a possible view of it, but ``write``, is an op of
    ``block`` itself (not a nested block, the block's results, a container op, or an op writing
    into it)."""
    for use in value.uses:
        n = use.node
        if n is write:
            continue
        if n.owner is not block or n.blocks or n.kind.startswith("prim::"):
            return False
        if ir.registry.WRITES in ir.registry.effects_on_input(n, use.index) or (
                n.attrs.get(IN_PLACE_ATTR) and use.index == 0):  # a += b stores into a
            return False
        if not _fresh_result(n) and not all(_confined(out, block, write) for out in n.outputs):
            return False
    return True


def _only_write_of(buf: Value, group: Node, write: Node) -> bool:
    """Whether ``buf`` is used, besides ``write``, only by ``write_slot`` s before the outermost
    node holding ``group`` in ``buf``'s block, and by anything after the one holding ``write``."""
    home = buf.node.owner
    first, last = group.ancestor_in(home), write.ancestor_in(home)
    if first is None or last is None:
        return False
    for use in buf.uses:
        if use.node is write:
            continue
        at = use.node.ancestor_in(home)
        if at is None or at is first or at is last:
            return False
        if at.is_before(first):
            if use.node.kind != "tensor::write_slot" or use.index != 0:
                return False
        elif at.is_before(last):
            return False
    return True


def update_writes(group: Node) -> dict[int, Node]:
    """The ``write_into`` nodes a fusion group's outputs can be computed in place of, by output:
    a whole-array write ``dst[...] = o`` (``fuser.updates`` makes ``dst op= v`` one) of output
    ``o`` of exactly ``dst``'s type, its one use, following the group in its block with nothing
    between them but arithmetic on numbers, of a group of elementwise ops alone (each output
    element reads the inputs at its own position, so reading ``dst`` where it is being written
    reads what numpy's update reads). The kernel is handed ``dst`` as that output's storage
    (``Kernel.into``) unless another input shares memory with it when it runs
    (``overlap_checks``)."""
    if not all(_elementwise(n) for n in group.subgraph.nodes()):
        return {}
    found: dict[int, Node] = {}
    for k, o in enumerate(group.outputs):
        if len(o.uses) != 1 or o.uses[0].index != 1:
            continue
        write = o.uses[0].node
        if write.kind != "tensor::write_into" or write.owner is not group.owner:
            continue
        dst, _, op, index = write.inputs
        if not (op.is_constant and op.constant == "") or \
                not (index.is_constant and index.constant in ("...", ":")):
            continue
        t = dst.type
        if not (isinstance(t, TensorType) and t == o.type and t.shape and
                t.device != "cuda") or any(dst is f.inputs[0] for f in found.values()):
            continue
        if _numbers_between(group, write):
            found[k] = write
    return found


def overlap_checks(group: Node, write: Node) -> list[Value]:
    """The array inputs of ``group`` that may share memory with the array ``write`` writes into
    without being it: each one is compared with it when the group runs (a fresh result of an op
    of this graph never is)."""
    dst = write.inputs[0]
    return [v for v in dict.fromkeys(group.inputs) if isinstance(v.type, TensorType) and
            v is not dst and not _fresh_result(v.node) and v.node.kind != "prim::FusionGroup"]


def _elementwise(node: Node) -> bool:
    if node.kind == "prim::Constant":
        return True
    op = ir.registry.lookup(node.kind)
    return op is not None and op.is_elementwise and not node.blocks


def _numbers_between(group: Node, write: Node) -> bool:
    """Whether every node between ``group`` and ``write`` (in their block) computes on numbers
    alone: none can read or write the array the group is to write early."""
    node = group.next
    while node is not None and node is not write:
        if node.blocks or any(not is_number(v.type) and v.type not in (STR, NONE)
                              for v in (*node.inputs, *node.outputs)):
            return False
        node = node.next
    return node is write
