"""Memory-layout ops: rewrites insert them; user code has no need of them.

``contiguous(a)`` is ``a`` with C-contiguous storage (``numpy.ascontiguousarray``): the same
values (a 0-d array becomes one of shape (1,), as numpy's does), so it is the identity on what
a program computes. A matmul against a transposed view runs
several times slower than against a contiguous copy at RNN step sizes; the contiguous-weights pass
makes that copy once, before the loop, for loop-invariant transposes that matmuls in a loop use.
``copy(a)`` is a new array of ``a``'s values: where the caller receives two equal results, CSE
computes them once and hands out the second as a copy.
"""

from __future__ import annotations

from ir.core import Node
from ir.ops.shape import tensor_arg
from ir.registry import ARRAY_RESULT, PURE, VIEW, ZERO_DERIVATIVE, defop
from ir.types import TensorType, Type


def _same_as_input(node: Node) -> list[Type]:
    return [tensor_arg(node, 0)]


def _at_least_1d(node: Node) -> list[Type]:
    t = tensor_arg(node, 0)
    if isinstance(t, TensorType) and t.shape == ():
        return [TensorType(t.dtype, (1,), t.device)]
    return [t]


defop("tensor::contiguous(a: Tensor) -> Tensor", _at_least_1d, (PURE, VIEW), (),
      "`a` with C-contiguous storage (numpy.ascontiguousarray; no copy when it already is; a "
      "0-d array becomes shape (1,)): the same values, a faster matmul operand than a "
      "transposed view")
defop("tensor::copy(a: Tensor) -> Tensor", _same_as_input, (PURE, ARRAY_RESULT),
      ("np.copy", ".copy"),
      "a new array holding a's values (numpy.copy)")
defop("tensor::detach(a: Tensor) -> Tensor", _same_as_input, (PURE, VIEW, ZERO_DERIVATIVE), (),
      "`a` itself, through which no gradient flows (torch's detach, jax.lax.stop_gradient)")
