"""numpy's legacy random functions (a ``FunctionCompiler`` mixin): ``np.random.rand(*h.shape)``,
``np.random.randn(n, h)``, ``np.random.choice(range(V), p=p.ravel())``,
``np.random.binomial(1, keep, size=h.shape)``, ``np.random.seed(0)`` and the others of
``ir.ops.random.RANDOM_PARAMS`` draw from numpy's global generator when the code runs, as the
plain function does (``prim::random``), so a seeded program draws the same numbers. numpy's
``Generator`` objects (``np.random.default_rng()``) and keyword arguments numpy's functions do
not take are refused by name.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.ops.random import DIMS_FUNCTIONS, RANDOM_PARAMS
from ir.types import BOOL, FLOAT, INT, NONE, ListType, TensorType, TupleType
from script.frontend.spread import SpreadList

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

_GLOBAL = np.random.mtrand._rand


def random_function_name(obj: Any) -> str | None:
    """The name of ``obj`` when it is one of numpy's global random functions
    (``np.random.rand`` however it was imported), else None."""
    if getattr(obj, "__self__", None) is _GLOBAL:
        return str(obj.__name__)
    return "seed" if obj is np.random.seed else None


class RandomMixin:
    """Calls of numpy's global random functions, for ``FunctionCompiler``."""

    def call_random(self: FunctionCompiler, name: str, node: ast.Call) -> Any:
        display = f"np.random.{name}"
        if name in DIMS_FUNCTIONS:
            if node.keywords:
                raise self.error(node.keywords[0], f"{display}() takes no keyword arguments")
            if len(node.args) == 1 and isinstance(node.args[0], SpreadList):
                # rand(*h.shape) is random_sample(size=h.shape), randn(*s) standard_normal(s):
                # numpy's own definitions of the two, which draw the same numbers
                size = node.args[0].value
                if not (isinstance(size.type, ListType) and size.type.element in (INT, BOOL)):
                    raise self.error(node.args[0], f"{display}(*dims): dims must hold ints")
                drawn = "random_sample" if name == "rand" else "standard_normal"
                return self.emit_value("prim::random", [self.const(drawn), size])
            if any(isinstance(a, SpreadList) for a in node.args):
                raise self.error(node, f"{display}() with * among other dimensions: pass the "
                                 f"shape as a tuple, {display}(*shape)")
            dims = [self.expr(a) for a in node.args]
            for arg, dim in zip(node.args, dims):
                if dim.type not in (INT, BOOL):
                    raise self.error(arg, f"{display}() takes int dimensions, not a {dim.type}")
            return self.emit_value("prim::random", [self.const(name), *dims])
        if name not in RANDOM_PARAMS:
            supported = ", ".join(sorted([*RANDOM_PARAMS, *DIMS_FUNCTIONS]))
            raise self.error(node.func, f"{display}() is not supported (numpy's global random "
                             f"functions that are: {supported})")
        params = RANDOM_PARAMS[name]
        names = [p for p, _ in params]
        given: dict[str, ast.expr] = {}
        if len(node.args) > len(params):
            raise self.error(node, f"{display}() takes at most {len(params)} positional "
                             f"arguments ({len(node.args)} given)")
        given.update(zip(names, node.args))
        for kw in node.keywords:
            if kw.arg not in names:
                raise self.error(kw, f"{display}() got an unexpected keyword argument "
                                 f"'{kw.arg}'" if kw.arg else f"**kwargs in {display}()")
            if kw.arg in given:
                raise self.error(kw, f"{display}() got multiple values for '{kw.arg}'")
            given[kw.arg] = kw.value
        values = []
        ranged = False
        for param, default in params:
            if param not in given:
                if default is ...:
                    raise self.error(node, f"{display}() missing required argument '{param}'")
                values.append(self.const(default))
                continue
            arg = given[param]
            if name == "choice" and param == "a" and isinstance(arg, ast.Call) and \
                    len(arg.args) == 1 and not arg.keywords and \
                    self.resolve_static(arg.func) is range:
                arg = arg.args[0]  # type: ignore[attr-defined]  # choice(range(n)): choice(n)
                ranged = True
            values.append(self.random_argument(display, param, arg))
        if name in ("randint", "binomial") and any(isinstance(v.type, TensorType)
                                                   for v in values[:2]):
            raise self.error(node, f"{display}() of arrays of bounds is not supported: give "
                             "numbers and a size")
        drawn = self.emit_value("prim::random", [self.const(name), *values])
        if ranged and drawn.type == INT:  # the same draw, as the item of np.arange(n) it picks
            return self.numpy_scalar(drawn, self.const("int64"))
        return drawn

    def random_argument(self: FunctionCompiler, display: str, param: str, arg: ast.expr) -> Any:
        value = self.expr(arg)
        t = value.type
        if param == "size":
            ok = t in (INT, BOOL, NONE) or isinstance(t, TupleType) and all(
                e in (INT, BOOL) for e in t.elements) or isinstance(t, ListType) and \
                t.element in (INT, BOOL)
            what = "None, an int or a tuple of ints"
        elif param in ("replace",):
            ok, what = t == BOOL, "a bool"
        elif param == "seed":
            ok, what = t in (INT, BOOL, NONE), "an int or None"
        elif param == "a":
            ok = t in (INT, BOOL) or isinstance(t, TensorType) or isinstance(t, ListType) \
                and t.element in (INT, BOOL, FLOAT)
            what = "an int, range(n), a 1-D array or a list of numbers"
        else:  # low, high, loc, scale, n, p
            ok = t in (INT, BOOL, FLOAT, NONE) or isinstance(t, TensorType) or \
                isinstance(t, ListType) and t.element in (INT, BOOL, FLOAT)
            what = "a number or an array"
        if not ok:
            raise self.error(arg, f"{display}(): '{param}' must be {what}, not a {t}")
        return value
