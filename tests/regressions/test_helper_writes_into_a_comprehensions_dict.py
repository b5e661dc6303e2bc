"""A helper that updates the items of a dict in place (``d["w"] += ...``), given a dict a
comprehension made (``{k: np.zeros_like(v) for k, v in p.items()}``), was refused, naming the
compiler's own ``$dcomp1``, while the same dict written as a literal compiled: the
comprehension's puts counted as other uses of the dict. A put of a new array nothing else holds
is now counted as a literal's item is. A put of an array another name holds stays refused (the
compiled code would not follow the write into it to that name: numpy's ``z`` changes)."""

from typing import Dict, List

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def _accumulate(d: Dict[str, Tensor], x: Tensor):
    d["w"] += np.outer(x, x)
    return x.sum()


def _accumulate_first(items: List[Tensor], x: Tensor):
    items[0] += np.outer(x, x)
    return x.sum()


def from_a_comprehension(p: Dict[str, Tensor], x: Tensor):
    d = {k: np.zeros_like(v) for k, v in p.items()}
    return _accumulate(d, x)


def from_a_literal(p: Dict[str, Tensor], x: Tensor):
    d = {"w": np.zeros_like(p["w"])}
    return _accumulate(d, x)


def from_a_list_comprehension(p: Dict[str, Tensor], x: Tensor):
    items = [np.zeros_like(v) for v in p.values()]
    return _accumulate_first(items, x)


def put_of_a_named_array(x: Tensor):
    z = np.zeros((3, 3))
    d = {}
    d["w"] = z
    s = z.sum()
    _accumulate(d, x)
    return z * 1.0, s


def put_of_a_named_array_read_in_a_loop(x: Tensor):
    z = np.zeros((3, 3))
    d = {}
    d["w"] = z
    y = z
    for i in range(2):
        y = z * 1.0
        _accumulate(d, x)
    return y, z * 1.0


@pytest.mark.parametrize("fn", [from_a_comprehension, from_a_literal,
                                from_a_list_comprehension])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_fresh_container_a_helper_updates(fn, dtype):
    p = {"w": np.ones((3, 3), dtype)}
    x = np.arange(3.0, dtype=dtype)
    got, want = script(fn)(p, x), fn(p, x)
    np.testing.assert_allclose(got, want)
    np.testing.assert_array_equal(p["w"], np.ones((3, 3)))


@pytest.mark.parametrize("fn", [put_of_a_named_array, put_of_a_named_array_read_in_a_loop])
def test_a_put_of_an_array_another_name_holds_is_refused(fn):
    with pytest.raises(ScriptError, match="writes into 'd' in place"):
        script(fn)(np.arange(3.0))


def test_the_refusal_names_the_comprehension():
    def returned(p: Dict[str, Tensor], x: Tensor):
        d = {k: np.zeros_like(v) for k, v in p.items()}
        _accumulate(d, x)
        return d

    with pytest.raises(ScriptError, match="writes into the dict the comprehension makes"):
        script(returned)({"w": np.ones((3, 3))}, np.arange(3.0))
