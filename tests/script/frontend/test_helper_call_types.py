"""An unannotated parameter of a function the compiled code calls takes the type of what the
call passes when that is not an array (a number, a string, a list, a dict, a tuple; Optional
where its default is None), so helpers written without annotations compute what Python
computes; and ``scipy.special.expit`` / ``logsumexp`` (when the program uses scipy) are the
functions scipy computes, with gradients."""

from typing import Dict, List

import numpy as np
import pytest

from script import Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same, assert_same_at


def first_rows(x, n):
    return x[:n] * 2.0


def scaled(x, s):
    return x * s


def layer(params, x):
    return np.tanh(x @ params["W"] + params["b"])


def stacked(xs, k):
    return xs[k] + xs[-1]


def lse(a, axis=None, keepdims=False):
    top = np.max(a, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(a - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


def helpers(x: Tensor, n: int, p: Dict[str, Tensor], xs: List[Tensor]):
    return (first_rows(x, n), scaled(x, 2.5) + scaled(x, 2), layer(p, x), stacked(xs, 0),
            lse(x, axis=1), lse(x, 0, True), lse(x))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unannotated_helper_parameters_take_the_calls_types(dtype):
    r = np.random.default_rng(0)
    x = r.standard_normal((3, 4)).astype(dtype)
    p = {"W": r.standard_normal((4, 4)).astype(dtype), "b": r.standard_normal(4).astype(dtype)}
    xs = [r.standard_normal(2).astype(dtype), r.standard_normal(2).astype(dtype)]
    assert_same_at(script(helpers)(x, 2, p, xs), helpers(x, 2, p, xs), dtype)


def with_dict(x: Tensor, p: Dict[str, Tensor]) -> Tensor:
    return lse(layer(p, x), axis=1).sum()


def test_unannotated_helper_gradients_equal_finite_differences():
    r = np.random.default_rng(1)
    check_vjp(with_dict, (r.standard_normal((3, 4)),
                          {"W": r.standard_normal((4, 4)), "b": r.standard_normal(4)}))


def test_scipy_special_functions():
    pytest.importorskip("scipy")
    from tests.script.frontend import scipy_calls

    x = np.random.default_rng(2).standard_normal((3, 4))
    x[0, 0] = -np.inf  # scipy's logsumexp ignores it (the maximum stays finite)
    fn = scipy_calls.special_functions
    assert_same(script(fn)(x), fn(x))
    check_vjp(fn, (np.random.default_rng(3).standard_normal((3, 4)),))


def predict(x, P, F=1, Q=0):
    # filterpy's KalmanFilter predict (MIT): number defaults, called with arrays
    x = np.dot(F, x)
    return x, np.dot(np.dot(F, P), F.T) + Q


def shift(x, P, u: float = 0):  # an int default where a float is declared (PEP 484)
    return x + u, P


def kalman_step(x: Tensor, P: Tensor, F: Tensor, Q: Tensor):
    x1, P1 = predict(x, P, F=F, Q=Q)
    x2, P2 = predict(x1, P1, F)  # Q at its default, the number
    return shift(x2, P2), shift(x2, P2, 0.5)


def test_a_number_default_a_call_passes_an_array_for_is_typed_by_the_call():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((2, 1)), np.eye(2), rng.standard_normal((2, 2)),
            rng.standard_normal((2, 2)))
    assert_same(script(kalman_step)(*args), kalman_step(*args))
