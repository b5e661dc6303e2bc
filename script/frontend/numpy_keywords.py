"""numpy's keyword spellings of ops whose own argument names differ: the bounds of
``np.clip``/``.clip`` and the ``order=`` of array-making calls, which changes no value.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.registry import OpDef

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
