"""``x += v`` on a whole name: numpy's scalar is replaced, an array is changed in place.

numpy's ``+=`` writes into an array, of any rank (a 0-d one made by ``np.zeros(())`` included),
and every name bound to it sees the change; a numpy scalar (a reduction's result, an item picked
with ints, a ufunc's 0-d result) cannot be changed, so ``+=`` binds a new one to ``x`` alone::

    a = np.sum(x); b = a; b *= 0.5          # a keeps the sum
    a = np.sum(x, axis=0); b = a; b *= 0.5  # a is halved too

A mixin of ``FunctionCompiler``. The updated value is of one of three kinds:

- made as an array (``whole_writes.made_as_array``): every name of it is rebound, and what may
  share its memory otherwise is refused (``WriteMixin.check_aliases``);
- made as numpy's scalar where it is 0-d (``whole_writes.made_as_scalar``): where its rank is
  known to be 0 only the name is rebound; where the rank is known only when the function is
  specialized, an ``if`` on it (folded then) rebinds the name alone in the 0-d branch and every
  name of it in the other, where a refusal of the alias check is raised if that branch is kept;
- anything else (a helper's result, a view): as an array. An argument's copy is an array where
  the function is called from Python (numpy's scalars are refused as ``Tensor`` arguments), but
  a scripted caller may pass a helper numpy's scalar, so in a helper, where the copy may be
  0-d and another name of it is read later, the update is refused (``update_argument_copy``).

``np.asarray`` of a value of the second kind is a new 0-d array where it is 0-d and the value
itself otherwise (``NumpyMixin.array_of_scalar``): an update of it rebinds the names of that
array in the 0-d branch, and every name of the value too in the other.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ir.core import Value
from script.errors import ScriptError
from script.frontend.env import end_of
from script.frontend.whole_writes import ZERO_D_ARRAY, made_as_array, made_as_scalar

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


def _raise(error: ScriptError) -> NoReturn:
    raise error


class ScalarUpdateMixin:
    """Whole-name in-place updates of ``FunctionCompiler`` (see the module docstring)."""

    def rebind_by_kind(self: FunctionCompiler, name: str, old: Value, new: Value,
                       node: ast.AST) -> None:
        """Bind ``name`` (and, where numpy's update is in place, the other names of the array)
        to ``new``, the value of ``name`` updated from ``old``."""
        array = made_as_array(old)
        if isinstance(new, Value) and array:  # numpy's += keeps its array
            new.node.attrs[ZERO_D_ARRAY] = True
        rank = getattr(old.type, "rank", 1)
        self.bind(name, new, node)
        if isinstance(new, Value) and new is not old:
            self.updated_from[new] = old
        if array or rank != 0 and rank is not None:
            self.rebind_aliases(name, old, new, node)
            return
        if old in self.zero_d_copies:  # np.asarray of a scalar
            self.zero_d_copies.add(new)
            self.split_by_rank(name, old, new, node, array_when_0d=True)
            return
        pending: list[Value] = []  # (values a loop carries, decided before its body is)
        if not made_as_scalar(old, pending, self.updated_from):
            if made_as_array(old, arguments=True) and not self.entry:
                self.update_argument_copy(name, old, new, node)
                return
            self.rebind_aliases(name, old, new, node)
            return
        if rank is None:
            self.split_by_rank(name, old, new, node, array_when_0d=False, pending=pending)
            return
        try:  # numpy's scalar, which += replaces for this name alone
            named = bool(self.check_aliases(name, old, node))
        except ScriptError:
            named = True
        if named:  # (with no other name of it, a scalar and an array update alike)
            self.check_scalar_later(pending, node)

    def check_scalar_attribute_update(self: FunctionCompiler, target: ast.expr, current: Value,
                                      node: ast.AugAssign) -> None:
        """``a.total += v`` where the attribute holds numpy's scalar this function made (an
        earlier ``a.total += ...`` of a number): a new scalar stored in the attribute, as
        numpy's; of an array, the refusal of ``check_attribute_update`` (decided by the rank
        where it is known only when the function is specialized)."""
        rank = getattr(current.type, "rank", 1)
        pending: list[Value] = []
        if not isinstance(target, ast.Attribute) or rank not in (0, None) or \
                not made_as_scalar(current, pending, self.updated_from):
            self.check_attribute_update(target, current, node)  # type: ignore[arg-type]
            return
        self.check_scalar_later(pending, node)
        if rank is None:
            self.emit_if(self.is_0d(current, node), lambda: None,
                         lambda: self.check_attribute_update(target, current, node),  # type: ignore
                         end_of(node), node)

    def update_argument_copy(self: FunctionCompiler, name: str, old: Value, new: Value,
                             node: ast.AST) -> None:
        """``z += v`` where ``z`` is an argument's copy (``z = x.copy()``) that may be 0-d and
        has other names read later: numpy rebinds ``z`` alone if the caller passed numpy's
        scalar, every name if it passed an array, which a helper's code cannot tell apart.
        Every name is rebound where it has axes; where it is 0-d, the specialization that keeps
        that branch is refused."""
        aliases = self.check_aliases(name, old, node)
        live = [alias for alias in aliases if alias in self.live_after(node)]
        if not live:
            for alias in aliases:  # (read nowhere after: either update is numpy's)
                self.bind(alias, new, node)
            return
        refused = self.error(node, f"'{name} {ast.unparse(node).split()[1]} ...' on a 0-d copy "
                             f"of an argument that '{live[0]}' also names: numpy updates "
                             "the copy under every name where the argument is an array, and "
                             f"makes a new scalar for '{name}' alone where a caller passes "
                             "numpy's scalar, which the compiled code cannot tell apart: write "
                             f"{name} = {name} {ast.unparse(node).split()[1][:-1]} ... (a new "
                             f"value for '{name}' alone)")
        if getattr(old.type, "rank", None) == 0:
            raise refused
        before = {alias: self.frame.find(alias) for alias in aliases}

        def rebind() -> None:
            for alias in aliases:
                self.bind(alias, new, node)

        self.emit_if(self.is_0d(old, node), lambda: _raise(refused), rebind, end_of(node), node)
        self.note_merged(aliases, before, new)

    def rebind_aliases(self: FunctionCompiler, name: str, old: Value, new: Value,
                       node: ast.AST) -> None:
        for alias in self.check_aliases(name, old, node, later=True):
            self.bind(alias, new, node)

    def split_by_rank(self: FunctionCompiler, name: str, old: Value, new: Value,
                      node: ast.AST, array_when_0d: bool, pending: Sequence[Value] = ()) -> None:
        """Rebind the other names of ``old`` under an ``if`` on its rank: where it has axes
        every name of the array; where it is 0-d, those bound to ``old`` itself when it is an
        array there (``array_when_0d``), else none."""
        zero_d = self.is_0d(old, node)
        try:
            aliases = self.check_aliases(name, old, node,
                                         later=True if array_when_0d else zero_d)
        except ScriptError as error:
            if array_when_0d:
                raise
            refused = error  # raised where the specialization keeps the array's branch
            self.emit_if(zero_d, lambda: None, lambda: _raise(refused), end_of(node), node)
            self.check_scalar_later(list(pending), node)
            return
        if not aliases:
            return
        self.check_scalar_later(list(pending), node)
        before = {alias: self.frame.find(alias) for alias in aliases}
        own = [alias for alias in aliases if before[alias] is old] if array_when_0d else []

        def rebind(names: list[str]) -> None:
            for alias in names:
                self.bind(alias, new, node)

        self.emit_if(zero_d, lambda: rebind(own), lambda: rebind(aliases), end_of(node), node)
        self.note_merged(aliases, before, new)

    def note_merged(self: FunctionCompiler, aliases: list[str], before: dict[str, Any],
                    new: Value) -> None:
        """After an ``if`` on the rank rebound ``aliases`` (bound to ``before``) to ``new`` in
        one branch: each name's merged value is its value before where 0-d, the changed array
        otherwise (``array_aliases``, ``updated_from``)."""
        for alias in aliases:
            merged = self.frame.find(alias)
            if isinstance(merged, Value) and merged is not before[alias] and merged is not new:
                self.array_aliases[merged] = new
                self.updated_from[merged] = before[alias]


__all__ = ["ScalarUpdateMixin"]
