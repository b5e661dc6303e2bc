"""The gradient soundness check: no path from a differentiated input to an output may end in an
implicit zero.

After the backward is built, ``check_gradient_paths`` walks the forward graph. A value *depends*
on a differentiated input when data flows from one into it: through ops (except those whose
derivative is zero by the op registry's ``zero_derivative`` trait), through containers (an item
stored into a list, dict or object makes the container depend; a read gives what was stored) and
through control flow (If and Loop results, loop-carried values). A value is *needed* when data
flows from it to an output the same way, read backwards (a container read at a constant index or
key needs only what was stored there, and a value stored into a list after every read of it is
not needed). For every value that depends and holds numbers (a float tensor, or a tuple or
optional of them), each use that passes it on to something needed (an op whose result is
needed, a store into a needed container, a branch or loop-body result, the graph's output) must
have given it a cotangent: the backward of that user ran and reached it.
Containers themselves are transparent (the values stored into them are checked). A use that
gave none would leave part of the gradient at zero without anyone saying so: the check raises an
``IRError`` ("cannot differentiate ...: the gradient would silently be zero") naming that user,
which the user-facing layer reports at the user's line.

The analysis is independent of how the backward handles each construct (lists' item cotangents,
dicts' cotangent dicts, outputs' seeds), so a construct the backward does not follow is caught
whether or not a rule exists for it. A rule that gives a cotangent from somewhere other than the
backward of the value's user records it with ``Differentiator.gave(v, by=user)``.
"""

from __future__ import annotations

from collections.abc import Iterable

from ir.core import Graph, Node, Value
from ir.errors import IRError
from ir.registry import lookup, spelling
from ir.types import (
    FLOAT,
    FLOAT_DTYPES,
    AnyType,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
    is_plain_object_type,
)

ALL = None
"""Every item of a container is read (an index not known when compiling, a whole-list use)."""

STORES = {"prim::ListAppend": 1, "prim::ListInsert": 2, "prim::ListSetItem": 2,
          "prim::ListExtend": 1, "prim::DictSetItem": 2, "prim::SetAttr": 1}
"""Ops that put a value into the container that is their first input: kind -> the value's
input index."""

KEYED_READS = {"prim::ListIndex": 1, "prim::DictGetItem": 1, "prim::DictGet": 1}
"""Ops that read one item of the container that is their first input: kind -> the key's input
index (``ListUnpack`` reads item k into output k, ``LoadAttr`` the field its ``name`` names)."""


Edge = tuple[Node | None, Value]
"""(user, value): the backward of ``user`` gave ``value`` a cotangent (None: the graph's output
cotangent, given by the caller)."""


def check_gradient_paths(graph: Graph, differentiated: Iterable[Value], given: set[Edge]
                         ) -> None:
    """Raise ``IRError`` when a value on a path from a ``differentiated`` input of ``graph`` (the
    augmented forward, before its saved outputs are added) to one of its outputs was not given a
    cotangent by a use that passes it on (``given``: the uses whose backward gave one)."""
    nodes = list(graph.walk())
    depends = _dependent(graph, nodes, set(differentiated))
    reads = _needed(graph, nodes, depends)
    gaps = [(user, v) for v in _values(graph, nodes) if v in depends and _holds_numbers(v.type)
            for user in _passing_uses(v, reads) if (_edge_key(user), v) not in given]
    if gaps:
        raise _refusal(gaps, nodes)


# -- what flows where ----------------------------------------------------------------------------
def carries(t: Type) -> bool:
    """Whether a value of type ``t`` can hold something a derivative flows through."""
    if isinstance(t, TensorType):
        return t.dtype is None or t.dtype in FLOAT_DTYPES
    if isinstance(t, TupleType):
        return any(carries(e) for e in t.elements)
    if isinstance(t, (ListType, OptionalType)):
        return carries(t.element)
    if isinstance(t, DictType):
        return carries(t.value)
    if isinstance(t, ClassType):  # (no fields, not a NamedTuple: a plain object, which may
        # hold anything: ``script.frontend.object_stores``)
        return is_plain_object_type(t) or any(carries(ft) for _, ft in t.fields)
    # a Python float made from a differentiated tensor (float(x.sum())) carries its derivative
    # on to what it scales; the backward gives it none, so such a path is refused where the
    # float was made
    return isinstance(t, AnyType) or t == FLOAT


def _holds_numbers(t: Type) -> bool:
    """Values the backward gives a cotangent of their own (containers are looked through)."""
    if isinstance(t, TensorType):
        return carries(t)
    if isinstance(t, TupleType):
        return any(_holds_numbers(e) for e in t.elements)
    if isinstance(t, OptionalType):
        return _holds_numbers(t.element)
    if isinstance(t, ClassType) and t.named_tuple:
        return any(_holds_numbers(ft) for _, ft in t.fields)
    return False


def _is_container(t: Type) -> bool:
    if isinstance(t, ClassType):
        return not t.named_tuple  # a NamedTuple is differentiated as a tuple
    return isinstance(t, (ListType, DictType, AnyType))


def _zero(node: Node) -> bool:
    op = lookup(node.kind)
    return op is not None and op.has_zero_derivative


def _values(graph: Graph, nodes: list[Node]) -> list[Value]:
    found = list(graph.inputs)
    for n in nodes:
        for b in n.blocks:
            found += b.params
        found += n.outputs
    return found


def _dependent(graph: Graph, nodes: list[Node], seeds: set[Value]) -> set[Value]:
    """Values data flows into from ``seeds`` (to a fixed point: containers and loops feed back)."""
    depends = {v for v in seeds if carries(v.type)}

    def mark(v: Value) -> bool:
        if v in depends or not carries(v.type):
            return False
        depends.add(v)
        return True

    changed = True
    while changed:
        changed = False
        for n in nodes:
            if _zero(n):
                continue
            if n.kind == "prim::If":
                for k, out in enumerate(n.outputs):
                    if any(b.returns[k] in depends for b in n.blocks):
                        changed |= mark(out)
            elif n.kind == "prim::Loop":
                body = n.blocks[0]
                for k, out in enumerate(n.outputs):
                    if n.inputs[2 + k] in depends or body.returns[1 + k] in depends:
                        changed |= mark(body.params[1 + k])
                        changed |= mark(out)
            elif n.kind in STORES:
                if n.inputs[STORES[n.kind]] in depends:
                    changed |= mark(n.inputs[0])
            elif any(v in depends for v in n.inputs):
                for out in n.outputs:
                    changed |= mark(out)
    return depends


class _Reads:
    """What of each needed value an output needs: for a container, the keys read (``ALL`` or a
    set of constant keys); for any other value, membership is enough."""

    def __init__(self) -> None:
        self.keys: dict[Value, set | None] = {}
        self.changed = False

    def __contains__(self, v: Value) -> bool:
        return v in self.keys

    def need(self, v: Value, key: object = ALL) -> None:
        """``v`` is needed; for a container, its item ``key`` (every item when ALL)."""
        if not carries(v.type):
            return
        if not _is_container(v.type):
            key = ALL
        if v not in self.keys:
            self.keys[v] = ALL if key is ALL else {key}
            self.changed = True
            return
        have = self.keys[v]
        if have is ALL:
            return
        if key is ALL:
            self.keys[v] = ALL
            self.changed = True
        elif key not in have:
            have.add(key)
            self.changed = True

    def needs_item(self, container: Value, key: object) -> bool:
        """Whether the item stored into ``container`` under ``key`` may be read by something
        needed."""
        if container not in self.keys:
            return False
        have = self.keys[container]
        return have is ALL or key is ALL or key in have


def _key(v: Value) -> object:
    return v.constant if v.is_constant and isinstance(v.constant, (int, str)) else ALL


def _needed(graph: Graph, nodes: list[Node], depends: set[Value]) -> _Reads:
    """Values (and container items) data flows from into a graph output (a fixed point)."""
    reads = _Reads()
    for out in graph.outputs:
        reads.need(out)
    reads.changed = True
    while reads.changed:
        reads.changed = False
        for n in reversed(nodes):
            _need_inputs(n, reads)
    return reads


def _need_inputs(n: Node, reads: _Reads) -> None:
    """Mark what ``n`` reads as needed when what it makes is."""
    kind = n.kind
    if _zero(n):
        return
    if kind == "prim::If":
        for k, out in enumerate(n.outputs):
            if out in reads:
                for b in n.blocks:
                    reads.need(b.returns[k])
        return
    if kind == "prim::Loop":
        body = n.blocks[0]
        for k, out in enumerate(n.outputs):
            param = body.params[1 + k]
            if out in reads or param in reads:  # the last step's, or the next step's input
                reads.need(body.returns[1 + k])
                reads.need(n.inputs[2 + k])
        return
    if kind in STORES:
        _need_stored(n, reads)
        return
    if kind == "prim::ListConstruct":
        lst = n.output
        literal = all(use.node.kind not in STORES for use in lst.uses)
        for k, item in enumerate(n.inputs):
            if _literal_item_needed(reads, lst, k, len(n.inputs), literal):
                reads.need(item)
        return
    if kind == "prim::DictConstruct":
        for key, value in zip(n.inputs[0::2], n.inputs[1::2]):
            if reads.needs_item(n.output, _key(key)):
                reads.need(value)
        return
    if kind in KEYED_READS and n.outputs and n.output in reads:
        reads.need(n.inputs[0], _key(n.inputs[KEYED_READS[kind]]))
        for v in n.inputs[2:]:
            reads.need(v)
        return
    if kind == "prim::ListUnpack":
        for k, out in enumerate(n.outputs):
            if out in reads:
                reads.need(n.inputs[0], k)
        return
    if kind == "prim::LoadAttr":
        if n.output in reads:
            reads.need(n.inputs[0], n.attrs.get("name", ALL))
        return
    if any(out in reads for out in n.outputs):
        for v in n.inputs:
            reads.need(v)


def _literal_item_needed(reads: _Reads, lst: Value, k: int, made: int, literal: bool) -> bool:
    """Whether item ``k`` of a list literal of ``made`` items may be read by something needed:
    a read of its position, or (when items are added later, so positions from the end move) of
    a negative one."""
    if lst not in reads:
        return False
    have = reads.keys[lst]
    if have is ALL:
        return True
    for key in have:
        if not isinstance(key, int):
            return True
        if key == k or (key < 0 and (not literal or key % made == k if made else False)):
            return True
    return False


def _need_stored(n: Node, reads: _Reads) -> None:
    """A value stored into a needed container is needed (``_store_needed``)."""
    if _store_needed(n, reads):
        reads.need(n.inputs[STORES[n.kind]], ALL)


def _store_needed(n: Node, reads: _Reads) -> bool:
    """Whether the value store ``n`` puts into its container may be read by something needed:
    not when only other keys are read (a list literal's own positions, other constant dict keys
    or object fields)."""
    container = n.inputs[0]
    if container not in reads:
        return False
    have = reads.keys[container]
    key: object = ALL
    if n.kind == "prim::DictSetItem":
        key = _key(n.inputs[1])
    elif n.kind == "prim::SetAttr":
        key = n.attrs.get("name", ALL)
    elif n.kind == "prim::ListAppend" and have is not ALL:
        made = _made(container)
        # an appended item sits past the literal's items: a read of one of those does not see it
        if made is not None and all(isinstance(k, int) and 0 <= k < made for k in have):
            return False
    if n.kind in LIST_WRITES and not _read_after(n, container):
        return False
    return have is ALL or key is ALL or key in have


LIST_WRITES = ("prim::ListAppend", "prim::ListInsert", "prim::ListSetItem", "prim::ListExtend")
"""Stores into a list: what they put there is seen only by the list's later reads."""

ORDERED_READS = ("prim::ListIndex", "prim::ListUnpack", "prim::ListPop", "prim::ListSlice",
                 "prim::ListAdd", "prim::ListExtend", "tensor::stack", "tensor::cat",
                 "prim::Print")
"""Uses of a list that read its items where they run (and keep no other name for it)."""


def _read_after(store: Node, lst: Value) -> bool:
    """Whether something may read list ``lst`` after ``store`` changed it: a read later in
    program order, or one in a loop around both that ``lst`` outlives (its next step). A list
    that is not a literal made here, or that has another name (returned, kept in a tuple or
    another container, an If's or loop's result), may be read anywhere."""
    if lst.node.kind != "prim::ListConstruct":
        return True
    for use in lst.uses:
        user = use.node
        if user is store or user.kind in ("prim::len", "prim::ListContains"):
            continue
        if user.kind in LIST_WRITES and use.index == 0:
            continue
        if user.kind not in ORDERED_READS:
            return True
        if store.is_before(user) or _in_a_loop_with(store, user, lst.node.owner):
            return True
    return False


def _in_a_loop_with(a: Node, b: Node, home: object) -> bool:
    """Whether a loop nested in block ``home`` holds both ``a`` and ``b`` (``b`` then runs
    after ``a`` in the next step)."""
    block = a.owner
    while block is not None and block is not home:
        loop = block.owner
        if loop is None:
            return False
        if loop.kind == "prim::Loop" and b.is_inside(loop):
            return True
        block = loop.owner
    return False


def _made(lst: Value) -> int | None:
    """How many items a list literal was made with (None when it was not made by one)."""
    return len(lst.node.inputs) if lst.node.kind == "prim::ListConstruct" else None


# -- the uses that must give a cotangent --------------------------------------------------------
def _passing_uses(v: Value, reads: _Reads) -> list[Node]:
    """The users of ``v`` that pass it on to something needed (a block's Return node stands for
    the If or Loop result, or the graph output, it gives)."""
    users = []
    for use in v.uses:
        user, k = use.node, use.index
        if user.kind == "prim::Return":
            owner = user.owner.owner if user.owner is not None else None
            if owner is None or _result_needed(owner, k, reads):
                users.append(user)
        elif _zero(user) or user.kind == "prim::If":
            continue
        elif user.kind == "prim::Loop":
            if k >= 2 and _carried_needed(user, k - 2, reads):
                users.append(user)
        elif user.kind in STORES:
            if k == STORES[user.kind] and _store_needed(user, reads):
                users.append(user)
        elif user.kind == "prim::ListConstruct":
            lst = user.output
            literal = all(u.node.kind not in STORES for u in lst.uses)
            if _literal_item_needed(reads, lst, k, len(user.inputs), literal):
                users.append(user)
        elif user.kind == "prim::DictConstruct":
            if k % 2 == 1 and reads.needs_item(user.output, _key(user.inputs[k - 1])):
                users.append(user)
        elif any(o in reads for o in user.outputs):
            users.append(user)
    return users


def _result_needed(owner: Node, k: int, reads: _Reads) -> bool:
    """Whether result ``k`` of a block of If/Loop ``owner`` flows on to something needed."""
    if owner.kind == "prim::If":
        return owner.outputs[k] in reads
    if owner.kind == "prim::Loop":
        return k >= 1 and _carried_needed(owner, k - 1, reads)
    return True


def _carried_needed(loop: Node, k: int, reads: _Reads) -> bool:
    return loop.outputs[k] in reads or loop.blocks[0].params[1 + k] in reads


def _edge_key(user: Node) -> Node | None:
    """The node whose backward gives the cotangent a use of a value asks for: the user itself,
    the If/Loop for a block's result, None for the graph's output."""
    if user.kind != "prim::Return":
        return user
    return user.owner.owner if user.owner is not None else None


# -- the refusal ---------------------------------------------------------------------------------
def _refusal(gaps: list[tuple[Node, Value]], nodes: list[Node]) -> IRError:
    """The error for the gap that explains the others: a value put into a container the backward
    does not see through (what is read back from it then has no derivative either, so the ops
    reading it pass nothing on), else the use nearest the outputs (everything upstream of a
    dropped cotangent misses one too)."""
    order = {n: k for k, n in enumerate(nodes)}

    def rank(gap: tuple[Node, Value]) -> tuple[bool, int]:
        key = _edge_key(gap[0])
        position = order.get(key, len(order)) if key is not None else len(order)
        return gap[0].kind in CONSTRUCTS, position

    user, v = max(gaps, key=rank)
    return _error(user, v)


CONSTRUCTS = {
    "prim::DictSetItem": ("a value stored in a dict (`d[k] = v`)",
                          "keep such values in a tuple, or in a list that is np.stack-ed"),
    "prim::DictConstruct": ("a value stored in a dict (`{k: v}`)",
                            "keep such values in a tuple, or in a list that is np.stack-ed"),
    "prim::ListAppend": ("a value appended to a list (`.append`, a list comprehension)",
                         "np.stack the list and use the array, or index the array directly"),
    "prim::ListConstruct": ("a value put in a list (`[a, b]`)",
                            "return a tuple instead of a list, or np.stack the list"),
    "prim::ListSetItem": ("a value written into a list (`l[i] = v`)",
                          "build a new list, or np.stack the items and use the array"),
    "prim::ListInsert": ("a value inserted into a list (`.insert`)",
                         "append in order and np.stack the list"),
    "prim::ListExtend": ("a list extended by another (`.extend`)",
                         "append the items one by one and np.stack the list"),
    "prim::SetAttr": ("a value stored in an object's field (`obj.name = v`)",
                      "pass the value as a separate argument or result"),
    "prim::NamedTupleConstruct": ("a value put in a NamedTuple",
                                  "use a plain tuple on the differentiated path"),
    "prim::CreateObject": ("a value stored in a script-class object",
                           "pass the value as a separate argument or result"),
    "prim::Float": ("a Python float made from an array (`float(...)`)",
                    "keep the value an array (`x * y.sum()` rather than `x * float(y.sum())`)"),
    "prim::item": ("a Python number made from an array (`.item()`)",
                   "keep the value an array (`x * y.sum()` rather than `x * y.sum().item()`)"),
}
"""How a message names the construct that dropped a cotangent, and a way around it (other
constructs are named by their op's spelling)."""


def _error(node: Node, v: Value) -> IRError:
    if node.kind == "prim::Return":
        node = _edge_key(node) or v.node
    what, way_out = CONSTRUCTS.get(node.kind, (
        f"the result of `{spelling(node.kind)}`",
        "compute the value from arrays directly, without this construct"))
    return IRError(
        f"cannot differentiate {what}: the gradient would silently be zero (the value depends "
        "on a differentiated argument and reaches the result, but its gradient is dropped "
        f"here); {way_out}", node)
