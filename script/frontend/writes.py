"""In-place writes to arrays, functionalized: ``h[t] = v`` rebinds ``h`` to
``select_put(h, v, 0, t)``.

A mixin of ``FunctionCompiler``. numpy changes the array itself, so the write is visible through
every name of it; the compiled program rebinds only the names it can prove are the array, and
refuses (a ``ScriptError`` at the write) what it cannot follow:

- the array must be one this function made (``np.zeros``, arithmetic, ``.copy()`` ...), not an
  argument, a global, a module attribute or an item read from a container: the caller would see
  the write in numpy;
- another name bound to the same value (``a = h``) is rebound too; one that may share memory in
  another way (a view ``r = h[0]``, a list holding ``h``, a name bound outside the loop the write
  is in) is refused when it may still be read;
- at the end of a loop, a name carried to the next step that may share memory with an array the
  loop writes is refused (the write would show through it in the next step).

Index forms (``ir/ops/index_put.py``): ints and slices per axis (with ``...``), one integer
array after full slices (``W[idx]``, ``U[:, idx]``) and two integer arrays (``o[rows, cols]``).
Several axes nest: ``x[i, :H] = v`` writes ``v`` into a copy of ``x[i]`` and that into ``x``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.alias import StorageClasses
from ir.core import PARAM, Block, Node, Value
from ir.registry import NOT_CONSTANT, constant_of
from ir.types import BOOL, INT, DictType, ListType, TensorType, is_number
from script.frontend.aliases import (
    apart_from_made,
    apart_in_a_step,
    array_origins,
    distinct_new_arrays,
    foreign,
    is_made,
    made_outside,
    memory_roots,
    value_sources,
)
from script.frontend.env import (
    Frame,
    MaybeUnbound,
    Position,
    Static,
    Undefined,
    display_name,
    end_of,
)

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

_FOLLOWED = {"prim::unchecked_unwrap_optional"}
"""prim ops whose result is their input."""

class WriteMixin:
    """Visitors of writes into arrays (``x[i] = v``, ``x[i] += v``, ``x.fill(v)``)."""

    # -- the write ------------------------------------------------------------------------------
    def write_array_item(self: FunctionCompiler, target: ast.Subscript, value: Any) -> None:
        """``name[index] = value`` for an array ``name``."""
        if not isinstance(target.value, ast.Name):
            raise self.unsupported(target, "an in-place write into "
                                   f"{ast.unparse(target.value)} (write into a local array "
                                   "name: x = ...; x[i] = v)")
        name = target.value.id
        old = self.frame.find(name)
        if not isinstance(old, Value):  # a global, a closure's or a module's array
            raise self.error(target, f"in-place write to '{name}', which this function did "
                             "not make (a global or captured array): numpy would change that "
                             "array itself, which the compiled code does not do; copy it "
                             f"first: {name}_copy = {name}.copy()")
        aliases = self.check_write(name, old, target)
        new = self.put_index(old, target.slice, value, target)
        for alias in [name, *aliases]:
            self.frame.set(alias, new)

    def write_stored_item(self: FunctionCompiler, target: ast.Subscript, read: Value,
                          value: Any) -> bool:
        """``xs[t][i] = v`` right after ``xs[t] = <a new array>`` (min-char-rnn's one-hot:
        ``xs[t] = np.zeros((vocab_size, 1)); xs[t][inputs[t]] = 1``): the stored array is
        written and stored again. Only when nothing used the container since that store and
        nothing else holds the array (names bound to it are rebound); False otherwise."""
        inner = target.value
        if not (isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Name)):
            return False
        container = self.frame.find(inner.value.id)
        if not isinstance(container, Value) or \
                not isinstance(container.type, (DictType, ListType)):
            return False
        if read.node.kind in ("prim::DictGetItem", "prim::ListIndex") and not read.uses:
            read.node.erase()  # the read of xs[t] the assignment made: unused
        store = _last_user(self.graph.insert_point, container)
        if store is None or store.kind not in ("prim::DictSetItem", "prim::ListSetItem"):
            return False
        key, stored = store.inputs[1], store.inputs[2]
        again = self.expr(inner.slice)
        same_key = again is key or (constant_of(again) is not NOT_CONSTANT
                                     and constant_of(again) == constant_of(key))
        fresh = is_made(stored.node) or (stored.node.kind == "prim::Constant"
                                           and isinstance(stored.type, TensorType))
        if not same_key or len(stored.uses) != 1 or not fresh:
            return False
        aliases = self.check_aliases(inner.value.id, stored, target)
        new = self.put_index(stored, target.slice, value, target)
        self.emit(store.kind, [container, key, new], [])
        for alias in aliases:
            self.frame.set(alias, new)
        return True

    def write_whole_array(self: FunctionCompiler, name: str, old: Value, value: Any,
                          node: ast.AST, element: bool = True) -> None:
        """``name.fill(value)`` (``element``: a number or a 0-d array) or an op's ``out=name``
        (its result, of the array's shape): every element of the array set to ``value``."""
        if not isinstance(old.type, TensorType):
            raise self.error(node, f".fill() of a value of type {old.type}")
        aliases = self.check_write(name, old, node)
        new = self.whole_write(old, value, node, element=element)
        for alias in [name, *aliases]:
            self.frame.set(alias, new)

    def fill_call(self: FunctionCompiler, call: ast.expr) -> bool:
        """``x.fill(v)`` as a statement on a local array ``x``, and ``x[i].fill(v)`` on a view
        of one (basic indexing: ints and slices), which is ``x[i] = v``: True when handled."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "fill"):
            return False
        target = call.func.value
        if isinstance(target, ast.Subscript) and self.basic_index(target.slice):
            if len(call.args) != 1 or call.keywords:
                raise self.error(call, ".fill() takes one value")
            # y[0] of a 1-D y is a numpy scalar, a copy: its fill changes nothing (decided when
            # the function is specialized, where the rank is known)
            write = ast.If(test=ast.Compare(left=ast.Attribute(target, "ndim", ast.Load()),
                                            ops=[ast.Gt()], comparators=[ast.Constant(0)]),
                           body=[ast.Assign(targets=[target], value=call.args[0])], orelse=[])
            for n in ast.walk(write):
                if not hasattr(n, "lineno") or n is write or n is write.body[0]:
                    ast.copy_location(n, call)
                    n.end_lineno, n.end_col_offset = call.end_lineno, call.end_col_offset
            self.visit(write)
            return True
        if not isinstance(target, ast.Name):
            return False
        old = self.frame.find(call.func.value.id)
        if not isinstance(old, Value) or not isinstance(old.type, TensorType):
            return False
        if len(call.args) != 1 or call.keywords:
            raise self.error(call, ".fill() takes one value")
        self.write_whole_array(call.func.value.id, old, self.expr(call.args[0]), call)
        return True

    def basic_index(self: FunctionCompiler, index: ast.expr) -> bool:
        """Whether ``index`` is numpy's basic indexing (a view): int literals, slices of them,
        and names bound to ints, alone or in a tuple."""
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        for part in parts:
            if isinstance(part, ast.Slice):
                bounds = [b for b in (part.lower, part.upper, part.step) if b is not None]
            else:
                bounds = [part]
            for b in bounds:
                if isinstance(b, ast.UnaryOp) and isinstance(b.op, ast.USub):
                    b = b.operand
                if isinstance(b, ast.Constant) and type(b.value) is int:
                    continue
                found = self.frame.find(b.id) if isinstance(b, ast.Name) else None
                if not (isinstance(found, Value) and found.type == INT):
                    return False
        return True

    def rebind_array(self: FunctionCompiler, name: str, old: Value, new: Value,
                     node: ast.AST) -> None:
        """``x += v`` on a whole array: numpy changes ``x`` in place, so the names bound to the
        same array see the new value too (and names that may share its memory otherwise are
        refused while they may still be read). An array this function did not make (an
        argument, a global, an item read from a container) is refused: numpy would change the
        caller's array, the compiled code would only rebind the name."""
        for leaf in array_origins(old, None):
            if leaf.node.kind == "prim::Constant":  # a number or literal: numpy makes a new array
                continue
            what = foreign(self.graph, leaf, None, self.enclosing_names)
            if what is not None:
                op = _AUGMENTED.get(type(getattr(node, "op", None)), "+")
                raise self.error(node, f"in-place update of {what} ({name} {op}= ...): numpy "
                                 f"would change that array itself, which the compiled code does "
                                 f"not do; write {name} = {name} {op} ... (and return {name} if "
                                 f"the caller needs it)")
        self.rebind_by_kind(name, old, new, node)

    def put_index(self: FunctionCompiler, old: Value, index: ast.expr, value: Any,
                  node: ast.AST) -> Value:
        """``old`` with the region ``index`` set to ``value``, as a new SSA value."""
        if not (isinstance(value.type, TensorType) or is_number(value.type)):
            raise self.error(node, f"cannot write a value of type {value.type} into an array")
        items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        try:
            return self.put_items(old, index, items, value, node)
        finally:
            self.evaluated_indices = {}  # (each index is evaluated once: see index_once)

    def put_items(self: FunctionCompiler, old: Value, index: ast.expr, items: list[ast.expr],
                  value: Any, node: ast.AST) -> Value:
        scattered = self.integer_array_put(old, items, value)
        if scattered is not None:
            return scattered
        self.check_index_count(old, items, index)
        if old.type.rank == 0:  # type: ignore[union-attr]
            if len(items) > 1 or not all(_is_ellipsis(item) for item in items):
                raise self.error(node, "too many indices for a 0-d array (write into it with "
                                 "y[...] = v)")
            # y[()] sets the element (a number or 0-d array); y[...] = v broadcasts v
            return self.scalar_put(old, value, node, element=not items)
        steps = self.index_steps(items, index)
        if not steps:  # x[:] = v, x[...] = v, x[()] = v: the whole array
            if all(_is_ellipsis(item) for item in items):
                return self.whole_write(old, value, node, element=not items, any_rank=False)
            none = self.const(None)
            steps = [("tensor::slice_put", 0, [none, none, none])]
        return self.put_steps(old, steps, value)

    def put_steps(self: FunctionCompiler, array: Value, steps: list, value: Any) -> Value:
        """Write ``value`` through the per-axis ``steps``: a read of each outer region, the write
        into the innermost, then each region written back into its parent."""
        kind, axis, args = steps[0]
        if len(steps) > 1:
            read = "tensor::select" if kind == "tensor::select_put" else "tensor::slice"
            region = self.emit_value(read, [array, self.const(axis), *args])
            value = self.put_steps(region, steps[1:], value)
        return self.emit_value(kind, [array, value, self.const(axis), *args])

    def index_steps(self: FunctionCompiler, items: list[ast.expr], index: ast.expr) -> list:
        """(write kind, axis, index arguments) per indexed axis of a basic index, in the axis
        numbering of the region the previous steps leave (as ``index_axes`` reads them)."""
        cuts = [k for k, item in enumerate(items) if _is_ellipsis(item)]
        if len(cuts) > 1:
            raise self.error(index, "an index can only have a single ellipsis ('...')")
        for item in items:
            if isinstance(item, ast.Constant) and item.value is None:
                raise self.error(item, "None (a new axis) in the subscript of a write is not "
                                 "supported")
        if cuts:
            back = self.axis_steps(items[cuts[0] + 1:], from_end=True)
            return back + self.axis_steps(items[:cuts[0]], from_end=False)
        return self.axis_steps(items, from_end=False)

    def axis_steps(self: FunctionCompiler, items: list[ast.expr], from_end: bool) -> list:
        steps = []
        axis = -len(items) if from_end else 0
        for item in items:
            if not isinstance(item, ast.Slice):
                steps.append(("tensor::select_put", axis, [self.index_value(item)]))
            elif not (item.lower is None and item.upper is None and item.step is None):
                steps.append(("tensor::slice_put", axis, self.slice_bounds(item)))
            if from_end or isinstance(item, ast.Slice):
                axis += 1
        return steps

    def integer_array_put(self: FunctionCompiler, old: Value, items: list[ast.expr],
                          value: Any, adds: int = 0) -> Value | None:
        """``W[idx] = v``, ``U[:, idx] = v``, ``o[rows, cols] = v`` with an integer-array index:
        ``take_put`` / ``index_pairs_put``; with ``adds`` (1, or -1 to subtract), numpy's
        unbuffered ``np.add.at`` there: ``take_add`` / ``index_pairs_add``. None when no index
        is an array."""
        found = self.integer_index_of(items)
        return None if found is None else self.integer_put(old, value, *found, adds=adds)

    def integer_put(self: FunctionCompiler, old: Value, value: Any, leading: int,
                    values: list[Value], adds: int = 0) -> Value:
        """``integer_array_put``'s op, for the index ``integer_index_of`` read."""
        tail = [self.const(adds)] if adds else []
        if len(values) == 1:
            kind = "tensor::take_add" if adds else "tensor::take_put"
            return self.emit_value(kind, [old, value, values[0], self.const(leading), *tail])
        kind = "tensor::index_pairs_add" if adds else "tensor::index_pairs_put"
        return self.emit_value(kind, [old, value, *values, *tail])

    def integer_index_of(self: FunctionCompiler, items: list[ast.expr]
                            ) -> tuple[int, list[Value]] | None:
        """An integer-array index's leading full slices and its one array (along that axis) or
        two (rows and columns), evaluated; None when no index is an array."""
        while len(items) > 1 and _is_full_slice(items[-1]):
            items = items[:-1]
        leading = 0
        while leading < len(items) and _is_full_slice(items[leading]):
            leading += 1
        indices = items[leading:]
        if not indices or len(indices) > (1 if leading else 2) or any(
                isinstance(i, ast.Slice) or _is_ellipsis(i) for i in indices):
            return None
        if not any(_may_be_array(i) for i in indices):
            return None
        values = [self.index_item(i) for i in indices]
        if not any(isinstance(v.type, TensorType) for v in values):
            # a basic index after all: its steps take these values (`y[s.pop()] = v` pops once)
            self.evaluated_indices = {id(i): v for i, v in zip(indices, values)}
            return None
        for item, v in zip(indices, values):
            if v.type not in (INT, BOOL) and not isinstance(v.type, TensorType):
                raise self.error(item, f"an index must be an int or an integer array, not "
                                 f"{v.type}")
        return leading, values

    # -- may the write be followed? -------------------------------------------------------------
    def check_write(self: FunctionCompiler, name: str, old: Value, node: ast.AST) -> list[str]:
        """Refuse a write numpy would show somewhere the compiled program cannot follow; the
        other names bound to ``old`` itself, which the write rebinds too."""
        self.check_owned(name, old, node)
        return self.check_aliases(name, old, node, later=True)

    def check_aliases(self: FunctionCompiler, name: str, old: Value, node: ast.AST,
                      later: bool | Value = False) -> list[str]:
        """The other names bound to ``old`` itself; a ScriptError for a live name that may
        share memory with ``old`` otherwise. ``later``: in a loop, check again once the
        function is compiled (``check_name_updates``), for a caller that refuses what this
        raises; a condition ``old.ndim == 0`` for one that refuses it where ``old`` has axes
        (numpy's scalar, which ``+=`` replaces for the one name, where it is 0-d)."""
        storage = self.storage_now()
        live = self.live_after(node)
        bindings = [(other, value, crosses) for other, (value, crosses)
                    in visible_bindings(self.frame).items()
                    if other != name and isinstance(value, Value)]
        loops = self.graph.insert_point.enclosing("prim::Loop")
        if later is not False and loops:
            # (what a step does after it, or gives back to the next, may hold the array in the
            # next step: checked again once the function is compiled, ``check_name_updates``)
            self.__dict__.setdefault("name_checks", []).append(
                (name, old, node, live, bindings, loops[-1], later))
        return self.aliases_checked(name, old, node, storage, live, bindings)

    def aliases_checked(self: FunctionCompiler, name: str, old: Value, node: ast.AST,
                        storage: StorageClasses, live: set[str],
                        bindings: list[tuple[str, Value, bool]]) -> list[str]:
        """``check_aliases`` with these storage classes and the names bound then."""
        aliases = []
        same_array = lambda v: self.array_aliases.get(v, v)  # noqa: E731
        for value in self.graph.inputs:  # (an attribute's list is an input of its own)
            if self.caller_container(value) and value.uses and \
                    storage.overlap(value, [old]) is not None:
                held = display_name(value.name or "")
                raise self.error(node, f"this in-place write to '{name}' would also change "
                                 f"'{held}', which holds that array or a view of it (numpy "
                                 "shows the write through every holder of an array), and the "
                                 "compiled code cannot follow it into the caller's container: "
                                 f"store a copy in '{held}' (.copy() of the array), or write "
                                 "before storing it")
        for other, value, crosses_loop in bindings:
            if other.startswith("$@") and (value is old or
                                           storage.overlap(value, [old]) is not None):
                held = display_name(other)  # an object's attribute: the caller holds it
                raise self.error(node, f"this in-place write to '{name}' would also change "
                                 f"'{held}', which holds that array or a view of it (numpy "
                                 "shows the write through every holder of an array), and the "
                                 "compiled code cannot follow it into the object: assign a "
                                 f"copy to '{held}' (.copy() of the array), or write before "
                                 "assigning it")
            if same_array(value) is same_array(old) and not crosses_loop:
                aliases.append(other)  # (an array alias: where old is 0-d, no write is valid)
                continue
            if other not in live or storage.overlap(value, [old]) is None or \
                    self.caller_container(value):  # (the inputs: above)
                continue
            if distinct_new_arrays(value, old) or apart_from_made(value, old) or \
                    apart_in_a_step(value, old):
                continue  # o, s = f(x) where f returns [o, s], two arrays it made
            raise self.error(node, f"this in-place write to '{name}' would also change "
                             f"'{other}' (numpy shows the write through every name of an array "
                             f"and its views), which the compiled code cannot follow: copy one "
                             f"of them first ({other} = {other}.copy() where it is bound)")
        return aliases

    def caller_container(self: FunctionCompiler, value: Value) -> bool:
        """Whether ``value`` is a list or dict argument (or attribute) itself: the caller holds
        it, and what the function stores into it, after the call too. (The attributes an object
        argument is assigned are checked as the names ``$@...``.)"""
        return value.node.kind == PARAM and value.node.owner is self.graph.block and \
            isinstance(value.type, (ListType, DictType))

    def check_owned(self: FunctionCompiler, name: str, old: Value, node: ast.AST,
                    loop: Node | None = None) -> None:
        """Refuse a write into an array this function did not make."""
        for leaf in array_origins(old, loop):
            what = foreign(self.graph, leaf, loop, self.enclosing_names)
            if what is None:
                continue
            through = "" if leaf.name == name else f" (through '{name}')"
            instead = f"copy it first: {name} = {name}.copy()"
            if what.startswith("the argument"):  # a helper may be meant to update its caller's
                instead += (" (a helper that updates its caller's array: return the new array "
                            f"and assign it where the helper is called, {leaf.name} = "
                            f"{self.tree.name}(..., {leaf.name}))")
            if leaf.name in self.enclosing_names:
                instead = ("return the new array from the nested function and assign it where "
                           "it is called")
            elif what.startswith("an array read from a container"):  # views of a buffer, say
                instead = ("where the write is meant to change the array the item is, or is a "
                           "view of (a gate of a buffer a helper split), write into that array "
                           "through an index (buf[..., 0::4] = ...); where it is not, copy the "
                           f"item first: {name} = {name}.copy()")
            raise self.error(node, f"in-place write to {what}{through}: numpy would change "
                             f"that array itself, which the compiled code does not do; "
                             f"{instead}")

    def storage_now(self: FunctionCompiler) -> StorageClasses:
        """The storage classes of the graph so far, the loops being emitted carrying their
        initial values into their parameters."""
        storage = StorageClasses(self.graph)
        block: Block | None = self.graph.insert_point.owner
        while block is not None and block.owner is not None:
            loop = block.owner
            if loop.kind == "prim::Loop" and not loop.outputs:
                for param, initial in zip(block.params[1:], loop.inputs[2:]):
                    storage.same(param, initial)
            block = loop.owner
        return storage

    def live_after(self: FunctionCompiler, node: ast.AST) -> set[str]:
        """Names that may be read after ``node``: read later in the source, or read in an
        enclosing loop before that loop's body assigns them (so in the next step)."""
        after = (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
        stmt = self.statement
        single = isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) or \
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and stmt.targets[0] is node
        value = stmt.value if single else None  # type: ignore[union-attr]
        # the value of `C[t] = prev * c` is computed, then written: its reads are not after it
        # (where the statement binds more, `C[t], y = v, prev` binds y to prev after the write)
        skip = (value.lineno, value.col_offset) if value is not None else after
        end = end_of(value) if value is not None else after
        other_branches = self.other_branches(node)
        live = {n for n, pos in self.reads if pos >= after and not skip <= pos < end
                and not any(after <= at < pos for at in self.stores_before.get((n, pos), ()))
                and not any(lo <= pos < hi for lo, hi in other_branches)}
        for loop in self.loops:
            live |= getattr(loop, "exposed", loop.reads)
        return live

    def other_branches(self: FunctionCompiler, node: ast.AST) -> list[tuple[Position, Position]]:
        """The source ranges of the ``else`` blocks of the ``if`` statements whose ``then``
        block holds ``node``: code there does not run after ``node`` (in the same step)."""
        at = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        found = []
        for stmt in ast.walk(self.tree):
            if not isinstance(stmt, ast.If) or not stmt.body or not stmt.orelse:
                continue
            start = (stmt.body[0].lineno, stmt.body[0].col_offset)
            if start <= at < end_of(stmt.body[-1]):
                found.append(((stmt.orelse[0].lineno, stmt.orelse[0].col_offset),
                              end_of(stmt.orelse[-1])))
        return found

    def check_made_in(self: FunctionCompiler, name: str, value: Value, loop: Node,
                      node: ast.AST) -> None:
        """Refuse a loop that rebinds an array it writes to one made before the loop: the write
        at the next step would change that array (and any name of it) in numpy."""
        seen: set[int] = set()
        todo = [value]
        while todo:
            v = todo.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            if made_outside(v, loop):
                raise self.error(node, f"'{name}' is written in place in this loop and rebound "
                                 f"to an array made before it, so the next step's write would "
                                 f"change that array too (numpy writes into it): rebind "
                                 f"'{name}' to a copy ({name} = <value>.copy())")
            if v.node.kind != PARAM:
                todo += value_sources(v.node, v)

    def check_loop_writes(self: FunctionCompiler, loop: Node, node: ast.For | ast.While,
                          carried: list[str], written: set[str]) -> None:
        """After a loop: an array it writes must still be its own at the next step, and no
        other carried name may reach its memory then."""
        body = loop.blocks[0]
        returns = dict(zip(carried, body.returns[1:]))
        storage = StorageClasses(self.graph)
        for name in written & set(returns):
            self.check_owned(name, returns[name], node, loop)
            self.check_made_in(name, returns[name], loop, node)
            mine = memory_roots(returns[name], loop)
            for other, value in returns.items():
                if other == name or other.startswith("$"):
                    continue
                roots = memory_roots(value, loop)
                if roots & mine or any(storage.overlap(r, [returns[name]]) is not None
                                       for r in roots if not is_made(r.node)
                                       and r.node.kind != PARAM):
                    raise self.error(node, f"'{other}' may share memory with '{name}', which "
                                     f"this loop writes in place: numpy would show the write "
                                     f"through '{other}' in the next step, which the compiled "
                                     f"code cannot follow; copy it where it is bound "
                                     f"({other} = <value>.copy())")

def _last_user(before: Node, value: Value) -> Node | None:
    """The last node before ``before`` in its block that uses ``value`` (in a nested block
    too), or None."""
    node = before.prev
    while node is not None:
        if any(value in inner.inputs for inner in [node, *(n for b in node.blocks
                                                               for n in b.walk())]):
            return node
        node = node.prev
    return None


def visible_bindings(frame: Frame) -> dict[str, tuple[Any, bool]]:
    """name -> (its value, whether it was bound outside the innermost loop body)."""
    found: dict[str, tuple[Any, bool]] = {}
    crossed = False
    at: Frame | None = frame
    while at is not None:
        for name in list(at.vars) + list(at.refined):
            value = at.refined.get(name, at.vars.get(name))
            if isinstance(value, MaybeUnbound):  # a loop's last value: the array it holds
                value = value.value
            if name not in found and not isinstance(value, (Static, Undefined)):
                found[name] = (value, crossed)
        crossed = crossed or getattr(at, "loop_body", False)
        at = at.parent
    return found


_AUGMENTED = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
              ast.Mod: "%", ast.Pow: "**", ast.MatMult: "@"}
"""The operator of an augmented assignment, for messages."""


def _is_ellipsis(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _is_full_slice(node: ast.AST) -> bool:
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None and \
        node.step is None


def _may_be_array(node: ast.expr) -> bool:
    """An index expression that is not obviously an int (a literal or arithmetic on names)."""
    return not isinstance(node, (ast.Constant, ast.Slice, ast.UnaryOp))


__all__ = ["WriteMixin", "array_origins"]
