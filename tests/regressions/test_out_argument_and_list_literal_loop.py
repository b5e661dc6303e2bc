"""min-char-rnn clips its gradients in place: ``for dparam in [dWxh, dWhh, ...]:
np.clip(dparam, -5, 5, out=dparam)``. ``out=`` was refused ("np.clip() got an unexpected keyword
argument 'out'"), and a loop over a list literal bound the loop variable to a list item, not to
the array. Now ``out=name`` writes the op's result into that array (seen through every name of
it) and a loop over a list literal iterates the arrays themselves."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp


def clipped(a: Tensor, b: Tensor):
    da = a * 3.0
    db = b * 3.0
    for dparam in [da, db]:
        np.clip(dparam, -5, 5, out=dparam)
    return da, db


def out_value(a: Tensor) -> Tensor:
    d = a * 1.0
    e = np.tanh(d, out=d)
    return e + d


def out_into_an_argument(a: Tensor) -> Tensor:
    np.clip(a, -1, 1, out=a)
    return a


def test_out_writes_into_the_named_array():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)) * 4, rng.standard_normal(5) * 4
    for got, want in zip(script(clipped)(a, b), clipped(a, b)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(script(out_value)(a), out_value(a), rtol=1e-12)
    check_vjp(script(clipped), (a, b))


def test_out_into_an_argument_is_refused():
    with pytest.raises(ScriptError, match="argument 'a'"):
        script(out_into_an_argument)(np.ones(3))
