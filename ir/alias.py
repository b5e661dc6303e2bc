"""Which values the caller can end up holding: storage locations and escape.

Plain Python makes a new array every time it evaluates ``np.zeros(3)`` or ``x * 2.0``; a caller
that mutates a returned array changes nothing else. A compiler that folds, merges (CSE), hoists
(LICM) or forwards (``x * 1 -> x``) such values can hand the caller one array that something
else also holds: another output, a later call (a constant of the graph), or an argument. That is
unobservable only for values the caller never receives.

``StorageClasses(graph)`` is a unification-based points-to analysis (Steensgaard's): each value
has a location, values that may be the same memory share one (a view and its base, an
``if``/loop result and the values it may be, a subgraph's values and its node's), and a container
location points to one location for all its items (a list's items, a dict's values, an object's
fields) or, for a tuple, to one location per element. Ops with the registry's ``VIEW`` trait
share their inputs' memory; other ``tensor::`` ops make new arrays. Container ops follow ``RULES``
(keyed by kind); an op the table does not know shares everything it touches.

A value *escapes* when the caller can reach its memory: it is a graph output or a mutable graph
input (a list, dict or object the caller keeps), an item of an escaping container, or shares a
location with one. A container holding an escaping item does not escape by that alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ir.core import CONSTANT, SUBGRAPH, Block, Graph, Node, Value
from ir.ops.elementwise import IN_PLACE_ATTR
from ir.registry import constant_of, lookup
from ir.types import (
    INT,
    INT_DTYPES,
    ListType,
    OptionalType,
    ScalarType,
    TensorType,
    TupleType,
    Type,
    is_mutable,
)


def holds_storage(t: Type) -> bool:
    """Can a value of type ``t`` hold memory that someone could mutate or compare by identity?
    (Numbers, strings and None cannot; a tuple only through its items.)"""
    if isinstance(t, ScalarType):
        return False
    if isinstance(t, TupleType):
        return any(holds_storage(e) for e in t.elements)
    if isinstance(t, OptionalType):
        return holds_storage(t.element)
    return True


class _Items:
    """The location of the items of a container location (or of one element of a tuple)."""

    __slots__ = ()


Location = Value | _Items
Overlap = bool | tuple | None


class StorageClasses:
    """The storage locations of ``graph``'s values (nested blocks and subgraphs included) and
    which of them escape to the caller (see the module docstring)."""

    def __init__(self, graph: Graph, through: Node | None = None):
        """``through``: only what runs before that node, and the node itself (see
        ``_link_through``), where later code cannot matter."""
        self._parent: dict[Location, Location] = {}
        self._items: dict[Location, Location] = {}
        """representative -> the location of all its items."""
        self._fields: dict[Location, list[Location]] = {}
        """representative of a tuple -> the location of each element (a representative has
        items or fields, not both: reading a tuple as a whole merges its fields into items)."""
        self._escaping: set[Location] = set()
        """representatives of the escaping locations."""
        if through is None:
            self.link_block(graph.block)
        else:
            self._link_through(graph.block, through)
        for v in list(graph.outputs) + [v for v in graph.inputs if is_mutable(v.type)]:
            if holds_storage(v.type):
                self._mark(v)

    # -- queries --------------------------------------------------------------------------------
    def escapes(self, value: Value) -> bool:
        """Can the caller reach ``value``'s memory (as an output, inside one, or stored into a
        mutable argument)?"""
        return holds_storage(value.type) and self._find(value) in self._escaping

    def any_escapes(self, node: Node) -> bool:
        return any(self.escapes(v) for v in node.outputs)

    def reachable(self, values: Iterable[Value]) -> set[Location]:
        """The locations holding the memory of ``values``: theirs, their items', and so on."""
        return self._closure(self._find(v) for v in values if holds_storage(v.type))

    def overlap(self, value: Value, others: Iterable[Value]) -> Overlap:
        """What of ``value``'s memory may also be reachable from ``others``: None for nothing,
        True for (some of) it, and for a tuple whose elements have locations of their own, a
        tuple of the elements' answers."""
        held = self.reachable(others)

        def answer(r: Location) -> Overlap:
            if not self._closure([r]) & held:
                return None
            fields = self._fields.get(r)
            return True if fields is None else tuple(answer(self._find(f)) for f in fields)

        return answer(self._find(value)) if holds_storage(value.type) else None

    def same_location(self, a: Value, b: Value) -> bool:
        """Whether ``a`` and ``b`` may be the same memory (one location: the same list, the
        same array or views of one)."""
        return self._find(a) is self._find(b)

    def join(self, a: Value, b: Value) -> None:
        """Record that ``a`` and ``b`` may now be the same memory (a rewrite made the readers of
        one read the other)."""
        self.same(a, b)

    # -- building (used by the rules) -----------------------------------------------------------
    def same(self, *values: Value) -> None:
        """The values may be the same memory (or overlap)."""
        found = [v for v in values if holds_storage(v.type)]
        for v in found[1:]:
            self.unite(found[0], v)

    def items_of(self, container: Value, *values: Value) -> None:
        """Each of ``values`` may be an item of ``container``."""
        if not holds_storage(container.type):
            return
        for v in values:
            if holds_storage(v.type):
                self.unite(self.items_location(container), v)

    def same_items(self, *containers: Value) -> None:
        """The containers may hold the same items."""
        found = [c for c in containers if holds_storage(c.type)]
        for c in found[1:]:
            self.unite(self.items_location(found[0]), self.items_location(c))

    def link_block(self, block: Block) -> None:
        for node in block:
            self.link_node(node)

    def _link_through(self, block: Block, last: Node) -> None:
        """Link the nodes of ``block`` up to the one that is or holds ``last``: ``last``
        whole; of an ``if`` holding it, the branch that does; of a loop holding it, its inputs
        as its parameters and its body up to ``last`` (what a step gives back to the next is
        after ``last``)."""
        for node in block:
            if node is last:
                self.link_node(node)
                return
            inner = next((b for b in node.blocks if last.ancestor_in(b) is not None), None)
            if inner is None:
                self.link_node(node)
                continue
            if node.kind == "prim::Loop":
                for k, param in enumerate(inner.params[1:]):
                    self.same(node.inputs[2 + k], param)
            self._link_through(inner, last)
            return

    def link_node(self, node: Node) -> None:
        rule = RULES.get(node.kind)
        if rule is not None:
            rule(self, node)
        elif SUBGRAPH in node.attrs:
            _subgraph(self, node)
        elif node.kind.startswith("tensor::") and not node.blocks and lookup(node.kind) is not None:
            _tensor_op(self, node)
        else:  # unknown: everything it touches may be one memory
            for block in node.blocks:
                self.link_block(block)
            self.same(*node.inputs, *node.outputs,
                      *(v for b in node.blocks for v in (*b.params, *b.returns)))

    # -- union-find -----------------------------------------------------------------------------
    def _find(self, x: Location) -> Location:
        root = x
        while (up := self._parent.get(root, root)) is not root:
            root = up
        while x is not root:  # path compression
            up = self._parent[x]
            self._parent[x] = root
            x = up
        return root

    def items_location(self, x: Location) -> Location:
        """The location of the items of the container at ``x`` (made on first use)."""
        self._collapse(self._find(x))
        r = self._find(x)
        items = self._items.get(r)
        if items is None:
            items = self._items[r] = self._new_location(r)
        return self._find(items)

    def _collapse(self, r: Location) -> None:
        """A tuple read as a whole: one location for all its elements."""
        fields = self._fields.pop(r, None)
        if not fields:
            return
        items = self._items.setdefault(r, fields[0])
        for f in fields:
            self.unite(items, f)

    def field_location(self, x: Value, k: int) -> Location:
        """The location of element ``k`` of the tuple ``x``."""
        t = x.type
        n = len(t.elements) if isinstance(t, TupleType) else 0
        r = self._find(x)
        if not 0 <= k < n or r in self._items:
            return self.items_location(r)
        fields = self._fields.get(r)
        if fields is None:
            fields = self._fields[r] = [self._new_location(r) for _ in range(n)]
        if len(fields) != n:
            return self.items_location(r)
        return self._find(fields[k])

    def _new_location(self, holder: Location) -> Location:
        made = _Items()
        if holder in self._escaping:
            self._escaping.add(made)
        return made

    def unite(self, a: Location, b: Location) -> None:
        """The two locations may be the same memory (and so may their items)."""
        ra, rb = self._find(a), self._find(b)
        if ra is rb:
            return
        self._parent[rb] = ra
        escaping = ra in self._escaping or rb in self._escaping
        self._escaping.discard(rb)
        fields_b, items_b = self._fields.pop(rb, None), self._items.pop(rb, None)
        fields_a = self._fields.get(ra)
        if fields_b is not None:
            if ra in self._items or (fields_a is not None and len(fields_a) != len(fields_b)):
                for f in fields_b:
                    self.unite(self.items_location(ra), f)
            elif fields_a is None:
                self._fields[ra] = fields_b
            else:
                for fa, fb in zip(fields_a, fields_b):
                    self.unite(fa, fb)
        if items_b is not None:
            self._collapse(self._find(ra))
            r = self._find(ra)
            items_a = self._items.get(r)
            if items_a is None:  # (taken as they are: a list holding itself, `self.w = [v]`
                self._items[r] = items_b  # where `self.v = v`, is its own items)
            else:
                self.unite(items_a, items_b)
        if escaping:
            self._mark(ra)

    def _contents(self, r: Location) -> list[Location]:
        items = self._items.get(r)
        return [self._find(f) for f in ([items] if items is not None else self._fields.get(r, ()))]

    def _closure(self, start: Iterable[Location]) -> set[Location]:
        found: set[Location] = set()
        todo = list(start)
        while todo:
            r = todo.pop()
            if r not in found:
                found.add(r)
                todo += self._contents(r)
        return found

    def _mark(self, x: Location) -> None:
        """``x`` escapes, and so do its items (and theirs)."""
        self._escaping |= self._closure([self._find(x)])


# -- the rules ------------------------------------------------------------------------------------
Rule = Callable[[StorageClasses, Node], None]


def may_share_input(node: Node) -> bool:
    """Whether a ``tensor::`` node's result may share memory with its inputs: its op has the
    ``VIEW`` trait and, where ``VIEW_WHEN`` says more for its kind, this node's types allow it;
    arithmetic done in place (``IN_PLACE_ATTR``) returns its first operand's array."""
    if node.attrs.get(IN_PLACE_ATTR) or integer_scalar_read(node):
        return True
    op = lookup(node.kind)
    if op is None or not op.is_view:
        return False
    when = VIEW_WHEN.get(node.kind)
    return when is None or when(node)


def integer_scalar_read(node: Node) -> bool:
    """Whether ``node`` reads ``a[i]`` / ``a[i, j]`` at integer-array indices that may be numpy's
    integer scalars (0-d, or of a rank not known yet: ``W[idx[0]]``, ``W[np.argmax(s)]``) into
    an array: numpy's basic indexing then gives a view of ``a`` (the compiled read makes a copy,
    so a write into the result must be refused where numpy's would show in ``a``)."""
    if node.kind == "tensor::take":
        indices = node.inputs[1:2]
    elif node.kind == "tensor::index_pairs":
        indices = node.inputs[1:3]
    else:
        return False
    out = node.output.type
    if isinstance(out, TensorType) and out.shape == ():
        return False  # an item: numpy's scalar, a copy
    scalar = [v.type == INT or isinstance(t := v.type, TensorType) and t.shape in (None, ())
              and (t.dtype is None or t.dtype in INT_DTYPES) for v in indices]
    return all(scalar) and any(v.type != INT for v in indices)  # (W[1, idx[0]] too)


def _same_shape_possible(node: Node) -> bool:
    a, out = node.inputs[0].type, node.output.type
    if not (isinstance(a, TensorType) and isinstance(out, TensorType)):
        return True
    if a.shape is None or out.shape is None:
        return True
    return len(a.shape) == len(out.shape) and all(
        x is None or y is None or x == y for x, y in zip(a.shape, out.shape))


VIEW_WHEN: dict[str, Callable[[Node], bool]] = {
    "tensor::sum_to": _same_shape_possible,  # the input itself when the shapes agree, else a sum
}
"""kind -> when a node of a ``VIEW`` op may share its input's memory (absent: always)."""


def _tensor_op(s: StorageClasses, node: Node) -> None:
    """A ``VIEW`` op's results share its tensor inputs' memory (a list result holds views);
    any other tensor op makes new arrays."""
    if not may_share_input(node):
        return
    # only its arrays: a shape or axes argument (a list of ints) is not memory the result shares
    arrays = [v for v in node.inputs if isinstance(v.type, TensorType)]
    for out in node.outputs:
        if isinstance(out.type, ListType):
            s.items_of(out, *arrays)
        else:
            s.same(out, *arrays)


def _subgraph(s: StorageClasses, node: Node) -> None:
    sub = node.subgraph
    s.link_block(sub.block)
    for outer, inner in zip(node.inputs, sub.inputs):
        s.same(outer, inner)
    for outer, inner in zip(node.outputs, sub.outputs):
        s.same(outer, inner)


def _if(s: StorageClasses, node: Node) -> None:
    for block in node.blocks:
        s.link_block(block)
        for out, ret in zip(node.outputs, block.returns):
            s.same(out, ret)


def _loop(s: StorageClasses, node: Node) -> None:
    (body,) = node.blocks
    s.link_block(body)
    for k, out in enumerate(node.outputs):
        s.same(out, node.inputs[2 + k], body.params[1 + k], body.returns[1 + k])


def _nothing(s: StorageClasses, node: Node) -> None:
    """New objects, or nothing that holds memory."""


def _construct(s: StorageClasses, node: Node) -> None:
    s.items_of(node.output, *node.inputs)


def _tuple(s: StorageClasses, node: Node) -> None:
    """Each element of a tuple has its own location (while the tuple is not read as a whole)."""
    for k, v in enumerate(node.inputs):
        if holds_storage(v.type):
            s.unite(s.field_location(node.output, k), v)


def _tuple_index(s: StorageClasses, node: Node) -> None:
    t, k = node.inputs[0].type, constant_of(node.inputs[1])
    if isinstance(t, TupleType) and type(k) is int and -len(t.elements) <= k < len(t.elements):
        if holds_storage(node.output.type):
            s.unite(s.field_location(node.inputs[0], k % len(t.elements)), node.output)
        return
    _read_item(s, node)


def _tuple_unpack(s: StorageClasses, node: Node) -> None:
    for k, out in enumerate(node.outputs):
        if holds_storage(out.type):
            s.unite(s.field_location(node.inputs[0], k), out)


def _read_item(s: StorageClasses, node: Node) -> None:
    for out in node.outputs:
        s.items_of(node.inputs[0], out)


def _dict_get(s: StorageClasses, node: Node) -> None:
    s.items_of(node.inputs[0], node.output)
    s.same(node.output, *node.inputs[2:])  # the default


def _store_item(s: StorageClasses, node: Node) -> None:
    s.items_of(node.inputs[0], node.inputs[-1])


def _same_items(s: StorageClasses, node: Node) -> None:
    s.same_items(*node.inputs, *node.outputs)


def _dict_items(s: StorageClasses, node: Node) -> None:
    """``d.items()``: a new list of new (key, value) tuples whose values are the dict's."""
    pairs = s.items_location(node.output)
    s.unite(s.items_location(pairs), s.items_location(node.inputs[0]))


def _list_column(s: StorageClasses, node: Node) -> None:
    """``[t[k] for t in l]``: a new list whose items are elements of the tuples ``l`` holds."""
    if holds_storage(node.output.type):
        s.unite(s.items_location(node.output), s.items_location(s.items_location(node.inputs[0])))


def _same(s: StorageClasses, node: Node) -> None:
    s.same(*node.inputs, *node.outputs)


RULES: dict[str, Rule] = {
    CONSTANT: _nothing,
    "prim::If": _if,
    "prim::Loop": _loop,
    "prim::CreateObject": _nothing,
    "prim::Uninitialized": _nothing,
    "prim::Print": _nothing,
    "prim::RaiseException": _nothing,
    "prim::DictKeys": _nothing,
    "prim::DictContains": _nothing,
    "prim::ListContains": _nothing,
    "prim::len": _nothing,
    "prim::IsNone": _nothing,
    "prim::Bool": _nothing,
    "prim::Int": _nothing,
    "prim::Float": _nothing,
    "prim::item": _nothing,
    "prim::min": _nothing,
    "prim::max": _nothing,
    "prim::abs": _nothing,
    "prim::math": _nothing,
    "prim::random": _nothing,  # a new array or number (choice's item is a copy)
    "prim::ListConstruct": _construct,
    "prim::ShapeConstruct": _nothing,
    "prim::TupleConstruct": _tuple,
    "prim::NamedTupleConstruct": _construct,
    "prim::DictConstruct": _construct,
    "prim::ListIndex": _read_item,
    "prim::TupleIndex": _tuple_index,
    "prim::DictGetItem": _read_item,
    "prim::ListPop": _read_item,
    "prim::TupleUnpack": _tuple_unpack,
    "prim::ListUnpack": _read_item,
    "prim::GetAttr": _read_item,
    "prim::LoadAttr": _read_item,
    "prim::DictGet": _dict_get,
    "prim::ListAppend": _store_item,
    "prim::ListInsert": _store_item,
    "prim::ListSetItem": _store_item,
    "prim::DictSetItem": _store_item,
    "prim::SetAttr": _store_item,
    "prim::ListExtend": _same_items,
    "prim::ListAdd": _same_items,
    "prim::ListMul": _same_items,
    "prim::ListSlice": _same_items,
    "prim::TupleSlice": _same_items,
    "prim::DictValues": _same_items,
    "prim::DictItems": _dict_items,
    "prim::ListColumn": _list_column,
    "prim::unchecked_unwrap_optional": _same,
}
"""kind -> how a node of that kind relates its inputs' and outputs' memory (``tensor::`` ops go
by their ``VIEW`` trait; nodes with a subgraph share it with their subgraph's values)."""

