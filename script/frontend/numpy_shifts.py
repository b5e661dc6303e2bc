"""numpy functions written as the ops numpy's own Python computes them with: ``np.roll`` (a
gather at shifted indices) and ``np.linalg.norm`` without an ``ord`` (the square root of a dot
product of the flattened array, or of a sum of squares along axes), ``np.diag`` (a gather
at a diagonal). Gradients flow through the ops they are written as. ``np.einsum`` is its op,
with numpy's ``optimize=`` keyword taken (it changes how, not what, numpy computes).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.registry import constant_of
from ir.types import BOOL, INT, NONE, TensorType
from script.frontend.env import end_of

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


class ShiftsMixin:
    """numpy functions of ``FunctionCompiler`` (see the module docstring)."""

    def numpy_einsum(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.einsum(subscripts, *operands, optimize=False): ``tensor::einsum``, with numpy's
        ``optimize`` (a constant: the order of the contractions, which may change the last
        bits of a float result)."""
        optimize: Any = False
        for kw in node.keywords:
            if kw.arg != "optimize":
                raise self.error(kw, f"np.einsum(): the argument '{kw.arg}' is not supported")
            optimize = constant_of(self.expr(kw.value))
            if not isinstance(optimize, (bool, str)):
                raise self.error(kw, "np.einsum() optimize must be a constant here (True, "
                                 "False, 'greedy' or 'optimal')")
        if not node.args:
            raise self.error(node, "np.einsum() takes the subscripts and the operands")
        spec = self.expr(node.args[0])
        operands = [self.expr(a) for a in node.args[1:]]
        for k, v in enumerate(operands):
            if not isinstance(v.type, TensorType):
                operands[k] = self.ufunc_result(v)
                if not isinstance(operands[k].type, TensorType):
                    raise self.error(node.args[k + 1], f"np.einsum() operand of type {v.type}")
        return self.emit_value("tensor::einsum", [spec, self.const(optimize), *operands])

    def numpy_roll(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.roll(a, shift, axis=None): ``np.take(a, (np.arange(n) - shift) % n, axis)`` along
        an int axis; without one, of the flattened array, reshaped back (a new array either
        way, as numpy's)."""
        a, shift, axis = self.numpy_args(node, "np.roll", ["a", "shift", "axis"], 2)
        if not isinstance(a.type, TensorType):
            raise self.error(node, f"np.roll() of a {a.type}: pass an array")
        shift = self.as_index(shift)
        if shift.type not in (INT, BOOL):
            raise self.error(node, f"np.roll() shift must be an int here, not {shift.type} "
                             "(several shifts: roll once per axis)")
        whole = axis is None or axis.type == NONE
        if not whole and axis.type != INT:
            raise self.error(node, f"np.roll() axis must be an int or None here, not "
                             f"{axis.type} (several axes: roll once per axis)")
        source = self.emit_value("tensor::reshape", [a, self.const((-1,))]) if whole else a
        along = self.const(0) if whole else axis
        n = self.emit_value("tensor::size", [source, along])
        none = self.const(None)
        steps = self.emit_value("tensor::arange", [n, none, self.const(1), self.const("int64")])
        moved = self.emit_value("tensor::sub", [steps, shift])
        index = self.emit_value("tensor::mod", [moved, n])
        rolled = self.emit_value("tensor::take", [source, index, along])
        if whole:
            shape = self.emit_value("tensor::shape", [a])
            rolled = self.emit_value("tensor::reshape", [rolled, shape])
        return rolled

    def linalg_norm(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.linalg.norm(x, ord=None, axis=None, keepdims=False) as numpy computes it for
        ``ord=None``: an int array as float64, then ``sqrt(dot(x.ravel(), x.ravel()))`` without
        an axis (a numpy scalar), else
        ``sqrt(sum(x * x, axis, keepdims))``."""
        x, order, axis, keepdims = self.numpy_args(node, "np.linalg.norm",
                                                   ["x", "ord", "axis", "keepdims"], 1)
        if order is not None and not (order.is_constant and order.constant is None):
            raise self.error(node, "np.linalg.norm() with an ord is not supported (the default: "
                             "the 2-norm of a vector, the Frobenius norm of a matrix)")
        if not isinstance(x.type, TensorType):
            raise self.error(node, f"np.linalg.norm() of a {x.type}: pass an array")
        kept = self.const(False) if keepdims is None else keepdims
        if not kept.is_constant:
            raise self.error(node, "np.linalg.norm() keepdims must be a constant")
        x = self.inexact(x, node)
        if axis is None or axis.type == NONE:
            if kept.constant:
                raise self.error(node, "np.linalg.norm() with keepdims and no axis is not "
                                 "supported (give the axes)")
            flat = self.emit_value("tensor::reshape", [x, self.const((-1,))])
            return self.emit_value("tensor::sqrt", [self.emit_value("tensor::dot", [flat, flat])])
        axes = constant_of(axis)
        if isinstance(axes, tuple) and len(axes) > 2:
            raise self.error(node, "np.linalg.norm() over more than two axes (numpy raises "
                             "ValueError: Improper number of dimensions to norm.)")
        squares = self.emit_value("tensor::mul", [x, x])
        total = self.emit_value("tensor::sum", [squares, axis, kept])
        return self.emit_value("tensor::sqrt", [total])

    def numpy_diag(self: FunctionCompiler, node: ast.Call) -> Any:
        """np.diag(v, k=0): of a 1-D ``v`` the square array with ``v`` on diagonal ``k`` (the
        gather ``v[min(row, column)]`` where ``column == row + k``, zeros elsewhere); of a 2-D
        ``v`` that diagonal (``v[rows, columns]``: its gradient scatters back); numpy's
        ValueError for any other rank."""
        v, k = self.numpy_args(node, "np.diag", ["v", "k"], 1)
        if not isinstance(v.type, TensorType):
            raise self.error(node, f"np.diag() of a {v.type}: pass an array")
        k = self.as_index(k) if k is not None else self.const(0)
        if k.type not in (INT, BOOL):
            raise self.error(node, f"np.diag() argument 'k' must be an int, not {k.type}")
        rank = v.type.rank
        if rank == 1:
            return self.diagonal_array(v, k, node)
        if rank == 2:
            return self.diagonal_of(v, k, node)
        if rank is not None:
            raise self.error(node, f"np.diag() of a {rank}-d array: numpy's ValueError, "
                             "\"Input must be 1- or 2-d.\"")
        name = f"$diag_{id(node)}"
        ndim = self.emit_value("tensor::ndim", [v])
        after = end_of(node)

        def other_ranks() -> None:
            self.emit_if(self.binary("==", ndim, self.const(2), node),
                         lambda: self.frame.set(name, self.diagonal_of(v, k, node)),
                         lambda: self.raise_exception("Input must be 1- or 2-d.", "ValueError"),
                         after, node)

        self.emit_if(self.binary("==", ndim, self.const(1), node),
                     lambda: self.frame.set(name, self.diagonal_array(v, k, node)),
                     other_ranks, after, node)
        value = self.frame.find(name)
        del self.frame.vars[name]
        return value

    def diagonal_array(self: FunctionCompiler, v: Any, k: Any, node: ast.Call) -> Any:
        """The (n + |k|, n + |k|) array holding the n items of ``v`` on diagonal ``k``."""
        n = self.emit_value("tensor::size", [v, self.const(0)])
        size = self.binary("+", n, self.emit_value("prim::max", [
            k, self.binary("-", self.const(0), k, node)]), node)
        none, one, int64 = self.const(None), self.const(1), self.const("int64")
        rows = self.emit_value("tensor::reshape", [self.emit_value(
            "tensor::arange", [size, none, one, int64]), self.const((-1, 1))])
        cols = self.emit_value("tensor::arange", [size, none, one, int64])
        # on the diagonal the item is v[min(row, column)]; elsewhere any index in range will
        # do: v padded with |k| zeros has one for every index (an empty v too)
        pad = self.emit_value("tensor::zeros", [
            self.emit_value("prim::TupleConstruct", [self.binary("-", size, n, node)]),
            self.emit_value("tensor::dtype", [v])])
        padded = self.emit_value("tensor::cat", [
            self.emit_value("prim::ListConstruct", [v, pad]), self.const(0)])
        items = self.emit_value("tensor::minimum", [rows, cols])
        taken = self.emit_value("tensor::take", [padded, items, self.const(0)])
        mask = self.diagonal_mask(size, size, k, "tensor::eq")
        zeros = self.emit_value("tensor::zeros_like", [taken, none])
        return self.emit_value("tensor::where", [mask, taken, zeros])

    def diagonal_of(self: FunctionCompiler, a: Any, k: Any, node: ast.Call) -> Any:
        """Diagonal ``k`` of the 2-D ``a``: ``a[start_row + i, start_column + i]``."""
        zero, none = self.const(0), self.const(None)
        first_row = self.emit_value("prim::max", [zero, self.binary("-", zero, k, node)])
        first_col = self.emit_value("prim::max", [zero, k])
        rows_left = self.binary("-", self.emit_value("tensor::size", [a, zero]), first_row, node)
        cols_left = self.binary("-", self.emit_value("tensor::size", [a, self.const(1)]),
                                first_col, node)
        length = self.emit_value("prim::max", [zero, self.emit_value("prim::min", [
            rows_left, cols_left])])
        steps = self.emit_value("tensor::arange", [length, none, self.const(1),
                                                   self.const("int64")])
        return self.emit_value("tensor::index_pairs", [
            a, self.emit_value("tensor::add", [steps, first_row]),
            self.emit_value("tensor::add", [steps, first_col])])

    def inexact(self: FunctionCompiler, x: Any, node: ast.Call) -> Any:
        """``x`` as numpy's linalg takes it: an int or bool array as float64."""
        dtype = self.emit_value("tensor::dtype", [x])
        name = f"$inexact_{id(x)}"
        is_float = self.emit_value("prim::str_op", [self.const("startswith"), dtype,
                                                     self.const("float")])
        self.emit_if(is_float, lambda: self.frame.set(name, x),
                     lambda: self.frame.set(name, self.emit_value(
                         "tensor::astype", [x, self.const("float64")])), end_of(node), node)
        value = self.frame.find(name)
        del self.frame.vars[name]
        return value


__all__ = ["ShiftsMixin"]
