"""Gradients through the values of a dict were zero: dicts were not differentiable values, so
``hs[0] = h * 3.0; hs[0].sum()`` gave ``[0, 0]`` (and Karpathy's min-char-rnn, which keeps its
steps in ``hs[t]`` and reads ``hs[t - 1]``, trained nothing). A dict's cotangent is now a dict
of its keys' cotangents, updated as the reads and writes are undone in reverse."""

from typing import Dict

import numpy as np

from script import Tensor, script, vjp


def written_then_read(h: Tensor) -> Tensor:
    hs: Dict[int, Tensor] = {}
    hs[0] = h * 3.0
    return hs[0].sum()


def step_keys(x: Tensor, w: Tensor) -> Tensor:
    hs: Dict[int, Tensor] = {}
    hs[-1] = x * 1.0
    for t in range(3):
        hs[t] = hs[t - 1] @ w
    return hs[2].sum()


def test_a_value_written_then_read_gets_its_gradient():
    (grad,) = vjp(script(written_then_read), np.ones(2))[1](np.array(1.0))
    np.testing.assert_allclose(grad, [3.0, 3.0])


def test_values_keyed_by_the_step_get_their_gradients():
    x, w = np.arange(1.0, 3.0), np.array([[1.0, 2.0], [0.5, -1.0]])
    dx, dw = vjp(script(step_keys), x, w)[1](np.array(1.0))
    np.testing.assert_allclose(dx, w @ w @ w @ np.ones(2))
    want = sum(np.outer(np.linalg.matrix_power(w, k).T @ x,
                        np.linalg.matrix_power(w, 2 - k) @ np.ones(2)) for k in range(3))
    np.testing.assert_allclose(dw, want)
