"""Symbolic reverse-mode differentiation of IR graphs (VJP rules and the graph transformation).

``differentiate(graph)`` gives a ``Gradient``: an augmented forward graph (original outputs plus the
saved intermediates) and a backward graph (output cotangents and saved values in, input cotangents
out). Both are ordinary IR, so the pipeline, the fuser and the code generator handle them.
"""

from passes.autodiff import batch_accumulation
from passes.autodiff.grad import Gradient, differentiate, prune_unused_saved
from passes.autodiff.rules import NON_DIFFERENTIABLE, VJP_RULES
from passes.registry import register_pass

register_pass(batch_accumulation.NAME, batch_accumulation.run)

__all__ = ["NON_DIFFERENTIABLE", "VJP_RULES", "Gradient", "differentiate", "prune_unused_saved"]
