"""Generated code for a call on the GPU: arrays made from shapes and numbers are made there.

A call runs on one device (``passes.devices.place_on_call_device``): in a function specialized
for CuPy arrays, a tensor made without a tensor input (``np.zeros(shape)``, ``np.arange(n)``, a
random draw, a constant array, a Python number an op takes as a 0-d array) is a CuPy array, as
every other tensor of the call. ``empty``/``zeros``/``ones``/``full`` are CuPy's own calls; the
other ops compute on the host and their result is copied to the device. numpy's random draws
stay numpy's, from host copies of their tensor arguments (``choice(V, p=p)``), so a seeded
program draws the same numbers. Constant arrays are copied once, when the function is generated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.core import Node
from ir.types import ClassType, DictType, ListType, OptionalType, TensorType, TupleType, Type
from script.runtime import weak_numbers

CUPY_CREATION = {"tensor::empty": "empty", "tensor::zeros": "zeros", "tensor::ones": "ones",
                 "tensor::full": "full"}
"""ops CuPy makes on the device itself (the same arguments as numpy's)."""
RANDOM = "prim::random"


def holds_tensor(t: Type) -> bool:
    """Whether a value of type ``t`` holds tensors (itself, its items or its fields)."""
    if isinstance(t, TensorType):
        return True
    if isinstance(t, TupleType):
        return any(holds_tensor(e) for e in t.elements)
    if isinstance(t, (ListType, OptionalType)):
        return holds_tensor(t.element)
    if isinstance(t, DictType):
        return holds_tensor(t.value)
    if isinstance(t, ClassType):
        return any(holds_tensor(f) for _, f in t.fields)
    return False


def made_here(node: Node) -> bool:
    """Whether ``node`` makes a tensor from no tensor (a shape, numbers)."""
    if not node.kind.startswith("tensor::"):
        return False
    return any(holds_tensor(v.type) for v in node.outputs) and \
        not any(holds_tensor(v.type) for v in node.inputs)


def from_numbers(node: Node) -> bool:
    """Whether ``node``'s tensor inputs may all be Python numbers at run time (weak numbers:
    ``script.runtime.weak_numbers``), so that numpy computes it on the host
    (``np.zeros_like(0.0)``)."""
    if not node.kind.startswith("tensor::") or not any(holds_tensor(v.type)
                                                       for v in node.outputs):
        return False
    tensors = [v for v in node.inputs if holds_tensor(v.type)]
    return bool(tensors) and all(weak_numbers.may_be_number(v) for v in tensors)


def cupy_module() -> Any:
    """CuPy (only code for a call on CuPy arrays asks for it, so it is imported by then)."""
    import cupy  # a function specialized for CuPy arrays: CuPy is imported
    return cupy


def to_device(value: Any, scalars: bool = True) -> Any:
    """Host arrays (in tuples, lists and dicts too) as CuPy arrays; numpy scalars too with
    ``scalars`` (an op's 0-d result), not without (a constant's numpy scalar is a number)."""
    if isinstance(value, np.ndarray) or scalars and isinstance(value, np.generic):
        return cupy_module().asarray(value)
    if isinstance(value, (tuple, list)):
        return type(value)(to_device(v, scalars) for v in value)
    if isinstance(value, dict):
        return {k: to_device(v, scalars) for k, v in value.items()}
    return value


def to_host(value: Any) -> Any:
    """CuPy arrays (in tuples and lists too) as numpy arrays."""
    if type(value) is cupy_module().ndarray:
        return value.get()
    if isinstance(value, (tuple, list)):
        return type(value)(to_host(v) for v in value)
    return value


def write_random(w: Any, node: Node) -> None:
    """A numpy random draw in a function on the device: numpy's generator draws from host
    copies of its tensor arguments (``choice(V, p=p.ravel())``, ``normal(mu, 1.0)``), and the
    tensors it draws are copied to the device."""
    move = w.consts.setdefault("_to_host", to_host)
    assert move is to_host
    saved = {}
    for v in node.inputs:
        if holds_tensor(v.type) and v not in saved:
            saved[v] = w.ns.name(v)
            host = w.ns.fresh("_host")
            w.emit(f"{host} = _to_host({saved[v]})")
            w.ns.names[v] = host
    try:
        w.write_host_node(node)
    finally:
        w.ns.names.update(saved)
    move_outputs(w, node)


def number_as_array(x: Any) -> Any:
    """``weak_numbers.as_array`` on the device: a Python number as a 0-d CuPy array."""
    return cupy_module().asarray(x) if type(x) in (int, float, bool) else x


def write_node(w: Any, node: Node) -> bool:
    """Write ``node`` of a function on the device when its tensors would otherwise be made on
    the host: a random draw, a tensor made from no tensor, numpy's array of Python numbers.
    False for every other node (the host's code serves: its inputs are on the device)."""
    if weak_numbers.is_weak_number(node):  # a Python number: weak, on any device
        return False
    if node.kind == RANDOM:
        write_random(w, node)
        return True
    if made_here(node) and write_creation(w, node):
        return True
    if not (made_here(node) or from_numbers(node)):
        return False
    w.write_host_node(node)
    move_outputs(w, node)
    return True


def write_creation(w: Any, node: Node) -> bool:
    """Write ``node`` as CuPy's own call when CuPy makes it (``CUPY_CREATION``); False when it
    does not."""
    fn = CUPY_CREATION.get(node.kind)
    if fn is None:
        return False
    w.consts["_cupy"] = cupy_module()
    args = [w.ns.name(v) for v in node.inputs]
    w.assign(node, f"_cupy.{fn}({', '.join(args)})")
    return True


def move_outputs(w: Any, node: Node) -> None:
    """After ``node``'s host code: its tensors copied to the device."""
    move = w.consts.setdefault("_to_device", to_device)
    assert move is to_device
    for v in node.outputs:
        if holds_tensor(v.type):
            name = w.ns.name(v)
            w.emit(f"{name} = _to_device({name})")


__all__ = ["CUPY_CREATION", "RANDOM", "from_numbers", "holds_tensor", "made_here",
           "move_outputs", "number_as_array", "to_device", "to_host", "write_creation",
           "write_node", "write_random"]
