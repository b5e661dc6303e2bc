"""The corpus programs that come with a hand-written backward pass: compiled, it equals the
gradient the compiler derives from the compiled forward (CS231n's ``rnn_backward``, Deep Learning
from Scratch 2's ``LSTM.backward``, Nico Jimenez's ``top_diff_is`` through ``y_list_is``)."""

import numpy as np
import pytest

from benchmarks.realworld_programs import cs231n_rnn, dlfs2_layers, lstm_nicodjimenez
from script import script, vjp


def test_cs231n_rnn_backward_equals_the_derived_gradient():
    args = cs231n_rnn.forward_args("float64", "test")
    dh = np.random.default_rng(2).standard_normal((3, 5, 6))
    _, backward = vjp(script(cs231n_rnn.forward_h), *args)
    derived = backward(dh)
    _, cache = cs231n_rnn.rnn_forward(*args)
    got = script(cs231n_rnn.rnn_backward)(dh, cache)
    for g, want in zip(got, derived):
        np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dlfs2_lstm_backward_equals_the_derived_gradient(dtype):
    args = dlfs2_layers.CASES["lstm_forward"].make_args(dtype, "test")
    x, h_prev, c_prev, Wx, Wh, b = args
    dh_next, dc_next = dlfs2_layers.arrays(dtype, 99, h_prev.shape, h_prev.shape)
    _, _, cache = dlfs2_layers.lstm_forward(*args)
    want = dlfs2_layers.lstm_backward(dh_next, dc_next, Wx, Wh, cache)
    got = script(dlfs2_layers.lstm_backward)(dh_next, dc_next, Wx, Wh, cache)
    tol = 2e-5 if dtype == "float32" else 1e-12
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    _, backward = vjp(script(dlfs2_layers.lstm_step), *args)
    derived = backward((dh_next, dc_next))  # in the arguments' order: x, h_prev, c_prev, ...
    dx, dh_prev, dc_prev, dWx, dWh, db = want
    for k, w in enumerate((dx, dh_prev, dc_prev, dWx, dWh, db)):
        np.testing.assert_allclose(derived[k], w, rtol=tol, atol=tol)


def test_nicodjimenez_top_diff_is_equals_the_derived_gradient():
    x_list, y_list, params, mem_cell_ct, _ = lstm_nicodjimenez.y_list_args("float64", "test")
    loss, diffs = script(lstm_nicodjimenez.y_list_is)(*lstm_nicodjimenez.y_list_args(
        "float64", "test"))
    want_loss = lstm_nicodjimenez.network_loss(x_list, y_list, params, mem_cell_ct)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-12)
    # the derived gradient, by central differences of the plain loss (vjp of network_loss is
    # refused today: see the corpus test)
    for k, p in enumerate(params):
        numeric = np.zeros_like(p)
        for idx in np.ndindex(p.shape):
            up, down = [q.copy() for q in params], [q.copy() for q in params]
            up[k][idx] += 1e-6
            down[k][idx] -= 1e-6
            numeric[idx] = (lstm_nicodjimenez.network_loss(x_list, y_list, up, mem_cell_ct)
                            - lstm_nicodjimenez.network_loss(x_list, y_list, down,
                                                             mem_cell_ct)) / 2e-6
        np.testing.assert_allclose(diffs[k], numeric, rtol=1e-6, atol=1e-8)
