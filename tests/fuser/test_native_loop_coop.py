"""Row ranges computing a step's product together (``fuser.cpu.loop.coop``): each range its
columns of every row, between barriers. Results equal the Python loop's; a barrier whose partner
never comes gives up and the loop runs as Python; the chooser keeps to the faster way."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.fastrnns import cells
from fuser.cpu import blas
from fuser.cpu.loop import coop, ranges
from script import script
from tests.fuser.test_native_loop import assert_same, gru_args, lstm_args, vjp_result
from tests.helpers import gradient_loops, native_loops


@pytest.fixture
def shared_runs(monkeypatch):
    """Forces row ranges that share their products (``RNNSCRIPT_LOOP_COOP=1``, two ranges);
    counts the loop runs whose ranges did."""
    monkeypatch.setenv("RNNSCRIPT_LOOP_COOP", "1")
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", "2")
    # no backoff left by another test's lagging job (a busy test worker beside this one)
    monkeypatch.setattr(blas, "_lag", {"skip": 0, "backoff": 0, "streak": 0})
    monkeypatch.setattr(blas, "_fastest", {})
    runs = []
    run = ranges._run

    def counted(*args, **kwargs):
        status = run(*args, **kwargs)
        if kwargs.get("shared") and status is not None:
            runs.append(status)
        return status

    monkeypatch.setattr(ranges, "_run", counted)
    return runs


def _python(monkeypatch, fn, *args):
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        return fn(*args)


needs_threads = pytest.mark.skipif(not blas.can_share(2),
                                   reason="numpy's OpenBLAS has no second thread here")


@needs_threads
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [(12, 17, 5, 24), (30, 8, 16, 32), (9, 9, 4, 70)],
                         ids=lambda s: "x".join(map(str, s)))
def test_an_lstm_layer_whose_ranges_share_the_step_product_equals_python(
        monkeypatch, shared_runs, dtype, size):
    args = lstm_args(*size, dtype, seed=5)
    f = script(cells.lstm_layer)
    got = f(*args)
    (loop,) = native_loops(f, *args)
    assert loop.calls == 1 and shared_runs == [0]
    (variant,) = [v for v in loop.variants.values() if v is not None]
    assert list(variant.shared) == [2]
    assert_same(got, _python(monkeypatch, script(cells.lstm_layer), *args), dtype)


@needs_threads
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_and_gru_gradients_with_shared_products_equal_python(monkeypatch, shared_runs,
                                                                   dtype):
    for layer, make in ((cells.lstm_layer, lstm_args), (cells.gru_layer, gru_args)):
        args = make(15, 11, 6, 40, dtype, seed=6)
        f = script(layer)
        out, grads = vjp_result(f, args)
        forward = gradient_loops(f)[0]
        assert forward.calls == 1
        want_out, want_grads = _python(monkeypatch, vjp_result, script(layer), args)
        assert_same(tuple(out), tuple(want_out), dtype)
        for g, w in zip(grads, want_grads):
            tol = 1e-4 if dtype == np.float32 else 1e-9  # (weight gradients: sums over T * B)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    assert shared_runs and set(shared_runs) == {0}


@needs_threads
def test_a_barrier_whose_partner_never_comes_gives_up_and_the_loop_runs_as_python(
        monkeypatch, shared_runs):
    """The ranges handed to one thread, one after the other: the first waits at its first
    barrier for the second, gives up (``coop.MAX_SPINS``) and sets the abort flag, the second
    leaves at its first barrier, and the Python loop computes the call."""
    def serial(fn, arg, count, kind=None):
        ranges._JOB(fn)(arg)
        return True

    monkeypatch.setattr(blas, "share", serial)
    args = lstm_args(6, 10, 3, 24, np.float32, seed=7)
    f = script(cells.lstm_layer)
    got = f(*args)
    (loop,) = native_loops(f, *args)
    assert loop.calls == 0 and shared_runs == [1]  # (one shared run: it failed)
    assert_same(got, cells.lstm_layer(*args), np.float32)


def test_the_chooser_keeps_to_the_faster_way_and_tries_the_other_now_and_then(monkeypatch):
    monkeypatch.delenv("RNNSCRIPT_LOOP_COOP", raising=False)
    chooser = coop.Chooser()
    assert chooser.pick() is True
    chooser.record(True, 0.377)  # a first run while code compiles beside it
    assert chooser.pick() is False
    chooser.record(False, 0.080)
    picks = []
    for _ in range(2 * coop.EXPLORE_EVERY):  # calls 3 to 34
        shared = chooser.pick()
        picks.append(shared)
        chooser.record(shared, 0.070 if shared else 0.080)
    # call 16 tries sharing again (found faster: kept), call 32 the ranges alone
    explore = coop.EXPLORE_EVERY
    assert picks == [False] * (explore - 3) + [True] * explore + [False, True, True]
    for _ in range(coop.RECENT):  # a neighbour takes a core: shared runs slow down
        chooser.record(True, 0.150)
    later = [chooser.pick() for _ in range(coop.EXPLORE_EVERY - 1)]
    assert later.count(False) >= coop.EXPLORE_EVERY - 2


def test_small_weights_are_not_shared_unless_asked(monkeypatch):
    """A weight that fits in a core's cache (``COOP_MIN_WEIGHT_BYTES``) is multiplied by each
    range for its own rows."""
    monkeypatch.delenv("RNNSCRIPT_LOOP_COOP", raising=False)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", "2")
    args = lstm_args(4, 16, 8, 32, np.float32, seed=8)
    f = script(cells.lstm_layer)
    f(*args)
    (loop,) = native_loops(f, *args)
    (variant,) = [v for v in loop.variants.values() if v is not None]
    assert variant.splits and not variant.shared


def test_the_chooser_stops_sharing_after_runs_that_did_not_finish(monkeypatch):
    monkeypatch.delenv("RNNSCRIPT_LOOP_COOP", raising=False)
    chooser = coop.Chooser()
    chooser.record(True, 0.070)
    chooser.record(False, 0.080)
    assert chooser.pick() is True
    chooser.failed()  # a barrier gave up: the ranges alone until sharing is tried again
    assert [chooser.pick() for _ in range(3)] == [False] * 3
    for _ in range(coop.MAX_FAILURES):
        chooser.failed()
    assert not any(chooser.pick() for _ in range(3 * coop.EXPLORE_EVERY))
    monkeypatch.setenv("RNNSCRIPT_LOOP_COOP", "0")
    assert coop.Chooser().pick() is False


@needs_threads
def test_a_function_that_shared_stops_when_sharing_is_turned_off(monkeypatch, shared_runs):
    args = lstm_args(10, 16, 4, 24, np.float32, seed=9)
    f = script(cells.lstm_layer)
    f(*args)
    assert shared_runs == [0]
    monkeypatch.setenv("RNNSCRIPT_LOOP_COOP", "0")
    got = f(*args)
    assert shared_runs == [0]
    assert_same(got, cells.lstm_layer(*args), np.float32)
