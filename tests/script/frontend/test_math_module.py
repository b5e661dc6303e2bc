"""The math module's functions in scripted code compute what Python computes: Python numbers
from Python numbers (folded when constant), Python's ValueError where Python raises, a
one-element array through ``float()``, and bad uses as ScriptErrors at the user's line."""

import math
from math import exp, sqrt
from typing import List

import numpy as np
import pytest

from script import ScriptError, Tensor, grad, script
from tests.helpers import assert_same


def numbers(x: float, n: int):
    return (sqrt(x), exp(-x), math.log(x), math.log(x, 2), math.log2(x), math.log10(x),
            math.log1p(x), math.expm1(x), math.tanh(x), math.atan2(x, 2.0), math.pow(x, 1.5),
            math.hypot(x, 2.0, n), math.copysign(x, -1.0), math.fmod(x, 1.0), math.erf(x),
            math.lgamma(x), math.degrees(x), math.fabs(-x))


def integers(x: float, n: int):
    return (math.floor(x), math.ceil(x), math.trunc(-x), math.factorial(n), math.gcd(n, 6),
            math.isqrt(n), math.comb(n, 2), math.perm(n), math.perm(n, 2), math.floor(n))


def predicates(x: float):
    return math.isnan(x), math.isinf(x), math.isfinite(x)


@pytest.mark.parametrize("x, n", [(2.5, 4), (0.25, 7), (9.0, 1)])
def test_math_functions_of_numbers_are_pythons(x, n):
    for fn in (numbers, integers):
        got, want = script(fn)(x, n), fn(x, n)
        assert got == want, fn.__name__
        assert [type(v) for v in got] == [type(v) for v in want], fn.__name__


@pytest.mark.parametrize("x", [1.5, float("nan"), float("inf"), -float("inf")])
def test_math_tests_are_pythons(x):
    assert script(predicates)(x) == predicates(x)


def attention_scores(q: Tensor, k: Tensor):
    return q @ k.T / math.sqrt(q.shape[-1]) * math.pi


def test_constant_arguments_fold_and_keep_the_arrays_dtype():
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((3, 8), dtype=np.float32), rng.standard_normal((4, 8),
                                                                            dtype=np.float32)
    fn = script(attention_scores)
    got = fn(q, k)
    assert got.dtype == np.float32  # a Python float scales an array without promoting it
    assert_same(got, attention_scores(q, k))
    assert "prim::math" not in str(fn.graph_for(q, k))


def square_root(x: float):
    return math.sqrt(x)


def log_base(x: float, base: float):
    return math.log(x, base)


@pytest.mark.parametrize("fn, args", [(square_root, (-1.0,)), (log_base, (0.0, 2.0)),
                                      (log_base, (4.0, 1.0))])
def test_domain_errors_are_pythons(fn, args):
    with pytest.raises((ValueError, ZeroDivisionError)) as plain:
        fn(*args)
    with pytest.raises(type(plain.value)):
        script(fn)(*args)


def constant_domain_error():
    return math.sqrt(-1.0)


def test_a_constant_domain_error_raises_when_the_code_runs():
    fn = script(constant_domain_error)  # compiling is fine; calling raises as Python does
    with pytest.raises(ValueError, match="math domain error"):
        fn()


def of_one_element(x: Tensor):
    return math.exp(np.sum(x)), math.floor(x[0]), math.sqrt(x[1])


def test_0d_arrays_are_taken_as_floats():
    x = np.array([0.5, 1.5, 2.0])
    got, want = script(of_one_element)(x), of_one_element(x)
    assert got == want and all(type(v) in (float, int) for v in got)


def of_an_array(x: Tensor):
    return math.sqrt(x)


def of_a_made_array(n: int):
    return math.sqrt(np.ones(n))


def test_an_array_raises_numpys_error_or_gets_the_numpy_spelling():
    with pytest.raises(TypeError):  # of an argument, as numpy raises: float() of a 2-d array
        script(of_an_array)(np.ones((2, 3)))
    with pytest.raises(ScriptError, match=r"np\.sqrt computes it for arrays") as info:
        script(of_a_made_array)(3)  # of an array known to be 1-d: when compiling
    assert "return math.sqrt(np.ones(n))" in str(info.value) and "^" in str(info.value)


def of_a_list_item(xs: List[Tensor]):
    return math.exp(xs[0])


def test_an_array_of_unknown_rank_raises_numpys_error_when_not_0d():
    fn = script(of_a_list_item)
    assert fn([np.array(0.5), np.ones(2)]) == of_a_list_item([np.array(0.5), np.ones(2)])
    with pytest.raises(TypeError):
        of_a_list_item([np.ones((2, 2))])
    with pytest.raises(TypeError):
        fn([np.ones((2, 2))])


def factorial_of_float(x: float):
    return math.factorial(x)


def with_keyword(x: float):
    return math.log(x, base=2.0)


def too_many(x: float):
    return math.sqrt(x, x)


def not_compiled(x: float):
    return math.fsum([x, x])


@pytest.mark.parametrize("fn, message", [
    (factorial_of_float, r"math\.factorial\(\) takes an int, not a float"),
    (with_keyword, r"math\.log\(\) takes no keyword arguments"),
    (too_many, r"math\.sqrt\(\) takes 1 argument \(2 given\)"),
    (not_compiled, r"math\.fsum\(\) is not supported"),
])
def test_bad_uses_are_script_errors(fn, message):
    with pytest.raises(ScriptError, match=message):
        script(fn)(2.0)


def through_a_float(x: Tensor):
    return np.sum(x * math.exp(float(np.sum(x))))


def scaled_by_a_number(x: Tensor, s: float):
    return np.sum(np.tanh(x) * math.sqrt(s))


def test_gradients_through_math_are_refused_or_right():
    x = np.array([0.1, 0.2, 0.3])
    with pytest.raises(ScriptError, match="cannot differentiate a Python float"):
        grad(script(through_a_float))(x)
    np.testing.assert_allclose(grad(script(scaled_by_a_number))(x, 4.0),
                               2.0 * (1 - np.tanh(x) ** 2), rtol=1e-12)
