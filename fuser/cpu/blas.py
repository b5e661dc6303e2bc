"""The BLAS matrix multiply that native code calls: numpy's own.

A native recurrent loop (``fuser.cpu.loop``) multiplies matrices every step without going back
to Python, so it needs a GEMM it can call through a function pointer. It uses the library numpy
itself calls for ``@``, so both paths share one thread pool and its settings (``threadpoolctl``,
``OPENBLAS_NUM_THREADS``) and give the same sums:

- numpy's wheels bundle ``scipy-openblas`` (the ``numpy.libs`` folder beside the package, or
  ``.dylibs`` inside it on macOS), built with 64-bit integers and exporting
  ``scipy_cblas_sgemm64_`` / ``scipy_cblas_dgemm64_``;
- a numpy built against a system OpenBLAS or another CBLAS exports ``cblas_sgemm``; numpy's
  config names the library (``np.show_config``).

Opening a library numpy has already loaded returns numpy's handle, so no second copy is loaded.
Where neither is found (``gemm()`` returns None) recurrent loops stay Python and ``explain`` says
why. The ``scipy-openblas32`` wheel or scipy's ``cython_blas`` capsules would be alternatives;
the first adds a second BLAS with its own thread pool beside numpy's, the second a dependency on
scipy and Fortran calling conventions (every argument by pointer, column-major).
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import math
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

CBLAS_ROW_MAJOR = 101
CBLAS_NO_TRANS = 111
CBLAS_TRANS = 112

_SYMBOLS = (("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", 64),
            ("cblas_sgemm64_", "cblas_dgemm64_", 64),
            ("cblas_sgemm", "cblas_dgemm", 32))
"""(single, double, integer bits) of the CBLAS entry points, in the order they are tried."""


@dataclass(frozen=True)
class Gemm:
    """CBLAS ``?gemm`` entry points: ``gemm(order, transa, transb, m, n, k, alpha, a, lda, b,
    ldb, beta, c, ldc)`` with the sizes as ``int_bits``-bit integers."""

    sgemm: int
    """the address of the float32 entry."""
    dgemm: int
    """the address of the float64 entry."""
    int_bits: int
    """64 for an ILP64 build (numpy's bundled OpenBLAS), else 32."""
    library: str
    """the file it was found in."""
    get_threads: int = 0
    """the address of OpenBLAS's ``openblas_get_num_threads`` (0: not OpenBLAS)."""
    set_threads: int = 0
    """the address of OpenBLAS's ``openblas_set_num_threads``."""
    pthread: int = 0
    """the address of OpenBLAS's ``gotoblas_pthread`` (0: absent)."""
    started: int = 0
    """the address of OpenBLAS's ``blas_num_threads`` (an ``int``: the threads its server has
    started, the caller's included)."""
    cpu_number: int = 0
    """the address of OpenBLAS's ``blas_cpu_number`` (an ``int``: the count
    ``openblas_get_num_threads`` returns and ``openblas_set_num_threads`` sets; 0: absent)."""


_lock = threading.Lock()
_found: list[Gemm | None] = []


def gemm() -> Gemm | None:
    """numpy's CBLAS GEMM, or None when it cannot be found."""
    with _lock:
        if not _found:
            _found.append(_find())
        return _found[0]


def _candidates() -> list[str]:
    here = os.path.dirname(np.__file__)
    paths: list[str] = []
    folders = (os.path.join(os.path.dirname(here), "numpy.libs"), os.path.join(here, ".dylibs"))
    for folder in folders:
        for pattern in ("*openblas*", "*blas*"):
            paths += sorted(glob.glob(os.path.join(folder, pattern)))
    try:
        config = np.show_config(mode="dicts")  # type: ignore[call-arg]
        blas = config.get("Build Dependencies", {}).get("blas", {})
        libdir, name = blas.get("lib directory"), blas.get("name")
        if libdir and name:
            paths += sorted(glob.glob(os.path.join(libdir, f"lib{name}*")))
        if name:
            paths.append(f"lib{name}.so")
    except Exception:  # an old numpy without mode="dicts"
        pass
    seen: set[str] = set()
    return [p for p in paths if not (p in seen or seen.add(p))]  # type: ignore[func-returns-value]


def _find() -> Gemm | None:
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for single, double, bits in _SYMBOLS:
            try:
                s, d = getattr(lib, single), getattr(lib, double)
            except AttributeError:
                continue
            prefix = "scipy_" if single.startswith("scipy_") else ""
            suffix = "64_" if single.endswith("64_") else ""
            get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
            put = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
            run = getattr(lib, "gotoblas_pthread", None) if get is not None else None
            started = getattr(lib, "blas_num_threads", None) if run is not None else None
            number = getattr(lib, "blas_cpu_number", None) if get is not None else None
            return Gemm(_address(s), _address(d), bits, os.path.basename(path),
                        _address(get) if get is not None else 0,
                        _address(put) if put is not None else 0,
                        _address(run) if started is not None else 0,
                        _address(started) if started is not None else 0,
                        _address(number) if number is not None else 0)
    return None


def _address(fn: object) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value or 0


_getter: list[Any] = []
"""``blas_cpu_number`` as a ctypes int, else ``openblas_get_num_threads`` as a ctypes
function (None: not OpenBLAS), once found."""


def get_threads() -> int | None:
    """How many threads numpy's OpenBLAS uses (None: not OpenBLAS, or not found): its
    ``blas_cpu_number`` read in place where it holds what ``openblas_get_num_threads`` returns
    (a call through ctypes is several times the read, and products ask at every call)."""
    if not _getter:
        g = gemm()
        fn = (ctypes.CFUNCTYPE(ctypes.c_int)(g.get_threads)
              if g is not None and g.get_threads else None)
        if fn is not None and g is not None and g.cpu_number:
            number = ctypes.c_int.from_address(g.cpu_number)
            if number.value == fn():  # (the call sets it up first)
                _getter.append(number)
                return number.value
        _getter.append(fn)
    found = _getter[0]
    return None if found is None else found.value if type(found) is ctypes.c_int \
        else int(found())


def set_threads(n: int) -> None:
    """Make numpy's OpenBLAS use ``n`` threads (for the whole process, as
    ``threadpoolctl.threadpool_limits`` does); ignored when it is not OpenBLAS."""
    g = gemm()
    if g is None or not g.set_threads:
        return
    ctypes.CFUNCTYPE(None, ctypes.c_int)(g.set_threads)(int(n))


_sharer: list[Any] = []
"""``gotoblas_pthread`` as a ctypes function (None: not found), once looked up."""


LAG = 2.0
"""A shared job that took more than this many times the fastest run of its kind so far (and
``LAG_SLACK`` seconds more) lagged: an OpenBLAS thread whose core another process holds started
it late, and the caller waited for it."""
LAG_SLACK = 50e-6
MAX_BACKOFF = 256
"""After a lag the next jobs run without OpenBLAS's threads, as many as the wait would have run
(its time beyond the kind's fastest run, over that fastest run: a job run elsewhere loses at
most about its shared time; at most ``FIRST_MAX``), after each further lag at least twice as
many, at most this many, before they are tried again. A lag costs a scheduler time slice,
milliseconds, and afterwards OpenBLAS's threads keep spinning beside the busy neighbour for about
0.1 s: beside a spinning process the small LSTM's forward lost 3-8 ms per lagged job, where a
job of its own pool took 0.15-0.6 ms."""
FIRST_MAX = 32
"""The most jobs one lag sends elsewhere on its own wait's account (further lags double the
count): a lag on a quiet machine (another tenant's moment) must not send hundreds of jobs to
threads that, in a program calling numpy between them, fight numpy's spinning ones."""
ON_TIME_STREAK = 8
"""Jobs on time in a row that halve the backoff (one on time does not end it: beside a busy
neighbour some jobs find the thread's core free, and the next lag costs a time slice again)."""

AWAKE_S = 0.01
"""For this long after a shared job ended, OpenBLAS's threads are known to be spinning (they
wait about 0.1 s for the next job before they sleep), so a job handed to them now starts at
once (``awake``)."""

_lag = {"skip": 0, "backoff": 0, "streak": 0}
_last = [-1.0]
"""when the last shared job ended (``time.perf_counter``)."""
_fastest: dict[Any, float] = {}
"""per kind of job (``share``'s ``kind``), its fastest shared run in seconds."""


def share(fn: int, arg: int, count: int, kind: Any = None) -> bool:
    """Run the native job ``fn(arg)`` on this thread and ``count - 1`` of numpy's OpenBLAS
    threads at once (at most the threads OpenBLAS has started), returning when every one has
    left it; False (nothing run) when OpenBLAS's thread server is not there (another BLAS).

    A function called between numpy's own products (as real programs are) finds OpenBLAS's
    threads still spinning after numpy's last product (they wait about 0.1 s before they sleep).
    Threads of our own would then be three busy threads on two cores, each product taking as
    long as on one core; on OpenBLAS's threads the job takes the spinning one, as numpy's next
    product would. ``gotoblas_pthread(n, fn, arg, stride)`` is the entry OpenBLAS keeps for
    running a caller's function on its threads (``fn(arg + k * stride)`` on thread ``k``, the
    caller being thread 0): every thread gets the same ``arg`` here and the job takes its work
    from a counter of its own, so a thread that starts late takes none.

    The job must not call a threaded BLAS function itself (it would wait for a thread that is
    running the job): jobs here are native products and loops whose GEMMs run on one thread
    (``single_threaded``).

    OpenBLAS's caller waits for every thread it handed the job to, even one that starts too late
    to take any work; with another process holding that thread's core the wait is the
    scheduler's (milliseconds). So a job of a ``kind`` (the same work: one product layout, one
    loop variant) that took over ``LAG`` times its fastest shared run makes the next jobs run
    without these threads (False): as many as its wait would have run (at most ``FIRST_MAX``), at
    least twice as many after each further lag (at most ``MAX_BACKOFF``), the count halving after
    ``ON_TIME_STREAK`` jobs on time in a row: the small LSTM's backward beside a spinning
    neighbour had taken 5.8x its quiet time."""
    if count < 2:
        return False
    if _lag["skip"]:
        _lag["skip"] -= 1
        return False
    found = _sharer_of()
    if found is None:
        return False
    run, started = found
    count = min(count, started.value)
    if count < 2:
        return False
    start = time.perf_counter()
    run(count, fn, arg, 0)
    _last[0] = end = time.perf_counter()
    took = end - start
    if kind is not None:
        fastest = _fastest.get(kind)
        if fastest is None or took < fastest:
            if len(_fastest) < 4096:
                _fastest[kind] = took
        elif took > LAG * fastest + LAG_SLACK:
            waited = math.ceil((took - fastest) / max(fastest, 1e-6))
            _lag["backoff"] = min(MAX_BACKOFF, max(2 * _lag["backoff"], min(waited, FIRST_MAX)))
            _lag["skip"] = _lag["backoff"]
            _lag["streak"] = 0
            return True
    _lag["streak"] += 1
    if _lag["streak"] >= ON_TIME_STREAK:
        _lag["backoff"] //= 2
        _lag["streak"] = 0
    return True


def _sharer_of() -> tuple[Any, Any] | None:
    """OpenBLAS's entry for running a caller's function on its threads (``share``) and its
    count of started threads; None when numpy's BLAS has no thread server."""
    if not _sharer:
        g = gemm()
        _sharer.append((ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                         ctypes.c_void_p, ctypes.c_int)(g.pthread),
                        ctypes.c_int.from_address(g.started))
                       if g is not None and g.pthread else None)
    return _sharer[0]


def can_share(count: int) -> bool:
    """Whether ``share`` would now run a job on ``count`` threads at once (this one and
    ``count - 1`` of OpenBLAS's started threads), none held back by a lag backoff."""
    found = _sharer_of()
    return (count >= 2 and not _lag["skip"] and found is not None
            and found[1].value >= count)


def awake(again: bool = False) -> bool:
    """Whether a job worth sharing only with awake threads may be handed to OpenBLAS's now:
    a job shared with them ended less than ``AWAKE_S`` ago (they are still spinning, and a job
    handed to them costs no wake-up; a thread that has slept takes 0.1-0.3 ms to wake on a
    virtual machine), or the caller runs ``again`` (its own last run ended that recently: the
    first of a burst wakes them), and shared jobs are not backing off after a lag (``share``).
    A job this declines for the backoff is one of those the backoff sends elsewhere: jobs of
    this size are the only ones some programs have, and the backoff must end."""
    if not again and time.perf_counter() - _last[0] >= AWAKE_S:
        return False
    if _lag["skip"]:
        _lag["skip"] -= 1
        return False
    return True


_single = threading.Lock()
_single_state = {"depth": 0, "before": None}


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """numpy's OpenBLAS on one thread while any such block runs (several threads each making
    their own GEMM calls at once: an OpenBLAS thread pool under each would fight for the same
    cores, and OpenBLAS serves one caller's threaded call at a time); the count from before
    the first block when the last one ends. OpenBLAS's ``openblas_set_num_threads_local`` would
    be the per-thread way, but the builds numpy ships apply it to the whole process."""
    with _single:
        if _single_state["depth"] == 0:
            _single_state["before"] = get_threads()
            set_threads(1)
        _single_state["depth"] += 1
    try:
        yield
    finally:
        with _single:
            _single_state["depth"] -= 1
            before = _single_state["before"]
            if _single_state["depth"] == 0 and before is not None:
                set_threads(before)


@contextlib.contextmanager
def threads(n: int) -> Iterator[None]:
    """numpy's OpenBLAS on ``n`` threads inside the block; the previous count after it."""
    before = get_threads()
    set_threads(n)
    try:
        yield
    finally:
        if before is not None:
            set_threads(before)
