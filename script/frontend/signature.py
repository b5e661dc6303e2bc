"""Call signatures: a cheap cache key for a call's arguments, and their IR types.

The key captures everything a compiled specialization depends on: for arrays the module (numpy or
CuPy), dtype and shape; for Python scalars their type; containers recursively; and the values of
the int arguments that size arrays and of the bool arguments that decide an ``if``
(``call_key``, ``passes.static_ints``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import ir
from ir.types import BOOL, FLOAT, INT, NONE, STR, DictType, ListType, TensorType, TupleType, Type
from script.errors import SignatureError
from script.frontend.annotations import class_type
from script.module import is_cupy_array

_ndarray = np.ndarray
_SCALARS = frozenset({int, float, bool, str, type(None)})
"""the Python types whose values ``key_of`` keys by their type alone."""


def dtype_name(value: Any) -> str | None:
    """The numpy name of a dtype given as numpy gives one (``np.float32``, ``np.dtype("int64")``,
    ``float``), None for any other value (a string included)."""
    if isinstance(value, np.dtype) or (isinstance(value, type) and (
            issubclass(value, np.generic) or value in (bool, int, float))):
        name = np.dtype(value).name
        return name if name in ir.types.DTYPE_NAMES else None
    return None


def key_of(value: Any) -> Any:
    """A hashable key of one argument; two calls with equal keys share a specialization."""
    t = type(value)
    if t is _ndarray:
        return (value.dtype.char, value.shape)
    if t is int or t is float or t is bool or value is None or t is str:
        return t
    if t in _KEYED_BY_CLASS:  # (a plain object: an object argument's, or the object itself)
        return (t, id(t))
    if t is tuple or t is list:
        return (t, *map(key_of, value))
    if t is dict:
        return (dict, *((k, key_of(v)) for k, v in value.items()))
    if isinstance(value, tuple):  # a NamedTuple: its fields may be typed as a tuple's
        return (t, *map(key_of, value))
    if _is_cupy(value):
        return ("cuda", value.dtype.char, value.shape, value.device.id)
    if isinstance(value, np.generic):
        return (np.generic, value.dtype.char)
    if isinstance(value, _ndarray):  # a subclass (np.memmap, a user's): typed as an ndarray
        return (t, value.dtype.char, value.shape)
    if len(_KEYED_BY_CLASS) < 1024:
        _KEYED_BY_CLASS.add(t)
    return (t, id(t))


_KEYED_BY_CLASS: set[type] = set()
"""The classes whose objects ``key_of`` keys by their class alone (none of the cases before:
which case a value takes depends on its class only)."""


def call_key(args: tuple[Any, ...], static: tuple[int, ...], trips: tuple[int, ...] = (),
             any_length: frozenset[int] = frozenset(), containers: tuple[int, ...] = ()
             ) -> Any:
    """The cache key of a call: each argument's ``key_of``, then the values of the int and
    bool arguments at the positions ``static`` (ints that size arrays, bools that decide an
    ``if``: ``passes.static_ints``), then those of the trip counts at ``trips`` that equal an
    array argument's axis or a list's length (``trip_value``). The lists at the positions
    ``any_length`` are keyed by their items' one key, whatever their length
    (``length_free_key``). One list or dict passed at two of the positions ``containers``
    (``d, e = ws, ws``: a change through one is seen through the other) is keyed so too
    (``shared_positions``)."""
    if any_length:
        key = tuple([length_free_key(a) if k in any_length else key_of(a)
                     for k, a in enumerate(args)])
    else:
        key = tuple([(a.dtype.char, a.shape) if (t := type(a)) is _ndarray
                     else t if t in _SCALARS else key_of(a) for a in args])
    if len(containers) > 1 and (shared := shared_positions(args, containers)):
        key += (("shared", shared),)
    if static:
        key += tuple([static_value(args[k]) for k in static])
    if trips:
        key += tuple([trip_value(args, args[k]) for k in trips])
    return key


def shared_positions(args: tuple[Any, ...], containers: tuple[int, ...]) -> tuple[int, ...]:
    """The positions among ``containers`` whose list or dict another of them holds too."""
    ids = [id(args[k]) for k in containers]
    if len(set(ids)) == len(ids):
        return ()
    return tuple(k for k, i in zip(containers, ids) if ids.count(i) > 1)


ANY_LENGTH = "any length"


def length_free_key(value: Any) -> Any:
    """The key of a list whose items are arrays of one dtype and shape, or numbers (or strings)
    of one type, without its length: ``(list, ANY_LENGTH, that key)`` (``(list, ANY_LENGTH)``
    for an empty list); ``key_of`` for anything else (a list of lists, dicts or tuples, whose
    arrays a specialization may take one by one)."""
    if type(value) is not list:
        return key_of(value)
    if not value:
        return (list, ANY_LENGTH)
    first = value[0]
    if type(first) is _ndarray:  # (each item checked: an item may be replaced between calls)
        shape, dtype = first.shape, first.dtype
        same = all([type(v) is _ndarray and v.shape == shape and v.dtype == dtype
                    for v in value])
    elif (t := type(first)) in _SCALARS:
        same = all(type(v) is t for v in value)
    else:  # lists of containers: their arrays are flattened per item (``nested_args``)
        same = False
    return (list, ANY_LENGTH, key_of(first)) if same else key_of(value)


def static_value(value: Any) -> int | tuple[int, ...] | None:
    """What a specialization compiles in for an argument at a static position: an int, a bool
    or a str, or a tuple of ints; None for anything else (None), which stays keyed by its
    type."""
    t = type(value)
    if t is int or t is bool or t is str:
        return value
    if t is tuple and all(type(x) is int for x in value):
        return value
    if isinstance(value, np.integer):
        return int(value)
    return None


def trip_value(args: tuple[Any, ...], value: Any) -> int | None:
    """``value``, an int argument counting a loop's trips, when it equals an axis of one of the
    array ``args`` or the length of a list or tuple among them: the specialization compiles it
    in (``n == x.shape[0]`` makes ``range(n)`` the loop ``range(x.shape[0])`` writes); None for
    any other value, which stays keyed by its type."""
    if type(value) is not int:
        if not isinstance(value, np.integer):
            return None
        value = int(value)
    for a in args:
        t = type(a)
        if t is _ndarray or _is_cupy(a):
            if value in a.shape:
                return value
        elif (t is list or t is tuple) and len(a) == value:
            return value
    return None


def _is_cupy(value: Any) -> bool:
    return is_cupy_array(value)


def device_of(value: Any) -> str | None:
    """``"cpu"``/``"cuda"`` for arrays (searching containers), None when there are none."""
    if isinstance(value, np.ndarray):
        return "cpu"
    if _is_cupy(value):
        return "cuda"
    if isinstance(value, (tuple, list)):
        for item in value:
            if (d := device_of(item)) is not None:
                return d
    if isinstance(value, dict):
        return device_of(list(value.values()))
    return None


def type_of(value: Any, declared: Type, where: str) -> Type:
    """The IR type of an argument, checked against its declared type (SignatureError if not)."""
    if value is None and isinstance(declared, ir.OptionalType):
        return NONE  # None-ness is static: `x is None` folds, the other branch is never typed
    actual = _type_of(value, declared, where)
    if not ir.is_subtype(actual, declared) and not _accepts_number(actual, declared):
        raise SignatureError(f"{where}: expected {declared}, got {_describe(value, actual)}")
    return actual


def _accepts_number(actual: Type, declared: Type) -> bool:
    # a Python int where a float is declared is fine, as in Python itself (converted on entry)
    return declared == FLOAT and actual in (INT, BOOL)


def _type_of(value: Any, declared: Type, where: str) -> Type:
    if isinstance(value, np.ndarray) or _is_cupy(value):
        # numpy arrays leave the device unset (CPU is implied); CuPy arrays say "cuda"
        device = None if isinstance(value, np.ndarray) else "cuda"
        if value.dtype.name not in ir.types.DTYPE_NAMES:
            raise SignatureError(f"{where}: arrays of dtype {value.dtype} are not supported")
        if isinstance(value, np.matrix):  # (its * is a matrix product, its items 2-D rows)
            raise SignatureError(f"{where}: np.matrix is not supported (its * multiplies "
                                 "matrices): pass np.asarray(m)")
        return TensorType(value.dtype.name, tuple(value.shape), device)
    if isinstance(value, (bool, np.bool_)):
        return BOOL
    if isinstance(value, (int, np.integer)):
        return INT
    if isinstance(value, (float, np.floating)):
        return FLOAT
    if isinstance(value, str):
        return STR
    if value is None:
        return NONE
    object_type = _object_type(value, declared)
    if object_type is not None:
        return object_type
    if isinstance(value, tuple):
        return _tuple_type(value, declared, where)
    if isinstance(value, list):
        return _list_type(value, declared, where)
    if isinstance(value, dict):
        return _dict_type(value, declared, where)
    if ir.types.is_plain_object_type(declared) and \
            declared == ir.types.plain_object_type(type(value)):
        return declared  # a plain object whose attributes the function assigns
    raise SignatureError(f"{where}: values of type {type(value).__name__} cannot be passed to "
                         "a scripted function")


def _object_type(value: Any, declared: Type) -> Type | None:
    """A NamedTuple where one is declared, or an instance of a script class: its class type."""
    if isinstance(value, tuple) and not isinstance(_inner(declared), ir.ClassType):
        return None  # a NamedTuple passed for a Tuple[...] is a tuple
    t = class_type(type(value))
    if not (isinstance(t, ir.ClassType) and t.named_tuple and len(t.fields) == len(value)):
        return t
    # a NamedTuple's fields are specialized like a tuple's elements
    fields = tuple((name, _type_of(v, ft, f"{name}")) for (name, ft), v in zip(t.fields, value))
    return ir.ClassType(t.name, fields, named_tuple=True)


def _inner(declared: Type) -> Type:
    return declared.element if isinstance(declared, ir.OptionalType) else declared


def _tuple_type(value: tuple, declared: Type, where: str) -> Type:
    d = _inner(declared)
    elems = d.elements if isinstance(d, TupleType) and len(d.elements) == len(value) else None
    return TupleType(tuple(
        _type_of(v, elems[i] if elems else ir.ANY, f"{where}[{i}]") for i, v in enumerate(value)))


def _list_type(value: list, declared: Type, where: str) -> Type:
    d = _inner(declared)
    elem = d.element if isinstance(d, ListType) else ir.ANY
    if not value:
        return ListType(elem if not isinstance(elem, ir.AnyType) else ir.TENSOR)
    types = [_type_of(v, elem, f"{where}[{i}]") for i, v in enumerate(value)]
    joined: Type | None = types[0]
    for t in types[1:]:
        joined = None if joined is None else ir.unify(joined, t)
    if joined is None:
        raise SignatureError(f"{where}: list elements have different types")
    return ListType(joined)


def _dict_type(value: dict, declared: Type, where: str) -> Type:
    d = _inner(declared)
    if not isinstance(d, DictType):
        raise SignatureError(f"{where}: expected {declared}, got a dict")
    types = [_type_of(v, d.value, f"{where}[{k!r}]") for k, v in value.items()]
    joined: Type | None = types[0] if types else d.value
    for t in types[1:]:
        joined = None if joined is None else ir.unify(joined, t)
    if joined is None:
        raise SignatureError(f"{where}: dict values have different types")
    return DictType(d.key, joined)


def item_types(value: Any, declared: Type) -> tuple[Type, ...] | dict[Any, Type] | None:
    """The type of each item of a list or dict argument (a tuple per position, a dict per key),
    which shape propagation gives to the reads of a container the function never changes; None
    for other values."""
    d = _inner(declared)
    if type(value) is list and isinstance(d, ListType):
        return tuple(_type_of(v, d.element, "item") for v in value)
    if type(value) is dict and isinstance(d, DictType):
        return {k: _type_of(v, d.value, "item") for k, v in value.items()}
    return None


def _describe(value: Any, t: Type) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype} and shape {value.shape}"
    return f"{type(value).__name__} ({t})"
