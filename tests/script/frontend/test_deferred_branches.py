"""A branch that does not compile raises its ScriptError only where a specialization keeps it:
a call that decides the condition (an Optional argument left None, a helper's flag left at its
default, the rank of an array) drops the branch and runs; a call that keeps it gets the error
at the branch's line, before any code runs, through every path that makes code (calls, vjp,
ONNX export, a saved and loaded module)."""

from typing import Optional

import numpy as np
import pytest

import script
from script import ScriptError, Tensor
from script.frontend.compiler import compile_function
from tests.gradcheck import check_vjp
from tests.helpers import line_of


def with_saver(x: Tensor, saver=None):
    y = np.tanh(x) * 2.0
    if saver is not None:
        saver.save(y)
    return y


def update(x, S, return_all=False):
    x = x * 2.0
    if return_all:
        return x, S.log_likelihood(x)
    return x, S


def calls_update(x: Tensor, S: Tensor):
    x, S = update(x, S)
    return x @ S


def calls_update_all(x: Tensor, S: Tensor):
    x, S = update(x, S, return_all=True)
    return x @ S


def by_rank(x: Tensor):
    if x.ndim == 1:
        x = x.unknown_method()
    return x.sum(axis=1)


def in_loop(x: Tensor, h: Optional[Tensor] = None):
    for _ in range(3):
        if h is not None:
            x = x + h.unknown_method()
        x = np.tanh(x)
    return x


def conditional_expression(x: Tensor, h: Optional[Tensor] = None):
    return x * 2.0 if h is None else h.unknown_method()


def neither_branch(x: Tensor, flag: bool):
    if flag:
        y = x.first_unknown()
    else:
        y = x.second_unknown()
    return y


def error_after_a_deferred_one(x: Tensor, flag: bool):
    if flag:
        x = x.unknown_method()
    return undefined_name + x  # noqa: F821


def first_iteration_fails(x: Tensor, n: int, flag: bool):
    acc = 0
    for _ in range(n):
        if flag:
            acc = acc + acc.sum()  # an int has no .sum(): Python's first iteration fails
        acc = acc + x
    return acc


def nested_in_a_check(x: Tensor):
    y = np.tanh(x)
    if x.sum() > 100.0:
        if x.sum() > 200.0:
            y.save()
        raise ValueError("x too big")
    return y * 2.0


def message(n: int) -> str:
    if n > 100:
        return n.bad()
    return "small"


def raises_with_a_message(x: Tensor, n: int):
    if x.sum() > 1e9:
        raise ValueError(message(n))
    return x * 2.0


class Layer:
    def __init__(self, W):
        self.W = W

    def forward(self, h):
        return np.tanh(h @ self.W)


class Stack:
    def __init__(self, layers):
        self.num_layers = len(layers)
        self.rnns = layers


def run_stack(model: Stack, h: Tensor):
    if h.sum() > -100.0:
        for i in range(model.num_layers):
            h = model.rnns[i].forward(h)
    return h


class Cell(script.Module):
    def __init__(self):
        super().__init__()
        self.W = script.Parameter(np.linspace(-1.0, 1.0, 9).reshape(3, 3))

    def forward(self, x: Tensor, h: Optional[Tensor] = None):
        y = np.tanh(x @ self.W)
        if h is not None:
            y = y + h.unknown_method()
        return y


rng = np.random.default_rng(0)


def test_a_branch_the_call_drops_does_not_stop_the_function():
    x = rng.standard_normal((2, 3))
    np.testing.assert_allclose(script.script(with_saver)(x), with_saver(x), rtol=1e-12)
    S = rng.standard_normal((3, 3))
    np.testing.assert_allclose(script.script(calls_update)(x, S), calls_update(x, S), rtol=1e-12)
    np.testing.assert_allclose(script.script(by_rank)(x), by_rank(x), rtol=1e-12)
    np.testing.assert_allclose(script.script(in_loop)(x), in_loop(x), rtol=1e-12)
    np.testing.assert_allclose(script.script(conditional_expression)(x),
                               conditional_expression(x), rtol=1e-12)


def test_a_branch_the_call_keeps_raises_its_error_at_its_line():
    x = rng.standard_normal((2, 3))
    cases = [(with_saver, (x, x), "saver.save(y)", "has no attribute 'save'"),
             (by_rank, (x[0],), "x = x.unknown_method()", "unknown_method"),
             (in_loop, (x, x), "x = x + h.unknown_method()", "unknown_method"),
             (conditional_expression, (x, x), "h.unknown_method()", "unknown_method"),
             (calls_update_all, (x, x.T @ x), "S.log_likelihood(x)", "log_likelihood")]
    for fn, args, text, message in cases:
        with pytest.raises(ScriptError, match=message) as info:
            script.script(fn)(*args)
        source = update if fn is calls_update_all else fn
        assert info.value.line == line_of(source, text), str(info.value)
        assert "^" in str(info.value).splitlines()[-1]


def test_gradients_through_a_function_with_a_dropped_branch():
    x = rng.standard_normal((2, 3))
    check_vjp(script.script(with_saver), (x,))
    check_vjp(script.script(in_loop), (x,))
    with pytest.raises(ScriptError, match="has no attribute 'save'"):
        script.vjp(script.script(with_saver), x, x)


def test_where_no_branch_compiles_the_first_error_is_raised_when_compiling():
    with pytest.raises(ScriptError, match="first_unknown") as info:
        compile_function(neither_branch)
    assert info.value.line == line_of(neither_branch, "y = x.first_unknown()")


def test_an_error_after_a_deferred_branch_reports_the_first_error_in_the_source():
    with pytest.raises(ScriptError, match="unknown_method") as info:
        compile_function(error_after_a_deferred_one)
    assert info.value.line == line_of(error_after_a_deferred_one, "x = x.unknown_method()")


def test_a_loop_whose_first_iteration_does_not_compile_is_refused():
    # the pass over the body with the types of the first iteration fails in the branch; the
    # last pass (acc an array) compiles it: the error is not dropped
    with pytest.raises(ScriptError, match="'int' has no attribute 'sum'"):
        script.script(first_iteration_fails)(np.arange(3.0), 3, True)


def test_a_message_whose_helper_has_a_deferred_branch_is_its_source_text():
    x = np.arange(3.0)
    np.testing.assert_array_equal(script.script(raises_with_a_message)(x, 3), x * 2.0)


def test_an_object_attribute_read_per_call_falls_back_to_constants_as_before():
    rng = np.random.default_rng(1)
    model = Stack([Layer(rng.standard_normal((3, 3)) * 0.5) for _ in range(8)])
    h = rng.standard_normal((2, 3))
    f = script.script(run_stack)
    for n in range(1, 8):  # past the count of values compiled in (then read per call)
        model.num_layers = n
        np.testing.assert_allclose(f(model, h), run_stack(model, h), rtol=1e-12)


def test_the_definition_lists_its_deferred_errors():
    (error,) = compile_function(with_saver).deferred_errors
    assert error.line == line_of(with_saver, "saver.save(y)")
    assert compile_function(calls_update).deferred_errors == []


def test_a_saved_module_keeps_the_branch_and_its_error(tmp_path):
    x = rng.standard_normal((2, 3))
    cell = script.script(Cell())
    want = np.tanh(x @ cell.W)
    path = tmp_path / "cell.rs"
    script.save(cell, path)
    loaded = script.load(path)
    np.testing.assert_allclose(loaded(x), want, rtol=1e-12)
    frozen = script.freeze(cell)
    np.testing.assert_allclose(frozen(x), want, rtol=1e-12)
    for model in (cell, loaded, frozen):
        with pytest.raises(ScriptError, match="unknown_method") as info:
            model(x, x)
        assert info.value.line == line_of(Cell.forward, "y = y + h.unknown_method()")


def test_onnx_export_raises_the_error_of_a_kept_branch(tmp_path):
    pytest.importorskip("onnx")
    x = rng.standard_normal((2, 3))
    with pytest.raises(ScriptError, match="has no attribute 'save'"):
        script.export_onnx(script.script(with_saver), (x, x), tmp_path / "kept.onnx")
    script.export_onnx(script.script(with_saver), (x,), tmp_path / "dropped.onnx")
    with pytest.raises(ScriptError, match="has no attribute 'save'"):  # inside a check
        script.export_onnx(script.script(nested_in_a_check), (x,), tmp_path / "check.onnx")
