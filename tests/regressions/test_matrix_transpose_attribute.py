"""``x.mT``, numpy's matrix transpose (the last two axes swapped), as llama3.np's attention
writes ``q @ k.mT``: it was refused ("'Tensor' has no attribute 'mT'")."""

import numpy as np
import pytest

import script
from script import Tensor


def scores(q: Tensor, k: Tensor) -> Tensor:
    return q @ k.mT / np.sqrt(q.shape[-1])


def weighted(S: Tensor) -> Tensor:
    return (S.mT * np.arange(S.shape[-2])).sum()


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-6), (np.float64, 1e-12)])
def test_batched_attention_scores(dtype, tol):
    rng = np.random.default_rng(0)
    q, k = (rng.standard_normal((2, 5, 4)).astype(dtype) for _ in range(2))
    np.testing.assert_allclose(script.script(scores)(q, k), scores(q, k), rtol=tol)


def test_the_gradient_through_mT():
    S = np.random.default_rng(1).standard_normal((2, 3, 4))
    value, grad = script.value_and_grad(weighted)(S)
    np.testing.assert_allclose(value, weighted(S))
    np.testing.assert_array_equal(grad, np.broadcast_to(np.arange(3.0)[:, None], S.shape))


def test_mT_of_a_vector_is_refused():
    def vector(v: Tensor) -> Tensor:
        return v.mT

    with pytest.raises(script.SignatureError, match="out of bounds"):
        script.script(vector)(np.ones(3))
