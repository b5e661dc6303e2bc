"""Elementwise fusion: group formation (``fuser.group``) and native kernels (``fuser.cpu``).

Fusion can be turned off for comparison: ``RNNSCRIPT_FUSION=0`` in the environment,
``fuser.set_enabled(False)``, or ``with fuser.disabled(): ...``. When off, ``fuse_elementwise``
leaves graphs unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

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


__all__ = ["disabled", "is_enabled", "register_passes", "set_enabled"]
