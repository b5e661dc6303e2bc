"""The generated CUDA C run on the CPU: the same source, compiled by the host's g++.

``cuda_cpu_shim.h`` (beside this file) makes a CUDA C kernel valid host C++ and provides
``cuda_cpu_launch``; each kernel source is built, with a small ``extern "C"`` wrapper taking
(grid, block, the kernel's parameters), into a shared library and called through ctypes on numpy
arrays. The launch goes through the same planning as on a GPU (``fuser.cuda.kernel``): the same
variants, offsets, strides, index widths and grid-stride loop, so a wrong index expression gives
wrong numbers here, not only on a device. The emulated device has few SMs and small blocks, so
even small tests run several blocks and several trips of the grid-stride loop.

Builds are cached per process, by source hash, in a temporary directory removed at exit; a build
takes about 0.4 s (g++ -O1).
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fuser.cuda import codegen
from fuser.cuda.codegen import KernelSource, Rule
from fuser.cuda.kernel import Kernel, Launch, compile_group_with
from ir.core import Graph

SHIM = Path(__file__).with_name("cuda_cpu_shim.h")
CXXFLAGS = ("-std=c++20", "-O1", "-shared", "-fPIC", "-w")
_CTYPES = {"int": ctypes.c_int32, "long long": ctypes.c_int64, "double": ctypes.c_double}


class EmulationError(RuntimeError):
    """g++ rejected a kernel source; the message holds its diagnostics."""


def compiler() -> str | None:
    """The host C++ compiler (``g++`` on PATH), or None."""
    return shutil.which("g++")


def unavailable_reason() -> str | None:
    """Why kernels cannot be emulated here, or None when they can."""
    if compiler() is None:
        return "g++ is not installed: the CUDA kernels cannot be emulated on the CPU"
    return None


_lock = threading.Lock()
_built: dict[str, Any] = {}
_build_dir: Path | None = None
builds = 0
"""How many libraries this process has compiled (the cache's misses)."""


def _directory() -> Path:
    global _build_dir
    if _build_dir is None:
        _build_dir = Path(tempfile.mkdtemp(prefix="rnnscript-cuda-emu-"))
        atexit.register(shutil.rmtree, _build_dir, True)
    return _build_dir


def wrapper(source: KernelSource) -> str:
    """``extern "C" void <name>_launch(unsigned grid, unsigned block, <kernel params>)``."""
    params = ", ".join(f"{t} {n}" for t, n in source.params)
    names = ", ".join(n for _, n in source.params)
    return (f'\nextern "C" void {source.name}_launch(unsigned grid, unsigned block, {params}) {{\n'
            f"    cuda_cpu_launch({source.name}, dim3{{grid}}, dim3{{block}}, {names});\n}}\n")


def argtype(ctype: str) -> Any:
    """The ctypes type of a kernel parameter's C type."""
    if ctype.endswith("__restrict__") or "*" in ctype:
        return ctypes.c_void_p
    return _CTYPES[ctype.removeprefix("const ").strip()]


def build(source: KernelSource) -> Any:
    """The ctypes function ``<name>_launch`` of ``source`` built with the shim (cached)."""
    global builds
    text = f'#include "{SHIM.name}"\n{source.text}{wrapper(source)}'
    digest = hashlib.sha1(text.encode()).hexdigest()
    fn = _built.get(digest)
    if fn is not None:
        return fn
    with _lock:
        fn = _built.get(digest)
        if fn is not None:
            return fn
        gxx = compiler()
        if gxx is None:
            raise EmulationError(unavailable_reason())
        cpp, lib = _directory() / f"{digest}.cpp", _directory() / f"{digest}.so"
        cpp.write_text(text)
        done = subprocess.run([gxx, *CXXFLAGS, "-I", str(SHIM.parent), str(cpp), "-o", str(lib)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise EmulationError(f"g++ failed on {source.name}:\n{done.stderr}")
        builds += 1
        fn = getattr(ctypes.CDLL(str(lib)), f"{source.name}_launch")
        fn.argtypes = [ctypes.c_uint, ctypes.c_uint, *(argtype(t) for t, _ in source.params)]
        fn.restype = None
        _built[digest] = fn
    return fn


class EmulatedRuntime:
    """A pretend device: numpy arrays, kernels built with g++ and run by ``cuda_cpu_launch``."""

    xp = np

    def __init__(self, sm_count: int = 2, block: int = 32, blocks_per_sm: int = 2,
                 rules: dict[str, Rule] | None = None, name: str = "emulated"):
        self.sms = sm_count
        self.block = block
        self.blocks_per_sm = blocks_per_sm
        self.rules = codegen.RULES if rules is None else rules
        self.name = name

    def is_array(self, a: Any) -> bool:
        return type(a) is np.ndarray

    def device(self) -> int:
        return 0

    def sm_count(self, device: int) -> int:
        return self.sms

    def load(self, source: KernelSource, device: int) -> Launch:
        fn = build(source)

        def launch(grid: int, block: int, args: Sequence[Any]) -> None:
            fn(grid, block, *[a.ctypes.data if isinstance(a, np.ndarray) else a.item()
                              for a in args])
        return launch


DEFAULT = EmulatedRuntime()
"""2 SMs of 2 blocks of 32 threads: 128 threads, so most test arrays loop."""


def compile_group(graph: Graph, runtime: EmulatedRuntime | None = None) -> Kernel:
    """The kernel of a fusion group's subgraph run on the CPU emulation: the calling convention of
    ``fuser.cuda.compile_group`` with numpy arrays (numpy in, numpy out)."""
    return compile_group_with(graph, DEFAULT if runtime is None else runtime)
