"""What many test modules share: comparing results, random inputs, building graphs by hand.

Program fixtures (the cells, the language programs, hand-built graphs) live in ``tests.programs``;
gradient checks in ``tests.gradcheck``; float32 error bounds in ``tests.precision``; the reference
graph interpreter in ``tests.graph_interp``.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ir import Graph, ListType, TensorType, Type, infer_types

ROOT = Path(__file__).resolve().parent.parent
"""The repository root (tests that run files or scan the tree by path start here)."""

TOLERANCE = {np.dtype("float32"): dict(rtol=1e-5, atol=1e-6),
             np.dtype("float64"): dict(rtol=1e-6, atol=1e-12)}
"""The usual ``assert_same`` tolerances of a compiled result against eager numpy, by dtype."""


def assert_same(got: Any, want: Any, rtol: float = 1e-6, atol: float = 1e-12) -> None:
    """``got`` is the value ``want``: tuples and lists of the same type and length, ``None`` for
    ``None``, Python scalars of the same type and equal (NaN for NaN), arrays of the same dtype
    and shape with NaN and infinities in the same places, booleans and integers equal and finite
    floats within ``rtol`` / ``atol``."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol)
        return
    if want is None:
        assert got is None, got
        return
    if isinstance(want, (bool, int, float)) and not isinstance(want, np.generic):
        assert type(got) is type(want), (got, want)
        assert got == want or (got != got and want != want), (got, want)
        return
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.dtype == want_a.dtype, (got_a.dtype, want_a.dtype)
    assert got_a.shape == want_a.shape, (got_a.shape, want_a.shape)
    if got_a.dtype.kind in "biu":
        np.testing.assert_array_equal(got_a, want_a)
        return
    np.testing.assert_allclose(got_a, want_a, rtol=rtol, atol=atol)


def _first_dtype(value: Any) -> np.dtype:
    while isinstance(value, (tuple, list)):
        value = value[0]
    return np.asarray(value).dtype


def assert_same_at(got: Any, want: Any, dtype: Any = None) -> None:
    """``assert_same`` with the tolerances of ``dtype`` (``TOLERANCE``; by default that of
    ``want``'s first array)."""
    dtype = _first_dtype(want) if dtype is None else np.dtype(dtype)
    assert_same(got, want, **TOLERANCE[dtype])


def flat(result: Any) -> list:
    """The leaves of a nested tuple or list result (NamedTuples included), depth first."""
    if isinstance(result, (tuple, list)):
        return [x for r in result for x in flat(r)]
    return [result]


def rng(seed: int = 0) -> np.random.Generator:
    """A fresh numpy generator: every test draws from its own seed."""
    return np.random.default_rng(seed)


def rand(r: np.random.Generator, shape: tuple[int, ...] | int, dtype: Any = "float64",
         scale: float = 1.0) -> np.ndarray:
    """Standard normal values times ``scale``, of ``shape`` and ``dtype``."""
    return (r.standard_normal(shape) * scale).astype(dtype)


def random_args(shapes, r: np.random.Generator) -> tuple:
    """A float64 standard normal array for each tuple in ``shapes``; other entries as they are."""
    return tuple(rand(r, s) if isinstance(s, tuple) else s for s in shapes)


def T(dtype: str, *shape: int, device: str | None = None) -> TensorType:
    """``TensorType(dtype, shape, device)``."""
    return TensorType(dtype, tuple(shape), device)


def emit(g: Graph, kind: str, *inputs, name: str | None = None, names=(), source=None):
    """Insert ``kind(*inputs)`` at ``g``'s insert point with the output types its rule gives;
    the output value, or the tuple of outputs of a multi-output op."""
    node = g.insert_typed(kind, inputs, source=source, names=list(names) or [name])
    return node.outputs[0] if len(node.outputs) == 1 else node.outputs


# -- typing and calling from examples ----------------------------------------------------------
def _graph_value(g: Graph, arg: object):
    if isinstance(arg, np.ndarray):
        return g.add_input(TensorType(arg.dtype.name, arg.shape, "cpu"))
    if isinstance(arg, list) and arg and isinstance(arg[0], np.ndarray):
        items = [_graph_value(g, a) for a in arg]
        elem = items[0].type
        if any(v.type != elem for v in items):
            elem = TensorType()
        return g.insert("prim::ListConstruct", items, [ListType(elem)]).output
    return g.constant(arg)


def infer(name: str, *args: object, outputs: int = 1) -> list[Type]:
    """The registry's output types for ``tensor::name`` applied to ``args`` (arrays become typed
    graph inputs, everything else a constant)."""
    g = Graph()
    values = [_graph_value(g, a) for a in args]
    node = g.insert(f"tensor::{name}", values, [TensorType()] * outputs)
    return infer_types(node)


def _annotated_value(annotation: Any, rng: np.random.Generator, shape: tuple[int, ...],
                     dtype: str = "float64") -> Any:
    """An argument for a parameter annotated ``annotation`` (arrays of ``shape``)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation in (float,):
        return 0.5
    if annotation in (int,):
        return 2
    if annotation in (bool,):
        return True
    if annotation is str:
        return "a"
    if origin in (list, typing.List):
        return [_annotated_value(args[0], rng, shape, dtype) for _ in range(2)]
    if origin in (tuple, typing.Tuple):
        return tuple(_annotated_value(a, rng, shape, dtype) for a in args if a is not Ellipsis)
    if origin is typing.Union:
        return _annotated_value(next(a for a in args if a is not type(None)), rng, shape, dtype)
    if origin in (dict, typing.Dict):
        return {}
    return (3 * rng.standard_normal(shape)).astype(dtype)


def arguments(fn: Any, shape: tuple[int, ...], dtype: str = "float64") -> tuple[Any, ...]:
    """Arguments for ``fn`` made from its annotations (arrays of ``shape`` and ``dtype``, two-item
    lists, the first member of an Optional); they often do not fit, which is the point."""
    rng = np.random.default_rng(0)
    hints: dict[str, Any] = {}
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 -- a bad program's annotations may not resolve
        pass
    params = inspect.signature(fn).parameters
    return tuple(_annotated_value(hints.get(name), rng, shape, dtype) for name in params)


def native_loops(f: Any, *args: Any) -> list[Any]:
    """The native loops (``fuser.cpu.loop.NativeLoop``) of ``f``'s specialization for ``args``."""
    fn = generated(f.specialization(*args))
    return [v for k, v in fn.__globals__.items() if k.startswith("_loop")]


def generated(spec: Any) -> Any:
    """The generated function of a specialization (its ``fn`` may wrap it: an argument given
    to it as its arrays, ``script.runtime.nested_args``)."""
    return getattr(spec.fn, "__wrapped__", spec.fn)


def python_loop_result(monkeypatch: Any, fn: Any, *args: Any) -> Any:
    """``fn`` compiled with every loop as generated Python (``RNNSCRIPT_NATIVE_LOOPS=0``),
    called on ``args``."""
    from script import script

    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        f = script(fn)
        assert not native_loops(f, *args)
        return f(*args)


def row_ranges(loop: Any) -> list[int]:
    """How many row ranges each split of a native loop's variants runs (none: one loop)."""
    return [len(r) for v in loop.variants.values() for r in v.splits.values() if r]


def gradient_loops(f: Any) -> list[Any]:
    """The native loops of ``f``'s compiled gradients: each training forward's, then its
    reverse pass's."""
    return [v for cg in f.__dict__.get("_gradient_cache", {}).values()
            for fn in (cg.forward, cg.backward)
            for k, v in fn.__globals__.items() if k.startswith("_loop")]


def assert_close_scaled(got: Any, want: Any, dtype: Any) -> None:
    """Arrays equal within rounding, relative to each array's largest magnitude (a weight's
    gradient sums every step's and row's products, float32 ones in another order)."""
    tol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-10
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, np.abs(w).max()))


def trains_over_row_ranges(monkeypatch: Any, fn: Any, args: tuple, threads: int,
                           dtype: Any, calls: int = 2) -> Any:
    """``fn``'s outputs and gradients (for a random cotangent) with its loops as Python and,
    ``calls`` times, with native loops over ``threads`` row ranges (``RNNSCRIPT_LOOP_THREADS``,
    left set): each call equal to the Python loops' (``assert_close_scaled``). Returns the
    compiled function, whose ``gradient_loops`` the caller inspects."""
    from script import script, vjp

    def train(f: Any) -> tuple[Any, Any]:
        out, back = vjp(f, *args)
        rng = np.random.default_rng(0)
        return out, back(tuple(rng.standard_normal(o.shape).astype(o.dtype) for o in out))

    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want_out, want_grads = train(script(fn))
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", str(threads))
    f = script(fn)
    for _ in range(calls):
        out, grads = train(f)
        assert_close_scaled(out, want_out, dtype)
        assert_close_scaled(grads, want_grads, dtype)
    return f


def line_of(fn: Callable[..., Any], text: str) -> int:
    """The line number of the first line of ``fn``'s source that holds ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)
