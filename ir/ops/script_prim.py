"""Small ``prim::`` ops the Python frontend emits for builtins on scalars.

``bool(x)``, ``int(x)``, ``float(x)`` (also on 0-d tensors, as Python allows), ``x is None`` on an
Optional, ``min``/``max`` of two numbers, ``abs`` of one, and the math module's functions of
numbers (``prim::math``). Each declares in ``extra["python"]``
the Python expression it stands for (``{0}`` is the first input), which code generators may use
directly.
"""

from __future__ import annotations

import numpy as np

from ir.core import Node
from ir.ops.rules import scalar_result
from ir.registry import FRESH, PURE, ZERO_DERIVATIVE, ShapeError, defop
from ir.types import BOOL, FLOAT, INT, TensorType, Type

NO_DERIVATIVE = (PURE, ZERO_DERIVATIVE)
"""a Python bool/int/None test of a value: no derivative flows (constant almost everywhere)."""

NUMBER = (PURE,)
"""a Python float made from a value (``float(x)``, ``min(a, b)``): its derivative is not zero,
but the autodiff does not differentiate Python numbers, so a gradient path through one is
refused by the soundness check instead of silently ending there."""


def _bool(node: Node) -> list[Type]:
    return [BOOL]


def _int(node: Node) -> list[Type]:
    return [INT]


def _float(node: Node) -> list[Type]:
    return [FLOAT]


def _number(node: Node) -> list[Type]:
    return [scalar_result([v.type for v in node.inputs])]


defop("prim::Bool(x: any) -> bool", _bool, NO_DERIVATIVE, ("bool",),
      "truth value of a number or a one-element tensor", python="bool({0})")
defop("prim::Int(x: any) -> int", _int, NO_DERIVATIVE, ("int",),
      "a number or one-element tensor as int (truncating)", python="int({0})")
defop("prim::Float(x: any) -> float", _float, NUMBER, ("float",),
      "a number or one-element tensor as float", python="float({0})")
defop("prim::IsNone(x: any) -> bool", _bool, NO_DERIVATIVE, ("x is None",),
      "whether an Optional holds None", python="({0} is None)")
defop("prim::min(a: number, b: number) -> number", _number, NUMBER, ("min",),
      "the smaller of two numbers", python="min({0}, {1})")
defop("prim::max(a: number, b: number) -> number", _number, NUMBER, ("max",),
      "the larger of two numbers", python="max({0}, {1})")


def _item(node: Node) -> list[Type]:
    """numpy's ``x.item()``: a Python float of a float array, an int of an integer one, a bool
    of a bool one. Where the dtype is not known yet (an argument, before the function is
    specialized) the result is taken as a float; an integer or bool array found there when the
    function is specialized is refused, since the code was compiled for a float."""
    t = node.inputs[0].type
    dtype = t.dtype if isinstance(t, TensorType) else None
    if dtype is None:
        return [FLOAT]
    kind = _item_kind(dtype)
    if kind is None:
        raise ShapeError(f".item() of an array of {dtype} is not supported (only of real or bool "
                         "arrays)")
    assumed = node.attrs.get(ITEM_KIND)
    if assumed is not None and assumed != kind:
        raise ShapeError(f".item() of an array of {dtype}: where the function was compiled its "
                         f"dtype was not known and .item() was compiled as a Python {assumed}; "
                         f"write {kind}(...) of the array instead")
    return [_ITEM_KINDS[kind]]


ITEM_KIND = "item_kind"
"""set (to ``"float"``) on a ``prim::item`` compiled while its array's dtype was not known."""
_ITEM_KINDS = {"float": FLOAT, "int": INT, "bool": BOOL}


def _item_kind(dtype: str) -> str | None:
    kind = np.dtype(dtype).kind
    return {"f": "float", "i": "int", "u": "int", "b": "bool"}.get(kind)


defop("prim::item(a: Tensor) -> number", _item, NUMBER, (".item",),
      "the one element of a size-1 array as a Python number (numpy's .item(): a float, an "
      "int or a bool by the array's dtype)", python="{0}.item()")


def _abs(node: Node) -> list[Type]:
    return [FLOAT if node.inputs[0].type == FLOAT else INT]


defop("prim::abs(x: number) -> number", _abs, NUMBER, ("abs",),
      "the absolute value of a Python number (an int for a bool, as Python's abs)",
      python="abs({0})")


def _sorted(node: Node) -> list[Type]:
    return [node.inputs[0].type]


defop("prim::sorted(items: list, keys: list?, reverse: bool) -> list", _sorted, (FRESH,),
      ("sorted",), "a new list of the items in ascending order of their keys (the items "
      "themselves when keys is None), stable, descending when reverse (Python's sorted)",
      python="sorted({0}, reverse={2})")


MATH_RESULTS: dict[str, Type] = {
    **dict.fromkeys(
        ["sqrt", "exp", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin",
         "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "fabs", "erf",
         "erfc", "gamma", "lgamma", "degrees", "radians", "pow", "atan2", "hypot", "copysign",
         "fmod", "remainder"], FLOAT),
    **dict.fromkeys(["floor", "ceil", "trunc", "factorial", "gcd", "lcm", "isqrt", "comb",
                     "perm"], INT),
    **dict.fromkeys(["isnan", "isinf", "isfinite"], BOOL),
}
"""The math module's functions of Python numbers, by the type of number they return."""

MATH_ARITY: dict[str, tuple[int, int]] = {
    **dict.fromkeys(["pow", "atan2", "copysign", "fmod", "remainder", "comb"], (2, 2)),
    "log": (1, 2), "perm": (1, 2), "gcd": (0, 8), "lcm": (0, 8), "hypot": (0, 8),
}
"""How many arguments each function takes, where it is not exactly one."""

MATH_INTEGRAL = frozenset(["factorial", "gcd", "lcm", "isqrt", "comb", "perm"])
"""The functions Python defines for integers only."""


def _math(node: Node) -> list[Type]:
    fn, *args = node.inputs
    if not fn.is_constant or fn.constant not in MATH_RESULTS:
        raise ShapeError("prim::math: the function must be a constant name of MATH_RESULTS")
    if not all(a.type in (BOOL, INT, FLOAT) for a in args):
        raise ShapeError(f"prim::math: math.{fn.constant}() of "
                         f"{', '.join(str(a.type) for a in args)}: Python numbers only")
    return [MATH_RESULTS[fn.constant]]


defop("prim::math(fn: str, *args: number) -> number", _math, NUMBER, ("math.sqrt",),
      "a function of Python's math module applied to Python numbers (``math.sqrt(d)``, "
      "``math.log(x, 2)``), raising its ValueError where Python's does")
