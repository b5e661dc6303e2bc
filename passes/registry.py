"""The pass registry: kebab-case names -> ``run(graph) -> bool`` functions."""

from __future__ import annotations

from collections.abc import Callable

from ir.core import Graph

Pass = Callable[[Graph], bool]
"""A pass rewrites a graph in place and returns True when it changed anything."""

PASSES: dict[str, Pass] = {}
"""name -> pass, in registration order."""

SETTLING: set[str] = set()
"""the passes registered with ``settles``: on the graph such a pass leaves, a second run changes
nothing (``run_pipeline`` skips it while nothing has changed since a run that changed nothing)."""


def register_pass(name: str, fn: Pass, settles: bool = False) -> Pass:
    """Make ``fn`` available to pipelines as ``name``; a name can be registered only once.
    ``settles``: a second run of ``fn`` on the graph it leaves changes nothing."""
    if name in PASSES and PASSES[name] is not fn:
        raise ValueError(f"pass {name!r} is already registered")
    PASSES[name] = fn
    if settles:
        SETTLING.add(name)
    return fn


def get_pass(name: str) -> Pass:
    """The pass registered as ``name``; ValueError listing the known names otherwise."""
    fn = PASSES.get(name)
    if fn is None:
        raise ValueError(f"unknown pass {name!r}; known passes: {', '.join(sorted(PASSES))}")
    return fn


def all_passes() -> dict[str, Pass]:
    """A copy of the registry (name -> pass)."""
    return dict(PASSES)
