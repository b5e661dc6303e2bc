"""Container and object ops (``prim::``): dicts, NamedTuples and script-class objects.

Dicts are mutable and insertion-ordered, like Python's; ``DictKeys`` / ``DictValues`` /
``DictItems`` make new lists. A NamedTuple is an immutable ``ClassType`` value built by
``NamedTupleConstruct`` and read with ``prim::GetAttr``. A script-class object is mutable: it is
made by ``CreateObject``, its fields are written by ``SetAttr`` and read by ``LoadAttr`` (not PURE,
so two reads around a write are never merged). The field name is the node's ``name`` attribute.
"""

from __future__ import annotations

from ir.core import Node
from ir.ops.prim import KEPT, READ_AND_KEPT, keep_types
from ir.registry import FRESH, PURE, SIDE_EFFECTS, WRITES, ShapeError, defop
from ir.types import (
    BOOL,
    NONE,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TupleType,
    Type,
    unify,
)


def _joined(types: list[Type], what: str) -> Type:
    joined: Type | None = types[0]
    for t in types[1:]:
        joined = None if joined is None else unify(joined, t)
    if joined is None:
        raise ShapeError(f"dict {what} have different types: " + ", ".join(map(str, types)))
    return joined


def _dict_construct(node: Node) -> list[Type]:
    if not node.inputs:
        return keep_types(node)
    if len(node.inputs) % 2:
        raise ShapeError("prim::DictConstruct takes key, value pairs")
    keys = [v.type for v in node.inputs[0::2]]
    values = [v.type for v in node.inputs[1::2]]
    built = DictType(_joined(keys, "keys"), _joined(values, "values"))
    declared = node.outputs[0].type if node.outputs else None
    if isinstance(declared, DictType) and declared.key == built.key and \
            unify(declared.value, built.value) == declared.value:
        return [declared]  # `d: Dict[str, Tensor] = {...}` keeps the annotated value type
    return [built]


def _dict_of(node: Node) -> DictType:
    t = node.inputs[0].type
    if not isinstance(t, DictType):
        raise ShapeError(f"{node.kind}: expected a dict, got {t}")
    return t


def _dict_get(node: Node) -> list[Type]:
    value = _dict_of(node).value
    default = node.inputs[2].type
    if default == NONE:
        return [value if isinstance(value, OptionalType) else OptionalType(value)]
    joined = unify(value, default)
    if joined is None:
        raise ShapeError(f"dict.get(): the default ({default}) does not match the values "
                         f"({value})")
    return [joined]


def _bool(node: Node) -> list[Type]:
    return [BOOL]


def _no_outputs(node: Node) -> list[Type]:
    return []


defop("prim::DictConstruct(*items: any) -> dict", _dict_construct, (FRESH,), ("{k: v}",),
      "build a new dict from key, value, key, value, ...", effects={"items": KEPT})
defop("prim::DictSetItem(d: dict, k: any, v: any) -> ()", _no_outputs, (SIDE_EFFECTS,),
      ("d[k] = v",), "set a dict entry", effects={"d": (WRITES,), "k": KEPT, "v": KEPT})
defop("prim::DictContains(d: dict, k: any) -> bool", _bool, (), ("k in d",), "key membership")
defop("prim::DictGet(d: dict, k: any, default: any) -> any", _dict_get, (), (".get",),
      "the value for a key, or the default", effects={"default": KEPT})
defop("prim::DictKeys(d: dict) -> list", lambda n: [ListType(_dict_of(n).key)], (FRESH,),
      (".keys",), "a new list of the keys in insertion order",
      effects={"d": READ_AND_KEPT})
defop("prim::DictValues(d: dict) -> list", lambda n: [ListType(_dict_of(n).value)], (FRESH,),
      (".values",), "a new list of the values in insertion order",
      effects={"d": READ_AND_KEPT})
defop("prim::DictItems(d: dict) -> list",
      lambda n: [ListType(TupleType((_dict_of(n).key, _dict_of(n).value)))], (FRESH,),
      (".items",), "a new list of (key, value) tuples in insertion order",
      effects={"d": READ_AND_KEPT})
def _named_tuple_construct(node: Node) -> list[Type]:
    """The declared class with each field typed by what was passed (fields are covariant)."""
    declared = node.outputs[0].type if node.outputs else None
    if not isinstance(declared, ClassType) or len(declared.fields) != len(node.inputs):
        return keep_types(node)
    fields = tuple((name, v.type) for (name, _), v in zip(declared.fields, node.inputs))
    return [ClassType(declared.name, fields, named_tuple=True)]


defop("prim::NamedTupleConstruct(*items: any) -> any", _named_tuple_construct, (PURE,),
      ("C(a, b)",),
      "build a NamedTuple; the output type names the class", effects={"items": KEPT})
defop("prim::CreateObject() -> any", keep_types, (FRESH,), ("C(...)",),
      "a new, empty script-class object; the output type names the class")
defop("prim::SetAttr(obj: any, value: any) -> ()", _no_outputs, (SIDE_EFFECTS,),
      ("obj.name = v",), "write field `name` of a script-class object",
      effects={"obj": (WRITES,), "value": KEPT})
defop("prim::LoadAttr(obj: any) -> any", keep_types, (), ("obj.name",),
      "read field `name` of a script-class object")
