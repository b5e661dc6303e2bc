"""The backward of two recurrences in a row (the second runs over the stacked outputs of the
first, as the layers of a stacked RNN do) must be well-typed IR.

The stack of the first loop's outputs was given its full shape only after the second loop's trip
count (``y.shape[0]``) had been left unfolded, so the second loop's list, stack and state kept
unknown shapes; the backward loop's carried cotangents were typed less precisely than its
parameters and the verifier (on in this suite) rejected the backward graph.
"""

import numpy as np

import rnn
from script import Tensor, script, vjp


def two_layers(x: Tensor, w: Tensor) -> Tensor:
    h = x[0]
    outs = []
    for i in range(x.shape[0]):
        h = np.tanh(h @ w + x[i])
        outs.append(h)
    y = np.stack(outs)
    outs2 = []
    for i in range(y.shape[0]):
        h = np.tanh(h @ w + y[i])
        outs2.append(h)
    return np.stack(outs2)


def reference(x, w):
    h, outs = x[0], []
    for t in range(len(x)):
        h = np.tanh(h @ w + x[t])
        outs.append(h)
    for t in range(len(x)):
        h = np.tanh(h @ w + outs[t])
        outs.append(h)
    return np.stack(outs[len(x):])


def test_vjp_of_two_loops_in_a_row_matches_finite_differences():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 2, 3)), 0.5 * rng.standard_normal((3, 3))
    out, backward = vjp(script(two_layers), x, w)
    np.testing.assert_allclose(out, reference(x, w))
    ct = rng.standard_normal(out.shape)
    gx, gw = backward(ct)
    eps = 1e-6
    for grad, arg, idx in ((gx, 0, (1, 0, 2)), (gw, 1, (2, 1))):
        args = [x.copy(), w.copy()]
        args[arg][idx] += eps
        plus = float((reference(*args) * ct).sum())
        args[arg][idx] -= 2 * eps
        minus = float((reference(*args) * ct).sum())
        np.testing.assert_allclose(grad[idx], (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_vjp_of_a_two_layer_gru_runs_and_fills_every_gradient():
    m = rnn.GRU(4, 6, num_layers=2, rng=0, dtype="float64")
    x = np.random.default_rng(1).standard_normal((5, 3, 4))
    h0 = np.random.default_rng(2).standard_normal((2, 3, 6))
    (out, h_n), backward = vjp(script(m), x, h0)
    gx, gh0, _ = backward((np.ones_like(out), np.ones_like(h_n)))
    assert gx.shape == x.shape and np.abs(gx).max() > 0
    assert gh0.shape == h0.shape and np.abs(gh0[0]).max() > 0 and np.abs(gh0[1]).max() > 0
    assert all(np.abs(p.grad).max() > 0 for p in m.parameters())
