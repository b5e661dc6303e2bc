"""Numbers that a branch makes an array stay numpy's weak numbers.

``if gh is None: gh = 0`` beside an array ``gh`` joins a number and an array: the frontend makes
the constant number a 0-d array of its own dtype, int64 or float64 as ``np.asarray`` makes it,
marked as such (``tensor::full[joined_number]``). That is not what numpy computes with:
the source multiplies by the Python number 0, which numpy promotes as a weak scalar, so
``gh * co`` of a float32 ``co`` is float32 (a 0-d int64 array would make it float64, and
``(x + 1e-8) - x`` of a float32 ``x`` would be 1e-8 instead of 0). On the specialized graph:

- an ``If`` that returns such a number (read nowhere else) from one branch and an array of a
  known dtype from the other makes the number an array of that dtype (numpy's dtype for the
  weak number beside it), where the number is exact in it;
- an elementwise op that reads one beside an array reads the number itself (the ``If`` that
  made it was folded away: ``gh`` was not passed), which numpy promotes as the source does::

    %z : Long() = tensor::full[joined_number=True](%shape, %0, %none)
    %p = tensor::mul(%z, %co : Float(2, 3))          ->   %p = tensor::mul(%0, %co)

It runs after constant propagation, which folds the ``If`` a call decides, and propagates
shapes again where it changed something. A pipeline without it keeps the 0-d arrays as they are.
"""

from __future__ import annotations

import operator

import numpy as np

from ir.constants import constant_type, exact_in
from ir.core import Graph, Node, Value
from ir.kinds import CONSTANT, IF, RAISE
from ir.ops.elementwise import IN_PLACE_ATTR
from ir.registry import lookup
from ir.types import FLOAT, INT, NONE, STR, TensorType
from passes import shape_prop
from passes.constant_prop import INT64_MAX, INT64_MIN
from passes.shape_prop import set_number_dtype

NAME = "weak-numbers"

JOINED_NUMBER = "joined_number"
"""Attribute of the ``tensor::full`` the frontend makes of a constant number joined with an
array (``script.frontend.compiler``'s ``coerce``)."""

FULL = "tensor::full"


def run(graph: Graph) -> bool:
    """Settle the weak numbers branches return, and give elementwise ops the others' numbers."""
    changed = False
    for node in [n for n in graph.walk() if n.kind == IF]:
        for k in range(len(node.outputs)):
            returned = [b.returns[k] for b in node.blocks]
            for mine, other in (returned, returned[::-1]):
                if _weak(mine) and _settle(mine.node, other.type):
                    changed = True
    for node in [n for n in graph.walk() if n.kind in ARITHMETIC]:
        changed = _fold_arithmetic(node) or changed
    for full in [n for n in graph.walk() if n.kind == FULL and _weak(n.output)]:
        number = full.inputs[1]
        for use in list(full.output.uses):
            if _reads_as_number(use.node, use.index):
                use.node.set_input(use.index, number)
                changed = True
    if changed:  # the types the numbers change (float32 products where they were float64)
        shape_prop.run(graph)
    return changed


def _weak(v: Value) -> bool:
    """A 0-d array of a constant number joined with an array, its dtype not chosen."""
    if v.node.kind != FULL or not v.node.attrs.get(JOINED_NUMBER):
        return False
    dtype, number = v.node.inputs[2].node, v.node.inputs[1].node
    return (dtype.kind == CONSTANT and dtype.attrs.get("value") is None
            and number.kind == CONSTANT and type(number.attrs.get("value")) in (int, float))


ARITHMETIC = {
    "tensor::add": operator.add,
    "tensor::sub": operator.sub,
    "tensor::mul": operator.mul,
    "tensor::div": operator.truediv,
    "tensor::floordiv": operator.floordiv,
    "tensor::mod": operator.mod,
    "tensor::pow": operator.pow,
    "tensor::neg": operator.neg,
}
"""The arithmetic the source does with Python numbers, folded where one operand is a weak
number and the rest constant numbers: the result is the weak number the source computes."""


def _fold_arithmetic(node: Node) -> bool:
    """``1 - beta`` or ``s * 2`` of a weak number (the ``If`` that joined it folded) is the weak
    number Python computes, not a 0-d float64 array: ``(1 - beta) * g`` of a float32 ``g`` is
    float32, as in numpy. Left as it is where Python's arithmetic raises or gives a number
    outside int64 (numpy would compute that at run time)."""
    if node.attrs.get(IN_PLACE_ATTR) or not any(_weak(v) for v in node.inputs):
        return False
    numbers = []
    for v in node.inputs:
        number = v.node.inputs[1] if _weak(v) else v
        value = number.node.attrs.get("value") if number.node.kind == CONSTANT else None
        if type(value) not in (int, float):
            return False
        numbers.append(value)
    try:
        result = ARITHMETIC[node.kind](*numbers)
    except ZeroDivisionError as error:  # Python's error where numpy's arrays would give 0
        return _raises(node, str(error))
    except (ArithmeticError, ValueError):
        return False
    if type(result) not in (int, float) or (type(result) is int
                                              and not INT64_MIN <= result <= INT64_MAX):
        return False
    made = next(v for v in node.inputs if _weak(v)).node
    graph = node.owner.graph
    with graph.inserting_before(node):
        number = graph.insert(CONSTANT, (), [constant_type(result)], {"value": result})
        none = graph.insert(CONSTANT, (), [NONE], {"value": None})
        full = graph.insert(FULL, [made.inputs[0], number.output, none.output],
                            [TensorType(np.asarray(result).dtype.name, (),
                                        made.output.type.device)],
                            {JOINED_NUMBER: True}, source=node.source)
    node.output.replace_all_uses_with(full.output)
    node.erase()
    return True


def _raises(node: Node, message: str) -> bool:
    """Raise Python's ``ZeroDivisionError`` before ``node`` (``5 // gh`` after ``gh = 0``), once."""
    before = node.prev
    if before is not None and before.kind == RAISE and before.attrs.get(PYTHON_RAISES):
        return False
    graph = node.owner.graph  # type: ignore[union-attr]
    with graph.inserting_before(node):
        text = graph.insert(CONSTANT, (), [STR], {"value": message})
        graph.insert(RAISE, [text.output], [], {"exception": "ZeroDivisionError",
                                                PYTHON_RAISES: True}, source=node.source)
    return True


PYTHON_RAISES = "python_raises"
"""Attribute of the ``prim::RaiseException`` ``_raises`` puts before an op Python refuses."""


def _settle(full: Node, beside: object) -> bool:
    """Give ``full`` the dtype of the array ``beside`` it where its number is exact in it and
    numpy's promotion of the weak number keeps that dtype (an int beside ints or floats, a
    float beside floats)."""
    if not isinstance(beside, TensorType) or beside.dtype is None or len(full.output.uses) != 1:
        return False
    number = full.inputs[1].node.attrs["value"]
    kind = np.dtype(beside.dtype).kind
    if kind not in ("f", "i", "u") or (type(number) is float and kind != "f"):
        return False
    if not exact_in(number, beside.dtype):
        return False
    set_number_dtype(full, beside.dtype, JOINED_NUMBER)
    return True


def _reads_as_number(node: Node, index: int) -> bool:
    """Whether the elementwise ``node`` may read the number itself at ``index``: beside an
    array (its result stays one), or as arithmetic with Python numbers only (``beta * t`` of a
    loop counter ``t``: the Python number the source computes, weak beside a float32 array
    after it, where a 0-d float64 array would make the array float64); not the array an
    update in place writes."""
    op = lookup(node.kind)
    if op is None or not op.is_elementwise or (node.attrs.get(IN_PLACE_ATTR) and index == 0):
        return False
    others = [v for k, v in enumerate(node.inputs) if k != index]
    if any(isinstance(v.type, TensorType) and not _weak(v) for v in others):
        return True
    return _number_arithmetic(node, others) and _meets_arrays_only(node.output)


def _number_arithmetic(node: Node, others: list[Value]) -> bool:
    return node.kind in ARITHMETIC and bool(others) and all(v.type in (INT, FLOAT)
                                                            for v in others)


def _meets_arrays_only(value: Value, depth: int = 0) -> bool:
    """Whether every use of ``value`` (a Python number once its weak operand is the number
    itself) is elementwise arithmetic beside an array, or number arithmetic whose result is
    (within a few steps): not a join with an array (an ``If``'s branch, a loop-carried value,
    a list item), an index or a size, whose types the array made."""
    if not value.uses or depth > 4:
        return False
    for use in value.uses:
        node, op = use.node, lookup(use.node.kind)
        if op is None or not op.is_elementwise or (node.attrs.get(IN_PLACE_ATTR)
                                                   and use.index == 0):
            return False
        others = [v for k, v in enumerate(node.inputs) if k != use.index]
        if any(isinstance(v.type, TensorType) and not _weak(v) for v in others):
            continue
        if not (_number_arithmetic(node, others)
                and _meets_arrays_only(node.output, depth + 1)):
            return False
    return True


__all__ = ["NAME", "run"]
