"""The CPU backend of the fuser: fusion groups compiled to vectorized native loops with llvmlite.

``compile_group(subgraph)`` returns a ``Kernel``; ``kernel(*inputs)`` takes numpy arrays and
Python numbers in subgraph input order and returns new arrays (a tuple for several outputs).
``BACKEND`` is what the rest of the fuser asks (``fuser.backend.backend_for(None)``).
"""

from fuser.backend import Backend
from fuser.cpu.codegen import ACCEPTS, BOOL_RESULTS, RULES, STORAGE, VIEW_OPS, can_generate
from fuser.cpu.kernel import Kernel, cache_size, canonical_key, compile_group, layouts_supported


def compile_loop(node):  # type: ignore[no-untyped-def]
    """A ``prim::Loop`` compiled to one native function (``fuser.cpu.loop``), imported on first
    use."""
    from fuser.cpu import loop
    if not loop.enabled():
        raise loop.LoopRefused("native loops are off (RNNSCRIPT_NATIVE_LOOPS=0)")
    return loop.compile_loop(node)


BACKEND = Backend("CPU", (None, "cpu"), STORAGE, RULES, ACCEPTS, BOOL_RESULTS, compile_group,
                  stores_cats=True, compile_loop=compile_loop)
"""numpy arrays on the host: float32, float64 and bool; stores cat pieces at offsets; recurrent
loops compiled natively."""

__all__ = ["BACKEND", "RULES", "VIEW_OPS", "Kernel", "cache_size", "can_generate",
           "canonical_key", "compile_group", "compile_loop", "layouts_supported"]
