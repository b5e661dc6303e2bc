"""Annotations numpy code writes that Python does not check: ``-> float`` on a full reduction,
``List[float]`` (and dicts of numbers) filled with numpy's scalars, and parameters annotated
with a bare container (``p: dict``, ``ws: list``, ``state: tuple``), typed by the call."""

from typing import Dict, List

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp


def loss(x: Tensor, y: Tensor) -> float:
    return np.sum((x - y) ** 2) / x.shape[0]


def norms(x: Tensor) -> List[float]:
    out: List[float] = []
    for t in range(x.shape[0]):
        out.append(np.sqrt((x[t] ** 2).sum()))
    return out


def totals(x: Tensor) -> Dict[str, float]:
    found: Dict[str, float] = {"first": 0.0}
    found["first"] = x[0].sum()
    found["all"] = np.mean(x)
    return found


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_scalars_where_numbers_are_annotated(dtype):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4)).astype(dtype), rng.standard_normal((3, 4)).astype(dtype)
    got = script(loss)(x, y)
    assert type(got) is float
    assert got == pytest.approx(float(loss(x, y)), rel=1e-6)
    got = script(norms)(x)
    assert all(type(v) is float for v in got)
    np.testing.assert_allclose(got, norms(x), rtol=1e-6)
    got = script(totals)(x)
    assert list(got) == ["first", "all"] and all(type(v) is float for v in got.values())
    np.testing.assert_allclose(list(got.values()), list(totals(x).values()), rtol=1e-6)


def picked(mat: Tensor):
    found = [{"": 0.0}]
    found[0]["a"] = mat[0, 1]  # of a Tensor of any rank: not known to be a number
    return found


def test_an_array_that_may_not_be_a_number_is_refused_with_the_conversion():
    with pytest.raises(ScriptError, match=r"its number is float\(v\) of a 0-d array v"):
        script(picked)(np.ones((2, 2)))


def cell(p: dict, x: Tensor, h: Tensor) -> Tensor:
    return np.tanh(x @ p["Wx"] + h @ p["Wh"] + p["b"])


def affine(ws: list, x: Tensor):
    return x @ ws[0] + ws[1]


def layer(ws: list, state: tuple, x: Tensor) -> Tensor:
    return np.tanh(affine(ws, x) + state[0])


def test_bare_container_parameters_are_typed_by_the_call():
    rng = np.random.default_rng(1)
    p = {"Wx": rng.standard_normal((3, 4)), "Wh": rng.standard_normal((4, 4)),
         "b": rng.standard_normal(4)}
    x, h = rng.standard_normal((2, 3)), rng.standard_normal((2, 4))
    np.testing.assert_allclose(script(cell)(p, x, h), cell(p, x, h), rtol=1e-12)
    check_vjp(script(cell), (p, x, h))
    ws = [rng.standard_normal((3, 4)), rng.standard_normal(4)]
    np.testing.assert_allclose(script(layer)(ws, (h,), x), layer(ws, (h,), x), rtol=1e-12)
    check_vjp(script(layer), (ws, (h,), x))
