"""Gradients of modules: ``vjp`` / ``value_and_grad`` of a ``Module`` or ``ScriptModule`` return
the gradients of the call's arguments and accumulate the parameters' gradients into ``.grad``."""

from typing import List

import numpy as np

from script import Module, Parameter, Tensor, ops, script, value_and_grad, vjp
from tests.programs import custom_lstms as cl

SEQ, BATCH, INPUT, HIDDEN = 7, 3, 5, 4


class ElmanLayer(Module):
    def __init__(self, rng: np.random.Generator):
        super().__init__()
        self.w_ih = Parameter(rng.standard_normal((HIDDEN, INPUT)) * 0.5)
        self.w_hh = Parameter(rng.standard_normal((HIDDEN, HIDDEN)) * 0.5)
        self.b = Parameter(rng.standard_normal(HIDDEN) * 0.5)
        self.scale = 2.0

    def forward(self, x: Tensor, h: Tensor) -> Tensor:
        outputs: List[Tensor] = []
        for t in range(x.shape[0]):
            h = np.tanh(x[t] @ self.w_ih.T + h @ self.w_hh.T + self.b)
            outputs.append(h * self.scale)
        return ops.stack(outputs, 0)


def _loss_of(module, x, h, ct):
    return lambda: float(np.sum(module(x, h) * ct))


def numerical_grad(loss, array, eps=1e-6):
    """d loss() / d array by central differences, perturbing ``array`` in place."""
    grad = np.zeros_like(array)
    for idx in np.ndindex(array.shape):
        saved = array[idx]
        array[idx] = saved + eps
        up = loss()
        array[idx] = saved - eps
        down = loss()
        array[idx] = saved
        grad[idx] = (up - down) / (2 * eps)
    return grad


def _inputs(rng):
    return rng.standard_normal((SEQ, BATCH, INPUT)), rng.standard_normal((BATCH, HIDDEN))


def test_parameter_gradients_match_finite_differences():
    rng = np.random.default_rng(0)
    m = ElmanLayer(rng)
    x, h = _inputs(rng)
    out, backward = vjp(script(m), x, h)
    np.testing.assert_allclose(out, m(x, h), rtol=1e-12)
    ct = rng.standard_normal(out.shape)
    gx, gh = backward(ct)
    loss = _loss_of(m, x, h, ct)
    for name, p in m.named_parameters():
        want = numerical_grad(loss, p.data)
        np.testing.assert_allclose(p.grad, want, rtol=1e-6, atol=1e-8, err_msg=name)
    np.testing.assert_allclose(gx, numerical_grad(loss, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gh, numerical_grad(loss, h), rtol=1e-6, atol=1e-8)


def test_parameter_gradients_accumulate_over_backward_calls():
    rng = np.random.default_rng(1)
    m = ElmanLayer(rng)
    sm = script(m)
    x, h = _inputs(rng)
    ct = rng.standard_normal((SEQ, BATCH, HIDDEN))
    _, backward = vjp(sm, x, h)
    backward(ct)
    first = {name: p.grad.copy() for name, p in m.named_parameters()}
    _, backward = vjp(sm, x, h)
    backward(ct)
    for name, p in m.named_parameters():
        np.testing.assert_allclose(p.grad, 2 * first[name], rtol=1e-12, err_msg=name)
    m.zero_grad()
    assert all(p.grad is None or not np.any(p.grad) for p in m.parameters())


def test_value_and_grad_of_a_module_trains_its_parameters():
    """A loss module trained by SGD on ``.grad``: its loss goes down by orders of magnitude."""
    rng = np.random.default_rng(2)

    class Regression(Module):
        def __init__(self):
            super().__init__()
            self.layer = ElmanLayer(rng)
            self.w_out = Parameter(rng.standard_normal((HIDDEN, 1)) * 0.3)

        def forward(self, x: Tensor, h: Tensor, target: Tensor) -> Tensor:
            err = self.layer(x, h) @ self.w_out - target
            return np.mean(err * err)

    m = Regression()
    step = value_and_grad(script(m))
    x, h = _inputs(rng)
    target = np.cumsum(x[:, :, :1], axis=0) * 0.3
    losses = []
    for _ in range(300):
        m.zero_grad()
        loss, _ = step(x, h, target)
        for p in m.parameters():
            p.data = p.data - 0.1 * p.grad
        losses.append(float(loss))
    assert losses[-1] < 0.05 * losses[0], (losses[0], losses[-1])


def test_shared_gradient_arrays_are_not_shared_between_parameters():
    """Both biases of an LSTM cell get the same gradient; their ``.grad`` arrays are distinct."""
    rng = np.random.default_rng(3)
    cell = cl.LSTMCell(INPUT, HIDDEN, rng)
    x = rng.standard_normal((BATCH, INPUT))
    state = cl.LSTMState(rng.standard_normal((BATCH, HIDDEN)), rng.standard_normal((BATCH, HIDDEN)))
    (hy, (h2, c2)), backward = vjp(script(cell), x, state)
    backward((np.ones_like(hy), (None, None)))
    b_ih, b_hh = cell.get_parameter("bias_ih"), cell.get_parameter("bias_hh")
    np.testing.assert_allclose(b_ih.grad, b_hh.grad)
    assert np.any(b_ih.grad)
    assert not np.shares_memory(b_ih.grad, b_hh.grad)
    b_ih.grad += 1.0
    assert not np.allclose(b_ih.grad, b_hh.grad)
