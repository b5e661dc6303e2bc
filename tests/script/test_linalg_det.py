"""np.linalg.det and np.linalg.slogdet: numpy's values and dtypes (stacks of matrices too), and
gradients that match finite differences."""

import numpy as np
import pytest

from script import Tensor, script, vjp
from tests.gradcheck import check_vjp


def log_likelihood(S: Tensor, y: Tensor) -> Tensor:  # filterpy's Gaussian log-likelihood
    sign, logdet = np.linalg.slogdet(S)
    return -0.5 * (logdet + y @ np.linalg.solve(S, y) + y.shape[0] * np.log(2 * np.pi))


def doubled(S: Tensor) -> Tensor:
    return np.linalg.det(S) * 2.0


def of_a_stack(S: Tensor):
    return np.linalg.det(S), np.linalg.slogdet(S)


def _matrices(dtype):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 3))
    S = (A @ A.T + np.eye(3)).astype(dtype)
    return S, rng.standard_normal(3).astype(dtype), np.stack([S, -2 * S])


def _flat(v):
    if isinstance(v, tuple):
        return [a for item in v for a in _flat(item)]
    return [v]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_and_dtypes_are_numpys(dtype):
    S, y, stack = _matrices(dtype)
    for fn, args in [(log_likelihood, (S, y)), (doubled, (S,)), (of_a_stack, (stack,))]:
        want, got = _flat(fn(*args)), _flat(script(fn)(*args))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_allclose(g, w, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_gradients_match_finite_differences():
    S, y, stack = _matrices(np.float64)
    check_vjp(script(log_likelihood), (S, y))
    check_vjp(script(doubled), (S,))
    check_vjp(script(of_a_stack), (stack,))


def test_the_gradient_of_det_at_a_singular_matrix():
    """The transposed adjugate, which exists where the inverse does not."""
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    _, backward = vjp(script(doubled), singular)
    np.testing.assert_allclose(backward(1.0)[0], 2.0 * np.array([[4.0, -2.0], [-2.0, 1.0]]),
                               atol=1e-12)
    stack = np.stack([singular, np.array([[2.0, 1.0], [1.0, 3.0]])])
    check_vjp(script(of_a_stack_det), (stack,))


def of_a_stack_det(S: Tensor) -> Tensor:
    return np.linalg.det(S)
