"""Dict comprehensions (``{k: np.zeros_like(v) for k, v in params.items()}``, the gradient
dicts of hand-written backward passes) compute what Python computes: a new dict stored into
by a loop, typed by what is stored, whose loop variables do not leak; gradients flow through
``d.items()`` read as ``d[k]``."""

from typing import Dict

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp


def gradient_dicts(params: Dict[str, Tensor], x: Tensor):
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    scaled = {name: w * 2.0 for name, w in params.items() if name != "b"}
    squares = {i: i * i for i in range(4) if i != 2}
    for k in grads:
        grads[k] += params[k] * x.sum()
    k = "kept"  # the comprehension's k does not leak
    return grads, scaled, squares, k


def through_a_comprehension(params: Dict[str, Tensor], x: Tensor):
    squashed = {k: np.tanh(v) for k, v in params.items()}
    return np.sum(x @ squashed["U"] + x @ squashed["W"])


def mixed_shapes(params: Dict[str, Tensor], x: Tensor):
    squashed = {k: np.tanh(v) for k, v in params.items()}
    return np.sum(x @ squashed["W"] + squashed["b"])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dict_comprehensions_compute_what_python_does(dtype):
    r = np.random.default_rng(10)
    p = {"W": r.standard_normal((3, 2)).astype(dtype), "b": r.standard_normal(2).astype(dtype)}
    x = r.standard_normal((4, 3)).astype(dtype)
    got, want = script(gradient_dicts)(p, x), gradient_dicts(p, x)
    for g, w in zip(got[:2], want[:2]):
        assert sorted(g) == sorted(w)
        for key in w:
            assert g[key].dtype == w[key].dtype
            np.testing.assert_allclose(g[key], w[key], rtol=1e-6)
    assert got[2:] == want[2:]


def test_gradients_through_a_dict_comprehension():
    r = np.random.default_rng(11)
    p = {"U": r.standard_normal((3, 2)), "W": r.standard_normal((3, 2))}
    check_vjp(through_a_comprehension, (p, r.standard_normal((4, 3))))


def test_items_of_several_shapes_are_refused_in_gradients():
    r = np.random.default_rng(12)
    p = {"W": r.standard_normal((3, 2)), "b": r.standard_normal(2)}
    x = r.standard_normal((4, 3))
    np.testing.assert_allclose(script(mixed_shapes)(p, x), mixed_shapes(p, x))
    from script import vjp
    with pytest.raises(ScriptError, match="number of dimensions is not known"):
        vjp(script(mixed_shapes), p, x)
