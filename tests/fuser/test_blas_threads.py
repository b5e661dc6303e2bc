"""Native jobs on numpy's OpenBLAS threads (``fuser.cpu.blas.share``): products outside loops and
the row ranges of native loops run there, so a function called between numpy's own products
shares the thread numpy's BLAS left spinning instead of adding a thread of its own."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from fuser.cpu import blas, products, stepgemm
from fuser.cpu.kernel import data_address
from tests.helpers import ROOT

found = blas.gemm()
pytestmark = pytest.mark.skipif(
    found is None or not found.pthread or os.cpu_count() < 2 or (blas.get_threads() or 1) < 2,
    reason="needs numpy's OpenBLAS with its thread server on two threads")


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch):
    monkeypatch.setattr(blas, "_lag", {"skip": 0, "backoff": 0, "streak": 0})
    monkeypatch.setattr(blas, "_fastest", {})


def _product(seed, m=40, k=200, n=300, dtype=np.float32):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def test_a_shared_job_runs_on_two_threads():
    """The products job counts the threads that joined it: an OpenBLAS thread joined the
    caller, and the two computed the product together."""
    a, b, want = _product(0, n=512)
    out = np.empty(want.shape, np.float32)
    m, k = a.shape
    n = b.shape[1]
    task_cols = 64
    args = np.array([m, n, k, data_address(a), k, 1, data_address(b), n, 1, data_address(out), n,
                     k, 0, 0, task_cols, 2, 0, 0], np.int64)
    assert blas.share(stepgemm.job_address(False), data_address(args), 2)
    assert args[16] == 2  # both threads joined
    assert args[17] >= n // task_cols  # every task taken
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)


def test_one_thread_is_not_shared():
    assert not blas.share(stepgemm.job_address(False), 0, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_share_openblas_threads(monkeypatch, dtype):
    calls = []
    share = blas.share

    def counted(fn, arg, count, kind=None):
        calls.append(count)
        return share(fn, arg, count, kind)

    monkeypatch.setattr(blas, "share", counted)
    monkeypatch.setattr(products, "threads", lambda: 2)
    monkeypatch.setattr(products, "POOL_MIN_PRODUCT", 0)
    a, b, want = _product(1, dtype=dtype)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(products.matmul(a, b), want, rtol=tol, atol=tol * 20)
    c, d, also = _product(2, m=40, k=50, n=300, dtype=dtype)
    got = products.matmul_sum(a, b, c, d)
    np.testing.assert_allclose(got, want + also, rtol=tol, atol=tol * 20)
    assert calls == [2, 2]


def test_shared_products_beside_numpys_own_from_several_threads(monkeypatch):
    """Python threads run shared products while others call numpy's threaded ``@`` at once:
    OpenBLAS hands its threads to one caller at a time, every result is right."""
    monkeypatch.setattr(products, "threads", lambda: 2)
    monkeypatch.setattr(products, "POOL_MIN_PRODUCT", 0)
    cases = [_product(seed, m=64, k=256, n=512,
                      dtype=np.float32 if seed % 2 else np.float64) for seed in range(6)]
    errors = []

    def work(case, ours):
        a, b, want = case
        tol = 1e-4 if a.dtype == np.float32 else 1e-10
        for _ in range(25):
            got = products.matmul(a, b) if ours else a @ b
            if not np.allclose(got, want, rtol=tol, atol=tol * 50):
                errors.append(float(np.abs(got - want).max()))

    workers = [threading.Thread(target=work, args=(c, k % 3 != 0)) for k, c in enumerate(cases)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []


def test_split_loops_run_their_ranges_on_openblas_threads(monkeypatch):
    from benchmarks.fastrnns import cells
    from script import script
    from tests.fuser.test_native_loop import lstm_args
    from tests.helpers import native_loops, python_loop_result

    calls = []
    share = blas.share

    def counted(fn, arg, count, kind=None):
        calls.append(count)
        return share(fn, arg, count, kind)

    args = lstm_args(6, 16, 24, 32, np.float32, seed=3)
    want = python_loop_result(monkeypatch, cells.lstm_layer, *args)
    monkeypatch.setattr(blas, "share", counted)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", "4")  # four ranges, two threads take them
    f = script(cells.lstm_layer)
    got = f(*args)
    (lp,) = native_loops(f, *args)
    assert lp.calls == 1 and calls == [2]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_a_forked_child_shares_openblas_threads():
    """OpenBLAS starts its threads again in a child on the first job (they do not survive
    ``fork``): the child's shared products are right and it exits."""
    code = ("import os, numpy as np\n"
            "from fuser.cpu import products\n"
            "products.threads = lambda: 2\n"
            "products.POOL_MIN_PRODUCT = 0\n"
            "a = np.ones((64, 256), np.float32); b = np.ones((256, 512), np.float32)\n"
            "assert (products.matmul(a, b) == 256).all()\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    ok = all((products.matmul(a, b) == 256).all() for _ in range(20))\n"
            "    os._exit(0 if ok else 3)\n"
            "_, status = os.waitpid(pid, 0)\n"
            "assert os.waitstatus_to_exitcode(status) == 0, status\n"
            "print('done')\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "done"


def test_a_job_that_waited_for_a_late_thread_sends_the_next_ones_elsewhere(monkeypatch):
    """A shared job of a kind taking over ``LAG`` times its fastest run (a thread whose core
    another process holds started it late) makes as many next jobs as its wait would have run
    go without OpenBLAS's threads (share says False), at least twice as many after further lags;
    ``ON_TIME_STREAK`` jobs on time in a row halve the count."""
    durations, clock = [], [0.0]

    def run(count, fn, arg, stride):
        clock[0] += durations.pop(0)
        return 0

    blas.share(stepgemm.job_address(False), 0, 1)  # looks the entry up
    monkeypatch.setattr(blas, "_sharer", [(run, blas._sharer[0][1])])
    monkeypatch.setattr(blas.time, "perf_counter", lambda: clock[0])  # the jobs' own clock
    job = stepgemm.job_address(False)

    def pattern(times):
        durations[:] = list(times)
        out = []
        while durations:
            out.append(blas.share(job, 0, 2, "kind"))
        return out

    assert pattern([0.002, 0.002]) == [True, True]
    # 5 ms waited 1.5 jobs' time: 2 jobs go elsewhere, then at least twice as many per lag
    assert pattern([0.005, 0.005, 0.005]) == [True] + [False] * 2 + [True] + [False] * 4 + [True]
    assert blas._lag == {"skip": 8, "backoff": 8, "streak": 0}
    assert pattern([0.002]) == [False] * 8 + [True] and blas._lag["backoff"] == 8
    assert pattern([0.002] * (blas.ON_TIME_STREAK - 1)) == [True] * (blas.ON_TIME_STREAK - 1)
    assert blas._lag["backoff"] == 4
    assert pattern([0.005]) == [True] and blas._lag["skip"] == blas._lag["backoff"] == 8
    assert not blas.share(job, 0, 2, "other kind")  # the backoff holds for every kind
    blas._lag.update(skip=0, backoff=0)
    # a wait of a time slice, 9 jobs' time beyond the fastest: the next 9 go elsewhere
    assert pattern([0.02, 0.002]) == [True] + [False] * 9 + [True]
    assert blas._lag["backoff"] == 9
    blas._lag.update(skip=0)
    # a long wait counts for at most FIRST_MAX jobs; further lags double the count
    assert pattern([1.0]) == [True] and blas._lag["skip"] == blas.FIRST_MAX
    blas._lag.update(skip=0)
    assert pattern([1.0]) == [True] and blas._lag["skip"] == 2 * blas.FIRST_MAX
    blas._lag.update(skip=0, backoff=200)
    assert pattern([1.0]) == [True] and blas._lag["skip"] == blas.MAX_BACKOFF


def test_the_thread_count_read_in_place_follows_every_setter():
    """``blas.get_threads`` reads OpenBLAS's ``blas_cpu_number`` where it holds what
    ``openblas_get_num_threads`` returns: after ``set_threads`` and threadpoolctl's limits it
    answers what the library's own function does."""
    import ctypes

    threadpoolctl = pytest.importorskip("threadpoolctl")
    asked = ctypes.CFUNCTYPE(ctypes.c_int)(found.get_threads)
    before = blas.get_threads()
    try:
        for n in (1, 2, 1):
            blas.set_threads(n)
            assert blas.get_threads() == asked() == n
        blas.set_threads(before)
        with threadpoolctl.threadpool_limits(1):
            assert blas.get_threads() == asked() == 1
        assert blas.get_threads() == asked() == before
    finally:
        blas.set_threads(before)
