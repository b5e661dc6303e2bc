"""A fused producer read by an `if` branch's result must be computed before the `if`.

The fuser places a group at its last member and moves the nodes between its members that read
its outputs after it; it looked at the inputs of nodes inside the `if` branches but not at the
values the branches return, so `t if c else x` kept reading `t` before the fused kernel made it
(UnboundLocalError at run time).
"""

import numpy as np

from script import Tensor, script


def branch_returns_fused_value(x: Tensor, s: float) -> tuple[Tensor, Tensor]:
    t = np.tanh(x)
    y = t if s > 0.0 else x
    return y * 2.0, 2.0 / (1.0 + t * t)


def test_branch_result_from_a_fused_producer():
    x = np.linspace(-1.0, 1.0, 4)
    f = script(branch_returns_fused_value)
    for s in (1.0, -1.0):
        got = f(x, s)
        want = branch_returns_fused_value(x, s)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    assert "prim::FusionGroup" in str(f.graph_for(x, 1.0))  # the case this guards: it fused
