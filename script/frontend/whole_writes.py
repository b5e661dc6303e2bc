"""Writes of every element of an array: ``x[...] = v``, ``x[()] = v``, ``x.fill(v)``.

Of an array with axes, the whole slice is written (``tensor::slice_put``). A 0-d array is
rebound to ``v`` in its dtype (``scalar_put``), but only one numpy keeps as an array: one made
by ``np.zeros(())``, ``np.empty(())``, ``np.full((), v)``, ``np.array(v)``, a ``*_like`` of
one, or by such a write. A 0-d value numpy holds as a scalar (a reduction's result, an item
picked with ints, arithmetic of 0-d arrays) cannot be written: numpy raises for ``s[...] = v``
and its ``s.fill(v)`` changes nothing, where the compiled code would rebind ``s``; such a
write is refused. Where the rank is not known until the function is specialized (a value a
loop carries), both writes are compiled and the rank decides.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.core import PARAM, Value
from ir.ops.numpy_ops import SCALAR_ATTR
from ir.types import TensorType, is_number
from script.frontend.env import end_of

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

ZERO_D_ARRAY = "zero_d_array"
"""set on the value a write into a 0-d array makes: an array numpy would still hold."""

ARRAY_MAKERS = frozenset({
    "tensor::zeros", "tensor::ones", "tensor::empty", "tensor::full", "tensor::zeros_like",
    "tensor::ones_like", "tensor::empty_like", "tensor::full_like"})
"""ops whose 0-d results numpy holds as arrays (``tensor::array`` too, unless it stands for a
numpy scalar)."""


def made_as_array(value: Value) -> bool:
    """Whether every way ``value`` is made (through branches and the steps of loops) gives an
    array numpy holds as one: ``ARRAY_MAKERS``, ``np.array``, an earlier 0-d write."""
    seen: set[int] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        node = v.node
        if node.attrs.get(ZERO_D_ARRAY):
            continue
        if node.kind == PARAM:
            owner = node.owner.owner if node.owner is not None else None
            if owner is None or owner.kind != "prim::Loop" or v.index < 1:
                return False  # an argument
            todo.append(owner.inputs[v.index + 1])
            if len(node.owner.returns) > v.index:
                todo.append(node.owner.returns[v.index])
        elif node.kind == "prim::If":
            todo += [block.returns[v.index] for block in node.blocks]
        elif node.kind == "prim::Loop":
            todo += [node.inputs[2 + v.index], node.blocks[0].returns[1 + v.index]]
        elif not (node.kind in ARRAY_MAKERS or (
                node.kind == "tensor::array" and not node.attrs.get(SCALAR_ATTR))):
            return False
    return True


class WholeWriteMixin:
    """Whole-array writes of ``FunctionCompiler`` (see the module docstring)."""

    def whole_write(self: FunctionCompiler, old: Value, value: Any, node: ast.AST,
                    element: bool) -> Value:
        """``old`` with every element set to ``value``; ``element``: the value must be a number
        or a 0-d array (``x.fill(v)``, ``y[()] = v`` of a 0-d ``y``), as numpy requires."""
        rank = old.type.rank  # type: ignore[union-attr]
        if rank == 0:
            return self.scalar_put(old, value, node, element)
        if element and isinstance(value.type, TensorType):
            self.require_0d(value, node)
        none = self.const(None)
        if rank is not None:
            return self.emit_value("tensor::slice_put", [old, value, self.const(0), none, none,
                                                         none])
        name = f"$written_{id(node)}"
        zero_d = self.binary("==", self.emit_value("tensor::ndim", [old]), self.const(0), node)
        self.emit_if(zero_d, lambda: self.frame.set(name, self.scalar_put(
            old, value, node, element)), lambda: self.frame.set(name, self.emit_value(
                "tensor::slice_put", [old, value, self.const(0), none, none, none])),
            end_of(node), node)
        new = self.frame.find(name)
        del self.frame.vars[name]
        return new  # type: ignore[return-value]

    def scalar_put(self: FunctionCompiler, old: Value, value: Any, node: ast.AST,
                   element: bool) -> Value:
        """A 0-d array ``old`` written whole: ``value`` in ``old``'s dtype. As numpy takes it,
        ``value`` is a number or an array of one element, which must be 0-d when the
        ``element`` is set; ``old`` must be an array numpy keeps as one (``made_as_array``)."""
        if not made_as_array(old):
            if old.type.rank == 0:  # type: ignore[union-attr]
                raise self.error(node, "writing into a 0-d value numpy may hold as a scalar (a "
                                 "reduction's result, an item picked with ints, arithmetic of "
                                 "0-d arrays), whose write numpy refuses or ignores: make a 0-d "
                                 "array to write into, y = np.zeros(()), or rebind the name "
                                 "(s = v)")
            self.raise_exception("writing into a 0-d value numpy may hold as a scalar is not "
                                 "supported: make a 0-d array to write into, y = np.zeros(())",
                                 "TypeError")
            return old
        if is_number(value.type):
            new = self.emit_value("tensor::full_like", [old, value, self.const(None)])
        elif not isinstance(value.type, TensorType):
            raise self.error(node, f"cannot write a value of type {value.type} into an array")
        else:
            if element:
                self.require_0d(value, node)
            one = self.emit_value("tensor::reshape", [value, self.const(())])
            new = self.emit_value("tensor::astype", [one, self.emit_value("tensor::dtype",
                                                                          [old])])
        new.node.attrs[ZERO_D_ARRAY] = True
        return new

    def require_0d(self: FunctionCompiler, value: Value, node: ast.AST) -> None:
        """numpy's ValueError where ``value`` has axes (decided when specializing)."""
        zero_d = self.binary("==", self.emit_value("tensor::ndim", [value]), self.const(0), node)
        self.emit_if(zero_d, lambda: None, lambda: self.raise_exception(
            "setting an array element with a sequence.", "ValueError"), end_of(node), node)
