"""Structure ops (``prim::``): constants, control flow, tuples, lists, subgraphs, exceptions.

Ops whose output types are chosen when the node is built (If/Loop outputs, an empty list's element
type) keep those types: their rule returns the node's current output types.
"""

from __future__ import annotations

from ir.constants import constant_type
from ir.core import Node
from ir.registry import (
    ALIASES,
    EFFECTS,
    FRESH,
    NOT_CONSTANT,
    PURE,
    READS,
    SIDE_EFFECTS,
    WRITES,
    ZERO_DERIVATIVE,
    ShapeError,
    const,
    defop,
)
from ir.types import (
    BOOL,
    INT,
    NONE,
    STR,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TupleType,
    Type,
    unify,
)

KEPT = (ALIASES,)
"""An operand the op puts into its output (or into another operand)."""
READ_AND_KEPT = (READS, ALIASES)
"""An operand whose items the op reads into a new container."""
CHECKED_WRITE = (READS, WRITES)
"""An operand the op changes in place after checking its length (so it may raise)."""


def keep_types(node: Node) -> list[Type]:
    """The node's output types as built (types chosen by the frontend or a pass)."""
    return [v.type for v in node.outputs]


def _constant(node: Node) -> list[Type]:
    if node.outputs and node.outputs[0].type != constant_type(node.attrs.get("value")):
        return [node.outputs[0].type]  # e.g. None typed as Tensor?, or [] typed as Tensor[]
    return [constant_type(node.attrs.get("value"))]


def _tuple_construct(node: Node) -> list[Type]:
    return [TupleType(tuple(v.type for v in node.inputs))]


def _tuple_unpack(node: Node) -> list[Type]:
    t = node.inputs[0].type
    assert isinstance(t, TupleType)
    if len(node.outputs) != len(t.elements):
        raise ShapeError(f"cannot unpack a tuple of {len(t.elements)} into {len(node.outputs)}")
    return list(t.elements)


def _tuple_index(node: Node) -> list[Type]:
    t = node.inputs[0].type
    assert isinstance(t, TupleType)
    i = const(node, 1)
    if i is NOT_CONSTANT:
        raise ShapeError("a tuple index must be a constant")
    if not -len(t.elements) <= i < len(t.elements):
        raise ShapeError(f"tuple index {i} out of range for {t}")
    return [t.elements[i]]


def _tuple_slice(node: Node) -> list[Type]:
    t = node.inputs[0].type
    assert isinstance(t, TupleType)
    start, stop, step = (const(node, k, None) for k in (1, 2, 3))
    if NOT_CONSTANT in (start, stop, step):
        raise ShapeError("tuple slice bounds must be constants")
    return [TupleType(t.elements[slice(start, stop, step)])]


def _list_construct(node: Node) -> list[Type]:
    if not node.inputs:
        return keep_types(node)
    elem: Type | None = node.inputs[0].type
    for v in node.inputs[1:]:
        elem = None if elem is None else unify(elem, v.type)
    if elem is None:
        raise ShapeError("list elements have different types: " +
                         ", ".join(str(v.type) for v in node.inputs))
    declared = node.outputs[0].type if node.outputs else None
    if isinstance(declared, ListType) and declared.element != elem:
        return [declared] if unify(declared.element, elem) == declared.element else [ListType(elem)]
    return [ListType(elem)]


def _list_element(node: Node) -> list[Type]:
    t = node.inputs[0].type
    assert isinstance(t, ListType)
    return [t.element]


def _list_unpack(node: Node) -> list[Type]:
    t = node.inputs[0].type
    assert isinstance(t, ListType)
    return [t.element] * len(node.outputs)


def _same_as_first(node: Node) -> list[Type]:
    return [node.inputs[0].type]


def _int(node: Node) -> list[Type]:
    return [INT]


def _int_list(node: Node) -> list[Type]:
    return [ListType(INT)]


def _bool(node: Node) -> list[Type]:
    return [BOOL]


def _no_outputs(node: Node) -> list[Type]:
    return []


def _optional_unwrap(node: Node) -> list[Type]:
    t = node.inputs[0].type
    if t == NONE:
        return keep_types(node)  # only in a branch the types rule out; constant-prop drops it
    return [t.element if isinstance(t, OptionalType) else t]


def _dict_value(node: Node) -> list[Type]:
    t = node.inputs[0].type
    assert isinstance(t, DictType)
    return [t.value]


defop("prim::Constant() -> any", _constant, (PURE,), (), "a constant; attribute `value`")
def _str_eq(node: Node) -> list[Type]:
    if any(v.type != STR for v in node.inputs):
        raise ShapeError(f"prim::str_eq: expected two strings, got "
                         f"{', '.join(str(v.type) for v in node.inputs)}")
    return [BOOL]


def _list_column(node: Node) -> list[Type]:
    t, k = node.inputs[0].type, node.inputs[1]
    if not (isinstance(t, ListType) and isinstance(t.element, TupleType) and k.is_constant
            and type(k.constant) is int and -len(t.element.elements) <= k.constant
            < len(t.element.elements)):
        raise ShapeError(f"prim::ListColumn: expected a list of tuples and a constant index "
                         f"into them, got {t}")
    return [ListType(t.element.elements[k.constant])]


defop("prim::Uninitialized() -> any", keep_types, (PURE, ZERO_DERIVATIVE), (),
      "a placeholder for a value never read (after return/break)")
defop("prim::If(cond: any) -> any", keep_types, (), ("if",),
      "two blocks; the taken block's results are the outputs", blocks=2)
defop("prim::Loop(max_trip_count: int, cond: bool, *carried: any) -> any", keep_types, (),
      ("for", "while"), "body block(i, *carried) -> (cond, *carried)", blocks=1,
      effects={"carried": EFFECTS})
defop("prim::TupleConstruct(*items: any) -> tuple", _tuple_construct, (PURE,), ("(a, b)",),
      "build a tuple", effects={"items": KEPT})
defop("prim::TupleUnpack(t: tuple) -> any", _tuple_unpack, (PURE,), ("a, b = t",),
      "unpack a tuple into its elements")
defop("prim::TupleIndex(t: tuple, i: int) -> any", _tuple_index, (PURE,), ("t[i]",),
      "tuple element at a constant index")
defop("prim::TupleSlice(t: tuple, start: int?, stop: int?, step: int?) -> tuple", _tuple_slice,
      (PURE,), ("t[a:b:c]",), "slice of a tuple with constant bounds",
      effects={"t": READ_AND_KEPT})
defop("prim::ListConstruct(*items: any) -> list", _list_construct, (FRESH,), ("[a, b]",),
      "build a new list", effects={"items": KEPT})
defop("prim::ShapeConstruct(*items: int) -> int[]", _int_list, (FRESH, ZERO_DERIVATIVE),
      ("(n, 2) + x.shape",), "a tuple of ints typed as a list of ints: a tuple of ints joined "
      "with a shape (a list of ints in the IR, a tuple at run time, as numpy's shapes are)")
defop("prim::ListUnpack(l: list) -> any", _list_unpack, (), ("a, b = l",),
      "unpack a list of known length (checked at run time)")
defop("prim::ListIndex(l: list, i: int) -> any", _list_element, (), ("l[i]",),
      "list element (negative indices count from the end)")
defop("prim::ListSetItem(l: list, i: int, v: any) -> ()", _no_outputs, (SIDE_EFFECTS,),
      ("l[i] = v",), "replace a list element", effects={"l": CHECKED_WRITE, "v": KEPT})
defop("prim::ListAppend(l: list, v: any) -> ()", _no_outputs, (SIDE_EFFECTS,), (".append",),
      "append to a list in place", effects={"l": (WRITES,), "v": KEPT})
defop("prim::ListExtend(l: list, other: list) -> ()", _no_outputs, (SIDE_EFFECTS,),
      (".extend", "+="), "extend a list in place",
      effects={"l": (WRITES,), "other": READ_AND_KEPT})
defop("prim::ListPop(l: list, i: int = -1) -> any", _list_element, (SIDE_EFFECTS,), (".pop",),
      "remove and return an element", effects={"l": CHECKED_WRITE})
defop("prim::ListInsert(l: list, i: int, v: any) -> ()", _no_outputs, (SIDE_EFFECTS,),
      (".insert",), "insert an element", effects={"l": (WRITES,), "v": KEPT})
defop("prim::ListSlice(l: list, start: int?, stop: int?, step: int?) -> list", _same_as_first,
      (FRESH,), ("l[a:b:c]",), "a new list from a slice (negative steps reverse)",
      effects={"l": READ_AND_KEPT})
defop("prim::str_eq(a: any, b: any) -> bool", _str_eq, (PURE, ZERO_DERIVATIVE), (),
      "whether two strings are equal")
defop("prim::ListColumn(l: list, k: int) -> list", _list_column, (FRESH,),
      ("[t[k] for t in l]",), "a new list of item k of each tuple of a list of tuples",
      effects={"l": READ_AND_KEPT})
defop("prim::ListAdd(a: list, b: list) -> list", _same_as_first, (FRESH,), ("a + b",),
      "concatenate two lists into a new one", effects={"a": READ_AND_KEPT, "b": READ_AND_KEPT})
defop("prim::ListMul(l: list, n: int) -> list", _same_as_first, (FRESH,), ("l * n",),
      "a new list of l's items repeated n times (lists of numbers: [0.0] * n)",
      effects={"l": READ_AND_KEPT})
defop("prim::ListContains(l: list, v: any) -> bool", _bool, (ZERO_DERIVATIVE,), ("v in l",),
      "membership")
defop("prim::len(x: any) -> int", _int, (ZERO_DERIVATIVE,), ("len",),
      "length of a list, tuple, dict or tensor")
defop("prim::DictGetItem(d: dict, k: any) -> any", _dict_value, (), ("d[k]",), "dict lookup")
defop("prim::unchecked_unwrap_optional(x: any) -> any", _optional_unwrap, (PURE,), (),
      "an Optional known not to be None", effects={"x": KEPT})
DEFERRED_ERROR = "error"
"""``prim::RaiseException``'s attribute holding the ``ScriptError`` of a branch that did not
compile (``script.frontend.stmts``'s ``defer_branch``), as its ``fields``: code generation
raises it."""
defop("prim::RaiseException(message: str) -> ()", _no_outputs, (SIDE_EFFECTS, ZERO_DERIVATIVE),
      ("raise", "assert"), "raise the exception class named by attribute `exception` with a "
      "message; attribute `error`: a branch's compile error, raised by code generation")
defop("prim::Print(*values: any) -> ()", _no_outputs, (SIDE_EFFECTS, ZERO_DERIVATIVE),
      ("print",),
      "print values")
defop("prim::FusionGroup(*inputs: any) -> any", keep_types, (PURE,), (),
      "a fused elementwise kernel; attribute `Subgraph`", effects={"inputs": READ_AND_KEPT})
defop("prim::DifferentiableGraph(*inputs: any) -> any", keep_types, (PURE,), (),
      "a region with a symbolic backward; attribute `Subgraph`",
      effects={"inputs": READ_AND_KEPT})
defop("prim::CallFunction(*args: any) -> any", keep_types, (), ("f(...)",),
      "a call of another scripted function; attributes `Subgraph` and `name`; inlined by `inline`",
      effects={"args": EFFECTS})
def _get_attr(node: Node) -> list[Type]:
    """A NamedTuple field has the field's (possibly specialized) type; else the type as built."""
    t = node.inputs[0].type
    if isinstance(t, ClassType) and t.named_tuple:
        field = t.field_type(node.attrs.get("name", ""))
        if field is not None:
            return [field]
    return keep_types(node)


defop("prim::GetAttr(obj: any) -> any", _get_attr, (PURE,), ("obj.name",),
      "attribute `name` of a module or object")
