"""numpy functions that write into their first argument: ``np.add.at``, ``np.copyto``.

``np.copyto(dst, src)`` is ``dst[...] = src``, every element of ``dst`` set in place.

``np.add.at(a, indices, v)`` is numpy's unbuffered in-place add at integer-array indices.

Where ``a[idx] += v`` adds once per distinct index (numpy buffers the read), ``np.add.at`` adds
every item, so repeated indices accumulate: cs231n's word-embedding backward,
``np.add.at(dW, x, dout)``, sums the gradient of every time a word occurs. The statement becomes
``a = take_add(a, v, idx, axis)`` (``(rows, cols)``: ``index_pairs_add``), numpy's own
``np.add.at`` on a copy of ``a`` (its order of additions, its rounding and casting): a write
into ``a``, which the frontend follows through every name of ``a`` and refuses on an array the
caller holds, as it does ``a[idx] = v``. ``np.subtract.at`` subtracts. An index with no integer
array (ints and slices: basic indexing, every item once) is ``a[index] += v`` itself.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import numpy as np

from ir.core import Value
from ir.ops.elementwise import CASTING_ATTR
from ir.types import FLOAT, TensorType, is_number
from script.frontend.writes import _is_ellipsis

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

_UFUNCS = {id(np.add): ast.Add, id(np.subtract): ast.Sub}
"""the ufuncs whose ``.at`` compiles, and the augmented operator of their basic index."""


class InPlaceCallMixin:
    """``np.add.at``, ``np.subtract.at`` and ``np.copyto`` statements in ``FunctionCompiler``."""

    def in_place_call(self: FunctionCompiler, call: ast.expr) -> bool:
        """A statement that calls one of these: True when handled."""
        return self.copyto_call(call) or self.ufunc_at_call(call)

    def copyto_call(self: FunctionCompiler, call: ast.expr) -> bool:
        """``np.copyto(dst, src)``: ``dst[...] = src`` cast as numpy's same-kind rule allows
        (its TypeError otherwise: a float into an int array); ``where=`` and ``casting=`` are
        refused."""
        name = call.func.attr if isinstance(call, ast.Call) and isinstance(
            call.func, ast.Attribute) else getattr(getattr(call, "func", None), "id", None)
        if name != "copyto" or self.resolve_static(call.func) is not np.copyto:
            return False
        if len(call.args) != 2 or call.keywords:
            raise self.unsupported(call, "np.copyto() with other than its two arrays (dst, src)")
        dst, src = call.args
        into = self.expr(dst)
        if not isinstance(into.type, TensorType):
            raise self.error(dst, f"np.copyto() writes into an array, not a {into.type}")
        value = self.expr(src)
        if value.type == FLOAT:  # a float into an int array: numpy's TypeError
            value = self.numpy_scalar(value, self.const(None))
        elif not (is_number(value.type) or isinstance(value.type, TensorType)):
            raise self.error(src, f"np.copyto() copies an array or a number, not {value.type}")
        if isinstance(value.type, TensorType):  # (an int or bool goes in as numpy puts it)
            value = self.emit("tensor::astype", [value, self.emit_value(
                "tensor::dtype", [into])], attrs={CASTING_ATTR: "same_kind"}).output
        name = f"$copyto_{id(call)}"
        self.frame.set(name, value)
        index = ast.copy_location(ast.Constant(Ellipsis), call)
        try:
            self.visit(ast.copy_location(ast.Assign(
                [ast.copy_location(ast.Subscript(dst, index, ast.Store()), dst)],
                ast.copy_location(ast.Name(name, ast.Load()), src)), call))
        finally:
            self.frame.vars.pop(name, None)
        return True

    def slice_call(self: FunctionCompiler, node: ast.expr) -> ast.expr:
        """``slice(lo, hi, step)`` in an index tuple as the slice ``lo:hi:step`` it is."""
        if not (isinstance(node, ast.Call) and not node.keywords and len(node.args) <= 3
                and self.resolve_static(node.func) is slice):
            return node
        bounds = [None if isinstance(a, ast.Constant) and a.value is None else a
                  for a in node.args]
        lower, upper, step = ([None, *bounds, None] if len(bounds) == 1
                              else [*bounds, None, None][:3])
        return ast.copy_location(ast.Slice(lower, upper, step), node)

    def ufunc_at_call(self: FunctionCompiler, call: ast.expr) -> bool:
        """``np.add.at(a, indices, v)`` as a statement: True when handled (a ``ScriptError``
        where ``a`` or the indices are not what it takes)."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "at"):
            return False
        ufunc = self.resolve_static(call.func.value)
        if not isinstance(ufunc, np.ufunc):
            return False
        display = f"np.{ufunc.__name__}.at"
        found_op = _UFUNCS.get(id(ufunc))
        if found_op is None:
            raise self.unsupported(call, f"{display}() (np.add.at and np.subtract.at compile)")
        if len(call.args) != 3 or call.keywords:
            raise self.error(call, f"{display}() takes three arguments here: the array, the "
                             "indices and the values to add")
        target, index, value_node = call.args
        if not isinstance(target, ast.Name):
            raise self.unsupported(call, f"{display}() into {ast.unparse(target)} (give a local "
                                   "array name: g = np.zeros_like(W); np.add.at(g, idx, v))")
        old = self.frame.find(target.id)
        if not isinstance(old, Value):  # a global, a closure's or a module's array
            raise self.error(target, f"{display}() into '{target.id}', which this function did "
                             "not make (a global or captured array): numpy would change that "
                             "array itself, which the compiled code does not do; copy it first: "
                             f"{target.id}_copy = {target.id}.copy()")
        if not isinstance(old.type, TensorType):
            raise self.error(target, f"{display}() writes into an array, not a {old.type}")
        self.check_owned(target.id, old, call)  # an argument's array: numpy changes it
        if isinstance(index, ast.Tuple):  # (slice(None), idx): the slice numpy's a[:, idx] has
            index = ast.copy_location(ast.Tuple([self.slice_call(i) for i in index.elts],
                                                ast.Load()), index)
        items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        found = self.integer_index_of(items)
        if found is None:  # ints and slices alone: each item once, as a[index] += v
            self.evaluated_indices = {}
            if any(isinstance(self.expr(i).type, TensorType) for i in items
                   if not isinstance(i, ast.Slice) and not _is_ellipsis(i)):
                raise self.unsupported(call, f"{display}() at {ast.unparse(index)} (give an "
                                       "integer array, optionally after ':' slices, or two "
                                       "integer arrays: (rows, cols))")
            self.visit(ast.copy_location(ast.AugAssign(
                ast.copy_location(ast.Subscript(target, index, ast.Store()), call), found_op(),
                value_node), call))
            return True
        value = self.expr(value_node)
        if not (is_number(value.type) or isinstance(value.type, TensorType)):
            raise self.error(value_node, f"{display}(): the values must be an array or a "
                             f"number, not {value.type}")
        aliases = self.check_write(target.id, old, call)
        new = self.integer_put(old, value, *found, adds=-1 if found_op is ast.Sub else 1)
        for name in [target.id, *aliases]:
            self.frame.set(name, new)
        return True
