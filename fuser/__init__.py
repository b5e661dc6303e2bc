"""Elementwise fusion: group formation (``fuser.group``) and native kernels (``fuser.cpu``).

Fusion can be turned off for comparison: ``RNNSCRIPT_FUSION=0`` in the environment,
``fuser.set_enabled(False)``, or ``with fuser.disabled(): ...``. When off, ``fuse_elementwise``
leaves graphs unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_enabled: bool | None = None


def set_enabled(enabled: bool) -> None:
    """Turn fusion on or off for this process (overrides RNNSCRIPT_FUSION)."""
    global _enabled
    _enabled = bool(enabled)


def is_enabled() -> bool:
    """Whether group formation runs: the last ``set_enabled``, else RNNSCRIPT_FUSION (default
    on)."""
    if _enabled is not None:
        return _enabled
    return os.environ.get("RNNSCRIPT_FUSION", "1").strip().lower() not in ("0", "false", "off")


@contextmanager
def disabled() -> Iterator[None]:
    """Within the ``with`` block, fusion is off."""
    global _enabled
    saved = _enabled
    _enabled = False
    try:
        yield
    finally:
        _enabled = saved


def register_passes() -> None:
    """Register the ``fuse-elementwise``, ``fuse-updates`` and ``matmul-sums`` passes with
    ``passes`` (idempotent). Importing ``fuser`` registers nothing: the runtime calls this
    when it builds its pipelines (``script.runtime.pipelines``)."""
    from fuser import matmul_sums, updates
    from fuser.group import fuse_elementwise
    from passes import register_pass
    register_pass("fuse-elementwise", fuse_elementwise)
    register_pass(matmul_sums.NAME, matmul_sums.run)
    register_pass(updates.NAME, updates.run)


PRODUCTS = ("tensor::matmul", "tensor::matmul_sum", "tensor::dot", "tensor::linear")
"""The ops that become matrix products (``np.dot`` and ``linear`` are lowered to matmuls by the
passes ``prefetch`` runs before)."""


def prefetch(graph: Any) -> None:
    """Start compiling, on a thread of its own, the product kernel a specialized ``graph`` will
    call (``fuser.cpu.stepgemm.prefetch``): for its products inside loops (the native loop's
    step products) and its float32 products outside loops large enough to leave numpy
    (``fuser.cpu.products.matmul_for``), on the host. Called before the graph is optimized,
    so the compile runs beside the optimizer."""
    from fuser.cpu import products, stepgemm
    wanted = set()
    for top in graph.nodes():
        for node in (top, *top.walk()):
            t = node.outputs[0].type if node.kind in PRODUCTS and node.outputs else None
            if getattr(t, "device", "cuda") not in (None, "cpu") or not t.shape or \
                    t.dtype not in ("float32", "float64"):
                continue  # (no shape: a dot product of vectors)
            if node is not top or _outside_size(node) is not None and products.matmul_for(
                    *_outside_size(node), t.dtype) is not None:
                wanted.add(t.dtype == "float64")
    for double in wanted:
        stepgemm.prefetch(double)


def _outside_size(node: Any) -> tuple[int, int, int] | None:
    """(m, n, k) of a matrix product of static shapes (``linear``: x times W's transpose)."""
    a, b = (getattr(v.type, "shape", None) for v in node.inputs[:2])
    if a is None or b is None or None in a or None in b or len(a) < 1 or len(b) != 2:
        return None
    m = 1
    for d in a[:-1]:
        m *= d
    n = b[0] if node.kind == "tensor::linear" else b[1]
    return m, n, a[-1]


__all__ = ["PRODUCTS", "disabled", "is_enabled", "prefetch", "register_passes", "set_enabled"]
