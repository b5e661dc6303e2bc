"""Array layouts as the native loop plans them: (shape, byte strides, itemsize)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fuser.cpu.loop.body import int_list
from ir.types import TensorType

# -- layouts ---------------------------------------------------------------------------------------
Layout = tuple[tuple[int, ...], tuple[int, ...], int]
"""(shape, byte strides, itemsize)"""


def c_layout(t: TensorType) -> Layout:
    item = np.dtype(t.dtype).itemsize
    shape = tuple(int(d) for d in t.shape)  # type: ignore[union-attr]
    strides, acc = [], item
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return shape, tuple(reversed(strides)), item


def gemm_operand(lay: Layout) -> tuple[int, int] | None:
    """(transposed?, leading dimension) of a matrix for row-major CBLAS, or None."""
    (rows, cols), (rs, cs), item = lay
    if rs % item or cs % item:
        return None
    rs, cs = rs // item, cs // item
    if cols <= 1 or cs == 1:
        ld = rs if rows > 1 else max(cols, 1)
        if ld >= max(cols, 1):
            return 0, ld
    if rows <= 1 or rs == 1:
        ld = cs if cols > 1 else max(rows, 1)
        if ld >= max(rows, 1):
            return 1, ld
    return None


def as_matrix(lay: Layout, row: bool) -> Layout:
    """A vector operand of a matmul as the matrix numpy multiplies: a row (1, k) on the left,
    a column (k, 1) on the right (a matrix stays as it is)."""
    shape, strides, item = lay
    if len(shape) != 1:
        return lay
    (k,), (s,) = shape, strides
    return ((1, k), (s * k, s), item) if row else ((k, 1), (s, s * k), item)


class Unplannable(Exception):
    """These layouts cannot run natively (the loop runs as Python for them)."""


def dense(shape: tuple[int, ...], strides: tuple[int, ...], item: int) -> bool:
    """Whether an array of ``shape`` and byte ``strides`` is one C-ordered block."""
    acc = item
    for d, s in zip(reversed(shape), reversed(strides)):
        if d > 1 and s != acc:
            return False
        acc *= d
    return True


def slot_prefix(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int] | None:
    """The dims before a slot's axis as one (count, byte stride), or None when they do not
    collapse to one stride."""
    count, stride = 1, 0
    for d, s in zip(shape, strides):
        if d == 1:
            continue
        if count > 1 and stride != s * d:
            return None
        count, stride = count * d, s
    return count, stride


def block_copy(buf: Layout, ax: int, value: Layout) -> bool:
    """Whether a slot write of ``value`` into ``buf`` along axis ``ax`` is a copy of dense
    blocks (else it is copied element by element)."""
    shape, strides, item = buf
    return (slot_prefix(shape[:ax], strides[:ax]) is not None
            and dense(shape[ax + 1:], strides[ax + 1:], item) and dense(*value))


def broadcast(lay: Layout, shape: tuple[int, ...]) -> Layout:
    """``lay`` broadcast to ``shape``: stride 0 along the axes it repeats."""
    own, strides, item = lay
    lead = len(shape) - len(own)
    return shape, tuple(0 if a < lead or own[a - lead] != d else strides[a - lead]
                        for a, d in enumerate(shape)), item


def unit_axes(lay: Layout, shape: tuple[int, ...]) -> Layout:
    """``lay`` reshaped to ``shape`` when that only adds or drops axes of length 1 (a view with
    the other axes' strides); ``Unplannable`` otherwise."""
    own, strides, item = lay
    kept = [(d, s) for d, s in zip(own, strides) if d != 1]
    if [d for d, _ in kept] != [d for d in shape if d != 1]:
        raise Unplannable
    rest = iter(kept)
    return shape, tuple(0 if d == 1 else next(rest)[1] for d in shape), item


def list_item_layouts(prog: Any, items_at: tuple, ints: dict[Any, int]) -> dict[Any, Layout]:
    """Per list from outside a loop (``LoopProgram`` ``prog``) whose items the steps read, their
    layout: C-ordered, or the strides of the list's first item (``items_at``, per free list;
    views ``x[:, t, :]`` of one array), which the loop checks every item against; and the
    ints that check reads (dtype, dims, strides)."""
    found: dict[Any, Layout] = {}
    for lst in prog.free_lists:
        if prog.roles[lst] in ("append", "store") or int_list(lst):
            continue
        if prog.roles[lst] == "keys":
            ints[("dict low", lst)] = 0  # each call's (``dict_lows``)
        e = prog.item_types[lst]
        shape, strides, item = c_layout(e)
        at = items_at[prog.free_lists.index(lst)]
        if at is not None and len(at) == len(strides):
            strides = at
        found[lst] = (shape, strides, item)
        ints[("descr", lst)] = id(np.dtype(e.dtype))
        for d, (size, stride) in enumerate(zip(shape, strides)):
            ints[("item dim", lst, d)], ints[("item stride", lst, d)] = size, stride
    return found
