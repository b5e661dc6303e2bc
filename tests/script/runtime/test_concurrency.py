"""Many threads calling the same scripted functions with mixed signatures get correct results, and
each specialization is compiled exactly once."""

from __future__ import annotations

import threading
from collections import Counter
from typing import List, Tuple

import numpy as np

from script import Tensor, ops, script
from tests.helpers import assert_same_at

THREADS = 16
CALLS_PER_THREAD = 40


def cell(gates: Tensor, c: Tensor) -> Tuple[Tensor, Tensor]:
    i, f, g, o = ops.chunk(gates, 4, 1)
    cy = ops.sigmoid(f) * c + ops.sigmoid(i) * np.tanh(g)
    return ops.sigmoid(o) * np.tanh(cy), cy


def unrolled(xs: Tensor, h: Tensor, steps: int) -> Tensor:
    outs: List[Tensor] = []
    for t in range(steps):
        h = np.tanh(xs[t % xs.shape[0]] + h * 0.5)
        outs.append(h)
    return ops.stack(outs).sum(axis=0) if steps > 0 else h


def _cell_args(rng, batch, hidden, dtype):
    return (rng.standard_normal((batch, 4 * hidden)).astype(dtype),
            rng.standard_normal((batch, hidden)).astype(dtype))


def _signatures(rng):
    """(function, args) pairs covering several dtypes, shapes and scalar arguments."""
    calls = []
    for dtype in (np.float32, np.float64):
        for batch, hidden in ((2, 3), (5, 4), (1, 7)):
            calls.append((cell, _cell_args(rng, batch, hidden, dtype)))
        for steps in (0, 5):  # not an axis (3, 4): a count equal to one is compiled in
            calls.append((unrolled, (rng.standard_normal((4, 3)).astype(dtype),
                                     rng.standard_normal(3).astype(dtype), steps)))
    return calls


def _counting(f):
    """Count how often ``f`` compiles a specialization, per signature key."""
    counts: Counter = Counter()
    compile_one = f._compile

    def counted(args):
        from script.frontend.signature import key_of
        counts[tuple(map(key_of, args))] += 1
        return compile_one(args)

    f._compile = counted
    return counts


def test_threads_with_mixed_signatures_get_correct_results_and_compile_once():
    rng = np.random.default_rng(0)
    scripted = {cell: script(cell), unrolled: script(unrolled)}
    counts = {fn: _counting(f) for fn, f in scripted.items()}
    calls = _signatures(rng)
    expected = [fn(*args) for fn, args in calls]
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        order = np.random.default_rng(k).permutation(CALLS_PER_THREAD) % len(calls)
        start.wait()  # every thread makes its first (compiling) call at once
        try:
            for j in order:
                fn, args = calls[j]
                assert_same_at(scripted[fn](*args), expected[j])
        except BaseException as e:  # noqa: BLE001 -- reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    for fn, f in scripted.items():
        used = {tuple(a.shape if hasattr(a, "shape") else type(a) for a in args) +
                tuple(str(getattr(a, "dtype", "")) for a in args)
                for g, args in calls if g is fn}
        assert f.compiled_signatures == len(used)
        assert sum(counts[fn].values()) == len(used), "a specialization compiled twice"
        assert set(counts[fn].values()) == {1}


def test_gradient_and_forward_calls_from_threads():
    from script import vjp
    f = script(cell)
    rng = np.random.default_rng(1)
    args = _cell_args(rng, 3, 4, np.float64)
    want_out = cell(*args)
    _, backward = vjp(f, *args)
    want_grads = backward(tuple(np.ones_like(o) for o in want_out))
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(10):
                assert_same_at(f(*args), want_out)
                out, bw = vjp(f, *args)
                assert_same_at(bw(tuple(np.ones_like(o) for o in out)), want_grads)
        except BaseException as e:  # noqa: BLE001 -- reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
