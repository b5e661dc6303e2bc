"""The instrumentation protocol: how a tool watches the runtime without the runtime importing it.

A tool (``script.tools.profiler``) makes an object with the ``Instrument`` methods the active one
for the length of a ``with`` block (``activate`` / ``restore``). The runtime asks ``active`` on
every call of a scripted function or gradient and, when one is set, runs the call through it;
compile stages are bracketed by ``stage(name)``; the code generator lets it write each node's line
(to time it) when asked to build instrumented code for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol


class Instrument(Protocol):
    """What the runtime calls on the active instrument."""

    building: bool
    """True while the instrument generates its own code (its kernel lookups are no stages)."""

    def call(self, fn: Any, args: tuple[Any, ...]) -> Any:
        """Run one call of a ``ScriptFunction`` (``args``: the graph's inputs)."""

    def run_graph(self, graph: Any, name: str, args: Sequence[Any]) -> Any:
        """Run one call of a compiled graph that is not a ``ScriptFunction``'s own (the
        forward or backward of a gradient)."""

    def stage(self, name: str) -> AbstractContextManager[None]:
        """Bracket one compile stage (frontend, passes, codegen, native compile)."""

    def write_node(self, w: Any, node: Any, write: Callable[[Any], None]) -> None:
        """Write ``node``'s code through ``write`` inside ``w`` (a ``codegen.FunctionWriter``
        building instrumented code for this instrument), with whatever it records around it."""


active: Instrument | None = None
"""The instrument of the innermost active block, or None (read on every call)."""


def activate(instrument: Instrument) -> Instrument | None:
    """Make ``instrument`` the active one; returns the one it replaces (for ``restore``)."""
    global active
    previous, active = active, instrument
    return previous


def restore(previous: Instrument | None) -> None:
    """Make ``previous`` (what ``activate`` returned) the active instrument again."""
    global active
    active = previous


def stage(name: str) -> AbstractContextManager[None]:
    """Bracket a compile stage for the active instrument (compilation only: never a hot path)."""
    instrument = active
    return nullcontext() if instrument is None else instrument.stage(name)
