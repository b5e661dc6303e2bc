"""The IR verifier: structural, SSA, use-list and type checks of a ``Graph``.

``verify(graph)`` raises ``VerifyError(message, node)``; the message names the offending node (its
kind, output names and source position) and what is wrong. Any other exception met while looking
at a corrupted graph is wrapped into a ``VerifyError`` naming the node being checked, so callers
only ever see ``VerifyError``.

The checks run in this order, so the first (most basic) problem is the one reported:

1. structure: linked lists of every block, owners, the graph of every block, no node twice;
2. per node, in program order: inputs defined before use (SSA dominance), use lists, output
   back-pointers, registry schema (kind, arity, argument kinds, block count), the special rules
   of ``prim::If`` / ``prim::Loop`` / ``prim::Constant`` / subgraph nodes, and agreement of the
   output types with the op's type rule;
3. use lists of every value: each recorded use is a real input of a node in the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ir.core import CONSTANT, PARAM, RETURN, SUBGRAPH, Block, Graph, Node, Value
from ir.errors import VerifyError
from ir.kinds import IF, LOOP
from ir.registry import OpDef, ShapeError, accepts, check_arity, infer_types, lookup
from ir.types import (
    BOOL,
    INT,
    NONE,
    AnyType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
    devices_of,
    is_subtype,
    strip_optional,
    with_device,
)

Decide = Callable[[Value], "bool | None"]
"""The value of an If condition when the types alone decide it, else None
(``passes.shape_prop.static_condition``)."""


def verify(graph: Graph, decide: Decide | None = None) -> None:
    """Raise ``VerifyError`` naming the node when ``graph`` is malformed; return None otherwise.

    With ``decide``, a node in an If branch the types rule out (one that never runs, which
    shape propagation drops: an inlined ``if x.ndim == 3:`` called with a matrix) may have
    inputs its rule rejects; what its types claim is still checked against the rule."""
    _GraphVerifier(graph, (), decide).run()


# -- describing nodes and values ------------------------------------------------------------------
def value_text(v: Any) -> str:
    """``%name`` for a value with a name hint, else a description of where it comes from."""
    if not isinstance(v, Value):
        return f"<not a Value: {type(v).__name__}>"
    if v.name:
        return f"%{v.name}"
    node = v.node
    if isinstance(node, Node) and node.kind == PARAM:
        return f"%<param {v.index}>"
    return f"%<output {v.index} of {_kind_text(node)}>"


def typed_value_text(v: Any) -> str:
    """``%name : Type``."""
    text = value_text(v)
    return f"{text} : {v.type}" if isinstance(v, Value) else text


def describe(node: Any) -> str:
    """The node as a message names it: ``tensor::add (%hy) at cell.py:3:4``."""
    try:
        return _describe(node)
    except Exception:  # a corrupted node must not stop us from naming it
        return _kind_text(node)


def _kind_text(node: Any) -> str:
    kind = getattr(node, "kind", None)
    return kind if isinstance(kind, str) else f"<{type(node).__name__} without a kind>"


def _describe(node: Node) -> str:
    if node.kind == RETURN:
        return _describe_sentinel(node, "return")
    if node.kind == PARAM:
        return _describe_sentinel(node, "parameters")
    text = _kind_text(node)
    if node.outputs:
        text += " (" + ", ".join(value_text(v) for v in node.outputs) + ")"
    if node.source is not None:
        text += f" at {node.source}"
    return text


def _describe_sentinel(node: Node, what: str) -> str:
    block = node.owner
    if block is None or block.owner is None:
        return f"graph {what} ({node.kind})"
    owner = block.owner
    index = next((i for i, b in enumerate(owner.blocks) if b is block), "?")
    return f"{what} of block {index} of {describe(owner)} ({node.kind})"


def _fail(node: Any, problem: str) -> VerifyError:
    return VerifyError(f"{describe(node)}: {problem}", node)


# -- the verifier -------------------------------------------------------------------------------
class _GraphVerifier:
    """One verification of one graph; ``stack`` holds the enclosing graphs of subgraphs."""

    def __init__(self, graph: Graph, stack: tuple[Graph, ...], decide: Decide | None = None):
        self.graph = graph
        self.decide = decide
        self.stack = stack + (graph,)
        self.nodes: set[Node] = set()
        """every node of the graph, sentinels included (every recorded user must be one)."""
        self.defined_in: dict[Value, Block] = {}
        """every value the graph defines -> the block it is defined in."""
        self.scope: set[Value] = set()
        """the values visible at the node being checked."""
        self.current: Any = None
        """the node being checked, named when something unexpected breaks."""

    def run(self) -> None:
        try:
            self._check_graph()
        except VerifyError:
            raise
        except Exception as e:  # a corruption the checks did not foresee
            raise _fail(self.current, f"malformed graph ({type(e).__name__}: {e})") from e

    def _check_graph(self) -> None:
        top = self.graph.block
        if not isinstance(top, Block):
            raise VerifyError(f"graph's top block is a {type(top).__name__}, not a Block")
        if top.owner is not None:
            raise _fail(top.owner, "it claims the graph's top block as its own")
        if top.graph is not self.graph:
            raise VerifyError("the graph's top block belongs to another graph", top.param_node)
        self._check_structure(top)
        self._check_block(top)
        self._check_use_lists()

    # -- 1. structure ----------------------------------------------------------------------------
    def _check_structure(self, block: Block) -> None:
        for node in self._linked_nodes(block):
            self.current = node
            self._check_outputs_defined(node, block)
            for index, sub in enumerate(node.blocks):
                if not isinstance(sub, Block) or sub.owner is not node:
                    raise _fail(node, f"block {index} does not name the node as its owner")
                if sub.graph is not self.graph:
                    raise _fail(node, f"block {index} belongs to another graph")
                self._check_structure(sub)

    def _linked_nodes(self, block: Block) -> list[Node]:
        """The nodes of ``block`` (sentinels included), checking every pointer on the way."""
        first, last = block.param_node, block.return_node
        self._check_sentinel(first, block, PARAM)
        self._check_sentinel(last, block, RETURN)
        if first.prev is not None or last.next is not None:
            raise _fail(first, "the block's list does not start at its parameters and end at "
                               "its return")
        nodes, prev, node = [first], first, first.next
        while node is not last:
            if node is None:
                raise _fail(prev, "the block's list ends before reaching the block's return")
            self._check_linked(node, prev, block)
            nodes.append(node)
            prev, node = node, node.next
        if last.prev is not prev:
            raise _fail(last, f"its prev pointer is not {describe(prev)}")
        nodes.append(last)
        return nodes

    def _check_sentinel(self, node: Node, block: Block, kind: str) -> None:
        if not isinstance(node, Node) or node.kind != kind:
            raise VerifyError(f"a block's sentinel is {describe(node)}, not {kind}", node)
        if node.owner is not block:
            raise _fail(node, "its owner is not the block it terminates")
        self._add_node(node)

    def _check_linked(self, node: Node, prev: Node, block: Block) -> None:
        if not isinstance(node, Node):
            raise _fail(prev, f"its next pointer is a {type(node).__name__}, not a Node")
        if not isinstance(node.kind, str):
            raise _fail(node, f"its kind is a {type(node.kind).__name__}, not a str")
        if node.kind in (PARAM, RETURN):
            raise _fail(node, "a block sentinel appears in the middle of a block")
        if node.prev is not prev:
            raise _fail(node, f"its prev pointer is not {describe(prev)}, the node before it")
        if node.owner is not block:
            raise _fail(node, "its owner is not the block it is linked into")
        self._add_node(node)

    def _add_node(self, node: Node) -> None:
        if node in self.nodes:
            raise _fail(node, "the node appears twice in the graph (a cycle or a shared node)")
        self.nodes.add(node)

    def _check_outputs_defined(self, node: Node, block: Block) -> None:
        for index, v in enumerate(node.outputs):
            if not isinstance(v, Value):
                raise _fail(node, f"output {index} is a {type(v).__name__}, not a Value")
            if v.node is not node or v.index != index:
                raise _fail(node, f"output {index} ({value_text(v)}) does not point back to it "
                                  f"as output {index}")
            if not isinstance(v.type, Type):
                raise _fail(node, f"output {index} has a {type(v.type).__name__} as its type")
            if v in self.defined_in:
                raise _fail(node, f"{value_text(v)} is defined twice")
            self.defined_in[v] = block

    # -- 2. nodes in program order -----------------------------------------------------------------
    def _check_block(self, block: Block) -> None:
        added = list(block.params)
        self.scope.update(added)
        for node in block:
            self.current = node
            self._check_node(node)
            for sub in node.blocks:
                self._check_block(sub)
            self.scope.update(node.outputs)
            added.extend(node.outputs)
        self.current = block.return_node
        self._check_inputs(block.return_node)
        self.scope.difference_update(added)

    def _check_node(self, node: Node) -> None:
        self._check_inputs(node)
        op = lookup(node.kind)
        if op is None:
            raise _fail(node, f"unknown op kind {node.kind!r}")
        self._check_shape_of_node(node, op)
        special = _SPECIAL_CHECKS.get(node.kind)
        if special is not None:
            special(node)
        self._check_argument_kinds(node, op)
        if SUBGRAPH in node.attrs:
            self._check_subgraph(node)
        _check_inferred_types(node, rejects=not self._ruled_out(node))

    def _ruled_out(self, node: Node) -> bool:
        """Whether ``node`` sits in an If branch that ``decide`` says never runs."""
        if self.decide is None:
            return False
        block = node.owner
        while block is not None and block.owner is not None:
            owner = block.owner
            if owner.kind == IF:
                taken = self.decide(owner.inputs[0])
                if taken is not None and block is not owner.blocks[0 if taken else 1]:
                    return True
            block = owner.owner
        return False

    def _check_inputs(self, node: Node) -> None:
        for index, v in enumerate(node.inputs):
            if not isinstance(v, Value):
                raise _fail(node, f"input {index} is a {type(v).__name__}, not a Value")
            if v not in self.scope:
                why = self._why_not_visible(node, v)
                raise _fail(node, f"input {index} ({value_text(v)}) {why}")
            hits = sum(1 for u in v.uses if u.node is node and u.index == index)
            if hits != 1:
                raise _fail(node, f"input {index} ({value_text(v)}) is recorded {hits} times in "
                                  "that value's use list, not once")

    def _why_not_visible(self, node: Node, v: Value) -> str:
        block = self.defined_in.get(v)
        if block is None:
            return "is not defined in this graph (it belongs to another graph or an erased node)"
        if v.node is node:
            return "is the node's own output"
        if block in _enclosing_blocks(node):
            return "is used before it is defined"
        owner = block.owner
        where = f" of {describe(owner)}" if owner is not None else ""
        return f"is defined inside a nested block{where} and is not visible here"

    def _check_shape_of_node(self, node: Node, op: OpDef) -> None:
        """Input and block counts against the schema."""
        try:
            check_arity(op, len(node.inputs))
        except ShapeError as e:
            raise _fail(node, f"wrong number of inputs: {e} (schema {op.signature})") from e
        if len(node.blocks) != op.blocks:
            raise _fail(node, f"has {len(node.blocks)} blocks, {op.kind} has {op.blocks}")

    def _check_argument_kinds(self, node: Node, op: OpDef) -> None:
        for index, v in enumerate(node.inputs):
            arg = op.args[min(index, len(op.args) - 1)]
            if _is_unknown(v.type) or accepts(arg.kind, v.type):
                continue
            raise _fail(node, f"input {index} ({typed_value_text(v)}) is passed as argument "
                              f"'{arg.name}', which expects {arg.kind}")

    def _check_subgraph(self, node: Node) -> None:
        sub = node.attrs[SUBGRAPH]
        if not isinstance(sub, Graph):
            raise _fail(node, f"attribute {SUBGRAPH} is a {type(sub).__name__}, not a Graph")
        if any(sub is g for g in self.stack):
            raise _fail(node, "its subgraph contains itself")
        if len(sub.inputs) != len(node.inputs):
            raise _fail(node, f"has {len(node.inputs)} inputs but its subgraph takes "
                              f"{len(sub.inputs)}")
        if len(sub.outputs) != len(node.outputs):
            raise _fail(node, f"has {len(node.outputs)} outputs but its subgraph returns "
                              f"{len(sub.outputs)}")
        try:
            _GraphVerifier(sub, self.stack, self.decide).run()
        except VerifyError as e:
            raise VerifyError(f"in the subgraph of {describe(node)}: {e}", e.node) from e

    # -- 3. use lists ----------------------------------------------------------------------------
    def _check_use_lists(self) -> None:
        for v in self.defined_in:
            self.current = v.node
            for use in v.uses:
                self._check_use(v, use.node, use.index)

    def _check_use(self, v: Value, user: Node, index: int) -> None:
        if user not in self.nodes:
            where = "detached" if getattr(user, "owner", None) is None else "not in this graph"
            raise _fail(v.node, f"{value_text(v)} is used by {describe(user)}, which is {where}")
        inputs = user.inputs
        if not 0 <= index < len(inputs) or inputs[index] is not v:
            raise _fail(v.node, f"the use list of {value_text(v)} records input {index} of "
                                f"{describe(user)}, which does not read it")


# -- per-kind rules ------------------------------------------------------------------------------
def _check_if(node: Node) -> None:
    cond = node.inputs[0].type
    if not (cond in (BOOL, INT) or isinstance(cond, TensorType) or _is_unknown(cond)):
        raise _fail(node, f"condition {typed_value_text(node.inputs[0])} is not bool, int or "
                          "Tensor")
    for index, block in enumerate(node.blocks):
        if block.params:
            raise _fail(node, f"block {index} has {len(block.params)} parameters; If blocks "
                              "take none")
        _check_results(node, index, block.returns, node.outputs)


def _check_loop(node: Node) -> None:
    trip, cond, *carried = node.inputs
    if not _is_type(trip.type, (INT,)):
        raise _fail(node, f"max trip count {typed_value_text(trip)} is not an int")
    if not _is_type(cond.type, (BOOL, INT)):
        raise _fail(node, f"initial condition {typed_value_text(cond)} is not a bool")
    body = node.blocks[0]
    n = len(carried)
    if len(body.params) != n + 1:
        raise _fail(node, f"loop body has {len(body.params)} parameters, expected {n + 1} "
                          f"(the iteration count and {n} carried values)")
    if len(body.returns) != n + 1:
        raise _fail(node, f"loop body returns {len(body.returns)} values, expected {n + 1} "
                          f"(the condition and {n} carried values)")
    if len(node.outputs) != n:
        raise _fail(node, f"has {len(node.outputs)} outputs for {n} carried values")
    if not _is_type(body.params[0].type, (INT,)):
        raise _fail(node, f"iteration count {typed_value_text(body.params[0])} is not an int")
    if not _is_type(body.returns[0].type, (BOOL, INT)):
        raise _fail(node, f"loop body's condition {typed_value_text(body.returns[0])} is not "
                          "a bool")
    _check_carried_types(node, carried, body)


def _check_carried_types(node: Node, carried: list[Value], body: Block) -> None:
    for k, (init, param, result, out) in enumerate(
            zip(carried, body.params[1:], body.returns[1:], node.outputs, strict=True)):
        pairs = ((init, param, "initial value", "body parameter"),
                 (result, param, "body result", "body parameter"),
                 (init, out, "initial value", "output"),
                 (result, out, "body result", "output"))
        for a, b, a_name, b_name in pairs:
            if not is_subtype(a.type, b.type):
                raise _fail(node, f"carried value {k}: {a_name} {typed_value_text(a)} is not a "
                                  f"subtype of the {b_name} type {b.type}")


def _check_results(node: Node, index: int, results: Iterable[Value], outputs: list[Value]) -> None:
    results = tuple(results)
    if len(results) != len(outputs):
        raise _fail(node, f"block {index} returns {len(results)} values but the node has "
                          f"{len(outputs)} outputs")
    for k, (r, out) in enumerate(zip(results, outputs, strict=True)):
        if not is_subtype(r.type, out.type):
            raise _fail(node, f"block {index} result {k} {typed_value_text(r)} is not a subtype "
                              f"of the output type {out.type}")


def _check_constant(node: Node) -> None:
    if "value" not in node.attrs:
        raise _fail(node, "a constant without a 'value' attribute")
    if len(node.outputs) != 1:
        raise _fail(node, f"a constant has {len(node.outputs)} outputs, not 1")
    value, out = node.attrs["value"], node.outputs[0].type
    if isinstance(value, list) and not value and isinstance(out, ListType):
        return  # an empty list constant fits every list type
    vtype = _constant_type(value)
    if vtype is None:
        raise _fail(node, f"value of type {type(value).__name__} cannot be a constant")
    if "cuda" in devices_of(out):  # a host array stands for its copy on the call's device
        vtype = with_device(vtype, "cuda")
    if not is_subtype(vtype, out):
        raise _fail(node, f"constant value {_short(value)} has type {vtype}, which is not a "
                          f"subtype of the output type {out}")


def _constant_type(value: Any) -> Type | None:
    from ir.constants import constant_type
    try:
        return constant_type(value)
    except TypeError:
        pass
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if dtype is not None and isinstance(shape, tuple):  # an array of another library (CuPy)
        return TensorType(str(dtype), shape)
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_SPECIAL_CHECKS = {IF: _check_if, LOOP: _check_loop, CONSTANT: _check_constant}
"""Kinds with structural rules beyond their schema."""


# -- type rules ------------------------------------------------------------------------------------
def _check_inferred_types(node: Node, rejects: bool = True) -> None:
    """The output types must not contradict the op's type rule (unknown facts are fine); with
    ``rejects``, the rule must also accept the inputs."""
    if any(_is_unknown(v.type) for v in node.inputs):
        return
    try:
        inferred = infer_types(node)
    except ShapeError as e:
        if not rejects:
            return
        raise _fail(node, f"its type rule rejects the inputs: {e}") from e
    except Exception as e:  # a rule that breaks on these inputs
        raise _fail(node, f"its type rule failed ({type(e).__name__}: {e})") from e
    if len(inferred) != len(node.outputs):
        raise _fail(node, f"has {len(node.outputs)} outputs but its type rule gives "
                          f"{len(inferred)}")
    for v, t in zip(node.outputs, inferred, strict=True):
        if not compatible(v.type, t):
            raise _fail(node, f"output {typed_value_text(v)} contradicts the inferred type {t}")


def compatible(a: Type, b: Type) -> bool:
    """False only when ``a`` and ``b`` state different facts (dtype, rank, a dim, a kind)."""
    if a == b or _is_unknown(a) or _is_unknown(b):
        return True
    if isinstance(a, OptionalType) or isinstance(b, OptionalType):
        a_inner, b_inner = strip_optional(a), strip_optional(b)
        return NONE in (a_inner, b_inner) or compatible(a_inner, b_inner)
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return _compatible_tensors(a, b)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.elements) == len(b.elements) and all(
            compatible(x, y) for x, y in zip(a.elements, b.elements, strict=True))
    if isinstance(a, ListType) and isinstance(b, ListType):
        return compatible(a.element, b.element)
    if isinstance(a, DictType) and isinstance(b, DictType):
        return a.key == b.key and compatible(a.value, b.value)
    return False


def _compatible_tensors(a: TensorType, b: TensorType) -> bool:
    if None not in (a.dtype, b.dtype) and a.dtype != b.dtype:
        return False
    if None not in (a.device, b.device) and a.device != b.device:
        return False
    if a.shape is None or b.shape is None:
        return True
    if len(a.shape) != len(b.shape):
        return False
    return all(x is None or y is None or x == y for x, y in zip(a.shape, b.shape, strict=True))


def _is_unknown(t: Type) -> bool:
    return isinstance(t, AnyType)


def _is_type(t: Type, allowed: tuple[Type, ...]) -> bool:
    return t in allowed or _is_unknown(t)


def _enclosing_blocks(node: Node) -> list[Block]:
    blocks = []
    block = node.owner
    while block is not None:
        blocks.append(block)
        block = block.owner.owner if block.owner is not None else None
    return blocks
