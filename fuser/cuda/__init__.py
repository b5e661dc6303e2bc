"""The CUDA backend of the fuser: fusion groups emitted as CUDA C and launched through CuPy.

``compile_group(subgraph)`` returns a ``Kernel``; ``kernel(*inputs)`` takes CuPy arrays and Python
numbers in subgraph input order and returns new CuPy arrays (a tuple for several outputs), the
calling convention of ``fuser.cpu.compile_group``. Without a GPU the same sources are checked by
NVRTC (``fuser.cuda.nvrtc``) and run on the CPU through a small header emulating the CUDA thread
indices (``fuser.cuda.emulate``). CuPy is imported only when a kernel is made.
"""

from fuser.cuda.codegen import FAST_MATH_RULES, RULES, KernelSource, Variant, analyze, generate
from fuser.cuda.kernel import Kernel, cache_size, compile_group, compile_group_with

__all__ = ["FAST_MATH_RULES", "RULES", "Kernel", "KernelSource", "Variant", "analyze",
           "cache_size", "compile_group", "compile_group_with", "generate"]
