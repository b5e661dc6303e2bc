"""``if not stateful or h is None: h = np.zeros(...)`` left ``h`` Optional after the if ("argument
'h_prev' must be Tensor, not Tensor?", Deep Learning from Scratch 2's ``TimeRNN.forward``): the
false branch proves ``h`` is not None, so the merged ``h`` is a Tensor on both paths."""

from typing import Optional

import numpy as np

from script import Tensor, script


def step(x: Tensor, h: Tensor) -> Tensor:
    return np.tanh(x + h)


def run(x: Tensor, h: Optional[Tensor], stateful: bool) -> Tensor:
    if not stateful or h is None:
        h = np.zeros_like(x)
    return step(x, h)


def run_plain_test(x: Tensor, h: Optional[Tensor]) -> Tensor:
    if h is None:
        h = x * 2.0
    return step(x, h)


def test_optional_is_a_tensor_after_the_if():
    x, h = np.ones(3), np.full(3, 0.5)
    for args in ((x, h, True), (x, h, False), (x, None, True)):
        np.testing.assert_allclose(script(run)(*args), run(*args), rtol=1e-12)
    for args in ((x, h), (x, None)):
        np.testing.assert_allclose(script(run_plain_test)(*args), run_plain_test(*args),
                                   rtol=1e-12)
