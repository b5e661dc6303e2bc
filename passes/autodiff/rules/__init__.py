"""VJP rules: for each differentiable op kind, how input cotangents follow from output cotangents.

``VJP_RULES`` is the union of one table per op family (``elementwise``, ``reductions``, ``shape``,
``matmul``, ``nn``, ``numpy_ops``, ``index_put``); the rule signature and the combinators that
build rules from per-input formulas (``defbinary``, ``deflinear``, ``defunary``) are in
``combinators``. Ops whose outputs never carry a derivative are in ``NON_DIFFERENTIABLE``.
Structure ops (tuples, lists, control flow, stack/cat/unbind) are handled by the graph
transformation itself (``passes.autodiff.walk.STRUCTURE_VJPS``).
"""

from __future__ import annotations

from ir.registry import all_ops
from passes.autodiff.rules.combinators import Rule
from passes.autodiff.rules.determinants import DETERMINANT_RULES
from passes.autodiff.rules.elementwise import ELEMENTWISE_RULES
from passes.autodiff.rules.index_put import INDEX_PUT_RULES
from passes.autodiff.rules.matmul import MATMUL_RULES
from passes.autodiff.rules.nn import NN_RULES
from passes.autodiff.rules.numpy_ops import NUMPY_RULES
from passes.autodiff.rules.reductions import REDUCTION_RULES
from passes.autodiff.rules.shape import SHAPE_RULES

NON_DIFFERENTIABLE: frozenset[str] = frozenset(
    op.kind for op in all_ops() if op.has_zero_derivative)
"""Ops whose results are constant almost everywhere or not numbers: no derivative flows (the
registry's ``zero_derivative`` trait)."""

VJP_RULES: dict[str, Rule] = (ELEMENTWISE_RULES | REDUCTION_RULES | SHAPE_RULES | MATMUL_RULES
                              | NN_RULES | NUMPY_RULES | INDEX_PUT_RULES | DETERMINANT_RULES)
"""op kind -> VJP rule, for every differentiable op of the registry."""

__all__ = ["NON_DIFFERENTIABLE", "VJP_RULES", "Rule"]
