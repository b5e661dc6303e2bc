"""Numbers that stand where the graph has a tensor: ``acc = 0`` or ``accs = [0, 0]`` that a
loop makes hold tensors starts as a ``tensor::full[weak_dtype]`` (``passes.shape_prop.WEAK_DTYPE``).
Shape propagation gives it the dtype numpy's promotion gives the value stored over it
(``0 + np.float32(s)`` is float32) when the types say which; when they do not (the stored values'
dtype is not known, or two items of one list get different dtypes), generated code keeps the
Python number itself, as the source does, so numpy promotes it as the weak number it is: a 0-d
int64 array there would make ``acc + np.float32(s)`` a float64.

Such a value reaches only ops whose inputs' types do not say a dtype. Elementwise ops spelled as
operators and numpy ufuncs take it as the source would; every other op gets it as the array
``np.asarray`` makes of it (numpy functions do the same with a Python number)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ir.core import Node, Value
from ir.registry import lookup
from ir.types import TensorType
from passes.shape_prop import WEAK_DTYPE


def is_weak_number(node: Node) -> bool:
    """Whether ``node`` is a ``tensor::full`` of a number whose dtype shape propagation left to
    run time (see the module's doc): written as the number itself."""
    return node.kind == "tensor::full" and bool(node.attrs.get(WEAK_DTYPE))


def may_be_number(v: Value) -> bool:
    """Whether ``v`` may hold a weak number at run time: one itself, or a tensor whose dtype
    the types do not know (a read of a list holding one, a loop's result carrying one)."""
    t = v.type
    return is_weak_number(v.node) or isinstance(t, TensorType) and t.dtype is None


def inputs_as_arrays(node: Node, spellings: Mapping[str, Any]) -> list[Value]:
    """The inputs of ``node`` its code must get as arrays because they may be Python numbers.
    An elementwise op the backend spells directly (``spellings``: an operator, a numpy ufunc)
    takes a number as the source would."""
    op = lookup(node.kind)
    if node.kind in spellings and op is not None and op.is_elementwise:
        return []
    if not (node.kind.startswith("tensor::") or node.kind == "prim::FusionGroup"):
        return []
    return list(dict.fromkeys(v for v in node.inputs if may_be_number(v)))


def as_array(x: Any) -> Any:
    """``x``, or the array numpy makes of it when it is a Python number."""
    return np.asarray(x) if type(x) in (int, float, bool) else x
