"""Checks of in-place updates that numpy shows at other places: ``l[i] += v`` on an array a
list or dict holds, and, once the function is compiled, every update in a loop again.

A mixin of ``FunctionCompiler``. numpy's ``l[i] += v`` changes the array itself; the compiled
code stores a new array at ``l[i]``. The two agree only where nothing else holds the array: not
the caller (an argument's memory), not another name read later, not another place of the
container (``held_items.held_twice``). Those are refused with a ``ScriptError`` at the update.

An update in a loop runs again in the next step, after the rest of this step: a put or a name
bound later in the step (``hs[-1] += 1`` then ``hs.append(a)``), or an array a step hands to the
next (``g = h``, ``h = ...``, ``D.append(h)``), may then hold the array. The checks made as the
update compiled see only the code before it, so ``check_item_updates`` and
``check_name_updates`` (for ``x += v`` and ``x[i] = v``, recorded by
``WriteMixin.check_aliases``) run them again on the whole function.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ir.alias import StorageClasses
from ir.core import PARAM, Node, Value
from script.errors import ScriptError
from script.frontend.aliases import sole_made_item
from script.frontend.held_items import held_made_in, held_twice
from script.frontend.whole_writes import attached
from script.frontend.writes import _AUGMENTED, visible_bindings

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


class UpdateCheckMixin:
    """In-place update checks of ``FunctionCompiler`` (see the module docstring)."""

    def check_item_update(self: FunctionCompiler, target: ast.expr, current: Value,
                          node: ast.AST) -> None:
        """``d["a"] += x`` / ``xs[0] += x`` on an array item: numpy changes the array itself,
        the compiled program stores a new one into the container. Refused where the array
        may be the caller's (an argument's, a global's, an object attribute's, or held by a
        container the caller passed) or may be read through a name other than the
        container's later."""
        base = current.node.inputs[0]  # the container
        live = self.live_after(node)
        names = [(other, value) for other, (value, _) in visible_bindings(self.frame).items()
                 if isinstance(value, Value) and value is not base and other in live]
        loop = _loop_outlived(current.node, base)
        self.check_item_holders(target, current, node, names, self.storage_now(), loop)
        if current.node.inside_kind("prim::Loop"):  # (what a step does after it reaches the
            self.__dict__.setdefault("item_checks", []).append(  # next step's update)
                (target, current, node, names))

    def check_item_holders(self: FunctionCompiler, target: ast.expr, current: Value,
                           node: ast.AST, names: list[tuple[str, Value]],
                           storage: StorageClasses, loop: Node | None) -> None:
        """Refuse ``l[i] += v`` where the array may be the caller's, or another of the
        ``names`` live after it, or another place of the container, may hold the item's array
        (``check_item_update``)."""
        op = _AUGMENTED.get(type(getattr(node, "op", None)), "+")
        inputs = [v for v in self.graph.inputs if v.type is not None]
        if storage.overlap(current, inputs) is not None and not sole_made_item(current):
            raise self.error(node, f"'{ast.unparse(node).split('=')[0].strip()}=' on an array "
                             "that may be held elsewhere (an array the caller passed, or one "
                             "this call also put into another list, name or attribute): numpy "
                             "changes that array itself, which every holder sees, and the "
                             "compiled code cannot follow it here; where nothing else holds the "
                             f"array, write {ast.unparse(target)} = {ast.unparse(target)} {op} "
                             "... to store a new array")
        for other, value in names:
            if storage.overlap(value, [current]) is not None:
                raise self.error(node, f"this in-place update of {ast.unparse(target)} would "
                                 f"also change '{other}' (numpy changes the array itself, "
                                 "seen through every name of it), which the compiled code "
                                 f"cannot follow: write {ast.unparse(target)} = "
                                 f"{ast.unparse(target)} {op} ... to store a new array")
        if held_twice(current, storage, self.graph, loop):
            container = ast.unparse(getattr(target, "value", target))
            raise self.error(node, f"this in-place update of {ast.unparse(target)} may also "
                             f"change other places of {container} (it may hold this array "
                             "twice: an item read from a container was put into it, or one "
                             "array at every step of a loop; numpy changes the array itself, "
                             "seen at each place), which the compiled code cannot follow: "
                             f"write {ast.unparse(target)} = {ast.unparse(target)} {op} ... to "
                             "store a new array there, or put a copy into the container "
                             "(.append(x.copy()))")

    def check_item_updates(self: FunctionCompiler) -> None:
        """Once the function is compiled: each ``l[i] += v`` in a loop checked again, where a
        put or a name bound later in the step (``hs[-1] += 1`` then ``hs.append(a)``), or what
        a step gives back to the next (``g = h`` then ``D.append(h)``), makes the next step's
        update reach an array held elsewhere too.

        On the whole graph, but where the container and every array it holds are made in the
        step of the loop they are made in (``held_made_in``; a per-step cache, the gradients of
        one epoch): earlier steps and what runs after the loops that update one container
        cannot hold those (``StorageClasses(through=...)``), and where that is the innermost
        loop there is nothing to check again."""
        full: list[StorageClasses] = []
        through: dict[int, StorageClasses] = {}
        for target, current, node, names in self.__dict__.pop("item_checks", []):
            if not attached(current.node, self.graph.block):
                continue
            names = [(n, v) for n, v in names if attached(v.node, self.graph.block)]
            if not full:
                full.append(StorageClasses(self.graph))
            base = current.node.inputs[0]
            made = _made_at(base, 0)
            steps = made.enclosing("prim::Loop") if made is not None else []
            step = steps[0] if steps else None
            loop = _loop_outlived(current.node, base)
            if step is not None and held_made_in(current, full[0], self.graph, step, loop):
                if loop is None:
                    continue  # (a new container of new arrays at each step of the innermost)
                storage = through.get(id(loop))
                if storage is None:
                    storage = through[id(loop)] = StorageClasses(self.graph, through=loop)
                self.check_item_holders(target, current, node, names, storage, loop)
                continue
            loops = current.node.enclosing("prim::Loop")
            self.check_item_holders(target, current, node, names, full[0],
                                    loops[-1] if loops else None)

    def check_name_updates(self: FunctionCompiler) -> None:
        """Once the function is compiled: each ``x += v`` in a loop checked again against the
        names bound then, on the storage classes of what runs up to the end of the outermost
        loop around it (``g = h`` then ``g += 1`` and ``D.append(h)``: the next step's ``g`` is
        the array ``D`` holds). What runs after that loop cannot hold the array while it runs."""
        storages: dict[int, StorageClasses] = {}
        for name, old, node, live, bindings, loop, later in self.__dict__.pop("name_checks", []):
            if not attached(loop, self.graph.block) or not attached(old.node, self.graph.block):
                continue
            storage = storages.get(id(loop))
            if storage is None:
                storage = storages[id(loop)] = StorageClasses(self.graph, through=loop)
            bindings = [(o, v, c) for o, v, c in bindings if attached(v.node, self.graph.block)]
            if later is True:
                self.aliases_checked(name, old, node, storage, live, bindings)
                continue
            if not attached(later.node, self.graph.block):
                continue
            try:
                self.aliases_checked(name, old, node, storage, live, bindings)
            except ScriptError as error:  # raised where a specialization keeps the axes' branch
                with self.graph.inserting_before(later.node.next):
                    branch = self.graph.insert("prim::If", [later], [], nblocks=2,
                                               source=later.node.source)
                self.defer_branch(branch.blocks[1], error)


def _loop_outlived(node: Node, container: Value) -> Node | None:
    """The outermost loop around ``node`` (an update of an item of ``container``) whose steps
    all update the same container: of the loops around ``node``, inside the innermost one that
    makes a new container at each step (``_made_at``). None where that is the innermost: what
    the rest of a step does cannot reach this step's update."""
    made = _made_at(container, 0)
    found = None
    for loop in node.enclosing("prim::Loop"):
        if made is not None and made.is_inside(loop):
            break
        found = loop
    return found


def _made_at(value: Value, depth: int) -> Node | None:
    """The node making the list or dict ``value`` anew each time it runs (a literal, an ``if``
    each of whose branches makes one, through the loops carrying it); None where it may be an
    older container (an argument, an item read from another, a helper's result)."""
    node = value.node
    if depth > 8:
        return None
    if node.kind in ("prim::ListConstruct", "prim::DictConstruct"):
        return node
    if node.kind == PARAM and node.owner is not None and node.owner.owner is not None and \
            node.owner.owner.kind == "prim::Loop" and value.index >= 1:
        loop = node.owner.owner
        returns = node.owner.returns
        if len(returns) <= value.index or returns[value.index] is not value:
            return None  # (a step binds it to another container, or is still compiling)
        return _made_at(loop.inputs[value.index + 1], depth + 1)
    if node.kind == "prim::If":
        made = [_made_at(b.returns[value.index], depth + 1) for b in node.blocks]
        return node if all(m is not None and m.is_inside(node) for m in made) else None
    return None
