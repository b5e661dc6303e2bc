"""Which op a Python callable or a tensor method stands for: ``op_for_object(np.tanh)``,
``method_op("sum")``, from the spellings the op registry declares."""

from __future__ import annotations

import builtins
import functools
from typing import Any

import numpy as np

from ir.registry import OpDef, all_ops, lookup
from script import ops as ops_module

_object_ops: dict[int, tuple[Any, OpDef]] = {}
_method_ops: dict[str, OpDef] = {}


def op_for_object(obj: Any) -> OpDef | None:
    """The op a Python callable stands for (``np.tanh``, ``script.ops.sigmoid``), or None."""
    if not _object_ops:
        _build_object_table()
    entry = _object_ops.get(id(obj))
    if entry is not None and entry[0] is obj:
        return entry[1]
    module = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__name__", None)
    if module == "script.ops" and name:
        return lookup(f"tensor::{name}")
    return None


def _build_object_table() -> None:
    table: dict[int, tuple[Any, OpDef]] = {}
    for op in all_ops():
        for spelling in op.spellings:
            target = _spelled_object(spelling)
            if target is not None:
                table.setdefault(id(target), (target, op))
    for op in all_ops():
        if op.kind.startswith("tensor::"):
            target = getattr(ops_module, op.name, None)
            if target is not None:
                table.setdefault(id(target), (target, op))
    _object_ops.update(table)


def _spelled_object(spelling: str) -> Any:
    if spelling.startswith("np."):  # np.tanh, np.linalg.inv
        return functools.reduce(lambda o, n: getattr(o, n, None), spelling[3:].split("."), np)
    if spelling.startswith("ops."):
        return getattr(ops_module, spelling[4:], None)
    if spelling.isidentifier() and spelling not in ("len", "print"):
        return getattr(builtins, spelling, None)
    return None


def method_op(name: str) -> OpDef | None:
    """The op a tensor method ``x.NAME(...)`` calls."""
    if not _method_ops:
        for op in all_ops():
            for spelling in op.spellings:
                if spelling.startswith(".") and spelling[1:].isidentifier():
                    _method_ops.setdefault(spelling[1:], op)
    return _method_ops.get(name)
