"""A generic gradient checker in the style of JAX's ``check_grads``.

``check_vjp(f, args)`` draws a random cotangent for ``f``'s outputs, computes the gradients of every
float-array argument (nested in tuples too) with the scripted ``vjp`` -- through the optimized,
fused backward and through the unoptimized one -- and compares each against central finite
differences of ``<cotangent, f(args)>``, taken with the eager function (``python_fn``) and with the
compiled one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from script import script, vjp
from script.frontend.object_args import is_plain_object
from script.runtime.autodiff import compile_gradient, run_vjp
from script.runtime.function import ScriptFunction


def leaves(tree: Any) -> list[Any]:
    """The arrays and numbers of a nested tuple/list, in order."""
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in leaves(item)]
    return [tree]


def random_like(tree: Any, rng: np.random.Generator) -> Any:
    """A random cotangent with the structure, shapes and dtypes of ``tree``."""
    if isinstance(tree, (tuple, list)):
        return tuple(random_like(item, rng) for item in tree)
    if isinstance(tree, (int, np.integer)):  # an integer output (a counter) has no derivative
        return type(tree)(0)
    dtype = getattr(tree, "dtype", np.float64)
    return np.asarray(rng.standard_normal(np.shape(tree)), dtype=dtype)


def inner(a: Any, b: Any) -> float:
    return float(sum(np.sum(np.asarray(x, dtype=np.float64) * np.asarray(y, dtype=np.float64))
                     for x, y in zip(leaves(a), leaves(b))))


def float_arrays(args: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, array) for every float array inside the (nested) arguments: tuples, lists and
    dicts (a path holds a dict's keys)."""
    if isinstance(args, (tuple, list)):
        for k, item in enumerate(args):
            yield from float_arrays(item, path + (k,))
    elif isinstance(args, dict):
        for key, item in args.items():
            yield from float_arrays(item, path + (key,))
    elif isinstance(args, np.ndarray) and args.dtype.kind == "f":
        yield path, args


def replace(args: Any, path: tuple[int, ...], value: Any) -> Any:
    if not path:
        return value
    if isinstance(args, dict):
        return {k: replace(v, path[1:], value) if k == path[0] else v for k, v in args.items()}
    items = list(args)
    items[path[0]] = replace(items[path[0]], path[1:], value)
    return tuple(items) if isinstance(args, tuple) else items


def get(tree: Any, path: tuple[int, ...]) -> Any:
    for k in path:
        tree = tree[k]
    return tree


def numerical_grad(fn: Callable[..., Any], args: tuple[Any, ...], ct: Any,
                   path: tuple[int, ...], eps: float) -> np.ndarray:
    """d<ct, fn(args)>/d(args at path) by central differences."""
    x = get(args, path)
    grad = np.zeros_like(x, dtype=np.float64)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        up = inner(ct, fn(*replace(args, path, plus)))
        down = inner(ct, fn(*replace(args, path, minus)))
        grad[idx] = (up - down) / (2 * eps)
    return grad


def check_vjp(f: Any, args: tuple[Any, ...], *, eps: float = 1e-6, rtol: float = 1e-6,
              atol: float = 1e-8, seed: int = 0, before_call: Callable[[], None] | None = None,
              argnums: Sequence[int] | None = None) -> None:
    """Assert that ``vjp`` gradients of ``f`` at ``args`` equal finite differences.

    ``before_call`` runs before every evaluation (e.g. to reseed dropout). With ``argnums``, only
    those arguments are differentiated: their gradients are checked, the others must be None.
    Raises AssertionError
    naming the argument and the path (optimized / unoptimized backward, eager / compiled forward).
    """
    sf = f if isinstance(f, ScriptFunction) else script(f)
    hook = before_call or (lambda: None)

    def call(fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*a: Any) -> Any:
            hook()
            return fn(*a)
        return run

    rng = np.random.default_rng(seed)
    hook()
    out = sf(*args)
    ct = random_like(out, rng)
    analytic = {}
    for optimize in (True, False):
        hook()
        bound = sf._bind(tuple(args), {})  # the arguments, then the global arrays read
        wrt = None if argnums is None else frozenset(k % len(args) for k in argnums)
        _, backward = run_vjp(compile_gradient(sf, bound, optimize=optimize, wrt=wrt), bound)
        analytic["optimized" if optimize else "unoptimized"] = backward(ct)[:len(args)]
    if any(is_plain_object(a) or _is_object_sequence(a) for a in args):
        check_object_vjp(sf, args, ct, call, eps=eps, rtol=rtol, atol=atol, argnums=argnums)
    for path, _ in float_arrays(args):
        if wrt is not None and path[0] not in wrt:
            for name, grads in analytic.items():
                assert grads[path[0]] is None, f"argument {path}: not in argnums ({name})"
            continue
        for fwd_name, fwd in (("eager", sf.python_fn), ("compiled", sf)):
            want = numerical_grad(call(fwd), args, ct, path, eps)
            for name, grads in analytic.items():
                got = get(grads, path)
                assert got is not None, f"argument {path}: no gradient ({name})"
                np.testing.assert_allclose(
                    got, want, rtol=rtol, atol=atol,
                    err_msg=f"argument {path}: {name} backward vs {fwd_name} finite differences")


def object_float_arrays(obj: Any, path: tuple[Any, ...] = ()
                        ) -> Iterator[tuple[tuple[Any, ...], np.ndarray]]:
    """(path, array) for every float array held by a plain object: in its attributes, nested
    objects, and the lists and dicts they hold (a path step is an attribute name, or ``[key]``
    as a one-item list for an item)."""
    items = vars(obj).items() if is_plain_object(obj) else \
        obj.items() if isinstance(obj, dict) else enumerate(obj)
    for name, value in items:
        step = name if is_plain_object(obj) else [name]
        if is_plain_object(value) or isinstance(value, (list, dict)) or \
                _is_object_sequence(value):
            yield from object_float_arrays(value, path + (step,))
        elif isinstance(value, np.ndarray) and value.dtype.kind == "f":
            yield path + (step,), value


def _is_object_sequence(value: Any) -> bool:
    """A list or tuple of plain objects (an argument ``layers: List[Layer]``)."""
    return isinstance(value, (list, tuple)) and bool(value) and \
        all(is_plain_object(v) for v in value)


def _gradient_type_matches(got: Any, arg: Any) -> bool:
    """The gradient of an object is an object of its class; of a list of objects, a list (tuple)
    of such gradients."""
    if _is_object_sequence(arg):
        return type(got) is type(arg) and len(got) == len(arg) and \
            all(_gradient_type_matches(g, a) for g, a in zip(got, arg))
    return type(got) is type(arg)


def _step(tree: Any, step: Any) -> Any:
    return tree[step[0]] if isinstance(step, list) else getattr(tree, step, None)


def check_object_vjp(sf: ScriptFunction, args: tuple[Any, ...], ct: Any,
                     call: Callable[[Callable[..., Any]], Callable[..., Any]], *, eps: float,
                     rtol: float, atol: float, argnums: Sequence[int] | None = None) -> None:
    """The public ``vjp``'s gradient of each plain object argument (an object of its class; a
    list or tuple of them for a list or tuple of objects) against finite differences of every
    float array it holds: an attribute the gradient object lacks must have a zero derivative."""
    _, backward = vjp(sf, *args, argnums=argnums)
    grads = backward(ct)
    for k, obj in enumerate(args):
        if not is_plain_object(obj) and not _is_object_sequence(obj):
            continue
        if argnums is not None and k % len(args) not in {n % len(args) for n in argnums}:
            assert grads[k] is None, f"argument {k}: not in argnums"
            continue
        assert _gradient_type_matches(grads[k], obj), \
            f"argument {k}: gradient of type {type(grads[k])}"
        for path, _ in object_float_arrays(obj):
            got: Any = grads[k]
            for step in path:
                got = None if got is None else _step(got, step)
            for fwd_name, fwd in (("eager", sf.python_fn), ("compiled", sf)):
                want = _object_numerical_grad(call(fwd), args, ct, k, path, eps)
                where = f"argument {k} at {path} vs {fwd_name} finite differences"
                if got is None:
                    np.testing.assert_allclose(want, 0.0, atol=atol, err_msg=where + " (unset)")
                    continue
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=where)


def _object_numerical_grad(fn: Callable[..., Any], args: tuple[Any, ...], ct: Any, k: int,
                           path: tuple[Any, ...], eps: float) -> np.ndarray:
    """d<ct, fn(args)>/d(the array at ``path`` in args[k]) by central differences (the array
    replaced in its owner, then restored)."""
    owner = args[k]
    for step in path[:-1]:
        owner = _step(owner, step)
    last = path[-1]

    def put(value: Any) -> None:
        if isinstance(last, list):
            owner[last[0]] = value
        else:
            setattr(owner, last, value)

    x = _step(owner, last)
    grad = np.zeros_like(x, dtype=np.float64)
    try:
        for idx in np.ndindex(x.shape):
            values = []
            for step in (eps, -eps):
                moved = x.copy()
                moved[idx] += step
                put(moved)
                values.append(inner(ct, fn(*args)))
            grad[idx] = (values[0] - values[1]) / (2 * eps)
    finally:
        put(x)
    return grad
