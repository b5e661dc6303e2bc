"""SSA values and their use lists.

A ``Value`` is defined once, by one node output or block parameter, and keeps its uses in a
``UseList``: insertion-ordered like a list, but a use is removed in O(1) (the node keeps the
``Use`` object of each of its inputs, so it never searches for it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ir.errors import IRError
from ir.kinds import CONSTANT, PARAM
from ir.types import Type

if TYPE_CHECKING:
    from ir.core import Block, Node


@dataclass(eq=False, slots=True)
class Use:
    """One use of a value: input ``index`` of ``node``."""

    node: Node
    """the user."""
    index: int
    """which input of the user."""


class UseList:
    """The uses of one value in the order they were made.

    Iterating walks a snapshot, so a loop may rewrite the uses it visits (``set_input``).
    """

    __slots__ = ("_uses",)

    def __init__(self, uses: Iterable[Use] = ()):
        self._uses: dict[Use, None] = dict.fromkeys(uses)

    def append(self, use: Use) -> None:
        self._uses[use] = None

    def remove(self, use: Use) -> None:
        """Drop ``use`` (the very object); KeyError when it is not there."""
        del self._uses[use]

    def __contains__(self, use: object) -> bool:
        return use in self._uses

    def clear(self) -> None:
        self._uses.clear()

    def __iter__(self) -> Iterator[Use]:
        return iter(list(self._uses))

    def __len__(self) -> int:
        return len(self._uses)

    def __bool__(self) -> bool:
        return bool(self._uses)

    def __getitem__(self, index: Any) -> Any:
        return list(self._uses)[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, UseList):
            other = list(other)
        return isinstance(other, list) and list(self._uses) == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"UseList({list(self._uses)!r})"


class Value:
    """An SSA value: defined once, by one node output (or a block parameter)."""

    __slots__ = ("type", "name", "node", "index", "uses")

    def __init__(self, type: Type, node: Node, index: int, name: str | None = None):
        self.type = type
        """the static type; passes may refine it (shape propagation)."""
        self.name = name
        """a readable name hint (the Python variable); the printer makes names unique."""
        self.node = node
        """the defining node (``prim::Param`` for block parameters)."""
        self.index = index
        """which output of ``node`` this is."""
        self.uses = UseList()
        """every (node, input index) reading this value, in the order the uses were made."""

    def __repr__(self) -> str:
        return f"<Value %{self.name or '?'} : {self.type} of {self.node.kind}>"

    @property
    def is_param(self) -> bool:
        return self.node.kind == PARAM

    @property
    def is_constant(self) -> bool:
        return self.node.kind == CONSTANT

    @property
    def constant(self) -> Any:
        """The constant's value; only meaningful when ``is_constant``."""
        if not self.is_constant:
            raise IRError(f"{self!r} is not a constant")
        return self.node.attrs.get("value")

    @property
    def users(self) -> list[Node]:
        """The distinct nodes that read this value, in use order."""
        seen: dict[int, Node] = {}
        for u in self.uses:
            seen.setdefault(id(u.node), u.node)
        return list(seen.values())

    def replace_all_uses_with(self, other: Value) -> None:
        """Make every user read ``other`` instead of this value."""
        if other is self:
            return
        for use in list(self.uses):
            use.node.set_input(use.index, other)

    def replace_uses_after(self, other: Value, node: Node) -> None:
        """Replace the uses that come after ``node`` (in program order, nested blocks included)."""
        for use in list(self.uses):
            if node.is_before(use.node):
                use.node.set_input(use.index, other)

    def defined_inside(self, node: Node) -> bool:
        """Is this value defined in one of ``node``'s blocks, at any depth (a block parameter
        included)?"""
        return self.node.is_inside(node)

    @property
    def owning_block(self) -> Block:
        """The block the value is defined in."""
        block = self.node.owner
        if block is None:
            raise IRError(f"{self!r} is not in a block")
        return block
