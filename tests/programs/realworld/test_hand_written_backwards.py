"""The corpus programs that come with a hand-written backward pass: compiled, it equals the
gradient the compiler derives from the compiled forward (CS231n's ``rnn_backward``, Deep Learning
from Scratch 2's ``LSTM.backward``, ML-From-Scratch's ``RNN.backward_pass``)."""

import numpy as np
import pytest

from benchmarks.realworld_programs import cs231n_rnn, dlfs2_layers, mlfromscratch_rnn
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


def test_mlfromscratch_backward_pass_weight_gradients_equal_the_derived_gradient():
    """With ``bptt_trunc`` covering the sequence the truncation cuts nothing: the weight
    gradients are the exact ones (the input gradient is the source's one-step term, not
    compared)."""
    X, U, V, W, n_units = mlfromscratch_rnn.forward_args("float64", "test")
    accum_grad = np.random.default_rng(5).standard_normal(X.shape)
    _, backward = vjp(script(mlfromscratch_rnn.forward_outputs), X, U, V, W, n_units)
    _, dU, dV, dW = backward(accum_grad)[:4]
    _, state_input, states, layer_input = mlfromscratch_rnn.forward_pass(X, U, V, W, n_units)
    got = script(mlfromscratch_rnn.backward_pass)(accum_grad, layer_input, state_input, states,
                                                  U, V, W, X.shape[1])
    for g, want in zip(got[:3], (dU, dV, dW)):
        np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)
