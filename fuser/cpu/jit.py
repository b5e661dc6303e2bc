"""The process-wide LLVM JIT: one MCJIT engine for the host CPU that every kernel is loaded into,
and an on-disk cache of the kernels' object code.

llvmlite 0.50 facts this module relies on:
- ``llvm.initialize()`` raises; only the native target and asm printer are initialized.
- The legacy pass manager is gone: the O3 pipeline runs through ``create_pass_builder``.
- ``create_mcjit_compiler(module, tm)`` takes ownership of ``tm``; dropping the engine and reusing
  ``tm`` crashes. So the engine gets its own target machine and lives as long as the process; the
  optimizer and code generator use target machines of their own (one per compiling thread).
- Every llvmlite call into LLVM holds one process-wide lock (``llvm.ffi.lib``'s), so a kernel
  compiling on one thread would stop every other thread's LLVM calls for its whole compile.
  The optimizer and code generator are called without it (``_object``): LLVM lets threads
  compile at once when each has its own context and target machine.

Each kernel is compiled to an object file (O3, then machine code for the host CPU name and
features: AVX-512 where present) and the object is loaded into the engine. Optimization and
machine code are about 90% of a compile (tens of ms per kernel, 100-200 ms on a loaded machine),
so the objects are kept on disk, keyed by the IR text, the CPU name and features, the LLVM
options and the llvmlite/LLVM versions: a new process loads a kernel it has seen before in well
under a millisecond. The cache lives in ``$RNNSCRIPT_CACHE_DIR``, else
``$XDG_CACHE_HOME/rnnscript``, else ``~/.cache/rnnscript``; ``RNNSCRIPT_DISK_CACHE=0`` turns it
off. Entries are written atomically and carry a checksum; an unreadable or corrupt entry is
ignored and rewritten. A directory that cannot be written only means no caching.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llvmlite
import llvmlite.binding as llvm

_lock = threading.RLock()
_state: _Jit | None = None

_PREDICATED = ("-prefer-predicate-over-epilogue=predicate-else-scalar-epilogue",)
"""With AVX-512, fold the loop remainder into one masked vector loop (its mask registers make a
masked load or store as cheap as a plain one) instead of a vector epilogue plus a scalar loop:
half the machine code and about half the compile time, same speed (measured on the LSTM cell's
kernel)."""


def _llvm_options() -> tuple[str, ...]:
    """The LLVM options for this host: ``_PREDICATED`` only where the CPU has AVX-512. Without
    it, every vector iteration of a folded loop computes a mask and loads and stores through
    ``vmaskmovps``, which AVX2 CPUs run as microcode: on a Zen 1 core ``g * 0.5 + 0.1`` over
    50,000 float32 took 102 us a step in a native loop, against numpy's 30 (its own two
    passes); vectorized with an epilogue, the kernel is a plain vector loop."""
    return _PREDICATED if host_features().get("avx512f") else ()


_FULL_WIDTH = "-prefer-256-bit"
"""For code compiled ``wide`` on an AVX-512 core: vectorize in its full 512-bit vectors. LLVM
tunes most AVX-512 Intel cores to prefer 256-bit vectors, because a core running 512-bit
arithmetic lowers its clock for a while after, and everything else it runs then (numpy, the
interpreter) is slower. That is the right trade for a kernel called between Python statements
(mantas' echo state network, whose steps run Python between kernels of 100 items: 5-10%
slower with its kernels at 512 bits, on a Sapphire Rapids core) and the wrong one for a native
loop, which runs every step of a recurrence in one call and whose step products (``stepgemm``)
are 512-bit already: fastrnns' small LSTM (T=100, B=8, H=64, one thread, float32) took 620-670
us in its native loop with the cell at 256 bits, 424-432 at 512."""


def _features(wide: bool = False) -> str:
    """The target machine's features: this CPU's, with ``_FULL_WIDTH`` for ``wide`` code
    where the CPU has AVX-512."""
    features = host_features().flatten()
    return f"{features},{_FULL_WIDTH}" if wide and host_features().get("avx512f") else features


_MAGIC = b"rnnscript-kernel-object-1\n"
"""Header of a cache entry (then the sha256 of the object, then the object)."""


@dataclass
class CompileStats:
    """Counters for the kernels compiled or loaded in this process."""

    kernels: int = 0
    """how many kernels were compiled (optimization and machine code ran)."""
    seconds: float = 0.0
    """total time spent compiling them, summed over threads: kernels compiled ``in_background``
    overlap each other and the caller's work, so this can exceed the wall time they took."""
    disk_hits: int = 0
    """how many kernels were loaded from the disk cache instead."""
    disk_seconds: float = 0.0
    """total time spent looking up and loading those."""


STATS = CompileStats()


class _Jit:
    def __init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        options = _llvm_options()
        for option in options:
            llvm.set_option("", option)
        self.opt_tms = {wide: _host_target_machine(wide) for wide in (False, True)}
        # the engine owns its target machine: never touch it again after this line
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _host_target_machine())
        self.objects: list[llvm.ObjectFileRef] = []
        self.loaded: dict[str, list[int]] = {}
        """IR text digest -> symbol addresses, for kernels already in the engine."""
        self.host = "\n".join([llvm.get_process_triple(), llvm.get_host_cpu_name(),
                               _features(), *options,
                               llvmlite.__version__, repr(llvm.llvm_version_info)])


def _host_target_machine(wide: bool = False) -> llvm.TargetMachine:
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=_features(wide),
                                        opt=3, jit=True)


def _jit() -> _Jit:
    global _state
    with _lock:
        if _state is None:
            _state = _Jit()
        return _state


@functools.cache
def host_features() -> Any:
    """This CPU's features as LLVM names them (``llvm.get_host_cpu_features()``, asked once)."""
    return llvm.get_host_cpu_features()


def compile_ir(text: str, symbols: list[str], unroll: bool = True, speed: int = 3,
               wide: bool = False) -> list[int]:
    """Optimize (O3, vectorizing) and load the LLVM IR ``text``, or load its object code from
    the disk cache; the addresses of ``symbols``. Compiling the same text again in a process
    returns the addresses already loaded (so symbol names must be unique per distinct text);
    a thread asking for a text another thread is compiling waits for that compile. Different
    texts compile at once on different threads (``_object``). ``unroll=False`` leaves loops
    as written: for code that is already blocked by hand (``fuser.cpu.stepgemm``), where
    unrolling only doubles the machine code and its compile time. ``speed`` is the optimizer's
    level (3: O3; 1: O1, for such code: ``stepgemm``'s kernels ran as fast after O1, in 70% of
    the compile time). ``wide``: vectorized in the core's widest vectors (``_FULL_WIDTH``),
    for code that runs long on its own (a native loop)."""
    jit = _jit()
    key = ((text if unroll else text + NO_UNROLL) + (f"\n; O{speed}\n" if speed != 3 else "")
           + (WIDE if wide else ""))
    digest = hashlib.sha256(key.encode()).hexdigest()
    while True:
        with _lock:
            addresses = jit.loaded.get(digest)
            if addresses is not None:
                return addresses
            running = _compiling.get(digest)
            if running is None:
                running = _compiling[digest] = threading.Event()
                break
        running.wait()  # another thread's compile: loaded when it ends (or failed: try here)
    try:  # (an exception between the mark and here would leave the mark: nothing runs there)
        addresses = _load(jit, text, digest, symbols, unroll, speed, wide)
    finally:
        with _lock:
            del _compiling[digest]
            _idle.notify_all()
        running.set()
    return addresses


WIDE = "\n; compiled in the widest vectors\n"
"""What a text compiled ``wide`` is keyed by in addition (caches in memory and on disk)."""

NO_UNROLL = "\n; compiled without loop unrolling\n"
"""What a text compiled with ``unroll=False`` is keyed by in addition (caches in memory and on
disk)."""

_compiling: dict[str, threading.Event] = {}
"""the digests of the texts being compiled now, each with the event its compile sets at the end
(under ``_lock``)."""
_idle = threading.Condition(_lock)
"""notified whenever a compile ends (``os.fork`` waits for none to be running)."""


def _before_fork() -> None:
    """A child process must not inherit a compile under way (its thread is not in the child,
    and the child's compile of that text would wait for it forever) nor llvmlite's lock held
    by another thread (every LLVM call in the child would wait for it: a thread that ends
    disposes of its target machine under it, whenever it ends): hold the JIT's lock, with no
    compile running, and llvmlite's, through the fork."""
    _lock.acquire()
    while _compiling:
        _idle.wait()
    llvm.ffi.lib._lock.__enter__()


def _after_fork() -> None:
    llvm.ffi.lib._lock.__exit__(None, None, None)
    _lock.release()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork,
                    after_in_child=_after_fork)


_background: set[Any] = set()
"""the keys of ``in_background`` compiles started (done or not)."""
_background_lock = threading.Lock()


def in_background(key: Any, compile_fn: Callable[[], Any]) -> None:
    """Run ``compile_fn()`` (which calls ``compile_ir``) on a thread of its own, once per
    ``key``, so that a kernel a function is about to need compiles beside the compiler's own
    Python work and its other kernels: LLVM runs with the GIL released and outside llvmlite's
    lock (``_object``), so on a second core they overlap. An error is dropped: the call that
    needs the kernel compiles it again and raises."""
    with _background_lock:
        if key in _background:
            return
        _background.add(key)

    def run() -> None:
        try:
            compile_fn()
        except Exception:  # noqa: BLE001 - compiled again, and reported, where it is needed
            pass

    threading.Thread(target=run, name="rnnscript-compile", daemon=True).start()


def _load(jit: _Jit, text: str, digest: str, symbols: list[str], unroll: bool,
          speed: int, wide: bool) -> list[int]:
    t0 = time.perf_counter()
    path = _entry_path(jit, digest)
    obj = _read_entry(path) if path is not None else None
    if obj is not None:
        with _lock:
            addresses = _add_object(jit, obj, symbols, digest)
            if all(addresses):
                STATS.disk_hits += 1
                STATS.disk_seconds += time.perf_counter() - t0
                return addresses
    obj = _object(text, unroll, speed, wide)
    with _lock:
        addresses = _add_object(jit, obj, symbols, digest)
        STATS.kernels += 1
        STATS.seconds += time.perf_counter() - t0
    for symbol, address in zip(symbols, addresses):
        if not address:
            raise RuntimeError(f"the JIT did not produce {symbol}")
    if path is not None:
        _write_entry(path, obj)
    return addresses


_local = threading.local()


def _thread_target_machine(wide: bool = False) -> llvm.TargetMachine:
    """This thread's target machine for the optimizer and code generator (one per ``wide``):
    LLVM's target machines are not shared between threads that compile at once."""
    tms = getattr(_local, "tms", None)
    if tms is None:
        tms = _local.tms = {}
    tm = tms.get(wide)
    if tm is None:
        tm = tms[wide] = _host_target_machine(wide)
    return tm


def _unlocked(name: str) -> Any:
    """llvmlite's C function ``name`` without llvmlite's process-wide lock around the call."""
    fn = getattr(llvm.ffi.lib, name)
    return getattr(fn, "_cfn", fn)


def _object(text: str, unroll: bool = True, speed: int = 3, wide: bool = False) -> bytes:
    """The object code of ``text``, optimized. llvmlite holds one lock around every call into
    LLVM, so a kernel compiling on one thread (``in_background``) would hold every other
    thread's LLVM calls for its whole compile, IR building included. Here the two long calls,
    the optimization pipeline and the code generator, run without that lock, on a module in
    an LLVM context of its own and with this thread's own target machine (what LLVM requires of
    threads that compile at once); the short calls around them keep the lock."""
    tm = _thread_target_machine(wide)
    context = llvm.create_context()
    try:
        mod = llvm.parse_assembly(text, context)
        try:  # the module closed before its context, whatever fails (verify included)
            _prepared(tm, mod)
            pb = llvm.create_pass_builder(tm, _tuning(unroll, speed))
            _unlocked("LLVMPY_RunNewModulePassManager")(pb.getModulePassManager(), mod, pb)
            with llvm.ffi.OutputString() as error:
                buffer = _unlocked("LLVMPY_TargetMachineEmitToMemory")(tm, mod, 1, error)
                if not buffer:
                    raise RuntimeError(str(error))
            try:
                return ctypes.string_at(llvm.ffi.lib.LLVMPY_GetBufferStart(buffer),
                                        llvm.ffi.lib.LLVMPY_GetBufferSize(buffer))
            finally:
                llvm.ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)
        finally:
            mod.close()
    finally:
        context.close()


def _prepared(tm: llvm.TargetMachine, mod: llvm.ModuleRef) -> llvm.ModuleRef:
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    return mod


def _tuning(unroll: bool, speed: int = 3) -> Any:
    pto = llvm.create_pipeline_tuning_options(speed_level=speed)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = unroll
    return pto


def _optimized_module(jit: _Jit, text: str, unroll: bool = True,
                      wide: bool = False) -> llvm.ModuleRef:
    """``text`` optimized in the global LLVM context, under llvmlite's lock (to inspect)."""
    tm = jit.opt_tms[wide]
    mod = _prepared(tm, llvm.parse_assembly(text))
    pb = llvm.create_pass_builder(tm, _tuning(unroll))
    pb.getModulePassManager().run(mod, pb)
    return mod


def _add_object(jit: _Jit, obj: bytes, symbols: list[str], digest: str) -> list[int]:
    """Load ``obj`` into the engine (under ``_lock``) and record its symbols' addresses."""
    ref = llvm.ObjectFileRef.from_data(obj)
    jit.engine.add_object_file(ref)
    jit.engine.finalize_object()
    jit.objects.append(ref)  # keep the Python handle alive as long as the engine
    addresses = [jit.engine.get_function_address(s) for s in symbols]
    if all(addresses):
        jit.loaded[digest] = addresses
    return addresses


# -- the disk cache --------------------------------------------------------------------------------
def cache_dir() -> Path | None:
    """Where compiled kernels are kept on disk; None when the disk cache is off."""
    if os.environ.get("RNNSCRIPT_DISK_CACHE", "1").strip().lower() in ("0", "false", "off"):
        return None
    base = os.environ.get("RNNSCRIPT_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "rnnscript"


def _entry_path(jit: _Jit, digest: str) -> Path | None:
    root = cache_dir()
    if root is None:
        return None
    key = hashlib.sha256(f"{jit.host}\n{digest}".encode()).hexdigest()
    return root / "cpu-kernels" / f"{key}.o"


def _read_entry(path: Path) -> bytes | None:
    """The object code stored at ``path``; None when missing, unreadable or corrupt."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 32
    if not data.startswith(_MAGIC) or len(data) <= head:
        return None
    obj = data[head:]
    if hashlib.sha256(obj).digest() != data[len(_MAGIC):head]:
        return None
    return obj


def _write_entry(path: Path, obj: bytes) -> None:
    """Store ``obj`` at ``path`` atomically (a temporary file renamed over it); errors only
    mean the kernel is not cached."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".o")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(obj).digest() + obj)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


def assembly(text: str, wide: bool = False) -> str:
    """The optimized host assembly of LLVM IR ``text`` (to inspect vectorization), compiled
    ``wide`` or not (``compile_ir``)."""
    jit = _jit()
    with _lock:
        return jit.opt_tms[wide].emit_assembly(_optimized_module(jit, text, wide=wide))
