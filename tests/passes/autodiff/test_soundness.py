"""The gradient soundness rule: a gradient is right or refused at the user's line, never a
silent zero.

``tests/programs/refused_gradients.py`` holds programs whose gradients were silently zero or
wrong, or are refused by name: each must now give the finite-difference gradient or raise a
``ScriptError`` at its marked line. A refusal by the soundness check ("would silently be zero")
must be needed: with the check off, the gradient it stopped is wrong. And the check refuses
nothing that differentiated correctly before: every program of the language corpus and generated
gradient programs go through it.
"""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import passes.autodiff.grad as grad_module
from ir.registry import all_ops
from passes.autodiff.rules import NON_DIFFERENTIABLE, VJP_RULES
from passes.autodiff.walk import STRUCTURE_VJPS
from script import script, vjp
from script.errors import ScriptError
from tests.gradcheck import check_vjp
from tests.programs import cells, custom_lstms
from tests.programs import frontend as frontend_programs
from tests.programs import refused_gradients as R
from tests.programs.language import PROGRAMS

SILENT = "the gradient would silently be zero"


def marker(fn) -> tuple[int, str]:
    """The line marked ``# REFUSED: <regex>`` in ``fn`` and the regex."""
    lines, start = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        found = re.search(r"# REFUSED: (.*)$", line)
        if found:
            return start + k, found.group(1).strip()
    raise AssertionError(f"{fn.__name__} has no # REFUSED marker")


def gradient_or_refusal(fn, args) -> ScriptError | None:
    """None when ``vjp`` of ``fn`` matches finite differences; the ScriptError it raised when
    refused. Anything else (a wrong gradient, another exception) fails the test."""
    try:
        check_vjp(script(fn), args, rtol=1e-5, atol=1e-7)
    except ScriptError as e:
        assert "cannot differentiate" in str(e), str(e)
        return e
    return None


def wrong_without_the_check(fn, args, monkeypatch) -> bool:
    """Whether the gradient the soundness check refused is wrong (differs from finite
    differences) when the check is off."""
    with monkeypatch.context() as m:
        m.setattr(grad_module, "check_gradient_paths", lambda *a, **k: None)
        try:
            check_vjp(script(fn), args, rtol=1e-5, atol=1e-7)
        except AssertionError:
            return True
        except ScriptError:
            return True  # refused anyway by the construct's own rule
    return False


@pytest.mark.parametrize("name", sorted(R.ARGS))
def test_gradient_is_right_or_refused_at_the_line(name, monkeypatch):
    fn = getattr(R, name)
    args = R.ARGS[name](np.random.default_rng(0))
    refusal = gradient_or_refusal(fn, args)
    if refusal is None:
        return
    line, pattern = marker(fn)
    text = str(refusal)
    assert refusal.line == line and text.startswith(f"{inspect.getsourcefile(R)}:{line}:"), text
    assert re.search(pattern, refusal.reason), (pattern, text)
    quoted, caret = text.splitlines()[1:3]
    assert quoted.strip() == inspect.getsource(R).splitlines()[line - 1].strip()
    assert caret.strip().startswith("^")
    if SILENT in text:
        assert wrong_without_the_check(fn, args, monkeypatch), \
            f"{name}: refused although its gradient was right without the check"


def appended_after_its_last_read(x):
    items = [np.sin(x)]
    s = np.stack(items, 0).sum(0)
    items.append(np.tanh(s) * 2.0)  # read by nothing: its gradient is zero
    return s * 3.0


def appended_in_a_loop_read_next_step(x):
    items = [x]
    y = x
    for _ in range(3):
        y = items[-1] * 2.0
        items.append(np.sin(y))
    return y


@pytest.mark.parametrize("fn", [appended_after_its_last_read, appended_in_a_loop_read_next_step])
def test_a_value_stored_after_the_lists_last_read_needs_no_gradient(fn):
    """The check sees when a list is read: an append after its last read (in program order, or
    in the next step of a loop around both) passes nothing on, so it was refused spuriously."""
    check_vjp(script(fn), (np.random.default_rng(3).standard_normal(3),))


@pytest.mark.parametrize("name", ["refused_dict_value", "refused_comprehension_unpacked",
                                  "refused_list_output", "refused_list_item_replaced"])
def test_the_known_silent_zeros_are_no_longer_silent(name):
    """These gave zero (or wrong) gradients without a word."""
    fn = getattr(R, name)
    gradient_or_refusal(fn, R.ARGS[name](np.random.default_rng(1)))


def _float_args(args) -> bool:
    return any(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in args) or any(
        isinstance(a, list) and a and isinstance(a[0], np.ndarray) for a in args)


@pytest.mark.parametrize("name", sorted(n for n, (_, make) in PROGRAMS.items()
                                        if _float_args(make(np.random.default_rng(0)))))
def test_the_check_refuses_nothing_the_backward_gets_right(name, monkeypatch):
    """Every language-corpus program, differentiated with respect to every float input: the
    soundness check only refuses gradients that are wrong without it."""
    fn, make = PROGRAMS[name]
    args = tuple(make(np.random.default_rng(0)))
    try:
        vjp(script(fn), *args)
    except ScriptError as e:
        if SILENT in str(e):
            assert wrong_without_the_check(fn, args, monkeypatch), str(e)


def _runnable_arguments(fn) -> tuple | None:
    """Arguments made from ``fn``'s annotations that its plain Python accepts, if any."""
    from tests.helpers import arguments
    for shape in ((3,), (2, 3), (3, 3), (4, 2, 3)):
        args = arguments(fn, shape)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn(*args)
        except Exception:  # noqa: BLE001 -- another shape may fit
            continue
        return args
    return None


@pytest.mark.parametrize("module, name", [
    (module, name) for module in (frontend_programs, cells, custom_lstms)
    for name, value in sorted(vars(module).items())
    if inspect.isfunction(value) and value.__module__ == module.__name__
    and not name.startswith("_")])
def test_corpus_programs_are_not_refused_spuriously(module, name, monkeypatch):
    """Every program of the frontend corpus and the cell library, differentiated with respect
    to every float input (arguments made from the annotations)."""
    fn = getattr(module, name)
    args = _runnable_arguments(fn)
    if args is None or not _float_args(args):
        return
    try:
        with np.errstate(all="ignore"):
            vjp(script(fn), *args)
    except ScriptError as e:
        if SILENT in str(e):
            assert wrong_without_the_check(fn, args, monkeypatch), str(e)


@settings(max_examples=25, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_generated_programs_are_not_refused_spuriously(data):
    """Generated gradient programs: a refusal by the soundness check is only ever of a
    gradient that is wrong without it."""
    from tests.fuzz.differential import load
    from tests.fuzz.program_gen import programs
    program = data.draw(programs(max_helpers=1, differentiable=True))
    seed = data.draw(st.integers(0, 2**16))
    fn = getattr(load(program), program.entry)
    args = program.make_args(seed)
    with np.errstate(all="ignore"):
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 -- a program that raises has no gradient to check
            return
        try:
            vjp(script(fn), *args)
        except ScriptError as e:
            if SILENT in str(e):
                mp = pytest.MonkeyPatch()
                try:
                    assert wrong_without_the_check(fn, args, mp), f"{e}\n{program.source}"
                finally:
                    mp.undo()


# -- the registry's zero-derivative trait ---------------------------------------------------------
def test_zero_derivative_ops_are_exactly_the_ops_without_a_derivative():
    """The autodiff reads the trait: an op with it has no gradient rule (none would run), and
    every tensor op without it has one (or is structure the transformation handles)."""
    traited = {op.kind for op in all_ops() if op.has_zero_derivative}
    assert traited == NON_DIFFERENTIABLE
    assert not traited & set(VJP_RULES)
    for kind in ("tensor::gt", "tensor::floor", "tensor::sign", "tensor::shape", "prim::len",
                 "tensor::zeros_like", "prim::Int", "prim::Bool"):
        assert kind in traited
    # float(x) and min/max of numbers pass a derivative on: no trait, so the check refuses them
    for kind in ("tensor::tanh", "tensor::matmul", "tensor::add", "tensor::select", "prim::Float",
                 "prim::min", "prim::max"):
        assert kind not in traited
    internal = {"tensor::dropout", "tensor::write_slot"}
    for op in all_ops():
        if op.kind.startswith("tensor::") and op.kind not in traited | internal:
            assert op.kind in VJP_RULES or op.kind in STRUCTURE_VJPS, op.kind
