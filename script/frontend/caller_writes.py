"""Writes into the caller's arrays: ``self.grads[0][...] = dWx``, ``grads["W"][...] += dW``.

A layer's hand-written backward often stores its gradients into arrays its caller keeps (Deep
Learning from Scratch 2's ``self.grads[0][...] = dWx``: the optimizer holds the same arrays). The
compiled code treats arrays as values, so such a write is a side effect of its own,
``tensor::write_into(dst, value, op)``, which runs numpy's ``dst[...] = value`` (or ``op=``) on
the caller's array itself, where the statement is. It is sound where nothing else the function
computes can see the write, which is checked when the function has compiled
(``check_caller_writes``):

- the array written is the whole of an array an argument or an object's attribute holds, or one
  item of a list or dict one holds, read for this write alone (``X[...]`` or ``X[:]``, plain or
  augmented);
- the function reads nothing else of that array or container: each use of the container is an
  item read for such a write (a read of ``self.grads`` elsewhere, or of the array itself, is a
  ``ScriptError`` at the write saying so);
- and, at each call, no array the function reads shares memory with the arrays in the
  containers it writes into (``writes_apart``: a ``SignatureError`` where ``self.grads[0]`` is
  ``self.params[0]``, say).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.core import Node, Value
from ir.types import DictType, ListType, TensorType, is_number
from script.errors import ScriptError, SignatureError, at_node
from script.frontend.exprs import NOT_STATIC
from script.frontend.object_args import ObjectArg

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

WRITE = "tensor::write_into"
READS = ("prim::ListIndex", "prim::DictGetItem")

SHAPE_READS = frozenset({
    "tensor::zeros_like", "tensor::ones_like", "tensor::full_like", "tensor::empty_like",
    "tensor::numel", "tensor::size", "tensor::shape", "tensor::ndim", "tensor::dtype"})
"""Ops that read an array's shape or dtype, not its values: a write into it changes neither."""

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
        ast.FloorDiv: "//", ast.Mod: "%"}


def _whole(index: ast.expr) -> bool:
    """``...`` or ``:``: the index of a write into a whole array."""
    if isinstance(index, ast.Constant) and index.value is Ellipsis:
        return True
    return isinstance(index, ast.Slice) and index.lower is None and index.upper is None \
        and index.step is None


class CallerWriteMixin:
    """``X[...] = v`` into an array the caller holds, in ``FunctionCompiler``."""

    def caller_array(self: FunctionCompiler, dst: Value) -> Value | None:
        """The graph input (an argument or an object's attribute) ``dst`` is, or whose list or
        dict ``dst`` is an item of; None for an array this function made or another value."""
        if not isinstance(dst.type, TensorType):
            return None
        top = self.graph.block.param_node
        if dst.node is top:
            return dst
        if dst.node.kind in READS and dst.node.inputs[0].node is top:
            return dst.node.inputs[0]
        return None

    def caller_write(self: FunctionCompiler, target: ast.Subscript, dst: Value, value: Any,
                     op: str = "") -> bool:
        """Emit ``target = value`` (``op``: of ``target op= value``) as a write into the
        caller's array ``dst``, where it is one; False where it is not (the other write rules
        apply)."""
        holder = self.caller_array(dst)
        if not _whole(target.slice) or holder is None or not isinstance(value, Value) or \
                not (isinstance(value.type, TensorType) or is_number(value.type)):
            return False
        if any(u.node.kind in ("prim::ListSetItem", "prim::DictSetItem") for u in holder.uses):
            return False  # ``xs[t] = np.zeros(...); xs[t][...] = v``: ``write_stored_item``
        index = ":" if isinstance(target.slice, ast.Slice) else "..."  # (`:` of a 0-d: an error)
        node = self.emit(WRITE, [dst, value, self.const(op), self.const(index)], [])
        self.__dict__.setdefault("_write_targets", {})[node] = self.statement or target
        return True

    def caller_update(self: FunctionCompiler, node: ast.AugAssign) -> bool:
        """``X[...] += v`` into the caller's array ``X``, and ``params[i] -= v`` of an array
        the caller's list or dict ``params`` holds (numpy updates that array in place: the
        optimizers' ``params[i] -= lr * grads[i]``); see ``caller_write``."""
        target = node.target
        op = _OPS.get(type(node.op))
        if op is not None and isinstance(target, ast.Attribute):  # `self.W -= lr * self.dW`
            owner = self.resolve_static(target.value)
            if not isinstance(owner, ObjectArg):
                return False
            dst = self.expr(target)  # (where the function assigned it: not the caller's array)
            if self.caller_array(dst) is not dst:
                return False
            whole = ast.copy_location(ast.Subscript(target, ast.Constant(Ellipsis), ast.Store()),
                                      target)
            return self.caller_write(whole, dst, self.expr(node.value), op)
        if op is None or not isinstance(target, ast.Subscript):
            return False
        if _whole(target.slice) and not isinstance(target.value, ast.Name):
            dst = self.expr(target.value)
            if self.caller_array(dst) is None:
                return False
            return self.caller_write(target, dst, self.expr(node.value), op)
        if isinstance(target.slice, ast.Slice) or \
                self.resolve_static(target.value) is not NOT_STATIC:
            return False
        container = self.expr(target.value)
        if container.node is not self.graph.block.param_node or \
                not isinstance(container.type, (ListType, DictType)) or \
                not isinstance(_item_type(container.type), TensorType):
            return False
        dst = self.expr(target)
        try:  # where something else reads it too: the refusal of an update of a held item
            self.check_item_update(target, dst, node)
            refusal = None
        except ScriptError as error:
            refusal = error
        whole = ast.copy_location(ast.Subscript(target, ast.Constant(Ellipsis), ast.Store()),
                                  target)
        if not self.caller_write(whole, dst, self.expr(node.value), op):
            return False
        if refusal is not None:
            self.__dict__.setdefault("_write_refusals", {})[self._last_write()] = refusal
        return True

    def _last_write(self: FunctionCompiler) -> Node:
        return list(self.__dict__["_write_targets"])[-1]

    def check_caller_writes(self: FunctionCompiler) -> tuple[int, ...]:
        """ScriptError unless nothing else the function computes reads what its writes into
        the caller's arrays change (see the module); the positions of the graph inputs written
        into (``FunctionDef.caller_writes``)."""
        writes = [n for n in self.graph.walk() if n.kind == WRITE]
        calls = self.__dict__.get("_call_writes", {})
        holders: dict[Value, Node] = {}  # what is written into -> one write (or call) doing it
        for node in writes:
            holder = self.caller_array(node.inputs[0])
            assert holder is not None
            holders.setdefault(holder, node)
            if holder is not node.inputs[0] and not _only_written(node.inputs[0]):
                raise self._read_elsewhere(node, holder, None)
        for call, positions in calls.items():
            if call.owner is None:
                continue  # (erased)
            for k in positions:
                holders.setdefault(call.inputs[k], call)
        inputs = list(self.graph.inputs)
        written: list[int] = []
        for holder, writer in holders.items():
            for use in holder.uses:
                reader = use.node
                if reader.kind in ("prim::len", "prim::DictKeys") or (
                        reader.kind == WRITE and use.index == 0) or (
                        reader in calls and use.index in calls[reader]) or (
                        isinstance(holder.type, TensorType) and reader.kind in SHAPE_READS
                        and use.index == 0) or (
                        not isinstance(holder.type, TensorType) and reader.kind in READS and
                        use.index == 0 and _only_written(reader.output)):
                    continue
                raise self._read_elsewhere(writer, holder, reader)
            if holder in inputs and inputs.index(holder) not in written:
                written.append(inputs.index(holder))
        return tuple(sorted(written))

    def note_callee_writes(self: FunctionCompiler, call: Node, fdef: Any) -> None:
        """A called function writes into the arrays its inputs at ``fdef.caller_writes`` hold:
        the arrays this function passes there are written into (``check_caller_writes``)."""
        if fdef.caller_writes:
            self.__dict__.setdefault("_call_writes", {})[call] = fdef.caller_writes

    def _read_elsewhere(self: FunctionCompiler, write: Node, holder: Value,
                        reader: Node | None) -> Exception:
        refusal = self.__dict__.get("_write_refusals", {}).get(write)
        if refusal is not None:
            return refusal
        name = holder.name or "the array"
        line = getattr(reader.source, "line", None) if reader is not None else None
        where = f" (line {line})" if line else ""
        what = "writing into" if write.kind == WRITE else (
            f"'{write.attrs.get('name', 'a function')}' (called here) writes into")
        message = (f"{what} '{name}' in place, which the function also uses otherwise{where}: "
                   "numpy would show the write there, which the compiled code does not follow; "
                   "a write into the caller's arrays compiles where nothing else of them is "
                   "read (copy what is read first, with .copy())")
        target = self.__dict__.get("_write_targets", {}).get(write)
        if target is None:
            return at_node(write, message, self.source)
        return self.error(target, message)


def _item_type(t: Any) -> Any:
    return t.element if isinstance(t, ListType) else t.value


def _only_written(item: Value) -> bool:
    """Whether the array ``item`` is only written into, or only its shape and dtype read
    (``self.v.append(np.zeros_like(param))`` for each of the params an optimizer updates)."""
    return bool(item.uses) and all(u.index == 0 and (u.node.kind == WRITE or
                                                     u.node.kind in SHAPE_READS)
                                   for u in item.uses)


def writes_apart(name: str, inputs: tuple[Any, ...], written: tuple[int, ...],
                 names: list[str]) -> None:
    """SignatureError when an array in an input the function writes into (``written``) shares
    memory with an array of another input: the write would change what the function reads."""
    targets = [(j, a) for j in written for a in _arrays(inputs[j])]
    if not targets:
        return
    for k, value in enumerate(inputs):
        if k in written:
            continue
        for other in _arrays(value):
            for j, target in targets:
                if np.may_share_memory(target, other):
                    raise SignatureError(f"{name}(): an array the function writes into in "
                                         f"'{names[j]}' shares memory with '{names[k]}', which "
                                         "it reads: the compiled code does not follow the write "
                                         "into it (pass separate arrays)")


def _arrays(value: Any, depth: int = 0) -> list[Any]:
    if isinstance(value, np.ndarray):
        return [value]
    if depth > 2:
        return []
    if isinstance(value, (list, tuple)):  # (a NamedTuple too)
        return [a for v in value for a in _arrays(v, depth + 1)]
    if type(value) is dict:
        return [a for v in value.values() for a in _arrays(v, depth + 1)]
    return []


__all__ = ["CallerWriteMixin", "writes_apart"]
