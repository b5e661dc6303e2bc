"""The native thread pool (``fuser.cpu.pool``) through the products it runs: right results from
several calling threads at once, from a forked child, and a process that exits cleanly (its
helpers stopped before the JIT's code goes away)."""

import subprocess
import sys
import threading

import numpy as np
import pytest

from fuser.cpu import blas, pool, products
from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(not pool.available() or pool.cpus() < 2,
                                reason="native helper threads need Linux and two CPUs")


@pytest.fixture(autouse=True)
def _without_openblas_threads(monkeypatch):
    """Jobs go to the pool, as where numpy's BLAS has no OpenBLAS thread server."""
    monkeypatch.setattr(blas, "share", lambda *args: False)


def _product(seed, m=48, k=300, n=520, dtype=np.float32):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def test_the_pool_has_helpers():
    assert pool.helpers() == pool.cpus() - 1


@pytest.mark.parametrize("threads", [2, 4])
def test_products_from_several_threads_at_once(monkeypatch, threads):
    """One caller holds the pool, the others run their products alone: every result right."""
    monkeypatch.setattr(products, "threads", lambda: threads)
    monkeypatch.setattr(products, "POOL_MIN_PRODUCT", 0)
    cases = [_product(seed, dtype=np.float32 if seed % 2 else np.float64) for seed in range(6)]
    errors = []

    def work(case):
        a, b, want = case
        tol = 1e-4 if a.dtype == np.float32 else 1e-10
        for _ in range(30):
            got = products.matmul(a, b)
            if not np.allclose(got, want, rtol=tol, atol=tol * 20):
                errors.append(float(np.abs(got - want).max()))

    workers = [threading.Thread(target=work, args=(c,)) for c in cases]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []


def test_the_pool_is_free_again_after_each_job(monkeypatch):
    monkeypatch.setattr(products, "threads", lambda: 2)
    monkeypatch.setattr(products, "POOL_MIN_PRODUCT", 0)
    a, b, want = _product(1)
    for _ in range(50):
        np.testing.assert_allclose(products.matmul(a, b), want, rtol=1e-4, atol=2e-3)
    found = pool.pool()
    assert found is not None and found.lock.acquire(blocking=False)
    found.lock.release()
    assert found.state[pool.ACTIVE] == 0 and found.state[pool.OPEN] == 0


def test_a_process_that_used_the_pool_exits_cleanly():
    code = ("import numpy as np\n"
            "from fuser.cpu import blas, products\n"
            "blas.share = lambda *args: False\n"
            "products.threads = lambda: 2\n"
            "products.POOL_MIN_PRODUCT = 0\n"
            "a = np.ones((64, 256), np.float32); b = np.ones((256, 512), np.float32)\n"
            "for _ in range(20):\n"
            "    assert (products.matmul(a, b) == 256).all()\n"
            "print('done')\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "done"


def test_lagging_helpers_make_the_next_jobs_run_alone(monkeypatch):
    """A job whose helpers lagged sends the next 1, then 2, 4, ... jobs to the caller alone (run
    returns False: the caller runs them); a job without lag ends the backoff."""
    found = pool.pool()
    monkeypatch.setattr(found, "skip", 0)
    monkeypatch.setattr(found, "backoff", 0)
    monkeypatch.setattr(found, "run", lambda *args: 1)  # every job lags
    pattern = [pool.run(0, 0) for _ in range(11)]
    assert pattern == [True, False, True, False, False, True, False, False, False, False, True]
    monkeypatch.setattr(found, "run", lambda *args: 0)
    found.skip = 0
    assert [pool.run(0, 0) for _ in range(3)] == [True, True, True]
    assert found.backoff == 0
    monkeypatch.setattr(found, "run", lambda *args: 1)
    for _ in range(2000):
        pool.run(0, 0)
    assert found.backoff == pool.MAX_BACKOFF


def test_a_process_that_exits_right_after_starting_the_pool_exits():
    """The helpers are stopped at exit even when one has not started running yet (it must not
    wait for a job that will never come)."""
    code = "from fuser.cpu import pool\nassert pool.pool() is not None\n"
    for _ in range(8):
        run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
        assert run.returncode == 0, run.stderr
