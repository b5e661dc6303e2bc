"""IR types: printed forms, subtyping, unification (If/Loop joins) and shape erasure."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ir.types import (
    ANY,
    BOOL,
    DEVICE,
    DTYPE_NAMES,
    FLOAT,
    INT,
    NONE,
    STR,
    TENSOR,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    erase_shape,
    is_subtype,
    unify,
)

F = TensorType("float32", (64, 512))


# -- printing --------------------------------------------------------------------------------------
@pytest.mark.parametrize("t, text", [
    (TENSOR, "Tensor"),
    (TensorType("float32", (64, 512)), "Float(64, 512)"),
    (TensorType("float64", (None, 512)), "Double(*, 512)"),
    (TensorType("float32", ()), "Float()"),
    (TensorType("float32"), "Float"),
    (TensorType(None, (3, None)), "Tensor(3, *)"),
    (TensorType("float16", (2,), "cuda"), "Half(2, device=cuda)"),
    (TensorType(None, None, "cpu"), "Tensor(..., device=cpu)"),
    (TensorType("float32", (), "cpu"), "Float(device=cpu)"),
    (INT, "int"), (FLOAT, "float"), (BOOL, "bool"), (STR, "str"), (NONE, "NoneType"),
    (DEVICE, "Device"), (ANY, "Any"),
    (TupleType((TENSOR, INT)), "(Tensor, int)"),
    (TupleType(()), "()"),
    (TupleType((TupleType((F, F)), NONE)), "((Float(64, 512), Float(64, 512)), NoneType)"),
    (ListType(TENSOR), "Tensor[]"),
    (ListType(ListType(INT)), "int[][]"),
    (DictType(STR, TENSOR), "Dict(str, Tensor)"),
    (DictType(INT, ListType(F)), "Dict(int, Float(64, 512)[])"),
    (OptionalType(TENSOR), "Tensor?"),
    (OptionalType(TupleType((TENSOR, INT))), "(Tensor, int)?"),
    (ListType(OptionalType(INT)), "int?[]"),
    (ClassType("cells.State", (("h", TENSOR),)), "__class__.cells.State"),
])
def test_printed_form(t, text):
    assert str(t) == text


@pytest.mark.parametrize("dtype, name", sorted(DTYPE_NAMES.items()))
def test_every_dtype_prints_with_its_torchscript_name(dtype, name):
    assert str(TensorType(dtype, (2, None))) == f"{name}(2, *)"


def test_types_are_hashable_values():
    assert TensorType("float32", (3,)) == TensorType("float32", (3,))
    assert len({TensorType("float32", (3,)), TensorType("float32", (3,)), TENSOR}) == 2
    assert TensorType("float32", (3,)).with_shape([4, None]).shape == (4, None)


def test_tensor_rank_and_with_dtype():
    assert F.rank == 2 and TENSOR.rank is None
    assert F.with_dtype("float64") == TensorType("float64", (64, 512))


# -- subtyping -------------------------------------------------------------------------------------
@pytest.mark.parametrize("a, b", [
    (F, TENSOR),
    (F, TensorType("float32")),
    (F, TensorType(None, (64, 512))),
    (F, TensorType("float32", (None, 512))),
    (F, TensorType("float32", (None, None))),
    (TensorType("float32", (3,), "cuda"), TensorType("float32", (3,))),
    (NONE, OptionalType(TENSOR)),
    (F, OptionalType(TENSOR)),
    (OptionalType(F), OptionalType(TENSOR)),
    (TupleType((F, INT)), TupleType((TENSOR, INT))),
    (ListType(F), ListType(TENSOR)),
    (DictType(STR, F), DictType(STR, TENSOR)),
    (INT, ANY), (TupleType((F,)), ANY),
    (INT, INT),
])
def test_is_subtype(a, b):
    assert is_subtype(a, b)
    assert a.is_subtype_of(b)


@pytest.mark.parametrize("a, b", [
    (TENSOR, F),
    (TensorType("float64", (64, 512)), F),
    (TensorType("float32", (64,)), TensorType("float32", (None, None))),
    (TensorType("float32", (64, 256)), TensorType("float32", (None, 512))),
    (TensorType("float32", None), TensorType("float32", (None,))),
    (TensorType("float32", (3,)), TensorType("float32", (3,), "cuda")),
    (OptionalType(TENSOR), TENSOR),
    (NONE, TENSOR),
    (INT, FLOAT), (BOOL, INT), (FLOAT, INT), (INT, TENSOR), (TENSOR, INT),
    (TupleType((F, INT)), TupleType((F,))),
    (TupleType((TENSOR,)), TupleType((F,))),
    (ListType(TENSOR), ListType(F)),
    (ListType(INT), TupleType((INT,))),
    (DictType(STR, F), DictType(INT, F)),
    (ANY, INT),
    (OptionalType(INT), OptionalType(FLOAT)),
])
def test_is_not_subtype(a, b):
    assert not is_subtype(a, b)


# -- unify -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("a, b, joined", [
    (F, F, F),
    (F, TensorType("float32", (64, 256)), TensorType("float32", (64, None))),
    (F, TensorType("float32", (64,)), TensorType("float32")),
    (F, TensorType("float64", (64, 512)), TensorType(None, (64, 512))),
    (TensorType("float32", (3,), "cpu"), TensorType("float32", (3,), "cuda"),
     TensorType("float32", (3,))),
    (F, TENSOR, TENSOR),
    (NONE, F, OptionalType(F)),
    (F, NONE, OptionalType(F)),
    (NONE, OptionalType(INT), OptionalType(INT)),
    (OptionalType(INT), NONE, OptionalType(INT)),
    (OptionalType(F), TensorType("float32", (1, 512)), OptionalType(TensorType("float32",
                                                                               (None, 512)))),
    (OptionalType(INT), OptionalType(INT), OptionalType(INT)),
    (TupleType((F, INT)), TupleType((TENSOR, INT)), TupleType((TENSOR, INT))),
    (TupleType((INT, NONE)), TupleType((INT, F)), TupleType((INT, OptionalType(F)))),
    (ListType(F), ListType(TensorType("float32", (64, 1))),
     ListType(TensorType("float32", (64, None)))),
    (DictType(STR, F), DictType(STR, TENSOR), DictType(STR, TENSOR)),
    (INT, ANY, ANY),
    (ANY, F, ANY),
])
def test_unify(a, b, joined):
    assert unify(a, b) == joined


@pytest.mark.parametrize("a, b", [
    (INT, FLOAT), (INT, BOOL), (INT, TENSOR), (STR, NONE.__class__("str2")),
    (TupleType((INT,)), TupleType((INT, INT))),
    (TupleType((INT,)), TupleType((FLOAT,))),
    (ListType(INT), ListType(FLOAT)),
    (ListType(INT), TupleType((INT,))),
    (DictType(STR, F), DictType(INT, F)),
    (OptionalType(INT), FLOAT),
    (OptionalType(INT), OptionalType(TENSOR)),
    (ClassType("A"), ClassType("B")),
])
def test_unify_fails(a, b):
    assert unify(a, b) is None


# -- properties over random types ------------------------------------------------------------------
dims = st.one_of(st.none(), st.sampled_from([1, 3, 4]))
tensors = st.builds(TensorType, st.sampled_from([None, "float32", "float64", "int64"]),
                    st.one_of(st.none(), st.lists(dims, max_size=2).map(tuple)),
                    st.sampled_from([None, "cpu", "cuda"]))
leaves = st.one_of(tensors, st.sampled_from([INT, FLOAT, BOOL, STR, NONE]))
types = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=3).map(lambda ts: TupleType(tuple(ts))),
    st.builds(ListType, inner),
    st.builds(OptionalType, inner),
    st.builds(DictType, st.sampled_from([STR, INT]), inner)), max_leaves=6)


@st.composite
def subtypes_of(draw, t):
    """A random type below ``t``: unknown dtypes, dims and devices made known, an Optional
    narrowed to None or to its element, recursively through containers."""
    if isinstance(t, TensorType):
        dtype = t.dtype or draw(st.sampled_from([None, "float32", "int64"]))
        device = t.device or draw(st.sampled_from([None, "cpu", "cuda"]))
        if t.shape is None:
            shape = draw(st.one_of(st.none(), st.lists(dims, max_size=2).map(tuple)))
        else:
            shape = tuple(d if d is not None else draw(dims) for d in t.shape)
        return TensorType(dtype, shape, device)
    if isinstance(t, OptionalType):
        choice = draw(st.sampled_from(["none", "element", "optional"]))
        if choice == "none":
            return NONE
        element = draw(subtypes_of(t.element))
        return element if choice == "element" else OptionalType(element)
    if isinstance(t, TupleType):
        return TupleType(tuple(draw(subtypes_of(e)) for e in t.elements))
    if isinstance(t, ListType):
        return ListType(draw(subtypes_of(t.element)))
    if isinstance(t, DictType):
        return DictType(t.key, draw(subtypes_of(t.value)))
    return t


@st.composite
def related_pairs(draw):
    """(a, b, c) with a and b both below c: pairs that do unify."""
    c = draw(types)
    return draw(subtypes_of(c)), draw(subtypes_of(c)), c


@given(types, types)
def test_unify_is_commutative(a, b):
    assert unify(a, b) == unify(b, a)


@given(related_pairs())
def test_unify_of_related_types_is_commutative(abc):
    a, b, _ = abc
    assert unify(a, b) == unify(b, a)


@given(types, types)
def test_unify_is_an_upper_bound(a, b):
    joined = unify(a, b)
    if joined is not None:
        assert is_subtype(a, joined), (a, b, joined)
        assert is_subtype(b, joined), (a, b, joined)


@given(related_pairs())
def test_unify_is_the_least_upper_bound(abc):
    """Two types below a common (Any-free) type unify, to a type below every such bound."""
    a, b, c = abc
    assert is_subtype(a, c) and is_subtype(b, c)  # the generator makes what it claims
    joined = unify(a, b)
    assert joined is not None, (a, b, c)
    assert is_subtype(a, joined) and is_subtype(b, joined), (a, b, joined)
    assert is_subtype(joined, c), (a, b, joined, c)


@given(types)
def test_subtype_and_unify_are_reflexive(a):
    assert is_subtype(a, a)
    assert unify(a, a) == a
    assert is_subtype(a, ANY)


@given(types.flatmap(lambda b: st.tuples(subtypes_of(b), st.just(b))))
def test_subtype_implies_unify_gives_the_supertype(ab):
    a, b = ab
    assert is_subtype(a, b), (a, b)
    assert unify(a, b) == b, (a, b)
    assert unify(b, a) == b, (a, b)


@given(types.flatmap(lambda c: subtypes_of(c).flatmap(
    lambda b: st.tuples(subtypes_of(b), st.just(b), st.just(c)))))
def test_subtyping_is_transitive(abc):
    a, b, c = abc
    assert is_subtype(a, b) and is_subtype(b, c)
    assert is_subtype(a, c), (a, b, c)


# -- erase_shape -----------------------------------------------------------------------------------
@pytest.mark.parametrize("t, erased", [
    (F, TENSOR),
    (TensorType("float32", None, "cuda"), TENSOR),
    (INT, INT),
    (TupleType((F, INT)), TupleType((TENSOR, INT))),
    (ListType(F), ListType(TENSOR)),
    (OptionalType(F), OptionalType(TENSOR)),
    (DictType(STR, TupleType((F, F))), DictType(STR, TupleType((TENSOR, TENSOR)))),
    (ClassType("A", (("x", INT),)), ClassType("A", (("x", INT),))),
])
def test_erase_shape(t, erased):
    assert erase_shape(t) == erased
    assert is_subtype(t, erase_shape(t))


def test_class_type_field_lookup():
    c = ClassType("State", (("h", F), ("n", INT)), named_tuple=True)
    assert c.field_type("h") == F and c.field_type("n") == INT
    assert c.field_type("missing") is None
