"""A loop's per-step saved values as one stacked array (``passes.autodiff.saved_stacks``): which
lists become stacks, which stay lists, and gradients equal finite differences either way."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.fastrnns import cells
from ir.types import ListType, TensorType
from script import Tensor, script, vjp
from script.runtime.autodiff import compile_gradient, run_vjp
from tests.gradcheck import check_vjp


def saved_types(f, args):
    grad = compile_gradient(script(f), args).gradient
    return [v.type for v in grad.forward.outputs[grad.num_outputs:]]


def lstm_args(T, B=3, H=4, I=5, dtype=np.float64, seed=0):  # noqa: E741
    rng = np.random.default_rng(seed)

    def n(*shape):
        return (rng.standard_normal(shape) * 0.5).astype(dtype)

    return (n(T, B, I), n(B, H), n(B, H), n(4 * H, I), n(4 * H, H), n(4 * H), n(4 * H))


@pytest.mark.parametrize("T", [9, 12])
def test_an_lstm_layer_saves_stacks_and_its_gradients_match_finite_differences(T):
    args = lstm_args(T)
    types = saved_types(cells.lstm_layer, args)
    assert sum(isinstance(t, TensorType) and (t.dtype, t.shape) == ("float64", (T, 3, 4))
               for t in types) == 7  # (the gates, tanh(c), and the carried states hx, cx)
    assert not any(isinstance(t, ListType) for t in types)
    check_vjp(cells.lstm_layer, args)


def test_large_carried_states_stay_lists():
    """A state over ``CARRIED_MAX_BYTES`` a step: a copy into a stack costs more than the
    list's view of it."""
    from passes.autodiff.saved_stacks import CARRIED_MAX_BYTES
    H = CARRIED_MAX_BYTES // (3 * 8) + 1  # (3, H) float64 states
    args = lstm_args(9, H=H)
    types = saved_types(cells.lstm_layer, args)
    assert sum(isinstance(t, ListType) for t in types) == 2
    assert sum(isinstance(t, TensorType) and t.shape == (9, 3, H) for t in types) == 5


def test_the_weight_gradient_reads_the_saved_stack_of_states():
    """``dW_hh = sum_t dgates_t^T h_{t-1}`` is one product after the reverse loop: its h side
    is the forward's stack of the carried states, not a copy the reverse loop makes of it."""
    grad = compile_gradient(script(cells.lstm_layer), lstm_args(9)).gradient
    (loop,) = [n for n in grad.backward.block.nodes if n.kind == "prim::Loop"]
    writes = [n for n in loop.blocks[0].nodes if n.kind == "tensor::write_slot"]
    assert len(writes) == 1  # (the gates' gradient, which both weight products read)
    saved_inputs = grad.backward.inputs[grad.num_outputs:]
    stacked = {v for v in saved_inputs if isinstance(v.type, TensorType)}
    after = [n for n in grad.backward.block.nodes if n.kind == "tensor::reshape"]
    assert any(n.inputs[0] in stacked for n in after)


def carried_written_in_place(x: Tensor, w: Tensor) -> Tensor:
    h = x[0] * 1.0
    for t in range(x.shape[0]):
        y = np.tanh(h * w)  # saves h, the carried state, before the writes below
        h[1] = y[0] * h[2]
        h = h + x[t] * y
    return h.sum()


def carried_updated_in_place(x: Tensor, w: Tensor) -> Tensor:
    h = x[0] * 1.0
    for t in range(x.shape[0]):
        y = np.tanh(h * w)
        h *= y
        h[0] += x[t, 0]
    return h.sum()


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("fn", [carried_written_in_place, carried_updated_in_place])
def test_a_saved_carried_state_written_in_place_keeps_its_value_of_the_step(monkeypatch, fn,
                                                                             native):
    """The step's copy of the state into its slot reads it before the writes: the stack holds
    each step's state as the step began."""
    monkeypatch.setenv("RNNSCRIPT_NATIVE_LOOPS", native)
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((40, 4)) * 0.5, rng.standard_normal(4) * 0.5
    types = saved_types(fn, (x, w))
    assert any(isinstance(t, TensorType) and t.shape == (40, 4) for t in types)
    out, _ = vjp(script(fn), x, w)
    np.testing.assert_allclose(out, fn(x.copy(), w), rtol=1e-12)
    check_vjp(fn, (x, w))


@pytest.mark.parametrize("native", ["1", "0"])
def test_stacked_saves_give_the_saved_lists_gradients_in_float32(monkeypatch, native):
    """The optimized pair (stacks; native loops, or Python ones) against the unoptimized pair
    (lists, Python loops, each rule's ops as written)."""
    monkeypatch.setenv("RNNSCRIPT_NATIVE_LOOPS", native)
    args = lstm_args(11, B=5, H=8, I=6, dtype=np.float32, seed=3)
    out, back = vjp(script(cells.lstm_layer), *args)
    ct = tuple(np.full_like(y, 0.5) for y in out)
    want_out, want_back = run_vjp(compile_gradient(script(cells.lstm_layer), args,
                                                   optimize=False), args)
    for a, b in zip((*out, *back(ct)), (*want_out, *want_back(ct))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def growing(x: Tensor, w: Tensor) -> Tensor:
    acc = x[:1] * 1.0
    s = np.zeros(())
    for t in range(x.shape[0]):
        acc = np.concatenate((acc, np.tanh(x[t:t + 1] * w)))
        s = s + (acc * acc).sum()  # the backward reads each step's acc, one row longer
    return s


def nested(x: Tensor, w: Tensor, n: int) -> Tensor:
    h = x[0]
    t = 0
    while t < n:  # the inner loop's lists are made in the outer loop's body
        for j in range(x.shape[0]):
            h = np.tanh(h * w + x[j] * 0.1)
        t += 1
    return h


def counted_by_argument(x: Tensor, w: Tensor, n: int) -> Tensor:
    h = x[0]
    t = 0
    while t < n:
        h = np.tanh(h * w + x[t])
        t += 1
    return h


def no_trips(x: Tensor, w: Tensor) -> Tensor:
    h = w * 1.0
    for t in range(x.shape[0]):
        h = np.tanh(h * w + x[t])
    return h


W = np.array([0.3, -0.7, 0.2])


@pytest.mark.parametrize("fn, args", [
    (growing, (np.linspace(-1, 1, 24).reshape(12, 2), W[:2])),
    (nested, (np.linspace(-1, 1, 120).reshape(40, 3), W, 2)),
    (counted_by_argument, (np.linspace(-1, 1, 36).reshape(12, 3), W, 10)),
], ids=["items of growing shape", "inner loop", "while loop"])
def test_lists_that_cannot_be_stacks_stay_lists_and_their_gradients_hold(fn, args):
    assert any(isinstance(t, ListType) for t in saved_types(fn, args))
    check_vjp(fn, args)


def test_a_loop_of_no_trips_saves_nothing_and_differentiates():
    x = np.zeros((0, 3))
    out, back = vjp(script(no_trips), x, W)
    np.testing.assert_allclose(out, no_trips(x, W))
    np.testing.assert_allclose(back(np.ones(3))[1], np.ones(3))


def argmax_in_one_branch(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
    for t in range(x.shape[0]):
        if np.sum(x[t]) > 0.0:
            idx = np.argmax(h, axis=1)  # saved for h[rows, idx]'s backward, made in one branch
            h = np.tanh(h * w + x[t]) + h[np.arange(3), idx][:, None]
        else:
            h = h * 0.5 + x[t]
    return h


def test_a_value_one_branch_of_an_if_makes_stays_a_list():
    """The other branch gives a placeholder (None) for it: an int stack could not hold that."""
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((30, 3, 4)), rng.standard_normal((3, 4)), rng.standard_normal(4))
    types = saved_types(argmax_in_one_branch, args)
    assert not any(isinstance(t, TensorType) and t.dtype == "int64" and t.shape == (30, 3)
                   for t in types)
    check_vjp(argmax_in_one_branch, args)
