"""Deep Learning from Scratch 2's ``TimeGRU.forward`` called with no state (``h=None``):
``if not stateful or h is None: h = np.zeros(...)``. The condition is True on both paths of the
short-circuit ``or`` once ``h`` is known to be None, but the ``if`` on it stayed, so ``h`` merged
the zeros with an unwrapped None into a Tensor of unknown rank and ``np.dot(h, W)`` could not be
differentiated. An ``if`` output that is the same constant on both paths is now that constant."""

from typing import Optional

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def run(xs: Tensor, W: Tensor, h: Optional[Tensor], stateful: bool) -> Tensor:
    if not stateful or h is None:
        h = np.zeros((xs.shape[1], W.shape[1]))
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] + np.dot(h, W))
    return h


def test_gradient_of_a_loop_started_from_a_replaced_none():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((4, 2, 3)), rng.standard_normal((3, 3)) * 0.5, None, False)
    np.testing.assert_allclose(script(run)(*args), run(*args), rtol=1e-12)
    check_vjp(script(run), args)
