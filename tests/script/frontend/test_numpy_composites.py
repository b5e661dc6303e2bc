"""np.isclose / np.allclose, np.identity, np.trace, np.diff, np.linspace, np.tensordot,
np.inner, np.linalg.inv / solve and the builtins
min / max of several numbers or of one list compute what numpy and Python compute (types
included: allclose's Python bool, linspace's float64, an empty list's ValueError); gradients
through trace and diff equal finite differences."""

from typing import List

import numpy as np
import pytest

from script import ScriptError, Tensor, script

try:
    from scipy import linalg as scipy_linalg
except ImportError:  # scipy is optional
    scipy_linalg = None
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def closeness(x: Tensor, y: Tensor):
    return (np.isclose(x, y), np.isclose(x, y, rtol=0.1, atol=0.0), np.allclose(x, x + 1e-9),
            np.allclose(x, y), np.isclose(x, np.inf), np.isclose(1.0, 1.0 + 1e-10),
            np.isclose(x, y, equal_nan=True), np.allclose(x, y, equal_nan=True))


def matrices(x: Tensor, n: int):
    return (np.identity(3), np.identity(n, dtype=np.float32), np.trace(x @ x.T),
            np.trace(x, 1), np.trace(x, offset=-1), np.diff(x), np.diff(x, axis=0),
            np.diff(x, n=2))


def ranges(n: int):
    return (np.linspace(0, 1, 5), np.linspace(-1.0, 2.0, n), np.linspace(0, 10, n, endpoint=False),
            np.linspace(0, 10, 4, dtype=int), np.linspace(2.0, 3.0, 1), np.linspace(0, 1, 0),
            np.linspace(0.1, 0.7, num=7, dtype=np.float32))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_composites_are_numpys(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(dtype)
    y = x.copy()
    y[0, 0] += 1e-3
    y[1, 1] = x[1, 1] = np.nan
    x[2, 2] = y[2, 2] = np.inf
    got, want = script(closeness)(x, y), closeness(x, y)
    assert [type(v) for v in got] == [type(v) for v in want]
    assert_same(got, want)
    x = rng.standard_normal((3, 4)).astype(dtype)
    assert_same(script(matrices)(x, 4), matrices(x, 4))
    for n in (0, 1, 2, 7):
        assert_same(script(ranges)(n), ranges(n))


def trace_and_diff(x: Tensor):
    return np.trace(x @ x.T) + (np.diff(x, axis=1) ** 2).sum() + np.trace(x, 1)


def test_trace_and_diff_gradients():
    check_vjp(script(trace_and_diff), (np.random.default_rng(1).standard_normal((3, 4)),))


def trace_of_a_cube(x: Tensor):
    return np.trace(x)


def trace_of_a_vector():
    return np.trace(np.ones(3))


def test_trace_of_other_than_a_matrix_is_refused():
    with pytest.raises(ValueError, match=r"np.trace\(\) is supported of a matrix only"):
        script(trace_of_a_cube)(np.ones((2, 2, 2)))
    assert script(trace_of_a_cube)(np.ones((2, 3))) == 2.0
    with pytest.raises(ScriptError, match=r"np.trace\(\) of a .* matrix it is"):
        script(trace_of_a_vector)()


def extremes(x: Tensor, ns: List[int]):
    return (max(x.shape), min(ns), max(1, 2.5, 2), max([len(ns), 3]),
            min(x.shape[0], x.shape[1], 7), max(n * 2 for n in ns), min(True, 3, -1.5))


def largest(ns: List[int]):
    return max(ns)


def test_min_and_max_of_several_numbers_and_of_one_list():
    x = np.ones((2, 5))
    assert_same(script(extremes)(x, [4, 1, 3]), extremes(x, [4, 1, 3]))
    with pytest.raises(ValueError) as plain:
        largest([])
    with pytest.raises(ValueError) as compiled:
        script(largest)([])
    assert str(compiled.value) == str(plain.value)


def traces(a: Tensor):
    return np.trace(a), np.trace(a, 1), np.trace(a, -2), np.trace(a, 9)


def test_trace_sums_the_diagonal_as_numpy_does():
    a = np.diag([1e16, 1, -1e16, 1, 1, 1, 1, 1, 1, 1.0])
    assert script(traces)(a) == traces(a)
    rng = np.random.default_rng(5)
    for n in range(2, 30, 3):
        x = rng.standard_normal((n, n + 1)).astype(np.float32)
        assert script(traces)(x) == traces(x)


def bool_diffs(x: Tensor):
    return np.diff(x), np.diff(x > 0, axis=0)


def test_diff_of_bools_is_not_equal():
    x = np.array([[True, False, True], [True, True, False]])
    assert_same(script(bool_diffs)(x), bool_diffs(x))


def linspaces(n: int):
    return np.linspace(0.0, 5e-324, 5), np.linspace(0, 1, n)


def retstep(n: int):
    return np.linspace(0, 1, n, True, True)


def test_linspace_edges():
    assert_same(script(linspaces)(3), linspaces(3))
    with pytest.raises(ValueError, match="Number of samples, -1, must be non-negative"):
        script(linspaces)(-1)
    with pytest.raises(ScriptError, match="retstep other than False"):
        script(retstep)(3)


AXES = ((0, 2), (1, 0))  # a global constant: tuples


def contractions(x: Tensor, w: Tensor, v: Tensor):
    return (np.tensordot(x, w, axes=([0, 2], [1, 0])), np.tensordot(x, w, AXES),
            np.tensordot(x[0], w[:, 0], axes=1), np.tensordot(v, v, 0), np.tensordot(v, v, 1),
            np.tensordot(x, np.transpose(x, (1, 2, 0))), np.inner(v, v), np.inner(x, v),
            np.inner(x[0], w[:, 0, :].T), np.inner(v, 2.0), np.inner(3, 2))


def tensordot_cost(x: Tensor, w: Tensor, v: Tensor):
    y = np.tanh(np.tensordot(x, w, axes=([0, 2], [1, 0])))
    return (y ** 2).sum() + np.inner(x[1], v).sum() + np.tensordot(v, v, 0).sum()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tensordot_and_inner_are_numpys(dtype):
    rng = np.random.default_rng(2)
    args = tuple(rng.standard_normal(s).astype(dtype) for s in ((2, 3, 4), (4, 2, 3), (4,)))
    got, want = script(contractions)(*args), contractions(*args)
    assert [type(v) for v in got] == [type(v) for v in want]  # np.inner of vectors: a scalar
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype and np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-5 if dtype == "float32" else 1e-12)
    check_vjp(script(tensordot_cost), tuple(a.astype(np.float64) for a in args))


def tensordot_of(x: Tensor, w: Tensor, axes: int):
    return np.tensordot(x, w, axes=([axes], [0]))


def tensordot_mismatch(x: Tensor, w: Tensor):
    return np.tensordot(x, w, axes=([0], [0]))


def test_tensordot_axes_are_checked():
    with pytest.raises(ScriptError, match=r"np.tensordot\(\) axes must be a constant"):
        script(tensordot_of)(np.ones((2, 3)), np.ones((3, 2)), 1)
    with pytest.raises(ValueError, match="shape-mismatch for sum"):
        script(tensordot_mismatch)(np.ones((2, 3)), np.ones((3, 2)))


def ridge_readout(X: Tensor, Yt: Tensor, reg: float):
    """Mantas Lukosevicius' minimal ESN's readout: Wout = Yt X^T (X X^T + reg I)^-1."""
    I = np.eye(X.shape[0])  # noqa: E741
    inverse = np.dot(np.dot(Yt, X.T), np.linalg.inv(np.dot(X, X.T) + reg * I))
    solved = np.linalg.solve(np.dot(X, X.T) + reg * I, np.dot(X, Yt.T)).T
    return inverse, solved, np.linalg.solve(X[:, :4], X[0, :4])


def linear_system_cost(a: Tensor, b: Tensor):
    m = a + 4.0 * np.eye(a.shape[-1])
    return (np.linalg.inv(m) ** 2).sum() + np.tanh(np.linalg.solve(m, b)).sum() + \
        np.linalg.solve(m, b[..., 0]).sum()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linalg_inv_and_solve_are_numpys(dtype):
    rng = np.random.default_rng(4)
    X = rng.standard_normal((4, 30)).astype(dtype)
    Yt = rng.standard_normal((2, 30)).astype(dtype)
    got, want = script(ridge_readout)(X, Yt, 1e-2), ridge_readout(X, Yt, 1e-2)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4 if dtype == "float32" else 1e-10)
    check_vjp(script(linear_system_cost), (rng.standard_normal((3, 3)),
                                           rng.standard_normal((3, 2))))
    check_vjp(script(linear_system_cost), (rng.standard_normal((2, 3, 3)),
                                           rng.standard_normal((3, 2))))


def inverse(a: Tensor):
    return np.linalg.inv(a)


def test_linalg_errors_are_numpys():
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        script(inverse)(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="must be square"):
        script(inverse)(np.ones((2, 3)))
    with pytest.raises(ValueError, match="at least one dimension"):
        script(solve_of)(np.eye(2), np.array(1.0))


def solve_of(a: Tensor, b: Tensor):
    return np.linalg.solve(a, b)


def scipy_readout(X: Tensor, Yt: Tensor, reg: float):
    """minimalESN's readout as its source spells it: ``from scipy import linalg``."""
    A = np.dot(X, X.T) + reg * np.eye(X.shape[0])
    return scipy_linalg.solve(A, np.dot(X, Yt.T)).T, np.dot(np.dot(Yt, X.T), scipy_linalg.inv(A))


def scipy_stack(a: Tensor):
    return scipy_linalg.inv(a)


@pytest.mark.skipif(scipy_linalg is None, reason="scipy is not installed")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scipy_linalg_inv_and_solve(dtype):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((4, 30)).astype(dtype)
    Yt = rng.standard_normal((2, 30)).astype(dtype)
    got, want = script(scipy_readout)(X, Yt, 1e-2), scipy_readout(X, Yt, 1e-2)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4 if dtype == "float32" else 1e-10)
    check_vjp(script(scipy_readout), (X.astype(np.float64), Yt.astype(np.float64), 1e-2),
              argnums=(0, 1))
    with pytest.raises(ValueError, match="more than 2 axes is not supported here"):
        script(scipy_stack)(np.stack([np.eye(2), np.eye(2)]))
