"""A native loop's kernel writing a value straight into the slot its ``write_slot`` stores it in
(``fuser.cpu.loop.slots``): which writes qualify, and every result (forward, gradients) equals
the Python loop's, with row ranges and without."""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

from benchmarks.fastrnns import cells
from fuser.cpu.loop import slots
from script import Tensor, script
from tests.fuser.test_native_loop import assert_same, lstm_args, vjp_result
from tests.helpers import gradient_loops, native_loops


def into_names(loop):
    """The values each variant of ``loop`` writes into their slots."""
    return [sorted(str(v.name) for v in slots.into(loop.prog, variant.layouts))
            for variant in loop.variants.values() if variant is not None]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [(20, 3, 4, 6), (13, 1, 5, 3), (30, 64, 16, 32)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("threads", ["1", "2"])
def test_an_lstms_saved_gates_and_gate_gradients_go_straight_to_their_slots(
        monkeypatch, dtype, size, threads):
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", threads)
    args = lstm_args(*size, dtype, seed=4)
    f = script(cells.lstm_layer)
    out, grads = vjp_result(f, args)
    forward, backward = gradient_loops(f)
    assert forward.calls == backward.calls == 1
    assert len(forward.prog.into_slots) == 5  # the gates and tanh(c) the backward reads
    assert len(backward.prog.into_slots) == 1  # the gates' gradient, slot 99 - k
    assert [len(names) for names in into_names(forward)] == [5]
    # their step buffers are placeholders: no array is made (or kept) for them
    (variant,) = [v for v in forward.variants.values() if v is not None]
    assert len(variant.into) == 5
    at = 0
    for k, (_, _, sequenced) in enumerate(variant.buffers):
        sites = forward.sites[at:at + (1 if sequenced else 2)]
        assert all(not site.kept for site in sites) == (k in variant.into)
        at += len(sites)
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want_out, want_grads = vjp_result(script(cells.lstm_layer), args)
    assert_same(tuple(out), tuple(want_out), dtype)
    for g, w in zip(grads, want_grads):
        tol = 1e-4 if dtype == np.float32 else 1e-9  # (weight gradients: sums over T * B)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def stacked(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
    outs: List[Tensor] = []
    for t in range(x.shape[0]):
        h = np.tanh(h @ w + x[t])
        outs.append(np.exp(h) * 2.0)  # made, not carried: written into its slot
    return np.stack(outs)


def stacked_states(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
    outs: List[Tensor] = []
    for t in range(x.shape[0]):
        h = np.tanh(h @ w + x[t])
        outs.append(h)  # carried into the next step too: copied, as before
    return np.stack(outs)


@pytest.mark.parametrize("fn, expected", [(stacked, 1), (stacked_states, 0)],
                         ids=["made", "carried"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_stacked_value_goes_to_its_slot_only_when_the_step_alone_keeps_it(fn, expected,
                                                                          dtype):
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((16, 5, 7)).astype(dtype),
            rng.standard_normal((5, 7)).astype(dtype),
            (rng.standard_normal((7, 7)) * 0.3).astype(dtype))
    f = script(fn)
    assert_same(f(*args), fn(*args), dtype)
    (loop,) = native_loops(f, *args)
    assert loop.calls == 1 and len(loop.prog.into_slots) == expected

