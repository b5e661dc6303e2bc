"""A pool of native threads that share one job with the calling thread, started in microseconds:
where numpy's BLAS has no OpenBLAS thread server to run jobs on (``fuser.cpu.blas.share``, which
is tried first: a job on OpenBLAS's threads adds no thread beside the ones numpy's own products
keep spinning).

A product outside a loop (a hoisted projection, a weight gradient, a cell's two products) takes
tens to hundreds of microseconds on one core. Handing half of it to a Python thread pool costs
a condition variable's wake-up, 20-50 us on a virtual machine whose other vCPU sleeps, which is
as long as the half it hands over. Here the helpers are native threads (``pthread_create`` on a
worker compiled with LLVM) that, after a job, watch a generation counter for a short while
(``SPINS`` ``pause`` instructions, tens of microseconds) before sleeping on it with a futex;
the calling thread publishes a job by bumping the counter (and wakes sleepers only when there
are any), runs the job itself, then waits only for helpers that have started it.

A job is ``fn(arg)``: a native function that takes work from a counter of its own (tasks of a
product, say) until none is left, so a helper whose core is busy simply takes none and the
caller does the rest; nobody waits for a thread that has not started. The caller waits only for
helpers inside the job (each finishing the task it took), first spinning briefly, then yielding
its core (``sched_yield``) rather than spinning on.

One job runs at a time per process: a second caller that finds the pool in use runs its job
alone (``run`` returns False and the caller calls the job itself). Linux on x86-64 or AArch64
only (``available()``): elsewhere everything runs on the calling thread. A forked child gets a
pool of its own on first use (threads do not survive ``fork``); the helpers are stopped and
joined at exit, before the JIT's code goes away.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import platform
import sys
import threading
from typing import Any

import numpy as np
from llvmlite import ir

from fuser.cpu.jit import compile_ir

SPINS = 4000
"""``pause`` instructions a helper executes watching for the next job before it sleeps (about
20-60 us: jobs issued back to back, as a call's products are, find it awake)."""

_SYSCALLS = {"x86_64": (202, 24), "aarch64": (98, 124)}
"""(futex, sched_yield) system call numbers per machine."""
_FUTEX_WAIT, _FUTEX_WAKE = 128, 129  # the _PRIVATE forms

# the state: int64 slots; slot 0's low 32 bits are the futex word
GEN, ACTIVE, FN, ARG, OPEN, QUIT, SLEEPERS, SYSCALL = range(8)
SLOTS = 8

I8P = ir.IntType(8).as_pointer()
I32, I64 = ir.IntType(32), ir.IntType(64)


def available() -> bool:
    return sys.platform.startswith("linux") and platform.machine() in _SYSCALLS


def ir_text(machine: str) -> str:
    """``rnnscript_pool_worker(state)`` (a thread's start routine) and ``rnnscript_pool_run(state,
    fn, arg)`` (publish, run, wait)."""
    futex_nr, yield_nr = _SYSCALLS[machine]
    module = ir.Module(name="rnnscript_pool")
    job = ir.FunctionType(ir.VoidType(), [I8P]).as_pointer()
    syscall = ir.FunctionType(I64, [I64], var_arg=True).as_pointer()
    pause = None
    if machine == "x86_64":
        pause = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse2.pause")

    def slots(b: ir.IRBuilder, state: Any) -> Any:
        return b.bitcast(state, I64.as_pointer())

    def at(b: ir.IRBuilder, state: Any, k: int) -> Any:
        return b.gep(slots(b, state), [ir.Constant(I64, k)])

    def gen_word(b: ir.IRBuilder, state: Any) -> Any:
        return b.bitcast(at(b, state, GEN), I32.as_pointer())

    def load(b: ir.IRBuilder, ptr: Any) -> Any:
        return b.load_atomic(ptr, "seq_cst", ptr.type.pointee.width // 8)

    def call_syscall(b: ir.IRBuilder, state: Any, *args: Any) -> Any:
        fn = b.inttoptr(b.load(at(b, state, SYSCALL)), syscall)
        return b.call(fn, list(args))

    def relax(b: ir.IRBuilder) -> None:
        if pause is not None:
            b.call(pause, [])

    # -- the worker
    worker = ir.Function(module, ir.FunctionType(I8P, [I8P]), "rnnscript_pool_worker")
    (state,) = worker.args
    entry = worker.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    seen_slot, spins_slot = b.alloca(I32), b.alloca(I32)
    b.store(load(b, gen_word(b, state)), seen_slot)
    wait = b.append_basic_block("wait")
    spin = b.append_basic_block("spin")
    sleep = b.append_basic_block("sleep")
    woke = b.append_basic_block("woke")
    job_in = b.append_basic_block("job")
    run_job = b.append_basic_block("run_job")
    job_out = b.append_basic_block("job_out")
    leave = b.append_basic_block("leave")
    b.store(ir.Constant(I32, 0), spins_slot)
    b.branch(wait)

    b.position_at_end(wait)  # a new generation? else (unless told to stop) spin, then sleep
    g = load(b, gen_word(b, state))
    quit_check = b.append_basic_block("quit_check")
    b.cbranch(b.icmp_unsigned("!=", g, b.load(seen_slot)), woke, quit_check)
    b.position_at_end(quit_check)  # (a thread that starts after ``stop`` bumped the counter)
    stopping = b.icmp_signed("!=", load(b, at(b, state, QUIT)), ir.Constant(I64, 0))
    b.cbranch(stopping, leave, spin)

    b.position_at_end(spin)
    spins = b.load(spins_slot)
    b.store(b.add(spins, ir.Constant(I32, 1)), spins_slot)
    relax(b)
    b.cbranch(b.icmp_unsigned("<", spins, ir.Constant(I32, SPINS)), wait, sleep)

    b.position_at_end(sleep)  # counted as a sleeper first, so a publisher sees it (seq_cst)
    b.atomic_rmw("add", at(b, state, SLEEPERS), ir.Constant(I64, 1), "seq_cst")
    call_syscall(b, state, ir.Constant(I64, futex_nr), b.ptrtoint(gen_word(b, state), I64),
                 ir.Constant(I64, _FUTEX_WAIT), b.zext(b.load(seen_slot), I64),
                 ir.Constant(I64, 0), ir.Constant(I64, 0), ir.Constant(I64, 0))
    b.atomic_rmw("sub", at(b, state, SLEEPERS), ir.Constant(I64, 1), "seq_cst")
    b.store(ir.Constant(I32, 0), spins_slot)
    b.branch(wait)

    b.position_at_end(woke)
    b.store(g, seen_slot)
    b.store(ir.Constant(I32, 0), spins_slot)
    quit_now = b.icmp_signed("!=", load(b, at(b, state, QUIT)), ir.Constant(I64, 0))
    b.cbranch(quit_now, leave, job_in)

    b.position_at_end(job_in)  # inside before looking: the caller waits for us from here on
    b.atomic_rmw("add", at(b, state, ACTIVE), ir.Constant(I64, 1), "seq_cst")
    is_open = b.icmp_signed("!=", load(b, at(b, state, OPEN)), ir.Constant(I64, 0))
    b.cbranch(is_open, run_job, job_out)

    b.position_at_end(run_job)
    fn = b.inttoptr(load(b, at(b, state, FN)), job)
    arg = b.inttoptr(load(b, at(b, state, ARG)), I8P)
    b.call(fn, [arg])
    b.branch(job_out)

    b.position_at_end(job_out)
    b.atomic_rmw("sub", at(b, state, ACTIVE), ir.Constant(I64, 1), "seq_cst")
    b.branch(wait)

    b.position_at_end(leave)
    b.ret(ir.Constant(I8P, None))

    # -- the caller's side
    run = ir.Function(module, ir.FunctionType(I64, [I8P, I8P, I8P]), "rnnscript_pool_run")
    state, fn_arg, arg = run.args
    b = ir.IRBuilder(run.append_basic_block("entry"))
    clock = ir.Function(module, ir.FunctionType(I64, []), "llvm.readcyclecounter")
    spins_slot = b.alloca(I32)
    b.store(ir.Constant(I32, 0), spins_slot)
    b.store_atomic(b.ptrtoint(fn_arg, I64), at(b, state, FN), "seq_cst", 8)
    b.store_atomic(b.ptrtoint(arg, I64), at(b, state, ARG), "seq_cst", 8)
    b.store_atomic(ir.Constant(I64, 1), at(b, state, OPEN), "seq_cst", 8)
    b.atomic_rmw("add", gen_word(b, state), ir.Constant(I32, 1), "seq_cst")
    sleepers = load(b, at(b, state, SLEEPERS))
    with b.if_then(b.icmp_signed(">", sleepers, ir.Constant(I64, 0))):
        call_syscall(b, state, ir.Constant(I64, futex_nr), b.ptrtoint(gen_word(b, state), I64),
                     ir.Constant(I64, _FUTEX_WAKE), ir.Constant(I64, 0x7FFFFFFF),
                     ir.Constant(I64, 0), ir.Constant(I64, 0), ir.Constant(I64, 0))
    t0 = b.call(clock, [])
    b.call(b.bitcast(fn_arg, job), [arg])
    b.store_atomic(ir.Constant(I64, 0), at(b, state, OPEN), "seq_cst", 8)
    t1 = b.call(clock, [])
    check = b.append_basic_block("check")
    relax_block = b.append_basic_block("relax")
    give = b.append_basic_block("give")
    done = b.append_basic_block("done")
    b.branch(check)
    b.position_at_end(check)  # helpers still inside finish the task each took
    busy = b.icmp_signed("!=", load(b, at(b, state, ACTIVE)), ir.Constant(I64, 0))
    b.cbranch(busy, relax_block, done)
    b.position_at_end(relax_block)
    spins = b.load(spins_slot)
    b.store(b.add(spins, ir.Constant(I32, 1)), spins_slot)
    relax(b)
    b.cbranch(b.icmp_unsigned("<", spins, ir.Constant(I32, SPINS)), check, give)
    b.position_at_end(give)
    call_syscall(b, state, ir.Constant(I64, yield_nr))
    b.branch(check)
    b.position_at_end(done)  # waited for more than our own share took: the helpers lag
    waited = b.sub(b.call(clock, []), t1)
    b.ret(b.zext(b.icmp_signed(">", waited, b.sdiv(b.sub(t1, t0), ir.Constant(I64, 2))), I64))
    return str(module)


class _Pool:
    """The helpers of one process."""

    def __init__(self, helpers: int):
        libc = ctypes.CDLL(None, use_errno=True)
        self.pid = os.getpid()
        self.state = np.zeros(SLOTS, np.int64)
        self.state[SYSCALL] = ctypes.cast(libc.syscall, ctypes.c_void_p).value
        worker, run = compile_ir(ir_text(platform.machine()),
                                 ["rnnscript_pool_worker", "rnnscript_pool_run"])
        self.run = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_void_p)(run)
        self.skip = 0
        """jobs the caller runs alone before trying the helpers again (see ``run``)."""
        self.backoff = 0
        self.lock = threading.Lock()
        self.threads: list[ctypes.c_ulong] = []
        create = libc.pthread_create
        create.argtypes = [ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_void_p]
        for _ in range(helpers):
            tid = ctypes.c_ulong()
            if create(ctypes.byref(tid), None, worker, self.state.ctypes.data) != 0:
                break
            self.threads.append(tid)
        self.helpers = len(self.threads)

    def stop(self) -> None:
        """Stop the helpers and wait for them (their code must outlive them)."""
        if os.getpid() != self.pid or not self.threads:
            return
        with self.lock:
            libc = ctypes.CDLL(None)
            self.state[QUIT] = 1
            word = self.state[GEN:GEN + 1].view(np.int32)
            word[0] += 1
            futex_nr = _SYSCALLS[platform.machine()][0]
            libc.syscall(ctypes.c_long(futex_nr), ctypes.c_void_p(word.ctypes.data),
                         ctypes.c_long(_FUTEX_WAKE), ctypes.c_long(0x7FFFFFFF), None, None,
                         ctypes.c_long(0))
            join = libc.pthread_join
            join.argtypes = [ctypes.c_ulong, ctypes.c_void_p]
            for tid in self.threads:
                join(tid.value, None)
            self.threads.clear()


_lock = threading.Lock()
_pools: list[_Pool] = []


_cpus: list[int] = []
"""the CPUs this process may run on, read once (a product asks before every call); a forked
child reads its own (``os.register_at_fork``)."""
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_cpus.clear)


def cpus() -> int:
    """The CPUs this process may run on (its affinity when first asked)."""
    if _cpus:
        return _cpus[0]
    try:
        found = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        found = os.cpu_count() or 1
    _cpus[:] = [found]
    return found


def pool() -> _Pool | None:
    """This process's pool (``cpus() - 1`` helpers), started on first use; None where native
    threads are not available or there is one CPU."""
    if not available() or cpus() < 2:
        return None
    with _lock:
        if not _pools or _pools[0].pid != os.getpid():
            _pools[:] = [_Pool(cpus() - 1)]
        found = _pools[0]
    return found if found.helpers else None


MAX_BACKOFF = 256
"""The most jobs in a row the caller runs alone after the helpers lagged."""


def run(fn: int, arg: int) -> bool:
    """Run the native job ``fn(arg)`` on this thread and the helpers at once; False (nothing
    run) when there is no pool, another thread's job holds it, or the helpers lagged lately:
    the caller then runs the job alone.

    Lagging: the caller, done with its own share, waited for a helper still inside the job
    longer than half its share took (a helper whose core another process took in the middle
    of a task; on a quiet machine the wait is at most one task). The next job then runs on
    the caller alone, and after each further lag twice as many (at most ``MAX_BACKOFF``)
    before the helpers are tried again, so a busy machine costs one slow job now and then
    instead of one per product."""
    found = pool()
    if found is None or not found.lock.acquire(blocking=False):
        return False
    try:
        if found.skip:
            found.skip -= 1
            return False
        lagged = found.run(found.state.ctypes.data, fn, arg)
        if lagged:
            found.backoff = min(MAX_BACKOFF, 2 * found.backoff or 1)
            found.skip = found.backoff
        else:
            found.backoff = 0
    finally:
        found.lock.release()
    return True


@atexit.register
def _stop() -> None:
    for p in _pools:
        p.stop()


def helpers() -> int:
    """How many helper threads the pool has (0 without one)."""
    found = pool()
    return found.helpers if found is not None else 0

