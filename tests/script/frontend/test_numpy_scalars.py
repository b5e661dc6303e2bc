"""numpy scalars: what a numpy ufunc gives for Python numbers (``np.sqrt(3)`` is a
``np.float64``) and ``np.float32(x)`` and the other scalar types are numpy's typed scalars, not
Python numbers: under numpy's promotion rules they make a float32 array float64 where a Python
float would not. The compiled function gives numpy's dtypes and values."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def scaled_by_root(a: Tensor) -> Tensor:
    return a * np.sqrt(3)


def negated_int(a: Tensor) -> Tensor:
    return a + np.negative(3)


def scaled_by_e(a: Tensor) -> Tensor:
    return np.tanh(a) * np.exp(1.0)  # fused with the tanh: the kernel must compute in float64


def root_of_size(a: Tensor, d: int) -> Tensor:
    return np.tanh(a) / np.sqrt(d)  # run-time int: as numpy, a float64 result


def python_root(a: Tensor) -> Tensor:
    return a * 3 ** 0.5  # a Python float: the array keeps its dtype


def typed_scalars(a: Tensor) -> Tensor:
    return a * np.float32(0.5) + np.float64(1.0) * np.float32(2.0)


def float32_scalars(a: Tensor, s: float) -> Tensor:
    return a * np.float32(s) + np.float32(1)


def cast_array(a: Tensor) -> Tensor:
    return np.float32(a) * 2.0


@pytest.mark.parametrize("fn,args", [
    (scaled_by_root, ()), (negated_int, ()), (scaled_by_e, ()), (root_of_size, (4,)),
    (python_root, ()), (typed_scalars, ()), (float32_scalars, (0.25,)), (cast_array, ()),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtypes_and_values_are_numpy_s(fn, args, dtype):
    a = np.random.default_rng(0).standard_normal((40, 60)).astype(dtype)
    want = fn(a, *args)
    got = script(fn)(a, *args)
    assert got.dtype == want.dtype, (fn.__name__, got.dtype, want.dtype)
    tol = 1e-6 if dtype == np.float32 else 1e-12  # float32 inputs: float32 math (tanh)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_a_ufunc_of_numbers_promotes_float32_arrays_to_float64():
    a = np.ones((3, 4), np.float32)
    assert script(scaled_by_root)(a).dtype == np.float64 == scaled_by_root(a).dtype
    assert script(python_root)(a).dtype == np.float32 == python_root(a).dtype


def bad_scalar_type(a: Tensor) -> Tensor:
    return a * np.float32(1.0, 2.0)


def test_a_scalar_type_takes_one_argument():
    with pytest.raises(ScriptError, match=r"np.float32\(\) takes exactly one positional"):
        script(bad_scalar_type)(np.ones(3, np.float32))


def reductions_of_numbers(a: Tensor, n: int):
    return np.sum(3.0), np.max(n), a * np.mean(2), np.sum(np.sqrt(2.0)) + a


def test_numpy_functions_take_numbers_as_0d_arrays():
    a = np.ones((2, 3), np.float32)
    want = reductions_of_numbers(a, 4)
    got = script(reductions_of_numbers)(a, 4)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=1e-12)
