"""numpy's global random functions in scripted code draw what the plain function draws: the
same numbers after the same seed, of the same types and dtypes; no gradient flows through a
draw (refused where one would), and bad uses are ScriptErrors at the user's line."""

from typing import List

import numpy as np
import pytest
from numpy.random import randn

from script import ScriptError, Tensor, grad, script
from tests.helpers import assert_same


def draws(n: int, p: Tensor):
    np.random.seed(3)
    return (np.random.rand(n, 2), randn(n), np.random.rand(), np.random.random((2, n)),
            np.random.random_sample(n), np.random.standard_normal(), np.random.uniform(-1, 1),
            np.random.uniform(-1, 1, size=(n,)), np.random.normal(0.0, 2.0, (2, n)),
            np.random.normal(p, 0.1), np.random.randint(0, 10, size=n), np.random.randint(5),
            np.random.binomial(1, 0.5, size=(n, 3)), np.random.binomial(10, 0.3),
            np.random.choice(n, 3, replace=False), np.random.choice(n), np.random.choice(p),
            np.random.choice(range(n), p=p), np.random.choice([1.5, 2.5]))


@pytest.mark.parametrize("n", [3, 5])
def test_draws_are_numpys(n):
    p = np.full(n, 1.0 / n)
    got, want = script(draws)(n, p), draws(n, p)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert type(g) is type(w), (k, type(g), type(w))
        assert_same(g, w)


def dropout(h: Tensor, keep: float):
    mask = (np.random.rand(*h.shape) < keep) / keep
    return h * mask


def sample(p: Tensor, n: int):
    ixes = []
    for _ in range(n):
        ix = np.random.choice(range(p.shape[0]), p=p.ravel())
        ixes.append(ix)
    return ixes


def noisy_steps(h: Tensor, W: Tensor, n: int):
    for _ in range(n):
        h = np.tanh(h @ W + 0.1 * np.random.randn(h.shape[0], h.shape[1]))
    return h


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_seeded_programs_draw_the_same_numbers(dtype):
    rng = np.random.default_rng(0)
    h = rng.standard_normal((3, 4)).astype(dtype)
    W = (0.3 * rng.standard_normal((4, 4))).astype(dtype)
    p = np.array([0.1, 0.2, 0.7], dtype)
    for fn, args in [(dropout, (h, 0.5)), (sample, (p, 6)), (noisy_steps, (h, W, 4))]:
        np.random.seed(11)
        want = fn(*args)
        np.random.seed(11)
        got = script(fn)(*args)
        if fn is sample:
            assert got == want and [type(x) for x in got] == [type(x) for x in want]
        else:
            assert_same(got, want)


def twice(n: int):
    a = np.random.rand(n)
    np.random.rand(n)  # unused, but it moves the generator on
    b = np.random.rand(n)
    return a, b


def test_draws_are_not_merged_or_dropped():
    np.random.seed(0)
    want = twice(4)
    np.random.seed(0)
    got = script(twice)(4)
    assert_same(got, want)
    assert not np.array_equal(got[0], got[1])


def dropout_loss(h: Tensor, keep: float):
    return np.sum(dropout(h, keep))


def noisy_mean(mu: Tensor):
    return np.sum(np.random.normal(mu, 1.0))


def test_gradients_take_the_drawn_mask_or_are_refused():
    h = np.random.default_rng(1).standard_normal((3, 4))
    np.random.seed(5)
    g = grad(script(dropout_loss))(h, 0.5)
    np.random.seed(5)
    mask = (np.random.rand(3, 4) < 0.5) / 0.5
    np.testing.assert_array_equal(g, mask)
    with pytest.raises(ScriptError, match="cannot differentiate np.random") as info:
        grad(script(noisy_mean))(h)
    assert "np.random.normal(mu, 1.0)" in str(info.value)


def generator_method(n: int):
    return np.random.shuffle(np.arange(n))


def keyword_not_numpys(n: int):
    return np.random.uniform(0, 1, shape=n)


def float_dims(n: int):
    return np.random.rand(n, 2.0)


def bad_size(n: int):
    return np.random.normal(0.0, 1.0, size=1.5)


@pytest.mark.parametrize("fn, message", [
    (generator_method, r"np\.random\.shuffle\(\) is not supported"),
    (keyword_not_numpys, r"unexpected keyword argument 'shape'"),
    (float_dims, r"takes int dimensions, not a float"),
    (bad_size, r"'size' must be None, an int or a tuple of ints, not a float"),
])
def test_bad_uses_are_script_errors(fn, message):
    with pytest.raises(ScriptError, match=message):
        script(fn)(3)


def of_a_list(xs: List[float]):
    return np.random.choice(xs, size=2)


def test_choice_of_a_list_argument():
    np.random.seed(2)
    want = of_a_list([0.5, 1.5, 2.5])
    np.random.seed(2)
    assert_same(script(of_a_list)([0.5, 1.5, 2.5]), want)
