"""A number on one path of a join with an array stays numpy's weak number (``weak-numbers``):
the dtype numpy gives (float32 beside float32 arrays), and the values it gives (a float32 sum
with 1e-8 added is unchanged). Chainer's LSTMGrad writes ``if gh is None: gh = 0``."""

from typing import Optional

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def lstm_grad_gate(co: Tensor, gh: Optional[Tensor] = None):
    if gh is None:
        gh = 0
    return gh * co * (1 - co)


def with_epsilon(x: Tensor, eps: Optional[Tensor] = None):
    if eps is None:
        eps = 1e-8
    return (x + eps) - x


def scale_or_gate(x: Tensor, g: Tensor):
    if x.sum() > 0:  # known only when the code runs
        v = 0.5
    else:
        v = g
    return x * v


def test_a_number_left_by_the_call_is_numpys_weak_number():
    co = np.full((2, 3), 0.5, np.float32)
    for f in (lstm_grad_gate, with_epsilon):
        assert_same(script(f)(co), f(co))  # float32, and (x + 1e-8) - x is 0 as in numpy
        assert script(f)(co).dtype == np.float32
    assert_same(script(lstm_grad_gate)(co, co), lstm_grad_gate(co, co))


def test_a_number_beside_an_array_on_the_other_path_takes_its_dtype():
    g = np.full(3, 2.0, np.float32)
    f = script(scale_or_gate)
    for x in (np.ones((2, 3), np.float32), -np.ones((2, 3), np.float32)):
        got, want = f(x, g), scale_or_gate(x, g)
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(got, want)


def test_gradients_through_a_weak_number():
    rng = np.random.default_rng(0)
    co = rng.uniform(0.1, 0.9, (2, 3))
    check_vjp(script(lstm_grad_gate), (co, rng.standard_normal((2, 3))))
    check_vjp(script(scale_or_gate), (np.abs(co), rng.standard_normal(3)))
    check_vjp(script(scale_or_gate), (-np.abs(co), rng.standard_normal(3)))


def shared_number(x: Tensor, g: Tensor, y: Tensor, gh: Optional[Tensor] = None):
    if gh is None:
        gh = 0.1
    v = gh if x.sum() > 0 else g  # the If must not retype gh, which y * gh reads too
    return gh * y, x * v


def test_a_number_read_elsewhere_is_not_given_the_dtype_beside_it():
    x, g = np.ones(3, np.float32), np.full(3, 2.0, np.float32)
    y = np.arange(3.0)
    got = script(shared_number)(x, g, y)
    want = shared_number(x, g, y)
    np.testing.assert_array_equal(got[0], want[0])  # float64 0.1 * y, not float32(0.1) * y
    assert got[0].dtype == want[0].dtype == np.float64


def momentum(m: Tensor, g: Tensor, beta=None):
    if beta is None:
        beta = 0.9
    return beta * m + (1 - beta) * g  # 1 - beta: Python arithmetic, then beside float32


def doubled(m: Tensor, flag: bool):
    s = 0.5
    if flag:
        s = m.sum()
    return (s * 2) * m


def shifted(m: Tensor, gh: Optional[Tensor] = None):
    if gh is None:
        gh = 0
    return (-(gh + 1) // 2 + gh ** 2) * m


def reciprocal(m: Tensor, gh: Optional[Tensor] = None):
    if gh is None:
        gh = 0
    return (1 / gh) * m  # Python raises ZeroDivisionError: not folded


def test_arithmetic_of_a_weak_number_is_the_weak_number_python_computes():
    m, g = np.full((2, 3), 2.0, np.float32), np.full((2, 3), 3.0, np.float32)
    cases = [(momentum, (m, g)), (doubled, (m, False)),
             (doubled, (m, True)), (shifted, (m,)), (shifted, (m, g))]
    for f, args in cases:
        got, want = script(f)(*args), f(*args)
        assert got.dtype == want.dtype == np.float32, (f.__name__, got.dtype)
        np.testing.assert_array_equal(got, want)
    with np.errstate(divide="ignore"):
        assert script(reciprocal).graph_for(m).outputs[0].type.dtype == "float64"
    check_vjp(script(momentum), (m.astype(np.float64), g.astype(np.float64)))


def floor_divided(m: Tensor, gh: Optional[Tensor] = None):
    if gh is None:
        gh = 0
    return (5 // gh) * m  # Python's ZeroDivisionError


def negative_power(m: Tensor, gh: Optional[Tensor] = None):
    if gh is None:
        gh = 2
    return (gh ** -1) * m  # Python's 0.5 (numpy's int arrays refuse negative powers)


def test_python_raises_and_powers_of_weak_numbers():
    m = np.full((2, 3), 3.0, np.float32)
    with pytest.raises(ZeroDivisionError):
        floor_divided(m)
    with pytest.raises(ZeroDivisionError):
        script(floor_divided)(m)
    got, want = script(negative_power)(m), negative_power(m)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def decayed(m: Tensor, steps: int, beta: Optional[float] = None):
    if beta is None:
        beta = 0.9
    for t in range(steps):  # a run-time count: not unrolled
        m = m - (beta ** (t + 1)) * m / (t + 1)
    return m


def scaled_by_counter(m: Tensor, beta=None):
    if beta is None:
        beta = 0.5
    s = m
    for t in range(3):  # unrolled: each step's beta * t folds
        s = s + (beta * t) * m
    return s


def test_arithmetic_of_a_weak_number_with_run_time_numbers_is_pythons():
    """``beta * t`` of a loop counter is the Python float Python computes, weak beside the
    float32 array it then scales (a 0-d float64 array made the result float64)."""
    m = np.linspace(0.5, 1.5, 6, dtype=np.float32).reshape(2, 3)
    for f, args in ((decayed, (m, 40)), (decayed, (m, 3, 0.5)), (scaled_by_counter, (m,))):
        got, want = script(f)(*args), f(*args)
        assert got.dtype == want.dtype == np.float32, (f.__name__, args[1:], got.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    check_vjp(script(decayed), (m.astype(np.float64), 5), argnums=(0,))


def joined_at_run_time(m: Tensor, g: Tensor, t: int, beta=None):
    if beta is None:
        beta = 0.9
    if m.sum() > 0:
        v = beta * t
    else:
        v = g
    return v * m * g


def carried(m: Tensor, g: Tensor, n: int, beta=None):
    if beta is None:
        beta = 0.9
    c = g
    for i in range(n):
        c = beta * (i + 1)
    return c * m


def listed(m: Tensor, t: int, beta=None):
    if beta is None:
        beta = 0.9
    xs = [m.sum()]
    xs.append(beta * t)
    return xs[1] * m


def test_a_number_made_of_a_weak_number_that_meets_a_join_stays_an_array():
    """``beta * t`` whose result an ``If``, a loop or a list joins with an array keeps the
    array the join was typed as (made a Python number, the backward asked a float its shape,
    and the loop and the list refused their types)."""
    rng = np.random.default_rng(1)
    m, g = np.abs(rng.standard_normal((2, 3))), rng.standard_normal(3)
    for f, args in ((joined_at_run_time, (m, g, 3)), (joined_at_run_time, (-m, g, 3)),
                    (carried, (m, g, 3)), (carried, (m, g, 0)), (listed, (m, 3))):
        np.testing.assert_allclose(script(f)(*args), f(*args), rtol=1e-12)
    check_vjp(script(joined_at_run_time), (m, g, 3), argnums=(0, 1))
    check_vjp(script(joined_at_run_time), (-m, g, 3), argnums=(0, 1))
