"""Shapes mixed with tuples as in numpy: ``x.shape == (2, 3)`` (decided when the function is
specialized, so only the branch taken compiles), ``(n, 2) + x.shape[2:]``, ``!=``."""

from typing import List

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp


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


# -- a shape is a tuple, as numpy's, also where it leaves the function --------------------------
def returned(x: Tensor, n: int):
    N, H = x.shape[:2]
    return x.shape, (n, 2) + x.shape[1:], x.shape[1:] + x.shape[:1], [x.shape], N * H


def grown_in_place(x: Tensor):
    s = x.shape
    s += (1,)
    return s, x.shape


def either(x: Tensor, y: Tensor, first: bool):
    s = x.shape if first else y.shape
    s += (7,)
    return (1,) + s, s[-1]


def carried(x: Tensor, n: int):
    s = x.shape
    for i in range(n):
        s = s + (i,)
    return s


def with_a_list(x: Tensor):
    return x.shape + [1]


def same_kinds(got, want):
    assert type(got) is type(want), (got, want)
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same_kinds(g, w)
    else:
        assert got == want


@pytest.mark.parametrize("fn,args", [
    (returned, (np.ones((2, 3, 4)), 5)), (returned, (np.ones((2, 3)), 1)),
    (grown_in_place, (np.ones((2, 3)),)), (either, (np.ones((2, 3)), np.ones(4), True)),
    (either, (np.ones((2, 3)), np.ones(4), False)), (carried, (np.ones((2, 3)), 3)),
])
def test_shapes_are_tuples_as_in_numpy(fn, args):
    same_kinds(script(fn)(*args), fn(*args))


def test_a_shape_joined_with_a_list_raises_as_in_numpy():
    with pytest.raises(TypeError):
        with_a_list(np.ones(2))
    with pytest.raises(TypeError):
        script(with_a_list)(np.ones(2))


def grown_in_a_loop(x: Tensor):
    s = x.shape
    out: List[int] = []
    for i in range(3):
        out += [i]
        s += (i,)  # a shape is rebound each step (a tuple), the list extended in place
    return s, out


def shifted_in_a_loop(x: Tensor):
    s = x.shape
    for i in range(2):
        s = s[1:]
        s += (i,)
    return s


def grown_in_a_branch(x: Tensor, c: bool):
    s = x.shape
    if c:
        s += (1,)
    return s


@pytest.mark.parametrize("fn, args", [
    (grown_in_a_loop, ()), (shifted_in_a_loop, ()), (grown_in_a_branch, (True,)),
    (grown_in_a_branch, (False,))])
def test_a_shape_grown_in_place_is_rebound_as_a_tuple(fn, args):
    x = np.ones((2, 3))
    got, want = script(fn)(x, *args), fn(x, *args)
    assert got == want and type(got) is type(want)


def item_grown(x: Tensor):
    shapes = [x.shape, x.shape[1:]]
    s = shapes[0]
    s += (1,)  # a tuple: rebound, shapes[0] unchanged
    return s, shapes, shapes[1] == (3,)


def unpacked_grown(x: Tensor):
    shapes = [x.shape, x.shape]
    a, b = shapes
    a += (1,)
    return a, b, shapes


def item_grown_in_a_loop(x: Tensor):
    shapes = [x.shape, x.shape[1:]]
    s = shapes[1]
    for i in range(2):
        s += (i,)
    return s, shapes


def reshaped_by_a_grown_item(x: Tensor):
    shapes = [x.shape, x.shape[1:]]
    s = shapes[0]
    s += (1,)
    return np.tanh(x.reshape(s)) * 2.0


def literal_item_grown(x: Tensor):
    lists = [[1, 2], [3]]
    s = lists[0]
    s += [5]  # a list: extended in place, lists[0] sees it
    return lists, s


def argument_item_grown(lists: List[List[int]]):
    s = lists[0]
    s += [5]  # an argument's int lists are lists: extended in place
    return lists


def item_of_either(x: Tensor, k: int):
    items = [[1, 2], x.shape]
    s = items[k]  # a list or a shape, by k
    s += (7,)
    return s


def item_after_an_append(x: Tensor):
    shapes = [x.shape]
    shapes.append([4, 5])
    s = shapes[-1]
    s += [1]
    return s, shapes


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fn", [item_grown, unpacked_grown, item_grown_in_a_loop,
                                literal_item_grown, reshaped_by_a_grown_item])
def test_growing_an_item_of_a_literal_of_shapes_or_of_lists(fn, dtype):
    x = np.arange(6.0, dtype=dtype).reshape(2, 3)
    got, want = script(fn)(x), fn(x)
    if isinstance(want, np.ndarray):  # a fused float32 tanh is within 4e-7 of numpy's
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        assert repr(got) == repr(want)


def test_the_gradient_through_a_shape_grown_from_a_container():
    check_vjp(reshaped_by_a_grown_item, (np.random.default_rng(0).standard_normal((2, 3)),))


def test_growing_an_int_list_read_from_a_container():
    from script import ScriptError
    for fn, args in ((item_of_either, (1,)), (item_after_an_append, ())):
        with pytest.raises(ScriptError, match="'s \\+= ...' on a list of ints read from a "
                           "container: it may hold a shape"):
            script(fn)(np.ones((2, 3)), *args)
    assert script(argument_item_grown)([[1], [2]]) == [[1, 5], [2]]


def len_of_shape(delta: Tensor, W: Tensor):
    """rushter/MLAlgorithms' LSTM backward: ``if len(delta.shape) == 2: delta = delta[:, None]``."""
    if len(delta.shape) == 2:
        delta = delta[:, np.newaxis, :]
    return (delta * W).sum()


def test_len_of_a_shape_is_the_number_of_axes():
    r = np.random.default_rng(7)
    for d in (r.standard_normal((2, 3)), r.standard_normal((2, 1, 3))):
        W = r.standard_normal((2, 1, 3))
        np.testing.assert_allclose(script(len_of_shape)(d, W), len_of_shape(d, W))
        check_vjp(len_of_shape, (d, W))


def axes_as_a_list(x: Tensor):
    """PaddlePaddle's rnn_numpy: ``np.transpose(inputs, [1, 0, 2])``."""
    return np.transpose(x, [1, 0, 2]) * 2.0, np.reshape(x, [6, 4]), np.zeros([2, 2])


def test_axes_given_as_a_list_of_ints():
    x = np.random.default_rng(8).standard_normal((2, 3, 4))
    got, want = script(axes_as_a_list)(x), axes_as_a_list(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)
    check_vjp(axes_as_a_list, (x,))


def test_unpacking_a_shape_of_another_rank_is_pythons_value_error():
    def area(xs: List[Tensor], n: int):
        total = 0
        for i in range(n):
            a, b = xs[i].shape
            total = total + a * b
        return total

    args = ([np.ones((2, 3)), np.ones(4)], 2)
    with pytest.raises(ValueError, match="not enough values to unpack"):
        area(*args)
    with pytest.raises(ValueError, match="not enough values to unpack"):
        script(area)(*args)
    with pytest.raises(ValueError, match="too many values to unpack"):
        script(area)([np.ones((2, 3, 1))], 1)
    assert script(area)([np.ones((2, 3)), np.ones((4, 5))], 2) == 26
    assert "ndim" not in script(area).code_for([np.ones((2, 3))], 1)  # (decided when compiled)
