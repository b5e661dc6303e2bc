"""A list spread into an op, a builtin, a list literal or a tuple literal: ``np.maximum(*xs)``,
``np.stack([*xs, y])``, ``f(*xs)``, ``(*xs, y)``. A callee of fixed arity gets the list's items
after a check, when the call runs, that the list holds as many as it takes (Python's TypeError
otherwise, naming the list and the count); a list whose length is known where the call is (a
literal only read since) is unpacked as it is, also into a tuple literal, whose length is part of
its type (one whose length is only known when it runs is refused there). Compiled results equal
the plain function's (float32 and float64), gradients equal finite differences, and a callee
taking any number of arguments is a ScriptError at the user's line."""

import copy
from typing import List, NamedTuple

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same_at, rand, rng


def into_an_op(xs: List[Tensor]) -> Tensor:
    return np.maximum(*xs) * 2.0


def into_an_op_after_an_argument(x: Tensor, bounds: List[float]) -> Tensor:
    return np.clip(x, *bounds)


def into_a_method(x: Tensor, bounds: List[float]) -> Tensor:
    return x.clip(*bounds)


def built_in_a_loop(x: Tensor, n: int) -> Tensor:
    xs = []
    for i in range(n):
        xs.append(np.tanh(x * float(i + 1)))
    return np.maximum(*xs)


def pair(a: Tensor, b: Tensor) -> Tensor:
    return a * np.tanh(b)


def into_a_function(x: Tensor, n: int) -> Tensor:
    xs = []
    for i in range(n):
        xs.append(x * float(i + 1))
    return pair(*xs)


def a_literal_into_any_number(a: int, b: int) -> int:
    ns = [a, b]
    return max(*ns) + len(ns)


def into_a_list_literal(xs: List[Tensor], y: Tensor) -> Tensor:
    return np.stack([*xs, y])


def built_list_into_a_list_literal(x: Tensor, y: Tensor, n: int) -> Tensor:
    xs = []
    for i in range(n):
        xs.append(np.tanh(x * float(i + 1)))
    return np.stack([y, *xs, *(y * 2.0, x), y * 3.0])


class State(NamedTuple):
    h: Tensor
    c: Tensor


def into_tuple_literals(x: Tensor, y: Tensor):
    xs = [x * 2.0, np.tanh(y)]
    ys = [y]
    pair = (x, y)
    state = State(x, y * y)
    first, last, both = (*xs, y), (x, *xs), (*xs, *ys)
    mixed = (*pair, *xs, *state)
    total = first[0] * first[2] + last[0] * last[2] + both[1] * both[2] + mixed[5]
    return (*both, total), len(mixed)


def into_a_returned_tuple(xs: List[Tensor], y: Tensor):
    ws = [xs[0] * y, xs[1]]
    return (*ws, y)


def same_as_plain(fn, *args):
    got = script(fn)(*copy.deepcopy(args))
    assert_same_at(got, fn(*copy.deepcopy(args)))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_compiled_equals_python(dtype):
    r = rng(0)
    x, y = rand(r, (2, 3), dtype), rand(r, (2, 3), dtype)
    same_as_plain(into_an_op, [x, y])
    same_as_plain(into_an_op_after_an_argument, x, [-0.5, 0.5])
    same_as_plain(into_a_method, x, [-0.5, 0.5])
    same_as_plain(built_in_a_loop, x, 2)
    same_as_plain(into_a_function, x, 2)
    same_as_plain(into_a_list_literal, [x, y], x)
    same_as_plain(into_a_list_literal, [], x)
    for n in (0, 1, 3):
        same_as_plain(built_list_into_a_list_literal, x, y, n)
    assert script(a_literal_into_any_number)(3, 7) == a_literal_into_any_number(3, 7) == 9
    same_as_plain(into_tuple_literals, x, y)
    same_as_plain(into_a_returned_tuple, [x, y], y)


def test_gradients_match_finite_differences():
    r = rng(1)
    x, y = rand(r, (2, 3)), rand(r, (2, 3))
    check_vjp(into_an_op, ([x, y],))
    check_vjp(built_in_a_loop, (x, 2))
    check_vjp(into_a_function, (x, 2))
    check_vjp(into_a_list_literal, ([x, y], x))
    for n in (1, 3):
        check_vjp(built_list_into_a_list_literal, (x, y, n))
    check_vjp(into_tuple_literals, (x, y))
    check_vjp(into_a_returned_tuple, ([x, y], y))


def test_a_list_of_another_length_is_a_type_error_naming_it():
    x = np.ones((2, 3))
    for fn, args in ((into_an_op, ([x],)), (into_a_function, (x, 3))):
        with pytest.raises(TypeError):
            fn(*args)
    with pytest.raises(TypeError, match=r"maximum\(\) takes 2 positional arguments, but the "
                       r"list xs spread into it \(\*xs\) does not hold 2 items"):
        script(into_an_op)([x])
    with pytest.raises(TypeError, match=r"pair\(\) takes 2 positional arguments, but the list "
                       r"xs spread into it \(\*xs\) does not hold 2 items"):
        script(into_a_function)(x, 3)


def grown_literal_into_any_number(a: int, b: int) -> int:
    ns = [a, b]
    ns.append(a + b)
    return max(*ns)


def spread_a_tensor(x: Tensor) -> Tensor:
    return np.stack([*x, x[0]])


def test_a_callee_taking_any_number_of_a_list_that_changed_is_refused():
    with pytest.raises(ScriptError, match=r"test_spread_lists\.py:\d+:\d+: \*ns in a call of "
                       r"max\(\) is not supported: max\(\) takes any number of arguments"):
        script(grown_literal_into_any_number)(1, 2)
    with pytest.raises(ScriptError, match=r"cannot spread a value of type .* into a list: \*x "
                       r"must be a tuple or a list"):
        script(spread_a_tensor)(np.ones((2, 3)))


def list_argument_into_a_tuple(xs: List[Tensor], y: Tensor):
    return (*xs, y)


def grown_list_into_a_tuple(x: Tensor, n: int):
    xs = [x]
    for _ in range(n):
        xs.append(x * 2.0)
    return (x, *xs)


def tensor_into_a_tuple(x: Tensor):
    return (*x, x)


@pytest.mark.parametrize("fn, args, spread, line", [
    (list_argument_into_a_tuple, ([np.ones(2)], np.ones(2)), "xs", "return (*xs, y)"),
    (grown_list_into_a_tuple, (np.ones(2), 2), "xs", "return (x, *xs)"),
])
def test_a_list_of_unknown_length_into_a_tuple_literal_is_refused(fn, args, spread, line):
    with pytest.raises(ScriptError, match=rf"\*{spread} in a tuple literal is not supported: the "
                       r"list's length is not known when compiling.*build a list literal "
                       rf"instead, \[\*{spread}, \.\.\.\]") as info:
        script(fn)(*args)
    assert line in str(info.value)
    with pytest.raises(ScriptError, match=r"cannot spread a value of type .* into a tuple: \*x "
                       r"must be a tuple or a list"):
        script(tensor_into_a_tuple)(np.ones((2, 3)))
