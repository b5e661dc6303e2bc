"""Symbolic reverse-mode differentiation of IR graphs (VJP rules and the graph transformation).

``differentiate(graph)`` gives a ``Gradient``: an augmented forward graph (original outputs plus the
saved intermediates) and a backward graph (output cotangents and saved values in, input cotangents
out). Both are ordinary IR, so the pipeline, the fuser and the code generator handle them.
"""

from passes.autodiff.grad import Gradient, differentiate, prune_unused_saved
from passes.autodiff.rules import NON_DIFFERENTIABLE, VJP_RULES

__all__ = ["NON_DIFFERENTIABLE", "VJP_RULES", "Gradient", "differentiate", "prune_unused_saved"]
