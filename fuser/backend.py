"""The fuser's backend interface: one ``Backend`` object per backend, found by device.

Group formation (``fuser.group``), the executor's code generator and ``explain`` never read one
backend's module: they ask ``backend_for(device)`` for the backend of the device a node's tensors
live on (``device_of``) and use its tables (which dtypes it stores, which ops it has rules for,
whether it stores ``cat`` pieces at offsets) and its ``compile_group``. So a CUDA graph is fused
and explained by CUDA rules, a CPU graph by CPU rules.

Adding a backend is one folder and one registry entry: ``fuser/<name>/__init__.py`` defines
``BACKEND = Backend(...)`` (its tables and its ``compile_group``, returning ``Kernel``s), and
``REGISTRY`` below maps the devices it serves to that module. Backends are imported on first use,
so the CUDA backend never imports llvmlite and the CPU backend never imports CuPy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from fuser.analysis import KernelSpec, admits
from ir.core import Graph, Node
from ir.types import TensorType

REGISTRY: dict[str | None, str] = {None: "fuser.cpu", "cpu": "fuser.cpu", "cuda": "fuser.cuda"}
"""device (a tensor type's ``device``; None: numpy on the host) -> the module whose ``BACKEND``
serves it."""


@runtime_checkable
class Kernel(Protocol):
    """A compiled fusion group: ``kernel(*inputs)`` takes the subgraph's inputs in order (arrays of
    the backend's array module, Python numbers) and returns its output(s) as new arrays (a tuple
    for several outputs). A CPU kernel also has ``site()`` (a copy for one call site) and
    ``into(outs, *inputs)`` (writes into given arrays); callers check for them."""

    spec: KernelSpec
    """what the kernel reads and writes."""
    key: str
    """the cache key: the group's structure, dtypes and broadcast pattern."""

    def __call__(self, *args: Any) -> Any: ...


@dataclass(eq=False)
class Backend:
    """What the fuser asks a backend: its tables, and how it compiles a group."""

    name: str
    """how messages name it (``CPU``, ``CUDA``)."""
    devices: tuple[str | None, ...]
    """the tensor devices it serves (its entries in ``REGISTRY``)."""
    storage: Mapping[str, Any]
    """dtype -> how an element is stored; a group's tensors must have one of these dtypes."""
    rules: Mapping[str, Any]
    """op kind -> how it computes one element; groups form only from these kinds."""
    accepts: Mapping[str, Callable[[Node], bool]]
    """op kind -> extra condition on a node (a constant exponent, a constant dtype)."""
    bool_results: Container[str]
    """kinds whose rule may produce a bool (the others compute in a float type only)."""
    compile_group: Callable[[Graph], Kernel]
    """the kernel of a group's subgraph (ValueError when it holds what the backend cannot
    generate)."""
    stores_cats: bool = False
    """whether a ``cat`` may be a group's store (pieces written at offsets of its output)."""
    compile_loop: Callable[[Node], Any] | None = None
    """the native form of a ``prim::Loop`` node: ``loop(trip, free values, initial carried
    values)`` returns the carried results, or None for arguments it cannot run (the caller runs
    the loop as Python then); raises ValueError saying why a loop cannot be compiled. None: every
    loop runs as Python."""
    matmul_for: Callable[[Node], Callable[[Any, Any], Any] | None] | None = None
    """a function computing a 2-D ``tensor::matmul`` node's product (outside loops) better than
    the array module's ``@``, or None for ``@``."""
    matmul_sum_for: Callable[[Node], Callable[..., Any] | None] | None = None
    """likewise for a ``tensor::matmul_sum`` node (``a1 @ b1 + a2 @ b2 + ...`` as one product;
    the ``matmul-sums`` pass makes one only where this gives a function)."""
    epilogue_for: Callable[[Node, Node, bool, tuple], Callable[..., Any] | None] | None = None
    """for a product node (``tensor::matmul`` or ``tensor::matmul_sum``) whose result only the
    fusion group right after it reads, one function computing both: ``f(*product inputs,
    *the group's other inputs)`` returns the group's outputs (the product first when the third
    argument is true), taking the product and each output from the fourth argument's
    (workspace site, shape, dtype) where one is given; None: two calls."""

    def can_generate(self, node: Node) -> bool:
        """Does this backend have code for ``node`` (with its constant arguments and types)?"""
        return admits(node, self.rules, self.accepts, self.bool_results, self.storage)

    def knows(self, t: Any) -> bool:
        """Is ``t`` a tensor type a kernel can read or write: a stored dtype, a known shape?"""
        return (isinstance(t, TensorType) and t.dtype in self.storage and t.shape is not None
                and None not in t.shape)

    def __repr__(self) -> str:
        return f"<fuser backend {self.name} for {', '.join(map(str, self.devices))}>"


def backend_for(device: str | None) -> Backend | None:
    """The backend serving tensors on ``device`` (None: numpy on the host); None when no backend
    does (nothing on it is fused)."""
    backend = _loaded.get(device)
    if backend is None:
        module = REGISTRY.get(device)
        if module is None:
            return None
        backend = _loaded[device] = importlib.import_module(module).BACKEND
    return backend


_loaded: dict[str | None, Backend] = {}


def device_of(node: Node) -> str | None:
    """The device of ``node``'s tensors: the first tensor input's or output's that names one,
    else None (the host)."""
    for v in (*node.inputs, *node.outputs):
        t = v.type
        if isinstance(t, TensorType) and t.device is not None:
            return t.device
    return None


def backend_of(node: Node) -> Backend | None:
    """The backend of the device ``node``'s tensors live on (see ``device_of``)."""
    return backend_for(device_of(node))
