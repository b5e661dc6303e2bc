"""``np.einsum`` computes what numpy computes (explicit and implicit outputs, ``...``, labels of
size 1 broadcast, one to three operands), its gradients equal finite differences, and
subscripts numpy refuses, or that cannot be differentiated, are errors at the user's line."""

import numpy as np
import pytest

from script import ScriptError, SignatureError, Tensor, script, vjp
from tests.gradcheck import check_vjp
from tests.helpers import assert_same_at


def attention(q: Tensor, k: Tensor, v: Tensor):
    scores = np.einsum("bhtd,bhsd->bhts", q, k) / np.sqrt(q.shape[-1])
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return np.einsum("bhts,bhsd->bhtd", weights, v, optimize=True)


def contractions(x: Tensor, w: Tensor, u: Tensor):
    return (np.einsum("bi,ij->bj", x, w), np.einsum("ij,ij->i", x, x), np.einsum("ij,jk", x, w),
            np.einsum("ij", x), np.einsum("ba", x), np.einsum("ij->", x),
            np.einsum("ij,jk,kl->il", x, w, u), np.einsum("i,j->ij", x[0], u[0]),
            np.einsum("...i,...i->...", x, x), np.einsum("i...->...", x),
            np.einsum("ij,ij->ij", x, x[:1]), np.einsum("i,i", x[0], x[1]))


def _args(rng, dtype):
    return (rng.standard_normal((3, 4)).astype(dtype), rng.standard_normal((4, 5)).astype(dtype),
            rng.standard_normal((5, 2)).astype(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_einsum_is_numpys(dtype):
    rng = np.random.default_rng(0)
    args = _args(rng, dtype)
    assert_same_at(script(contractions)(*args), contractions(*args), dtype)
    qkv = tuple(rng.standard_normal((2, 3, 4, 5)).astype(dtype) for _ in range(3))
    assert_same_at(script(attention)(*qkv), attention(*qkv), dtype)


def test_einsum_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    check_vjp(script(contractions), _args(rng, "float64"))
    check_vjp(script(attention), tuple(rng.standard_normal((1, 2, 3, 4)) for _ in range(3)))


def trace(x: Tensor):
    return np.einsum("ii", x)


def test_a_repeated_label_computes_but_is_not_differentiated():
    x = np.arange(9.0).reshape(3, 3)
    assert script(trace)(x) == trace(x)
    with pytest.raises(ScriptError, match=r"label repeated within one operand") as info:
        vjp(script(trace), x)
    assert 'np.einsum("ii", x)' in str(info.value)


def mismatched(x: Tensor, w: Tensor):
    return np.einsum("ij,jk->ik", x, w)


def test_subscripts_numpy_refuses_are_refused():
    with pytest.raises(ValueError):
        mismatched(np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(SignatureError, match="do not broadcast") as info:
        script(mismatched)(np.ones((2, 3)), np.ones((4, 5)))
    assert "test_einsum.py" in str(info.value)


def bad_output(x: Tensor):
    return np.einsum("ij->k", x)


def ellipsis_summed(x: Tensor):
    return np.einsum("...i->i", x)


@pytest.mark.parametrize("fn,message", [(bad_output, "'k' is not in the inputs"),
                                        (ellipsis_summed, "no '...' ellipsis provided")])
def test_outputs_numpy_refuses_are_refused(fn, message):
    with pytest.raises(ValueError):
        fn(np.ones((2, 3)))
    with pytest.raises(SignatureError, match=message):
        script(fn)(np.ones((2, 3)))


def size_one_labels(a: Tensor, b: Tensor, c: Tensor):
    return np.einsum("ij,ij->", a, b) + np.einsum("ij,jk->ik", c, b.T).sum() + \
        np.einsum("ij,ij->i", b, c[:2]).sum()


def test_gradients_where_a_label_has_size_1_in_another_operand():
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((1, 3)), rng.standard_normal((2, 3)),
            rng.standard_normal((2, 1)))
    check_vjp(script(size_one_labels), args)


def ordered(x: Tensor, w: Tensor, u: Tensor):
    return np.einsum("ij,jk,kl->il", x, w, u, optimize="greedy")


def test_optimize_is_numpys_own():
    rng = np.random.default_rng(4)
    args = (rng.standard_normal((5, 30)), rng.standard_normal((30, 40)),
            rng.standard_normal((40, 3)))
    assert np.array_equal(script(ordered)(*args), ordered(*args))  # the same order of sums
