"""A list or dict holding one array twice, made where the item update could not see it: in the
branches of an ``if`` (or a conditional expression), by a helper that returns it (alone or in a
tuple), or named again through a tuple. numpy's ``l[1] += 1`` changes the array, seen at both
places; the compiled code stored a new array at ``l[1]`` alone, so ``l[0]`` read ``[0, 1, 2]``
for numpy's ``[1, 2, 3]``. The update now follows every name of the container (the storage
classes of the function and of the functions it calls) and every literal that made it: these are
refused, and containers each of whose places holds its own array still compile."""

from typing import Dict, List

import numpy as np
import pytest

from script import ScriptError, Tensor, script


# -- held twice: refused ------------------------------------------------------------------------
def built_by_a_conditional_expression(x: Tensor, c: bool):
    l = [x * 1.0] if c else [x * 2.0]
    l.append(l[0])
    l[1] += 1.0
    return l[0] * 1.0


def built_in_the_branches_of_an_if(x: Tensor, c: bool):
    if c:
        l = [x * 1.0]
    else:
        l = [x * 2.0]
    l.append(l[0])
    l[1] += 1.0
    return l[0] * 1.0


def _two_places(x: Tensor):
    a = x * 1.0
    return [a, a]


def returned_by_a_helper(x: Tensor, c: bool):
    l = _two_places(x)
    l[1] += 1.0
    return l[0] * 1.0


def _one_item(x: Tensor):
    return [x * 1.0]


def returned_by_a_helper_then_appended(x: Tensor, c: bool):
    l = _one_item(x)
    l.append(l[0])
    l[1] += 1.0
    return l[0] * 1.0


def _one_array_two_keys(x: Tensor):
    a = x * 1.0
    return {"a": a, "b": a}


def dict_returned_by_a_helper(x: Tensor, c: bool):
    d = _one_array_two_keys(x)
    d["b"] += 1.0
    return d["a"] * 1.0


def appended_through_a_tuple_element(x: Tensor, c: bool):
    l = [x * 1.0]
    t = (l, 0)
    m = t[0]
    m.append(m[0])
    l[1] += 1.0
    return l[0] * 1.0


def _list_and_count(x: Tensor):
    a = x * 1.0
    return [a, a], 2


def in_a_tuple_a_helper_returned(x: Tensor, c: bool):
    t = _list_and_count(x)
    l = t[0]
    l[1] += 1.0
    return l[0] * 1.0


def unpacked_from_a_helper(x: Tensor, c: bool):
    l, n = _list_and_count(x)
    l[1] += 1.0
    return l[0] * 1.0


REFUSED = [built_by_a_conditional_expression, built_in_the_branches_of_an_if, returned_by_a_helper,
           returned_by_a_helper_then_appended, dict_returned_by_a_helper,
           appended_through_a_tuple_element, in_a_tuple_a_helper_returned, unpacked_from_a_helper]


@pytest.mark.parametrize("fn", REFUSED, ids=lambda f: f.__name__)
def test_numpy_changes_the_array_at_two_places(fn):
    """The programs are what the error says: numpy's update of ``l[1]`` is seen at ``l[0]``."""
    x = np.arange(3.0)
    np.testing.assert_array_equal(fn(x.copy(), True), x + 1.0)


@pytest.mark.parametrize("fn", REFUSED, ids=lambda f: f.__name__)
def test_an_update_of_an_array_held_twice_is_refused(fn):
    with pytest.raises(ScriptError, match=r"may also change other places of") as info:
        script(fn)(np.arange(3.0), True)
    assert "test_containers_from_branches_and_helpers.py" in str(info.value)
    assert "^" in str(info.value)


# -- each place holds its own array: compiles, with numpy's values ------------------------------
def new_arrays_in_both_branches(x: Tensor, c: bool):
    if c:
        l = [x * 1.0, x * 4.0]
    else:
        l = [x * 2.0, x * 3.0]
    l[1] += 1.0
    return l[0], l[1]


def maybe_empty_then_appended(x: Tensor, c: bool):
    hs = [x * 1.0] if c else []
    for t in range(3):
        hs.append(np.tanh(x * float(t)))
    hs[-1] += 1.0
    return hs


def _zeros_like_each(params: Dict[str, Tensor]):
    return {k: np.zeros_like(v) for k, v in params.items()}


def gradients_from_a_helper(x: Tensor, c: bool):
    params = {"W": x * 2.0, "b": x + 1.0}
    grads = _zeros_like_each(params)
    for k in params:
        grads[k] += params[k] * x
    grads["W"] += 1.0
    return grads["W"], grads["b"]


def _zeros_list(params: List[Tensor]):
    return [np.zeros_like(p) for p in params]


def list_from_a_helper_then_appended(x: Tensor, c: bool):
    grads = _zeros_list([x, x * 2.0])
    grads.append(x * 3.0)
    for i in range(3):
        grads[i] += x * float(i)
    return grads


def rebound_to_a_new_literal_each_step(x: Tensor, c: bool):
    l = [x * 0.0]
    for t in range(3):
        l = [x * float(t)]
        l[0] += 1.0
    return l[0]


def in_a_tuple_then_unpacked(x: Tensor, c: bool):
    state = ([x * 1.0, x * 2.0], 0)
    l, n = state
    l[0] += 1.0
    return l


COMPILED = [new_arrays_in_both_branches, maybe_empty_then_appended, gradients_from_a_helper,
            list_from_a_helper_then_appended, rebound_to_a_new_literal_each_step,
            in_a_tuple_then_unpacked]


def _leaves(v):
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in _leaves(v[k])]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _leaves(item)]
    return [v]


@pytest.mark.parametrize("c", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", COMPILED, ids=lambda f: f.__name__)
def test_places_of_their_own_compile(fn, dtype, c):
    x = np.linspace(-1.0, 1.0, 6).astype(dtype).reshape(2, 3)
    want, got = _leaves(fn(x.copy(), c)), _leaves(script(fn)(x.copy(), c))
    assert len(want) == len(got)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-6)
        assert g.dtype == w.dtype
