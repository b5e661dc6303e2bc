"""In-place writes to arrays (``h[t] = v``, ``dh[t-1] += v``, ``x[:, :H] = v``,
``delta[np.arange(n), y] -= 1``, ``W[idx] = v``, ``x.fill(v)``): compiled == plain numpy in
float32 and float64, inside loops and ifs; gradients == finite differences; the writes numpy
would show somewhere compiled code cannot follow are refused at the write; a buffer written once
per step is written in place."""

import numpy as np
import pytest

from script import ScriptError, Tensor, ops, script
from tests.gradcheck import check_vjp


def rnn_buffer(x: Tensor, W: Tensor, U: Tensor) -> Tensor:
    T = x.shape[0]
    h = np.zeros_like(x @ W)
    for t in range(T):
        if t == 0:
            h[t] = np.tanh(x[t] @ W)
        else:
            h[t] = np.tanh(x[t] @ W + h[t - 1] @ U)
    return h


def reverse_accumulate(dy: Tensor, U: Tensor) -> Tensor:
    T = dy.shape[0]
    dh = np.zeros_like(dy)
    dh[T - 1] = dy[T - 1]
    for t in range(T - 1, 0, -1):
        dh[t - 1] += dy[t - 1] + dh[t] @ U
    return dh


def slices(x: Tensor, v: Tensor) -> Tensor:
    out = x * 2.0
    out[:, :2] = v
    out[1, 1:] += 3.0
    out[..., 0] = out[..., 0] * v[:, 1]
    return out


def pairs(p: Tensor, y: Tensor) -> Tensor:
    n = p.shape[0]
    delta = p.copy()
    delta[np.arange(n), y] -= 1.0
    return delta / n


def rows(W: Tensor, idx: Tensor, v: Tensor) -> Tensor:
    out = W + 0.0
    out[idx] = v
    cols = out * 1.0
    cols[:, idx] = np.tanh(v.T)
    return out * cols


def fill(x: Tensor, s: float) -> Tensor:
    y = x * 2.0
    z = y + 1.0
    y.fill(s)
    z[:] = 0.5
    return y + z + x


def whole_name_alias(x: Tensor) -> Tensor:
    h = x * 1.0
    a = h
    h += 1.0
    h[0] = 7.0
    return a


def conditional_write(x: Tensor, k: int) -> Tensor:
    h = np.zeros_like(x)
    for t in range(x.shape[0]):
        if t % k == 0:
            h[t] = x[t] * 2.0
        h[t, 0] += 1.0
    return h


def twins(x: Tensor, v: Tensor) -> Tensor:
    """The in-place ops the pass chooses, called directly: the same gradients as the pure ones."""
    idx = np.array([2, 0])
    a = ops.select_put_(np.tanh(x), v[0], 0, 1)
    b = ops.slice_put_(np.sin(x), v[:, :2], 1, 1, 3, None)
    c = ops.take_put_(x * v, v[:, :2], idx, 1)
    d = ops.index_pairs_put_(x + v, v[0, :2], idx, idx)
    return a + b + c + d


def last_reads(g: Tensor) -> Tensor:
    """The reads of a value's cotangent, differentiated again."""
    idx = np.array([1, 1, 0])
    return ops.take_last(g, idx, 0).sum(axis=0) + ops.index_pairs_last(g, idx, idx) * 2.0


CASES = {
    "select_put": (rnn_buffer, lambda r, dt: (r.standard_normal((4, 2, 3)).astype(dt),
                                              r.standard_normal((3, 3)).astype(dt) * 0.5,
                                              r.standard_normal((3, 3)).astype(dt) * 0.5),
                   ["tensor::select_put"]),
    "reverse_accumulate": (reverse_accumulate, lambda r, dt: (
        r.standard_normal((4, 2, 3)).astype(dt), r.standard_normal((3, 3)).astype(dt) * 0.5),
        ["tensor::select_put"]),
    "slice_put": (slices, lambda r, dt: (r.standard_normal((3, 4)).astype(dt),
                                         r.standard_normal((3, 2)).astype(dt)),
                  ["tensor::slice_put"]),
    "index_pairs_put": (pairs, lambda r, dt: (r.standard_normal((4, 3)).astype(dt),
                                              np.array([2, 0, 1, 2])),
                        ["tensor::index_pairs_put"]),
    "take_put": (rows, lambda r, dt: (r.standard_normal((5, 5)).astype(dt), np.array([3, 0, 3]),
                                      r.standard_normal((3, 5)).astype(dt)),
                 ["tensor::take_put"]),
    "fill": (fill, lambda r, dt: (r.standard_normal((2, 3)).astype(dt), 0.25), []),
    "alias": (whole_name_alias, lambda r, dt: (r.standard_normal((2, 3)).astype(dt),), []),
    "twins": (twins, lambda r, dt: (r.standard_normal((3, 4)).astype(dt),
                                    r.standard_normal((3, 4)).astype(dt)),
              ["tensor::select_put_", "tensor::slice_put_", "tensor::take_put_",
               "tensor::index_pairs_put_"]),
    "last_reads": (last_reads, lambda r, dt: (r.standard_normal((3, 3)).astype(dt),),
                   ["tensor::take_last", "tensor::index_pairs_last"]),
    "conditional": (conditional_write, lambda r, dt: (r.standard_normal((5, 3)).astype(dt), 2),
                    []),
}
"""name -> (function, arguments for (rng, dtype), the write kinds its gradient checks)."""


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_equals_numpy(name, dtype):
    fn, make_args, _ = CASES[name]
    args = make_args(np.random.default_rng(3), dtype)
    expected = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = script(fn)(*args)
    assert got.dtype == expected.dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(name):
    fn, make_args, _ = CASES[name]
    check_vjp(script(fn), make_args(np.random.default_rng(5), np.float64))


def last_write_wins(W: Tensor, v: Tensor) -> Tensor:
    out = W * 1.0
    out[np.array([1, 1, 0])] = v
    d = W * 1.0
    d[np.array([0, 0]), np.array([2, 2])] = v[:2, 0]
    return out + d


def test_repeated_indices_last_write_wins_and_its_gradient():
    r = np.random.default_rng(0)
    args = (r.standard_normal((3, 3)), r.standard_normal((3, 3)))
    np.testing.assert_allclose(script(last_write_wins)(*args), last_write_wins(*args))
    check_vjp(script(last_write_wins), args)


def test_value_is_cast_to_the_array_dtype():
    def f(x: Tensor, v: Tensor) -> Tensor:
        h = np.zeros_like(x[:2] * v)
        h[0] = v
        return h

    x, v = np.ones((2, 3), np.float32), np.full(3, 1.0 + 1e-7, np.float32)
    got = script(f)(x, v)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, f(x, v))


# -- what is refused ------------------------------------------------------------------------------
def write_argument(x: Tensor) -> Tensor:
    x[0] = 1.0
    return x


def write_view_read_later(x: Tensor) -> Tensor:
    h = x * 1.0
    r = h[0]
    h[0] = 5.0
    return r


def write_alias_outside_loop(x: Tensor) -> Tensor:
    h = x * 1.0
    a = h
    for t in range(2):
        h[t] = 0.0
    return a


def carried_view(x: Tensor) -> Tensor:
    h = x * 1.0
    prev = h[0] * 1.0
    for t in range(1, 3):
        h[:] = prev
        prev = h[t]
    return h


def rebound_to_outer(x: Tensor) -> Tensor:
    a = x * 1.0
    h = x * 2.0
    for _ in range(2):
        h[0] = 1.0
        h = a
    return a


def write_list_item(x: Tensor) -> Tensor:
    hs = [x * 1.0]
    h = hs[0]
    h[0] = 1.0
    return hs[0]


REFUSED = {
    write_argument: r"in-place write to the argument 'x'.*copy it first: x = x.copy\(\) \(a helper "
                    r"that updates its caller's array: return the new array and assign it where "
                    r"the helper is called, x = write_argument\(\.\.\., x\)\)",
    write_view_read_later: r"would also change 'r'",
    write_alias_outside_loop: r"would also change 'a'",
    carried_view: r"'prev' may share memory with 'h'",
    rebound_to_outer: r"'h' is written in place in this loop and rebound to an array made "
                      r"before it",
    write_list_item: r"in-place write to an array read from a container",
}


@pytest.mark.parametrize("fn", list(REFUSED), ids=lambda f: f.__name__)
def test_writes_numpy_would_show_elsewhere_are_refused(fn):
    with pytest.raises(ScriptError, match=REFUSED[fn]):
        script(fn)(np.ones((3, 3)))


def test_an_alias_read_after_the_write_sees_it():
    """Regression: ``a = h; h[0] = 1`` changes ``a`` in numpy."""
    def f(x: Tensor) -> Tensor:
        h = x * 1.0
        a = h
        h[0] = 1.0
        return a + h

    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(script(f)(x), f(x.copy()))


def test_augmented_whole_name_alias_sees_the_write():
    """Regression: ``a = h; h += 1`` changes ``a`` too (numpy's += is in place); it used to
    return ``a`` unchanged."""
    def f(x: Tensor) -> Tensor:
        h = x * 1.0
        a = h
        h += 1.0
        return a

    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(script(f)(x), f(x.copy()))
    np.testing.assert_array_equal(script(whole_name_alias)(x), whole_name_alias(x.copy()))


def test_augmented_assignment_through_a_live_view_is_refused():
    def f(x: Tensor) -> Tensor:
        h = x * 1.0
        r = h[0]
        h += 1.0
        return r + h[0]

    with pytest.raises(ScriptError, match="would also change 'r'"):
        script(f)(np.ones((2, 3)))


# -- a buffer written once per step is written in place -------------------------------------------
def test_the_step_buffer_is_written_in_place():
    r = np.random.default_rng(1)
    args = (r.standard_normal((6, 2, 3)), r.standard_normal((3, 3)), r.standard_normal((3, 3)))
    fn = script(rnn_buffer)
    source = fn.code_for(*args)
    assert "__setitem__" in source or "select_put_" in source
    assert "ops.select_put(" not in source
    np.testing.assert_allclose(fn(*args), rnn_buffer(*args))


def test_a_write_whose_old_array_is_read_after_is_a_copy():
    def f(x: Tensor) -> Tensor:
        h = x * 1.0
        old = h * 1.0  # a reader of h's old value
        h[0] = 0.0
        return h + old + x * 0.0

    def g(x: Tensor) -> Tensor:
        h = x * 1.0
        h2 = h
        h2 = h2 * 1.0
        h[0] = 0.0
        return h + h2

    x = np.arange(6.0).reshape(2, 3)
    for fn in (f, g):
        np.testing.assert_array_equal(script(fn)(x), fn(x.copy()))


def chained(p: Tensor, T: int):
    alpha = np.zeros((T, 3, 2))
    for t in range(T):
        for j in range(3):
            alpha[t][j] = p * (t + j)
            alpha[t][j][1] += 1.0
    alpha[0][1:3] = p[0]
    return alpha


def chained_through_a_slice(p: Tensor):
    a = np.zeros((3, 2))
    a[1:3][0] = p
    return a


def chained_into_an_argument(x: Tensor):
    x[0][1] = 2.0
    return x


def forward_probabilities(A: Tensor, B: Tensor, pi: Tensor, obs: Tensor):
    alpha = np.zeros((obs.shape[0], A.shape[0]))
    for i in range(A.shape[0]):
        alpha[0][i] = pi[i] * B[i][obs[0]]
    for t in range(1, obs.shape[0]):
        for j in range(A.shape[0]):
            s = 0.0
            for i in range(A.shape[0]):
                s += alpha[t - 1][i] * A[i][j]
            alpha[t][j] = s * B[j][obs[t]]
    return alpha


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chained_indices_write_into_the_array(dtype):
    """``a[t][j] = v`` after int indices is numpy's write through the view ``a[t]``: the
    array changes (QSTK's HMM, CTC code); a slice before the last index or an argument is
    refused."""
    p = np.array([1.5, -2.0], dtype)
    np.testing.assert_array_equal(script(chained)(p, 3), chained(p, 3))
    rng = np.random.default_rng(5)
    args = (rng.random((3, 3)), rng.random((3, 4)), rng.random(3))
    args = tuple(a.astype(dtype) for a in args) + (np.array([0, 3, 1, 2]),)
    np.testing.assert_allclose(script(forward_probabilities)(*args),
                               forward_probabilities(*args), rtol=1e-6)
    with pytest.raises(ScriptError, match=r"in-place write into a\[1:3\]"):
        script(chained_through_a_slice)(p)
    with pytest.raises(ScriptError, match="in-place write to the argument 'x'"):
        script(chained_into_an_argument)(np.zeros((2, 3)))


def backward_probabilities(A: Tensor, B: Tensor, obs: Tensor):
    """QSTK's calcbeta: only augmented chained writes in the loop."""
    T, N = obs.shape[0], A.shape[0]
    beta = np.zeros((T, N))
    beta[T - 1] = 1.0
    for t in range(T - 2, -1, -1):
        for i in range(N):
            for j in range(N):
                beta[t][i] += A[i][j] * B[j][obs[t + 1]] * beta[t + 1][j]
    return beta


def index_with_effects(x: Tensor):
    a = np.zeros((4, 3))
    rows = [0, 1, 2, 3]
    a[rows.pop()][1] = x[0]
    a[rows.pop()][2] += x[0]
    b = np.zeros(4)
    b[rows.pop()] += x[0]
    return a, b, len(rows)


def item_of_a_vector(x: Tensor):
    a = np.zeros(3)
    a[1][...] = x[0]
    return a


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chained_augmented_writes_in_loops_and_indices_evaluated_once(dtype):
    rng = np.random.default_rng(7)
    args = (rng.random((3, 3)).astype(dtype), rng.random((3, 4)).astype(dtype),
            np.array([0, 3, 1, 2]))
    np.testing.assert_allclose(script(backward_probabilities)(*args),
                               backward_probabilities(*args), rtol=1e-6)
    x = np.array([5.0], dtype)
    got, want = script(index_with_effects)(x), index_with_effects(x)
    assert got[2] == want[2] == 1  # each index evaluated once, as Python does
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    with pytest.raises(TypeError, match="does not support item assignment"):
        item_of_a_vector(x)
    with pytest.raises(TypeError, match="does not support item assignment"):
        script(item_of_a_vector)(x)


def test_chained_index_gradients():
    rng = np.random.default_rng(6)
    check_vjp(script(forward_probabilities), (rng.random((3, 3)), rng.random((3, 4)),
                                              rng.random(3), np.array([0, 3, 1, 2])),
              argnums=(0, 1, 2))
    check_vjp(script(backward_probabilities), (rng.random((3, 3)), rng.random((3, 4)),
                                               np.array([0, 3, 1, 2])), argnums=(0, 1))
