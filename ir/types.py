"""IR types: tensors with dtype/shape/device, scalars and containers.

Types are immutable and hashable. ``Tensor`` with nothing known is ``TensorType()``;
``Float(64, 512)`` is a ``TensorType("float32", (64, 512))``. Subtyping follows knowledge:
a type that knows more is a subtype of one that knows less (``Float(64, 512) <= Tensor``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# dtype name -> the name types print with (TorchScript's spelling)
DTYPE_NAMES: dict[str, str] = {
    "float16": "Half",
    "float32": "Float",
    "float64": "Double",
    "int8": "Char",
    "uint8": "Byte",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "uint64": "ULong",
    "bool": "Bool",
}
DTYPE_OF_NAME: dict[str, str] = {v: k for k, v in DTYPE_NAMES.items()}
FLOAT_DTYPES = frozenset({"float16", "float32", "float64"})
INT_DTYPES = frozenset({"int8", "uint8", "int16", "int32", "int64", "uint64"})

Dim = int | None
"""A dimension: a size, or None when unknown (prints as ``*``)."""


class Type:
    """Base of all IR types."""

    __slots__ = ()

    def is_subtype_of(self, other: Type) -> bool:
        """True when every value of ``self`` is a value of ``other``."""
        return is_subtype(self, other)


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    """An ndarray; each of dtype, shape and device may be unknown (None)."""

    dtype: str | None = None
    """numpy dtype name (``"float32"``) or None when unknown."""
    shape: tuple[Dim, ...] | None = None
    """one entry per dimension (None for an unknown size), or None when the rank is unknown."""
    device: str | None = None
    """``"cpu"``, ``"cuda"`` or None when unknown."""

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    def with_shape(self, shape: tuple[Dim, ...] | None) -> TensorType:
        return TensorType(self.dtype, None if shape is None else tuple(shape), self.device)

    def with_dtype(self, dtype: str | None) -> TensorType:
        return TensorType(dtype, self.shape, self.device)

    def __str__(self) -> str:
        head = "Tensor" if self.dtype is None else DTYPE_NAMES[self.dtype]
        if self.shape is None:  # unknown rank, known device; Float(device=cpu) is rank 0
            parts = ["..."]
        else:
            parts = ["*" if d is None else str(d) for d in self.shape]
        if self.device is not None:
            parts.append(f"device={self.device}")
        if self.shape is None and self.device is None:
            return head
        return f"{head}({', '.join(parts)})"


@dataclass(frozen=True, slots=True)
class ScalarType(Type):
    """``int``, ``float``, ``bool``, ``str``, ``NoneType``, or ``Device``-like named scalars."""

    name: str
    """the printed name."""

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    """A fixed-length heterogeneous tuple."""

    elements: tuple[Type, ...]
    """the element types in order."""

    def __str__(self) -> str:
        if len(self.elements) == 1:
            return f"({self.elements[0]},)"  # a 1-tuple, unambiguous as in Python
        return f"({', '.join(map(str, self.elements))})"


@dataclass(frozen=True, slots=True)
class ListType(Type):
    """A homogeneous list, mutable at run time."""

    element: Type
    """the element type."""

    def __str__(self) -> str:
        return f"{self.element}[]"


@dataclass(frozen=True, slots=True)
class DictType(Type):
    """A dict with str or int keys, insertion-ordered."""

    key: Type
    """``str`` or ``int``."""
    value: Type
    """the value type."""

    def __str__(self) -> str:
        return f"Dict({self.key}, {self.value})"


@dataclass(frozen=True, slots=True)
class OptionalType(Type):
    """A value of ``element`` type, or None."""

    element: Type
    """the type when not None."""

    def __str__(self) -> str:
        return f"{self.element}?"


@dataclass(frozen=True, slots=True)
class ClassType(Type):
    """A script class or NamedTuple: a name and typed fields."""

    name: str
    """the qualified class name."""
    fields: tuple[tuple[str, Type], ...] = ()
    """(field name, type) pairs in declaration order."""
    named_tuple: bool = False
    """True for NamedTuple types (immutable, unpackable)."""

    def __str__(self) -> str:
        return f"__class__.{self.name}"

    def field_type(self, name: str) -> Type | None:
        return next((t for n, t in self.fields if n == name), None)


def plain_object_type(cls: type) -> ClassType:
    """The type of a plain Python object a function assigns attributes of
    (``script.frontend.object_stores``): a class with no declared fields, which may hold
    anything."""
    return ClassType(f"{cls.__module__}.{cls.__qualname__}")


def is_plain_object_type(t: Type) -> bool:
    """Whether ``t`` is a ``plain_object_type``."""
    return isinstance(t, ClassType) and not t.named_tuple and not t.fields


@dataclass(frozen=True, slots=True)
class AnyType(Type):
    """The top type; only used while a type is being inferred."""

    def __str__(self) -> str:
        return "Any"


INT = ScalarType("int")
FLOAT = ScalarType("float")
BOOL = ScalarType("bool")
STR = ScalarType("str")
NONE = ScalarType("NoneType")
DEVICE = ScalarType("Device")
TENSOR = TensorType()
ANY = AnyType()

SCALARS: dict[str, ScalarType] = {t.name: t for t in (INT, FLOAT, BOOL, STR, NONE, DEVICE)}


def is_mutable(t: Type) -> bool:
    """Can a value of type ``t`` change in place after it is made? Lists, dicts and script-class
    objects can (an ``Optional`` of one too); tensors are treated as values (only ``write_slot``
    on a buffer the compiler made writes one); tuples and NamedTuples never change themselves,
    though they may hold something that does (``holds_mutable``)."""
    if isinstance(t, OptionalType):
        return is_mutable(t.element)
    if isinstance(t, ClassType):
        return not t.named_tuple
    return isinstance(t, (ListType, DictType))


def holds_mutable(t: Type) -> bool:
    """Is ``t`` mutable, or a tuple, NamedTuple or ``Optional`` that may hold a mutable value? A
    computation reading such a value may see different contents each time it runs."""
    if is_mutable(t):
        return True
    if isinstance(t, OptionalType):
        return holds_mutable(t.element)
    if isinstance(t, ClassType):
        return any(holds_mutable(f) for _, f in t.fields)
    return isinstance(t, TupleType) and any(holds_mutable(e) for e in t.elements)


def is_number(t: Type) -> bool:
    """int, float or bool: what broadcasts as a weak scalar against a tensor."""
    return t in (INT, FLOAT, BOOL)


def is_subtype(a: Type, b: Type) -> bool:
    """``a <= b``: a value of type ``a`` can stand where ``b`` is expected."""
    if a == b or isinstance(b, AnyType):
        return True
    if isinstance(b, OptionalType):
        return a == NONE or is_subtype(a, b.element) or (
            isinstance(a, OptionalType) and is_subtype(a.element, b.element))
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return _tensor_subtype(a, b)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.elements) == len(b.elements) and all(
            is_subtype(x, y) for x, y in zip(a.elements, b.elements))
    if isinstance(a, ListType) and isinstance(b, ListType):
        return is_subtype(a.element, b.element)
    if isinstance(a, DictType) and isinstance(b, DictType):
        return a.key == b.key and is_subtype(a.value, b.value)
    if isinstance(a, ClassType) and isinstance(b, ClassType):
        return _class_subtype(a, b)
    return False


def _class_subtype(a: ClassType, b: ClassType) -> bool:
    # NamedTuples are immutable, so their fields are covariant (a specialized LSTMState of
    # Float(3, 4) fields is an LSTMState of Tensors); mutable class fields stay invariant
    if a.name != b.name or not (a.named_tuple and b.named_tuple):
        return False
    names_a = [n for n, _ in a.fields]
    names_b = [n for n, _ in b.fields]
    return names_a == names_b and all(
        is_subtype(x, y) for (_, x), (_, y) in zip(a.fields, b.fields))


def _tensor_subtype(a: TensorType, b: TensorType) -> bool:
    if b.dtype is not None and a.dtype != b.dtype:
        return False
    if b.device is not None and a.device != b.device:
        return False
    if b.shape is None:
        return True
    if a.shape is None or len(a.shape) != len(b.shape):
        return False
    return all(y is None or x == y for x, y in zip(a.shape, b.shape))


def unify(a: Type, b: Type) -> Type | None:
    """The least type both ``a`` and ``b`` are subtypes of, or None when there is none.

    Used for the outputs of ``prim::If`` branches and loop-carried values.
    """
    if a == b:
        return a
    if isinstance(a, AnyType) or isinstance(b, AnyType):
        return ANY  # the top type is above everything
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return _unify_tensors(a, b)
    if a == NONE and isinstance(b, OptionalType) or b == NONE and isinstance(a, OptionalType):
        return a if a != NONE else b
    if a == NONE or b == NONE:
        other = b if a == NONE else a
        return OptionalType(other)
    if isinstance(a, OptionalType) or isinstance(b, OptionalType):
        inner = unify(strip_optional(a), strip_optional(b))
        return None if inner is None else OptionalType(inner)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        if len(a.elements) != len(b.elements):
            return None
        elems = [unify(x, y) for x, y in zip(a.elements, b.elements)]
        return None if any(e is None for e in elems) else TupleType(tuple(elems))  # type: ignore[arg-type]
    if isinstance(a, ListType) and isinstance(b, ListType):
        elem = unify(a.element, b.element)
        return None if elem is None else ListType(elem)
    if isinstance(a, DictType) and isinstance(b, DictType) and a.key == b.key:
        val = unify(a.value, b.value)
        return None if val is None else DictType(a.key, val)
    if isinstance(a, ClassType) and isinstance(b, ClassType):
        return _unify_classes(a, b)
    return None


def unify_all(types: Iterable[Type]) -> Type | None:
    """The least type all of ``types`` are subtypes of; None for none, or where there is none."""
    joined: Type | None = None
    for k, t in enumerate(types):
        joined = t if k == 0 else None if joined is None else unify(joined, t)
    return joined


def _unify_classes(a: ClassType, b: ClassType) -> ClassType | None:
    if a.name != b.name or not (a.named_tuple and b.named_tuple):
        return None
    if [n for n, _ in a.fields] != [n for n, _ in b.fields]:
        return None
    fields = [(n, unify(x, y)) for (n, x), (_, y) in zip(a.fields, b.fields)]
    if any(t is None for _, t in fields):
        return None
    return ClassType(a.name, tuple(fields), named_tuple=True)  # type: ignore[arg-type]


def strip_optional(t: Type) -> Type:
    """The element type of ``Optional[T]``; any other type as it is."""
    return t.element if isinstance(t, OptionalType) else t


def _unify_tensors(a: TensorType, b: TensorType) -> TensorType:
    dtype = a.dtype if a.dtype == b.dtype else None
    device = a.device if a.device == b.device else None
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return TensorType(dtype, None, device)
    shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape))
    return TensorType(dtype, shape, device)


def erase_shape(t: Type) -> Type:
    """The same type with every tensor's dtype, shape and device forgotten (``Float(3)`` ->
    ``Tensor``)."""
    if isinstance(t, TensorType):
        return TENSOR
    if isinstance(t, TupleType):
        return TupleType(tuple(erase_shape(e) for e in t.elements))
    if isinstance(t, ListType):
        return ListType(erase_shape(t.element))
    if isinstance(t, OptionalType):
        return OptionalType(erase_shape(t.element))
    if isinstance(t, DictType):
        return DictType(t.key, erase_shape(t.value))
    if isinstance(t, ClassType) and t.named_tuple:
        return ClassType(t.name, tuple((n, erase_shape(f)) for n, f in t.fields), True)
    return t


def with_device(t: Type, device: str) -> Type:
    """``t`` with ``device`` for every tensor whose device is unknown (containers included)."""
    if isinstance(t, TensorType):
        return t if t.device is not None else TensorType(t.dtype, t.shape, device)
    if isinstance(t, TupleType):
        return TupleType(tuple(with_device(e, device) for e in t.elements))
    if isinstance(t, ListType):
        return ListType(with_device(t.element, device))
    if isinstance(t, OptionalType):
        return OptionalType(with_device(t.element, device))
    if isinstance(t, DictType):
        return DictType(t.key, with_device(t.value, device))
    if isinstance(t, ClassType) and t.named_tuple:
        return ClassType(t.name, tuple((n, with_device(f, device)) for n, f in t.fields), True)
    return t


def devices_of(t: Type) -> set[str]:
    """The known devices of the tensors in ``t`` (containers and object fields included)."""
    if isinstance(t, TensorType):
        return set() if t.device is None else {t.device}
    if isinstance(t, TupleType):
        return set().union(*(devices_of(e) for e in t.elements))
    if isinstance(t, (ListType, OptionalType)):
        return devices_of(t.element)
    if isinstance(t, DictType):
        return devices_of(t.value)
    if isinstance(t, ClassType):
        return set().union(*(devices_of(f) for _, f in t.fields))
    return set()
