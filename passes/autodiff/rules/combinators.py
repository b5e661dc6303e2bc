"""What the VJP rules share: the rule signature, shape helpers, ``unbroadcast``, and the
combinators that build a rule from per-input formulas (after JAX's ``ad.defjvp`` /
``ad.deflinear``).

A rule is ``rule(b, node, gs) -> [cotangent per input]``: ``b`` is the backward builder
(``passes.autodiff.context.BlockGrad``: ``b.op(kind, *args)`` emits an op, ``b.fwd(v)`` reads a
forward value, ``b.zeros(v)``, ``b.is_active(v)``), ``node`` the forward node and ``gs`` the
cotangents of its outputs (None where zero; at least one is not None). A rule returns None for an
input that gets no gradient.

- ``defbinary(dx, dy)``: a broadcasting binary op. Each partial ``dx(b, g, node)`` gives one
  operand's cotangent shaped like the output; it is called only when that operand is active, and
  its result is summed back to the operand's shape (``unbroadcast``).
- ``deflinear(transpose)``: an op linear in its first input (the others are static arguments):
  the cotangent is ``transpose(b, g, node)``, which reads no forward value but shapes.
- ``defunary(derivative)``: an elementwise op of one input: the cotangent is
  ``derivative(b, g, node)`` (``g * f'(x)``, reading ``x`` or the result as it needs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ir.core import Node, Value
from ir.errors import IRError
from ir.kinds import PARAM
from ir.registry import spelling
from ir.types import TensorType

Rule = Callable[[Any, Node, list[Any]], list[Any] | None]
"""``rule(b, node, gs) -> [cotangent per input]`` (see the module docstring)."""

Formula = Callable[[Any, Value, Node], Value]
"""``formula(b, g, node) -> cotangent of one input``, from the output's cotangent ``g``."""


# -- shapes ---------------------------------------------------------------------------------------
def static_shape(v: Value) -> tuple[int, ...] | None:
    """``v``'s shape when every size of it is known when compiling, else None."""
    t = v.type
    if not isinstance(t, TensorType) or t.shape is None or None in t.shape:
        return None
    return tuple(t.shape)  # type: ignore[arg-type]


def rank_of(v: Value) -> int:
    """``v``'s number of dimensions; refused when it is not known when compiling."""
    t = v.type
    read = None if isinstance(t, TensorType) and t.shape is not None else _unknown_field(v)
    if read is not None and read.inputs[0].node.kind == "prim::ListIndex":
        raise IRError(f"cannot differentiate the field '{read.attrs.get('name')}' of an "
                      "object read from a list that is changed or passed on, or whose items' "
                      "fields are assigned through it: build the list as a literal that is only "
                      "read (`[Cell(W1), Cell(W2)]`), or pass the arrays as arguments", read)
    if read is not None:
        raise IRError(f"cannot differentiate the field '{read.attrs.get('name')}' of an "
                      "object that is assigned more than once, or that is not built in the "
                      "differentiated function: pass the value as a separate argument", read)
    if not isinstance(t, TensorType) or t.shape is None:
        if _read_from_nested_container(v):
            raise IRError(f"cannot differentiate {spelling(v.node.kind)} of a value whose "
                          "number of dimensions is not known when compiling: it is read from "
                          "a container held in another container (a list of dicts of arrays, "
                          "whose arrays' shapes are joined into one type): pass the arrays as "
                          "one dict, or as lists of arrays (Ws, bs)")
        raise IRError(f"cannot differentiate {spelling(v.node.kind)} of a value whose number "
                      "of dimensions is not known when compiling (its shape changes from one "
                      "loop step to the next, or it comes from a list of arrays of several "
                      "shapes): keep its shape the same")
    return len(t.shape)


_READS = ("prim::ListIndex", "prim::DictGetItem", "prim::TupleIndex")


def _read_from_nested_container(v: Value, limit: int = 64) -> bool:
    """Whether ``v`` is computed from an item of a container itself read from a container
    (``layers[0]["W"]``), looking back at most ``limit`` nodes."""
    stack, seen = [v], set()
    while stack and len(seen) < limit:
        value = stack.pop()
        node = value.node
        if node in seen:
            continue
        seen.add(node)
        if node.kind in _READS and node.inputs and node.inputs[0].node.kind in _READS:
            return True
        stack.extend(node.inputs)
    return False


def _unknown_rank(v: Value) -> bool:
    return isinstance(v.type, TensorType) and v.type.shape is None


def _unknown_field(v: Value) -> Node | None:
    """The field read that the unknown rank of ``v`` comes from, when it comes from one: a
    ``prim::LoadAttr`` of unknown rank among the values ``v`` is computed or carried from
    through values of unknown rank (``h @ self.W``, ``h`` carried by a loop), taken at the
    outermost field of the object it reads (``self.a`` of ``self.a.W``: an inner object stored
    in a field that was not forwarded)."""
    todo, seen = [v], set()
    while todo:
        u = todo.pop()
        if u in seen or not (_unknown_rank(u) or u is v):
            continue
        seen.add(u)
        if u.node.kind == "prim::LoadAttr":
            read = u.node
            while read.inputs[0].node.kind == "prim::LoadAttr":
                read = read.inputs[0].node
            return read
        todo.extend(_sources(u))
    return None


def _sources(u: Value) -> list[Value]:
    """The values ``u`` is computed from, or carried from by a loop or an ``if``."""
    node = u.node
    if node.kind == PARAM:
        owner = node.owner.owner if node.owner is not None else None
        if owner is None or owner.kind != "prim::Loop" or u is node.owner.params[0]:
            return []
        k = node.owner.params.index(u)
        return [owner.inputs[k + 1], node.owner.returns[k]]
    if node.kind == "prim::Loop":
        k = node.outputs.index(u)
        return [node.inputs[k + 2], node.blocks[0].returns[k + 1]]
    if node.kind == "prim::If":
        k = node.outputs.index(u)
        return [block.returns[k] for block in node.blocks]
    return list(node.inputs)


def shape_arg(b: Any, v: Value) -> Any:
    """``v``'s shape as an op argument: a constant when known, else read at run time."""
    shape = static_shape(v)
    return shape if shape is not None else b.op("tensor::shape", b.fwd(v))


def unbroadcast(b: Any, g: Value | None, x: Value, like: Value | None = None) -> Value | None:
    """``g`` summed back to ``x``'s shape: ``g`` itself when its static shape (that of ``like``
    when given: the op's output, which ``g`` is shaped like) is ``x``'s. None when ``g`` is None
    or ``x`` is not an array (a Python number takes no gradient)."""
    if g is None or not isinstance(x.type, TensorType):
        return None
    sx = static_shape(x)
    if sx is not None and sx == static_shape(like if like is not None else g):
        return g
    return b.op("tensor::sum_to", g, shape_arg(b, x))


def unbroadcast_all(b: Any, node: Node, grads: list[Value | None]) -> list[Value | None]:
    """Each of a broadcasting op's input cotangents (shaped like its output) summed back to its
    input's shape."""
    return [unbroadcast(b, gx, x, node.output) for gx, x in zip(grads, node.inputs)]


# -- arithmetic on backward values ----------------------------------------------------------------
def product(b: Any, *xs: Any) -> Value:
    """``xs[0] * xs[1] * ...``, multiplied left to right."""
    out = xs[0]
    for x in xs[1:]:
        out = b.op("tensor::mul", out, x)
    return out


def total(b: Any, values: list[Value]) -> Value:
    """``values[0] + values[1] + ...``, added left to right."""
    out = values[0]
    for v in values[1:]:
        out = b.op("tensor::add", out, v)
    return out


def fwd_input(b: Any, node: Node, k: int = 0) -> Value:
    """The backward's view of the forward node's input ``k``."""
    return b.fwd(node.inputs[k])


def fwd_output(b: Any, node: Node) -> Value:
    """The backward's view of the forward node's (single) result."""
    return b.fwd(node.output)


# -- combinators ----------------------------------------------------------------------------------
def defbinary(dx: Formula, dy: Formula) -> Rule:
    """A rule for a broadcasting binary op ``x op y`` from one partial per operand,
    ``dx(b, g, node)`` and ``dy(b, g, node)``, each giving that operand's cotangent shaped like the
    output. The partials of the active operands run first, in operand order, then each result is
    summed back to its operand's shape."""
    def rule(b, node, gs):
        grads = [d(b, gs[0], node) if b.is_active(v) else None
                 for d, v in zip((dx, dy), node.inputs)]
        return unbroadcast_all(b, node, grads)
    return rule


def deflinear(transpose: Formula) -> Rule:
    """A rule for an op linear in its first input, whose other inputs are static (axes, shapes,
    indices): the input's cotangent is ``transpose(b, g, node)``."""
    return _first_input(transpose)


def defunary(derivative: Formula) -> Rule:
    """A rule for an elementwise op of one input: its cotangent is ``derivative(b, g, node)``."""
    return _first_input(derivative)


def _first_input(formula: Formula) -> Rule:
    def rule(b, node, gs):
        return [formula(b, gs[0], node)]
    return rule
