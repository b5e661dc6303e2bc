"""The math module's functions (a ``FunctionCompiler`` mixin): ``math.sqrt(d)``,
``math.log(x, 2)``, ``from math import exp`` called on Python numbers give Python numbers, as
Python computes them (``prim::math``, folded when the arguments are constants), raising
Python's ValueError where Python does (``math.sqrt(-1.0)``, where ``np.sqrt`` gives nan). A
0-d array is taken as Python takes it, through ``float()`` (an integer function,
``math.factorial``, through ``int()``); an array of known rank is refused with its numpy
spelling.
"""

from __future__ import annotations

import ast
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.ops.script_prim import MATH_ARITY, MATH_INTEGRAL, MATH_RESULTS
from ir.types import BOOL, FLOAT, INT, TensorType

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


def math_function_name(obj: Any) -> str | None:
    """The name of ``obj`` when it is a function of the math module (``math.sqrt`` however it
    was imported), else None."""
    name = getattr(obj, "__name__", None)
    if isinstance(name, str) and getattr(math, name, None) is obj and callable(obj):
        return name
    return None


def numpy_spelling(name: str) -> str | None:
    """numpy's function for the math module's ``name`` (``np.power`` for ``pow``), or None."""
    numpy_name = {"pow": "power", "fabs": "abs"}.get(name, name)
    return f"np.{numpy_name}" if hasattr(np, numpy_name) else None


class MathMixin:
    """Calls of the math module's functions, for ``FunctionCompiler``."""

    def call_math(self: FunctionCompiler, name: str, node: ast.Call) -> Any:
        display = f"math.{name}"
        if name not in MATH_RESULTS:
            spelled = numpy_spelling(name)
            hint = f": {spelled} computes it for numbers and arrays" if spelled else ""
            raise self.error(node.func, f"{display}() is not supported{hint}")
        if node.keywords:
            raise self.error(node.keywords[0], f"{display}() takes no keyword arguments")
        low, high = MATH_ARITY.get(name, (1, 1))
        if not low <= len(node.args) <= high:
            count = str(low) if low == high else f"{low} to {high}"
            raise self.error(node, f"{display}() takes {count} argument"
                             f"{'s' if high != 1 else ''} ({len(node.args)} given)")
        args = [self.math_argument(a, name) for a in node.args]
        return self.emit_value("prim::math", [self.const(name), *args])

    def math_argument(self: FunctionCompiler, arg: ast.expr, name: str) -> Any:
        value = self.expr(arg)
        integral = name in MATH_INTEGRAL
        if value.type in ((BOOL, INT) if integral else (BOOL, INT, FLOAT)):
            return value
        t = value.type
        if isinstance(t, TensorType) and (t.shape is None or not t.shape):
            if not integral:  # Python's float() of it (numpy's TypeError where not 0-d)
                return self.emit_value("prim::Float", [value])
            if t.dtype is not None and np.issubdtype(np.dtype(t.dtype), np.integer):
                return self.emit_value("prim::Int", [value])
        if isinstance(t, TensorType) and not integral:
            spelled = numpy_spelling(name) or "the numpy function"
            raise self.error(arg, f"math.{name}() of a {t}: "
                             f"{spelled} computes it for arrays (math.{name}() takes a number or a "
                             "0-d array)")
        kind = "an int" if integral else "a number"
        raise self.error(arg, f"math.{name}() takes {kind}, not a {t}")
