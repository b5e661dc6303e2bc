"""The CUDA backend of the fuser: fusion groups emitted as CUDA C and launched through CuPy.

``compile_group(subgraph)`` returns a ``Kernel``; ``kernel(*inputs)`` takes CuPy arrays and Python
numbers in subgraph input order and returns new CuPy arrays (a tuple for several outputs), the
calling convention of ``fuser.cpu.compile_group``. Without a GPU the same sources are checked by
NVRTC (``fuser.cuda.nvrtc``) and run on the CPU through a small header emulating the CUDA thread
indices (``fuser.cuda.emulate``). CuPy is imported only when a kernel is made, and llvmlite never.
``BACKEND`` is what the rest of the fuser asks (``fuser.backend.backend_for("cuda")``).
"""

from fuser.backend import Backend
from fuser.cuda.codegen import (
    ACCEPTS,
    BOOL_RESULTS,
    FAST_MATH_RULES,
    RULES,
    STORAGE,
    KernelSource,
    Variant,
    analyze,
    generate,
)
from fuser.cuda.kernel import Kernel, cache_size, compile_group, compile_group_with

BACKEND = Backend("CUDA", ("cuda",), STORAGE, RULES, ACCEPTS, BOOL_RESULTS, compile_group)
"""CuPy arrays: float32, float64, float16 (computed in float32) and bool; no cat stores."""

__all__ = ["BACKEND", "FAST_MATH_RULES", "RULES", "Kernel", "KernelSource", "Variant", "analyze",
           "cache_size", "compile_group", "compile_group_with", "generate"]
