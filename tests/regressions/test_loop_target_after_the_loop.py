"""``for t in range(n): ...`` then ``C[t]`` after the loop (Karpathy's batched LSTM returns
``C[t], Hout[t]`` so the caller can continue from the last state) was refused: "'t' is only
assigned inside the loop". Python leaves the target at its last value, and raises
``UnboundLocalError`` where it is read after a loop that ran no iterations. A range loop's
target bound nowhere else in the function now has its last value after the loop, checked when
it is read."""

import numpy as np
import pytest

from script import Tensor, script
from script.errors import ScriptError


def last_state(X: Tensor):
    C = np.zeros(X.shape)
    for t in range(X.shape[0]):
        prevc = C[t - 1] if t > 0 else X[0]
        C[t] = np.tanh(X[t]) + 0.5 * prevc
    return C, C[t]


def counted_down(x: Tensor, n: int):
    for t in reversed(range(1, n, 2)):
        x = x * 2.0
    return x, t


def read_on_one_path(x: Tensor, n: int):
    for t in range(n):
        x = x + 1.0
    if n > 2:
        return x * float(t)
    return x


def test_the_target_has_its_last_value_after_the_loop():
    X = np.random.default_rng(0).standard_normal((4, 3))
    for got, want in zip(script(last_state)(X), last_state(X)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    x = np.ones(2)
    assert script(counted_down)(x, 6)[1] == counted_down(x, 6)[1] == 1
    np.testing.assert_allclose(script(read_on_one_path)(x, 4), read_on_one_path(x, 4))


def test_reading_it_after_no_iterations_raises_as_python():
    x = np.ones(2)
    for f in (counted_down, script(counted_down)):
        with pytest.raises(UnboundLocalError):
            f(x, 1)
    # not read after an empty loop: no error, in Python or compiled
    np.testing.assert_allclose(script(read_on_one_path)(x, 0), read_on_one_path(x, 0))
    with pytest.raises(UnboundLocalError):
        script(last_state)(np.ones((0, 3)))


def reassigned_in_a_loop(x: Tensor, n: int):
    for t in range(n):
        x = x + 1.0
    for k in range(3):
        t = t + 1
    return x, t


def reassigned_in_an_if(x: Tensor, n: int):
    for t in range(n):
        x = x + 1.0
    if n > 3:
        t = 10
    return x, t


@pytest.mark.parametrize("fn", [reassigned_in_a_loop, reassigned_in_an_if])
def test_a_target_bound_elsewhere_too_is_still_refused_after_its_loop(fn):
    # which binding reaches the read is not followed: the read is refused, never a wrong value
    with pytest.raises(ScriptError, match="only assigned inside the loop|is not defined in the false branch"):
        script(fn)(np.ones(2), 4)
