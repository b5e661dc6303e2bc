"""The process-wide LLVM JIT: one MCJIT engine for the host CPU that every kernel is added to.

llvmlite 0.50 facts this module relies on:
- ``llvm.initialize()`` raises; only the native target and asm printer are initialized.
- The legacy pass manager is gone: the O3 pipeline runs through ``create_pass_builder``.
- ``create_mcjit_compiler(module, tm)`` takes ownership of ``tm``; dropping the engine and reusing
  ``tm`` crashes. So the engine gets its own target machine, lives as long as the process, and
  kernels are added with ``add_module``; the optimizer uses a second target machine.
- Kernels are built for the host CPU name and features (AVX-512 where present), so object code is
  never valid on another machine; nothing compiled here is written to disk.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import llvmlite.binding as llvm

_lock = threading.RLock()
_state: _Jit | None = None


@dataclass
class CompileStats:
    """Counters for the kernels compiled in this process."""

    kernels: int = 0
    """how many kernels were compiled."""
    seconds: float = 0.0
    """total time spent compiling them (optimization and machine code)."""


STATS = CompileStats()


class _Jit:
    def __init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        # fold the loop remainder into one masked vector loop (AVX-512 masks) instead of a
        # vector epilogue plus a scalar loop: half the machine code and about half the compile
        # time, same speed (measured on the LSTM cell's kernel)
        llvm.set_option("", "-prefer-predicate-over-epilogue=predicate-else-scalar-epilogue")
        self.opt_tm = _host_target_machine()
        # the engine owns its target machine: never touch it again after this line
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _host_target_machine())
        self.modules: list[llvm.ModuleRef] = []
        self.counter = 0


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


def unique_name(prefix: str) -> str:
    """A symbol name no other kernel in this process uses."""
    jit = _jit()
    with _lock:
        jit.counter += 1
        return f"{prefix}_{jit.counter}"


def compile_ir(text: str, symbol: str) -> int:
    """Optimize (O3, vectorizing) and load the LLVM IR ``text``; the address of ``symbol``."""
    jit = _jit()
    with _lock:
        t0 = time.perf_counter()
        mod = llvm.parse_assembly(text)
        mod.triple = jit.opt_tm.triple
        mod.data_layout = str(jit.opt_tm.target_data)
        mod.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(jit.opt_tm, pto)
        pb.getModulePassManager().run(mod, pb)
        jit.engine.add_module(mod)
        jit.engine.finalize_object()
        jit.modules.append(mod)  # the engine owns the module; keep the Python handle alive too
        address = jit.engine.get_function_address(symbol)
        STATS.kernels += 1
        STATS.seconds += time.perf_counter() - t0
    if not address:
        raise RuntimeError(f"the JIT did not produce {symbol}")
    return address


def assembly(text: str) -> str:
    """The optimized host assembly of LLVM IR ``text`` (to inspect vectorization)."""
    jit = _jit()
    with _lock:
        mod = llvm.parse_assembly(text)
        mod.triple = jit.opt_tm.triple
        mod.data_layout = str(jit.opt_tm.target_data)
        pb = llvm.create_pass_builder(jit.opt_tm, llvm.create_pipeline_tuning_options(3))
        pb.getModulePassManager().run(mod, pb)
        return jit.opt_tm.emit_assembly(mod)
