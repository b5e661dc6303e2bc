"""``value_and_grad(f, has_aux=True)`` / ``grad(f, has_aux=True)`` for a function returning
``(loss, aux)`` (a ported layer returning its loss and a cache dict), as JAX's. Before, such a
function could only be differentiated through ``vjp``; ``value_and_grad`` refused it.
"""

from __future__ import annotations

import numpy as np
import pytest

from script import ScriptError, Tensor, grad, script, value_and_grad
from tests.helpers import assert_same


def loss_and_cache(x: Tensor, W: Tensor):
    h = np.tanh(x @ W)
    return (h ** 2).sum(), {"h": h, "x": x}


def numerical(f, args, k, eps=1e-6):
    g = np.zeros_like(args[k])
    for i in np.ndindex(g.shape):
        step = np.zeros_like(args[k])
        step[i] = eps
        up = list(args)
        up[k] = args[k] + step
        down = list(args)
        down[k] = args[k] - step
        g[i] = (f(*up)[0] - f(*down)[0]) / (2 * eps)
    return g


def test_value_and_grad_with_aux():
    r = np.random.default_rng(0)
    x, W = r.standard_normal((2, 3)), r.standard_normal((3, 4))
    (value, cache), (gx, gW) = value_and_grad(script(loss_and_cache), argnums=(0, 1),
                                              has_aux=True)(x, W)
    want_value, want_cache = loss_and_cache(x, W)
    assert_same(value, want_value)
    assert_same(cache["h"], want_cache["h"])
    assert_same(gx, numerical(loss_and_cache, (x, W), 0), rtol=1e-6, atol=1e-8)
    assert_same(gW, numerical(loss_and_cache, (x, W), 1), rtol=1e-6, atol=1e-8)
    gW2, cache2 = grad(script(loss_and_cache), argnums=1, has_aux=True)(x, W)
    assert_same(gW2, gW)
    assert_same(cache2["x"], x)


def test_a_pair_without_has_aux_says_so():
    x, W = np.ones((2, 3)), np.ones((3, 4))
    with pytest.raises(ScriptError, match="pass has_aux=True"):
        value_and_grad(script(loss_and_cache))(x, W)


def only_loss(x: Tensor):
    return (x * x).sum()


def test_has_aux_needs_a_pair():
    with pytest.raises(ScriptError, match="needs a function returning a pair"):
        value_and_grad(script(only_loss), has_aux=True)(np.ones(2))
