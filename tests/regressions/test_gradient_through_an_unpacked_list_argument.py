"""``Wx, Wh, b = params`` in a function called with the list literal ``[Wx, Wh, b]`` (Deep
Learning from Scratch 2's ``TimeLSTM`` inside its seq2seq ``Encoder``) lost the arrays' shapes:
the items of a list are typed alike, so ``np.dot(h, Wh)`` could not be differentiated. Unpacking
a list literal that nothing else uses gives its items themselves."""

from typing import List

import numpy as np

from script import Tensor, script
from tests.gradcheck import check_vjp


def layer(xs: Tensor, params: List[Tensor]) -> Tensor:
    Wx, Wh, b = params
    h = np.zeros((xs.shape[1], Wh.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(np.dot(xs[t], Wx) + np.dot(h, Wh) + b)
    return h


def encoder(xs: Tensor, Wx: Tensor, Wh: Tensor, b: Tensor) -> Tensor:
    return layer(xs, [Wx, Wh, b])


def test_gradient_through_the_unpacked_list():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((4, 2, 3)), rng.standard_normal((3, 5)) * 0.5,
            rng.standard_normal((5, 5)) * 0.5, rng.standard_normal(5))
    np.testing.assert_allclose(script(encoder)(*args), encoder(*args), rtol=1e-12)
    check_vjp(script(encoder), args)
