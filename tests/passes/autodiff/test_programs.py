"""Gradients of scripted programs: recurrent cells and layers, control flow, the API, training."""

from typing import List, Tuple

import numpy as np
import pytest

from script import Tensor, ops, script, value_and_grad, vjp
from script.errors import ScriptError
from tests.gradcheck import check_vjp, numerical_grad
from tests.programs import cells

SEQ, BATCH, INPUT, HIDDEN = 7, 3, 5, 4


def _r(rng, *shape, scale=0.5):
    return rng.standard_normal(shape) * scale


def _lstm_args(rng, seq=SEQ):
    return (_r(rng, seq, BATCH, INPUT), _r(rng, BATCH, HIDDEN), _r(rng, BATCH, HIDDEN),
            _r(rng, 4 * HIDDEN, INPUT), _r(rng, 4 * HIDDEN, HIDDEN), _r(rng, 4 * HIDDEN),
            _r(rng, 4 * HIDDEN))


def gru_layer(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
              b_hh: Tensor) -> Tensor:
    outputs: List[Tensor] = []
    for t in range(x.shape[0]):
        h = cells.gru_cell(x[t], h, w_ih, w_hh, b_ih, b_hh)
        outputs.append(h)
    return ops.stack(outputs, 0)


def layernorm_lstm_layer(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor,
                         gamma: Tensor, beta: Tensor) -> Tuple[Tensor, Tensor]:
    outputs: List[Tensor] = []
    for x_t in ops.unbind(x, 0):
        gates = ops.layer_norm(x_t @ w_ih.T, gamma, beta) + hx @ w_hh.T
        i, f, g, o = ops.chunk(gates, 4, 1)
        cx = ops.layer_norm(ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g))
        hx = ops.sigmoid(o) * np.tanh(cx)
        outputs.append(hx)
    return ops.stack(outputs, 0), cx


# -- recurrent cells and layers vs finite differences -------------------------------------------
def test_lstm_cell_gradients():
    rng = np.random.default_rng(0)
    x, h, c, *w = _lstm_args(rng)
    check_vjp(script(cells.lstm_cell), (x[0], (h, c), *w))


def test_gru_cell_gradients():
    rng = np.random.default_rng(1)
    args = (_r(rng, BATCH, INPUT), _r(rng, BATCH, HIDDEN), _r(rng, 3 * HIDDEN, INPUT),
            _r(rng, 3 * HIDDEN, HIDDEN), _r(rng, 3 * HIDDEN), _r(rng, 3 * HIDDEN))
    check_vjp(script(cells.gru_cell), args)


@pytest.mark.parametrize("name", ["lstm_layer", "lstm_layer_indexed"])
def test_lstm_layer_gradients(name):
    check_vjp(script(getattr(cells, name)), _lstm_args(np.random.default_rng(2)))


def test_gru_layer_gradients():
    rng = np.random.default_rng(3)
    args = (_r(rng, SEQ, BATCH, INPUT), _r(rng, BATCH, HIDDEN), _r(rng, 3 * HIDDEN, INPUT),
            _r(rng, 3 * HIDDEN, HIDDEN), _r(rng, 3 * HIDDEN), _r(rng, 3 * HIDDEN))
    check_vjp(script(gru_layer), args)


def test_layernorm_lstm_layer_gradients():
    rng = np.random.default_rng(4)
    x, h, c, w_ih, w_hh, _, _ = _lstm_args(rng)
    check_vjp(script(layernorm_lstm_layer),
              (x, h, c, w_ih, w_hh, 1 + _r(rng, 4 * HIDDEN), _r(rng, 4 * HIDDEN)))


def test_lstm_layer_matches_torch_autograd():
    torch = pytest.importorskip("torch")
    args = _lstm_args(np.random.default_rng(5))
    f = script(cells.lstm_layer)
    (ys, (hy, cy)), backward = vjp(f, *args)
    rng = np.random.default_rng(6)
    cts = (rng.standard_normal(ys.shape), (rng.standard_normal(hy.shape),
                                          rng.standard_normal(cy.shape)))
    grads = backward(cts)
    lstm = torch.nn.LSTM(INPUT, HIDDEN).double()
    with torch.no_grad():
        for name, value in zip(("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"),
                               args[3:]):
            getattr(lstm, name).copy_(torch.from_numpy(value))
    x, h, c = (torch.from_numpy(a).requires_grad_() for a in args[:3])
    out, (th, tc) = lstm(x, (h[None], c[None]))
    np.testing.assert_allclose(out.detach().numpy(), ys, rtol=1e-5, atol=1e-8)
    loss = ((out * torch.from_numpy(cts[0])).sum() + (th[0] * torch.from_numpy(cts[1][0])).sum()
            + (tc[0] * torch.from_numpy(cts[1][1])).sum())
    loss.backward()
    want = [x.grad, h.grad, c.grad, lstm.weight_ih_l0.grad, lstm.weight_hh_l0.grad,
            lstm.bias_ih_l0.grad, lstm.bias_hh_l0.grad]
    for got, expected in zip(grads, want):
        np.testing.assert_allclose(got, expected.numpy(), rtol=1e-5, atol=1e-8)


# -- control flow ---------------------------------------------------------------------------------
def branchy(x: Tensor, w: Tensor, flag: bool) -> Tensor:
    if flag:
        y = np.tanh(x * w)
    else:
        y = x * x + w
    return y.sum(axis=0)


def power_loop(x: Tensor, w: Tensor, n: int) -> Tensor:
    h = x
    for i in range(n):
        h = np.tanh(h @ w + float(i))
    return h


def while_loop(x: Tensor, limit: float) -> Tuple[Tensor, int]:
    steps = 0
    while float(np.sum(np.abs(x))) < limit:
        x = x * 1.5 + np.sin(x)
        steps += 1
    return x, steps


def branch_in_loop(x: Tensor, w: Tensor) -> Tensor:
    h = x
    for i in range(4):
        if i % 2 == 0:
            h = np.tanh(h * w)
        else:
            h = ops.sigmoid(h) + w
    return h


@pytest.mark.parametrize("flag", [True, False])
def test_if_gradients(flag):
    rng = np.random.default_rng(7)
    check_vjp(script(branchy), (_r(rng, 3, 4), _r(rng, 4), flag))


def test_counted_loop_gradients():
    rng = np.random.default_rng(8)
    check_vjp(script(power_loop), (_r(rng, 2, 3), _r(rng, 3, 3), 5))


def test_while_loop_gradients():
    rng = np.random.default_rng(9)
    x = _r(rng, 2, 3)
    f = script(while_loop)
    (y, steps), backward = vjp(f, x, 20.0)
    assert steps == while_loop(x, 20.0)[1] > 1
    ct = (rng.standard_normal(y.shape), None)
    (g, none) = backward(ct)
    assert none is None
    want = numerical_grad(lambda a: while_loop(a, 20.0)[0], (x,), ct[0], (0,), 1e-6)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)


def test_if_inside_loop_gradients():
    rng = np.random.default_rng(10)
    check_vjp(script(branch_in_loop), (_r(rng, 2, 3), _r(rng, 3)))


# -- the API --------------------------------------------------------------------------------------
def loss_fn(x: Tensor, w: Tensor, n: int) -> Tensor:
    return np.sum(np.tanh(x @ w)) * float(n)


def test_value_and_grad_argnums():
    rng = np.random.default_rng(11)
    x, w = _r(rng, 3, 4), _r(rng, 4, 2)
    value, gx = value_and_grad(loss_fn)(x, w, 2)
    assert np.isclose(value, loss_fn(x, w, 2))
    value2, (gx2, gw, gn) = value_and_grad(loss_fn, argnums=(0, 1, 2))(x, w, 2)
    assert np.array_equal(gx, gx2) and gn is None
    s = 1 - np.tanh(x @ w) ** 2
    np.testing.assert_allclose(gw, 2 * x.T @ s, rtol=1e-12)


def test_value_and_grad_rejects_non_scalar_outputs():
    with pytest.raises(ScriptError, match="scalar"):
        value_and_grad(power_loop)(np.ones((2, 3)), np.ones((3, 3)), 1)


def test_integer_arrays_get_no_gradient():
    def f(x: Tensor, idx: Tensor) -> Tensor:
        return x * idx
    _, backward = vjp(f, np.ones(3), np.arange(3))
    gx, gi = backward(np.ones(3))
    assert gi is None and np.array_equal(gx, np.arange(3))


def test_forward_and_backward_compile_once_per_signature():
    f = script(power_loop)
    rng = np.random.default_rng(12)
    args = (_r(rng, 2, 3), _r(rng, 3, 3), 3)
    vjp(f, *args)
    cache = f.__dict__["_gradient_cache"]
    vjp(f, *(a + 1 if isinstance(a, np.ndarray) else a for a in args))
    assert len(cache) == 1
    vjp(f, _r(rng, 4, 3), args[1], 3)
    assert len(cache) == 2


def test_lstm_layer_backward_graph_has_a_fused_reverse_loop():
    """The reverse loop holds one fusion group and one matmul (the recurrent gradient); the
    weight gradients are one matmul each after the loop and the bias gradient one reduction."""
    f = script(cells.lstm_layer)
    g = f.backward_graph_for(*_lstm_args(np.random.default_rng(13)))
    loops = [n for n in g.nodes() if n.kind == "prim::Loop"]
    assert len(loops) == 1
    body = loops[0].blocks[0].nodes
    kinds = [n.kind for n in body]
    assert kinds.count("prim::FusionGroup") == 1
    assert kinds.count("tensor::matmul") == 1
    (recurrent,) = [n for n in body if n.kind == "tensor::matmul"]
    assert recurrent.output.type.shape == (BATCH, HIDDEN)
    assert "tensor::tanh" not in kinds and "tensor::sigmoid" not in kinds
    assert "tensor::sum_to" not in kinds and "tensor::add" not in kinds
    after = g.nodes()[g.nodes().index(loops[0]) + 1:]
    weight_grads = [n for n in after if n.kind == "tensor::matmul"
                    and sorted(n.output.type.shape) in ([INPUT, 4 * HIDDEN],
                                                        [HIDDEN, 4 * HIDDEN])]
    assert len(weight_grads) == 2  # w_ih and w_hh, each summed over all steps in one matmul
    assert any(n.kind == "tensor::sum_to" and n.output.type.shape == (4 * HIDDEN,) for n in after)


# -- training -------------------------------------------------------------------------------------
def sum_model(x: Tensor, target: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor,
              b: Tensor, w_out: Tensor) -> Tensor:
    outputs: List[Tensor] = []
    for x_t in ops.unbind(x, 0):
        gates = x_t @ w_ih.T + h @ w_hh.T + b
        i, f, g, o = ops.chunk(gates, 4, 1)
        c = ops.sigmoid(f) * c + ops.sigmoid(i) * np.tanh(g)
        h = ops.sigmoid(o) * np.tanh(c)
        outputs.append(h)
    y = ops.stack(outputs, 0) @ w_out
    err = y - target
    return np.mean(err * err)


def test_training_an_lstm_to_sum_a_sequence():
    """A scripted LSTM + linear readout learns the running sum of a 5-step sequence."""
    rng = np.random.default_rng(14)
    hidden, seq, batch = 8, 5, 16
    params = [rng.standard_normal((4 * hidden, 1)) * 0.3,
              rng.standard_normal((4 * hidden, hidden)) * 0.3,
              np.zeros(4 * hidden), rng.standard_normal((hidden, 1)) * 0.3]
    step = value_and_grad(script(sum_model), argnums=(4, 5, 6, 7))
    zeros = np.zeros((batch, hidden))
    losses = []
    for _ in range(400):
        x = rng.uniform(-0.5, 0.5, (seq, batch, 1))
        target = np.cumsum(x, axis=0)
        loss, grads = step(x, target, zeros, zeros, *params)
        params = [p - 0.5 * g for p, g in zip(params, grads)]
        losses.append(float(loss))
    baseline = np.mean(np.cumsum(rng.uniform(-0.5, 0.5, (seq, 1000)), axis=0) ** 2)
    assert np.mean(losses[-20:]) < 0.05 * baseline, (losses[0], losses[-1], baseline)


@pytest.mark.parametrize("optimize", [True, False])
def test_forward_and_backward_graphs_verify_and_round_trip(optimize):
    import ir
    from script.runtime.autodiff import compile_gradient
    programs = [(cells.lstm_layer, _lstm_args(np.random.default_rng(15))),
                (branch_in_loop, (np.ones((2, 3)), np.ones(3))),
                (while_loop, (np.ones((2, 3)), 20.0))]
    for fn, args in programs:
        grad = compile_gradient(script(fn), args, optimize=optimize).gradient
        for graph in (grad.forward, grad.backward):
            graph.verify()
            assert str(ir.parse(str(graph))) == str(graph)
