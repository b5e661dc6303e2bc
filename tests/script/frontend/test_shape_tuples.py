"""Shapes mixed with tuples as in numpy: ``x.shape == (2, 3)`` (decided when the function is
specialized, so only the branch taken compiles), ``(n, 2) + x.shape[2:]``, ``!=``."""

import numpy as np
import pytest

from script import Tensor, script


def by_shape(x: Tensor):
    if x.shape == (2, 3):
        return x * 2.0
    return x.sum(axis=0)  # a 1-D x has no axis 1: this branch must not compile for it


def by_tail(x: Tensor, n: int):
    if x.shape[1:] != (n, 4):
        return x * 0.0
    return x + 1.0


def grown(x: Tensor):
    n = x.shape[0]
    return np.zeros((n, 2) + x.shape[2:]) + x.sum()


def grown_after(x: Tensor):
    return np.ones(x.shape[:1] + (5,))


def of_list(sizes: list[int]):
    return sizes == (2, 3)


@pytest.mark.parametrize("fn,args", [
    (by_shape, (np.ones((2, 3)),)), (by_shape, (np.ones((2, 3, 4)),)),
    (by_shape, (np.ones(3),)), (by_shape, (np.ones((3, 2)),)),
    (by_tail, (np.ones((2, 3, 4)), 3)), (by_tail, (np.ones((2, 3, 4)), 2)),
    (by_tail, (np.ones((2, 3)), 3)),
    (grown, (np.ones((3, 4, 5, 6)),)), (grown, (np.ones(3),)), (grown_after, (np.ones((2, 3)),)),
    (of_list, ([2, 3],)), (of_list, ([2],)), (of_list, ([2, 4],)),
])
def test_compiled_equals_numpy(fn, args):
    got, want = script(fn)(*args), fn(*args)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(got, want)


def test_the_shape_test_is_decided_per_specialization():
    graph = str(script(by_shape).graph_for(np.ones((2, 3))))
    assert "prim::If" not in graph and "tensor::sum" not in graph
