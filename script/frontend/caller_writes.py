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
from ir.versions import ITEM_READS as READS
from ir.versions import WRITE_INTO as WRITE
from ir.versions import shape_read
from script.errors import SignatureError, at_node
from script.frontend.exprs import NOT_STATIC
from script.frontend.masks import plain_read
from script.frontend.object_args import ObjectArg
from script.frontend.write_order import (
    Versions,
    item_groups,
    misplaced_across,
    misplaced_read,
    unversioned,
)
from script.frontend.writes import _AUGMENTED

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


_byte_bounds = getattr(getattr(np.lib, "array_utils", None), "byte_bounds", None) or \
    np.byte_bounds


def _in_place_operator(node: ast.AugAssign) -> str | None:
    op = _AUGMENTED.get(type(node.op))
    return None if op == "@" else op  # (``write_into`` has no in-place matmul)


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
        dst = unversioned(dst)
        top = self.graph.block.param_node
        if dst.node is top:
            return dst
        if dst.node.kind in READS and dst.node.inputs[0].node is top:
            return dst.node.inputs[0]
        return None

    def writable(self: FunctionCompiler, target: ast.Subscript, dst: Value) -> bool:
        """Whether ``target`` (``X[...]`` or ``X[:]``, ``X`` evaluated to ``dst``) is a whole
        array the caller holds, written here as one (``caller_write``)."""
        holder = self.caller_array(dst)
        # ``xs[t] = np.zeros(...); xs[t][...] = v`` writes a new array: ``write_stored_item``
        return _whole(target.slice) and holder is not None and not any(
            u.node.kind in ("prim::ListSetItem", "prim::DictSetItem") for u in holder.uses)

    def caller_write(self: FunctionCompiler, target: ast.Subscript, dst: Value, value: Any,
                     op: str = "") -> Node | None:
        """Emit ``target = value`` (``op``: of ``target op= value``) as a write into the
        caller's array ``dst``, where it is one; None where it is not (the other write rules
        apply)."""
        if not self.writable(target, dst) or not _array_or_number(value):
            return None
        index = ":" if isinstance(target.slice, ast.Slice) else "..."  # (`:` of a 0-d: an error)
        node = self.emit(WRITE, [dst, value, self.const(op), self.const(index)], [dst.type])
        self.__dict__.setdefault("_write_targets", {})[node] = self.statement or target
        self.versions.note(node, self.graph.block.param_node)
        return node

    def caller_part_write(self: FunctionCompiler, target: ast.Subscript, dst: Value,
                          value: Any) -> bool:
        """``c.k[pos] = x``, ``hs[0][1] = x`` into a part of the caller's array ``dst``: a copy
        of the array with the part written, written back whole (``caller_write``), so the
        caller's array holds numpy's values, at the cost of a copy of it per write. False where
        ``dst`` is not the caller's array (the other write rules apply)."""
        holder = self.caller_array(dst)
        if _whole(target.slice) or holder is None or not plain_read(target.value) or any(
                u.node.kind in ("prim::ListSetItem", "prim::DictSetItem") for u in holder.uses):
            return False
        written = self.put_index(self.emit_value("tensor::copy", [dst]), target.slice, value,
                                 target)
        whole = ast.copy_location(ast.Subscript(target.value, ast.copy_location(
            ast.Constant(Ellipsis), target.slice), ast.Store()), target)
        return self.caller_write(whole, dst, written) is not None

    @property
    def versions(self: FunctionCompiler) -> Versions:
        """The last write into each of the caller's arrays (``write_order``)."""
        found = self.__dict__.get("_versions")
        if found is None:
            found = self.__dict__["_versions"] = Versions()
        return found

    def read_version(self: FunctionCompiler, value: Any) -> Any:
        """``value`` read where a write into the same caller's array is: that write's result
        (``write_order``)."""
        found = self.__dict__.get("_versions")
        if found is None or not isinstance(value, Value):
            return value
        return found.forward(value, self.graph.block.param_node,
                             self.graph.insert_point.owner)

    def caller_update(self: FunctionCompiler, node: ast.AugAssign) -> bool:
        """``X[...] += v`` into the caller's array ``X``, ``self.W -= v`` of an array an object
        argument's attribute holds, ``params[i] -= v`` of an array the caller's list or dict
        ``params`` holds (numpy updates that array in place: the optimizers' ``params[i] -= lr *
        grads[i]``), and ``grad *= rate`` of a name bound to such an item (``for grad in
        grads``); see ``caller_write``. Only a target that reads nothing but names,
        attributes and items is tried (evaluating it twice is evaluating it once), and the
        value is evaluated only once the target is known to be written here."""
        target, op = node.target, _in_place_operator(node)
        if op is None or not plain_read(target):
            return False
        if isinstance(target, ast.Attribute):  # `self.W -= lr * self.dW`
            if not isinstance(self.resolve_static(target.value), ObjectArg):
                return False
            dst = self.expr(target)  # (where the function assigned it: not the caller's array)
            if self.caller_array(dst) is not unversioned(dst):
                return False
            target = _whole_of(target)
        elif isinstance(target, ast.Name):  # `for grad in grads: grad *= rate`
            dst = self.frame.find(target.id)
            if not isinstance(dst, Value) or not isinstance(dst.type, TensorType) or \
                    unversioned(dst).node.kind not in READS or self.caller_array(dst) is None:
                return False  # (an argument itself: the in-place-update refusal)
            target = _whole_of(target)
        elif not isinstance(target, ast.Subscript):
            return False
        elif _whole(target.slice) and not isinstance(target.value, ast.Name):
            dst = self.expr(target.value)
        else:  # `params[i] -= v`: an array item of a list or dict argument
            if isinstance(target.slice, ast.Slice) or \
                    self.resolve_static(target.value) is not NOT_STATIC:
                return False
            container = self.expr(target.value)
            if container.node is not self.graph.block.param_node or \
                    not isinstance(container.type, (ListType, DictType)) or \
                    not isinstance(_item_type(container.type), TensorType):
                return False
            dst = self.expr(target)
            target = _whole_of(target)
        if not self.writable(target, dst):
            return False
        value = self.expr(node.value)
        if not _array_or_number(value):
            raise self.error(node.value, f"'{ast.unparse(node)}' writes into the caller's "
                             "array in place: the value must be an array or a number")
        self.caller_write(target, dst, value, op)
        return True

    def check_caller_writes(self: FunctionCompiler) -> tuple[int, ...]:
        """ScriptError unless every read of what the function's writes into the caller's arrays
        change is on the right side of each write (``write_order``), and nothing else reads
        what the functions it calls write into; the positions of the graph inputs written into
        (``FunctionDef.caller_writes``). Notes whether the function reads what it writes
        (``writes_read``: each call then checks every written array apart from the others)."""
        writes = [n for n in self.graph.walk() if n.kind == WRITE]
        calls = self.__dict__.get("_call_writes", {})
        holders: dict[Value, Node] = {}  # what is written into -> one write (or call) doing it
        for node in writes:
            holder = self.caller_array(node.inputs[0])
            assert holder is not None
            holders.setdefault(holder, node)
        called: set[Value] = set()
        for call, positions in calls.items():
            if call.owner is None:
                continue  # (erased)
            for k in positions:
                holders.setdefault(call.inputs[k], call)
                called.add(call.inputs[k])
        inputs = list(self.graph.inputs)
        written: list[int] = []
        for holder, writer in holders.items():
            for use in holder.uses:
                reader = use.node
                if reader.kind in ("prim::len", "prim::DictKeys") or _valuesshape_read(reader) or (
                        reader.kind == WRITE and use.index == 0) or (
                        reader in calls and use.index in calls[reader]) or (
                        isinstance(holder.type, TensorType) and (
                            holder not in called or shape_read(reader) and use.index == 0)) or (
                        not isinstance(holder.type, TensorType) and reader.kind in READS and
                        use.index == 0 and (holder not in called or
                                            _only_written(reader.output))):
                    continue
                raise self._read_elsewhere(writer, holder, reader)
            if holder not in called:
                self._check_order(holder)
            if holder in inputs and inputs.index(holder) not in written:
                written.append(inputs.index(holder))
        return tuple(sorted(written))

    def _check_order(self: FunctionCompiler, holder: Value) -> None:
        """``write_order``'s rules for the array ``holder`` is, or the items of the container
        it is."""
        if isinstance(holder.type, TensorType):
            groups = [[holder]]
        else:
            by_key = item_groups(holder)
            found = misplaced_across(by_key)
            if found is not None:
                reader, write = found
                raise self._read_elsewhere(write, holder, reader, other_item=True)
            groups = list(by_key.values())
        for group in groups:
            found = misplaced_read(group)
            if found is not None:
                reader, write = found
                raise self._read_elsewhere(write, holder, reader, order=True)
            if any(u.node.kind != WRITE and not shape_read(u.node)
                   for v in group for u in v.uses) or any(
                    u.node.kind == WRITE and u.node.output.uses for v in group for u in v.uses):
                self.__dict__["writes_read"] = True

    def note_callee_writes(self: FunctionCompiler, call: Node, fdef: Any) -> None:
        """A called function writes into the arrays its inputs at ``fdef.caller_writes`` hold:
        the arrays this function passes there are written into (``check_caller_writes``)."""
        if fdef.caller_writes:
            self.__dict__.setdefault("_call_writes", {})[call] = fdef.caller_writes
            if getattr(fdef, "writes_read", False):
                self.__dict__["writes_read"] = True  # (its arrays apart at each call)

    def _read_elsewhere(self: FunctionCompiler, write: Node, holder: Value,
                        reader: Node | None, order: bool = False,
                        other_item: bool = False) -> Exception:
        name = holder.name or "the array"
        if name.startswith("$"):  # a comprehension's result, named by the compiler
            kind = "dict" if name.startswith("$dcomp") else "list"
            name = f"the {kind} the comprehension makes"
        else:
            name = f"'{name}'"
        line = getattr(reader.source, "line", None) if reader is not None else None
        where = f" (line {line})" if line else ""
        what = "writing into" if write.kind == WRITE else (
            f"'{write.attrs.get('name', 'a function')}' (called here) writes into")
        if order:
            message = (f"{what} {name} in place, which the function also reads{where} where "
                       "the compiled code cannot keep the read on its side of the write: a "
                       "read before the write must go into the written value, and a read after "
                       "it must read the same path in the same block or one inside it (not "
                       "after the branch or loop the write is in, nor in a loop the array "
                       "was read outside of); copy what is read first, with .copy()")
        elif other_item:
            message = (f"{what} an item of {name} in place, and reading another one{where} "
                       "whose index the compiler cannot tell apart from the written one: "
                       "numpy would show the write there if they are one; read and write "
                       "items at one index (self.m[i] for both), or copy first")
        else:
            message = (f"{what} {name} in place, which the function also uses "
                       f"otherwise{where}: numpy would show the write there, which the "
                       "compiled code does not follow; a write into the caller's arrays "
                       "compiles where nothing else of them is read (copy what is read "
                       "first, with .copy())")
        target = self.__dict__.get("_write_targets", {}).get(write)
        if target is None:
            return at_node(write, message, self.source)
        return self.error(target, message)


def _valuesshape_read(node: Node) -> bool:
    """``d.items()`` whose values are read only for their shape and dtype (Deep Learning from
    Scratch's ``for key, val in params.items(): self.v[key] = np.zeros_like(val)``): nothing a
    write into the arrays changes."""
    if node.kind != "prim::DictItems":
        return False
    for use in node.output.uses:
        if use.node.kind == "prim::len":
            continue
        if use.node.kind != "prim::ListIndex" or use.index != 0:
            return False
        for pair in use.node.output.uses:
            unpack = pair.node
            if unpack.kind != "prim::TupleUnpack" or not all(
                    u.index == 0 and shape_read(u.node) for u in unpack.outputs[1].uses):
                return False
    return True


def _whole_of(target: ast.expr) -> ast.Subscript:
    """``target[...]``: the write of a whole array an augmented assignment of it makes."""
    return ast.copy_location(ast.Subscript(target, ast.Constant(Ellipsis), ast.Store()), target)


def _array_or_number(value: Any) -> bool:
    return isinstance(value, Value) and (isinstance(value.type, TensorType) or
                                         is_number(value.type))


def _item_type(t: Any) -> Any:
    return t.element if isinstance(t, ListType) else t.value


def _only_written(item: Value) -> bool:
    """Whether the array ``item`` is only written into, or only its shape and dtype read
    (``self.v.append(np.zeros_like(param))`` for each of the params an optimizer updates)."""
    return bool(item.uses) and all(u.index == 0 and (u.node.kind == WRITE or
                                                     shape_read(u.node))
                                   for u in item.uses)


def writes_apart(name: str, inputs: tuple[Any, ...], written: tuple[int, ...],
                 names: list[str], reads: bool = False) -> None:
    """SignatureError when an array in an input the function writes into (``written``) shares
    memory with an array of another input: the write would change what the function reads.
    ``reads``: the function also reads arrays it writes into (``write_order``), which it tells
    apart by path, so every written array must also be apart from every other one (``params``
    holding one array twice is refused). Only arrays that are views of one array (or of
    memory numpy does not own) are compared. Checked on every call: where every array owns
    its memory and no two are one (an optimizer's lists of parameters and gradients), a pass
    over them finds no two to compare."""
    found = [(k, _arrays(value)) for k, value in enumerate(inputs)
             if isinstance(value, (np.ndarray, list, tuple, dict))]
    if _owners_apart(found):
        return
    groups: dict[int, list[tuple[int, bool, Any]]] = {}
    for k, arrays in found:
        wrote = k in written
        for a in arrays:
            if not a.size:
                continue
            root = _root(a)
            groups.setdefault(0 if root is None else id(root), []).append((k, wrote, a))
    for members in groups.values():
        if len(members) < 2:
            continue
        for x, (k, wrote, a) in enumerate(members):
            for k2, wrote2, b in members[x + 1:]:
                if not (wrote or wrote2) or wrote and wrote2 and not reads:
                    continue
                if np.may_share_memory(a, b):
                    j, other = (k, k2) if wrote else (k2, k)
                    raise _shared(name, names[j], names[other])


def _owners_apart(found: list[tuple[int, list[Any]]]) -> bool:
    """Whether every array found owns its memory and none is found twice: none to compare."""
    seen: set[int] = set()
    for _, arrays in found:
        for a in arrays:
            if a.base is not None or id(a) in seen:
                return False
            seen.add(id(a))
    return True


def _root(a: Any) -> Any:
    """The array whose memory ``a`` views (``a`` itself where it owns its memory); None for
    memory numpy does not own (a buffer), which any other such array may share."""
    base = a.base
    while isinstance(base, np.ndarray):
        a, base = base, base.base
    return a if base is None else None


def _shared(name: str, written: str, other: str) -> SignatureError:
    what = f"'{other}', which it reads" if written != other else \
        "another array there (one array held twice)"
    return SignatureError(f"{name}(): an array the function writes into in '{written}' shares "
                          f"memory with {what}: the compiled code does not follow the write "
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
