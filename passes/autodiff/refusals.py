"""The error a differentiation raises for a construct it cannot follow, pointing at the node.

A refused gradient must reach the user as a ``ScriptError`` at the line that wrote the construct
(``script.errors.reported`` turns it into one); a silent zero would train a model that never learns.
"""

from __future__ import annotations

from ir.core import Node, Value
from ir.errors import IRError


class NotDifferentiable(IRError):
    """A construct the backward cannot follow; ``node`` is where the user wrote it."""

    def __init__(self, message: str, node: Node | None = None):
        super().__init__(message, node)


def refuse(message: str, at: Node | Value | None) -> NotDifferentiable:
    """A ``NotDifferentiable`` at ``at`` (a node, or the node that made a value); a block
    parameter points at its loop or If."""
    node = at.node if isinstance(at, Value) else at
    while node is not None and node.source is None and node.owner is not None:
        node = node.owner.owner
    return NotDifferentiable(message, node)


__all__ = ["NotDifferentiable", "refuse"]
