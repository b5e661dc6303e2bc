"""The CPU backend of the fuser: fusion groups compiled to vectorized native loops with llvmlite.

``compile_group(subgraph)`` returns a ``Kernel``; ``kernel(*inputs)`` takes numpy arrays and
Python numbers in subgraph input order and returns new arrays (a tuple for several outputs).
"""

from fuser.cpu.codegen import RULES, VIEW_OPS, can_generate
from fuser.cpu.kernel import Kernel, cache_size, canonical_key, compile_group, layouts_supported

__all__ = ["RULES", "VIEW_OPS", "Kernel", "cache_size", "can_generate", "canonical_key",
           "compile_group", "layouts_supported"]
