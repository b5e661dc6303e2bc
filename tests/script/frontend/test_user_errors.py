"""What a user can see go wrong: only ``ScriptError`` / ``SignatureError`` / ``LoadError``, or the
error the plain Python function itself raises, comes out of compiling, calling or differentiating
a scripted function; a ``ScriptError`` names ``file:line``.

Driven over the rejected programs (tests/programs/bad.py), the accepted ones
(tests/programs/frontend.py, called with arguments made from their annotations, which often do
not fit), the refused gradients (tests/programs/refused_gradients.py), and compiler failures
forced from inside (a pass that raises), which must read as internal errors at the function's
line.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import numpy as np
import pytest

import ir
import passes
from script import LoadError, SignatureError, grad, script, value_and_grad, vjp
from script.errors import ScriptError
from tests.helpers import arguments
from tests.programs import bad as bad_programs
from tests.programs import edge as edge_programs
from tests.programs import frontend as frontend_programs
from tests.programs import refused_gradients

ALLOWED = (ScriptError, SignatureError, LoadError)
LOCATED = re.compile(r"^\S+\.py:\d+:\d+: ", re.MULTILINE)


def assert_user_facing(error: BaseException, plain: BaseException | None) -> None:
    """``error`` is allowed: a user-facing type (a ScriptError naming file:line), or the type the
    plain function raised."""
    if isinstance(error, ScriptError):
        assert LOCATED.search(str(error)), f"no file:line in: {error}"
        # allowed by the contract, but a bug of ours on these programs
        assert "internal compiler error" not in str(error), str(error)
        return
    if isinstance(error, ALLOWED):
        return
    if plain is not None and isinstance(error, type(plain)):
        return
    raise AssertionError(f"{type(error).__name__} reached the user: {error}") from error


def drive(fn: Any, args: tuple[Any, ...]) -> None:
    """Compile, call and differentiate ``fn`` on ``args``, checking every error."""
    plain: BaseException | None = None
    try:
        with np.errstate(all="ignore"):
            fn(*args)
    except Exception as e:  # noqa: BLE001 -- what the plain function raises is allowed
        plain = e
    sf = script(fn)
    for action in (lambda: sf.graph, lambda: sf(*args), lambda: sf.graph_for(*args),
                   lambda: sf.explain(*args), lambda: vjp(sf, *args),
                   lambda: sf.backward_graph_for(*args)):
        try:
            with np.errstate(all="ignore"):
                action()
        except Exception as e:  # noqa: BLE001 -- checked just below
            assert_user_facing(e, plain)


def _functions(module: Any, prefix: str = "") -> list[str]:
    return sorted(name for name, value in vars(module).items()
                  if inspect.isfunction(value) and value.__module__ == module.__name__
                  and name.startswith(prefix))


@pytest.mark.parametrize("name", _functions(bad_programs, "bad_"))
def test_rejected_programs_raise_script_errors_only(name):
    fn = getattr(bad_programs, name)
    drive(fn, arguments(fn, (3,)))


@pytest.mark.parametrize("shape, dtype", [((3,), "float64"), ((2, 3), "float64"),
                                          ((), "float64"), ((4, 4), "float32"),
                                          ((2, 3), "int64")])
@pytest.mark.parametrize("name", _functions(frontend_programs))
def test_accepted_programs_with_arbitrary_arguments(name, shape, dtype):
    fn = getattr(frontend_programs, name)
    drive(fn, arguments(fn, shape, dtype))


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
@pytest.mark.parametrize("name", _functions(edge_programs, "edge_"))
def test_edge_programs_raise_what_their_python_raises(name, shape):
    fn = getattr(edge_programs, name)
    drive(fn, arguments(fn, shape))


@pytest.mark.parametrize("name", sorted(refused_gradients.ARGS))
def test_refused_gradients_are_script_errors(name):
    fn = getattr(refused_gradients, name)
    drive(fn, refused_gradients.ARGS[name](np.random.default_rng(0)))


# -- failures inside the compiler ----------------------------------------------------------------
def double_then_tanh(x: np.ndarray) -> np.ndarray:
    y = x * 2.0
    return np.tanh(y)


DEF_LINE = inspect.getsourcelines(double_then_tanh)[1]


def _break_pass(monkeypatch, error: BaseException) -> None:
    """Make the ``cse`` pass raise ``error`` (an exception from inside the compiler)."""
    def broken(graph):
        raise error
    monkeypatch.setitem(passes.PASSES, "cse", broken)


@pytest.mark.parametrize("error", [KeyError("x"), AssertionError("invariant"),
                                   NotImplementedError("later"), TypeError("bad"),
                                   ValueError("worse"), IndexError("far")])
@pytest.mark.parametrize("how", ["call", "graph_for", "vjp"])
def test_an_internal_error_is_a_script_error_at_the_def(monkeypatch, error, how):
    _break_pass(monkeypatch, error)
    sf = script(double_then_tanh)
    x = np.ones(3)
    action = {"call": lambda: sf(x), "graph_for": lambda: sf.graph_for(x),
              "vjp": lambda: vjp(sf, x)}[how]
    with pytest.raises(ScriptError) as info:
        action()
    text = str(info.value)
    assert text.startswith(f"{__file__}:{DEF_LINE}:"), text
    assert "internal compiler error" in text and "double_then_tanh" in text
    assert type(error).__name__ in text
    assert "cannot differentiate" not in text  # not mistaken for a refusal by the fuzzers


def test_an_ir_error_about_a_node_points_at_its_line(monkeypatch):
    def broken(graph):
        node = next(n for n in graph.walk() if n.kind == "tensor::tanh")
        raise ir.IRError("something is off", node)
    monkeypatch.setitem(passes.PASSES, "cse", broken)
    with pytest.raises(ScriptError) as info:
        script(double_then_tanh)(np.ones(3))
    line = DEF_LINE + 2
    assert str(info.value).startswith(f"{__file__}:{line}:"), str(info.value)
    assert "return np.tanh(y)" in str(info.value).splitlines()[1]


def test_a_cotangent_unlike_the_output_is_a_signature_error():
    _, backward = vjp(script(double_then_tanh), np.ones(3))
    with pytest.raises(SignatureError, match=r"shape \(4,\).*shape \(3,\)"):
        backward(np.ones(4))


def test_a_non_function_is_refused_with_a_script_error():
    with pytest.raises(ScriptError, match="not an object of type int"):
        vjp(3, np.ones(3))


def two_args(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x * y).sum()


@pytest.mark.parametrize("misuse, error", [
    (lambda: script([lambda x: x, lambda x: -x][0])(np.ones(2)), ScriptError),
    (lambda: script(3), ScriptError),
    (lambda: script(two_args)(np.ones(2)), SignatureError),
    (lambda: script(two_args)(np.ones(2), np.ones(3)), SignatureError),
    (lambda: vjp(script(two_args), np.ones(2), np.ones(3)), SignatureError),
    (lambda: value_and_grad(two_args, argnums=5)(np.ones(2), np.ones(2)), SignatureError),
    (lambda: value_and_grad(double_then_tanh)(np.ones(2)), ScriptError),
    (lambda: grad(double_then_tanh)(np.ones(2)), ScriptError),
    (lambda: script(two_args)(object(), np.ones(2)), SignatureError),
], ids=["lambda", "not-a-function", "arity", "shapes", "vjp-shapes", "argnums",
        "value_and_grad-vector", "grad-vector", "object-argument"])
def test_api_misuse_is_a_user_facing_error(misuse, error):
    with pytest.raises(error) as info:
        misuse()
    if isinstance(info.value, ScriptError) and info.value.line is not None:
        assert LOCATED.search(str(info.value))


@pytest.mark.parametrize("how", [lambda f: value_and_grad(f), lambda f: grad(f)],
                         ids=["value_and_grad", "grad"])
def test_a_vector_output_for_a_scalar_gradient_points_at_the_def(how):
    with pytest.raises(ScriptError, match="one scalar output") as info:
        how(double_then_tanh)(np.ones(2))
    assert str(info.value).startswith(f"{__file__}:{DEF_LINE}:"), str(info.value)


def test_an_np_matrix_argument_is_a_signature_error():
    # its `*` multiplies matrices: compiled as an array's elementwise product it would differ
    def square(x):
        return x * x
    with pytest.raises(SignatureError, match=r"np.matrix is not supported.*np.asarray"):
        script(square)(np.matrix([[0.0, 1.0], [2.0, 3.0]]))
    with pytest.raises(SignatureError, match=r"'xs'\[0\]: np.matrix"):
        script(lambda xs: xs[0] * xs[1])([np.matrix(np.eye(2)), np.ones((2, 2))])
