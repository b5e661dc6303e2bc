"""Op facts live in the registry: kind names, effects on operands, mutability of types.

Every ``"ns::name"`` literal in the compiler's source is a declared kind; the effects passes ask
(``effects_on_input``, ``only_writes_into``) are declared on the ops and agree with their traits.
"""

from __future__ import annotations

import re

import pytest

import ir
import ir.kinds
from ir.errors import IRError
from ir.registry import (
    ALIASES,
    EFFECTS,
    ONLY_READS,
    READS,
    WRITES,
    all_ops,
    defop,
    effects_on_input,
    lookup,
    only_writes_into,
)
from ir.types import (
    INT,
    STR,
    TENSOR,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    holds_mutable,
    is_mutable,
)
from passes import dce, shape_prop
from tests.helpers import ROOT

SOURCE_DIRS = ("ir", "passes", "fuser", "script", "rnn")
F43 = TensorType("float32", (4, 3))


# -- kind names ----------------------------------------------------------------------------------
def kind_literals(text: str) -> list[str]:
    """The quoted ``namespace::name`` strings of ``text`` in a namespace the registry uses."""
    namespaces = "|".join(sorted({op.kind.split("::")[0] for op in all_ops()}))
    return re.findall(rf"""["']((?:{namespaces})::\w+)["']""", text)


def unregistered(kinds: list[str]) -> list[str]:
    return [k for k in kinds if k not in ir.kinds.SENTINELS and lookup(k) is None]


def test_kind_names_are_declared_ops():
    names = {n: v for n, v in vars(ir.kinds).items() if n.isupper() and isinstance(v, str)}
    assert names["LOOP"] == "prim::Loop"
    assert unregistered(list(names.values())) == []


def test_every_kind_literal_in_the_source_is_a_declared_op():
    found = []
    for folder in SOURCE_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            found += [f"{path.relative_to(ROOT)}: {k}"
                      for k in unregistered(kind_literals(path.read_text()))]
    assert found == []


def test_the_literal_scan_reports_an_undeclared_kind():
    text = 'MATMULS = frozenset({"tensor::matmul", "tensor::mm"}) if k == "prim::Return"'
    assert kind_literals(text) == ["tensor::matmul", "tensor::mm", "prim::Return"]
    assert unregistered(kind_literals(text)) == ["tensor::mm"]


# -- effects on operands -------------------------------------------------------------------------
WORLD_EFFECTS = {"prim::Print", "prim::RaiseException", "prim::random"}
"""Side effects on the world, not on an operand (numpy's global random generator's state)."""
OPAQUE = {"prim::Loop", "prim::CallFunction"}
"""Ops whose blocks or callee may do anything to their operands."""


def writes_an_operand(op) -> bool:
    return any(WRITES in e for e in op.effects)


def test_side_effects_are_writes_to_operands_or_the_world():
    for op in all_ops():
        if op.kind in OPAQUE:
            assert EFFECTS in op.effects, op.kind
            continue
        assert writes_an_operand(op) == (op.has_side_effects and op.kind not in WORLD_EFFECTS), \
            op.kind


def test_pure_and_fresh_ops_write_nothing():
    for op in all_ops():
        if op.is_pure or "fresh" in op.traits:
            assert not writes_an_operand(op), op.kind


def test_container_ops_declare_what_they_keep():
    assert lookup("prim::ListAppend").effects == (frozenset({WRITES}), frozenset({ALIASES}))
    assert lookup("prim::ListIndex").effects_on(0) == ONLY_READS
    assert lookup("prim::ListSlice").effects_on(0) == {READS, ALIASES}
    assert lookup("prim::DictGet").effects_on(2) == {ALIASES}  # the default may be returned
    assert lookup("prim::TupleConstruct").effects_on(5) == {ALIASES}  # variadic: the last repeats
    assert lookup("tensor::transpose").effects_on(0) == {READS, ALIASES}  # a VIEW
    assert lookup("tensor::add").effects_on(1) == ONLY_READS


def test_defop_rejects_effects_on_unknown_arguments_or_of_unknown_names():
    with pytest.raises(IRError, match="unknown arguments"):
        defop("test::bad_effects_a(x: Tensor) -> Tensor", lambda n: [], effects={"y": (READS,)})
    with pytest.raises(IRError, match="unknown effects"):
        defop("test::bad_effects_b(x: Tensor) -> Tensor", lambda n: [], effects={"x": ("eats",)})


def list_graph():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    lst = g.insert("prim::ListConstruct", [], [ListType(TENSOR)]).output
    return g, x, lst


def test_only_writes_into_asks_the_effects():
    g, x, lst = list_graph()
    append = g.insert("prim::ListAppend", [lst, x], [])
    set_item = g.insert("prim::ListSetItem", [lst, g.constant(0), x], [])
    unknown = g.insert("test::unknown", [lst], [])
    assert only_writes_into(append, 0) and not only_writes_into(append, 1)
    assert not only_writes_into(set_item, 0)  # checks the index against the length: may raise
    assert not only_writes_into(unknown, 0) and effects_on_input(unknown, 0) == EFFECTS


def test_dce_removes_a_fresh_dict_only_written_into():
    g = ir.Graph()
    x = g.add_input(F43, "x")
    d = g.insert("prim::DictConstruct", [], [DictType(STR, TENSOR)]).output
    g.insert("prim::DictSetItem", [d, g.constant("h"), x], [])
    g.add_output(x)
    assert dce.run(g)
    assert [n.kind for n in g.walk()] == []


def test_dce_keeps_a_list_whose_item_store_may_raise():
    g, x, lst = list_graph()
    g.insert("prim::ListSetItem", [lst, g.constant(0), x], [])
    g.add_output(x)
    dce.run(g)
    assert [n.kind for n in g.walk()] == ["prim::ListConstruct", "prim::Constant",
                                          "prim::ListSetItem"]


def test_list_argument_used_as_a_dict_get_default_keeps_its_declared_type():
    """``d.get(k, xs)`` may return ``xs`` itself, which the caller of the get may append to:
    ``xs``'s items must not be specialized to the shape of the ones passed."""
    g = ir.Graph()
    d = g.add_input(DictType(STR, ListType(TENSOR)), "d")
    xs = g.add_input(ListType(TENSOR), "xs")
    got = g.insert("prim::DictGet", [d, g.constant("k"), xs], [ListType(TENSOR)]).output
    g.add_output(got)
    shape_prop.specialize(g, [DictType(STR, ListType(TENSOR)), ListType(F43)])
    assert xs.type == ListType(TENSOR)


def test_list_argument_only_indexed_is_specialized():
    g = ir.Graph()
    xs = g.add_input(ListType(TENSOR), "xs")
    item = g.insert("prim::ListIndex", [xs, g.constant(0)], [TENSOR]).output
    g.add_output(item)
    shape_prop.specialize(g, [ListType(F43)])
    assert xs.type == ListType(F43) and item.type == F43


# -- mutability of types -------------------------------------------------------------------------
POINT = ClassType("Point", (("x", TENSOR),), named_tuple=True)
BAG = ClassType("Bag", (("items", ListType(TENSOR)),), named_tuple=True)
OBJ = ClassType("Obj", (("x", TENSOR),))

MUTABILITY = [
    # type, is_mutable (changes in place), holds_mutable (may reach something that does)
    (TENSOR, False, False),
    (INT, False, False),
    (ListType(INT), True, True),
    (DictType(STR, TENSOR), True, True),
    (OptionalType(ListType(TENSOR)), True, True),
    (OBJ, True, True),
    (POINT, False, False),
    (BAG, False, True),
    (TupleType((TENSOR, ListType(TENSOR))), False, True),
    (TupleType((TENSOR, INT)), False, False),
]


@pytest.mark.parametrize(("t", "mutable", "holds"), MUTABILITY)
def test_is_mutable_and_holds_mutable(t, mutable, holds):
    assert is_mutable(t) == mutable
    assert holds_mutable(t) == holds
