"""Running a loop over several batch row ranges at once (``RNNSCRIPT_LOOP_THREADS``)."""

from __future__ import annotations

import itertools
import os
import threading
from typing import Any

import numpy as np

from fuser.cpu import blas

MIN_ROWS = 4
"""the fewest batch rows one row range gets."""


def range_count() -> int:
    """How many row ranges a loop runs at once: ``RNNSCRIPT_LOOP_THREADS`` (default 1: one
    loop over every row, its GEMMs threaded by BLAS as numpy's are).

    Several ranges run on a pool of helper threads with BLAS on one thread each; a range no
    helper has started when the caller runs out is the caller's, so a busy core never stalls
    the call for longer than one range. On this project's shared 2-core machine two ranges
    were slower than one loop (the other core was rarely free), so it stays opt-in until it
    is measured to win on a quiet machine."""
    env = os.environ.get("RNNSCRIPT_LOOP_THREADS", "").strip()
    try:
        return max(1, int(env)) if env else 1
    except ValueError:
        return 1


_pool_lock = threading.Lock()
_pool: list[Any] = []


def _helpers(n: int) -> Any:
    """The process's pool of helper threads (at least ``n``)."""
    from concurrent.futures import ThreadPoolExecutor
    with _pool_lock:
        if not _pool or _pool[0]._max_workers < n:
            if _pool:
                _pool[0].shutdown(wait=False)
                _pool.clear()
            _pool.append(ThreadPoolExecutor(n, thread_name_prefix="rnnscript-loop"))
        return _pool[0]


class _Ranges:
    """One call's row ranges, taken in turn by the calling thread and the helpers: a range no
    thread has started when the caller runs out is the caller's, so a helper whose core is
    busy never makes the call wait for it (only a range it has started does)."""

    def __init__(self, fn: Any, items: tuple, trip: int, ranges: list[np.ndarray],
                 doubles: np.ndarray, fns: np.ndarray):
        self.args = (items, trip, doubles.ctypes.data, fns.ctypes.data)
        self.fn = fn
        self.ranges = ranges
        self.next = itertools.count()
        self.status = [1] * len(ranges)
        self.done = 0
        self.cond = threading.Condition()

    def work(self) -> None:
        items, trip, doubles, fns = self.args
        while True:
            k = next(self.next)
            if k >= len(self.ranges):
                return
            try:
                self.status[k] = self.fn(items, trip, self.ranges[k].ctypes.data, doubles, fns)
            finally:
                with self.cond:
                    self.done += 1
                    if self.done == len(self.ranges):
                        self.cond.notify_all()


def run_ranges(fn: Any, items: tuple, trip: int, ranges: list[np.ndarray],
                doubles: np.ndarray, fns: np.ndarray) -> int:
    """Run the loop over each row range, on this thread and the helpers at once; 0 when every
    range ran to the end."""
    run = _Ranges(fn, items, trip, ranges, doubles, fns)
    pool = _helpers(len(ranges) - 1)
    with blas.single_threaded():  # each range's GEMMs on its own thread
        for _ in range(len(ranges) - 1):
            pool.submit(run.work)
        run.work()
        with run.cond:
            run.cond.wait_for(lambda: run.done == len(ranges))
    return max(run.status)
