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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.core import PARAM, Value
from ir.ops.elementwise import UFUNC_ATTR
from ir.ops.numpy_ops import SCALAR_ATTR
from ir.registry import ARRAY_RESULT, ELEMENTWISE, SCALAR_RESULT, VIEW, lookup
from ir.types import AnyType, TensorType, is_mutable, is_number
from passes.shape_prop import WEAK_DTYPE
from script.frontend.aliases import carried_sources, value_sources
from script.frontend.env import end_of

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

ZERO_D_ARRAY = "zero_d_array"
"""set on the value a write into a 0-d array makes: an array numpy would still hold."""

ZERO_D_ITEM = "zero_d_item"
"""set on ``y[()]`` of a 0-d ``y`` (a reshape to ``()``): numpy's scalar, not a view."""

ARRAY_MAKERS = frozenset({
    "tensor::zeros", "tensor::ones", "tensor::empty", "tensor::full", "tensor::zeros_like",
    "tensor::ones_like", "tensor::empty_like", "tensor::full_like", "tensor::slice_put",
    "tensor::select_put", "tensor::take_put", "tensor::index_pairs_put"})
"""ops whose 0-d results numpy holds as arrays (``tensor::array`` too, unless it stands for a
numpy scalar), and the writes, whose result is the array written into (of a rank the write
rules out 0 for where its branch is taken)."""


INHERITED = frozenset({"tensor::reshape", "tensor::transpose", "tensor::astype", "tensor::copy",
                       "tensor::squeeze", "tensor::contiguous"})
"""ops whose 0-d result is an array when their input is one and a scalar when it is one
(``x.reshape(())``, ``.T``, ``.astype``, ``.copy()``, ``np.squeeze`` of a numpy scalar; the
copy ``np.copy`` / ``np.array`` make is marked ``ZERO_D_ARRAY`` instead: ``mark_new_array``)."""

_NEW_ARRAY_KINDS = frozenset({"tensor::copy", "tensor::astype", "tensor::array",
                              "tensor::stack"})


def mark_new_array(fn: Any, result: Any) -> Any:
    """``result`` of ``np.array(...)`` / ``np.copy(...)``, marked as an array numpy keeps as
    one (they make a new array of a numpy scalar too); any other call's as it is."""
    if (fn is np.array or fn is np.copy) and isinstance(result, Value) and \
            isinstance(result.type, TensorType) and result.node.kind in _NEW_ARRAY_KINDS:
        result.node.attrs[ZERO_D_ARRAY] = True
    return result


_STRUCTURE = (PARAM, "prim::If", "prim::Loop")
"""what ``_every_way`` follows itself: a loop's carried values, branches' and loops' results."""


def _every_way(value: Value, pending: list[Value] | None,
               judge: Callable[[Value], bool | list[Value] | None]) -> bool:
    """Whether ``judge`` accepts every way ``value`` is made, through branches and the steps of
    loops (a value a loop carries whose body is still being compiled is added to ``pending``,
    to check once it is). ``judge(v)`` says of each value met: True (accepted), False, the
    values ``v`` is made of (judged in its place), or None for ``_STRUCTURE`` to follow."""
    seen: set[int] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        verdict = judge(v)
        if verdict is None and v.node.kind == PARAM:
            sources = carried_sources(v)
            if sources is None:
                return False  # an argument
            if len(sources) == 1 and pending is not None:
                pending.append(v)
            todo += sources
        elif verdict is None:
            todo += value_sources(v.node, v)
        elif verdict is False:
            return False
        elif verdict is not True:
            todo += verdict
    return True


def array_results(result: Value, updated_from: dict[Value, Value], zero_d_copies: set[Value],
                  array_items: dict[Value, tuple[tuple[Any, ...], ...]] | None = None,
                  arguments: bool = True) -> tuple[tuple[Any, ...], ...]:
    """Where the function's ``result`` is numpy's array (``FunctionDef.array_results``): the
    result itself, or the path to an item of the tuple, list or dict literals it returns (a
    tuple's or list's index, a dict's key), made as one, an argument's copy (the function called
    from Python: ``Tensor`` arguments are arrays), ``np.asarray`` of a value
    (``zero_d_copies``), updated in place from one (``updated_from``), or where a called
    function's result is one (``array_items``: its result -> those paths). ``arguments``: the
    function is called from Python, whose ``Tensor`` arguments are arrays (a helper's may be
    numpy's scalars its caller passes)."""
    items = array_items or {}

    def known(v: Value) -> bool:
        if v in zero_d_copies or () in items.get(v, ()):
            return True
        node = v.node
        if node.kind == "prim::TupleUnpack":
            return (v.index,) in items.get(node.inputs[0], ())
        if node.kind == "prim::TupleIndex" and node.inputs[1].node.kind == "prim::Constant":
            return (node.inputs[1].node.attrs.get("value"),) in items.get(node.inputs[0], ())
        return False

    def paths(v: Value, depth: int) -> list[tuple[Any, ...]]:
        # (an early return's value is typed Any until optimized)
        if isinstance(v.type, (TensorType, AnyType)) and made_as_array(
                v, arguments=arguments, updated_from=updated_from, known=known):
            return [()]
        if v in items:
            return list(items[v]) if _kept_in_place(v) else []
        node = v.node
        if depth > 4 or node.kind not in _LITERALS or node.kind != "prim::TupleConstruct" and \
                not _kept_in_place(v) or any(is_mutable(x.type) for x in node.inputs) and \
                not _only_returned(v):
            return []  # (a list or dict it holds may be changed through a read of it)
        pairs: Any = enumerate(node.inputs)
        if node.kind == "prim::DictConstruct":
            keys = [k.node.attrs.get("value") if k.node.kind == "prim::Constant" else None
                    for k in node.inputs[0::2]]
            if None in keys:
                return []
            pairs = dict(zip(keys, node.inputs[1::2])).items()  # (a key given twice: the last)
        return [(k, *p) for k, item in pairs for p in paths(item, depth + 1)]

    return tuple(paths(result, 0))


_LITERALS = ("prim::TupleConstruct", "prim::ListConstruct", "prim::DictConstruct")


def _kept_in_place(v: Value) -> bool:
    """Whether the items of the container ``v`` stay at their places until it is returned: read,
    appended to (a list) or returned, or held by literals that are only returned, nothing else
    (an insert moves them, a store replaces one, and a container passed on, carried or held by
    a container that is read may be changed out of sight)."""
    return all(u.node.kind in ("prim::Return", "prim::ListIndex", "prim::DictGetItem",
                               "prim::len", "prim::TupleIndex", "prim::TupleUnpack") or
               u.node.kind in _LITERALS and _only_returned(u.node.output) or
               u.node.kind == "prim::ListAppend" and u.index == 0 for u in v.uses)


def _only_returned(v: Value, depth: int = 0) -> bool:
    """Whether the literal ``v`` is only returned: by the function, or held by one literal that
    is only returned."""
    if depth > 8 or len(v.uses) != 1:
        return all(u.node.kind == "prim::Return" for u in v.uses) and depth <= 8
    use = v.uses[0].node
    return use.kind == "prim::Return" or use.kind in _LITERALS and \
        _only_returned(use.output, depth + 1)


def made_as_array(value: Value, pending: list[Value] | None = None,
                  arguments: bool = False,
                  updated_from: dict[Value, Value] | None = None,
                  known: Callable[[Value], bool] | None = None) -> bool:
    """Whether every way ``value`` is made (through branches and the steps of loops) gives an
    array numpy holds as one: ``ARRAY_MAKERS``, ``np.array``, an op whose 0-d result is an
    array (``ARRAY_RESULT``: ``np.where``), an earlier 0-d write. A value a loop carries whose
    body is still being compiled is added to ``pending``, to check once it is.
    ``arguments``: an argument's copy counts as an array (a ``Tensor`` argument of a function
    called from Python is one: numpy's scalars are refused; one a scripted caller passes a
    helper may be numpy's scalar). ``known``: values known to be arrays besides."""
    if not arguments and updated_from is None and known is None:
        return _every_way(value, pending, _made_as_array)

    updated = updated_from or {}

    def judge(v: Value) -> bool | list[Value] | None:
        if v.node.kind == PARAM and carried_sources(v) is None:
            return arguments
        if known is not None and known(v):
            return True
        if v.node.kind == "tensor::full" and v.node.attrs.get(WEAK_DTYPE):
            return False  # a Python number a loop carries as a tensor: numpy's scalar
        if v in updated and not _made_as_array(v):
            return [updated[v]]
        return _made_as_array(v)

    return _every_way(value, pending, judge)


def _made_as_array(v: Value) -> bool | list[Value] | None:
    node = v.node
    if node.attrs.get(ZERO_D_ARRAY) or node.kind == "prim::Uninitialized":
        return True  # (an early return's value before it is set: never given back)
    if node.attrs.get(ZERO_D_ITEM):
        return False
    if node.kind in _STRUCTURE:
        return None
    if node.kind in INHERITED:
        return [node.inputs[0]]
    op = lookup(node.kind)
    return node.kind in ARRAY_MAKERS or (
        node.kind == "tensor::array" and not node.attrs.get(SCALAR_ATTR)) or (
        op is not None and ARRAY_RESULT in op.traits and not node.attrs.get(UFUNC_ATTR))


def made_as_scalar(value: Value, pending: list[Value] | None = None,
                   updated_from: dict[Value, Value] | None = None) -> bool:
    """Whether every way ``value`` is made gives numpy's scalar where it is 0-d, never an array
    (``made_as_array``'s opposite; the values of neither kind, an argument's copy or a view
    such as ``x.reshape(())``, are in neither): a ufunc's or elementwise operator's result, a
    ``SCALAR_RESULT`` op's (a reduction's, ``v @ v``), an item picked with ints, np.inner's.
    A value a loop carries whose body is still being compiled is added to ``pending``, to
    check once it is. A value an in-place update made is of the kind of the value updated
    (``updated_from``): ``a += v`` keeps numpy's array."""
    updated = updated_from or {}

    def judge(v: Value) -> bool | list[Value] | None:
        if v in updated:
            return [updated[v]]
        node = v.node
        if node.kind in _STRUCTURE:
            return None
        if node.kind == "prim::CallFunction" and "Subgraph" in node.attrs:
            return [node.subgraph.outputs[v.index]]  # what the helper returns
        if node.attrs.get(ZERO_D_ARRAY):
            return False
        if node.attrs.get(ZERO_D_ITEM):
            return True
        if node.kind in ("tensor::copy", "tensor::astype"):  # of the same shape: its kind
            return [node.inputs[0]]
        if node.kind in INHERITED:
            return False  # (a reshape of an array to 0-d is a view)
        if node.kind == "tensor::select":
            return not node.attrs.get("ellipsis")
        if node.kind == "tensor::tensordot":  # np.inner's 0-d result is numpy's scalar
            return node.inputs[3].is_constant and node.inputs[3].constant is True
        if node.kind == "tensor::full" and node.attrs.get(WEAK_DTYPE):
            return True  # a Python number a loop carries as a tensor (``loss = 0.5 * reg``)
        op = lookup(node.kind)
        return op is not None and (SCALAR_RESULT in op.traits or ELEMENTWISE in op.traits
                                   and VIEW not in op.traits
                                   and (ARRAY_RESULT not in op.traits
                                        or bool(node.attrs.get(UFUNC_ATTR))))

    return _every_way(value, pending, judge)


def attached(node: Any, top: Any) -> bool:
    """Whether ``node`` is still in the graph whose block is ``top`` (a loop's body compiled
    again with wider types leaves the first one's nodes detached)."""
    while True:
        block = node.owner
        if block is None:
            return False
        if block is top:
            return True
        if block.owner is None:
            return False
        node = block.owner


class WholeWriteMixin:
    """Whole-array writes of ``FunctionCompiler`` (see the module docstring)."""

    def whole_write(self: FunctionCompiler, old: Value, value: Any, node: ast.AST,
                    element: bool, any_rank: bool = True) -> Value:
        """``old`` with every element set to ``value``; ``element``: the value must be a number
        or a 0-d array, as numpy requires of ``x.fill(v)`` at any rank and of ``y[()] = v``
        where ``y`` is 0-d (``any_rank=False``: ``y[()] = v`` of an array with axes broadcasts
        ``v``, as ``y[...] = v`` does)."""
        rank = old.type.rank  # type: ignore[union-attr]
        if rank == 0:
            return self.scalar_put(old, value, node, element)
        if element and any_rank and isinstance(value.type, TensorType):
            self.require_0d(value, node)
        none = self.const(None)
        if rank is not None:
            return self.emit_value("tensor::slice_put", [old, value, self.const(0), none, none,
                                                         none])
        name = f"$written_{id(node)}"
        zero_d = self.is_0d(old, node)
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
        if not made_as_array(old, self.zero_d_pending(node), arguments=self.entry):
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

    def zero_d_pending(self: FunctionCompiler, node: ast.AST) -> list[Value]:
        """Where a write's 0-d array is carried by a loop whose body is still being compiled,
        the loop's parameters to check once it is (``check_zero_d_writes``), for ``node``."""
        pending: list[Value] = []
        self.__dict__.setdefault("zero_d_checks", []).append((pending, node))
        return pending

    def check_zero_d_writes(self: FunctionCompiler) -> None:
        """After the function is compiled: each 0-d write into a value a loop carries is
        refused at its line if a later step may carry a value numpy holds as a scalar (``acc =
        x[i].sum()`` after ``acc.fill(v)`` in the same body)."""
        for pending, node in self.__dict__.get("zero_d_checks", []):
            live = [v for v in pending if attached(v.node, self.graph.block)]
            if not all(made_as_array(v, arguments=self.entry) for v in live):  # (once)
                raise self.error(node, "writing into a 0-d value that a later step of the loop "
                                 "replaces with one numpy may hold as a scalar (a reduction's "
                                 "result, an item picked with ints), whose write numpy refuses "
                                 "or ignores: write into a 0-d array made for it "
                                 "(y = np.zeros(()))")
        for pending, node in self.__dict__.get("scalar_checks", []):
            live = [v for v in pending if attached(v.node, self.graph.block)]
            if not all(made_as_scalar(v, None, self.updated_from) for v in live):
                raise self.error(node, "an in-place update of a 0-d value that a later step of "
                                 "the loop may replace with an array (numpy updates an array in "
                                 "place under every name of it, and makes a new scalar for the "
                                 "updated name alone): write x = x + ... instead")

    def check_scalar_later(self: FunctionCompiler, pending: list[Value], node: ast.AST) -> None:
        """Where an update took a value a loop carries to be numpy's scalar (``made_as_scalar``
        of a loop body still being compiled), check that once the function is compiled."""
        if pending:
            self.__dict__.setdefault("scalar_checks", []).append((pending, node))

    def is_0d(self: FunctionCompiler, value: Value, node: ast.AST) -> Value:
        """The condition ``value.ndim == 0`` (folded once the rank is known)."""
        return self.binary("==", self.emit_value("tensor::ndim", [value]), self.const(0), node)

    def require_0d(self: FunctionCompiler, value: Value, node: ast.AST) -> None:
        """numpy's ValueError where ``value`` has axes (decided when specializing)."""
        zero_d = self.is_0d(value, node)
        self.emit_if(zero_d, lambda: None, lambda: self.raise_exception(
            "setting an array element with a sequence.", "ValueError"), end_of(node), node)
