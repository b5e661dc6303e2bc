"""CUDA C to PTX with NVRTC, without a GPU: the check CI runs on every generated kernel.

CuPy's own ``compile_using_nvrtc`` asks the current device for its architecture (and fails when
there is none), so this calls the low-level ``cupy.cuda.nvrtc`` bindings with explicit
``-arch=compute_XX`` options instead. NVRTC itself comes from the ``nvidia-cuda-nvrtc`` wheel,
pinned to 13.0.x: newer releases emit a PTX ISA version (``.version``) that older drivers and
ptxas 13.0 reject.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

DEFAULT_ARCHS = ("sm_80", "sm_90")
"""Ampere and Hopper: the architectures every generated kernel is checked for."""
OPTIONS = ("-std=c++17",)


class CompileError(RuntimeError):
    """NVRTC rejected a source; the message holds NVRTC's log."""


def unavailable_reason() -> str | None:
    """Why NVRTC cannot be used in this process, or None when it can."""
    try:
        from cupy.cuda import nvrtc
    except ImportError as e:
        return f"cupy is not installed ({e}); install the 'cuda' extra"
    try:
        nvrtc.getVersion()
    except Exception as e:  # the library is loaded lazily; a missing one raises here
        return f"libnvrtc cannot be loaded ({type(e).__name__}: {e}); install nvidia-cuda-nvrtc"
    return None


def version() -> tuple[int, int]:
    """NVRTC's (major, minor) version."""
    from cupy.cuda import nvrtc
    return tuple(nvrtc.getVersion())  # type: ignore[return-value]


def compile_to_ptx(source: str, arch: str = "sm_90", options: Iterable[str] = OPTIONS,
                   name: str = "kernel.cu") -> str:
    """The PTX of ``source`` for ``arch`` (``sm_80``, ``compute_90``, ``90``, ...).

    Raises CompileError with NVRTC's log when the source does not compile.
    """
    from cupy.cuda import nvrtc
    opts = [f"-arch=compute_{_arch_number(arch)}", *options]
    prog = nvrtc.createProgram(source, name, [], [])
    try:
        try:
            nvrtc.compileProgram(prog, opts)
        except nvrtc.NVRTCError as e:
            raise CompileError(f"NVRTC failed for {arch}:\n{nvrtc.getProgramLog(prog)}") from e
        ptx = nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    return ptx.decode() if isinstance(ptx, bytes) else ptx


def compile_for(source: str, archs: Iterable[str] = DEFAULT_ARCHS) -> dict[str, str]:
    """The PTX of ``source`` for each of ``archs``."""
    return {arch: compile_to_ptx(source, arch) for arch in archs}


def ptx_version(ptx: str) -> tuple[int, int]:
    """The PTX ISA version a module declares (``.version 9.0`` -> (9, 0))."""
    m = re.search(r"^\.version\s+(\d+)\.(\d+)", ptx, re.MULTILINE)
    if m is None:
        raise ValueError("no .version directive in the PTX")
    return int(m.group(1)), int(m.group(2))


def entry_points(ptx: str) -> list[str]:
    """The names of the kernels (``.entry``) a PTX module defines."""
    return re.findall(r"\.entry\s+([A-Za-z_][A-Za-z0-9_$]*)", ptx)


def _arch_number(arch: str) -> str:
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)[a-z]?", arch)
    if m is None:
        raise ValueError(f"not a CUDA architecture: {arch!r}")
    return m.group(1)
