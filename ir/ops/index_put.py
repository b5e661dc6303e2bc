"""Writes into a region of an array, as SSA values: ``h[t] = v`` is ``h = select_put(h, v, 0, t)``.

The frontend functionalizes numpy's in-place writes: each ``x[index] = value`` (and
``x[index] += value``, and ``x.fill(value)``) becomes one op that returns a new array equal to
``x`` with the region replaced by ``value`` (broadcast to the region and cast to ``x``'s dtype, as
numpy does), and the name ``x`` is rebound to it. The region is numpy's for the matching read op:

- ``select_put(a, value, axis, index)``: the region ``select(a, axis, index)`` (``h[t] = v``);
- ``slice_put(a, value, axis, start, stop, step)``: the region ``slice(a, ...)`` (``x[:, :H]``);
- ``take_put(a, value, indices, axis)``: the region ``take(a, indices, axis)`` (``W[idx] = v``);
- ``index_pairs_put(a, value, rows, cols)``: the region ``a[rows, cols]``
  (``delta[np.arange(n), y] -= 1``). Where an index repeats, the last write wins, as in numpy.

Each has an in-place twin, ``NAME_`` (``select_put_`` ...), that stores into ``a`` itself and
returns it: ``passes.inplace_writes`` swaps a write for its twin when nothing reads ``a`` after
it, so a buffer written once per step is not copied. Autodiff and the other optimization passes
only ever see the pure ops.
"""

from __future__ import annotations

from dataclasses import dataclass

from ir.core import Node, Value
from ir.ops.indexing import _index_pairs, _take
from ir.ops.shape import _select, _slice, tensor_arg
from ir.registry import (
    ALIASES,
    PURE,
    READS,
    SIDE_EFFECTS,
    VIEW,
    WRITES,
    ShapeError,
    defop,
)
from ir.types import TensorType, Type, is_number


@dataclass
class _Region:
    """A stand-in node whose inputs are the array and the index arguments (no value): the read
    op's shape rule gives the region's type."""

    kind: str
    inputs: list[Value]


def _fits(value: tuple, region: tuple) -> bool:
    """Whether a value of shape ``value`` broadcasts to ``region`` (None: a size not known);
    numpy drops a value's leading axes of size 1 first (``h[t] = row`` of shape (1, H))."""
    extra = len(value) - len(region)
    if extra > 0:
        if any(d not in (1, None) for d in value[:extra]):
            return False
        value = value[extra:]
    tail = region[len(region) - len(value):]
    return all(v is None or r is None or v in (1, r) for v, r in zip(value, tail))


def _put_rule(region_rule):
    def rule(node: Node) -> list[Type]:
        a = tensor_arg(node, 0)
        region = region_rule(_Region(node.kind, [node.inputs[0], *node.inputs[2:]]))[0]
        value = node.inputs[1].type
        if not (isinstance(value, TensorType) or is_number(value)):
            raise ShapeError(f"{node.kind}: the value written must be an array or a number, "
                             f"not {value}")
        if isinstance(value, TensorType) and value.shape is not None and \
                isinstance(region, TensorType) and region.shape is not None:
            if not _fits(value.shape, region.shape):
                shape = "x".join("?" if d is None else str(d) for d in value.shape)
                target = "x".join("?" if d is None else str(d) for d in region.shape)
                raise ShapeError(f"{node.kind}: could not broadcast a value of shape ({shape}) "
                                 f"into a region of shape ({target})")
        return [a]
    return rule


PUTS = {
    "select_put": ("a: Tensor, value: operand, axis: int, index: int", _select,
                   "a with its slice `index` along `axis` set to value (h[t] = v)"),
    "slice_put": ("a: Tensor, value: operand, axis: int, start: int? = None, stop: int? = None, "
                  "step: int? = None", _slice,
                  "a with the slice start:stop:step along `axis` set to value (x[:, :H] = v)"),
    "take_put": ("a: Tensor, value: operand, indices: operand, axis: int = 0", _take,
                 "a with its items at integer `indices` along `axis` set to value (W[idx] = v)"),
    "index_pairs_put": ("a: Tensor, value: operand, rows: operand, cols: operand", _index_pairs,
                        "a with a[rows, cols] set to value (d[np.arange(n), y] = v; the last "
                        "write wins where a pair repeats)"),
}
"""name -> (arguments, the read op's shape rule for the region, doc)."""

PUT_KINDS = frozenset(f"tensor::{name}" for name in PUTS)
"""The pure write ops the frontend emits."""
IN_PLACE = {f"tensor::{name}": f"tensor::{name}_" for name in PUTS}
"""pure write -> its in-place twin."""

for _name, (_args, _region, _doc) in PUTS.items():
    defop(f"tensor::{_name}({_args}) -> Tensor", _put_rule(_region), (PURE,), (),
          f"{_doc}: a new array, cast to a's dtype")
    defop(f"tensor::{_name}_({_args}) -> Tensor", _put_rule(_region), (SIDE_EFFECTS, VIEW), (),
          f"{_doc}: in place, returning a itself (chosen by the inplace-writes pass)",
          effects={"a": (READS, WRITES, ALIASES)})

defop("tensor::take_add(a: Tensor, value: operand, indices: operand, axis: int = 0, "
      "sign: int = 1) -> Tensor", _put_rule(_take), (PURE,), (),
      "a with value added (sign -1: subtracted) at integer `indices` along `axis`, item by "
      "item, so repeated indices add up (np.add.at / np.subtract.at): a new array")
defop("tensor::index_pairs_add(a: Tensor, value: operand, rows: operand, cols: operand, "
      "sign: int = 1) -> Tensor", _put_rule(_index_pairs), (PURE,), (),
      "a with value added (sign -1: subtracted) at [rows, cols], item by item, so repeated "
      "pairs add up (np.add.at(a, (rows, cols), v)): a new array")
defop("tensor::take_last(g: Tensor, indices: operand, axis: int = 0) -> Tensor", _take, (PURE,),
      (), "g read at integer `indices` along `axis`, zero where a later index repeats: the "
      "gradient of take_put's value")
defop("tensor::index_pairs_last(g: Tensor, rows: operand, cols: operand) -> Tensor",
      _index_pairs, (PURE,), (), "g[rows, cols], zero where a later pair repeats: the gradient "
      "of index_pairs_put's value")


def _write_into(node: Node) -> list[Type]:
    dst, value = node.inputs[0].type, node.inputs[1].type
    if not isinstance(dst, TensorType):
        raise ShapeError(f"{node.kind}: writes into an array, not {dst}")
    if not (isinstance(value, TensorType) or is_number(value)):
        raise ShapeError(f"{node.kind}: the value written must be an array or a number, not "
                         f"{value}")
    if isinstance(value, TensorType) and value.shape is not None and dst.shape is not None \
            and not _fits(value.shape, dst.shape):
        shape = "x".join("?" if d is None else str(d) for d in value.shape)
        target = "x".join("?" if d is None else str(d) for d in dst.shape)
        raise ShapeError(f"{node.kind}: could not broadcast a value of shape ({shape}) into an "
                         f"array of shape ({target})")
    return [dst]


defop('tensor::write_into(dst: Tensor, value: operand, op: str = "", index: str = "...") '
      '-> Tensor', _write_into,
      (SIDE_EFFECTS, VIEW), ("a[...] = v", "a[...] += v"),
      "write `value` into the caller's array `dst` itself, as numpy's `dst[...] = value` (`op` "
      "\"\") or `dst[...] op= value` does, returning `dst`: an array an argument's list, dict "
      "or object holds (`self.grads[0][...] = dW`, Adam's `self.m[i] += ...`); reads after the "
      "write read the result, reads before it feed the write "
      "(``script.frontend.caller_writes``); no derivative flows through the result (a gradient "
      "that would is refused); `index` \":\" writes `dst[:]`",
      effects={"dst": (READS, WRITES, ALIASES)})
