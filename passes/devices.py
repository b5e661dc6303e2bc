"""The device of a call: a graph called with CuPy arrays runs wholly on the GPU.

Type rules leave the device of a tensor made from a shape or from numbers unknown
(``np.zeros(shape)``, ``np.arange(n)``, a constant array). In a graph called with CuPy arrays
those tensors, and what is computed from them, live on the GPU too, and the generated code makes
them there (``script.runtime.device_code``). Shape propagation places them after each
propagation (``place_on_call_device``).
"""

from __future__ import annotations

from ir.core import SUBGRAPH, Graph
from ir.kinds import CALL
from ir.types import devices_of, with_device


def call_device(graph: Graph) -> str | None:
    """The device of a call of ``graph``: the graph's own ``device`` when set, else ``cuda``
    when a tensor among its inputs (items and fields included) lives there, else None (numpy
    on the host)."""
    if graph.device is not None:
        return graph.device
    return "cuda" if any("cuda" in devices_of(v.type) for v in graph.inputs) else None


def place_on_call_device(graph: Graph) -> None:
    """A call runs on one device: in a graph called with CuPy arrays, the tensors whose device
    the rules leave unknown (those made from a shape or from numbers: ``np.zeros``,
    ``np.arange``, a constant array, and what is computed from them) live on the GPU too, and
    the generated code makes them there."""
    device = call_device(graph)
    if device is None:
        return

    def place(g: Graph) -> None:
        for v in g.inputs:
            v.type = with_device(v.type, device)
        for node in g.walk():
            for v in node.outputs:
                v.type = with_device(v.type, device)
            for b in node.blocks:
                for v in b.params:
                    v.type = with_device(v.type, device)
            sub = node.attrs.get(SUBGRAPH)
            if isinstance(sub, Graph) and node.kind != CALL:  # a callee is shared: typed per call
                sub.device = device  # its code runs on the call's device, whatever its inputs
                place(sub)
    place(graph)


__all__ = ["call_device", "place_on_call_device"]
