"""The real-world corpus (``benchmarks/realworld_programs``) on a GPU: numpy code written for the
host, compiled and called with CuPy arrays, gives what the plain program gives on numpy arrays
(its ``np.zeros`` buffers, constants and number accumulators made on the device). Marked
``gpu``: it runs on a GPU, and on ``tests.gpu.strict_cupy`` without one."""

import copy

import numpy as np
import pytest

from benchmarks.realworld_programs import programs
from script import script
from tests.gpu.test_cupy_end_to_end import _gpu_reason

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_gpu_reason() is not None,
                                                  reason=_gpu_reason() or "")]

TOLERANCE = {"float32": (2e-4, 2e-5), "float64": (1e-9, 1e-11)}

def _cases() -> list:
    found = []
    for program, module in programs().items():
        for name, case in module.CASES.items():
            if case.xfail:
                continue
            found.append(pytest.param(case, id=f"{program}.{name}"))
    return found


def to_device(value):
    import cupy
    if isinstance(value, np.ndarray):  # labels and token ids too, as a GPU user moves them
        return cupy.asarray(value)
    if isinstance(value, (tuple, list)):
        return type(value)(to_device(v) for v in value)
    if isinstance(value, dict):
        return {k: to_device(v) for k, v in value.items()}
    if hasattr(value, "__dict__") and not isinstance(value, type):
        moved = copy.copy(value)
        for k, v in vars(value).items():
            setattr(moved, k, to_device(v))
        return moved
    return value


def same(got, want, dtype, where="result"):
    import cupy
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want)):
            same(g, w, dtype, f"{where}[{k}]")
        return
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), where
        for key in want:
            same(got[key], want[key], dtype, f"{where}[{key!r}]")
        return
    if isinstance(want, np.ndarray) and want.ndim > 0 and want.dtype.kind in "fc":
        assert isinstance(got, cupy.ndarray), f"{where}: {type(got).__name__}"
    g = cupy.asnumpy(got) if isinstance(got, cupy.ndarray) else np.asarray(got)
    w = np.asarray(want)
    assert g.shape == w.shape, f"{where}: shape {g.shape} != {w.shape}"
    if w.dtype.kind in "fc":
        assert g.dtype == w.dtype, f"{where}: dtype {g.dtype} != {w.dtype}"
        rtol, atol = TOLERANCE[dtype]
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=where)
    else:
        np.testing.assert_array_equal(g, w, err_msg=where)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", _cases())
def test_compiled_on_cupy_equals_plain_on_numpy(case, dtype):
    args = case.make_args(dtype, "test")
    want = case.fn(*copy.deepcopy(args))
    got = script(case.fn)(*to_device(copy.deepcopy(args)))
    same(got, want, dtype)
