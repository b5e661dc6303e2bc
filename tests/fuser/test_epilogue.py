"""A product and the elementwise fusion group right after it as one job (``fuser.cpu.epilogue``):
each task of the product computes the group over its columns. The values must be the two calls'
bit for bit (the same product kernel, the same fusion kernel, split by columns), at every
thread count, for every layout the group may have (one slab, one flat row, broadcasts, scalars,
several outputs, columns that are not a whole number of tasks); anything the job cannot take
goes back to the two calls."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from fuser.cpu import epilogue, pool
from script import Tensor, script


def rnn_cell(x: Tensor, h: Tensor, Wx: Tensor, Wh: Tensor, b: Tensor) -> Tensor:
    return np.tanh(np.dot(h, Wh) + np.dot(x, Wx) + b)


def gated(x: Tensor, W: Tensor, c: Tensor) -> Tensor:
    return 1 / (1 + np.exp(-(x @ W))) * c  # every input (M, N): one flat row


def two_outputs(x: Tensor, W: Tensor, b: Tensor, scale: float) -> tuple[Tensor, Tensor]:
    z = x @ W + b
    return np.tanh(z) * scale, np.maximum(z, 0) * z


def by_row(x: Tensor, W: Tensor, r: Tensor) -> Tensor:
    return np.exp(x @ W) * r  # r (M, 1): broadcast along the columns


def lstm_cell(x: Tensor, h: Tensor, c: Tensor, Wx: Tensor, Wh: Tensor, b: Tensor
              ) -> tuple[Tensor, Tensor]:
    H = h.shape[1]
    A = np.dot(x, Wx) + np.dot(h, Wh) + b  # read in four column blocks: the gates
    f, g, i, o = A[:, :H], A[:, H:2 * H], A[:, 2 * H:3 * H], A[:, 3 * H:]
    c_next = c / (1 + np.exp(-f)) + np.tanh(g) / (1 + np.exp(-i))
    return np.tanh(c_next) / (1 + np.exp(-o)), c_next


def with_mask(x: Tensor, W: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    z = x @ W + b
    return np.tanh(z), z > 0  # outputs of two item sizes


def scaled(x: Tensor, W: Tensor, s: Tensor) -> Tensor:
    return np.tanh(x @ W) * s  # s 0-d: one flat row, a leaf of column stride 0


def _rand(rng, *shape):
    return np.asarray(rng.standard_normal(shape) * 0.1, np.float32)


CASES = {
    "rnn_cell": (rnn_cell, [(64, 128), (64, 256), (128, 256), (256, 256), (256,)]),
    "rnn_cell_odd": (rnn_cell, [(37, 96), (37, 200), (96, 200), (200, 200), (200,)]),
    "gated": (gated, [(64, 512), (512, 256), (64, 256)]),
    "two_outputs": (two_outputs, [(48, 300), (300, 264), (264,), 0.5]),
    "by_row": (by_row, [(64, 384), (384, 256), (64, 1)]),
    "small": (gated, [(32, 64), (64, 256), (32, 256)]),  # one task on one thread
    "lstm_cell": (lstm_cell, [(64, 128), (64, 256), (64, 256), (128, 1024), (256, 1024),
                              (1024,)]),
    "lstm_cell_b1": (lstm_cell, [(1, 128), (1, 256), (1, 256), (128, 1024), (256, 1024),
                                 (1024,)]),  # one row: the product's row stride is moot
    "with_mask": (with_mask, [(64, 512), (512, 256), (256,)]),
    "scaled": (scaled, [(64, 512), (512, 256), ()]),
    "lstm_cell_odd": (lstm_cell, [(33, 70), (33, 100), (33, 100), (70, 400), (100, 400),
                                  (400,)]),
}


def _args(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(s if isinstance(s, float) else _rand(rng, *s) for s in shapes)


def _fused(f, args):
    found = [v for k, v in f.specialization(*args).fn.__globals__.items()
             if k.startswith("_fused")]
    return found


class _Counting:
    """A kernel whose calls are counted (both ways ``Fused`` calls it)."""

    def __init__(self, kernel):
        self.kernel, self.calls = kernel, []

    def __call__(self, *inputs):
        self.calls.append(inputs)
        return self.kernel(*inputs)

    def into(self, outs, *inputs):
        self.calls.append(inputs)
        return self.kernel.into(outs, *inputs)


@pytest.fixture
def jobs(monkeypatch):
    """The calls the epilogue job computed (``_Epilogue.run`` returning a result)."""
    done = []
    run = epilogue._Epilogue.run

    def counting(self, args):
        result = run(self, args)
        if result is not None:
            done.append(self)
        return result

    monkeypatch.setattr(epilogue._Epilogue, "run", counting)
    return done


@pytest.mark.parametrize("checks", ["0", "1"])
@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("case", sorted(CASES))
def test_one_job_equals_the_two_calls(monkeypatch, jobs, case, count, checks):
    monkeypatch.setattr(epilogue, "threads", lambda: count)
    monkeypatch.setenv("RNNSCRIPT_VERIFY", checks)  # code that checks each value it computes
    fn, shapes = CASES[case]
    args = _args(shapes)
    f = script(fn)
    first = f(*args)  # the product and the group as two calls
    (fused,) = _fused(f, args)
    assert fused.product_too == (checks == "1")
    assert fused.fast is None, "a function called once makes no job"
    later = [f(*args) for _ in range(3)]
    assert fused.fast is not None and len(jobs) == 2, "from the third call on, one job"
    assert fused.fast.parts == (4 if case.startswith("lstm") else 1)
    first_all = first if isinstance(first, tuple) else (first,)
    for got in later:
        for x, y in zip(got if isinstance(got, tuple) else (got,), first_all):
            np.testing.assert_array_equal(x, y)
    want = fn(*args)
    for x, y in zip(first_all, want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(x, y, rtol=2e-5, atol=2e-6)


def test_the_job_runs_on_more_than_one_thread(monkeypatch):
    if pool.cpus() < 2:
        pytest.skip("one CPU")
    from fuser.cpu import blas
    shared = []
    share = blas.share

    def counting(fn, arg, count, kind=None):
        blas._lag["skip"] = 0  # a lag (a busy machine) sends no job elsewhere here
        ran = share(fn, arg, count, kind)
        if kind is not None and isinstance(kind[0], tuple) and kind[0][0] == "epilogue":
            shared.append(ran)
        return ran

    monkeypatch.setattr(blas, "share", counting)
    monkeypatch.setattr(epilogue, "threads", lambda: 2)
    monkeypatch.setitem(blas._lag, "skip", 0)  # no backoff left over from earlier lags
    monkeypatch.setitem(blas._lag, "backoff", 0)
    fn, shapes = CASES["rnn_cell"]
    args = _args(shapes)
    f = script(fn)
    want = [f(*args) for _ in range(2)][0]
    for _ in range(5):
        np.testing.assert_array_equal(f(*args), want)
    assert shared, "the job was offered to OpenBLAS's threads"
    g = blas.gemm()
    if g is not None and g.started and ctypes.c_int.from_address(g.started).value >= 2:
        assert any(shared), "OpenBLAS's threads took the job"


def test_other_layouts_and_rejected_arguments_take_the_two_calls(monkeypatch, jobs):
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "0")
    fn, shapes = CASES["rnn_cell"]
    args = _args(shapes)
    f = script(fn)
    for _ in range(3):
        f(*args)
    (fused,) = _fused(f, args)
    x, h, Wx, Wh, b = args
    want = fused(h, Wh, x, Wx, b)
    assert len(jobs) == 2
    fused.kernel = counting = _Counting(fused.kernel)  # the group computed on its own
    group_calls = counting.calls
    cases = [
        ((h, np.asfortranarray(Wh), x, Wx, b), False, "another layout of an operand"),
        ((h, Wh, x, Wx, b.astype(np.float64)), True, "a group input of another dtype"),
        ((h, Wh, x, Wx, b.tolist()), True, "a group input that is not an array"),
        ((h, Wh, x, Wx, np.repeat(b, 2)[::2]), True, "a group input of another stride"),
    ]
    for operands, job, what in cases:
        before, calls = len(jobs), len(group_calls)
        got = fused(*operands)
        assert len(jobs) == before + job and len(group_calls) == calls + 1, what
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=what)
        np.testing.assert_array_equal(fused(h, Wh, x, Wx, b), want)  # the job's layout again
        assert len(jobs) == before + job + 1 and len(group_calls) == calls + 1, what


@pytest.mark.parametrize("view", ["every other column", "reversed rows", "reversed columns"])
def test_strided_group_inputs(monkeypatch, jobs, view):
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "0")
    monkeypatch.setattr(epilogue, "threads", lambda: 2)
    x, W, big = _args([(64, 512), (512, 256), (64, 512)])
    c = {"every other column": big[:, ::2], "reversed rows": big[::-1, :256],
         "reversed columns": big[:, 255::-1]}[view]
    f = script(gated)
    first = f(x, W, c)
    later = [f(x, W, c) for _ in range(3)]
    assert len(jobs) == 2
    for got in later:
        np.testing.assert_array_equal(got, first)
    np.testing.assert_allclose(first, gated(x, W, c), rtol=2e-5, atol=2e-6)


def test_a_layout_without_a_job_is_not_planned_again(monkeypatch):
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "0")
    fn, shapes = CASES["rnn_cell"]
    args = _args(shapes)
    f = script(fn)
    f(*args)
    (fused,) = _fused(f, args)
    x, h, Wx, Wh, b = args
    asked = []
    of = epilogue._Epilogue.of
    monkeypatch.setattr(epilogue._Epilogue, "of",
                        staticmethod(lambda *a: asked.append(a) or of(*a)))
    want = fused(h, Wh, x, Wx, b)
    job, Wf = fused.fast, np.asfortranarray(Wh)
    for _ in range(4):  # another layout, and a list the kernel does not take as is: no job
        np.testing.assert_allclose(fused(h, Wf, x, Wx, b.tolist()), want, rtol=1e-6, atol=1e-6)
    assert len(asked) == 2 and fused.fast is job  # the job's layout, the other once


def test_a_rejecting_task_guard_recomputes_the_group(monkeypatch, jobs):
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "0")
    fn, shapes = CASES["gated"]
    args = _args(shapes)
    f = script(fn)
    want = [f(*args) for _ in range(3)][0]
    (fused,) = _fused(f, args)
    job = fused.fast
    # the tasks' guards expect another byte stride of the group's last input: each rejects it
    for guards in (entry[2] for entry in job.blocks.values()):
        for g in guards:
            g[len(job.header) - 1] += 1
    fused.kernel = counting = _Counting(fused.kernel)
    group_calls = counting.calls
    before = len(jobs)
    np.testing.assert_array_equal(fused(*args), want)
    assert len(jobs) == before + 1 and len(group_calls) == 1, "the job ran, then the group"


def two_readers(h: Tensor, W: Tensor, W2: Tensor) -> Tensor:
    H = h.shape[1]
    p = h @ W  # its first half read by the group after it, its second by a later one
    r = 1 / (1 + np.exp(-p[:, :H]))
    q = (r * h) @ W2
    return np.tanh(q + p[:, H:])


def test_a_product_another_node_reads_too_is_returned_with_the_outputs(monkeypatch, jobs):
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "0")
    args = _args([(64, 256), (256, 512), (256, 256)])
    f = script(two_readers)
    first = f(*args)
    found = _fused(f, args)
    assert [x.product_too for x in found] == [True, False], f.code_for(*args)
    for _ in range(3):
        np.testing.assert_array_equal(f(*args), first)
    assert found[0].fast is not None and found[0].fast.parts == 2
    assert len(jobs) == 4
    np.testing.assert_allclose(first, two_readers(*args), rtol=2e-5, atol=2e-6)


def test_a_returned_product_is_the_jobs_own(monkeypatch, jobs):
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "0")

    def returned(x: Tensor, W: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
        z = x @ W
        return np.tanh(z + b), z

    args = _args([(64, 256), (256, 256), (256,)])
    f = script(returned)
    got = [f(*args) for _ in range(4)]
    (fused,) = _fused(f, args)
    assert fused.product_too and len(jobs) == 2
    for k in range(2):  # the caller holds what it was given: no later call writes there
        assert not np.shares_memory(got[-1][k], got[-2][k])
    for later in got[1:]:
        for x, y in zip(later, got[0]):
            np.testing.assert_array_equal(x, y)
    for x, y in zip(got[0], returned(*args)):
        np.testing.assert_allclose(x, y, rtol=2e-5, atol=2e-6)


def test_calls_from_several_python_threads_each_get_a_product_of_their_own(monkeypatch, jobs):
    """A job whose product is its own (not returned) reuses it call after call
    (``_Epilogue.state``); calls running at once from several Python threads each take one
    nobody else is writing, so every result is its own arguments'."""
    import threading

    monkeypatch.setenv("RNNSCRIPT_VERIFY", "0")
    fn, shapes = CASES["rnn_cell"]
    f = script(fn)
    inputs = [_args(shapes, seed) for seed in range(6)]
    want = [fn(*a) for a in inputs]
    for a in inputs[:3]:
        f(*a)  # the job is made
    (fused,) = _fused(f, inputs[0])
    assert fused.fast is not None and not fused.product_too
    wrong, start = [], threading.Barrier(len(inputs))

    def calls(k: int) -> None:
        start.wait()
        for _ in range(60):
            got = f(*inputs[k])
            if not np.allclose(got, want[k], rtol=2e-5, atol=2e-6):
                wrong.append(k)

    threads = [threading.Thread(target=calls, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong
    assert len(jobs) > 100


def test_a_new_thread_count_makes_a_new_state(monkeypatch, jobs):
    """The reused block is the one of the thread count a call runs on: another count (a
    threadpoolctl limit) makes its own, with results the same."""
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "0")
    fn, shapes = CASES["gated"]
    args = _args(shapes)
    f = script(fn)
    monkeypatch.setattr(epilogue, "threads", lambda: 2)
    want = [f(*args) for _ in range(3)][0]
    (fused,) = _fused(f, args)
    assert [s[0] for s in fused.fast.free] == [2]
    monkeypatch.setattr(epilogue, "threads", lambda: 1)
    np.testing.assert_array_equal(f(*args), want)
    assert [s[0] for s in fused.fast.free] == [1]
    np.testing.assert_allclose(want, fn(*args), rtol=2e-5, atol=2e-6)


def test_a_rejected_call_keeps_its_product_while_the_group_reads_it(monkeypatch, jobs):
    """A call whose task guard rejects the group's arguments (a strided bias of the compiled
    shape) computes the group from the job's product: the product's state goes back to the
    free list only after that, so no call running at once can write it meanwhile."""
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "0")
    fn, shapes = CASES["rnn_cell"]
    f = script(fn)
    args = _args(shapes)
    for _ in range(3):
        f(*args)  # the job is made
    (fused,) = _fused(f, args)
    job = fused.fast
    assert job is not None
    free_then, calls = [], []
    kernel = fused.kernel

    def group(*inputs):
        calls.append(inputs)
        free_then.extend(s[1] for s in job.free)  # the products others may take now
        assert not any(p is inputs[0] or np.shares_memory(p, inputs[0]) for p in free_then)
        return kernel(*inputs)

    monkeypatch.setattr(fused, "kernel", group)
    b = np.repeat(args[4], 2)[::2]  # the bias strided: the tasks' guards reject it
    strided = (*args[:4], b)
    np.testing.assert_allclose(f(*strided), fn(*strided), rtol=2e-5, atol=2e-6)
    assert len(calls) == 1, "the job ran, its guards rejected the bias, the group ran alone"
