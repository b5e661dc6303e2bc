"""Before a variant is timed, its outputs and gradients are checked (upstream's ``test.py``).

The LSTM rows are compared with ``py`` (numpy eager with the hand-written backward), the
variable-length rows with ``vl_py``, the layer-norm and GRU rows with the same function compiled
without optimization. Gradients are taken for one random output cotangent, the same for every
row (``None`` where a row does not compute an output, e.g. ``script_simple``'s sequence).

The error of an array is ``max |got - want| / max |want|``; a row passes when the largest error
over its outputs is at most ``TOLERANCES[dtype][0]`` and over its gradients at most
``TOLERANCES[dtype][1]``. The float32 bounds leave room for different summation orders in
BLAS/oneDNN GEMMs over sums of up to T*B terms (weight gradients), not for wrong formulas.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.fastrnns import runner
from benchmarks.fastrnns.factory import ModelDef, RNNInputs

TOLERANCES = {"float32": (5e-4, 5e-3), "float64": (1e-10, 1e-9)}
"""dtype -> (outputs, gradients): the largest relative error a row may have."""

BASE = {"lstm": "py", "vl_lstm": "vl_py"}
"""The reference row of each group."""


def to_host(a: Any) -> np.ndarray:
    """A numpy array from a numpy, CuPy or torch array."""
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    if hasattr(a, "get") and not isinstance(a, np.ndarray):
        a = a.get()
    return np.asarray(a)


def leaves(tree: Any) -> list[Any]:
    """The arrays of a nest of tuples and lists, in order (``None`` kept)."""
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in leaves(item)]
    return [tree]


def max_error(got: Any, want: Any) -> tuple[float, str]:
    """The largest relative error over paired arrays, and what went wrong if they do not pair."""
    got_leaves, want_leaves = leaves(got), leaves(want)
    if len(got_leaves) != len(want_leaves):
        return float("inf"), f"{len(got_leaves)} arrays where {len(want_leaves)} were expected"
    worst = 0.0
    for k, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        if g is None or w is None:
            continue
        g, w = to_host(g), to_host(w)
        if g.shape != w.shape:
            return float("inf"), f"array {k} has shape {g.shape}, expected {w.shape}"
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        diff = float(np.max(np.abs(g.astype(np.float64) - w))) if w.size else 0.0
        worst = max(worst, diff / scale if scale > 0 else diff)
    return worst, ""


def random_like(tree: Any, rng: np.random.Generator, xp: Any) -> Any:
    """Standard-normal arrays shaped like ``tree``'s (same nesting, ``None`` kept)."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(random_like(item, rng, xp) for item in tree)
    if tree is None:
        return None
    host = to_host(tree)
    return xp.asarray(rng.standard_normal(host.shape).astype(host.dtype))


def mask(cotangent: Any, outputs: Any) -> Any:
    """``cotangent`` with ``None`` where ``outputs`` has none (top level)."""
    if outputs is None:
        return None
    return tuple(None if o is None else c for c, o in zip(cotangent, outputs))


class References:
    """The group's reference run, made once and shared by the rows' checks."""

    def __init__(self, group: str, inputs: RNNInputs, sync: Callable[[], None]):
        self.base = BASE[group]
        self.inputs = inputs
        self.sync = sync
        self._run: tuple[ModelDef, Any, Any] | None = None
        self._cotangent: Any = None
        self._grads: dict[tuple[bool, ...], Any] = {}

    def _base_run(self) -> tuple[ModelDef, Any, Any]:
        if self._run is None:
            model = runner.RUNNERS[self.base].create(self.inputs)
            outputs, saved = model.forward()
            self._run = (model, outputs, saved)
        return self._run

    def cotangent_for(self, outputs: Any) -> Any:
        """The shared random cotangent, without the entries ``outputs`` lacks."""
        if self._cotangent is None:
            rng = np.random.default_rng(self.inputs.sizes.seed + 3)
            self._cotangent = random_like(self._base_run()[1], rng, self.inputs.xp)
        return mask(self._cotangent, outputs)

    def base_result(self, cotangent: Any) -> tuple[Any, Any]:
        """The reference row's outputs and its gradients for ``cotangent``."""
        model, outputs, saved = self._base_run()
        key = tuple(c is None for c in cotangent)
        if key not in self._grads:
            self._grads[key] = model.backward(saved, cotangent)
        return outputs, self._grads[key]

    def check(self, name: str, model: ModelDef, outputs: Any, grads: Any,
              cotangent: Any) -> dict[str, Any]:
        """The check record of one row (``passed``, errors, tolerances, what it was checked
        against)."""
        reference = model.reference
        if reference is None:
            return {"passed": True, "against": None,
                    "message": "the reference" if name == self.base else "not checked"}
        if callable(reference):
            want_out, want_grads = reference(cotangent)
            against = "itself, unoptimized"
        else:
            want_out, want_grads = self.base_result(cotangent)
            against = self.base
        got_out = model.check_forward() if model.check_forward is not None else outputs
        fwd_tol, bwd_tol = TOLERANCES[self.inputs.sizes.dtype]
        fwd_err, problem = max_error(got_out, want_out)
        record: dict[str, Any] = {"against": against, "fwd_error": fwd_err, "fwd_tol": fwd_tol,
                                  "bwd_error": None, "bwd_tol": bwd_tol}
        if grads is not None and model.check_gradients and not problem:
            record["bwd_error"], problem = max_error(grads, want_grads)
        passed = not problem and fwd_err <= fwd_tol and (record["bwd_error"] or 0.0) <= bwd_tol
        record["passed"] = passed
        record["message"] = problem or ("" if passed else
                                        f"error fwd {fwd_err:.3g} (tolerance {fwd_tol:g}), "
                                        f"bwd {record['bwd_error']} (tolerance {bwd_tol:g})")
        return record
