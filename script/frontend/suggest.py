"""'Did you mean' for misspelled names: ``np.tanhh`` -> ``np.tanh``, ``ops.sigmod`` ->
``ops.sigmoid``, ``x.sumn()`` -> ``x.sum()``.

The candidates are the op registry's spellings (``np.tanh``, ``.sum``), the eager op library's
names (``ops.sigmoid``) and numpy's dtype names; the closest ones by ``difflib`` are offered.
"""

from __future__ import annotations

import difflib
import types
from functools import cache

from ir.registry import all_ops
from ir.types import DTYPE_NAMES
from script import ops

ARRAY_MODULES = {"numpy": "np", "cupy": "np", "script.ops": "ops"}
"""module name -> the prefix its functions' spellings have in the registry."""


@cache
def _names(prefix: str) -> tuple[str, ...]:
    """The names the registry spells with ``prefix`` (``np``, ``ops``; ``""`` for methods)."""
    head = f"{prefix}." if prefix else "."
    found = {s[len(head):].split("(")[0] for op in all_ops() for s in op.spellings
             if s.startswith(head)}
    if prefix == "np":
        found |= set(DTYPE_NAMES)
    if prefix == "ops":
        found |= set(ops.__all__)
    return tuple(sorted(n for n in found if n.isidentifier()))


def did_you_mean(module: types.ModuleType, attr: str, spelled: str) -> str:
    """`` (did you mean 'np.tanh'?)`` for ``spelled`` (``np.tanhh``, the user's text), or ""."""
    prefix = ARRAY_MODULES.get(module.__name__)
    if prefix is None:
        return ""
    return _offer(attr, _names(prefix), spelled.rsplit(".", 1)[0] + ".")


def did_you_mean_method(attr: str) -> str:
    """`` (did you mean '.sum'?)`` for a misspelled tensor attribute or method, or ""."""
    return _offer(attr, _names(""), ".")


def _offer(attr: str, names: tuple[str, ...], head: str) -> str:
    close = difflib.get_close_matches(attr, names, n=3, cutoff=0.75)
    if not close:
        return ""
    return " (did you mean " + " or ".join(f"'{head}{n}'" for n in close) + "?)"
