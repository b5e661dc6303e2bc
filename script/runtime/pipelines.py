"""The pass pipelines the runtime runs, and the registrations they need, made explicitly.

``passes`` registers its own passes; what sits above it in the layering plugs in here when the
runtime first runs a pipeline (``run_pipeline``), never at import: the fuser's
``fuse-elementwise`` pass, and the evaluator constant propagation folds tensor ops with (the
eager op library, ``script.ops``). Malloc is left alone: compiled functions reuse their own
arrays (``fuser.workspace``); ``RNNSCRIPT_MALLOC=tune`` asks the first compilation for the former
process-wide malloc tuning instead (``allocator.tune``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import fuser
import ir
import passes
from ir.core import Graph
from ir.ops.prim import DEFERRED_ERROR
from passes import LAYOUT_PIPELINE, STANDARD_PIPELINE, UNROLLED_PIPELINE, constant_prop
from script import ops
from script.errors import ArgumentShapeError, ScriptError
from script.runtime import allocator

FORWARD_PIPELINE = (STANDARD_PIPELINE + "," + UNROLLED_PIPELINE + "," + LAYOUT_PIPELINE +
                    ",shape-prop,outer-products,matmul-sums,fuse-updates,fuse-elementwise,dce,"
                    "inplace-writes")
"""What the executor runs on a specialized graph (DESIGN.md section 4, as far as it exists);
shapes are propagated again after the layout passes (a buffer they make for a stacked list has
the length the list's stack did not: a second layer's projection of it then has a static shape
and its loop runs natively); an outer product a sum reads becomes a broadcast product the sum's
fusion group computes; a sum of products outside loops becomes one product (``matmul-sums``);
an update of a caller's array joins the kernel computing its value (``fuse-updates``); writes into
arrays become in place last, after every pass that could move a reader."""

BACKWARD_PIPELINE = (STANDARD_PIPELINE + ",batch-accumulation,slot-gradients,slot-adds,cse,dce,"
                     + LAYOUT_PIPELINE
                     + ",shape-prop,outer-products,matmul-sums,fuse-updates,fuse-elementwise,dce,"
                       "inplace-writes")
"""What runs on a backward graph: the same cleanup as a forward graph, then sums over loop
iterations become one matmul/reduction after the loop, a sequence's gradient summed whole each
step is written slot by slot (``slot-gradients``), or, where it adds into an array carried
through the loop, added into its slot (``slot-adds``), then fusion."""

FROZEN_PIPELINE = (STANDARD_PIPELINE + "," + UNROLLED_PIPELINE +
                   ",constant-prop,dce,outer-products,matmul-sums,"
                   "fuse-updates,fuse-elementwise,dce,inplace-writes")
"""A frozen method's specializations: the forward pipeline, plus a fold after the RNN passes
(the weight concatenations batched matmuls make are of constants here)."""

_lock = threading.Lock()
_registered = False


def evaluate_op(kind: str, args: list[Any]) -> Any:
    """Constant propagation's evaluator: ``tensor::NAME`` runs the eager op ``script.ops.NAME``."""
    return getattr(ops, kind.split("::", 1)[1])(*args)


def register() -> None:
    """Register the fuser's passes and the constant-folding evaluator (once per process; an
    evaluator someone else set is kept), and tune malloc when the environment asks for it
    (``RNNSCRIPT_MALLOC=tune``, see the module docstring)."""
    global _registered
    if _registered:
        return
    with _lock:
        if _registered:
            return
        fuser.register_passes()
        if constant_prop.get_evaluator() is None:
            constant_prop.set_evaluator(evaluate_op)
        allocator.tune()
        _registered = True


def run_pipeline(graph: Graph, pipeline: str) -> None:
    """``passes.run_pipeline`` after ``register``: every pipeline the runtime runs goes here."""
    register()
    passes.run_pipeline(graph, pipeline)


@contextmanager
def refused_shapes(d: Any, types: list[ir.Type], graph: Graph, empty_joins: bool = False
                   ) -> Iterator[None]:
    """A ``ShapeError`` of ``graph``, specialized to arguments of ``types``, as an
    ``ArgumentShapeError`` (a ``ValueError``, as numpy's): an op whose operands' shapes numpy
    refuses, found by specializing; with ``empty_joins``, only the joins of no arrays the passes
    find (``np.stack`` of the list a loop of no trips filled, once the loop is unrolled), any
    other error of theirs staying a compiler error. Where the graph still holds a branch that
    did not compile (``definition.deferred_errors``), that branch's ``ScriptError`` instead:
    the specialization raises it anyway, and what the branch would have made (the appends to a
    list it would have stacked) is missing from the graph."""
    try:
        yield
    except (ir.ShapeError, ir.VerifyError) as e:
        if isinstance(e, ir.VerifyError):  # RNNSCRIPT_VERIFY=1 finds the node first
            if not isinstance(e.__cause__, ir.ShapeError):
                raise
            e = e.__cause__
        kept = next((n for n in graph.walk() if n.kind == "prim::RaiseException"
                     and DEFERRED_ERROR in n.attrs), None)
        if kept is not None:
            raise ScriptError(*kept.attrs[DEFERRED_ERROR]) from None
        if empty_joins and "need at least one tensor" not in str(e):
            raise
        described = ", ".join(f"{n}: {t}" for n, t in zip(d.arg_names, types))
        raise ArgumentShapeError(f"{d.name}(): the arguments ({described}) cannot be "
                                 f"accepted: {e}") from None
