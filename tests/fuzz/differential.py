"""Differential checks: a generated program, compiled, must compute what its plain Python computes.

``check_program(program, seed)`` imports the generated source from a real file (the frontend reads
source with ``inspect``), runs ``python_fn`` on random arguments, then the compiled function with
the full pipeline and the fuser, with each optional pass disabled in turn and with fusion off. The
failure message names the configuration, so a wrong answer points at the pass that produced it.
With the full pipeline it also checks that the caller owns the result (``assert_owned``): memory
shared as in plain Python, and a mutated result not seen by the next call.
``check_gradients`` compares ``vjp`` with central finite differences of the eager function.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import fuser
import ir
import passes
from script import ScriptError, script, vjp
from script.runtime.function import ScriptFunction
from tests.fuzz.program_types import Program

_MODULE_DIR = Path(tempfile.mkdtemp(prefix="rnnscript_fuzz_"))
"""Generated modules live here for the whole run, so ``inspect.getsource`` can read them back."""

TOLERANCE = {"float64": 1e-9, "float32": 1e-5}

KNOWN_BUGS: dict[str, str] = {
    "the static type is Double(), but it computed dtype float32, shape () where Double() was "
    "expected": "tests/regressions/test_number_list_items_of_two_dtypes.py",
}
"""Reported bugs in code under active development, by a phrase of their error message, with the
strict-xfail regression test that pins each one. A generated program that hits one of them is
counted in ``KNOWN_HITS`` and passes, so the fuzz tests keep checking everything else; delete the
entry when its regression test starts to pass (it then fails as XPASS)."""

KNOWN_HITS: dict[str, int] = {}


class KnownBug(Exception):
    """A failure matching ``KNOWN_BUGS``."""


def _known(message: str) -> str | None:
    for phrase, test in KNOWN_BUGS.items():
        if phrase in message:
            KNOWN_HITS[test] = KNOWN_HITS.get(test, 0) + 1
            return test
    return None
"""Relative tolerance per program dtype (scaled by the largest expected magnitude)."""


def optional_passes() -> list[str]:
    """The pipeline passes that may be switched off (inlining is required by the executor)."""
    names = dict.fromkeys(passes.STANDARD_PIPELINE.split(","))
    return [n for n in names if n != "inline"]


def configurations() -> list[str]:
    """Every configuration a program runs under: the default, each pass off, fusion off, and
    ``row-ranges`` (native loops whose steps are independent across batch rows run as two
    ranges of rows, however few: the generated arrays have at most 4)."""
    return ["pipeline", *(f"no-{name}" for name in optional_passes()), "no-fuser", "row-ranges"]


@contextlib.contextmanager
def row_ranges() -> Iterator[None]:
    """Loops split by batch rows run as two ranges of at least one row each."""
    from fuser.cpu.loop import ranges

    saved = os.environ.get("RNNSCRIPT_LOOP_THREADS"), ranges.MIN_ROWS
    os.environ["RNNSCRIPT_LOOP_THREADS"], ranges.MIN_ROWS = "2", 1
    try:
        yield
    finally:
        if saved[0] is None:
            del os.environ["RNNSCRIPT_LOOP_THREADS"]
        else:
            os.environ["RNNSCRIPT_LOOP_THREADS"] = saved[0]
        ranges.MIN_ROWS = saved[1]


@dataclass
class Outcome:
    """A call's result, or the exception type it raised."""

    value: Any = None
    error: type[BaseException] | None = None
    message: str = ""


def load(program: Program) -> Any:
    """Write the program to its own file and import it; returns the module."""
    digest = hashlib.sha1(program.source.encode()).hexdigest()[:16]
    name = f"rnnscript_fuzz_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    path = _MODULE_DIR / f"{name}.py"
    path.write_text(program.source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def unload(program: Program) -> None:
    """Forget a generated module (long runs import thousands)."""
    digest = hashlib.sha1(program.source.encode()).hexdigest()[:16]
    sys.modules.pop(f"rnnscript_fuzz_{digest}", None)


def call(fn: Any, args: tuple) -> Outcome:
    with np.errstate(all="ignore"):
        try:
            return Outcome(fn(*args))
        except ScriptError:
            raise  # the compiler rejecting a well-typed program is a failure, not an outcome
        except Exception as e:  # noqa: BLE001 -- any exception type must match the eager one
            return Outcome(error=type(e), message=str(e))


def assert_same(got: Any, want: Any, rtol: float, where: str = "result") -> None:
    """Equal structure, types, dtypes and shapes; floats within ``rtol``, NaNs in the same
    places; ints and bools exactly."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
        assert len(got) == len(want), f"{where}: length {len(got)} != {len(want)}"
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, rtol, f"{where}[{k}]")
        return
    if isinstance(want, (bool, int, float)):
        assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.dtype == want_a.dtype, f"{where}: dtype {got_a.dtype} != {want_a.dtype}"
    assert got_a.shape == want_a.shape, f"{where}: shape {got_a.shape} != {want_a.shape}"
    if want_a.dtype.kind not in "fc":
        assert np.array_equal(got_a, want_a), f"{where}: {got_a} != {want_a}"
        return
    assert np.array_equal(np.isnan(got_a), np.isnan(want_a)), f"{where}: NaNs differ"
    finite = want_a[np.isfinite(want_a)]
    scale = max(1.0, float(np.max(np.abs(finite)))) if finite.size else 1.0
    np.testing.assert_allclose(got_a, want_a, rtol=rtol, atol=rtol * scale, equal_nan=True,
                               err_msg=where)


def _fresh(base: ScriptFunction) -> ScriptFunction:
    """A new ScriptFunction (empty specialization cache) sharing ``base``'s frontend result, so
    each configuration compiles its own specialization without re-running the frontend."""
    f = ScriptFunction(base.python_fn)
    f._definition = base.definition
    f._nargs = base._nargs
    return f


def run_configuration(base: ScriptFunction, config: str, args: tuple,
                      f: ScriptFunction | None = None) -> Outcome:
    """Call a fresh copy of ``base`` (or ``f``) under one configuration of the pipeline."""
    f = f or _fresh(base)
    if config == "no-fuser":
        with fuser.disabled():
            return call(f, args)
    if config == "row-ranges":
        with row_ranges():
            return call(f, args)
    if config.startswith("no-"):
        with passes.disable(config[3:]):
            return call(f, args)
    return call(f, args)


def compare(got: Outcome, want: Outcome, rtol: float, config: str, program: Program,
            seed: int) -> None:
    where = f"[{config}] seed={seed}\n{program.source}"
    if want.error is not None:
        assert got.error is want.error, (
            f"python raised {want.error.__name__}({want.message}) but the compiled function "
            f"{'returned' if got.error is None else 'raised ' + got.error.__name__}: {where}")
        return
    if got.error is not None and _known(got.message):
        raise KnownBug(got.message)
    assert got.error is None, f"compiled raised {got.error.__name__}: {got.message}\n{where}"
    try:
        assert_same(got.value, want.value, rtol)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{where}") from None


def check_program(program: Program, seed: int, configs: list[str] | None = None) -> None:
    """Compile ``program`` and compare it with ``python_fn`` under every configuration."""
    module = load(program)
    fn = getattr(module, program.entry)
    args = program.make_args(seed)
    reset_globals(module, program)
    want = call(fn, args)
    base = script(fn)
    try:
        base.definition  # noqa: B018 -- runs the frontend
    except ScriptError as e:
        if _known(str(e)):
            raise KnownBug(str(e)) from None
        raise AssertionError(f"the frontend rejected a generated program: {e}\n"
                             f"{program.source}") from None
    rtol = TOLERANCE[program.dtype]
    for config in configs or configurations():
        f = _fresh(base)
        reset_globals(module, program)
        compiled_args = program.make_args(seed)
        got = run_configuration(base, config, compiled_args, f)
        compare(got, want, rtol, config, program, seed)
        if config == "pipeline" and got.error is None:
            _assert_round_trip(f.graph_for(*program.make_args(seed)), program)
            assert_owned(f, program, seed, (got.value, compiled_args), (want.value, args), rtol,
                         global_arrays(module))
        if program.updates:
            # the same compiled function, called again after the globals changed in place
            for update in program.updates:
                exec(update, module.__dict__)  # noqa: S102 -- generated statements
            again = call(fn, program.make_args(seed))
            got = run_configuration(base, config, program.make_args(seed), f)
            compare(got, again, rtol, f"{config}, after {'; '.join(program.updates)}", program,
                    seed)


def reset_globals(module: Any, program: Program) -> None:
    """Put the module's global arrays back to their first values, in place (the arrays a
    compiled function may hold stay the same objects)."""
    for reset in program.resets:
        exec(reset, module.__dict__)  # noqa: S102 -- generated statements


def global_arrays(module: Any) -> list[np.ndarray]:
    """The arrays a generated module keeps at module level (``G0``)."""
    return [v for v in vars(module).values() if isinstance(v, np.ndarray)]


def arrays_in(tree: Any) -> list[np.ndarray]:
    """The arrays of a result or argument tuple (tuples, lists, dict values), in order."""
    if isinstance(tree, np.ndarray):
        return [tree]
    if isinstance(tree, dict):
        tree = list(tree.values())
    if isinstance(tree, (tuple, list)):
        return [a for item in tree for a in arrays_in(item)]
    return []


def assert_owned(f: ScriptFunction, program: Program, seed: int, got: Any, want: Any,
                 rtol: float, globals_: Sequence[np.ndarray] = ()) -> None:
    """The caller owns what the compiled function returns, as with plain Python: the arrays of
    ``got`` (result, arguments after the call) share memory exactly where ``want``'s do, and
    mutating the result changes nothing a second call returns. A result that is a global
    array's memory (``return G0[::2]``) is the global itself, in Python too: writing into it
    changes the next call's result there as well, so it is left alone."""
    where = f"seed={seed}\n{program.source}"
    got_a, want_a = arrays_in(got), arrays_in(want)
    assert len(got_a) == len(want_a), f"result and arguments hold other arrays: {where}"
    for i in range(len(got_a)):
        for j in range(i):
            shared = np.shares_memory(got_a[i], got_a[j])
            assert shared == np.shares_memory(want_a[i], want_a[j]), (
                f"arrays {j} and {i} of (result, arguments) {'' if shared else 'do not '}share "
                f"memory, unlike plain Python's: {where}")
    for a in arrays_in(got[0]):
        if a.flags.writeable and a.size and not any(np.shares_memory(a, g) for g in globals_):
            a[...] = 7  # the caller's to change
    again = call(f, program.make_args(seed))
    assert again.error is None, f"a second call raised {again.error}: {where}"
    try:
        assert_same(again.value, want[0], rtol, "second call")
    except AssertionError as e:
        raise AssertionError(f"mutating a result changed the next call's: {e}\n{where}") from None


def _assert_round_trip(graph: Any, program: Program) -> None:
    """The optimized graph (fusion groups included) prints, parses and prints identically."""
    text = str(graph)
    again = str(ir.parse(text))
    assert again == text, f"IR text does not round-trip:\n{text}\n---\n{again}\n{program.source}"


GRADIENT_RTOL = 1e-5
"""Relative tolerance of a gradient element against a finite-difference estimate."""

STEPS = (1e-6, 1e-4)
"""Finite-difference steps, relative to each input element's magnitude. The small one sees no
curvature but loses digits to rounding where outputs are large; the large one the reverse. An
element passes when ``vjp`` agrees with either estimate, and fails only when it agrees with
neither while the two estimates agree with each other (so the function is smooth there and the
estimate can be trusted). Elements whose estimates disagree (a kink or a jump within the step,
or rounding noise) are left unjudged and counted."""

MIN_JUDGED = 0.5
"""Fraction of a program's gradient elements that must be judged for the program to count as
compared (``check_gradients`` returns ``"unjudged"`` otherwise)."""

EPS = float(np.finfo(np.float64).eps)


def leaves(value: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """The float arrays inside an argument or output (tuples, lists and dicts walked), with
    the path of keys that reaches each."""
    if isinstance(value, (tuple, list)):
        return [leaf for k, v in enumerate(value) for leaf in leaves(v, path + (k,))]
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in leaves(v, path + (k,))]
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return [(path, value)]
    return []


def _get(value: Any, path: tuple) -> Any:
    for key in path:
        if value is None:
            return None
        value = value[key]
    return value


def _replace(value: Any, path: tuple, new: Any) -> Any:
    """A copy of the nested ``value`` with the leaf at ``path`` replaced (containers copied,
    so the caller's arguments are never mutated)."""
    if not path:
        return new
    key, rest = path[0], path[1:]
    if isinstance(value, tuple):
        return value[:key] + (_replace(value[key], rest, new),) + value[key + 1:]
    copy = list(value) if isinstance(value, list) else dict(value)
    copy[key] = _replace(value[key], rest, new)
    return copy


def _inner(a: Any, b: Any) -> float:
    """<a, b> summed over every leaf (``None`` cotangents count as zero)."""
    if a is None:
        return 0.0
    if isinstance(a, (tuple, list)):
        return sum(_inner(x, y) for x, y in zip(a, b))
    return float(np.sum(np.asarray(a) * np.asarray(b)))


def _magnitude(a: Any, b: Any) -> float:
    """sum |a| * |b| over every leaf: the size of the terms ``_inner`` adds up, which bounds the
    rounding error of one evaluation of <ct, f(x)>."""
    if a is None:
        return 0.0
    if isinstance(a, (tuple, list)):
        return sum(_magnitude(x, y) for x, y in zip(a, b))
    return float(np.sum(np.abs(np.asarray(a) * np.asarray(b))))


def _differentiable(out: Any) -> bool:
    return isinstance(out, np.ndarray) and out.dtype.kind == "f"


def cotangent(out: Any, rng: np.random.Generator) -> Any:
    """A random cotangent for every differentiable output (float arrays, inside tuples and
    lists too); ``None`` for the others (ints, bools, Python floats: they carry no gradient)."""
    if isinstance(out, (tuple, list)):
        return type(out)(cotangent(o, rng) for o in out)
    return rng.standard_normal(out.shape) if _differentiable(out) else None


@dataclass
class Estimate:
    """Central-difference estimates of one argument leaf's gradient at each of ``STEPS``, and
    how far each may be off through rounding alone."""

    values: list[np.ndarray]
    noise: list[np.ndarray]


def numerical_gradient(fn: Any, args: tuple, k: int, path: tuple, ct: Any,
                       steps: tuple[float, ...] = STEPS) -> Estimate:
    """d<ct, fn(args)>/d args[k][path] by central differences, at each relative step.

    The step for an element is ``step * max(1, |x|)``; the rounding bound of a difference is
    ``64 * eps * sum|ct * f| / step`` (the 64 covers the rounding of the operations that
    computed ``f``, beyond the last one).
    """
    x = _get(args[k], path)
    values = [np.zeros_like(x) for _ in steps]
    noise = [np.zeros_like(x) for _ in steps]
    for idx in np.ndindex(x.shape):
        scale = max(1.0, abs(float(x[idx])))
        for s, step in enumerate(steps):
            h = step * scale
            sums, sizes = [], []
            for sign in (1.0, -1.0):
                moved = x.copy()
                moved[idx] += sign * h
                out = fn(*args[:k], _replace(args[k], path, moved), *args[k + 1:])
                sums.append(_inner(ct, out))
                sizes.append(_magnitude(ct, out))
            values[s][idx] = (sums[0] - sums[1]) / (2 * h)
            noise[s][idx] = 64 * EPS * max(sizes) / h
    return Estimate(values, noise)


def _agree(a: np.ndarray, b: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Elementwise: ``a`` and ``b`` agree within ``GRADIENT_RTOL`` plus the rounding bound."""
    tol = GRADIENT_RTOL * np.maximum(np.abs(a), np.abs(b)) + 1e-7 + noise
    with np.errstate(invalid="ignore"):
        return np.abs(a - b) <= tol


def judge(got: np.ndarray, est: Estimate) -> tuple[np.ndarray, np.ndarray]:
    """(wrong, unjudged) masks: an element is wrong when ``got`` agrees with no estimate while
    the estimates agree with each other; unjudged when no estimate agrees with ``got`` and
    the estimates disagree."""
    agrees = np.zeros(got.shape, bool)
    for value, noise in zip(est.values, est.noise):
        agrees |= _agree(got, value, noise)
    consistent = np.ones(got.shape, bool)
    for value, noise in zip(est.values[1:], est.noise[1:]):
        consistent &= _agree(est.values[0], value, np.maximum(est.noise[0], noise))
    return ~agrees & consistent, ~agrees & ~consistent


def _assert_backward_owns_nothing_of_the_caller(out: Any, backward: Any, ct: Any, grads: Any,
                                                 args: tuple, where: str) -> None:
    """Writing into ``vjp``'s outputs (``tanh(x)`` is also saved for its gradient; outputs that
    are the memory of ``args``, the arguments and global arrays, as in Python, are left alone)
    changes no gradient, a second ``backward`` leaves the first one's gradients alone, and no
    gradient the caller may write is the memory of a cotangent it passed."""
    cts = arrays_in(ct)
    for g in arrays_in(grads):
        assert not (g.flags.writeable and any(np.shares_memory(g, c) for c in cts)), (
            f"a gradient is the memory of a cotangent\n{where}")
    kept = [g.copy() for g in arrays_in(grads)]
    inputs = arrays_in(args)
    for a in arrays_in(out):
        if a.flags.writeable and a.size and not any(np.shares_memory(a, x) for x in inputs):
            a[...] = 7.0
    again = backward(ct)
    for g, g2, k in zip(arrays_in(grads), arrays_in(again), kept):
        np.testing.assert_array_equal(g2, k, err_msg=f"gradient after writing into the outputs\n"
                                                     f"{where}")
        np.testing.assert_array_equal(g, k, err_msg=f"gradient after a second backward\n{where}")


def check_gradients(program: Program, seed: int, random_argnums: bool = False) -> str:
    """``vjp`` of a float64 program against finite differences of ``python_fn``.

    With ``random_argnums``, ``vjp`` differentiates a random non-empty subset of the arguments
    (drawn from ``seed``): those gradients are checked and the others must be None.

    Every float array output (in tuples and lists too) gets a random cotangent; every float
    array inside the arguments (dict and list arguments walked) is perturbed, and ``vjp``'s
    gradient at the same place (``None`` counting as zeros) must match. Raises AssertionError on
    a wrong gradient. Otherwise returns why the program was or was not compared: ``"compared"``,
    ``"raises"`` (the eager function raises), ``"not-finite"`` (an output is inf or NaN),
    ``"no-gradient"`` (no float output or input), ``"refused"`` (the autodiff declared it not
    differentiable) or ``"unjudged"`` (under ``MIN_JUDGED`` of the elements could be judged).
    """
    module = load(program)
    fn = getattr(module, program.entry)
    args = program.make_args(seed)
    reset_globals(module, program)
    with np.errstate(all="ignore"):
        try:
            want = fn(*program.make_args(seed))
        except Exception:  # noqa: BLE001 -- a program that raises has no gradient to check
            return "raises"
        if not all(np.all(np.isfinite(v)) for _, v in leaves(want)):
            return "not-finite"
        argnums = _random_argnums(len(args), seed) if random_argnums else None
        inputs = [(k, path, x) for k, a in enumerate(args) for path, x in leaves(a)]
        if not leaves(want) or not inputs:
            return "no-gradient"
        try:
            vjp_args = program.make_args(seed)
            out, backward = vjp(script(fn), *vjp_args, argnums=argnums)
        except (ir.IRError, ScriptError) as e:
            if "cannot differentiate" in str(e):
                return "refused"
            if _known(str(e)):
                raise KnownBug(str(e)) from None
            raise
        ct = cotangent(out, np.random.default_rng(seed))
        ct_before = [c.copy() for c in arrays_in(ct)]
        grads = backward(ct)
        for c, before in zip(arrays_in(ct), ct_before):  # numpy's backward changes no input
            np.testing.assert_array_equal(c, before, err_msg="backward changed its cotangent\n"
                                          f"seed={seed}\n{program.source}")
        if random_argnums:  # the split into differentiable regions is a well-formed graph
            script(fn).vjp_graphs_for(*program.make_args(seed), argnums=argnums,
                                      regions=True)[0].verify()
        # the module's global arrays are the caller's too: an output that is one's memory (a
        # view, as in Python) is left alone, or the finite differences would see the write
        owned = (*vjp_args, *global_arrays(module))
        _assert_backward_owns_nothing_of_the_caller(out, backward, ct, grads, owned,
                                                     f"seed={seed}\n{program.source}")
        judged = total = 0
        for k, path, x in inputs:
            if argnums is not None and k not in argnums:
                assert grads[k] is None, f"argument {k} is not in argnums {argnums}: {grads[k]}"
                continue
            est = numerical_gradient(fn, args, k, path, ct)
            got = _gradient_at(grads[k], path, x)
            wrong, unjudged = judge(got, est)
            assert not wrong.any(), (
                f"gradient of argument {k}{''.join(f'[{p!r}]' for p in path)} is wrong at "
                f"{np.argwhere(wrong).tolist()}:\nvjp:\n{got}\nfinite differences (steps "
                f"{STEPS}):\n{est.values[0]}\n{est.values[1]}\nseed={seed}\n{program.source}")
            total += x.size
            judged += x.size - int(unjudged.sum())
    return "compared" if judged >= MIN_JUDGED * total else "unjudged"


def _random_argnums(nargs: int, seed: int) -> tuple[int, ...]:
    """A random non-empty subset of ``range(nargs)``, in order."""
    rng = np.random.default_rng(seed + 1)
    chosen = tuple(k for k in range(nargs) if rng.random() < 0.5)
    return chosen or (int(rng.integers(nargs)),)


def _gradient_at(grad: Any, path: tuple, like: np.ndarray) -> np.ndarray:
    """``vjp``'s gradient at ``path`` inside one argument's gradient; zeros where it is None
    (a missing key or item is a wrong gradient, not a pass)."""
    try:
        g = _get(grad, path)
    except (KeyError, IndexError, TypeError) as e:
        raise AssertionError(f"vjp returned no gradient at {path}: {e!r} in {grad!r}") from None
    return np.zeros_like(like) if g is None else np.asarray(g)
