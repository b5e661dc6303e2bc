"""CUDA fusion kernels: layouts, launch configuration, the kernel cache and the CuPy launch.

A ``Kernel`` is shared by every group with the same structure, dtypes and broadcast pattern
(``fuser.layout.canonical_key``); sizes are run-time arguments, so a new batch size reuses it.
On a call:

1. inputs are checked to be arrays of the runtime (CuPy, or numpy for the emulation) with the
   compiled dtype (converted otherwise);
2. the *plan* for this device and these input shapes and strides is looked up (built once per
   layout): the output shape, the collapsed iteration space, each leaf's element offset and
   strides, the ``Variant`` they imply (``fuser.cuda.codegen``), the launch configuration and the
   integer arguments;
3. outputs are allocated with ``empty`` and the kernel is launched once.

The launch configuration depends only on the element count and the device's SM count: blocks of
``BLOCK`` threads, at most ``BLOCKS_PER_SM`` per SM (a full wave), the grid-stride loop covering the
rest. 32-bit indexing is chosen when every index the launch can form fits in an ``int``.

Sources are generated once per (kernel, variant) and compiled once per (source, device), under a
lock, by the runtime: ``CupyRuntime`` (``cupy.RawKernel``, NVRTC at the device's architecture) or
the CPU emulation in ``fuser.cuda.emulate``. The reads of a layout, the dimension collapsing and
the kernel cache are ``fuser.layout``'s, shared with the CPU backend.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from fuser.cuda import codegen
from fuser.cuda.codegen import FLAT, KernelSource, KernelSpec, Rule, Variant
from fuser.layout import (
    KernelCache,
    array_slots,
    canonical_key,
    collapse,
    contiguous_layouts,
    read_layout,
)
from ir.core import Graph

BLOCK = 256
"""Threads per block."""
BLOCKS_PER_SM = 8
"""Resident blocks per SM at ``BLOCK`` threads (2048 threads per SM on sm_80 and sm_90)."""
INT32_MAX = 2**31 - 1

Launch = Callable[[int, int, Sequence[Any]], None]
"""``launch(grid, block, args)``: runs a compiled kernel with its arguments in parameter order."""


class Runtime(Protocol):
    """Where CUDA kernels run: CuPy on a GPU, or the CPU emulation (``fuser.cuda.emulate``).
    Not to be confused with ``fuser.backend.Backend``: the CUDA backend has several runtimes."""

    name: str
    xp: ModuleType
    """the array module: ``cupy`` or ``numpy``."""
    rules: dict[str, Rule]
    block: int
    blocks_per_sm: int

    def is_array(self, a: Any) -> bool: ...

    def device(self) -> int: ...

    def sm_count(self, device: int) -> int: ...

    def load(self, source: KernelSource, device: int) -> Launch: ...


# -- layouts ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Layout:
    """The iteration space of one call and where each leaf is read in it."""

    shape: tuple[int, ...]
    """the output shape."""
    dims: tuple[int, ...]
    """the collapsed iteration space, outermost first (at least one dimension)."""
    offsets: tuple[int, ...]
    """each leaf's element offset (chunks)."""
    strides: tuple[tuple[int, ...], ...]
    """each leaf's element stride per collapsed dimension (0 where it broadcasts)."""

    @property
    def n(self) -> int:
        return math.prod(self.shape)


def plan_layout(spec: KernelSpec, layouts: Sequence[tuple[tuple[int, ...], tuple[int, ...], int]]
                ) -> Layout | None:
    """The layout for array inputs of these (shape, byte strides, itemsize), in array-input order;
    None when a stride is not a whole number of elements. Nothing is allocated, so any size can be
    planned."""
    reads = read_layout(spec, layouts)
    if reads is None:
        return None
    dims = collapse(reads.shape, reads.aligned())
    if not dims:
        dims = [(1, [0] * len(spec.leaves))]
    return Layout(reads.shape, tuple(size for size, _ in dims), reads.offsets,
                  tuple(tuple(st[k] for _, st in dims) for k in range(len(spec.leaves))))


def access_of(layout: Layout) -> tuple[tuple[int, ...] | None, ...]:
    """Per leaf: ``FLAT`` when it steps like the output, else its per-dimension stride classes."""
    contiguous = []
    step = 1
    for size in reversed(layout.dims):
        contiguous.insert(0, step)
        step *= size
    access: list[tuple[int, ...] | None] = []
    for st in layout.strides:
        if list(st) == contiguous:
            access.append(FLAT)
        else:
            access.append(tuple(0 if s == 0 else 1 if s == 1 else 2 for s in st))
    return tuple(access)


def launch_config(n: int, sm_count: int, block: int = BLOCK,
                  blocks_per_sm: int = BLOCKS_PER_SM) -> tuple[int, int]:
    """(grid, block) for ``n`` elements: enough blocks to cover ``n``, at most one full wave."""
    if n <= 0:
        return 0, block
    return max(1, min(-(-n // block), sm_count * blocks_per_sm)), block


def index_bits(layout: Layout, threads: int) -> int:
    """32 when every index the kernel forms fits in an ``int``, else 64.

    The grid-stride loop forms ``i + threads`` for ``i < n``; a leaf's index is its offset plus
    signed terms ``coordinate * stride``, so every partial sum lies between the offset plus the
    negative terms and the offset plus the positive ones.
    """
    if layout.n + threads > INT32_MAX:
        return 64
    for offset, strides in zip(layout.offsets, layout.strides):
        terms = [(size - 1) * s for size, s in zip(layout.dims, strides)]
        high = offset + sum(t for t in terms if t > 0)
        low = offset + sum(t for t in terms if t < 0)
        if high > INT32_MAX or low < -INT32_MAX:
            return 64
    return 32


def layout_arguments(variant: Variant, layout: Layout) -> list[int]:
    """The integer arguments in parameter order: ``n``, the sizes of dimensions 1.., then per leaf
    its offset and its run-time (class 2) strides."""
    args = [layout.n, *layout.dims[1:]]
    for access, offset, strides in zip(variant.access, layout.offsets, layout.strides):
        args.append(offset)
        if access is not FLAT:
            args += [s for s, c in zip(strides, access) if c == 2]
    return args


# -- kernels ---------------------------------------------------------------------------------------
@dataclass
class Plan:
    """How to call a kernel for one device and layout of its inputs."""

    shape: tuple[int, ...]
    """the output shape."""
    launch: Launch | None
    """the compiled kernel (None when there is nothing to compute)."""
    grid: int
    block: int
    ints: list[Any]
    """the integer arguments as numpy scalars of the index width."""
    variant: Variant | None


_lock = threading.RLock()


class Kernel:
    """A fusion group for one runtime (``fuser.backend.Kernel``): ``kernel(*inputs)`` returns its
    output(s) as new arrays of the runtime's array module."""

    def __init__(self, spec: KernelSpec, key: str, runtime: Runtime):
        self.spec = spec
        self.key = key
        """the cache key: canonical structure, dtypes and broadcast pattern."""
        self.runtime = runtime
        """the runtime the kernel is compiled for and launched on."""
        self.n_inputs = len(spec.graph.inputs)
        self.array_slots = array_slots(spec)
        self.out_dtypes = [np.dtype(d) for d in spec.out_dtypes]
        self.sources: dict[Variant, KernelSource] = {}
        self.plans: dict[tuple, Plan] = {}

    def __repr__(self) -> str:
        return (f"<fuser.cuda.Kernel on {self.runtime.name}: {len(self.sources)} variant(s), "
                f"{self.n_inputs} inputs>")

    # -- calling -------------------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        if len(args) != self.n_inputs:
            raise TypeError(f"kernel takes {self.n_inputs} inputs, got {len(args)}")
        runtime, xp = self.runtime, self.runtime.xp
        arrays = []
        for i, dtype in self.array_slots:
            a = args[i]
            if not runtime.is_array(a) or a.dtype != dtype:
                a = xp.asarray(a, dtype=dtype)
            arrays.append(a)
        device = runtime.device()
        key = (device, *[(a.shape, a.strides) for a in arrays])
        plan = self.plans.get(key)
        if plan is None:
            arrays, plan = self._plan_for(arrays, device, key)
        outs = [xp.empty(plan.shape, d) for d in self.out_dtypes]
        if plan.launch is not None:
            scalars = [np.float64(args[i]) for i in self.spec.scalar_inputs]
            plan.launch(plan.grid, plan.block, [*outs, *arrays, *plan.ints, *scalars])
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _plan_for(self, arrays: list[Any], device: int, key: tuple | None) -> tuple[list, Plan]:
        plan = self.make_plan([(a.shape, a.strides, a.itemsize) for a in arrays], device)
        if plan is None:  # strides that are not whole elements: compute on contiguous copies
            arrays = [self.runtime.xp.ascontiguousarray(a) for a in arrays]
            return arrays, self._plan_for(arrays, device, None)[1]
        if key is not None:
            with _lock:
                self.plans[key] = plan
        return arrays, plan

    def make_plan(self, layouts: Sequence[tuple[tuple[int, ...], tuple[int, ...], int]],
                  device: int = 0, compile: bool = True) -> Plan | None:
        """The plan for array inputs of these (shape, byte strides, itemsize) on ``device``; None
        when a stride is not a whole number of elements. ``compile=False`` plans without building
        the kernel (to inspect the variant of a layout too large to allocate)."""
        layout = plan_layout(self.spec, layouts)
        if layout is None:
            return None
        runtime = self.runtime
        if layout.n == 0:
            return Plan(layout.shape, None, 0, runtime.block, [], None)
        grid, block = launch_config(layout.n, runtime.sm_count(device), runtime.block,
                                    runtime.blocks_per_sm)
        variant = Variant(len(layout.dims), access_of(layout), index_bits(layout, grid * block))
        scalar = np.int32 if variant.index_bits == 32 else np.int64
        ints = [scalar(v) for v in layout_arguments(variant, layout)]
        launch = self.launcher(variant, device) if compile else None
        return Plan(layout.shape, launch, grid, block, ints, variant)

    # -- sources and compiled code ------------------------------------------------------------
    def source(self, variant: Variant) -> KernelSource:
        """The CUDA C of a variant (generated once)."""
        src = self.sources.get(variant)
        if src is None:
            with _lock:
                src = self.sources.get(variant)
                if src is None:
                    src = codegen.generate(self.spec, variant, self.runtime.rules,
                                           name=self._name(variant))
                    self.sources[variant] = src
        return src

    def launcher(self, variant: Variant, device: int = 0) -> Launch:
        """The compiled variant on ``device`` (the runtime caches it per source and device)."""
        return self.runtime.load(self.source(variant), device)

    def contiguous_variant(self) -> Variant:
        """The variant a call with contiguous inputs of the subgraph's shapes uses."""
        plan = self.make_plan(contiguous_layouts(self.spec), compile=False)
        assert plan is not None
        return plan.variant or Variant(1, tuple(FLAT for _ in self.spec.leaves), 32)

    def _name(self, variant: Variant) -> str:
        digest = hashlib.sha1(f"{self.key}\n{variant}".encode()).hexdigest()[:12]
        return f"rnnscript_fused_{digest}"


# -- the CuPy runtime ------------------------------------------------------------------------------
class CupyRuntime:
    """Kernels compiled by CuPy (``RawKernel``: NVRTC at the device's architecture, cubin cached
    by CuPy on disk) and launched on the current device."""

    name = "cuda"
    block = BLOCK
    blocks_per_sm = BLOCKS_PER_SM

    def __init__(self, rules: dict[str, Rule] | None = None):
        import cupy
        self.cupy = cupy
        self.xp = cupy
        self.rules = codegen.RULES if rules is None else rules
        self._sm: dict[int, int] = {}
        self._loaded: dict[tuple[str, int], Launch] = {}

    def is_array(self, a: Any) -> bool:
        return type(a) is self.cupy.ndarray

    def device(self) -> int:
        return self.cupy.cuda.runtime.getDevice()

    def sm_count(self, device: int) -> int:
        count = self._sm.get(device)
        if count is None:
            runtime = self.cupy.cuda.runtime
            count = runtime.deviceGetAttribute(runtime.cudaDevAttrMultiProcessorCount, device)
            self._sm[device] = count
        return count

    def load(self, source: KernelSource, device: int) -> Launch:
        key = (source.digest, device)
        launch = self._loaded.get(key)
        if launch is not None:
            return launch
        with _lock:
            launch = self._loaded.get(key)
            if launch is None:
                with self.cupy.cuda.Device(device):
                    # --fmad=false: a * b + c rounds twice, as the unfused CuPy ops do
                    fn = self.cupy.RawKernel(source.text, source.name,
                                             options=("-std=c++17", "--fmad=false"))
                    fn.compile()

                def launch(grid: int, block: int, args: Sequence[Any], fn=fn) -> None:
                    fn((grid,), (block,), tuple(args))
                self._loaded[key] = launch
        return launch


# -- the cache -------------------------------------------------------------------------------------
_KERNELS: KernelCache[Kernel] = KernelCache(_lock)
_runtimes: dict[str, Runtime] = {}


def compile_group_with(graph: Graph, runtime: Runtime) -> Kernel:
    """The kernel of a fusion group's subgraph on ``runtime``, from the cache or made now.

    Raises ValueError when the subgraph holds an op or type the CUDA fuser cannot generate.
    """
    key = canonical_key(graph)
    return _KERNELS.get((runtime.name, key), lambda: _make(graph, key, runtime))


def _make(graph: Graph, key: str, runtime: Runtime) -> Kernel:
    kernel = Kernel(codegen.analyze(graph), key, runtime)
    # build the common variant now, so errors surface where the kernel is made
    kernel.make_plan(contiguous_layouts(kernel.spec), runtime.device())
    return kernel


def compile_group(graph: Graph) -> Kernel:
    """The CuPy kernel of a fusion group's subgraph: ``kernel(*inputs)`` takes CuPy arrays and
    Python numbers in subgraph input order and returns new CuPy arrays (a tuple for several
    outputs). Code is generated on the first call for a layout and compiled for the current
    device. Raises ValueError when the subgraph holds an op or type the CUDA fuser cannot
    generate, ImportError without CuPy."""
    runtime = _runtimes.get("cuda")
    if runtime is None:
        runtime = _runtimes.setdefault("cuda", CupyRuntime())
    return compile_group_with(graph, runtime)


def cache_size() -> int:
    """How many distinct CUDA kernels (all backends) this process holds."""
    return len(_KERNELS)
