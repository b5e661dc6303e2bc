"""Differentiating only what needs a gradient: ``vjp(..., argnums=...)`` and activity analysis.

Requested gradients equal finite differences (and the gradients of a full ``vjp``); the others are
None; the backward of an LSTM layer trained with respect to its weights has no input-gradient
GEMM; a value no output's gradient needs (a running maximum feeding a decision) gets no
cotangent in the reverse loop.
"""

import numpy as np
import pytest

from script import Module, Parameter, Tensor, script, value_and_grad, vjp
from script.errors import SignatureError
from tests.gradcheck import check_vjp
from tests.passes.autodiff.test_programs import BATCH, HIDDEN, INPUT, SEQ, _lstm_args
from tests.programs import activity, cells


def _r(rng, *shape):
    return rng.standard_normal(shape)


@pytest.mark.parametrize("seed", range(3))
def test_lstm_layer_random_argnums_match_finite_differences(seed):
    rng = np.random.default_rng(seed)
    args = _lstm_args(rng, seq=4)
    argnums = tuple(k for k in range(7) if rng.random() < 0.5) or (3,)
    check_vjp(cells.lstm_layer, args, argnums=argnums, seed=seed)


def test_requested_gradients_equal_the_full_vjp_and_the_rest_are_none():
    f = script(cells.lstm_layer)
    args = _lstm_args(np.random.default_rng(4))
    out, full = vjp(f, *args)
    ct = (np.ones_like(out[0]), (np.ones_like(out[1][0]), np.ones_like(out[1][1])))
    want = full(ct)
    _, weights_only = vjp(f, *args, argnums=(-4, -3, -2, -1))
    got = weights_only(ct)
    assert got[:3] == (None, None, None)
    for g, w in zip(got[3:], want[3:]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def _matmul_shapes(graph):
    return [n.output.type.shape for n in graph.walk()
            if n.kind == "tensor::matmul"]


def test_lstm_layer_with_respect_to_weights_has_no_input_gradient_gemm():
    f = script(cells.lstm_layer)
    args = _lstm_args(np.random.default_rng(5))
    input_gemm = (SEQ * BATCH, INPUT)
    assert input_gemm in _matmul_shapes(f.backward_graph_for(*args))
    forward, backward = f.vjp_graphs_for(*args, argnums=(1, 2, 3, 4, 5, 6))
    assert input_gemm not in _matmul_shapes(backward)
    saved = backward.inputs[1:]
    assert all(v.type.shape != (INPUT, 4 * HIDDEN) for v in saved if hasattr(v.type, "shape"))
    assert len(forward.outputs) == 1 + len(saved)


def test_value_and_grad_differentiates_only_its_argnums():
    def loss(x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
             b_hh: Tensor) -> Tensor:
        y, hc = cells.lstm_layer(x, h, c, w_ih, w_hh, b_ih, b_hh)
        return np.sum(y * y)

    f = script(loss)
    args = _lstm_args(np.random.default_rng(6))
    _, g = value_and_grad(f, argnums=3)(*args)
    _, full = value_and_grad(f, argnums=(0, 3))(*args)
    np.testing.assert_allclose(g, full[1], rtol=1e-12)
    compiled = [c for key, c in f._gradient_cache.items() if key[1] == frozenset({3})]
    assert len(compiled) == 1
    assert (SEQ * BATCH, INPUT) not in _matmul_shapes(compiled[0].gradient.backward)


def test_a_value_only_a_decision_reads_gets_no_cotangent():
    rng = np.random.default_rng(7)
    args = (_r(rng, 12, 3, 4), _r(rng, 3, 4), _r(rng, 4, 4) * 0.5, _r(rng, 4, 4))
    f = script(activity.carried_decision)
    (loop,) = [n for n in f.backward_graph_for(*args).nodes() if n.kind == "prim::Loop"]
    assert len(loop.outputs) == 1  # the hidden state's cotangent only
    assert "tensor::matmul" not in [n.kind for n in loop.blocks[0].nodes]
    check_vjp(activity.carried_decision, args, argnums=(1, 2, 3))
    _, backward = vjp(f, *args)
    assert np.all(backward((np.ones((3, 4)), None))[3] == 0)


def test_masked_layer_gradients_with_argnums():
    rng = np.random.default_rng(8)
    args = (_r(rng, 6, 3, 5), np.array([6, 4, 2]), _r(rng, 3, 4), _r(rng, 4, 5) * 0.5,
            _r(rng, 4, 4) * 0.5, _r(rng, 4))
    check_vjp(activity.masked_layer, args, argnums=(2, 3, 4, 5))


class Elman(Module):
    def __init__(self, rng):
        super().__init__()
        self.w_ih = Parameter(_r(rng, HIDDEN, INPUT) * 0.5)
        self.w_hh = Parameter(_r(rng, HIDDEN, HIDDEN) * 0.5)

    def forward(self, x: Tensor, h: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            h = np.tanh(x[t] @ self.w_ih.T + h @ self.w_hh.T)
        return h


def test_module_parameters_are_differentiated_and_inputs_only_when_named():
    rng = np.random.default_rng(9)
    x, h = _r(rng, SEQ, BATCH, INPUT), _r(rng, BATCH, HIDDEN)
    model = Elman(rng)
    ct = _r(rng, BATCH, HIDDEN)
    _, backward = vjp(model, x, h)
    dx, dh = backward(ct)
    want = {name: p.grad.copy() for name, p in model.named_parameters()}
    for _, p in model.named_parameters():
        p.grad = None
    _, backward = vjp(model, x, h, argnums=())
    assert backward(ct) == (None, None)
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad, want[name], rtol=1e-12, err_msg=name)
    _, backward = vjp(model, x, h, argnums=1)
    none, dh_only = backward(ct)
    assert none is None
    np.testing.assert_allclose(dh_only, dh, rtol=1e-12)


@pytest.mark.parametrize("argnums", [7, (0, -8), (1.5,)])
def test_argnums_out_of_range_is_a_signature_error(argnums):
    args = _lstm_args(np.random.default_rng(10))
    with pytest.raises(SignatureError, match="argnums"):
        vjp(cells.lstm_layer, *args, argnums=argnums)


def test_regions_view_and_log(monkeypatch, capsys):
    f = script(cells.lstm_layer)
    args = _lstm_args(np.random.default_rng(11))
    view, _ = f.vjp_graphs_for(*args, argnums=(1, 2, 3, 4, 5, 6), regions=True)
    view.verify()
    top = [n.kind for n in view.nodes() if n.kind != "prim::Constant"]
    assert top == ["tensor::reshape", "prim::DifferentiableGraph"]  # x's reshape: data only
    monkeypatch.setenv("RNNSCRIPT_LOG", "passes")
    vjp(script(cells.lstm_layer), *args)
    assert "// ---- differentiable regions ----" in capsys.readouterr().err


@pytest.mark.parametrize("trips", [0, 2])
def test_a_carried_value_the_body_overwrites_keeps_its_initial_gradient(trips):
    """The carried value is needed as a whole: with no iteration the result is the initial
    value, whose gradient must not be dropped because the body never reads it."""
    rng = np.random.default_rng(12)
    check_vjp(activity.overwritten_in_loop, (_r(rng, 3), _r(rng, 3), trips))


def test_a_dict_read_before_its_first_differentiated_store():
    """Reading a dict's constant first entry, before any stored value depends on an argument,
    was inactive while the soundness check (which sees a container as one value) wanted it to
    have a cotangent: the gradient was refused."""
    rng = np.random.default_rng(13)
    args = (_r(rng, 3, 2, 3), _r(rng, 3, 4), _r(rng, 4, 4) * 0.3)
    check_vjp(activity.dict_started_with_zeros, args)
    check_vjp(activity.dict_started_with_zeros, args, argnums=(2,))
