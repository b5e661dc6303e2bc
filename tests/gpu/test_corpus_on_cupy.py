"""The real-world corpus (``benchmarks/realworld_programs``) on a GPU: numpy code written for the
host, compiled and called with CuPy arrays, gives what the plain program gives on numpy arrays
(its ``np.zeros`` buffers, constants and number accumulators made on the device). Marked
``gpu``: it runs on a GPU, and on ``tests.gpu.strict_cupy`` without one."""

import copy

import pytest

from benchmarks.realworld_programs import programs
from script import script
from tests.gpu.device import GPU, assert_device_equal, to_device

pytestmark = GPU

TOLERANCE = {"float32": (2e-4, 2e-5), "float64": (1e-9, 1e-11)}

def _cases() -> list:
    found = []
    for program, module in programs().items():
        for name, case in module.CASES.items():
            if case.xfail:
                continue
            found.append(pytest.param(case, id=f"{program}.{name}"))
    return found


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", _cases())
def test_compiled_on_cupy_equals_plain_on_numpy(case, dtype):
    args = case.make_args(dtype, "test")
    want = case.fn(*copy.deepcopy(args))
    got = script(case.fn)(*to_device(copy.deepcopy(args)))
    assert_device_equal(got, want, *TOLERANCE[dtype])
