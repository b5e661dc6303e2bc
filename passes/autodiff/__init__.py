"""Symbolic reverse-mode differentiation of IR graphs (VJP rules and the graph transformation).

``differentiate(graph)`` gives a ``Gradient``: an augmented forward graph (original outputs plus the
saved intermediates) and a backward graph (output cotangents and saved values in, input cotangents
out). Both are ordinary IR, so the pipeline, the fuser and the code generator handle them. On the
backward, ``batch_accumulation`` (the ``batch-accumulation`` pass) turns sums over reverse-loop
iterations (weight and bias gradients) into one matmul or reduction of stacked arrays after the
loop.

Why the whole graph is differentiated, and not ``prim::DifferentiableGraph`` regions as in
TorchScript: TorchScript could not differentiate loops or ifs symbolically, so it cut a graph into
differentiable straight-line regions and let its runtime autograd tape chain their backwards
across the control flow between them. Here control flow is differentiated symbolically (a reverse
loop, an If on the saved condition), so the whole specialized graph is one differentiable region:
one forward graph and one backward graph, and no tape at run time. That is what lets the backward
be optimized across what would be region boundaries: the weight gradients summed over the reverse
loop become one matmul after it, and the input projection's gradient is one matmul of the
stacked per-step gradients. Grouping regions into ``prim::DifferentiableGraph`` nodes would only
change how the graph prints, so it is not done; ``compile_gradient(f, args).gradient`` (and
``f.backward_graph_for(*args)``) show the forward and backward graphs themselves.
"""

from passes.autodiff.grad import Gradient, differentiate, prune_unused_saved
from passes.autodiff.refusals import NotDifferentiable
from passes.autodiff.rules import NON_DIFFERENTIABLE, VJP_RULES

__all__ = ["NON_DIFFERENTIABLE", "VJP_RULES", "Gradient", "NotDifferentiable", "differentiate",
           "prune_unused_saved"]
