"""Horizontal fusion merged two groups with no path between them, G1 and G2, although a third
group G0 already fed G1 and read a value computed from G2 (through a non-fusible node). The
merged group and G0 then needed each other's outputs: the verifier reports a value "used before
it is defined", and without it the generated code raised UnboundLocalError. The same happened in
the backward of a one-layer bidirectional ``rnn.LSTM``.

Found with the second derivative of a 1-D layer norm with weight and bias, whose backward reads
``layer_norm_backward``'s second output (the weight's cotangent) in a sum fused early. The cause
is in ``fuser.group``: ``_path_outside`` stops at nodes placed after the target group's last
member, but a path can go on from there through a group with an earlier member (G2 -> the
layer_norm_backward -> G0's late member -> G0's early member -> G1).
"""

from __future__ import annotations

import numpy as np

import rnn
from script import Tensor, ops, script, vjp
from script.runtime.gradients import grad


def cubed_affine_norm(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return np.sum(ops.layer_norm(x, w, b) ** 3)


def test_second_derivative_of_a_1d_affine_layer_norm():
    rng = np.random.default_rng(0)
    args = tuple(rng.standard_normal(5) for _ in range(3))
    first = grad(cubed_affine_norm, argnums=(0, 1, 2))
    out, backward = vjp(first, *args)
    ct = tuple(rng.standard_normal(o.shape) for o in out)
    got = backward(ct)
    h = 1e-6
    for k in range(3):
        want = np.zeros(5)
        for i in range(5):
            up, down = [a.copy() for a in args], [a.copy() for a in args]
            up[k][i] += h
            down[k][i] -= h
            want[i] = sum(np.sum(c * (p - m))
                          for c, p, m in zip(ct, first(*up), first(*down))) / (2 * h)
        np.testing.assert_allclose(got[k], want, rtol=1e-5, atol=1e-6)


def test_bidirectional_lstm_backward_compiles_and_matches_its_unfused_twin():
    import fuser
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 3, 5))
    h0, c0 = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    cts = (rng.standard_normal((6, 3, 8)), (rng.standard_normal((2, 3, 4)),
                                           rng.standard_normal((2, 3, 4))))
    m = rnn.LSTM(5, 4, num_layers=1, bidirectional=True, rng=0, dtype="float64")
    _, backward = vjp(script(m), x, (h0, c0))
    results = [backward(cts)]
    with fuser.disabled():
        unfused = rnn.LSTM(5, 4, num_layers=1, bidirectional=True, rng=0, dtype="float64")
        _, backward = vjp(script(unfused), x, (h0, c0))
        results.append(backward(cts))
    def flat(tree):
        if isinstance(tree, tuple):
            return [leaf for item in tree for leaf in flat(item)]
        return [tree]

    fused, unfused = flat(results[0]), flat(results[1])
    assert len(fused) == len(unfused) and fused[0] is not None
    for got, want in zip(fused, unfused):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
