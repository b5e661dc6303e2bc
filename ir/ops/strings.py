"""String ops: the ``str`` methods, indexing, slicing, ``in`` and ``+`` / ``*`` scripted code
uses on strings (``if cell.lower() == "lstm":``, ``mode.startswith("train")``,
``"lstm" in name``).

``prim::str_op(name, s, args...)`` calls the method ``name`` of the string ``s`` (``STR_OPS``
gives its result type); ``prim::str_slice(s, start, stop, step)`` is ``s[start:stop:step]``.
Both fold when their inputs are constants (a ``str`` argument such an op reads is compiled in
when it decides a branch: ``passes.static_ints``); otherwise they run as the Python they are.
"""

from __future__ import annotations

from ir.core import Node
from ir.registry import PURE, ZERO_DERIVATIVE, ShapeError, defop
from ir.types import BOOL, INT, STR, ListType, Type, is_subtype

STR_OPS: dict[str, Type] = {
    **{name: BOOL for name in ("startswith", "endswith", "isdigit", "isalpha", "isalnum",
                               "isspace", "islower", "isupper", "__contains__")},
    **{name: STR for name in ("lower", "upper", "strip", "lstrip", "rstrip", "replace",
                              "capitalize", "title", "join", "__getitem__", "__add__",
                              "__mul__", "__mod__", "format")},
    **{name: INT for name in ("find", "rfind", "count", "index", "rindex", "__len__")},
    "split": ListType(STR),
}
"""The string methods (and operators, by their method names) with the type of their result."""


def _str_op(node: Node) -> list[Type]:
    name, s = node.inputs[0], node.inputs[1]
    if not name.is_constant or name.constant not in STR_OPS:
        raise ShapeError(f"prim::str_op: unknown string method {name.constant!r}"
                         if name.is_constant else "prim::str_op: the method must be a constant")
    if s.type != STR:
        raise ShapeError(f"prim::str_op: {name.constant}() of a {s.type}, not a str")
    return [STR_OPS[name.constant]]


def _str_slice(node: Node) -> list[Type]:
    s, *bounds = node.inputs
    if s.type != STR or not all(is_subtype(v.type, INT) or v.is_constant and v.constant is None
                                for v in bounds):
        raise ShapeError("prim::str_slice: a str sliced by ints")
    return [STR]


defop("prim::str_op(name: str, s: any, *args: any) -> any", _str_op, (PURE, ZERO_DERIVATIVE),
      (), "a string method (``s.lower()``, ``s.startswith(p)``, ``s[i]`` as ``__getitem__``, "
      "``a in s`` as ``__contains__``, ``+`` and ``*``) called as Python calls it")
defop("prim::str_slice(s: any, start: int?, stop: int?, step: int?) -> str", _str_slice,
      (PURE, ZERO_DERIVATIVE), (), "s[start:stop:step] of a string")
