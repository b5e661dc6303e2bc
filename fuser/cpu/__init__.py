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


def matmul_for(node):  # type: ignore[no-untyped-def]
    """The product function of a 2-D ``tensor::matmul`` outside loops: a ``fuser.cpu.products.
    Site`` of its own, or None: numpy's ``@``."""
    a, b = (v.type for v in node.inputs)
    if a.shape is None or b.shape is None or None in a.shape or None in b.shape \
            or a.dtype != b.dtype:
        return None
    from fuser.cpu import products
    found = products.matmul_for(a.shape[0], b.shape[1], a.shape[1], a.dtype)
    return products.Site(False) if found is not None else None


def matmul_sum_for(node):  # type: ignore[no-untyped-def]
    """The product function of a ``tensor::matmul_sum`` of 2-D operands of static shapes and
    one dtype outside loops (``fuser.cpu.products.matmul_sum``), or None."""
    types = [v.type for v in node.inputs]
    if any(t.shape is None or len(t.shape) != 2 or None in t.shape for t in types) \
            or len({t.dtype for t in types}) != 1:
        return None
    from fuser.cpu import products
    m, n = types[0].shape[0], types[1].shape[1]
    depth = sum(t.shape[1] for t in types[::2])
    found = products.matmul_sum_for(m, n, depth, types[0].dtype)
    return products.Site(True) if found is not None else None


def epilogue_for(product, group, product_too=False, arrays=()):  # type: ignore[no-untyped-def]
    """The product and the fusion group reading it as one job (``fuser.cpu.epilogue.Fused``,
    returning the product first with ``product_too``) where the product runs the host-vector
    GEMM and the group is elementwise over the product's shape, or over equal column blocks of
    it (an LSTM's gates); None otherwise. ``arrays``: ``Fused.arrays``."""
    site = (matmul_sum_for if product.kind == "tensor::matmul_sum" else matmul_for)(product)
    if site is None:
        return None
    (m, n), shapes = product.output.type.shape, {getattr(v.type, "shape", None)
                                                 for v in group.outputs}
    from fuser.cpu import products
    if product.kind != "tensor::matmul_sum" and \
            m * n * product.inputs[0].type.shape[1] >= products.NUMPY_MIN_PRODUCT:
        return None  # numpy's (``products.NUMPY_MIN_PRODUCT``), then the group
    if len(shapes) != 1:
        return None
    (shape,) = shapes  # the product's, or (m, n / parts): its columns read in parts (gates)
    if shape is None or len(shape) != 2 or shape[0] != m or not shape[1] or n % shape[1]:
        return None
    try:
        kernel = compile_group(group.subgraph)
    except ValueError:
        return None
    if kernel.has_cat:
        return None
    from fuser.cpu import epilogue
    positions = tuple(k for k, v in enumerate(group.inputs) if v is product.output)
    return epilogue.Fused(kernel.site(), len(product.inputs), positions, product_too, arrays)


BACKEND = Backend("CPU", (None, "cpu"), STORAGE, RULES, ACCEPTS, BOOL_RESULTS, compile_group,
                  stores_cats=True, compile_loop=compile_loop, matmul_for=matmul_for,
                  matmul_sum_for=matmul_sum_for, epilogue_for=epilogue_for)
"""numpy arrays on the host: float32, float64 and bool; stores cat pieces at offsets; recurrent
loops compiled natively; large matrix products through the host-vector GEMM, an elementwise
group after one as its epilogue."""

__all__ = ["BACKEND", "RULES", "VIEW_OPS", "Kernel", "cache_size", "can_generate",
           "canonical_key", "compile_group", "compile_loop", "epilogue_for", "layouts_supported",
           "matmul_for", "matmul_sum_for"]
