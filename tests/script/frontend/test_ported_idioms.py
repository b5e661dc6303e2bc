"""Idioms of public numpy RNN code that compile as written: Apache TVM's ``lstm_python``
(``np.array`` annotations), the ONNX reference LSTM/GRU (``not in`` a set literal, an
Optional[int] option compared with ``==``, an f-string assert message), Chainer's
``F.lstm`` (``x.dtype.type(0.5)``), and ``np.stack(hs[1:])`` of the states after the initial
one, differentiated."""

from typing import Optional

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def annotated_np_array(x: np.array, b: np.array = None):
    return np.tanh(x) if b is None else np.tanh(x + b)


def direction_checked(x: Tensor, direction: str = "forward"):
    if direction not in {"forward", "reverse", "bidirectional"}:
        raise RuntimeError(f"Unknown direction {direction!r}.")
    return x[::-1] if direction == "reverse" else x


def swapped(X: Tensor, layout: Optional[int] = None):
    if layout == 1:
        X = np.swapaxes(X, 0, 1)
    if layout != 1:
        X = X * 2.0
    return X


def asserted(x: Tensor, n: int):
    assert n == 3, f"Invalid # outputs: {n}"
    return x * n


def half_sigmoid(x: Tensor):
    half = x.dtype.type(0.5)
    return np.tanh(x * half) * half + half


def states(xs: Tensor, h0: Tensor, W: Tensor):
    hs = [h0]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] + hs[t] @ W))
    return np.stack(hs[1:], axis=1)


rng = np.random.default_rng(0)


def test_np_array_annotations_and_a_none_default():
    x = rng.standard_normal(3)
    f = script(annotated_np_array)
    assert_same(f(x), annotated_np_array(x))
    assert_same(f(x, x), annotated_np_array(x, x))


def test_membership_in_a_set_literal():
    x = np.arange(3.0)
    f = script(direction_checked)
    assert_same(f(x, "reverse"), direction_checked(x, "reverse"))
    with pytest.raises(RuntimeError, match="Unknown direction 'up'"):
        f(x, "up")


def test_an_optional_int_compared_with_an_int():
    x = np.arange(6.0).reshape(2, 3)
    f = script(swapped)
    for layout in (None, 0, 1):
        assert_same(f(x, layout), swapped(x, layout))


def test_an_assert_with_an_f_string_message():
    f = script(asserted)
    assert_same(f(np.ones(2), 3), asserted(np.ones(2), 3))
    with pytest.raises(AssertionError, match="Invalid # outputs: 4"):
        f(np.ones(2), 4)


def test_a_scalar_of_an_arrays_dtype():
    for dtype in (np.float32, np.float64):
        x = np.linspace(-2, 2, 5, dtype=dtype)
        got = script(half_sigmoid)(x)
        assert got.dtype == dtype
        assert_same(got, half_sigmoid(x))


def test_a_stack_of_the_states_after_the_first_is_differentiated():
    xs, h0, W = (rng.standard_normal((4, 2, 3)), rng.standard_normal((2, 3)),
                 rng.standard_normal((3, 3)) * 0.5)
    f = script(states)
    assert_same(f(xs, h0, W), states(xs, h0, W))
    check_vjp(f, (xs, h0, W))
    with pytest.raises(ValueError, match="need at least one array to stack"):
        states(xs[:0], h0, W)
    with pytest.raises(ValueError, match="need at least one array to stack"):
        f(xs[:0], h0, W)


def gate_tail(g: Tensor, c: Tensor):
    r = g.reshape((len(g), g.shape[1] // 4, 4) + g.shape[2:])  # Chainer's _extract_gates
    return np.tanh(r[:, :, 0]) + c * r[:, :, 1]


def run_gates(xs: Tensor, W: Tensor):
    c = np.zeros((xs.shape[1], W.shape[1] // 4), xs.dtype)
    for t in range(xs.shape[0]):
        c = gate_tail(xs[t] @ W, c)
    return c


def test_a_shape_joined_with_a_shape_tail_is_static_and_the_loop_native():
    xs, W = rng.standard_normal((40, 3, 8)), rng.standard_normal((8, 16)) * 0.3
    f = script(run_gates)
    assert_same(f(xs, W), run_gates(xs, W))
    check_vjp(f, (xs[:4], W))
    report = f.explain(xs, W)
    assert "runs natively" in report and "runs as Python" not in report, report


def unannotated_option(X, layout=None):
    if layout == 1:  # the ONNX reference GRU's: an optional array, None here
        X = np.swapaxes(X, 0, 1)
    return X * 2.0


def unannotated_option_value(X, layout=None):
    swap = layout == 1
    return X * 2.0 if swap else X


def test_an_unannotated_none_default_compared_with_a_number():
    x = np.ones((2, 3))
    assert_same(script(unannotated_option)(x), unannotated_option(x))
    assert_same(script(unannotated_option)(x, np.array(1)), unannotated_option(x, np.array(1)))
    with pytest.raises(ScriptError, match=r"annotate it, e.g. layout: Optional\[int\] = None"):
        script(unannotated_option_value)(x)


def gates_in_lists(Xs: Tensor, Wi: Tensor, Wh: Tensor):
    # Apache TVM's lstm_python: one product per gate, in lists built by comprehensions
    h = np.zeros((Xs.shape[1], Wh.shape[2]), Xs.dtype)
    c = h
    for t in range(Xs.shape[0]):
        xh = [np.matmul(Xs[t], Wi[g].T) for g in range(4)]
        hh = [np.matmul(h, Wh[g].T) for g in range(4)]
        s = [xh[g] + hh[g] for g in range(4)]
        c = 1 / (1 + np.exp(-s[1])) * c + 1 / (1 + np.exp(-s[0])) * np.tanh(s[2])
        h = 1 / (1 + np.exp(-s[3])) * np.tanh(c)
    return h


def test_a_time_loop_over_lists_of_gates_runs_natively():
    Xs, Wi, Wh = (rng.standard_normal((40, 3, 5)), rng.standard_normal((4, 6, 5)) * 0.3,
                  rng.standard_normal((4, 6, 6)) * 0.3)
    f = script(gates_in_lists)
    assert_same(f(Xs, Wi, Wh), gates_in_lists(Xs, Wi, Wh))
    check_vjp(f, (Xs[:3], Wi, Wh))
    report = f.explain(Xs, Wi, Wh)
    assert "runs natively" in report and "runs as Python" not in report, report


def number_against_an_option(X, n: Optional[int], layout=None):
    if n == layout:
        X = X * 2.0
    return X


def test_an_optional_number_against_an_unannotated_option_keeps_the_hint():
    with pytest.raises(ScriptError, match=r"annotate it, e.g. layout: Optional\[int\] = None"):
        script(number_against_an_option)(np.ones(2), 1)


def changed_after_the_slice(xs: Tensor, h0: Tensor):
    hs = [h0]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] + hs[t]))
    d = {"h": hs}
    tail = hs[1:]
    d["h"].append(h0 * 5.0)  # after the slice, through another name: not in the stack
    hs.append(h0 * 7.0)
    return np.stack(tail)


def test_a_list_changed_after_its_slice_is_stacked_as_the_slice_saw_it():
    xs, h0 = rng.standard_normal((20, 2)), rng.standard_normal(2)
    assert_same(script(changed_after_the_slice)(xs, h0), changed_after_the_slice(xs, h0))
