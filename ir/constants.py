"""What type a constant has; shared by the frontend, the parser and constant folding."""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.types import BOOL, FLOAT, INT, NONE, STR, ListType, TensorType, TupleType, Type


def constant_type(value: Any) -> Type:
    """The IR type of a Python/numpy constant value.

    Tuples and lists of constants are allowed (a tuple constant types as a tuple of its elements;
    a list constant as a list of its first element's type, ``int[]`` when empty).
    """
    scalar = scalar_type(value)
    if scalar is not None:
        return scalar
    if isinstance(value, np.ndarray):
        return TensorType(value.dtype.name, tuple(value.shape))
    if isinstance(value, tuple):
        return TupleType(tuple(constant_type(v) for v in value))
    if isinstance(value, list):
        return ListType(constant_type(value[0]) if value else INT)
    raise TypeError(f"{type(value).__name__} cannot be an IR constant")


def scalar_type(value: Any) -> Type | None:
    """The type of a Python or numpy scalar (bool before int: ``True`` is a bool), a string or
    None; None for any other value."""
    if value is None:
        return NONE
    if isinstance(value, (bool, np.bool_)):
        return BOOL
    if isinstance(value, (int, np.integer)):
        return INT
    if isinstance(value, (float, np.floating)):
        return FLOAT
    if isinstance(value, str):
        return STR
    return None

def exact_in(number: int | float, dtype: str) -> bool:
    """Whether ``dtype`` holds ``number`` exactly, compared as Python numbers (numpy would
    convert the number to the dtype first: ``np.float32(0.1) == 0.1``)."""
    try:
        return type(number)(getattr(np, dtype)(number)) == number
    except (OverflowError, ValueError):
        return False
