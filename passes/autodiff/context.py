"""The backward builder for one forward block: cotangent bookkeeping, saved values, emission.

A ``BlockGrad`` walks one forward block in reverse and writes its backward into one backward
block. Nested forward blocks (If branches, loop bodies) get nested ``BlockGrad``s whose backward
blocks sit inside the parent's backward block, so a backward value made by an ancestor is visible
in every descendant, exactly as forward scoping works.

Forward values the backward reads are *saved* (``fwd``): a value of the top-level block becomes an
extra forward output and a backward input; a loop-body value is appended each iteration to a list
made before the loop, and the reverse loop reads element ``n - 1 - k``; an If-branch value becomes
an extra If output (the other branch gives ``prim::Uninitialized``). Constants are re-created in
the backward instead of being saved.
"""

from __future__ import annotations

from typing import Any

from ir.core import CONSTANT, Block, Graph, Node, Value
from ir.errors import IRError
from ir.registry import infer_types, lookup
from ir.types import (
    BOOL,
    INT,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
)

Cotangent = Any
"""A backward Value, None (zero), or for tuples a list of per-element cotangents."""


def elements_of(t: Type) -> list[Type] | None:
    """The element types of a tuple or a NamedTuple (whose cotangent is kept per element), else
    None."""
    if isinstance(t, TupleType):
        return list(t.elements)
    if isinstance(t, ClassType) and t.named_tuple:
        return [ft for _, ft in t.fields]
    return None


def kind_of(t: Type) -> str:
    """How a message names a value of type ``t`` to the user."""
    if isinstance(t, OptionalType):
        return "an Optional value"
    if isinstance(t, ListType):
        return "a list"
    if isinstance(t, TupleType):
        return "a tuple"
    if isinstance(t, DictType):
        return "a dict"
    if isinstance(t, ClassType):
        return "a NamedTuple" if t.named_tuple else f"a {t.name.rsplit('.', 1)[-1]} object"
    return f"a value of type {t}"


def ct_type(t: Type) -> Type:
    """The type of a cotangent of a value of type ``t`` (an optional's is its element's)."""
    return t.element if isinstance(t, OptionalType) else t


def is_optional_tensor(t: Type) -> bool:
    """``t`` is ``Optional[Tensor]`` (whose cotangent is a tensor)."""
    return isinstance(t, OptionalType) and isinstance(t.element, TensorType)


def covering(types: list[Type], fallback: Type) -> Type:
    """The least type covering ``types`` (shapes forgotten if needed), else ``fallback``."""
    from passes.shape_prop import join
    if not types:
        return fallback
    t = types[0]
    for other in types[1:]:
        t = join(t, other, fallback)
    return t


def axis_size(u: Value, axis: int) -> int | None:
    """The size of ``u`` along ``axis`` when it is known when compiling."""
    t = u.type
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    return t.shape[int(axis) % len(t.shape)]


class Differentiator:
    """State shared by every block of one differentiation."""

    def __init__(self, forward: Graph, active: set[Value]):
        self.forward = forward
        """the forward graph; gains saved outputs as the backward asks for values."""
        self.backward = Graph((forward.name or "f") + "_backward")
        """the graph being built."""
        self.active = active
        """forward values that carry a derivative."""
        self.saved: list[Value] = []
        """forward values saved for the backward, in backward-input order."""
        self.list_cts: dict[Value, Value] = {}
        """forward list -> backward list of its items' cotangents, consumed from the end by the
        reverse of each append (``ListPop``)."""
        self.read_cts: dict[Value, dict[int, Cotangent]] = {}
        """forward list -> cotangents of its elements read at constant indices."""
        self.dict_cts: dict[Value, Value] = {}
        """forward dict -> backward dict of the cotangents of its keys' current values
        (``passes.autodiff.dicts``)."""
        self.root: BlockGrad | None = None
        self.given: set[tuple[Node | None, Value]] = set()
        """(forward node, forward value): the backward of that node gave the value a cotangent
        (kept or not: a value that does not take one drops it there); None for the output
        cotangents. What the soundness check reads (``passes.autodiff.soundness``)."""
        self.at: list[Node] = []
        """the forward nodes whose backward is being built, innermost last."""

    def gave(self, v: Value, by: Node | None = None) -> None:
        """Record that the backward of ``by`` (default: the node being differentiated) gave
        forward value ``v`` a cotangent."""
        self.given.add((by if by is not None else (self.at[-1] if self.at else None), v))


class BlockGrad:
    """Builds the backward of one forward block into one backward block."""

    def __init__(self, ad: Differentiator, fblock: Block, bblock: Block,
                 parent: BlockGrad | None = None, owner: Node | None = None):
        self.ad = ad
        self.fblock = fblock
        self.bblock = bblock
        self.parent = parent
        self.owner = owner
        """the forward If/Loop whose block this is (None at top level)."""
        self.ct: dict[Value, Cotangent] = {}
        """cotangents accumulated so far, keyed by forward value (outer values included: those
        are this block's contributions to them)."""
        self.stacked: dict[Value, Value] = {}
        """outer tensors read as ``select(u, axis, counter)`` in a loop body -> backward list
        collecting each iteration's slice cotangent."""
        self.index: Value | None = None
        """in a reverse loop body: the forward iteration number being undone."""
        self._cache: dict[Value, Value] = {}
        self._header: Node = bblock.param_node

    # -- emission -------------------------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        return self.ad.backward

    def emit(self, kind: str, *args: Any,
             types: list[Type] | None = None, at_header: bool = False) -> Node:
        """Append a node (types from its op's rule unless given); Python values become constants."""
        inputs = [a if isinstance(a, Value) else self.const(a) for a in args]
        node = self.graph.create(kind, inputs, types or [])
        if types is None:
            for t in infer_types(node):
                node.add_output(t)
        if at_header:
            node.insert_after(self._header)
            self._header = node
        else:
            self.bblock.append(node)
        return node

    def op(self, kind: str, *args: Any) -> Value:
        """Emit a single-output op and return its value."""
        return self.emit(kind, *args).output

    def const(self, value: Any, type: Type | None = None) -> Value:
        """A constant, created once at the top of the backward graph."""
        root = self.ad.root
        assert root is not None
        if isinstance(value, list):
            value = tuple(value)
        node = self.graph.create(CONSTANT, [], [], {"value": value})
        from ir.constants import constant_type
        node.add_output(type if type is not None else constant_type(value))
        node.insert_after(root._header)
        root._header = node
        return node.output

    # -- saved forward values --------------------------------------------------------------------
    def defines(self, v: Value) -> bool:
        return v.node.owner is self.fblock

    def fwd(self, v: Value) -> Value:
        """The backward's view of forward value ``v`` (saving it if needed)."""
        if v.is_constant:
            return self.const(v.constant, v.type)
        if not self.defines(v):
            if self.parent is None:
                raise IRError(f"value {v!r} is not visible from the top-level block")
            return self.parent.fwd(v)
        found = self._cache.get(v)
        if found is None:
            found = self._save(v)
            self._cache[v] = found
        return found

    def _save(self, v: Value) -> Value:
        if self.owner is None:
            self.ad.saved.append(v)
            return self.graph.add_input(v.type, v.name)
        if self.owner.kind == "prim::Loop":
            return self._save_per_iteration(v)
        return self._save_from_branch(v)

    def _save_per_iteration(self, v: Value) -> Value:
        loop = self.owner
        assert loop is not None and self.index is not None
        if v is self.fblock.params[0]:
            return self.index
        if self._recomputable(v):  # the step's row index (``t - 1``, ``t > 0``): made again
            node = v.node
            args = [self.fwd(x) for x in node.inputs]
            return self.emit(node.kind, *args, types=[v.type], at_header=True).output
        fgraph = self.ad.forward
        lst = fgraph.create("prim::ListConstruct", [], [ListType(v.type)],
                            names=[(v.name or "v") + "_saved"]).output
        lst.node.insert_before(loop)
        append = fgraph.create("prim::ListAppend", [lst, v], [])
        append.insert_before(self.fblock.return_node)
        assert self.parent is not None
        saved = self.parent.fwd(lst)
        return self.emit("prim::ListIndex", saved, self.index, types=[v.type],
                         at_header=True).output

    def _recomputable(self, v: Value, depth: int = 4) -> bool:
        """Whether ``v`` is a pure op's int or bool result of ints and bools, themselves the
        loop's counter, constants, values from outside the loop or such results (``t - 1``,
        ``t > 0``): the backward's step makes it again from the counter it undoes, instead of
        the forward saving one number per step on a list (which a native loop cannot append)."""
        if v is self.fblock.params[0] or v.is_constant or not self.defines(v):
            return True
        node = v.node
        op = lookup(node.kind)
        return (depth > 0 and op is not None and op.is_pure and v.type in (INT, BOOL)
                and len(node.outputs) == 1 and not node.blocks
                and all(x.type in (INT, BOOL) and self._recomputable(x, depth - 1)
                        for x in node.inputs))

    def _save_from_branch(self, v: Value) -> Value:
        node = self.owner
        assert node is not None and self.parent is not None
        fgraph = self.ad.forward
        for block in node.blocks:
            if block is self.fblock:
                block.add_return(v)
                continue
            filler = fgraph.create("prim::Uninitialized", [], [v.type])
            block.append(filler)
            block.add_return(filler.output)
        out = node.add_output(v.type, v.name)
        return self.parent.fwd(out)

    # -- cotangents -------------------------------------------------------------------------------
    def is_active(self, v: Value) -> bool:
        return v in self.ad.active

    def add_ct(self, v: Value, g: Cotangent) -> None:
        """Add ``g`` to the cotangent of forward value ``v``."""
        if g is None:
            return
        self.ad.gave(v)
        if not self.is_active(v):
            return
        self.ct[v] = self.plus(self.ct.get(v), g)

    def plus(self, a: Cotangent, b: Cotangent) -> Cotangent:
        if a is None:
            return b
        if b is None:
            return a
        if any(isinstance(g, list) or elements_of(g.type) is not None for g in (a, b)):
            a, b = self.structured(a), self.structured(b)
            return [self.plus(x, y) for x, y in zip(a, b)]
        return self.op("tensor::add", a, b)

    def structured(self, g: Cotangent) -> list[Cotangent]:
        """A tuple cotangent as a list of element cotangents."""
        if isinstance(g, list):
            return g
        if isinstance(g.type, ClassType):  # a NamedTuple: its fields, by name
            return [self._field(g, k) for k in range(len(g.type.fields))]
        assert isinstance(g.type, TupleType)
        return list(self.emit("prim::TupleUnpack", g, types=list(g.type.elements)).outputs)

    def _field(self, v: Value, k: int) -> Value:
        """Field ``k`` of backward NamedTuple ``v``."""
        name, t = v.type.fields[k]  # type: ignore[union-attr]
        node = self.graph.create("prim::GetAttr", [v], [t], {"name": name})
        self.bblock.append(node)
        return node.output

    def take_ct(self, v: Value) -> Cotangent:
        return self.ct.pop(v, None)

    def zeros(self, v: Value) -> Value:
        """Zeros shaped like forward tensor ``v`` (or like the value of optional tensor ``v``)."""
        t = v.type
        if isinstance(t, OptionalType):
            return self._optional_zeros(v, t)
        if isinstance(t, TensorType) and t.dtype and t.shape is not None and None not in t.shape:
            return self.op("tensor::zeros", tuple(t.shape), t.dtype)
        return self.op("tensor::zeros_like", self.fwd(v), None)

    def _optional_zeros(self, v: Value, t: OptionalType) -> Value:
        """The zero cotangent of an optional tensor: zeros like its value, and when it is None
        (no cotangent can reach it then; this only keeps the types whole) a zero scalar."""
        e = t.element
        if isinstance(e, TensorType) and e.dtype and e.shape is not None and None not in e.shape:
            return self.op("tensor::zeros", tuple(e.shape), e.dtype)
        fv = self.fwd(v)
        out_t = TensorType(e.dtype) if isinstance(e, TensorType) else TensorType()
        node = self.emit("prim::If", self.op("prim::IsNone", fv), types=[out_t])
        none_block, value_block = Block(self.graph, owner=node), Block(self.graph, owner=node)
        node.blocks.extend([none_block, value_block])
        for block, make in ((none_block, self._scalar_zero), (value_block, self._zeros_like)):
            saved, self.bblock = self.bblock, block
            try:
                block.add_return(make(fv, out_t))
            finally:
                self.bblock = saved
        return node.output

    def _scalar_zero(self, fv: Value, t: TensorType) -> Value:
        return self.op("tensor::zeros", (), t.dtype or "float64")

    def _zeros_like(self, fv: Value, t: TensorType) -> Value:
        value = self.emit("prim::unchecked_unwrap_optional", fv,
                          types=[t if t.dtype else TensorType()]).output
        return self.op("tensor::zeros_like", value, None)

    def materialize(self, v: Value, g: Cotangent) -> Value:
        """``g`` as one backward value (zeros when None, a tuple built for structured ones)."""
        elements = elements_of(v.type)
        if g is None and elements is not None:
            g = [None] * len(elements)
        if g is None:
            return self.zeros(v)
        if not isinstance(g, list):
            return g
        assert elements is not None
        items = []
        for k, (gk, tk) in enumerate(zip(g, elements)):
            items.append(self._element(gk, tk, v, k))
        if isinstance(v.type, ClassType):  # a NamedTuple's cotangent is one of its class
            return self.emit("prim::NamedTupleConstruct", *items, types=[v.type]).output
        return self.emit("prim::TupleConstruct", *items).output

    def _element(self, g: Cotangent, t: Type, v: Value, k: int) -> Value:
        if g is not None and not isinstance(g, list):
            return g
        if isinstance(t, TensorType) and t.dtype and t.shape is not None and None not in t.shape:
            return self.op("tensor::zeros", tuple(t.shape), t.dtype)
        if isinstance(t, TensorType):
            if isinstance(v.type, ClassType):
                item = self._field(self.fwd(v), k)
            else:
                item = self.emit("prim::TupleIndex", self.fwd(v), k, types=[t]).output
            return self.op("tensor::zeros_like", item, None)
        return self.const(None)
