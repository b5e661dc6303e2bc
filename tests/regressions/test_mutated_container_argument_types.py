"""A list or dict argument was specialized to its items' types (``Double(3, 3)[]`` for a list of
one 3x3 array) even when the function stores other values into it. ``ws.append(x)`` with a
(2, 3) ``x`` then read back as a 3x3 array: ``ws[-1].shape[0]`` compiled to 3 (eager: 2), and
``x @ ws[0] + ws[-1]`` was rejected as "shapes (2, 3), (3, 3) do not broadcast". An argument the
function mutates (or lets another value alias) keeps its declared item type now; one it only
reads is still specialized.
"""

from __future__ import annotations

import copy
from typing import Dict, List

import numpy as np
import pytest

from script import Tensor, script


def append_then_read(x: Tensor, ws: List[Tensor]) -> int:
    ws.append(x)
    return ws[-1].shape[0]


def store_then_read(x: Tensor, ws: List[Tensor]) -> int:
    ws[0] = x
    return ws[0].shape[0] + len(ws)


def alias_then_append(x: Tensor, ws: List[Tensor]) -> int:
    other = ws
    other.append(x)
    return ws[-1].shape[0]


def append_then_add(x: Tensor, ws: List[Tensor]) -> Tensor:
    ws.append(x)
    return x @ ws[0] + ws[-1]


def append_to_a_slice(x: Tensor, ws: List[Tensor]) -> int:
    copied = ws[:]
    copied.append(x)
    return copied[-1].shape[0]


def store_in_dict(x: Tensor, d: Dict[str, Tensor]) -> int:
    d["a"] = x
    return d["a"].shape[0]


def only_reads(x: Tensor, ws: List[Tensor]) -> Tensor:
    return x @ ws[0]


@pytest.mark.parametrize("fn, container", [
    (append_then_read, [np.ones((3, 3))]),
    (store_then_read, [np.ones((3, 3))]),
    (alias_then_append, [np.ones((3, 3))]),
    (append_then_add, [np.ones((3, 3))]),
    (append_to_a_slice, [np.ones((3, 3))]),
    (store_in_dict, {"a": np.ones((3, 3))}),
], ids=lambda v: getattr(v, "__name__", "container"))
def test_mutated_argument_reads_what_was_stored(fn, container):
    x = np.arange(6.0).reshape(2, 3)
    want = fn(x, copy.copy(container))
    got = script(fn)(x, copy.copy(container))
    np.testing.assert_array_equal(got, want)


def test_read_only_list_keeps_its_item_shapes():
    f = script(only_reads)
    x, ws = np.ones((2, 3)), [np.ones((3, 4))]
    np.testing.assert_array_equal(f(x, ws), only_reads(x, ws))
    graph = f.specialization(x, ws).graph
    assert "Double(3, 4)[]" in str(graph)
