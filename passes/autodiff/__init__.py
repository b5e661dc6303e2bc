"""Symbolic reverse-mode differentiation of IR graphs (VJP rules and the graph transformation).

``differentiate(graph)`` gives a ``Gradient``: an augmented forward graph (original outputs plus the
saved intermediates) and a backward graph (output cotangents and saved values in, input cotangents
out). Both are ordinary IR, so the pipeline, the fuser and the code generator handle them. On the
backward, ``batch_accumulation`` (the ``batch-accumulation`` pass) turns sums over reverse-loop
iterations (weight and bias gradients) into one matmul or reduction of stacked arrays after the
loop.

Only what needs a gradient is differentiated: ``differentiate(graph, wrt=...)`` names the inputs
(``vjp(..., argnums=...)``), and a value is *active* when it depends on one of them
(``prepare.active_values``) and an output's cotangent depends on it (``needed``). The rules
build only active operands' gradients and save only what those need: an LSTM layer trained with
respect to its weights has no input-gradient GEMM, and a decision, a mask made from lengths or
an integer counter is computed forward only.

Why the whole graph is differentiated, and not ``prim::DifferentiableGraph`` regions as in
TorchScript: TorchScript could not differentiate loops or ifs symbolically, so it cut a graph into
differentiable straight-line regions and let its runtime autograd tape chain their backwards
across the control flow between them. Here control flow is differentiated symbolically (a reverse
loop, an If on the saved condition), so the active part of the specialized graph is differentiated
at once: one forward graph and one backward graph, and no tape at run time. That is what lets the
backward be optimized across what would be region boundaries: the weight gradients summed over
the reverse loop become one matmul after it, and the input projection's gradient is one matmul
of the stacked per-step gradients. The split into maximal active regions is shown as
``prim::DifferentiableGraph`` nodes (``regions``: ``f.vjp_graphs_for(*args, regions=True)``,
``RNNSCRIPT_LOG=passes``); ``compile_gradient(f, args).gradient`` (and
``f.vjp_graphs_for(*args)``) give the forward and backward graphs that run.
"""

from passes.autodiff.grad import Gradient, differentiate, prune_unused_saved
from passes.autodiff.refusals import NotDifferentiable
from passes.autodiff.regions import differentiable_regions
from passes.autodiff.rules import NON_DIFFERENTIABLE, VJP_RULES
from passes.autodiff.saved_stacks import stack_saved_lists

__all__ = ["NON_DIFFERENTIABLE", "VJP_RULES", "Gradient", "NotDifferentiable",
           "differentiable_regions", "differentiate", "prune_unused_saved", "stack_saved_lists"]
