"""A fusion group's 0-d input may be a numpy scalar at run time (``np.sum(x)``, ``p[i, 0]``
return ``np.float64``, not 0-d arrays): the guarded path takes it as the 0-d array its plan was
made for, and the values are numpy's, scalars of another dtype included."""

import numpy as np
import pytest

from fuser.cpu.kernel import Kernel
from script import Tensor, script


def normalized(x: Tensor) -> Tensor:
    return np.exp(x) / np.sum(np.exp(x))


def scaled(x: Tensor, s: Tensor) -> Tensor:
    return np.exp(x) / s + 1.0


def _kernel(fn, *args):
    spec = script(fn).specialization(*args)
    (kernel,) = [v for k, v in spec.fn.__globals__.items() if k.startswith("_kernel")]
    return kernel


def test_a_numpy_scalar_for_a_0d_input_takes_the_guarded_path(monkeypatch):
    x = np.linspace(-1.0, 1.0, 5)
    kernel = _kernel(scaled, x, np.asarray(3.0))
    kernel(x, np.asarray(3.0))  # the plan for a 0-d array
    general = []
    monkeypatch.setattr(Kernel, "_call_planned",
                        lambda self, args: general.append(args) or pytest.fail("general path"))
    for s in (np.float64(2.0), np.float64(-0.5), np.float64(7.25)):
        np.testing.assert_allclose(kernel(x, s), scaled(x, s), rtol=1e-15)
    assert not general


@pytest.mark.parametrize("scalar", [np.float32(1.5), np.int64(3), np.bool_(True), 2.5, 4])
def test_scalars_of_other_types_give_numpys_values(scalar):
    x = np.linspace(-1.0, 1.0, 5)
    kernel = _kernel(scaled, x, np.asarray(3.0))
    kernel(x, np.asarray(3.0))
    got = kernel(x, scalar)
    np.testing.assert_allclose(got, scaled(x, np.float64(scalar)), rtol=1e-15)
    assert got.dtype == np.float64


def test_compiled_softmax_over_steps_matches_numpy():
    f = script(normalized)
    for k in range(3):
        x = np.linspace(-1.0, 1.0, 7) * (k + 1)
        np.testing.assert_allclose(f(x), normalized(x), rtol=1e-14)
