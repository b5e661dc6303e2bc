"""Gradients as functions: ``value_and_grad`` and ``grad`` over ``vjp``
(``script.runtime.autodiff``), ``grad`` differentiable again (``GradFunction``), and arguments
given by keyword bound to positions."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import ir
from ir.core import Graph, clone_node
from script.errors import Origin, SignatureError, at_def
from script.frontend.definition import FunctionDef
from script.frontend.signature import type_of
from script.module import Module
from script.runtime.autodiff import (
    _as_script,
    _name_of,
    _positions,
    _py_name,
    compile_gradient,
    vjp,
)
from script.runtime.bound_method import BoundScriptMethod
from script.runtime.function import ScriptFunction


def value_and_grad(f: Any, argnums: int | Sequence[int] = 0, has_aux: bool = False
                   ) -> Callable[..., tuple[Any, Any]]:
    """``g(*args) -> (value, grads)`` for a function with one scalar output (a 0-d array or a
    number); ``grads`` is the gradient of argument ``argnums``, or a tuple for a tuple of them.
    ``has_aux``: the function returns ``(value, aux)`` (a cache, a dict of states: anything),
    ``aux`` is not differentiated and ``g`` returns ``((value, aux), grads)``, as JAX's.
    For a ``Module``, parameter gradients also accumulate into ``.grad`` (see ``vjp``)."""
    sf = f if isinstance(f, (Module, GradFunction, BoundScriptMethod)) else _as_script(f)

    def run(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        outputs, backward = vjp(sf, *_positional(sf, args, kwargs), argnums=argnums)
        value = _scalar_output(sf, outputs, has_aux, "value_and_grad")
        grads = backward((np.ones_like(value), None) if has_aux else np.ones_like(value))
        for k in [argnums] if isinstance(argnums, int) else argnums:
            if not -len(grads) <= k < len(grads):
                raise SignatureError(f"value_and_grad: argnums {k} is out of range for a "
                                     f"function of {len(grads)} arguments")
        chosen = grads[argnums] if isinstance(argnums, int) else tuple(grads[k] for k in argnums)
        return (tuple(outputs) if has_aux else value), chosen

    return run


def _scalar_output(f: Any, outputs: Any, has_aux: bool, what: str) -> Any:
    """The one scalar a function differentiated by ``what`` returns (the first of its pair
    ``(value, aux)`` with ``has_aux``); ScriptError at its definition for anything else."""
    origin = f.origin() if isinstance(f, ScriptFunction) else Origin(_name_of(f))
    if has_aux:
        if not isinstance(outputs, tuple) or len(outputs) != 2:
            raise at_def(origin, f"{what}(has_aux=True) needs a function returning a pair "
                         f"(value, aux), got {type(outputs).__name__}")
        outputs = outputs[0]
    if getattr(outputs, "shape", ()) != () or isinstance(outputs, (tuple, list, dict)):
        hint = " (a function returning (value, aux): pass has_aux=True)" if isinstance(
            outputs, tuple) and len(outputs) == 2 and not has_aux else ""
        raise at_def(origin, f"{what} needs a function with one scalar output, got "
                     f"{type(outputs).__name__} of shape {getattr(outputs, 'shape', None)}"
                     f"{hint}")
    return outputs


def _positional(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``args`` and ``kwargs`` as the positional arguments of ``f`` (a scripted function, the
    gradient of one or a module's ``forward``), defaults filled in for those before the last
    given: ``value_and_grad(f)(x, W, scale=0.5)``; ``argnums`` counts these positions."""
    if not kwargs:
        return args
    target = f
    while isinstance(target, GradFunction):
        target = target.f
    fn = target.forward if isinstance(target, Module) else getattr(target, "python_fn", target)
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise SignatureError(f"{_name_of(target)}(): {exc}") from None
    bound.apply_defaults()
    return tuple(bound.args)


class GradFunction:
    """``grad(f, argnums)``: a callable computing the gradient of ``f`` (one scalar output) with
    respect to argument(s) ``argnums``, that can itself be differentiated: ``vjp``,
    ``value_and_grad`` and ``grad`` accept it, giving second (and higher) derivatives.

    For each input signature, the gradient is an IR graph: ``f``'s forward, a ones seed and ``f``'s
    backward, built from the unoptimized forward/backward pair of that signature. Differentiating
    it again runs the VJP rules over the backward's own ops (elementwise ops, matmuls, reductions,
    ``sum_to`` / ``broadcast_to``) and its loops; a loop whose reverse writes the cotangents of
    row reads into a buffer in place (``write_slot``) is refused a second time (a ScriptError,
    ``passes.autodiff.walk``), as that write has no gradient rule.
    """

    def __init__(self, f: Any, argnums: int | Sequence[int] = 0):
        self.f = f if isinstance(f, GradFunction) else _as_script(f)
        self.argnums = argnums
        self._functions: dict[Any, ScriptFunction] = {}
        self.__name__ = f"grad_{_py_name(self.f) if isinstance(self.f, ScriptFunction) else 'f'}"

    def function_for(self, args: Sequence[Any]) -> ScriptFunction:
        """The gradient as a ``ScriptFunction`` specialized to arguments like ``args`` (and to
        the globals ``f`` reads as they are now)."""
        inner = self.f.function_for(args) if isinstance(self.f, GradFunction) else self.f
        full = inner._bind(tuple(args), {})
        key = inner.call_key(full)
        found = self._functions.get(key)
        if found is None or found[0] is not inner.definition:  # a global scalar changed
            found = self._functions[key] = (inner.definition,
                                            _gradient_function(self, inner, full))
        return found[1]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = _positional(self, args, kwargs)
        if isinstance(self.f, ScriptFunction) and (self.f._object_params()
                                                    or any(map(_holds_container, args))):
            return self._vjp_gradient(args)
        return self.function_for(args)(*args)

    def _vjp_gradient(self, args: tuple[Any, ...]) -> Any:
        """The gradient of a function taking plain objects, lists or dicts: ``vjp``'s, seeded
        with ones (an object argument's is an object of its class); it cannot be differentiated
        again (its graphs take a list or dict as the tuple of its items, which a caller does not
        pass)."""
        value, backward = vjp(self.f, *args, argnums=self.argnums)
        value = _scalar_output(self.f, value, False, "grad")
        grads = backward(np.ones_like(value))
        if isinstance(self.argnums, int):
            return grads[self.argnums]
        return tuple(grads[k] for k in self.argnums)


def grad(f: Any, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Any:
    """The gradient of ``f`` (one scalar output) as a differentiable function (``GradFunction``):
    ``grad(grad(f))(x)`` is the second derivative of a scalar function of a scalar.
    ``has_aux``: ``f`` returns ``(value, aux)`` and the gradient function ``(grads, aux)``, as
    JAX's (that one is not differentiated again)."""
    if isinstance(f, BoundScriptMethod) and not has_aux:  # through vjp (not differentiable)
        plain = value_and_grad(f, argnums)
        return lambda *args, **kwargs: plain(*args, **kwargs)[1]
    if not has_aux:
        return GradFunction(f, argnums)
    both = value_and_grad(f, argnums, has_aux=True)

    def grad_and_aux(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        (_, aux), grads = both(*args, **kwargs)
        return grads, aux
    return grad_and_aux


def _holds_container(arg: Any) -> bool:
    """Whether ``arg`` is a list or a dict, or a tuple holding one."""
    if isinstance(arg, (list, dict)):
        return True
    return isinstance(arg, tuple) and any(map(_holds_container, arg))


def _gradient_function(gf: GradFunction, inner: ScriptFunction, args: tuple[Any, ...]
                       ) -> ScriptFunction:
    """The gradient of ``inner`` for the graph inputs ``args`` (arguments, then globals) as a
    function of the same arguments that reads the same globals."""
    wrt = _positions(gf.argnums, len(inner.definition.arg_names), "grad")
    if inner.definition.object_args:
        raise at_def(inner.origin(), f"grad({inner.definition.name}): the gradient of a "
                     "function with a plain object argument cannot be differentiated again "
                     "(grad of grad, vjp of grad)")
    pair = compile_gradient(inner, args, optimize=False, wrt=wrt).gradient
    if pair.dict_inputs or any(map(_holds_container, args)):
        # the graphs take those dicts and lists as tuples, which a caller does not pass
        raise at_def(inner.origin(), f"grad({inner.definition.name}): a dict or list argument "
                     "cannot be differentiated twice; use vjp or value_and_grad")
    fwd, bwd = pair.forward, pair.backward
    if pair.num_outputs != 1:
        raise at_def(inner.origin(), "grad needs a function with one scalar output")
    g = Graph(gf.__name__)
    vmap = {v: g.add_input(v.type, v.name) for v in fwd.inputs}
    for node in list(fwd.block) + [None] + list(bwd.block):
        if node is None:  # between the two: seed the backward with ones
            out = vmap[fwd.outputs[0]]
            if not isinstance(out.type, ir.TensorType) or out.type.shape not in ((), None):
                raise at_def(inner.origin(), "grad needs a function with one scalar output, "
                             f"got {out.type}")
            seed = g.create("tensor::ones_like", [out, g.constant(None)], [out.type])
            g.block.append(seed)
            vmap.update(zip(bwd.inputs, [seed.output] + [vmap[v] for v in fwd.outputs[1:]]))
            continue
        g.block.append(clone_node(node, g, vmap))
    nums = [gf.argnums] if isinstance(gf.argnums, int) else list(gf.argnums)
    results = [vmap.get(bwd.outputs[k], bwd.outputs[k]) for k in nums]
    if isinstance(gf.argnums, int):
        g.set_outputs(results)
    else:
        tup = g.create("prim::TupleConstruct", results, [ir.TupleType([v.type for v in results])])
        g.block.append(tup)
        g.set_outputs([tup.output])
    d = inner.definition
    types = [type_of(a, t, f"{d.name}(): argument '{n}'")
             for a, t, n in zip(args, d.arg_types, d.arg_names)]
    definition = FunctionDef(gf.__name__, g, list(d.arg_names), types, dict(d.defaults),
                             g.outputs[0].type, d.source, list(d.attr_refs),
                             dtype_args=d.dtype_args)

    def eager(*call_args: Any) -> Any:
        return sf(*call_args)
    eager.__name__ = gf.__name__
    sf = ScriptFunction(eager)
    sf._definition = definition
    sf._nargs = -1 if d.dtype_args else len(d.arg_names)
    return sf


__all__ = ["GradFunction", "grad", "value_and_grad"]
