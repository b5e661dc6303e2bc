"""Gradients through a ``List[Tensor]`` argument: one gradient per item, returned as a list.

The items of a list argument may have different shapes (a stack of layers whose first input
weight is ``(4H, I)`` and the others ``(4H, H)``) and may be read at an index computed from a
loop counter (``params[4 * layer + 1]``). Every case is checked against central finite
differences (float64) of the eager function and of the compiled one, through the optimized and
the unoptimized backward; the fastrnns stacks also against the hand-written numpy backward.
"""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

from benchmarks.fastrnns import cells
from benchmarks.fastrnns.factory import Sizes, numpy_layer_vjp, rnn_inputs, stacked
from script import Tensor, ops, script, vjp
from tests.gradcheck import check_vjp


def stack_inputs(layers: int, input_size: int = 3, hidden: int = 2, batch: int = 2,
                 seq: int = 3):
    sizes = Sizes(seq_length=seq, num_layers=layers, input_size=input_size, hidden_size=hidden,
                  mini_batch=batch, dtype="float64")
    inp = rnn_inputs(sizes)
    return inp, [w for layer in inp.weights for w in layer]


def mlp(x: Tensor, ws: List[Tensor]) -> Tensor:
    for i in range(len(ws)):
        x = np.tanh(x @ ws[i])
    return x


def product_of_first_two(x: Tensor, ws: List[Tensor]) -> Tensor:
    return x @ ws[0] @ ws[1]


def long_list_sum(x: Tensor, ws: List[Tensor]) -> Tensor:
    for i in range(len(ws)):
        x = x * ws[i]
    return x


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_multilayer_lstm_gradients_match_finite_differences(layers):
    inp, params = stack_inputs(layers)
    check_vjp(cells.multilayer_lstm, (inp.x, inp.hx, inp.cx, params))


def test_multilayer_lstm_gradients_equal_the_hand_written_numpy_backward():
    inp, params = stack_inputs(3, input_size=5, hidden=4, batch=3, seq=6)
    reference = stacked(numpy_layer_vjp, inp.x, (inp.hx, inp.cx), inp.weights)
    want_out, tapes = reference.forward()
    rng = np.random.default_rng(0)
    ct = tuple(rng.standard_normal(o.shape) for o in want_out)
    want = reference.backward(tapes, ct)
    out, backward = vjp(script(cells.multilayer_lstm), inp.x, inp.hx, inp.cx, params)
    for got_o, want_o in zip(out, want_out):
        np.testing.assert_allclose(got_o, want_o, rtol=1e-10, atol=1e-12)
    dx, dhx, dcx, dparams = backward(ct)
    assert isinstance(dparams, list) and len(dparams) == len(params) == 12
    got = (dx, dhx, dcx, *dparams)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11, err_msg=f"gradient {k}")


def test_each_weight_gets_a_gradient_of_its_own_shape():
    inp, params = stack_inputs(2, input_size=7, hidden=3)
    _, backward = vjp(script(cells.multilayer_lstm), inp.x, inp.hx, inp.cx, params)
    cts = (np.ones((3, 2, 3)), np.ones((2, 2, 3)), np.ones((2, 2, 3)))
    dparams = backward(cts)[3]
    assert [g.shape for g in dparams] == [w.shape for w in params]
    assert all(np.abs(g).sum() > 0 for g in dparams)


@pytest.mark.parametrize("training", [False, True])
def test_dropout_lstm_gradients_match_finite_differences(training):
    inp, params = stack_inputs(2)
    # the same mask on every evaluation: dropout draws from the generator manual_seed resets
    check_vjp(cells.dropout_lstm, (inp.x, inp.hx, inp.cx, params, training),
              before_call=lambda: ops.manual_seed(3))


def test_dropout_lstm_in_eval_mode_has_the_multilayer_gradients():
    inp, params = stack_inputs(2)
    rng = np.random.default_rng(1)
    ct = tuple(rng.standard_normal(s) for s in ((3, 2, 2), (2, 2, 2), (2, 2, 2)))
    _, plain = vjp(script(cells.multilayer_lstm), inp.x, inp.hx, inp.cx, params)
    _, eval_mode = vjp(script(cells.dropout_lstm), inp.x, inp.hx, inp.cx, params, False)
    for g, want in zip(eval_mode(ct)[3], plain(ct)[3]):
        np.testing.assert_allclose(g, want, rtol=1e-12)


def test_list_of_weights_of_different_shapes_read_by_a_loop():
    rng = np.random.default_rng(2)
    ws = [rng.standard_normal(s) for s in ((3, 5), (5, 4), (4, 2))]
    check_vjp(mlp, (rng.standard_normal((2, 3)), ws))


def test_list_read_at_constant_indices_only():
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(s) for s in ((3, 4), (4, 2), (7, 7))]
    check_vjp(product_of_first_two, (rng.standard_normal((2, 3)), ws))
    _, backward = vjp(script(product_of_first_two), rng.standard_normal((2, 3)), ws)
    unused = backward(np.ones((2, 2)))[1][2]
    assert unused.shape == (7, 7) and not unused.any()


def test_a_list_read_by_a_loop_too_long_to_unroll_says_why():
    rng = np.random.default_rng(4)
    ws = [rng.standard_normal(3) for _ in range(40)]
    with pytest.raises(Exception, match="non-constant index"):
        vjp(script(long_list_sum), rng.standard_normal(3), ws)


def test_a_list_of_another_length_is_another_specialization():
    rng = np.random.default_rng(5)
    f = script(mlp)
    x = rng.standard_normal((2, 3))
    for shapes in (((3, 3),), ((3, 4), (4, 3), (3, 3))):
        ws = [rng.standard_normal(s) for s in shapes]
        out, backward = vjp(f, x, ws)
        np.testing.assert_allclose(out, mlp(x, ws))
        assert [g.shape for g in backward(np.ones_like(out))[1]] == list(shapes)
