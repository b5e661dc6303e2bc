"""The shape/dtype sanitizer (``RNNSCRIPT_VERIFY=1``, set for every test): compiled code checks
each value against its static type, so a wrong type rule fails every program that runs the op."""

from __future__ import annotations

import dataclasses
from typing import List, Optional, Tuple

import numpy as np
import pytest

from ir.registry import REGISTRY, op_def
from ir.types import BOOL, FLOAT, INT, ListType, OptionalType, TensorType, TupleType
from script import ScriptError, Tensor, script, vjp
from script.runtime.sanitize import TypeMismatch, mismatch


def transposed_tanh(x: Tensor) -> Tensor:
    return np.tanh(x.T) * 2.0


def with_rule(monkeypatch, kind, rule):
    """Replace the type rule of ``kind`` for the rest of the test."""
    monkeypatch.setitem(REGISTRY, kind, dataclasses.replace(op_def(kind), infer=rule))


def test_a_wrong_shape_rule_fails_where_the_op_runs(monkeypatch):
    """A transpose rule that keeps the input's shape contradicts nothing statically here
    (tanh and a scalar product accept any shape): only the run-time check sees it."""
    with_rule(monkeypatch, "tensor::transpose", lambda node: [node.inputs[0].type])
    f = script(transposed_tanh)
    with pytest.raises(TypeMismatch, match=r"tensor::transpose at .*test_sanitizer.py:19.*"
                                           r"Double\(3, 2\).*shape \(2, 3\)"):
        f(np.ones((3, 2)))


def test_a_wrong_dtype_rule_fails_where_the_op_runs(monkeypatch):
    original = op_def("tensor::transpose").infer
    with_rule(monkeypatch, "tensor::transpose",
              lambda node: [t.with_dtype("float64") for t in original(node)])
    f = script(transposed_tanh)
    with pytest.raises(TypeMismatch, match=r"tensor::transpose.*dtype float32"):
        f(np.ones((3, 2), np.float32))


def biased(x: Tensor, b: Tensor) -> Tensor:
    return np.tanh(x + b)


def test_gradients_are_checked_too(monkeypatch):
    """The backward's reduction (b's gradient, summed over the broadcast axis) claims a wrong
    shape; the forward has no sum."""
    original = op_def("tensor::sum_to").infer
    with_rule(monkeypatch, "tensor::sum_to", lambda node: [
        t.with_shape((7,)) if t.shape == (3,) else t for t in original(node)])
    out, backward = vjp(script(biased), np.ones((2, 3)), np.ones(3))
    # the backward run reports compiler faults as an internal-error ScriptError at the def
    with pytest.raises(ScriptError, match=r"internal compiler error.*TypeMismatch.*"
                                          r"tensor::sum_to.*Double\(7\).*shape \(3,\)"):
        backward(np.ones((2, 3)))


def test_right_rules_pass_and_no_checks_without_the_variable(monkeypatch):
    x = np.arange(6.0).reshape(3, 2)
    f = script(transposed_tanh)
    np.testing.assert_allclose(f(x), transposed_tanh(x))
    assert "_check_type" in f.code_for(x)
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "0")
    g = script(transposed_tanh)
    assert "_check_type" not in g.code_for(x)  # zero cost outside the test suite
    np.testing.assert_allclose(g(x), transposed_tanh(x))


def pick(x: Tensor, xs: List[Tensor], flag: bool, h: Optional[Tensor]) -> Tuple[Tensor, int]:
    n = 0
    if h is not None:
        x = x + h
    for y in xs:
        x = x * y
        n += 1
    if flag:
        x = x.sum(axis=0)
    return x, n


def test_containers_optionals_and_loops_pass():
    x = np.ones((2, 3))
    for flag in (False, True):
        for h in (None, x):
            want = pick(x, [x, x], flag, h)
            got = script(pick)(x, [x, x], flag, h)
            np.testing.assert_allclose(got[0], want[0])
            assert got[1] == want[1]


@pytest.mark.parametrize("value,t,ok", [
    (np.zeros((2, 3), np.float32), TensorType("float32", (2, 3), "cpu"), True),
    (np.zeros((2, 3), np.float32), TensorType("float32", (None, 3)), True),
    (np.zeros((2, 3), np.float32), TensorType(None, None), True),
    (np.zeros((2, 3), np.float32), TensorType("float64", (2, 3)), False),
    (np.zeros((2, 3), np.float32), TensorType("float32", (3, 2)), False),
    (np.zeros((2, 3), np.float32), TensorType("float32", (2, 3, 1)), False),
    (np.float64(1.0), TensorType("float64", ()), True),
    (1.5, TensorType("float64", ()), True),
    (1.5, TensorType("float32", ()), False),
    (np.zeros(2), INT, False),
    (3, INT, True), (3, FLOAT, False), (True, FLOAT, False), (np.True_, BOOL, True),
    (np.True_, INT, False), (np.int64(3), INT, True), (np.float32(1.0), FLOAT, True),
    (None, OptionalType(INT), True), (None, INT, False),
    ((1, np.zeros(2)), TupleType((INT, TensorType("float64", (2,)))), True),
    ((1, np.zeros(3)), TupleType((INT, TensorType("float64", (2,)))), False),
    ([np.zeros(2)], TupleType((TensorType("float64", (2,)),)), True),  # a list argument
    ([np.zeros(2), np.zeros(2)], TupleType((TensorType("float64", (2,)),)), False),
    ([np.zeros(2), np.zeros(3)], ListType(TensorType("float64", (2,))), False),
])
def test_mismatch(value, t, ok):
    assert (mismatch(value, t) is None) == ok


def count_steps(x: Tensor, n: int) -> Tuple[Tensor, int]:
    return x * 2.0, n + 1


def test_a_none_cotangent_of_an_int_output_is_an_int_zero():
    """vjp fills a None cotangent with a zero of the output's type (a float 0.0 for an int
    output broke the backward's static type)."""
    (y, k), backward = vjp(script(count_steps), np.ones(2), 3)
    assert k == 4
    gx, gn = backward((np.ones(2), None))
    np.testing.assert_array_equal(gx, [2.0, 2.0])


def loop_with_a_branch(x0: Tensor, x1: Tensor) -> Tuple[Tensor, Tensor]:
    w = 0
    while w < 1:
        w += 1
        x1 = x1 + ((x1 / (1.0 + x1 * x1)) if w == 3 else (x1 * -2.0))
    return np.exp(np.tanh(x1)) * 2.0, x0 * 1.0


def test_saved_placeholders_of_untaken_branches_pass():
    """The backward's list of a loop's saved values holds None for the branch not taken (a
    placeholder never read): not a type error."""
    from tests.gradcheck import check_vjp
    rng = np.random.default_rng(0)
    check_vjp(script(loop_with_a_branch), (rng.standard_normal((2, 3)), rng.standard_normal(2)))


def shadowing(x: Tensor) -> Tensor:
    _check_type = np.sum(x, axis=0)
    _type = np.sum(x, axis=1)
    return _check_type + _type


def test_user_names_do_not_shadow_the_checker():
    x = np.arange(9.0).reshape(3, 3)
    np.testing.assert_allclose(script(shadowing)(x), shadowing(x))
