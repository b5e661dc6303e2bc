"""The real-world corpus (``benchmarks/realworld_programs``): public numpy RNN programs ported
with type annotations only. For every case: the compiled function equals the plain one in
float32 and float64 (values, dtypes, shapes, container structure), and where it is
differentiable its ``vjp`` gradients equal central finite differences (float64); the arguments
after the call (an object's attributes a method assigned, a list or dict it changed) equal the
plain call's. A case that
does not compile or computes something else today is an expected failure naming the error."""

import copy

import numpy as np
import pytest

from benchmarks.realworld_programs import programs
from script import ScriptError, script
from tests.gradcheck import check_vjp

TOLERANCE = {"float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)}
"""dtype -> (rtol, atol)."""


def _params(kind: str) -> list:
    found = []
    for program, module in programs().items():
        for name, case in module.CASES.items():
            if kind == "grad" and not case.grad:
                continue
            why = case.xfail or (case.grad_xfail if kind == "grad" else "")
            marks = [pytest.mark.xfail(strict=True, raises=ScriptError, reason=why)] if why else []
            found.append(pytest.param(case, id=f"{program}.{name}", marks=marks))
    return found


def assert_same(got, want, dtype: str, where: str = "result") -> None:
    """``got`` has ``want``'s structure, and its arrays the same dtype, shape and values."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, dtype, f"{where}[{k}]")
        return
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), where
        for key in want:
            assert_same(got[key], want[key], dtype, f"{where}[{key!r}]")
        return
    if isinstance(want, (int, np.integer)) and not isinstance(want, bool):
        assert int(got) == int(want), where
        return
    if want is None:
        assert got is None, where
        return
    if hasattr(want, "__dict__") and not isinstance(want, np.ndarray):  # an object argument
        assert type(got) is type(want), where
        assert_same(vars(got), vars(want), dtype, f"{where}'s attributes")
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, f"{where}: dtype {g.dtype} != {w.dtype}"
    assert g.shape == w.shape, f"{where}: shape {g.shape} != {w.shape}"
    rtol, atol = TOLERANCE[dtype]
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=where)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", _params("value"))
def test_compiled_equals_plain(case, dtype):
    args = case.make_args(dtype, "test")
    plain_args, compiled_args = copy.deepcopy(args), copy.deepcopy(args)
    want = case.fn(*plain_args)
    got = script(case.fn)(*compiled_args)
    assert_same(got, want, dtype)
    assert_same(compiled_args, plain_args, dtype, "the arguments after the call")


@pytest.mark.parametrize("case", _params("grad"))
def test_gradients_equal_finite_differences(case):
    eps, rtol, atol = case.fd
    check_vjp(script(case.fn), case.make_args("float64", "test"), eps=eps, rtol=rtol, atol=atol)


def test_the_corpus_has_twelve_programs_with_their_sources():
    found = programs()
    assert len(found) >= 12
    for name, module in found.items():
        doc = module.__doc__ or ""
        assert "https://" in doc and "License" in doc and "Changes:" in doc, name
        assert module.BENCH in module.CASES, name
