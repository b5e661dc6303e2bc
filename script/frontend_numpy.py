"""numpy functions written as compositions of ops, and the builtin ``sorted``.

``np.outer`` and ``np.array`` of arrays become the ops numpy itself computes them with (a
broadcast product of two columns; a copy or a stack), so fusion and differentiation see those
ops. (``np.dot``, ``np.hstack`` and ``np.vstack``, whose meaning depends on numbers of axes that
are known only once a function is specialized, are ops that canonicalization rewrites then.)
``sorted(items, key=..., reverse=...)`` over numbers or tuples sorts at run time by
keys that a comprehension computes.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.ops.numpy_ops import array_rank
from ir.types import STR, ListType, TensorType, TupleType

if TYPE_CHECKING:
    from script.frontend import FunctionCompiler

NUMPY_COMPOSITES = {"outer": "numpy_outer", "array": "numpy_array"}
"""numpy function name -> the FunctionCompiler method that writes it."""
_composite_ids: dict[int, tuple[Any, str]] = {}


def numpy_composite(obj: Any) -> str | None:
    """The FunctionCompiler method writing a call of numpy function ``obj``, or None."""
    if not _composite_ids:
        for name, method in NUMPY_COMPOSITES.items():
            fn = getattr(np, name)
            _composite_ids[id(fn)] = (fn, method)
    entry = _composite_ids.get(id(obj))
    return entry[1] if entry is not None and entry[0] is obj else None


class NumpyMixin:
    """Calls of numpy functions that are compositions of ops, and ``sorted``."""

    def numpy_args(self: FunctionCompiler, node: ast.Call, display: str, names: list[str],
                   required: int, receiver: Any = None) -> list[Any]:
        """The values of a call's arguments by ``names`` (None for one not given)."""
        given: list[Any] = ([receiver] if receiver is not None else []) + list(node.args)
        if len(given) > len(names):
            raise self.error(node, f"{display}() takes at most {len(names)} arguments")
        found: list[Any] = given + [None] * (len(names) - len(given))
        for kw in node.keywords:
            if kw.arg not in names:
                raise self.error(kw, f"{display}(): the argument '{kw.arg}' is not supported")
            found[names.index(kw.arg)] = kw.value
        missing = [n for n, v in zip(names[:required], found) if v is None]
        if missing:
            raise self.error(node, f"{display}() missing required argument '{missing[0]}'")
        return [v if v is None or not isinstance(v, ast.AST) else self.expr(v) for v in found]

    # -- np.outer ----------------------------------------------------------------------------------
    def numpy_outer(self: FunctionCompiler, node: ast.Call) -> Any:
        """numpy.outer(a, b): ``a.ravel()[:, None] * b.ravel()[None, :]``, as numpy computes it."""
        a, b = self.numpy_args(node, "np.outer", ["a", "b"], 2)
        columns = []
        for v, axis in ((a, 1), (b, 0)):
            if not isinstance(v.type, TensorType):
                raise self.error(node, f"np.outer() of a {v.type} is not supported (pass arrays)")
            flat = v if v.type.rank == 1 else self.emit_value("tensor::ravel", [v])
            columns.append(self.emit_value("tensor::expand_dims", [flat, self.const(axis)]))
        return self.emit_value("tensor::mul", columns)

    # -- np.array ----------------------------------------------------------------------------------
    def numpy_array(self: FunctionCompiler, node: ast.Call) -> Any:
        """numpy.array: a copy of an array, a stack of a list of arrays, else ``tensor::array``
        of numbers and (nested) lists of numbers."""
        given = dict(zip(["object", "dtype"], node.args)) | {kw.arg: kw.value
                                                             for kw in node.keywords}
        if len(node.args) > 2 or set(given) - {"object", "dtype"} or "object" not in given:
            raise self.error(node, "np.array() takes an object and a dtype here (copy, order "
                             "and ndmin are not supported)")
        data = self.expr(given["object"])
        dtype = self.dtype_value(given["dtype"]) if "dtype" in given else self.const(None)
        t = data.type
        arrays = isinstance(t, TensorType) or (
            isinstance(t, ListType) and isinstance(t.element, TensorType)) or (
            isinstance(t, TupleType) and t.elements
            and all(isinstance(e, TensorType) for e in t.elements))
        if not arrays:
            if t == STR or (array_rank(data) is None and not isinstance(t, ListType)):
                raise self.error(node, f"np.array() of a {t} is not supported (pass a number, "
                                 "an array, or lists of numbers)")
            return self.emit_value("tensor::array", [data, dtype])
        kind = "tensor::copy" if isinstance(t, TensorType) else "tensor::stack"
        out = self.emit_value(kind, [data] if kind == "tensor::copy" else [data, self.const(0)])
        if dtype.is_constant and dtype.constant is None:
            return out
        return self.emit_value("tensor::astype", [out, dtype])

