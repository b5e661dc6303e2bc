"""Wrong results and refusals found by porting public numpy sequence code (IDSIA brainstorm's CTC
forward, libfmp's HMM Viterbi, kgirnet's beam search, adcondev's LSTM, filterpy's Kalman
filter; all MIT) and by checking gradients against torch's: each test is the pattern met,
reduced."""

from typing import Dict, List, Optional

import numpy as np
import pytest

import script as rs
from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def scalars(a: Tensor, b: Tensor, x: Tensor):
    s = np.float64(0)
    for t in range(x.shape[0]):
        s = s + x[t]
    # a fused kernel over numpy scalars: logaddexp of two items
    m = np.maximum(a[0], b[0])
    lse = m + np.log1p(np.exp(-np.abs(a[0] - b[0])))
    return np.float64(0), np.sqrt(3), [(1, np.float32(2))], s, lse


def leaves(v):
    return [y for x in v for y in leaves(x)] if isinstance(v, (tuple, list)) else [v]


@pytest.mark.parametrize("n", [0, 3])
def test_numpy_scalars_come_back_as_numpy_scalars(n):
    """numpy gives np.float64 (a float), not a 0-d array (mutable, unhashable), for a numpy
    scalar constant, a ufunc of numpy scalars and an accumulator that starts as one."""
    args = (np.array([1.0, 2.0]), np.array([2.0]), np.arange(float(n)))
    got, want = script(scalars)(*args), scalars(*args)
    assert [type(v) for v in leaves(got)] == [type(v) for v in leaves(want)]
    assert_same(got, want)


def column_of_row(C: Tensor, N: int):
    D = np.zeros((C.shape[-1], N))
    D[:, 0] = np.log(C)  # (1, I) into (I,)
    return D


def rows_of_products(x: Tensor, W: Tensor):
    h = np.zeros((3, 4))
    for t in range(3):
        h[t] = np.tanh(x[t:t + 1] @ W)  # (1, 4) into (4,)
    g = np.zeros((2, 4))
    g[:] = x[0:1]
    g[np.arange(2), 1] = x[0:1, 0:2] * 3.0
    return (h * h).sum() + (g * g).sum()


def test_a_value_with_leading_axes_of_size_1_is_written():
    """numpy drops a written value's leading axes of size 1 (libfmp's viterbi_log_likelihood
    is called with C of shape (1, I)); its gradient is the region's, reshaped."""
    C = np.full((1, 3), 1 / 3)
    assert_same(script(column_of_row)(C, 4), column_of_row(C, 4))
    rng = np.random.default_rng(0)
    x, W = rng.standard_normal((3, 4)), rng.standard_normal((4, 4))
    assert_same(script(rows_of_products)(x, W), rows_of_products(x, W))
    check_vjp(script(rows_of_products), (x, W))


def through_matrices(x: Tensor, Ks: List[Tensor]):
    for K in Ks:
        x = np.tanh(K @ x)
    return np.sum(x)


def test_grad_of_a_function_iterating_a_list_argument():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 1))
    Ks = [rng.standard_normal((2, 2)) for _ in range(3)]
    f = script(through_matrices)
    _, want = rs.value_and_grad(f)(x, Ks)
    np.testing.assert_allclose(rs.grad(f)(x, Ks), want, rtol=1e-12)
    _, (_, want_ks) = rs.value_and_grad(f, argnums=(0, 1))(x, Ks)
    got_ks = rs.grad(f, argnums=1)(x, Ks)
    assert type(got_ks) is list and len(got_ks) == 3
    for g, w in zip(got_ks, want_ks):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    with pytest.raises(rs.ScriptError, match="list argument"):
        rs.grad(rs.grad(f))(x, Ks)


def row_losses(x: Tensor):
    loss = 0
    for t in range(x.shape[0]):
        loss += np.tanh(x[t]).reshape(-1, 1)
    return np.sum(loss)


@pytest.mark.parametrize("steps", [3, 40])
def test_gradient_of_an_accumulator_that_starts_as_a_number_and_adds_arrays(steps):
    """``loss = 0; loss += (B, 1) losses`` (adcondev's cal_loss_accuracy): unrolled, or a loop
    whose first trip is peeled so that it carries one shape."""
    x = np.random.default_rng(1).standard_normal((steps, 2))
    f = script(row_losses)
    assert_same(f(x), row_losses(x))
    np.testing.assert_allclose(rs.grad(f)(x), 1 - np.tanh(x) ** 2, rtol=1e-12)
    check_vjp(f, (x,))


def keyed_by_step(x: Tensor, n: int, m: int):
    cache = {}
    for t in range(n):
        cache['a' + str(t)] = x * t
    us = [0.] * m
    for i in range(m):
        us[i] = float(x[i]) * 2
    return cache, us, ['a'] * 2 + 2 * ['b'], str(1.5) + str(True)


@pytest.mark.parametrize("n", [2, 30])
def test_str_of_a_number_and_a_list_of_numbers_repeated(n):
    """adcondev's ``cache['a' + str(t)]``, filterpy's ``us = [0.] * n``; ``[x] * n`` of arrays
    is refused (its items would be one array)."""
    x = np.arange(4.0)
    got, want = script(keyed_by_step)(x, n, 3), keyed_by_step(x, n, 3)
    assert list(got[0]) == list(want[0])
    assert_same(list(got[0].values()), list(want[0].values()))
    assert_same(got[1], want[1])
    assert got[2:] == want[2:]

    def repeated(x: Tensor, n: int):
        return [x] * n
    with pytest.raises(rs.ScriptError, match=r"x.copy\(\) for _ in range"):
        script(repeated)(x, 2)


def numpy_helpers(a: Tensor, b: Tensor, zs: List[Tensor], s: float):
    return (np.logaddexp(a, b), np.logaddexp(a[0], 1.0), np.logaddexp(1.0, 2.0),
            np.isscalar(a), np.isscalar(a[0]), np.isscalar(s), np.atleast_1d(a[0]),
            np.atleast_2d(a), np.atleast_2d(a[0]), np.atleast_2d(zs[0][None]), np.size(zs, 0),
            np.size(a), np.size(a, 0), np.log(np.abs(a) + np.finfo(0.).tiny),
            np.finfo(np.float32).eps, np.iinfo(np.int32).max)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_helpers_of_the_ports(dtype):
    """np.logaddexp (brainstorm's CTC; numpy's own rule at a == b, infinities included),
    np.isscalar, np.atleast_1d/2d, np.size(a, axis), np.finfo/np.iinfo (filterpy, libfmp)."""
    a = np.array([-np.inf, np.inf, 0.0, 1.0, -3.0, np.nan, -np.inf, 1e30], dtype)
    b = np.array([-np.inf, np.inf, 0.0, 2.0, 5.0, 1.0, 3.0, 1e30], dtype)
    with np.errstate(invalid="ignore"):
        got, want = script(numpy_helpers)(a, b, [a, b], 2.0), numpy_helpers(a, b, [a, b], 2.0)
    assert [type(v) for v in got] == [type(v) for v in want]
    assert_same(got, want, rtol=1e-6 if dtype == np.float32 else 1e-15)
    a, b = np.array([0.5, -1.0, 2.0]), np.array([1.0, 3.0, 2.0])
    check_vjp(script(lambda_free_logaddexp), (a, b))  # a == b: half to each side


def lambda_free_logaddexp(a: Tensor, b: Tensor):
    return np.logaddexp(a, b)


def powers(x: Tensor, p: Tensor):
    return np.maximum(x, 0.0) ** p + x ** 0.0 + np.power(x, 0)


def clipped(x: Tensor, lo: Tensor, hi: Tensor):
    return np.clip(x, lo, hi) * np.arange(1.0, 4.0)


def spread(x: Tensor, d: int):
    return x.std(ddof=d) + np.var(x, ddof=d)


def test_gradients_at_the_edges_found_by_testing_against_torch():
    """``x ** p`` at a zero base: 0 for the exponent (not 0 * -inf) and for ``x ** 0`` (not
    0 * inf), as torch's; ``np.clip`` with ``lo > hi`` is ``hi``, which takes the gradient;
    ``ddof`` given by an int argument."""
    x, p = np.array([-1.0, 0.0, 2.0]), np.array([1.5, 2.0, 0.5])
    _, back = rs.vjp(script(powers), x, p)
    gx, gp = back(np.ones(3))
    np.testing.assert_allclose(gp, [0.0, 0.0, 2.0 ** 0.5 * np.log(2.0)], rtol=1e-12)
    np.testing.assert_allclose(gx, [0.0, 0.0, 0.5 * 2.0 ** -0.5], rtol=1e-12)
    x, lo, hi = np.array([-5.0, 0.5, 5.0]), np.array([2.0, 0.0, 2.0]), np.array([1.0, 1.0, 1.0])
    _, back = rs.vjp(script(clipped), x, lo, hi)
    gx, glo, ghi = back(np.ones(3))
    np.testing.assert_array_equal(gx, [0.0, 2.0, 0.0])
    np.testing.assert_array_equal(glo, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(ghi, [1.0, 0.0, 3.0])
    check_vjp(script(spread), (np.array([0.3, -1.2, 2.5, 0.7]), 1))


def fills(x: Tensor, c: bool):
    h = x.copy()
    h[0].fill(1.0)
    if c:
        h[:, 1].fill(-2.0)
    for t in range(1, 3):
        h[t, 1:].fill(float(t))
    return h


def test_fill_of_a_view_writes_the_array():
    """``h[t].fill(v)`` on basic indexing is a write into ``h`` (``h[t] = v``), in loops and
    branches too."""
    x = np.arange(12.0).reshape(3, 4)
    for c in (True, False):
        assert_same(script(fills)(x, c), fills(x, c))


def scaled(x: Tensor, W: Tensor, scale: float = 2.0):
    return np.sum(np.tanh(x @ W * scale) ** 2)


def test_gradients_take_keyword_arguments():
    rng = np.random.default_rng(0)
    x, W = rng.standard_normal((2, 3)), rng.standard_normal((3, 3))
    f = script(scaled)
    v, g = rs.value_and_grad(f, argnums=1)(x, W, scale=0.5)
    v2, g2 = rs.value_and_grad(f, argnums=1)(x, W, 0.5)
    assert v == v2
    np.testing.assert_array_equal(g, g2)
    np.testing.assert_array_equal(rs.grad(f, argnums=1)(x, W=W, scale=0.5), g2)
    with pytest.raises(rs.SignatureError, match="unexpected keyword"):
        rs.grad(f)(x, W, sale=0.5)


def autoregressive(x0: Tensor, W: Tensor, T: int):
    buf = np.zeros((T + 1,) + x0.shape)
    buf[0] = x0
    for t in range(T):
        buf[t + 1] = np.tanh(buf[t] @ W)
    return buf


def test_a_shape_joined_from_tuples_keeps_its_rank_for_gradients():
    rng = np.random.default_rng(0)
    x0, W = rng.standard_normal((2, 3)), rng.standard_normal((3, 3))
    assert_same(script(autoregressive)(x0, W, 4), autoregressive(x0, W, 4))
    check_vjp(script(autoregressive), (x0, W, 4))


@script
class Accumulator:
    def __init__(self, n: int):
        self.h = np.zeros(n)

    def bump(self, v: Tensor):
        self.h = self.h + v


def accumulate(x: Tensor):
    z = Accumulator(3)
    z.bump(x)
    z.bump(x * 2.0)
    return z.h


def test_a_field_made_by_init_takes_another_array_in_a_method():
    """``self.h = np.zeros(n)`` in ``__init__`` (a float64 vector) and ``self.h = self.h + v``
    in a method: the field holds arrays, not one shape and dtype."""
    x = np.arange(3.0)
    assert_same(script(accumulate)(x), accumulate(x))


def forward_by_branch(G: Tensor, viterbi: bool):
    C = np.zeros(G.shape)
    for t in range(1, G.shape[0]):
        a = C[t - 1]
        if viterbi:
            C[t] = np.maximum(G[t] - a, 0.0)
        else:
            C[t] = np.logaddexp(G[t], -a)
    return C


def test_a_view_read_before_a_write_in_either_branch():
    """``a = alpha[t - 1]`` then a write of ``alpha[t]`` in each branch of an ``if`` (a chain
    CRF's forward): the other branch's read of ``a`` does not run after the write."""
    G = np.random.default_rng(0).standard_normal((5, 3))
    for viterbi in (True, False):
        assert_same(script(forward_by_branch)(G, viterbi), forward_by_branch(G, viterbi))
    check_vjp(script(forward_by_branch), (G, False))


def largest(x, axis=None):
    return x.max(axis=axis)


def passes_its_axis_on(x: Tensor, axis: Optional[int] = None):
    return largest(x, axis)


def test_an_optional_int_passed_on_to_a_helper_stays_an_optional_int():
    x = np.arange(6.0).reshape(2, 3)
    for axis in (None, 1):
        assert_same(script(passes_its_axis_on)(x, axis), passes_its_axis_on(x, axis))


def fill_items(y: Tensor, m: Tensor):
    y = y.copy()
    m = m.copy()
    y[0].fill(5.0)  # a numpy scalar, a copy: y is unchanged
    m[0].fill(5.0)  # a row, a view: m changes
    return y, m


def grown_then_scaled(x: Tensor, n: int):
    h = x.copy()
    for _ in range(n):
        h = np.concatenate([h, x])
    h *= 0.5
    return h


def test_fill_of_an_item_and_an_in_place_update_of_an_unknown_shape():
    y, m = np.arange(3.0), np.arange(6.0).reshape(2, 3)
    assert_same(script(fill_items)(y, m), fill_items(y, m))
    got = script(grown_then_scaled)(y, 2)
    assert_same(got, grown_then_scaled(y, 2))
    got[0] = 1.0  # a new array, writable (not a broadcast view)


# -- an HMM's forward and backward passes, written as adeveloperdiary's blog writes them ----------
def hmm_forward(V: Tensor, a: Tensor, b: Tensor, pi: Tensor):
    alpha = np.zeros((V.shape[0], a.shape[0]))
    alpha[0, :] = pi * b[:, V[0]]
    for t in range(1, V.shape[0]):
        for j in range(a.shape[0]):
            alpha[t, j] = alpha[t - 1].dot(a[:, j]) * b[j, V[t]]
    return alpha


def hmm_likelihood(V: Tensor, a: Tensor, b: Tensor, pi: Tensor):
    p = 1
    alpha = np.zeros((V.shape[0], a.shape[0]))
    alpha[0, :] = pi * b[:, V[0]]
    for t in range(1, V.shape[0]):
        step = 0
        for j in range(a.shape[0]):
            alpha[t, j] = alpha[t - 1].dot(a[:, j]) * b[j, V[t]]
            step += alpha[t, j]
        p = p * step
    return p


def hmm_backward(V: Tensor, a: Tensor, b: Tensor):
    beta = np.zeros((V.shape[0], a.shape[0]))
    beta[V.shape[0] - 1] = np.ones((a.shape[0]))  # noqa: UP034 (as the blog writes it)
    for t in range(V.shape[0] - 2, -1, -1):
        for j in range(a.shape[0]):
            beta[t, j] = (beta[t + 1] * b[:, V[t + 1]]).dot(a[j, :])
    return beta


def _hmm_args(T, M=3, K=4, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.random((M, M))
    b = rng.random((M, K))
    return (rng.integers(0, K, T), a / a.sum(1, keepdims=True), b / b.sum(1, keepdims=True),
            np.full(M, 1.0 / M))


@pytest.mark.parametrize("fn", [hmm_forward, hmm_likelihood, hmm_backward],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_hmm_step_over_an_observation_runs_natively(fn, dtype):
    """``b[:, V[t]]`` and ``b[j, V[t]]`` index at an item of an int array (numpy's scalar): basic
    indexing, so a native loop runs the step (it refused the 0-d index array); ``x.dot(y)`` of
    two vectors is a native product; the ``step = 0`` accumulator's constant, a numpy scalar
    in the code, is passed to the native loop as an array (it ran the loop as Python)."""
    from tests.helpers import native_loops
    V, a, b, pi = _hmm_args(9)
    args = (V, a.astype(dtype), b.astype(dtype), pi.astype(dtype))[:3 if fn is hmm_backward
                                                                     else 4]
    f = script(fn)
    assert_same(f(*args), fn(*args), rtol=1e-5 if dtype == np.float32 else 1e-12)
    if dtype == np.float64:  # (float32 weights: a float64 row times a float32 column, which
        (loop,) = native_loops(f, *args)  # a native product does not take)
        assert loop.calls == 1
    if fn is not hmm_likelihood:  # (with one observation it returns `p = 1`: numpy's int,
        short = (V[:1], *args[1:])  # here a 0-d array)
        assert_same(f(*short), fn(*short))


@pytest.mark.parametrize("fn", [hmm_forward, hmm_likelihood, hmm_backward],
                         ids=lambda f: f.__name__)
def test_an_hmm_step_over_an_observation_differentiates(fn):
    V, a, b, pi = _hmm_args(6, seed=1)
    args = (V, a, b, pi)[:3 if fn is hmm_backward else 4]
    check_vjp(script(fn), args, argnums=tuple(range(1, len(args))))


def flipped(x: Tensor, label: Tensor):
    return np.fliplr(x) + np.flipud(x), np.flipud(label)


def test_fliplr_and_flipud_are_numpys():
    x, label = np.arange(12.0).reshape(3, 4), np.arange(5)
    assert_same(script(flipped)(x, label), flipped(x, label))
    check_vjp(script(flipped), (np.random.default_rng(0).standard_normal((3, 4)), label),
              argnums=(0,))


def nan_to_zero(out: Tensor):
    loss = np.log(out)
    loss[np.isnan(loss)] = 0
    grad = out - 1.0 / out
    grad[np.isnan(grad) | np.isinf(grad)] = 0
    kept = ~np.isnan(out) & (out > 0) ^ (out > 1.5)
    return -np.sum(loss), grad, kept


def test_a_write_through_a_mask_written_in_the_index_is_numpys():
    # a CTC loss's `loss[np.isnan(loss)] = 0`: the mask a call, not a name or a comparison
    out = np.array([[0.5, -1.0, 0.0], [2.0, np.nan, 1.0]])
    with np.errstate(all="ignore"):
        assert_same(script(nan_to_zero)(out), nan_to_zero(out))


def early_return(out: Tensor, length: int):
    grad = np.zeros_like(out)
    if length == 0:
        return 0.0, grad
    return -np.sum(np.log(out[:, :length])), grad + 1.0


def test_a_number_returned_early_beside_an_array_in_a_tuple_is_a_0d_array():
    # `return 0.0, softmax_grad` before `return loss, softmax_grad` (a CTC loss): each item of
    # the tuples joins as a number and an array join (a 0-d array holding the number)
    out = np.random.default_rng(0).random((3, 4)) + 0.5
    f = script(early_return)
    for length in (0, 2):
        got, want = f(out, length), early_return(out, length)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        assert_same(got[1], want[1])


def masked_pop(x: Tensor, k: Tensor):
    stack = [0, 1]
    y = x.copy()
    y[np.abs(k[stack.pop()])] = 0.0  # an int index, not a mask: the pop runs once
    return y, len(stack)


def test_an_index_with_effects_that_is_not_a_mask_is_evaluated_once():
    x, k = np.arange(5.0), np.array([-3, -1])
    assert_same(script(masked_pop)(x, k), masked_pop(x, k))


def pick(b, V, axis=None):
    return np.take(b, V, axis=axis)


def take_flat(b: Tensor, V: Tensor):
    return np.take(b, V[0]) * 1.0, np.take(b, V, axis=1), np.take(b, V), pick(b, V)


def test_np_take_without_an_axis_reads_the_flattened_array():
    b, V = np.arange(12.0).reshape(3, 4), np.array([2, 1])
    assert_same(script(take_flat)(b, V), take_flat(b, V))
    check_vjp(script(take_flat), (np.random.default_rng(0).standard_normal((3, 4)), V),
              argnums=(0,))


def gru_backward_style(dH: Tensor, cache: Dict[str, Tensor]):
    # MichaelMastro's batched GRU backward (MIT): float64 buffers (np.zeros' default) against
    # the cached weights, whose column blocks are read transposed in every step
    W = cache["W"]
    n, b, d = dH.shape
    dX = np.zeros((n, b, d))
    dh = np.zeros((b, d))
    for t in reversed(range(n)):
        g = (dH[t] + dh) * 0.5
        dX[t] = g.dot(W[:, 2 * d:].transpose())
        dh = np.tanh(g.dot(W[:, :d].transpose()))
    return dX, dh


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_views_of_a_weight_and_a_float32_product_in_a_float64_loop_run_natively(dtype):
    """The column blocks of a weight read from a dict, transposed, are views: they are made once
    before the loop (they were made every step, and the loop ran as Python); a float64 row
    times a float32 weight is numpy's float64 product of the weight cast, the cast made once."""
    from tests.helpers import native_loops
    rng = np.random.default_rng(2)
    dH = rng.standard_normal((40, 3, 4))  # (a loop of a few steps is unrolled)
    cache = {"W": rng.standard_normal((4, 12)).astype(dtype)}
    f = script(gru_backward_style)
    assert_same(f(dH, cache), gru_backward_style(dH, cache), rtol=1e-12)
    (loop,) = native_loops(f, dH, cache)
    assert loop.calls == 1


def bidirectional(X: Tensor, W: Tensor):
    # a bidirectional RNN's outputs (JohnCook17/holbertonschool-machine_learning, bi_rnn):
    # np.concatenate of a tuple of two lists of arrays, each made an array first
    H_f = []
    H_b = []
    h_f = np.zeros((X.shape[1], W.shape[1]))
    h_b = np.zeros((X.shape[1], W.shape[1]))
    for t in range(X.shape[0]):
        h_f = np.tanh(X[t] @ W + h_f)
        h_b = np.tanh(X[X.shape[0] - 1 - t] @ W + h_b)
        H_f.append(h_f)
        H_b.append(h_b)
    return np.concatenate((H_f, H_b), axis=2)


def test_np_concatenate_of_lists_of_arrays_stacks_each_list():
    rng = np.random.default_rng(4)
    X, W = rng.standard_normal((5, 3, 2)), rng.standard_normal((2, 4)) * 0.5
    assert_same(script(bidirectional)(X, W), bidirectional(X, W), rtol=1e-12)
    check_vjp(script(bidirectional), (X, W))


class WeightDict:
    def __init__(self, H, D, seed=0):
        rng = np.random.default_rng(seed)
        self.param = {"W": rng.standard_normal((H, H + D)) * 0.3, "b": np.zeros((H, 1))}


def train_step(self: WeightDict, inputs: List[Tensor], h: Tensor, lr: float = 0.1):
    # gstechgeek/LSTM_from_scratch's train (no license stated; the pattern only): the weight
    # dict is read by the forward steps and updated at the end, at keys known only at run time
    loss = 0
    for i in range(len(inputs)):
        hx = np.concatenate((h, inputs[i]))
        h = np.tanh(self.param["W"] @ hx + self.param["b"])
        loss += np.sum(h * h)
    for k in self.param:
        self.param[k] = self.param[k] - lr * self.param[k]
    return loss, h


def test_the_reads_of_a_dict_argument_before_it_is_updated_keep_its_items_types():
    """The forward loop reads the weights at constant keys before the update writes the dict:
    those reads have the call's item types, so the loop runs natively (it ran as Python, its
    products of arrays of unknown shape); the update after it reads the dict as written."""
    from tests.helpers import native_loops
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((4, 1)) for _ in range(30)]
    h = rng.standard_normal((5, 1))
    m1, m2 = WeightDict(5, 4), WeightDict(5, 4)
    f = script(train_step)
    assert_same(f(m1, inputs, h), train_step(m2, inputs, h), rtol=1e-12)
    assert all(np.array_equal(m1.param[k], m2.param[k]) for k in m1.param)
    loops = native_loops(f, m1, inputs, h)
    assert any(lp.calls for lp in loops)


def popped_writes(x: Tensor):
    s = [0, 1, 2, 3]
    y = x.copy()
    y[s.pop()] = 1.0
    y[s.pop() > 0] = 2.0  # y[True]: every element
    z = x.reshape(2, 2).copy()
    z[s.pop(), 0] = 3.0
    y[s.pop() - 1] = 4.0
    return y, z, len(s)


def test_a_written_index_with_effects_runs_once():
    x = np.array([0.3, -0.4, 0.7, -1.5])
    assert_same(script(popped_writes)(x), popped_writes(x))


def gradient_step(self: WeightDict, inputs: List[Tensor], h: Tensor):
    # the same train step's gradient buffers: zeros like each weight, at keys known when it runs
    grad = {}
    for k in self.param:
        grad[k] = np.zeros_like(self.param[k])
    for i in range(len(inputs)):
        hx = np.concatenate((h, inputs[i]))
        h = np.tanh(self.param["W"] @ hx + self.param["b"])
        grad["W"] += (1 - h * h) @ hx.T
        grad["b"] += 1 - h * h
    for k in self.param:
        self.param[k] = self.param[k] - 0.1 * grad[k]
    return h


def test_a_read_of_a_dict_argument_at_a_run_time_key_has_the_join_of_its_items():
    """``self.param[k]`` for a key known when it runs is one of the call's items: the join of
    their types (here 2-D float64 arrays), so ``grad[k] += ...`` needs no check of its rank
    when it runs (a branch in the loop, which kept it Python)."""
    rng = np.random.default_rng(4)
    inputs = [rng.standard_normal((4, 1)) for _ in range(30)]
    h = rng.standard_normal((5, 1))
    m1, m2 = WeightDict(5, 4), WeightDict(5, 4)
    f = script(gradient_step)
    assert_same(f(m1, inputs, h), gradient_step(m2, inputs, h), rtol=1e-12)
    assert all(np.allclose(m1.param[k], m2.param[k], rtol=1e-12) for k in m1.param)
    graph = str(f.graph_for(m1, inputs, h))
    assert "tensor::ndim" not in graph and "prim::If" not in graph
