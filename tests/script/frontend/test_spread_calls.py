"""Spread arguments in calls, ``f(*params)``: compiled results equal the plain function's, and
gradients through a spread equal finite differences; a list whose length the call cannot fix is a
ScriptError at the user's line."""

import copy
from typing import List, NamedTuple, Tuple

import numpy as np
import pytest

from script import ScriptError, SignatureError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same_at, rand, rng


def affine_tanh(x: Tensor, W: Tensor, U: Tensor, b: Tensor) -> Tensor:
    return np.tanh(x @ W + b) @ U


@script
def difference(x: Tensor, y: Tensor) -> Tensor:
    return x - y


def no_arguments() -> float:
    return 1.5


class Pair(NamedTuple):
    W: Tensor
    U: Tensor


def from_tuple(x: Tensor, params: Tuple[Tensor, Tensor, Tensor]) -> Tensor:
    return affine_tanh(x, *params)


def from_list(x: Tensor, params: List[Tensor]) -> Tensor:
    return affine_tanh(x, *params)


def mixed(x: Tensor, params: List[Tensor]) -> Tensor:
    """Positional arguments after the star, a list literal and a tuple literal spread."""
    W, U, b = params
    literal = [W, U]
    return affine_tanh(x, *literal, b) + affine_tanh(*(x, W), *[U, b]) + no_arguments(*[])


def built_in_a_loop(x: Tensor, W: Tensor, U: Tensor, b: Tensor) -> Tensor:
    weights = []
    for w in (W, U):
        weights.append(w)
    return affine_tanh(x, *weights, b)


def sliced(x: Tensor, W: Tensor, U: Tensor, b: Tensor) -> Tensor:
    weights = [W, U]
    return affine_tanh(x, weights[0], *weights[1:], b) + affine_tanh(x, *weights[:1], U, b)


def named_tuple(x: Tensor, W: Tensor, U: Tensor, b: Tensor) -> Tensor:
    pair = Pair(W, U)
    return affine_tanh(x, *pair, b)


def into_ops(x: Tensor, shape: Tuple[int, int], bounds: Tuple[float, float]) -> Tensor:
    return np.clip(x.reshape(*shape), *bounds) + np.maximum(*(x, 0.0)).sum()


def into_scripted(xs: List[Tensor]) -> Tensor:
    return difference(*xs) * 2.0


def in_order(xs: List[Tensor]) -> Tensor:
    """The argument before the star is evaluated first, as in Python: pop() shortens xs."""
    return difference(xs.pop(), *xs)


def into_nothing(xs: List[Tensor]) -> float:
    return no_arguments(*xs)


def weights(r, dtype="float64"):
    return [rand(r, (3, 4), dtype), rand(r, (4, 2), dtype), rand(r, (4,), dtype)]


def same_as_plain(fn, *args):
    got = script(fn)(*copy.deepcopy(args))
    assert_same_at(got, fn(*copy.deepcopy(args)))
    return got


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_tuple_and_a_list_spread_into_a_function(dtype):
    r = rng(0)
    x, params = rand(r, (2, 3), dtype), weights(r, dtype)
    got = same_as_plain(from_tuple, x, tuple(params))
    assert got.dtype == np.dtype(dtype)
    same_as_plain(from_list, x, params)
    same_as_plain(mixed, x, params)
    same_as_plain(built_in_a_loop, x, *params)
    same_as_plain(sliced, x, *params)
    same_as_plain(named_tuple, x, *params)


def test_spread_into_ops_and_scripted_functions():
    r = rng(1)
    x = rand(r, (2, 3))
    same_as_plain(into_ops, x, (3, 2), (-0.5, 0.5))
    same_as_plain(into_scripted, [x, 2.0 * x])
    same_as_plain(in_order, [x, rand(r, (2, 3))])
    same_as_plain(into_nothing, [])


def test_a_list_left_over_by_the_parameters_is_a_type_error_as_in_python():
    with pytest.raises(TypeError):
        into_nothing([np.ones(2)])
    with pytest.raises(TypeError, match=r"no_arguments\(\) takes 0 positional arguments"):
        script(into_nothing)([np.ones(2)])


def test_gradients_through_spread_calls_equal_finite_differences():
    r = rng(2)
    x, params = rand(r, (2, 3)), weights(r)
    check_vjp(from_tuple, (x, tuple(params)))
    check_vjp(from_list, (x, params))
    check_vjp(mixed, (x, params))
    check_vjp(built_in_a_loop, (x, *params))


def spread_into_any_number(ns: List[int]) -> int:
    return max(*ns)


def spread_into_defaults(x: Tensor, xs: List[Tensor]) -> Tensor:
    return np.sum(x) + helper_with_default(*xs)


def helper_with_default(x: Tensor, scale: float = 2.0) -> Tensor:
    return x * scale


def test_a_list_whose_length_the_call_cannot_fix_is_refused_at_its_line():
    x = np.ones((2, 3))
    with pytest.raises(ScriptError, match=r"test_spread_calls\.py:\d+:\d+: \*ns in a call of "
                       r"max\(\) is not supported: max\(\) takes any number of arguments and the "
                       r"list's length is not known when compiling \(unpack it first, as in "
                       r"a, b = ns, and pass the items"):
        script(spread_into_any_number)([1, 2])
    with pytest.raises(ScriptError, match=r"the defaults of helper_with_default\(\) \(scale\) "
                       r"leave the list's length open \(unpack it first"):
        script(spread_into_defaults)(x, [x])
    line = spread_into_any_number.__code__.co_firstlineno + 1
    with pytest.raises(ScriptError, match=rf"test_spread_calls\.py:{line}:"):
        script(spread_into_any_number)([1, 2])


def reshaped_like(dx, x):  # Deep Learning from Scratch 2's TimeAffine.backward
    return dx.reshape(*x.shape) * 2


def test_reshape_of_a_spread_shape_takes_it_as_one_tuple():
    dx, x = np.arange(24.0).reshape(6, 4), np.ones((2, 3, 4))
    np.testing.assert_array_equal(script(reshaped_like)(dx, x), reshaped_like(dx, x))


def scaled_by_default(x, dout=1):  # Deep Learning from Scratch's SoftmaxWithLoss.backward(dout=1)
    return x * dout


def test_a_float_for_a_parameter_an_int_default_typed_says_what_to_annotate():
    fn = script(scaled_by_default)
    np.testing.assert_array_equal(fn(np.ones(2)), np.ones(2))
    with pytest.raises(SignatureError, match=r"argument 'dout': expected int, got float .*"
                                             r"annotate it, dout: float = 1\)"):
        fn(np.ones(2), 0.5)
