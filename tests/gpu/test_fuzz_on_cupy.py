"""Differential fuzzing on a GPU: the fuzzer's random programs (``tests/fuzz/program_gen.py``),
compiled and called with CuPy arrays, compute what the plain program computes on numpy arrays.
Marked ``gpu``: it runs on a GPU, and on ``tests.gpu.strict_cupy`` without one (where a numpy
array reaching a CuPy one fails as it would on a device)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import seed as pinned_seed
from hypothesis import strategies as st

from script import ScriptError, SignatureError, script, vjp
from tests.fuzz.differential import TOLERANCE, call, cotangent, load, reset_globals, unload
from tests.fuzz.program_gen import programs
from tests.fuzz.test_programs import _CI, CI_SEED
from tests.gpu.device import GPU, assert_device_equal, to_device

pytestmark = GPU

EXAMPLES = 40
GRADIENT_EXAMPLES = 25


@pinned_seed(CI_SEED)
@settings(max_examples=EXAMPLES, **_CI)
@given(programs(), st.integers(0, 2**16))
def test_generated_programs_on_cupy_match_numpy(program, seed):
    module = load(program)
    try:
        fn = getattr(module, program.entry)
        reset_globals(module, program)
        want = call(fn, program.make_args(seed))
        if want.error is not None:
            return  # what the device raises for a failing program is CuPy's own
        reset_globals(module, program)
        # a GPU program keeps its global arrays on the device too (numpy ones beside CuPy
        # arguments are refused: test_global_numpy_arrays_beside_cupy_arguments_are_refused)
        host = {k: v for k, v in vars(module).items() if isinstance(v, np.ndarray)}
        try:
            for k, v in host.items():
                setattr(module, k, to_device(v))
            got = call(script(fn), to_device(program.make_args(seed)))
        finally:
            for k, v in host.items():
                setattr(module, k, v)
        assert got.error is None, f"{got.error.__name__}: {got.message}\n{program.source}"
        rtol = TOLERANCE[program.dtype]
        assert_device_equal(got.value, want.value, rtol, rtol)
    finally:
        unload(program)


@pinned_seed(CI_SEED)
@settings(max_examples=GRADIENT_EXAMPLES, **_CI)
@given(programs(max_helpers=1, differentiable=True), st.integers(0, 2**16))
def test_generated_gradients_on_cupy_match_numpy(program, seed):
    """``vjp`` on the device gives the gradients ``vjp`` gives on the host (which the fuzzer
    checks against finite differences), for the same cotangent."""
    module = load(program)
    host = {k: v for k, v in vars(module).items() if isinstance(v, np.ndarray)}
    try:
        fn = getattr(module, program.entry)
        reset_globals(module, program)
        with np.errstate(all="ignore"):
            try:
                fn(*program.make_args(seed))
                out, backward = vjp(script(fn), *program.make_args(seed))
            except ScriptError as e:
                assert "cannot differentiate" in str(e), str(e)
                return
            except Exception:  # noqa: BLE001 -- a program that raises has no gradient
                return
            ct = cotangent(out, np.random.default_rng(seed))
            want = backward(ct)
        reset_globals(module, program)
        for k, v in host.items():
            setattr(module, k, to_device(v))
        got_out, got_backward = vjp(script(fn), *to_device(program.make_args(seed)))
        rtol = TOLERANCE[program.dtype]
        assert_device_equal(got_out, out, rtol, rtol, "output")
        assert_device_equal(got_backward(to_device(ct)), want, rtol, rtol, "gradient")
    finally:
        for k, v in host.items():
            setattr(module, k, v)
        unload(program)


G = np.ones(3, np.float32)


def reads_a_global(x):
    return x * G


def test_global_numpy_arrays_beside_cupy_arguments_are_refused():
    import cupy
    with pytest.raises(SignatureError, match="mix devices: 'G' is a numpy array"):
        script(reads_a_global)(cupy.ones(3, np.float32))
