"""The types the program generator tracks (tensors of known shape, scalars, lists, tuples, dicts,
globals), a program's parameters and helpers, and ``Program``: what ``programs()`` draws."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DIMS = (1, 2, 3, 4)
"""Array sizes the generator uses (1 exercises broadcasting)."""

Shape = tuple[int, ...]


@dataclass(frozen=True)
class TensorT:
    """A tensor of a known shape (the program's dtype)."""

    shape: Shape


@dataclass(frozen=True)
class ScalarT:
    """A Python ``int``, ``float`` or ``bool``."""

    name: str


@dataclass(frozen=True)
class ListT:
    """A list of tensors of one shape; ``nonempty`` when built with an element."""

    elem: Shape
    nonempty: bool
    comprehension: bool = False
    """made by a list comprehension"""


@dataclass(frozen=True)
class TupleT:
    """A tuple of tensors (shapes) and lists (``ListT``)."""

    elems: tuple[Shape | ListT, ...]


@dataclass(frozen=True)
class DictT:
    """A dict of tensors with ``int`` or ``str`` keys; ``entries`` are the keys known to be set
    (in the scope holding this binding) and their values' shapes."""

    key: str
    entries: tuple[tuple[int | str, Shape], ...]
    argument: bool = False
    """a parameter: read only (writing a caller's dict would change the next call's input)"""

    def annotation(self) -> str:
        return f"Dict[{self.key}, Tensor]"


@dataclass(frozen=True)
class GlobalT(TensorT):
    """A module-level array the function reads (and never assigns)."""


@dataclass(frozen=True)
class ListR:
    """A ``List[Tensor]`` output whose items have shape ``elem``."""

    elem: Shape


INT, FLOAT, BOOL = ScalarT("int"), ScalarT("float"), ScalarT("bool")

FEATURES = frozenset({"same-value-if", "dict", "dict-argument", "list-output", "comprehension",
                      "conditional-append", "tuple-of-lists", "global-array",
                      "append-after-read", "append-to-comprehension", "in-place-write",
                      "fancy-index", "number-accumulator", "float32-accumulator",
                      "tensor-containers", "batched-recurrence", "augmented-alias",
                      "item-update"})
"""Constructs the generator can write beyond its core language, each one drawn only when named
in ``programs(features=...)``:

- ``same-value-if``: ``if c: t = v else: t = v`` (one value, or two outer values, no new one);
- ``dict``: ``d: Dict[int, Tensor] = {}`` / ``Dict[str, Tensor]``, ``d[0] = ...``, ``d[0]`` read;
- ``dict-argument``: a ``Dict[str, Tensor]`` parameter read as ``w["w0"]``;
- ``list-output``: ``-> List[Tensor]`` (a literal or a list built by appends), also in a tuple;
- ``comprehension``: ``a, b = [x[:, k] for k in range(2)]``, ``[np.tanh(v) for v in l]``;
- ``conditional-append``: ``if t >= 2: X.append(...)`` in a loop, then ``np.stack(X, axis=1)``;
- ``tuple-of-lists``: ``p = (l, [a])``, read back as ``p[0][-1]`` or unpacked;
- ``global-array``: module-level arrays the function reads, updated in place (``G1 += 0.25``,
  ``G1[0] = 1.5``) between two calls; each call is compared with Python;
- ``append-after-read``: ``l = [a]; t = ops.stack(l).mean(axis=0); l.append(b)`` (a list
  grows after it was read);
- ``append-to-comprehension``: ``l = [... for k in range(2)]; l.append(x)``;
- ``in-place-write``: writes into an array the function made: ``h = np.zeros((T, 2)); for t in
  range(T): h[t] = np.tanh(... + 0.5 * h[t - 1])``, ``a[:, :k] = v``, ``a[0] = v``, ``a += v``,
  ``a *= v``, ``a.fill(c)``;
- ``fancy-index``: ``W[np.array([2, 0, 2])]``, ``U[:, idx]``, ``o[np.arange(n), y]`` and
  scatters with distinct indices into a made array (``a[idx] += v``, ``a[rows, y] -= 1.0``);
- ``number-accumulator``: ``acc = 0`` then ``acc += np.sum(...)`` or ``acc = acc + x`` in a
  loop, ``accs = [0.0, 0.0]`` then ``accs[k] += np.sum(...)`` (in float64 programs);
- ``float32-accumulator``: number accumulators in float32 programs too (with
  ``number-accumulator``), where numpy's first ``0.0 + np.float32(...)`` is float32;
- ``tensor-containers``: ``hs = [h]; hs.append(f(hs[t]))`` then ``np.stack(hs)``, ``hd = {}``
  with int keys ``hd[t] = f(hd[t - 1])`` from ``hd[-1]``, a tuple state unpacked each step;
- ``batched-recurrence``: a (B, H) state, B >= 2, through ``for i in range(n)`` (an int
  parameter where there is one: a loop that is not unrolled) with ``h = np.tanh(h @ W + x)``,
  the steps appended and stacked, a carried ``loss += np.sum(h * h)`` or ``loss += h.mean(axis=0)``;
- ``augmented-alias``: ``vb = va; vb *= 0.5`` where ``va`` is numpy's scalar (``np.sum(x)``,
  ``x.mean()``: ``va`` keeps its value), an array (``np.sum(x, axis=0)``) or a 0-d array
  (``np.zeros(())``: both names see the update);
- ``item-update``: ``ls[k] += v`` (``-=``, ``*=``), once or in a loop, on a list or dict of
  arrays the function made, each at one place (``ls.append(ls[0].copy())``), every item read
  after.
"""

PENDING_VALUES: frozenset[str] = frozenset()
"""Features with which today's compiler computes wrong values (bugs being fixed): left out of
programs unless asked for by name, so CI stays green. docs/fuzzing.md has each one's
reproducer; remove a feature from here when its fix lands."""

PENDING_GRADIENTS: frozenset[str] = frozenset()
"""Features whose gradients today's autodiff gets wrong (bugs being fixed): left out of gradient
programs unless asked for by name."""


def default_features(differentiable: bool) -> frozenset[str]:
    """The features drawn when ``programs()`` is not told: every one not pending."""
    return FEATURES - (PENDING_GRADIENTS if differentiable else PENDING_VALUES)


KINKED = {"sqrt": "np.sqrt(1.0 + {0} * {0})", "np.abs": "np.abs({0} - 0.375)",
          "ops.relu": "ops.relu({0} - 0.375)"}
"""In gradient programs, functions without a derivative at 0 are moved off the values that
programs make exactly: zeros (``np.zeros``, ``0.0 * x``, a relu of negatives) are common, and
``sqrt(abs(0 * x))`` has a NaN gradient where finite differences see a constant."""


@dataclass(frozen=True)
class Param:
    """One parameter of the entry function and how to make an argument for it."""

    name: str
    type: TensorT | ScalarT

    def annotation(self) -> str:
        if isinstance(self.type, DictT):
            return self.type.annotation()
        return "Tensor" if isinstance(self.type, TensorT) else self.type.name


@dataclass(frozen=True)
class Helper:
    """A generated function the entry function (or a later helper) may call."""

    name: str
    params: tuple[Param, ...]
    returns: Shape


@dataclass(frozen=True)
class Program:
    """A generated module: its source, the entry function's name and parameters.

    ``resets`` put the module's global arrays back to their first values, in place; ``updates``
    change them in place between two calls (both are statements run in the module's namespace).
    """

    source: str
    entry: str
    params: tuple[Param, ...]
    dtype: str
    returns_only_tensors: bool
    resets: tuple[str, ...] = ()
    updates: tuple[str, ...] = ()

    def make_args(self, seed: int) -> tuple:
        """Random arguments for the entry function (ints stay small: they count loop trips)."""
        rng = np.random.default_rng(seed)
        args = []
        for p in self.params:
            t = p.type
            if isinstance(t, DictT):
                args.append({k: rng.standard_normal(shape).astype(self.dtype)
                             for k, shape in t.entries})
            elif isinstance(t, TensorT):
                args.append(rng.standard_normal(t.shape).astype(self.dtype))
            elif t == INT:
                args.append(int(rng.integers(0, 4)))
            elif t == FLOAT:
                args.append(float(np.round(rng.uniform(-2, 2), 3)))
            else:
                args.append(bool(rng.integers(0, 2)))
        return tuple(args)


def _shapes_in(t: object) -> list[Shape]:
    """The shapes of the tensors a value of type ``t`` holds that an expression can read."""
    if isinstance(t, TensorT):
        return [t.shape]
    if isinstance(t, ListT):
        return [t.elem] if t.nonempty else []
    if isinstance(t, TupleT):
        return [s for e in t.elems for s in ([e] if isinstance(e, tuple) else _shapes_in(e))]
    if isinstance(t, DictT):
        return [shape for _, shape in t.entries]
    return []


@dataclass
class Scope:
    """Names visible in one block, with their types."""

    names: dict[str, object] = field(default_factory=dict)
