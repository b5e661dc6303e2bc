"""What a call's object arguments hold for the compiled code: ``read_inputs``.

A function compiled with object arguments reads their attributes as graph inputs after the
arguments (``script.frontend.object_args.ArgAttrRef``): ``self.param.wg``, ``self.param.bg``,
... Every call follows each path from its argument, checks each object on the way is a plain
object and each value has the Python type compiled for, and fails (None: compile again) where
one does not. Followed one path at a time that was the larger part of a small cell's call: a
one-step LSTM cell over an object holding its eight weights (nicodjimenez/lstm's
``LstmNode.bottom_data_is``, 13 paths) spent 7.9 us reading them, beside 12.8 us computing.

So each list of paths gets a Python function of its own, generated once, that follows each
shared prefix once (``self.param`` for the eight weights), asks once whether each object on
the way is a plain one, and makes the other checks inline;
what it returns, and when it returns None, are those of following each path by itself
(``object_args.follow``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from script.frontend.object_args import _MISSING, ArgAttrRef, class_member, is_plain_object
from script.frontend.signature import key_of

_readers: dict[int, tuple[list[Any], int, Any]] = {}
"""id(refs) -> (refs, their count, the reader): a definition's ``attr_refs`` list is kept alive
by the entry, so its id is not reused."""

MAX_READERS = 4096
"""Readers kept; beyond this many definitions the oldest are made again when used."""


def read_inputs(refs: list[Any], inputs: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """What the ``attr_refs`` read in a call whose bound arguments are ``inputs``; None when an
    object argument does not have the layout the function compiled for (an attribute path read
    that does not cross plain objects or lists of them, or ends at a value of another Python
    type, or a list of objects of another length)."""
    found = _readers.get(id(refs))
    if found is None or found[0] is not refs or found[1] != len(refs):
        if len(_readers) >= MAX_READERS:
            _readers.pop(next(iter(_readers)))
        found = _readers[id(refs)] = (refs, len(refs), reader(refs))
    return found[2](inputs)


def reader(refs: list[Any]) -> Any:
    """The generated function ``read(inputs)`` of ``refs`` (the module's doc)."""
    namespace = _namespace(refs)
    lines, values = _read_lines(refs, namespace, "inputs")
    body = "\n".join(f"    {line}" for line in lines) or "    pass"
    source = f"def read(inputs):\n{body}\n    return ({''.join(v + ', ' for v in values)})\n"
    exec(compile(source, "<rnnscript object reads>", "exec"), namespace)  # noqa: S102
    return namespace["read"]


def entry(refs: list[Any], nargs: int, objects: tuple[int, ...]) -> Any:
    """The generated function ``enter(args)`` of a call passing ``nargs`` positional arguments,
    those at ``objects`` plain objects, to a function reading ``refs``: the graph's inputs (the
    arguments, None at the objects' places, then what ``read`` returns) and the cache key
    ``signature.call_key`` gives them (a key of no static ints, trip counts, lists of any
    length or containers passed twice: ``script.runtime.function`` asks for no other). None
    where a step of the general bind would do otherwise (another count of arguments, an
    argument that is not a plain object, another layout, one object the function assigns
    attributes of reached by two paths): the caller then binds as before, and raises there.
    One function instead of binding, checking, reading and keying one by one: the DLFS2
    ``RNN.forward`` cell, called between numpy calls that leave the interpreter's caches
    cold, spent 19 us of a 160 us call there."""
    namespace = _namespace(refs)
    namespace.update({"ND": np.ndarray, "SCALARS": frozenset({int, float, bool, str,
                                                               type(None)}),
                      "key_of": key_of, "NONE": type(None)})
    lines = [f"if len(args) != {nargs}: return None"]
    lines += [f"if not plain(args[{k}]): return None" for k in objects]
    reads, values = _read_lines(refs, namespace, "args")
    lines += reads
    owners = [f"id(r{k})" for k, ref in enumerate(refs)
              if type(ref) is ArgAttrRef and ref.check == "owner"]
    if len(owners) > 1:
        lines.append(f"if len({{{', '.join(owners)}}}) != {len(owners)}: return None")
    inputs, keys = [], []
    for k in range(nargs):
        if k in objects:
            inputs.append("None")
            keys.append("NONE")
        else:
            lines.append(f"a{k} = args[{k}]")
            inputs.append(f"a{k}")
            keys.append(_key(f"a{k}"))
    for ref, value in zip(refs, values):
        inputs.append(value)
        checked = type(ref) is ArgAttrRef and ref.check not in ("method", "function", "class",
                                                                 "hasattr")
        if type(ref) is ArgAttrRef and ref.check in ("method", "function", "class"):
            keys.append("NONE")  # (read as None)
        elif checked and ref.kind is np.ndarray:
            keys.append(f"({value}.dtype.char, {value}.shape)")
        else:
            keys.append(_key(value))
    lines.append(f"return ({''.join(v + ', ' for v in inputs)}), "
                 f"({''.join(v + ', ' for v in keys)})")
    body = "\n".join(f"    {line}" for line in lines)
    exec(compile(f"def enter(args):\n{body}\n", "<rnnscript object call>", "exec"),  # noqa: S102
         namespace)
    return namespace["enter"]


def _key(name: str) -> str:
    """``call_key``'s key of one value, inline."""
    return (f"(({name}.dtype.char, {name}.shape) if type({name}) is ND else type({name}) "
            f"if type({name}) in SCALARS else key_of({name}))")


def _namespace(refs: list[Any]) -> dict[str, Any]:
    return {"refs": refs, "MISSING": _MISSING, "SEQUENCES": (list, tuple),
            "BOOL": np.dtype(bool), "plain": is_plain_object, "member": class_member}


def _read_lines(refs: list[Any], namespace: dict[str, Any], source: str
                ) -> tuple[list[str], list[str]]:
    """The lines that read ``refs`` from the tuple named ``source`` into ``r0``, ``r1``, ...
    (returning None where the layout differs), and those names."""
    lines: list[str] = []
    names: dict[tuple[int, tuple[Any, ...]], str] = {}
    checked: set[str] = set()

    def reach(param: int, path: tuple[Any, ...]) -> str:
        key = (param, path)
        name = names.get(key)
        if name is not None:
            return name
        name = names[key] = f"v{len(names)}"
        if not path:
            lines.append(f"{name} = {source}[{param}]")
            return name
        owner, step = reach(param, path[:-1]), path[-1]
        if type(step) is int:
            lines.append(f"{name} = {owner}[{step}] if type({owner}) in SEQUENCES and "
                         f"{step} < len({owner}) else MISSING")
        else:
            if owner not in checked:  # whether an owner is a plain object: asked once
                checked.add(owner)
                lines.append(f"plain_{owner} = plain({owner})")
            lines.append(f"{name} = getattr({owner}, {step!r}, MISSING) if plain_{owner} "
                         "else MISSING")
        return name

    values = []
    for k, ref in enumerate(refs):
        if type(ref) is not ArgAttrRef:
            lines.append(f"r{k} = refs[{k}].read()")
        elif ref.check == "method":
            owner, name = reach(ref.param, ref.path[:-1]), ref.path[-1]
            inside = "" if name == "__call__" else (
                f" or {name!r} in getattr({owner}, '__dict__', ())")
            namespace[f"constant{k}"] = ref.constant
            lines.append(f"if member(type({owner}), {name!r}) is not constant{k}"
                         f"{inside}: return None")
            lines.append(f"r{k} = None")
        elif ref.check in ("function", "class"):
            value = reach(ref.param, ref.path)
            read = f"type({value})" if ref.check == "class" else value
            namespace[f"constant{k}"] = ref.constant
            lines.append(f"if {read} is not constant{k}: return None")
            lines.append(f"r{k} = None")
        else:
            value = reach(ref.param, ref.path)
            if ref.check == "hasattr":
                lines.append(f"r{k} = {value} is not MISSING")
            else:
                lines.append(f"r{k} = {value}")
            namespace[f"kind{k}"] = ref.kind
            lines.append(f"if type(r{k}) is not kind{k}: return None")
            if ref.kind is np.ndarray and getattr(ref.type, "dtype", None) == "bool":
                lines.append(f"if r{k}.dtype != BOOL: return None")  # (a mask stays one)
            if ref.items is not None:  # a tuple (a cache that grows, or holds other things)
                namespace[f"items{k}"] = ref.items
                lines.append(f"if tuple(map(type, r{k})) != items{k}: return None")
            if ref.constant is not None:
                namespace[f"constant{k}"] = ref.constant
                lines.append(f"if r{k} != constant{k}: return None")
            if ref.length is not None:
                lines.append(f"if len(r{k}) != {ref.length}: return None")
                lines.append(f"r{k} = {ref.length}")
        values.append(f"r{k}")
    return lines, values
