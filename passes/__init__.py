"""Graph-to-graph optimization passes and the pipelines that run them.

Every pass is a function ``run(graph) -> bool`` (True when it changed the graph) in its own module,
registered under a kebab-case name. ``run_pipeline(graph, "inline,cse,dce")`` runs a list of them.

Environment:
- ``RNNSCRIPT_LOG=passes`` prints the graph to stderr after each pass, under a header line.
- ``RNNSCRIPT_VERIFY=1`` runs the IR verifier after each pass (the test suite sets it).
- ``RNNSCRIPT_DISABLE_PASSES=cse,dce`` makes pipelines skip those passes (to find a faulty one);
  ``with passes.disable("cse"):`` does the same in code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ir.core import Graph
from ir.verify import verify
from passes import (
    batch_matmul,
    canonicalize,
    cast_writes,
    constant_prop,
    contiguous_weights,
    cse,
    dce,
    dict_carry,
    dict_items,
    hoist_projection,
    hoist_rowwise,
    inline,
    inplace_writes,
    licm,
    matmul_pieces,
    object_fields,
    outer_products,
    peel,
    shape_prop,
    stack_to_slots,
    tuple_carries,
    tuple_columns,
    unbind_pops,
    unroll,
    weak_numbers,
)
from passes.autodiff import batch_accumulation, slot_adds, slot_gradients
from passes.registry import PASSES, SETTLING, Pass, all_passes, get_pass, register_pass

for _module in (inline, object_fields, canonicalize, constant_prop, shape_prop, dce, dict_items,
                dict_carry, cse, licm, hoist_projection, hoist_rowwise, unroll, batch_matmul,
                batch_accumulation, slot_gradients, slot_adds, matmul_pieces, contiguous_weights,
                stack_to_slots, outer_products, inplace_writes, peel, tuple_columns, cast_writes,
                tuple_carries, weak_numbers, unbind_pops):
    register_pass(_module.NAME, _module.run, settles=getattr(_module, "SETTLES", False))
register_pass(unroll.BY_FACTOR_NAME, unroll.run_by_factor)
register_pass(peel.ACCUMULATORS_NAME, peel.run_accumulators)

CLEANUP_PIPELINE = ("inline,forward-fields,split-tuple-carries,canonicalize,constant-prop,"
                    "shape-prop,constant-prop,weak-numbers,canonicalize,shape-prop,"
                    "forward-dict-items,"
                    "carry-dict-items,dce,cse,dce")
"""The cleanups: inlining, the fields of local objects read back forwarded, loop-carried tuples
carried item by item, canonicalization,
constant and shape propagation, dict items read back forwarded (and the item the step before
stored carried through its loop), DCE and CSE. Constant propagation runs again after shape
propagation: sizes that only the specialized types know (a loop over ``unbind`` of a reshaped
projection) fold then, giving loops constant trip counts; shape propagation runs again after
the second canonicalization, so the values after a rewrite it made with those sizes (a slice
that became a split piece) get their static shapes."""

RNN_PIPELINE = "licm,hoist-projection,hoist-rowwise,unroll,constant-prop,batch-matmul,licm,cse,dce"
"""The loop and matmul rewrites, in DESIGN.md section 4's order. licm runs first so that weights
like ``w_ih.T`` are loop-invariant values when the projection is hoisted (hoist-rowwise then
moves row kernels of the projection, like the LayerNorm-LSTM's input layer norm), and again after
batch-matmul so the concatenation of loop-invariant weights it makes is computed once. Constant
propagation after unrolling folds the counter's arithmetic each copy of the body starts with
(``i = 1 + 2``, ``out[:, i - 1]``: constant indices, no Python arithmetic per step)."""

UNROLLED_PIPELINE = "canonicalize,licm,hoist-projection,batch-matmul,licm,cse,dce"
"""After the RNN passes, on the graphs the executor runs (not on one to differentiate, whose
refusals name the lists as written): canonicalization folds the lists a small loop built once
it is unrolled (``xh = [x @ Wi[g].T for g in range(4)]`` in a time loop, Apache TVM's
``lstm_python``: then ``xh[0]`` is the product), and the projections that exposes are hoisted
like the others (the time loop ran as Python, 1.17x numpy; now natively, 1.46x, as the same
cell written without lists)."""

STANDARD_PIPELINE = CLEANUP_PIPELINE + "," + RNN_PIPELINE
"""The forward pipeline (DESIGN.md section 4) run by the executor, before fusion."""

LAYOUT_PIPELINE = ("peel-first-trip,tuple-columns,matmul-pieces,contiguous-weights,cast-writes,"
                   "stack-to-slots,unbind-pops,dce")
"""Rewrites for execution speed that peel a loop's first trip where it narrows a carried type
(``c = None`` before the loop, a native loop after it), read a list of tuples a loop reads item
by item as one list per field (``tuple-columns``), multiply by the columns of each piece of a
product that is read (``matmul-pieces``), insert layout ops
(``tensor::contiguous``) or buffers written in place (``tensor::empty`` + ``write_slot`` for a
list stacked after its loop), and read the rows of an ``unbind`` a loop pops one a step
as ``select``s (``unbind-pops``): they run on the graphs the executor compiles, after
differentiation, so gradients never meet their ops."""

_disabled: set[str] = set()


@contextmanager
def disable(*names: str) -> Iterator[None]:
    """Within the ``with`` block, pipelines skip the named passes."""
    for name in names:
        get_pass(name)
    added = [n for n in names if n not in _disabled]
    _disabled.update(added)
    try:
        yield
    finally:
        _disabled.difference_update(added)


def disabled_passes() -> set[str]:
    """The passes pipelines currently skip (``disable`` plus RNNSCRIPT_DISABLE_PASSES)."""
    from_env = _split_names(os.environ.get("RNNSCRIPT_DISABLE_PASSES", ""))
    return set(_disabled) | set(from_env)


def run_pipeline(graph: Graph, pipeline: str | Sequence[str]) -> bool:
    """Run the passes named by ``pipeline`` ("a,b,c" or a list) in order; True if any changed.

    A pass registered as settling (``SETTLES = True`` in its module: shape-prop, canonicalize,
    constant-prop, dce, cse, licm) whose last run in this pipeline changed nothing is skipped
    while no pass has changed the graph since (the standard pipeline runs shape propagation, DCE
    and CSE several times, most of them on a graph nothing changed in between). Unknown names
    raise ValueError before any pass runs.
    """
    names = _split_names(pipeline) if isinstance(pipeline, str) else list(pipeline)
    fns = [get_pass(name) for name in names]
    skip = disabled_passes()
    changed = False
    changes = 0
    """passes that changed the graph so far in this run."""
    settled_at: dict[str, int] = {}
    """per settled pass, ``changes`` when it last ran and changed nothing."""
    for name, fn in zip(names, fns):
        if name in skip or settled_at.get(name) == changes:
            continue
        if run_pass(graph, name, fn):
            changed = True
            changes += 1
            settled_at.pop(name, None)
        elif name in SETTLING:
            settled_at[name] = changes
    return changed


def run_pass(graph: Graph, name: str, fn: Pass | None = None) -> bool:
    """Run one pass with the logging and verification the environment asks for."""
    fn = fn or get_pass(name)
    changed = bool(fn(graph))
    if "passes" in _split_names(os.environ.get("RNNSCRIPT_LOG", "")):
        status = "changed" if changed else "unchanged"
        print(f"// ---- after {name} ({status}) ----\n{graph}", file=sys.stderr)
    if os.environ.get("RNNSCRIPT_VERIFY", "") not in ("", "0"):
        verify(graph, shape_prop.static_condition)  # branches the types rule out may not type
    return changed


def _split_names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


__all__ = [
    "CLEANUP_PIPELINE", "LAYOUT_PIPELINE", "PASSES", "RNN_PIPELINE", "SETTLING",
    "STANDARD_PIPELINE", "Pass",
    "all_passes", "disable", "disabled_passes", "get_pass",
    "register_pass", "run_pass", "run_pipeline",
]
