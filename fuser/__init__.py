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
    """Register the ``fuse-elementwise`` and ``matmul-sums`` passes with ``passes``
    (idempotent). Importing ``fuser`` registers nothing: the runtime calls this when it builds
    its pipelines (``script.runtime.pipelines``)."""
    from fuser import matmul_sums
    from fuser.group import fuse_elementwise
    from passes import register_pass
    register_pass("fuse-elementwise", fuse_elementwise)
    register_pass(matmul_sums.NAME, matmul_sums.run)


PRODUCTS = ("tensor::matmul", "tensor::matmul_sum", "tensor::dot", "tensor::linear")
"""The ops that become matrix products (``np.dot`` and ``linear`` are lowered to matmuls by the
passes ``prefetch`` runs before)."""


def prefetch(graph: Any) -> None:
    """Start compiling, on a thread of its own, the product kernel a specialized ``graph`` will
    call (``fuser.cpu.stepgemm.prefetch``): its float32 products (inside loops or outside) and
    its float64 products inside loops, on the host. Called before the graph is optimized, so
    the compile runs beside the optimizer."""
    wanted = set()
    for top in graph.nodes():
        for node in (top, *top.walk()):
            t = node.outputs[0].type if node.kind in PRODUCTS and node.outputs else None
            if getattr(t, "device", "cuda") not in (None, "cpu"):
                continue
            if not t.shape:  # a dot product of vectors: no matrix product
                continue
            if t.dtype == "float32" or (t.dtype == "float64" and node is not top):
                wanted.add(t.dtype == "float64")
    if wanted:
        from fuser.cpu import stepgemm
        for double in wanted:
            stepgemm.prefetch(double)


__all__ = ["PRODUCTS", "disabled", "is_enabled", "prefetch", "register_passes", "set_enabled"]
