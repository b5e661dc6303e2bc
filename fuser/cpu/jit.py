"""The process-wide LLVM JIT: one MCJIT engine for the host CPU that every kernel is loaded into,
and an on-disk cache of the kernels' object code.

llvmlite 0.50 facts this module relies on:
- ``llvm.initialize()`` raises; only the native target and asm printer are initialized.
- The legacy pass manager is gone: the O3 pipeline runs through ``create_pass_builder``.
- ``create_mcjit_compiler(module, tm)`` takes ownership of ``tm``; dropping the engine and reusing
  ``tm`` crashes. So the engine gets its own target machine and lives as long as the process; the
  optimizer and code generator use a second target machine.

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
    return _PREDICATED if llvm.get_host_cpu_features().get("avx512f") else ()


_MAGIC = b"rnnscript-kernel-object-1\n"
"""Header of a cache entry (then the sha256 of the object, then the object)."""


@dataclass
class CompileStats:
    """Counters for the kernels compiled or loaded in this process."""

    kernels: int = 0
    """how many kernels were compiled (optimization and machine code ran)."""
    seconds: float = 0.0
    """total time spent compiling them."""
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
        self.opt_tm = _host_target_machine()
        # the engine owns its target machine: never touch it again after this line
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _host_target_machine())
        self.objects: list[llvm.ObjectFileRef] = []
        self.loaded: dict[str, list[int]] = {}
        """IR text digest -> symbol addresses, for kernels already in the engine."""
        self.host = "\n".join([llvm.get_process_triple(), llvm.get_host_cpu_name(),
                               llvm.get_host_cpu_features().flatten(), *options,
                               llvmlite.__version__, repr(llvm.llvm_version_info)])


def _host_target_machine() -> llvm.TargetMachine:
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, jit=True)


def _jit() -> _Jit:
    global _state
    with _lock:
        if _state is None:
            _state = _Jit()
        return _state


def compile_ir(text: str, symbols: list[str], unroll: bool = True) -> list[int]:
    """Optimize (O3, vectorizing) and load the LLVM IR ``text``, or load its object code from
    the disk cache; the addresses of ``symbols``. Compiling the same text again in a process
    returns the addresses already loaded (so symbol names must be unique per distinct text).
    ``unroll=False`` leaves loops as written: for code that is already blocked by hand
    (``fuser.cpu.stepgemm``), where unrolling only doubles the machine code and its compile
    time."""
    jit = _jit()
    digest = hashlib.sha256((text if unroll else text + NO_UNROLL).encode()).hexdigest()
    with _lock:
        addresses = jit.loaded.get(digest)
        if addresses is None:
            addresses = _load(jit, text, digest, symbols, unroll)
            jit.loaded[digest] = addresses
    return addresses


NO_UNROLL = "\n; compiled without loop unrolling\n"
"""What a text compiled with ``unroll=False`` is keyed by in addition (caches in memory and on
disk)."""


_background: set[Any] = set()
"""the keys of ``in_background`` compiles started (done or not)."""
_background_lock = threading.Lock()


def in_background(key: Any, compile_fn: Callable[[], Any]) -> None:
    """Run ``compile_fn()`` (which calls ``compile_ir``) on a thread of its own, once per
    ``key``, so that a kernel a function is about to need compiles beside the compiler's own
    Python work: LLVM runs with the GIL released (llvmlite's calls are ctypes calls), so on a
    second core the two overlap. An error is dropped: the call that needs the kernel compiles
    it again and raises. ``os.fork`` waits for a compile under way (the JIT's lock would stay
    held in the child otherwise)."""
    with _background_lock:  # not the JIT's lock: a compile holds that one throughout
        if key in _background:
            return
        if not _background:
            os.register_at_fork(before=_lock.acquire, after_in_parent=_lock.release,
                                after_in_child=_lock.release)
        _background.add(key)

    def run() -> None:
        try:
            compile_fn()
        except Exception:  # noqa: BLE001 - compiled again, and reported, where it is needed
            pass

    threading.Thread(target=run, name="rnnscript-compile", daemon=True).start()


def _load(jit: _Jit, text: str, digest: str, symbols: list[str],
          unroll: bool = True) -> list[int]:
    t0 = time.perf_counter()
    path = _entry_path(jit, digest)
    obj = _read_entry(path) if path is not None else None
    if obj is not None:
        addresses = _add_object(jit, obj, symbols)
        if all(addresses):
            STATS.disk_hits += 1
            STATS.disk_seconds += time.perf_counter() - t0
            return addresses
    obj = _compile_object(jit, text, unroll)
    addresses = _add_object(jit, obj, symbols)
    STATS.kernels += 1
    STATS.seconds += time.perf_counter() - t0
    for symbol, address in zip(symbols, addresses):
        if not address:
            raise RuntimeError(f"the JIT did not produce {symbol}")
    if path is not None:
        _write_entry(path, obj)
    return addresses


def _optimized_module(jit: _Jit, text: str, unroll: bool = True) -> llvm.ModuleRef:
    mod = llvm.parse_assembly(text)
    mod.triple = jit.opt_tm.triple
    mod.data_layout = str(jit.opt_tm.target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = unroll
    pb = llvm.create_pass_builder(jit.opt_tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def _compile_object(jit: _Jit, text: str, unroll: bool = True) -> bytes:
    return jit.opt_tm.emit_object(_optimized_module(jit, text, unroll))


def _add_object(jit: _Jit, obj: bytes, symbols: list[str]) -> list[int]:
    ref = llvm.ObjectFileRef.from_data(obj)
    jit.engine.add_object_file(ref)
    jit.engine.finalize_object()
    jit.objects.append(ref)  # keep the Python handle alive as long as the engine
    return [jit.engine.get_function_address(s) for s in symbols]


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


def assembly(text: str) -> str:
    """The optimized host assembly of LLVM IR ``text`` (to inspect vectorization)."""
    jit = _jit()
    with _lock:
        return jit.opt_tm.emit_assembly(_optimized_module(jit, text))
