"""Assigning the attributes of plain object arguments: ``self.cache = (x, h_prev, h_next)``.

Python stores the value in the object at once: a later read of the attribute, in the function,
in a method it calls or after the call, sees it. The compiled code does the same:

- each assignment is a ``prim::SetAttr`` on the object, where the assignment is (the object
  itself is a graph input, ``owner_input``: an ``ArgAttrRef`` whose ``check`` is ``"owner"``),
  or, in a loop carrying the attribute's value, once after the loop (``store_after_loop``);
- a read of the attribute after it is the value assigned, through a hidden variable of the
  attribute (``$@k <spelling>``) that ``if`` joins and loops carry like a local name;
- a method the function calls assigns through the same object, and its ``FunctionDef`` lists
  what it assigns (``attr_stores``): after the call the hidden variable is the attribute read
  back from the object (``prim::LoadAttr``), and a method reading an attribute the caller
  assigned is given the caller's value.

Which attributes a function assigns is found as it compiles; a function that assigns any is
compiled again knowing them (``StoredAttributes``), and their hidden variables then start as
the attribute's value at the call, read like any attribute (an int or bool one read per call:
the function changes it), so a loop carries them and a branch that does not assign one keeps
that value. An attribute the object does not have yet has no value before its first assignment.

Refused, each with a ``ScriptError`` at the line: assigning an attribute that holds a plain
object, a list of them or a function (the object's layout, which the compiled code is
specialized for), assigning a module or object, and ``self.W += g`` of an array attribute
(numpy updates the array in place, which every other holder of it sees).
"""

from __future__ import annotations

import ast
import copy
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.core import Value
from ir.types import (
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    is_subtype,
    plain_object_type,
)
from script.errors import ScriptError, SignatureError
from script.frontend.env import Undefined, walk_same_function
from script.frontend.exprs import NOT_STATIC
from script.frontend.object_args import (
    _MISSING,
    ArgAttrRef,
    ObjectArg,
    ObjectSeq,
    follow,
    is_object_sequence,
    is_plain_object,
    is_static_function,
)

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

Key = tuple[int, tuple[Any, ...]]
"""An attribute of an object argument: (the argument's position, the path to the attribute)."""


@dataclass(frozen=True)
class StoredAttributes(Exception):
    """Compile the function again knowing the attributes it assigns (``found``)."""

    found: dict[Key, str]
    """key -> how the code spells the attribute (``self.cache``)."""


class ObjectStoreMixin:
    """Assignments to the attributes of plain object arguments in ``FunctionCompiler``."""

    presumed_stores: dict[Key, str] = {}
    """the attributes the function assigns (key -> spelling): those its own assignments name
    through an object parameter, found before it compiles, and those an earlier attempt found
    (an object reached through a local name, a method called)."""

    def attribute_var(self: FunctionCompiler, key: Key, spelling: str) -> str:
        """The hidden variable holding the value of the attribute ``key`` (see the module)."""
        names = self.__dict__.setdefault("_attribute_vars", {})
        if key not in names:
            names[key] = f"$@{len(names)} {spelling}"
        return names[key]

    def set_attribute_var(self: FunctionCompiler, key: Key, spelling: str, value: Any) -> None:
        name = self.attribute_var(key, spelling)
        self.frame.set(name, value)
        self.__dict__.setdefault("_attribute_sets", []).append(name)

    def stored_attribute(self: FunctionCompiler, owner: ObjectArg, attr: str, node: ast.AST
                         ) -> Value | None:
        """The value the code assigned to ``owner.<attr>`` that a read at ``node`` sees, or None
        where the function does not assign it (the attribute is read from the object)."""
        key = (owner.param, owner.path + (attr,))
        if key not in self.presumed_stores:
            return None
        found = self.frame.find(self.attribute_var(key, f"{owner.spelling}.{attr}"))
        if isinstance(found, Undefined):
            raise self.error(node, found.message)
        assert isinstance(found, Value)
        self._read_seed(found)
        return found

    def _read_seed(self: FunctionCompiler, value: Value) -> None:
        """Note a read of an attribute's value before the call (its type may decide what
        compiles: ``self.h is None``): it stays part of the signature."""
        if value.node is self.graph.block.param_node:
            self.__dict__.setdefault("_seeds_read", set()).add(value)

    def refine_attribute(self: FunctionCompiler, key: str) -> bool:
        """``if self.cache is not None:`` of an attribute the function assigns: reads of it
        in the branch are the unwrapped value (True), until it is assigned again."""
        base_name, attr = key.split(".", 1)
        owner = getattr(self.frame.find(base_name), "obj", None)
        if not isinstance(owner, ObjectArg) or not self.assigns_attribute(owner, attr):
            return False
        name = self.attribute_var((owner.param, owner.path + (attr,)), key)
        value = self.frame.find(name)
        if isinstance(value, Value) and isinstance(value.type, OptionalType):
            self._read_seed(value)
            unwrapped = self.emit_value("prim::unchecked_unwrap_optional", [value])
            self.frame.refined[name] = unwrapped
        return True

    def assigns_attribute(self: FunctionCompiler, owner: ObjectArg, attr: str) -> bool:
        return (owner.param, owner.path + (attr,)) in self.presumed_stores

    def presume_store(self: FunctionCompiler, key: Key, spelling: str) -> None:
        """Compile the function again from the start when it assigns an attribute not known
        to be assigned: its hidden variable must exist before the loops and branches."""
        if key not in self.presumed_stores:
            raise StoredAttributes({**self.presumed_stores, key: spelling})

    def owner_input(self: FunctionCompiler, owner: ObjectArg) -> Value:
        """The graph input holding the object ``owner`` itself."""
        cls = type(owner.example)
        return self.add_attr_input(ArgAttrRef(owner.param, owner.path, owner.spelling,
                                              plain_object_type(cls), cls, check="owner"))

    # -- assignments ------------------------------------------------------------------------
    def store_attribute(self: FunctionCompiler, owner: ObjectArg, target: ast.Attribute,
                        value: Any) -> None:
        """``owner.<attr> = value`` (see the module docstring)."""
        attr, spelling = target.attr, f"{owner.spelling}.{target.attr}"
        if not isinstance(value, Value):
            raise self.error(target, f"cannot assign {_what(value)} to '{spelling}': scripted "
                             "code assigns arrays, numbers, strings, None and containers of "
                             "them to an object's attributes")
        if self.object_method(owner, attr) is not None:
            raise self.error(target, f"cannot assign '{spelling}': '{attr}' is a method of "
                             f"{type(owner.example).__name__}")
        cls = type(owner.example)
        custom = [m for m in ("__setattr__", "__getattribute__", "__getattr__")
                  if inspect.getattr_static(cls, m, None) is not getattr(object, m, None)]
        found = inspect.getattr_static(cls, attr, None)
        if custom or hasattr(type(found), "__set__") or attr.startswith("__"):
            what = f"its class defines {custom[0]}" if custom else (
                f"'{attr}' is a {type(found).__name__} of its class" if found is not None
                else "a special attribute")
            raise self.error(target, f"cannot assign '{spelling}': {what}, which the compiled "
                             "code does not run (it stores into the object's __dict__)")
        held = getattr(owner.example, attr, _MISSING)
        if is_plain_object(held) or (type(held) in (list, tuple) and held and
                                     is_object_sequence(held)) or \
                (held is not _MISSING and is_static_function(held)):
            raise self.error(target, f"cannot assign '{spelling}': it holds {_what(held)}, "
                             "part of the object's layout that the compiled code is "
                             "specialized for (assign it before the call)")
        key = (owner.param, owner.path + (attr,))
        self.presume_store(key, spelling)
        name = self.attribute_var(key, spelling)
        if self.carried_attributes and name in self.carried_attributes[-1]:
            # in a loop carrying its value: stored once, after the loop (``store_after_loop``)
            self.__dict__.setdefault("_after_loop", {})[name] = (owner, attr)
        else:
            self.emit("prim::SetAttr", [self.owner_input(owner), value], [], {"name": attr})
        self.set_attribute_var(key, spelling, value)

    @property
    def carried_attributes(self: FunctionCompiler) -> list[frozenset[str]]:
        """Per enclosing loop being compiled (innermost last), the names it carries."""
        return self.__dict__.setdefault("_carried_attributes", [])

    def store_after_loop(self: FunctionCompiler, carried: frozenset[str]) -> None:
        """After a loop: store each attribute its body assigned that it carries (its value at
        the loop's end, the last step's, or the value before the loop when it ran none); in a
        loop that carries it too, after that loop instead. The body's steps store nothing:
        what the object holds after the call is what they would leave, and nothing reads the
        object itself in between (reads see the carried value; a called method assigning the
        attribute stores it itself), so the loop can run natively."""
        pending = self.__dict__.get("_after_loop", {})
        for name in [n for n in pending if n in carried]:
            if self.carried_attributes and name in self.carried_attributes[-1]:
                continue  # (an enclosing loop carries it too: stored after that one)
            owner, attr = pending.pop(name)
            value = self.frame.find(name)
            if isinstance(value, Value):
                self.emit("prim::SetAttr", [self.owner_input(owner), value], [], {"name": attr})

    def check_attribute_update(self: FunctionCompiler, target: ast.expr, current: Value,
                               node: ast.AugAssign) -> None:
        """``self.W += g`` of an array attribute: numpy adds into the array, which every other
        holder of it sees (an optimizer's list of parameters): a ScriptError."""
        if not isinstance(target, ast.Attribute) or not isinstance(current.type, TensorType):
            return
        owner = self.resolve_static(target.value)
        if not isinstance(owner, ObjectArg):
            return
        text = ast.unparse(target)
        op = ast.unparse(node).split()[1]
        raise self.error(node, f"'{text} {op} ...' updates the array '{text}' holds in place "
                         "(numpy), which every other name or container holding that array "
                         "sees; the compiled code writes into the caller's array where the "
                         "attribute holds the array the caller passed, not where this function "
                         "or a loop assigning it may have given it another: assign a new array "
                         f"instead ({text} = {text} {op[:-1]} ...), which the object then "
                         "holds")

    # -- function start, loops, calls -------------------------------------------------------
    def start_stored_attributes(self: FunctionCompiler, body: list[ast.stmt]) -> None:
        """Bind the hidden variable of each attribute the function assigns to the attribute's
        value at the call (at the top of the graph, where every path sees it)."""
        self.presumed_stores = {**self._named_stores(body), **self.presumed_stores}
        for key, spelling in self.presumed_stores.items():
            param, path = key
            owner = self._owner_of(param, path[:-1])
            name = self.attribute_var(key, spelling)
            if owner is None or not hasattr(owner.example, path[-1]):
                self.frame.set(name, Undefined(
                    f"'{spelling}' is read where it may not be assigned yet: the object had "
                    "no such attribute when the function was called (assign it before the "
                    f"read on every path, e.g. {spelling} = None at the top)"))
                continue
            node = ast.Attribute(ast.Name(spelling.rpartition(".")[0], ast.Load()),
                                 path[-1], ast.Load())
            ast.copy_location(node, self.tree)
            demoted = frozenset({(type(owner.example), path[-1])})
            saved, self.read_per_call = self.read_per_call, self.read_per_call | demoted
            try:
                value = self.attribute_input(owner, node)
                self.frame.set(name, value)
                self.__dict__.setdefault("_seeds", []).append(value)
            except ScriptError as error:
                self.frame.set(name, Undefined(f"'{spelling}' is assigned in the function, "
                                               f"and its value before that: {error.reason}"))
            finally:
                self.read_per_call = saved

    def read_every_owner(self: FunctionCompiler) -> None:
        """For a function that assigns attributes: read each object it reaches itself, so that
        a call reaching one object by two paths (``f(a, a)``, ``self.cell`` also in
        ``self.cells``) is refused (``distinct_owners``): the compiled code follows each
        attribute by its path."""
        if not self.presumed_stores:
            return
        for ref in list(self.attr_refs):
            if isinstance(ref, ArgAttrRef) and ref.check == "class":
                owner = self._owner_of(ref.param, ref.path)
                if owner is not None:
                    self.owner_input(owner)

    def drop_unused_seeds(self: FunctionCompiler) -> None:
        """Forget the values before the call of the assigned attributes nothing reads (a
        ``self.cache = ...`` with no read before it): they would make the old value's type
        and shapes part of each call's signature."""
        read = self.__dict__.get("_seeds_read", set())
        for value in self.__dict__.get("_seeds", ()):
            if value.uses or value in read or value.node is not self.graph.block.param_node:
                continue
            params = self.graph.block.params
            index = params.index(value)
            k = index - (len(params) - len(self.attr_refs))
            key = self.attr_refs[k].key
            del self.attr_refs[k]
            del self.attr_values[key]
            self.graph.block.erase_param(index)

    def _named_stores(self: FunctionCompiler, body: list[ast.stmt]) -> dict[Key, str]:
        """The attributes ``body`` assigns through an object parameter's name (``self.cache =``,
        ``self.cell.h, c = ...``, ``p.steps += 1``)."""
        found = {}
        for node in walk_same_function(body):
            if not (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)):
                continue
            chain, base = [node.attr], node.value
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            obj = self.frame.find(base.id) if isinstance(base, ast.Name) else None
            obj = getattr(obj, "obj", None)
            if not isinstance(obj, ObjectArg):
                continue
            path = tuple(reversed(chain))
            if is_plain_object(follow(obj.example, path[:-1])):
                found[(obj.param, obj.path + path)] = ast.unparse(node)
        return found

    def _owner_of(self: FunctionCompiler, param: int, path: tuple[Any, ...]
                  ) -> ObjectArg | None:
        for found in self.frame.vars.values():
            obj = getattr(found, "obj", None)
            if isinstance(obj, (ObjectArg, ObjectSeq)) and obj.param == param and \
                    obj.path == ():
                example = follow(obj.example, path)
                if example is _MISSING or not is_plain_object(example):
                    return None
                spelling = obj.spelling + "".join(f"[{s}]" if type(s) is int else f".{s}"
                                                  for s in path)
                return ObjectArg(param, path, spelling, example)
        return None

    def loop_attribute_vars(self: FunctionCompiler, loop: ast.For | ast.While) -> list[str]:
        """The hidden variables ``loop`` carries: of the attributes the function assigns under
        a name its body, target or test assigns, and, where those call anything, those a
        called method assigns."""
        parts: list[ast.AST] = [*loop.body, getattr(loop, "target", None) or loop.test]
        stored = {n.attr for n in walk_same_function(parts)
                  if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
        calls = any(isinstance(n, ast.Call) and self.may_assign_attributes(n.func)
                    for n in walk_same_function(parts))
        return [self.attribute_var(key, spelling)
                for key, spelling in self.presumed_stores.items()
                if calls or key[1][-1] in stored]

    def may_assign_attributes(self: FunctionCompiler, func: ast.expr) -> bool:
        """Whether a call of ``func`` may assign attributes of the objects it is given: not
        where ``func`` is known to be numpy's or a builtin (``np.sqrt``, ``len``)."""
        try:
            found = self.resolve_static(func)
        except ScriptError:
            return True
        if found is NOT_STATIC:
            return True
        module = getattr(found, "__module__", None) or ""
        return not (module == "builtins" or module.split(".")[0] == "numpy"
                    or isinstance(found, np.ufunc))

    def attribute_sets_since(self: FunctionCompiler, mark: int) -> set[str]:
        return set(self.__dict__.setdefault("_attribute_sets", [])[mark:])

    def attribute_sets_mark(self: FunctionCompiler) -> int:
        return len(self.__dict__.setdefault("_attribute_sets", []))

    def lost_in_loop(self: FunctionCompiler, names: set[str]) -> None:
        """Hidden variables a loop's body rebound that the loop does not carry: reading them
        after it is an error (never the value before the loop)."""
        for name in names:
            spelling = name.split(" ", 1)[1]
            self.frame.set(name, Undefined(
                f"'{spelling}' is assigned inside a loop and read after it, where the compiled "
                "code cannot follow it (the object had no such attribute before the loop): "
                f"assign it before the loop (e.g. {spelling} = None)"))

    def callee_stored(self: FunctionCompiler, fdef: Any, objects: dict[str, Any]) -> None:
        """After a call of ``fdef``: the attributes it assigned hold what it stored, read back
        from the object (``prim::LoadAttr``)."""
        for param, path, t in getattr(fdef, "attr_stores", ()):
            owner = objects.get(fdef.arg_names[param])
            if isinstance(owner, ObjectSeq):
                owner, path = owner.items[path[0]], path[1:]
            if not isinstance(owner, ObjectArg):
                continue
            full = owner.path + tuple(path[:-1])
            example = follow(owner.example, tuple(path[:-1]))
            spelling = owner.spelling + "".join(f"[{s}]" if type(s) is int else f".{s}"
                                                for s in path)
            holder = ObjectArg(owner.param, full, spelling.rpartition(".")[0], example)
            key = (owner.param, full + (path[-1],))
            self.presume_store(key, spelling)
            read = self.emit("prim::LoadAttr", [self.owner_input(holder)], [t],
                             {"name": path[-1]}).output
            self.set_attribute_var(key, spelling, read)

    def attribute_for_callee(self: FunctionCompiler, ref: ArgAttrRef, param: int,
                             path: tuple[Any, ...], spelling: str) -> Value | None:
        """The caller's value of an attribute a called method reads, where the caller assigned
        it (None: read from the object, as the callee compiled it)."""
        key = (param, path)
        if not ref.holds_attribute or key not in self.presumed_stores:
            return None
        found = self.frame.find(self.attribute_var(key, spelling))
        if not isinstance(found, Value):
            raise self.error(self.where, f"a method called here reads '{spelling}', which "
                             "may not be assigned yet")
        self._read_seed(found)
        if ref.constant is not None or not is_subtype(found.type, ref.type):
            held = type(ref.constant).__name__ if ref.constant is not None else ref.type
            raise self.error(self.where, f"a method called here reads '{spelling}', assigned "
                             f"before the call ({found.type}), as the {held} it held when the "
                             "method compiled: pass the new value as an argument instead")
        return found

    def callee_examples(self: FunctionCompiler, objects: dict[str, Any]
                        ) -> tuple[dict[str, Any], frozenset[tuple[type, str]]]:
        """The examples a method called with ``objects`` compiles against: where the caller
        assigned attributes of an object before the call, a copy of it holding values of the
        types assigned (``self.cache`` a tuple where the object held None), and the int, bool
        and str ones among them, which the method reads per call."""
        examples, demoted = {}, set()
        for name, obj in objects.items():
            examples[name] = obj.example
            if not isinstance(obj, ObjectArg):
                continue
            shadows: dict[tuple[Any, ...], Any] = {}
            for key, spelling in self.presumed_stores.items():
                param, path = key
                if param != obj.param or path[:len(obj.path)] != obj.path:
                    continue
                value = self.frame.find(self.attribute_var(key, spelling))
                example = _example_of(value.type) if isinstance(value, Value) else _MISSING
                if example is _MISSING:
                    continue
                rel = path[len(obj.path):]
                holder = self._shadow(examples, name, shadows, rel[:-1])
                if holder is None:
                    continue
                vars(holder)[rel[-1]] = example
                if type(example) in (int, bool, str):
                    demoted.add((type(holder), rel[-1]))
        return examples, frozenset(demoted)

    def _shadow(self: FunctionCompiler, examples: dict[str, Any], name: str,
                shadows: dict[tuple[Any, ...], Any], rel: tuple[Any, ...]) -> Any:
        """The copy of the object at ``rel`` from ``examples[name]``, made once (and of each
        object and list of objects on the way), or None where the path does not cross plain
        objects and lists of them."""
        if () not in shadows:
            original = examples[name]
            shadows[()] = examples[name] = _remember(copy.copy(original), original)
        holder = shadows[()]
        for k in range(len(rel)):
            step = rel[:k + 1]
            if step not in shadows:
                if type(rel[k]) is int:
                    if type(holder) is not list or rel[k] >= len(holder):
                        return None
                    inner = holder[rel[k]]
                else:
                    inner = getattr(holder, rel[k], None)
                if is_plain_object(inner):
                    made = _remember(copy.copy(inner), inner)
                elif type(inner) is list:  # (a tuple of objects stays as it is)
                    made = list(inner)
                else:
                    return None
                if type(rel[k]) is int:
                    holder[rel[k]] = made
                else:
                    setattr(holder, rel[k], made)
                shadows[step] = made
            holder = shadows[step]
        return holder if is_plain_object(holder) else None

    def attribute_stores(self: FunctionCompiler) -> tuple[tuple[int, tuple[Any, ...], Any], ...]:
        """What ``FunctionDef.attr_stores`` lists: (param, path, type at the end) per assigned
        attribute."""
        found = []
        for key, spelling in self.presumed_stores.items():
            value = self.frame.find(self.attribute_var(key, spelling))
            if isinstance(value, Value):
                found.append((key[0], key[1], value.type))
        return tuple(found)


_SHADOWS: dict[int, tuple[Any, Any]] = {}
"""id(shadow) -> (shadow, the object it stands for), the last few (``original_of``)."""


def original_of(example: Any) -> Any:
    """The object a shadow example (``ObjectStoreMixin.callee_examples``) stands for, or
    ``example`` itself."""
    found = _SHADOWS.get(id(example))
    return found[1] if found is not None and found[0] is example else example


def _remember(shadow: Any, original: Any) -> Any:
    if len(_SHADOWS) >= 256:
        _SHADOWS.pop(next(iter(_SHADOWS)))
    _SHADOWS[id(shadow)] = (shadow, original_of(original))
    return shadow


def _example_of(t: Any) -> Any:
    """A value of IR type ``t`` for a callee to compile against, or _MISSING."""
    if isinstance(t, TensorType):
        return np.zeros((1,) * (len(t.shape) if t.shape is not None else 1), t.dtype or "float64")
    if isinstance(t, TupleType):
        items = [_example_of(e) for e in t.elements]
        return _MISSING if any(i is _MISSING for i in items) else tuple(items)
    if isinstance(t, ListType):
        item = _example_of(t.element)
        return _MISSING if item is _MISSING else [item]
    return {NONE: None, INT: 0, FLOAT: 0.0, BOOL: False, STR: ""}.get(t, _MISSING)


def distinct_owners(name: str, refs: list[Any], values: tuple[Any, ...]) -> None:
    """SignatureError when a call reaches one object by two paths and the function ``name``
    assigns attributes (``ObjectStoreMixin.read_every_owner``)."""
    found = _owners.get(id(refs))
    if found is None or found[0] is not refs or found[1] != len(refs):
        if len(_owners) >= 256:
            _owners.pop(next(iter(_owners)))
        found = _owners[id(refs)] = (refs, len(refs), [
            k for k, ref in enumerate(refs) if type(ref) is ArgAttrRef and ref.check == "owner"])
    at = found[2]
    if len(at) < 2:  # (one object reached by one path: nothing to compare, as at most calls)
        return
    seen: dict[int, Any] = {}
    for k in at:
        ref = refs[k]
        other = seen.setdefault(id(values[k]), ref)
        if other is not ref:
            raise SignatureError(f"{name}(): '{other.name}' and '{ref.name}' are the same "
                                 "object, whose attributes the function assigns; the "
                                 "compiled code follows each attribute by the path that "
                                 "reaches it: pass distinct objects")


_owners: dict[int, tuple[list[Any], int, list[int]]] = {}
"""per ``attr_refs`` list (by id, kept with it and its length), the positions of the objects
whose attributes the function assigns (``distinct_owners``)."""


def _what(value: Any) -> str:
    if isinstance(value, (ObjectArg, ObjectSeq)):
        return f"the object argument '{value.spelling}'"
    if is_plain_object(value):
        return f"a {type(value).__name__} object"
    if type(value) in (list, tuple):
        return f"a {type(value).__name__} of objects"
    if callable(value):
        return f"the function '{getattr(value, '__qualname__', value)}'"
    return f"a {type(value).__name__}"


__all__ = ["ObjectStoreMixin", "StoredAttributes", "distinct_owners", "original_of"]
