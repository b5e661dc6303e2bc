"""numpy's keyword spellings of ops whose own argument names differ: the bounds of
``np.clip``/``.clip``, the ``order=`` of array-making calls, which changes no value,
``out=``, the array (or part of one) a result is written into, and ``keepdims=`` of
``np.argmax``/``np.argmin``.
"""

from __future__ import annotations

import ast
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.core import Value
from ir.ops.elementwise import CASTING_ATTR
from ir.registry import OpDef
from ir.types import INT, TensorType
from script.frontend.exprs import NOT_STATIC

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

MEMORY_ORDERS = {
    **dict.fromkeys(("tensor::zeros", "tensor::ones", "tensor::empty", "tensor::full"), ("C",)),
    **dict.fromkeys(("tensor::zeros_like", "tensor::ones_like", "tensor::empty_like",
                     "tensor::full_like", "tensor::copy", "tensor::astype"), ("C", "K", "A")),
    **dict.fromkeys(("tensor::reshape", "tensor::flatten", "tensor::ravel"), ("C",))}
"""Ops whose numpy spellings take ``order=``, and the orders that give numpy's values (and a
C-contiguous array): a reshape in Fortran order would read the elements in another order."""


class NumpyKeywordsMixin:
    """numpy keyword spellings for ``FunctionCompiler.bind_op_arguments``."""

    def clip_keywords(self: FunctionCompiler, node: ast.Call, display: str, n_positional: int,
                      keywords: dict[str, ast.expr]) -> dict[str, ast.expr]:
        """numpy's spellings of the bounds as the op's ``lo`` and ``hi``: ``np.clip(a, a_min,
        a_max)`` takes both or neither of those (numpy's TypeError for one alone) and else
        ``min=``/``max=``; ``a.clip(min=None, max=None)`` the latter."""
        if display == "np.clip":
            pair = [n_positional > 1 or "a_min" in keywords,
                    n_positional > 2 or "a_max" in keywords]
            if pair[0] != pair[1]:
                missing = "a_max" if pair[0] else "a_min"
                raise self.error(node, f"np.clip() missing required argument '{missing}'")
            if pair[0] and ("min" in keywords or "max" in keywords):
                raise self.error(node, "np.clip(): min= or max= beside a_min and a_max (numpy's "
                                 "ValueError): give the bounds once")
            names = {"a_min": "lo", "a_max": "hi", "min": "lo", "max": "hi"}
        elif display == ".clip":
            names = {"min": "lo", "max": "hi"}
        else:
            return keywords
        renamed = {names.get(k, k): v for k, v in keywords.items()}
        for k, bound in ((1, "lo"), (2, "hi")):  # a bound left out is open
            if n_positional <= k and bound not in renamed:
                renamed[bound] = ast.Constant(value=None)
        return renamed

    def check_memory_order(self: FunctionCompiler, op: OpDef, order: ast.expr,
                           display: str) -> None:
        """An ``order=`` keyword that changes no value (a new array's memory layout, which the
        compiled code keeps C-contiguous): 'C', and 'K' or 'A' where numpy follows an input's
        layout; 'F' (and a value not written as a string) is refused."""
        allowed = MEMORY_ORDERS[op.kind]
        if not (isinstance(order, ast.Constant) and order.value in allowed):
            spelled = " or ".join(repr(o) for o in allowed)
            raise self.error(order, f"{display}(): order= takes {spelled} here (the compiled "
                             "code makes C-contiguous arrays; Fortran order is not supported)")

    def numpy_dtype(self: FunctionCompiler, node: ast.Call) -> Any:
        """``np.dtype(d)`` of a dtype (a numpy type, a name, a dtype parameter): its name, as a
        dtype is in the compiled code (``np.dtype(d) == np.float32`` compares names)."""
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, "np.dtype() takes one dtype here")
        if isinstance(node.args[0], ast.Constant) and node.args[0].value is None:
            return self.const("float64")  # numpy's default dtype
        return self.dtype_value(node.args[0])

    def call_with_out(self: FunctionCompiler, node: ast.Call, out: ast.keyword) -> Any:
        """``np.clip(g, -5, 5, out=g)``: the op's result written into the array ``out`` names
        (cast to its dtype, seen through every name of it, as numpy writes it); the call's
        value is that array. ``out=alpha[t]`` writes the part as ``alpha[t] = ...`` does and
        the call's value is that part."""
        plain = ast.copy_location(ast.Call(func=node.func, args=node.args, keywords=[
            kw for kw in node.keywords if kw is not out]), node)
        if isinstance(out.value, ast.Subscript) and isinstance(out.value.value, ast.Name):
            base = self.frame.find(out.value.value.id)
            if not isinstance(base, Value) or not isinstance(base.type, TensorType):
                raise self.error(out, f"out= must be an array or a part of one, not "
                                 f"{ast.unparse(out.value)}")
            self.check_out_view(out.value, base)
            result = self.visit_Call(plain)
            if isinstance(result.type, TensorType):  # numpy's same-kind cast into out
                result = self.emit("tensor::astype", [result, self.emit_value(
                    "tensor::dtype", [base])], attrs={CASTING_ATTR: "same_kind"}).output
            self.assign(out.value, result, node)
            return self.expr(out.value)
        if not isinstance(out.value, ast.Name):
            raise self.unsupported(out, "out= that is not a local array name or a part of "
                                   "one (out=x, out=x[t])")
        name = out.value.id
        old = self.frame.find(name)
        if not isinstance(old, Value) or not isinstance(old.type, TensorType):
            raise self.error(out, f"out= must name an array, not {name}")
        self.write_whole_array(name, old, self.visit_Call(plain), node, element=False)
        return self.frame.find(name)

    def check_out_view(self: FunctionCompiler, target: ast.Subscript, base: Value) -> None:
        """``out=x[...]`` must name a view, as numpy's out= must be an array: basic indexing
        (ints, slices, ``...``, ``None``) that leaves an axis. An integer-array or mask index
        makes a copy (numpy would write into the copy), an int per axis a scalar (numpy's
        TypeError)."""
        parts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        ints = 0
        for part in parts:
            if isinstance(part, ast.Slice) or (isinstance(part, ast.Constant) and (
                    part.value is Ellipsis or part.value is None)):
                continue
            if self.expr(part).type != INT:
                raise self.error(part, "out= with an index that is not an int, a slice, ... or "
                                 "None: numpy indexes a copy there, and writes the result into "
                                 "the copy; assign the part instead: x[idx] = np.add(a, b)")
            ints += 1
        rank = base.type.rank if isinstance(base.type, TensorType) else None
        whole = all(not isinstance(p, ast.Slice) and not (isinstance(p, ast.Constant) and (
            p.value is Ellipsis or p.value is None)) for p in parts)
        if rank is None or (whole and ints >= rank):
            raise self.error(target, "out= must be an array: an int per axis names one item "
                             "(numpy's TypeError), and so may an index into an array of "
                             "unknown rank; assign it instead: x[i, j] = ...")

    def extremum_keepdims(self: FunctionCompiler, node: ast.Call) -> Any:
        """``np.argmax(x, axis, keepdims=True)`` (``x.argmin(axis, keepdims=True)`` of an
        array): the indices with the axis kept as one of length 1 (``np.expand_dims`` of the
        result); None for a call without ``keepdims=`` and another function or method of that
        name (a user's own)."""
        keep = next((kw for kw in node.keywords if kw.arg == "keepdims"), None)
        if keep is None or getattr(node.func, "attr", getattr(node.func, "id", None)) not in (
                "argmax", "argmin"):
            return None
        plain = ast.copy_location(ast.Call(func=node.func, args=node.args, keywords=[
            kw for kw in node.keywords if kw is not keep]), node)
        func = node.func
        if isinstance(func, ast.Attribute) and self.resolve_static(func.value) is NOT_STATIC:
            base = self.expr(func.value)
            if not isinstance(base.type, TensorType):
                return self.call_method(base, func.attr, node)
            given = node.args
            compute = lambda: self.call_method(base, func.attr, plain)  # noqa: E731
        else:
            owner = self.resolve_static(func.value) if isinstance(func, ast.Attribute) else None
            if isinstance(func, ast.Attribute) and not isinstance(owner, ModuleType) or \
                    self.resolve_static(func) not in (np.argmax, np.argmin):
                return None  # (an object's method, a user's function of that name)
            given = node.args[1:]
            compute = lambda: self.visit_Call(plain)  # noqa: E731
        flag = self.expr(keep.value)
        if not flag.is_constant or not isinstance(flag.constant, bool):
            raise self.error(keep, "keepdims= takes True or False here (a constant)")
        axis = next((kw.value for kw in node.keywords if kw.arg == "axis"),
                    given[0] if given else None)
        if flag.constant and (axis is None or isinstance(axis, ast.Constant)
                              and axis.value is None):
            raise self.unsupported(node, "keepdims=True without an axis (give the axis: "
                                   "np.argmax(x, axis=-1, keepdims=True))")
        result = compute()
        if not flag.constant:
            return result
        return self.emit_value("tensor::expand_dims", [result, self.as_index(self.expr(axis))])
