"""Native kernels never crash or read out of bounds, whatever arrays they are given.

Fused functions (an LSTM cell's elementwise tail, a broadcasting gate) are called with arrays that
are non-contiguous, zero-sized, broadcast views (stride 0), aliased, Fortran-ordered, unaligned,
huge, or of another dtype than a previous call. Each call must equal ``python_fn`` or raise
``SignatureError``. Every case runs in its own subprocess, so a segfault shows up as an exit
status rather than killing the test run.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Tuple

import numpy as np
import pytest

from script import SignatureError, Tensor, ops, script
from tests.helpers import ROOT, rng


def lstm_tail(gates: Tensor, cx: Tensor) -> Tuple[Tensor, Tensor]:
    i, f, g, o = ops.chunk(gates, 4, 1)
    cy = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
    hy = ops.sigmoid(o) * np.tanh(cy)
    return hy, cy


def gate(x: Tensor, b: Tensor) -> Tensor:
    return ops.sigmoid(x + b) * np.tanh(x) - b


def _tail_args(n: int = 3, h: int = 5, dtype=np.float32):
    r = rng()
    gates = r.standard_normal((n, 4 * h)).astype(dtype)
    return gates, r.standard_normal((n, h)).astype(dtype)


def _unaligned(shape, dtype) -> np.ndarray:
    """An array whose data pointer is one byte off its dtype's alignment."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buf = np.zeros(size + 1, np.uint8)
    a = np.frombuffer(buf.data, dtype=dtype, count=int(np.prod(shape)), offset=1).reshape(shape)
    a[...] = rng().standard_normal(shape)
    return a


# name -> (function, argument maker); arguments are made in the child process
CASES = {
    "contiguous": ("lstm_tail", lambda: _tail_args()),
    "transposed": ("lstm_tail", lambda: (_tail_args()[0].T.copy().T,
                                         np.ascontiguousarray(_tail_args()[1].T).T)),
    "strided_rows": ("lstm_tail", lambda: (_tail_args(6)[0][::2], _tail_args(6)[1][::2])),
    "strided_columns": ("lstm_tail", lambda: (np.repeat(_tail_args()[0], 2, axis=1)[:, ::2],
                                              np.repeat(_tail_args()[1], 3, axis=1)[:, ::3])),
    "reversed": ("lstm_tail", lambda: (_tail_args()[0][::-1], _tail_args()[1][::-1, ::-1])),
    "fortran": ("lstm_tail", lambda: tuple(np.asfortranarray(a) for a in _tail_args())),
    "zero_rows": ("lstm_tail", lambda: _tail_args(0)),
    "zero_hidden": ("lstm_tail", lambda: _tail_args(3, 0)),
    "broadcast_view": ("lstm_tail", lambda: (np.broadcast_to(_tail_args(1)[0], (4, 20)),
                                             np.broadcast_to(_tail_args(1)[1][0], (4, 5)))),
    "aliased": ("gate", lambda: (lambda x: (x, x))(rng().standard_normal((4, 6)))),
    "aliased_overlapping": ("gate", lambda: (lambda x: (x[:, 1:], x[:, :-1]))(
        rng().standard_normal((4, 7)))),
    "broadcast_operand": ("gate", lambda: (rng().standard_normal((4, 6)),
                                           np.broadcast_to(np.float64(0.5), (6,)))),
    "unaligned": ("lstm_tail", lambda: (_unaligned((3, 20), np.float64),
                                        _unaligned((3, 5), np.float64))),
    "huge": ("gate", lambda: (np.full((3000, 3000), 0.25, np.float32),
                              np.linspace(-1, 1, 3000, dtype=np.float32))),
    "int_arrays": ("gate", lambda: (np.arange(12).reshape(3, 4), np.arange(4))),
    "mixed_dtypes": ("lstm_tail", lambda: (_tail_args()[0], _tail_args(dtype=np.float64)[1])),
    "wrong_shape": ("lstm_tail", lambda: (_tail_args()[0], _tail_args(4)[1])),
    "readonly": ("gate", lambda: tuple(_readonly(a) for a in (rng().standard_normal((2, 3)),
                                                              np.ones(3))))
}


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def run_case(name: str) -> None:
    """Child process: run one case, print OK (matches python_fn) or SIGNATURE_ERROR."""
    fn_name, make = CASES[name]
    fn = globals()[fn_name]
    f = script(fn)
    args = make()
    if fn_name == "lstm_tail" and name != "contiguous":
        f(*_tail_args())  # compile a float32 specialization first: the new call must not reuse it
    try:
        got = f(*args)
    except SignatureError as e:
        print("SIGNATURE_ERROR", e)
        return
    want = fn(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    print("OK", f.compiled_signatures)


def _run_in_child(name: str) -> subprocess.CompletedProcess:
    code = f"from tests.fuser.test_native_safety import run_case; run_case({name!r})"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


SIGNATURE_ERRORS = {"mixed_dtypes", "wrong_shape", "int_arrays"}
"""Cases whose arguments a fused float kernel may refuse; the rest must run."""


@pytest.mark.parametrize("name", sorted(CASES))
def test_call_runs_or_raises_signature_error_in_a_subprocess(name):
    result = _run_in_child(name)
    assert result.returncode == 0, (
        f"exit status {result.returncode}\nstdout: {result.stdout}\n"
        f"stderr: {result.stderr[-3000:]}")
    status = result.stdout.split()[0] if result.stdout else ""
    allowed = {"OK", "SIGNATURE_ERROR"} if name in SIGNATURE_ERRORS else {"OK"}
    assert status in allowed, result.stdout + result.stderr[-3000:]


def test_the_cases_exercise_native_kernels():
    assert "prim::FusionGroup" in str(script(lstm_tail).graph_for(*_tail_args()))
    x = np.ones((4, 6))
    assert "prim::FusionGroup" in str(script(gate).graph_for(x, x))


def test_float64_after_float32_respecializes():
    f = script(lstm_tail)
    f(*_tail_args(dtype=np.float32))
    args64 = _tail_args(dtype=np.float64)
    got = f(*args64)
    assert f.compiled_signatures == 2
    for g, w in zip(got, lstm_tail(*args64)):
        assert g.dtype == np.float64
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_a_child_crash_is_detected():
    # the harness itself must notice a native crash: a child that segfaults is not "OK"
    crash = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.string_at(0)"],
                           capture_output=True)
    assert crash.returncode != 0
