"""Item types of the lists and dicts a function builds for itself.

A list or dict made in the function (``hs = {}``, ``out = []``, ``l = [x]``) whose items only the
function's own stores put there gets the join of everything stored into it as its item type (one
dtype, one rank, each dimension kept where all agree), loops included, so reads of it
(``hs[t - 1]``, ``out[-1]``) have a known dtype and shape. Stores of different dtypes or ranks, and
a container something else may store into (another list keeping it), keep plain ``Tensor`` items.
"""

from __future__ import annotations

from typing import Dict, List

import numpy as np
import pytest

from ir.types import INT, ListType, TensorType, TupleType
from passes.shape_prop import specialize
from script import Tensor, script
from script.runtime.pipelines import run_pipeline
from tests.gradcheck import check_vjp
from tests.helpers import T, assert_same


def _read_types(fn, *types) -> list:
    """The types of every list/dict item read in ``fn``'s graph (helpers inlined, as a call
    compiles it) specialized to ``types``."""
    g = script(fn).graph.clone()
    run_pipeline(g, "inline")
    specialize(g, list(types))
    return [n.output.type for n in g.walk()
            if n.kind in ("prim::ListIndex", "prim::DictGetItem", "prim::ListPop")]


# -- programs -----------------------------------------------------------------------------------


def dict_by_step(x: Tensor, h0: Tensor, W: Tensor, U: Tensor) -> Tensor:
    hs = {}
    hs[-1] = np.copy(h0)
    for t in range(x.shape[0]):
        hs[t] = np.tanh(np.dot(W, x[t]) + np.dot(U, hs[t - 1]))
    total = np.zeros_like(hs[0])
    for t in range(x.shape[0]):
        total = total + hs[t] * hs[t - 1]
    return total


def list_by_append(x: Tensor, h0: Tensor, W: Tensor, U: Tensor) -> Tensor:
    out = []
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(np.dot(W, x[t]) + np.dot(U, h))
        out.append(h)
    return out[-1] * out[0]


def tuples_read_before_stored(x: Tensor, h0: Tensor, W: Tensor, U: Tensor) -> Tensor:
    nodes = []
    for t in range(x.shape[0]):
        if t == 0:
            h = np.tanh(np.dot(W, x[t]) + h0)
            c = h * 2.0
        else:
            h = np.tanh(np.dot(W, x[t]) + np.dot(U, nodes[t - 1][0]))
            c = nodes[t - 1][1] * 0.5 + h
        nodes.append((h, c))
    return nodes[-1][0] * nodes[-1][1]


def built_with_items(x: Tensor, y: Tensor) -> Tensor:
    l = [x, y]
    return l[0] + l[1][0]


def mixed_dtypes(x: Tensor) -> Tensor:
    l = [x]
    l.append(x.astype(np.float64))
    return l[0] + l[1]


def mixed_ranks(x: Tensor) -> Tensor:
    d = [x]
    d.append(x[0])
    return d[0] * d[1]


def keys_of_mixed_ranks(x: Tensor, k: int) -> Tensor:
    d = {}
    d[0] = x
    d[1] = x[0]
    return d[0] * d[1]


def a_key_not_constant(x: Tensor, k: int) -> Tensor:
    d = {}
    d[0] = x
    d[k] = x[0]
    return d[0] * d[1]


def kept_in_another_list(x: Tensor) -> Tensor:
    items = [x * 2.0]
    nested = [items]
    nested[0].append(x[0])
    return items[-1] * 3.0


def push(l: List[Tensor], v: Tensor) -> None:
    l.append(v)


def filled_by_a_helper(x: Tensor) -> Tensor:
    l = [x]
    push(l, x[0])
    return l[-1] + l[0]


def filled_by_a_helper_alike(x: Tensor) -> Tensor:
    l = [x]
    push(l, np.sin(x))
    return l[-1] * l[0]


def aliased_under_two_names(x: Tensor) -> Tensor:
    hs = {}
    other = hs
    hs[0] = x
    other[1] = x[0]
    return hs[1] + hs[0]


def made_in_each_step(x: Tensor) -> Tensor:
    total = x * 0.0
    for t in range(3):
        out = [x * float(t)]
        if t == 1:
            out.append(x[:, :1])
        total = total + out[-1]
    return total


def appended_under_a_branch(x: Tensor) -> Tensor:
    out = [x]
    for t in range(4):
        if t % 2 == 0:
            out.append(np.tanh(out[-1]))
        else:
            out.append(out[-1][:1] * 2.0)
    return out[-1] + out[1]


def dict_literal(x: Tensor) -> Tensor:
    d: Dict[str, Tensor] = {"a": x, "b": x * 2.0}
    d["c"] = d["a"] + d["b"]
    return d["c"]


# -- types --------------------------------------------------------------------------------------


def test_a_dict_by_step_reads_back_what_was_stored():
    types = _read_types(dict_by_step, T("float32", 5, 3), T("float32", 4), T("float32", 4, 3),
                        T("float32", 4, 4))
    assert types and all(t == T("float32", 4) for t in types), types


def test_a_list_appended_in_a_loop_reads_back_its_items_type():
    types = _read_types(list_by_append, T("float64", 5, 3), T("float64", 4),
                        T("float64", 4, 3), T("float64", 4, 4))
    assert types and all(t == T("float64", 4) for t in types), types


def test_tuples_read_in_a_loop_before_the_store_after_them_are_typed():
    types = _read_types(tuples_read_before_stored, T("float64", 5, 3), T("float64", 4),
                        T("float64", 4, 3), T("float64", 4, 4))
    assert types and all(t == TupleType((T("float64", 4),) * 2) for t in types), types


def test_items_of_different_sizes_keep_the_dimensions_they_share():
    types = _read_types(built_with_items, T("float64", 3, 4), T("float64", 5, 4))
    assert types and all(t == TensorType("float64", (None, 4)) for t in types), types


def test_items_of_another_length_along_an_axis_join_to_an_unknown_dimension():
    types = _read_types(appended_under_a_branch, T("float64", 2, 3))
    assert types and all(t == TensorType("float64", (None, 3)) for t in types), types


def test_a_dict_literal_with_an_annotation_reads_back_its_items_type():
    types = _read_types(dict_literal, T("float32", 2, 3))
    assert types and all(t == T("float32", 2, 3) for t in types), types


def test_each_constant_key_of_a_dict_reads_what_was_stored_under_it():
    types = _read_types(keys_of_mixed_ranks, T("float32", 2, 3), INT)
    assert types == [T("float32", 2, 3), T("float32", 3)], types
    # `other = hs` names the same dict: its stores are followed as well
    types = _read_types(aliased_under_two_names, T("float32", 2, 3))
    assert types == [T("float32", 3), T("float32", 2, 3)], types
    x = np.ones((2, 3), np.float32)
    assert_same(script(aliased_under_two_names)(x), aliased_under_two_names(x))


@pytest.mark.parametrize("fn", [mixed_dtypes, mixed_ranks, kept_in_another_list,
                                filled_by_a_helper, a_key_not_constant])
def test_items_that_do_not_join_or_cannot_be_followed_stay_plain_tensors(fn):
    args = [T("float32", 2, 3)] + ([INT] if fn is a_key_not_constant else [])
    types = [t for t in _read_types(fn, *args) if not isinstance(t, ListType)]
    assert types
    for t in types:
        assert isinstance(t, TensorType)
        assert t.shape is None or t.dtype is None, t  # never both known


def test_a_helper_storing_alike_items_is_followed_once_inlined():
    types = _read_types(filled_by_a_helper_alike, T("float32", 2, 3))
    assert types and all(t == T("float32", 2, 3) for t in types), types


# -- results and gradients ------------------------------------------------------------------------


def _recurrence_args(dtype: str) -> tuple:
    r = np.random.default_rng(1)
    return tuple(r.standard_normal(s).astype(dtype) * 0.5
                 for s in ((6, 3), (4,), (4, 3), (4, 4)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", [dict_by_step, list_by_append, tuples_read_before_stored])
def test_compiled_recurrences_over_local_containers_match_numpy(fn, dtype):
    args = _recurrence_args(dtype)
    got, want = script(fn)(*args), fn(*args)
    assert got.dtype == want.dtype
    assert_same(got, want, rtol=1e-5 if dtype == "float32" else 1e-10)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", [built_with_items, mixed_dtypes, mixed_ranks,
                                kept_in_another_list, filled_by_a_helper,
                                filled_by_a_helper_alike, dict_literal,
                                aliased_under_two_names, made_in_each_step,
                                appended_under_a_branch])
def test_compiled_small_programs_match_numpy(fn, dtype):
    r = np.random.default_rng(2)
    args = (r.standard_normal((2, 3)).astype(dtype),)
    if fn is built_with_items:
        args = (*args, r.standard_normal((5, 3)).astype(dtype))
    got, want = script(fn)(*args), fn(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_same(got, want, rtol=1e-6)


@pytest.mark.parametrize("fn", [dict_by_step, list_by_append])
def test_gradients_through_a_recurrence_kept_in_a_local_container(fn):
    check_vjp(script(fn), _recurrence_args("float64"))
