"""Reverse-mode gradients of scripted functions: ``vjp``, ``value_and_grad``, backward graphs.

For each input signature the function's graph is specialized and cleaned up, differentiated
symbolically (``passes.autodiff``) into an augmented forward graph and a backward graph, both run
through the pipeline and the fuser, and compiled to Python; the pair is cached per signature, like
``ScriptFunction``'s own cache.
"""

from __future__ import annotations

import copy
import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import fuser
import ir
from ir.alias import StorageClasses
from ir.core import Graph
from ir.types import is_subtype
from passes import STANDARD_PIPELINE
from passes.autodiff import Gradient, differentiate, prune_unused_saved, stack_saved_lists
from passes.autodiff.nested_inputs import (
    Layout,
    check_rebuilt_reads,
    count,
    leaves,
    rebuild,
    unroll_reads,
)
from passes.devices import call_device, place_on_call_device
from passes.shape_prop import specialize
from passes.static_ints import bind_static_ints
from script import ops
from script.errors import (
    Origin,
    ScriptError,
    SignatureError,
    reported,
)
from script.frontend.signature import call_key, shared_positions, type_of
from script.module import Module
from script.runtime import instrument
from script.runtime.array_results import arrays_at
from script.runtime.binding import (
    bind_arguments,
    check_devices,
    coerce_numbers,
    input_items,
    input_types,
    static_arguments,
)
from script.runtime.bound_method import BoundScriptMethod
from script.runtime.codegen import generate
from script.runtime.function import ScriptFunction
from script.runtime.nested_args import flatten_nested
from script.runtime.object_grads import object_attribute_positions, object_gradients
from script.runtime.pipelines import (
    BACKWARD_PIPELINE,
    FORWARD_PIPELINE,
    refused_shapes,
    run_pipeline,
)
from script.runtime.script_module import ScriptMethod, ScriptModule


@dataclass(frozen=True)
class CompiledGradient:
    """One signature's augmented forward and backward, optimized and compiled."""

    gradient: Gradient
    """the graphs (``gradient.forward``, ``gradient.backward``) after optimization."""
    forward: Callable[..., Any]
    """runs the forward; returns the original outputs followed by the saved values."""
    backward: Callable[..., Any]
    """takes the output cotangents and the saved values; returns one cotangent per input."""
    name: str = "f"
    """the function's name as its calls are recorded (the profiler's rows, error messages): a
    module's method is named by the module's class, ``LSTM.forward``."""
    shared_outputs: tuple[Any, ...] = ()
    """per output, what of it the saved values may also hold (``ir.alias.Overlap``): that part
    is copied before the caller gets it, so mutating an output cannot change the gradient."""
    nested: tuple[tuple[int, Layout], ...] = ()
    """the arguments holding containers given to the graphs as their arrays, appended after the
    graph inputs in this order (``passes.autodiff.nested_inputs``), with their layouts."""


_lock = threading.RLock()


def compile_gradient(f: ScriptFunction, args: Sequence[Any], optimize: bool = True,
                     wrt: frozenset[int] | None = None) -> CompiledGradient:
    """The forward/backward pair of ``f`` for arguments like ``args`` (cached when optimized).

    ``optimize=False`` skips the pipeline and the fuser on both graphs: the backward then runs
    each rule's ops one by one, as written (the reference the optimized pair is checked against).
    ``wrt`` holds the positions in ``args`` (graph inputs) to differentiate; None: all.
    """
    d = f.definition  # (every list item keyed, at any length: the backward knows each item)
    key = (call_key(tuple(args), d.static_ints, d.trip_ints, containers=d.container_inputs),
           wrt)
    cache = f.__dict__.setdefault("_gradient_cache", {})
    found = cache.get(key) if optimize else None
    if found is not None:
        return found
    with _lock:
        found = cache.get(key) if optimize else None
        if found is None:
            found = _compile(f, tuple(args), optimize, wrt)
            if optimize:
                cache[key] = found
    return found


def _compile(f: ScriptFunction, args: tuple[Any, ...], optimize: bool,
             wrt: frozenset[int] | None = None) -> CompiledGradient:
    graph, nested = _specialized_graph(f, args)
    if nested:  # an argument's arrays are differentiated in its place
        wrt, at = set(range(len(args)) if wrt is None else wrt), len(args)
        for k, layout in nested.items():
            if k in wrt:
                wrt.update(range(at, at + count(layout)))
            at += count(layout)
        wrt = frozenset(wrt - set(nested))
    with reported(f.origin, "differentiating"):
        return _compile_gradient(f, graph, args, optimize, wrt, nested)


def _compile_gradient(f: ScriptFunction, graph: Graph, args: tuple[Any, ...], optimize: bool,
                      wrt: frozenset[int] | None = None, nested: dict[int, Layout] | None = None
                      ) -> CompiledGradient:
    nested = nested or {}
    plain = {k: a for k, a in enumerate(args) if k not in nested}
    grad = differentiate(graph, _list_item_types(f, plain), _dict_item_types(f, plain), wrt)
    # both run on the call's device, though the backward's inputs (cotangents, saved lists)
    # may not say which
    grad.forward.device = grad.backward.device = call_device(graph)
    place_on_call_device(grad.forward)  # (the optimizing pipelines re-propagate; this is for
    place_on_call_device(grad.backward)  # the unoptimized pair, generated as differentiated)
    if optimize:
        optimize_gradient(grad)
    else:
        prune_unused_saved(grad)
    name = _py_name(f)
    forward, _ = generate(grad.forward, name=name + "_forward")
    backward, _ = generate(grad.backward, name=name + "_backward")
    return CompiledGradient(grad, forward, backward, f.definition.name, _shared_with_saved(grad),
                            tuple(nested.items()))


def optimize_gradient(grad: Gradient) -> None:
    """Optimize a differentiated pair in place: the backward's cleanup first, so the saved
    values it no longer reads are dropped from both graphs, a loop's saved lists as stacks
    where they can be (``passes.autodiff.saved_stacks``), then each graph's pipeline."""
    run_pipeline(grad.backward, STANDARD_PIPELINE)
    prune_unused_saved(grad)
    stack_saved_lists(grad)
    run_pipeline(grad.forward, FORWARD_PIPELINE)
    _refine_saved_types(grad)
    run_pipeline(grad.backward, BACKWARD_PIPELINE)


def _refine_saved_types(grad: Gradient) -> None:
    """Give the backward's saved inputs the types the optimized forward's outputs have where
    those say more (a product of a concatenation differentiated as ``Float(13, *)`` is
    ``Float(13, 12)`` once the forward's shapes are propagated): the backward's shape
    propagation then knows its loops' shapes, which native loops need."""
    n = grad.num_outputs
    for out, given in zip(grad.forward.outputs[n:], grad.backward.inputs[n:]):
        if out.type != given.type and is_subtype(out.type, given.type):
            given.type = out.type


def _shared_with_saved(grad: Gradient) -> tuple[Any, ...]:
    """For each output of the forward, what of its memory the saved values (which the backward
    reads) may also hold: ``y = tanh(x)`` is both returned and saved for its gradient."""
    outputs = grad.forward.outputs
    classes = StorageClasses(grad.forward)
    saved = outputs[grad.num_outputs:]
    return tuple(classes.overlap(v, saved) for v in outputs[:grad.num_outputs])


def _own(value: Any, shared: Any, memo: dict[int, Any]) -> Any:
    """``value`` with the parts ``shared`` marks copied (one ``memo`` per call keeps one object
    returned twice one object)."""
    if shared is None:
        return value
    if shared is True:
        return copy.deepcopy(value, memo)
    return tuple(_own(v, s, memo) for v, s in zip(value, shared))


def _specialized_graph(f: ScriptFunction, args: tuple[Any, ...]
                       ) -> tuple[Graph, dict[int, Layout]]:
    """``f``'s graph specialized to ``args`` and cleaned up (as the executor does), not fused;
    with the nested container arguments it only reads given to it as their arrays (those
    returned: ``script.runtime.nested_args``)."""
    d = f.definition
    if len(args) != len(d.input_names()):
        raise SignatureError(f"{d.name}() takes {len(d.arg_names)} arguments but {len(args)} "
                             "were given")
    types = input_types(d, args)
    items = input_items(d, args)
    for k in shared_positions(args, d.container_inputs):
        items[k] = None  # (one container at two inputs: a change through either)
    check_devices(d, args)
    with reported(f.origin, "compiling"):
        graph = d.graph.clone()
        run_pipeline(graph, "inline")
        bind_static_ints(graph, static_arguments(d, args))
        coerce_numbers(graph, types)
        nested = dict(flatten_nested(graph, d, args, types, items))
        with refused_shapes(d, types, graph):
            specialize(graph, types, items)
        with refused_shapes(d, types, graph, empty_joins=True):
            fuser.prefetch(graph)  # the product kernel compiles beside the passes
            # shape-prop: the types unrolling narrowed; the loops whose carried numbers become
            # arrays carry arrays of one shape once their first trip is peeled
            run_pipeline(graph, STANDARD_PIPELINE + ",shape-prop,peel-accumulators")
            if nested:  # loops over a rebuilt container unrolled (`for layer in layers`): the
                unroll_reads(graph)  # reads of its items at constant indices forwarded
                run_pipeline(graph, STANDARD_PIPELINE + ",shape-prop")
                check_rebuilt_reads(graph)
    return graph, nested


def _list_item_types(f: ScriptFunction, args: Mapping[int, Any]) -> dict[int, list[ir.Type]]:
    """Each list argument's item types (``args``: position -> argument): the signature key
    holds every item's shape, so a specialization is for exactly these items (the backward
    needs each weight's shape)."""
    found = {}
    declared = f.definition.input_types()
    for k, a in args.items():
        t = declared[k]
        if isinstance(a, list) and isinstance(t, ir.ListType):
            found[k] = [type_of(x, t.element, f"argument {k}[{i}]") for i, x in enumerate(a)]
    return found


def _dict_item_types(f: ScriptFunction, args: Mapping[int, Any]
                     ) -> dict[int, dict[Any, ir.Type]]:
    """Each dict argument's value types by key (``args``: position -> argument; the signature
    key holds each value's shape)."""
    found = {}
    declared = f.definition.input_types()
    for k, a in args.items():
        t = declared[k]
        if isinstance(a, dict) and isinstance(t, ir.DictType):
            found[k] = {key: type_of(x, t.value, f"argument {k}[{key!r}]")
                        for key, x in a.items()}
    return found


def _py_name(f: ScriptFunction) -> str:
    name = getattr(f.python_fn, "__name__", None) or f.__name__  # a loaded method has no fn
    return name if name.isidentifier() else "f"


def _name_of(f: Any) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


def _as_script(f: Any) -> ScriptFunction:
    if isinstance(f, ScriptFunction):
        return f
    if callable(f) and hasattr(f, "__code__"):
        return ScriptFunction(f)
    raise ScriptError(f"vjp/grad take a scripted function, a Python function or a Module, not "
                      f"an object of type {type(f).__name__}")


# -- the user API ---------------------------------------------------------------------------------
def vjp(f: Any, *args: Any, argnums: int | Sequence[int] | None = None
        ) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """Run ``f(*args)`` and return ``(outputs, backward)``.

    ``backward(cotangents)`` takes cotangents shaped like ``outputs`` (same nesting; None means
    zeros) and returns the gradients of the inputs, one per argument with the argument's nesting,
    None where an argument is not differentiable (ints, None, integer arrays, Python floats).
    ``argnums`` (an index or a sequence of them) names the arguments to differentiate: the others
    get None, and what only their gradients need is neither computed nor saved (training a layer
    with respect to its weights skips the input sequence's gradient). None: every argument.
    ``f`` is a ``ScriptFunction``, a plain function (scripted here), or a ``Module`` /
    ``ScriptModule``: then ``backward`` also adds the gradient of every ``Parameter`` its
    ``forward`` reads to the parameter's ``.grad`` (setting it when None); the parameters are
    always differentiated and ``argnums`` names the inputs (``()``: none, as torch does for
    inputs that do not require grad). A global array ``f`` reads is read at this call and is a
    constant of the differentiation: no gradient for it.
    """
    if isinstance(f, Module) or hasattr(type(f), "__rnnscript_module__"):
        return _module_vjp(f, args, argnums)  # a Module, or a module loaded from a file
    if isinstance(f, BoundScriptMethod):
        return _bound_vjp(f, args, argnums)
    # the gradient of a function (script.runtime.gradients.GradFunction), differentiated again
    sf = f.function_for(args) if hasattr(type(f), "function_for") else _as_script(f)
    full = sf._bind(args, {})
    d = sf.definition
    nargs = len(d.arg_names)
    wrt = _positions(argnums, nargs, "vjp")
    if wrt is None and nargs != len(full):
        wrt = frozenset(range(nargs))  # globals are constants: never differentiated
    if d.object_args:
        wrt = object_attribute_positions(d, wrt)
    outputs, backward = run_vjp(compile_gradient(sf, full, wrt=wrt), full, sf.origin)
    outputs = arrays_at(outputs, d.array_results)  # (numpy's 0-d arrays, as a call gives)
    if d.object_args:
        bound = bind_arguments(d, args, {})
        return outputs, lambda cotangents: object_gradients(d, bound, wrt,
                                                            backward(cotangents))
    if nargs == len(full):
        return outputs, backward
    return outputs, lambda cotangents: backward(cotangents)[:nargs]  # globals are constants


def _bound_vjp(f: BoundScriptMethod, args: tuple[Any, ...],
               argnums: int | Sequence[int] | None) -> tuple[Any, Callable[[Any], tuple]]:
    """``vjp`` of ``script(obj.method)``: the class's function with the object first, its
    arguments (``argnums`` counting them, as the bound method takes them) differentiated and
    the object a constant, as JAX treats what a function closes over (``vjp(Class.method, obj,
    ...)`` differentiates the object's arrays too)."""
    n = len(inspect.signature(f.python_fn).parameters)
    pos = _positions(argnums, n, "vjp")
    shifted = tuple(range(1, n + 1)) if pos is None else tuple(sorted(k + 1 for k in pos))
    outputs, backward = vjp(f.function, f.obj, *args, argnums=shifted)
    return outputs, lambda cotangents: backward(cotangents)[1:]


def _module_vjp(module: Any, args: tuple[Any, ...], argnums: int | Sequence[int] | None = None
                ) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """``vjp`` of a module's ``forward``: the module's attribute arrays are extra inputs, and the
    gradients of those that are parameters accumulate into ``.grad``; ``argnums`` picks the
    inputs to differentiate (None: all of them). A module that keeps its
    own ``ScriptModule`` (``__rnnscript_module__(args) -> (script_module, args)``, which also
    checks the arguments) is differentiated through that one, so its gradient compiles once."""
    kept = getattr(module, "__rnnscript_module__", None)
    if isinstance(module, ScriptModule) or kept is None:
        sm = module if isinstance(module, ScriptModule) else ScriptModule(module)
    else:
        sm, args = kept(args)
    method = sm.forward
    method = method.current() if isinstance(method, ScriptMethod) else method
    full = method._bind(args, {})
    params = method.gradient_targets()
    nargs = len(full) - len(params)
    wrt = _module_wrt(method, argnums, nargs, params)
    outputs, backward = run_vjp(compile_gradient(method, full, wrt=wrt), full, method.origin)

    def module_backward(cotangents: Any) -> tuple[Any, ...]:
        grads = backward(cotangents)
        accumulate_parameter_grads(params, grads[nargs:])
        return grads[:nargs]

    return outputs, module_backward


def _module_wrt(method: Any, argnums: int | Sequence[int] | None, nargs: int,
                params: list[Any]) -> frozenset[int] | None:
    """The graph inputs a module's ``vjp`` differentiates: ``argnums``'s and every parameter's
    (None: all). Kept on the method per ``argnums`` (an int or a tuple of ints) while its
    ``gradient_targets`` are the same list."""
    if argnums is None:
        return None
    kept = method.__dict__.get("_wrt_kept")
    if kept is None or kept[0] is not params:
        kept = method.__dict__["_wrt_kept"] = (params, {})
    cacheable = type(argnums) is int or (type(argnums) is tuple
                                         and all(type(k) is int for k in argnums))
    wrt = kept[1].get(argnums) if cacheable else None
    if wrt is None:
        wrt = _positions(argnums, nargs, "vjp") | {nargs + k for k, p in enumerate(params)
                                                   if p is not None}
        if cacheable:
            kept[1][argnums] = wrt
    return wrt


def _positions(argnums: int | Sequence[int] | None, nargs: int, what: str
               ) -> frozenset[int] | None:
    """``argnums`` as a set of argument positions (negative ones counted from the end), or None;
    ``SignatureError`` for one out of range."""
    if argnums is None:
        return None
    nums = [argnums] if isinstance(argnums, int) else list(argnums)
    for k in nums:
        if not isinstance(k, int) or isinstance(k, bool) or not -nargs <= k < nargs:
            raise SignatureError(f"{what}: argnums {k!r} is out of range for a function of "
                                 f"{nargs} arguments")
    return frozenset(k % nargs for k in nums)


def run_vjp(compiled: CompiledGradient, args: Sequence[Any],
            origin: Callable[[], Origin] | None = None
            ) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """Run a compiled forward on ``args``; return its outputs and the backward closure.

    The forward raises what the function raises; the backward raises ``SignatureError`` for
    cotangents unlike the outputs, and reports anything else it raises as a compiler bug
    (``ScriptError``, at the function's ``def`` when ``origin`` says where that is)."""
    where = origin or (lambda: Origin(compiled.name))
    arguments = args
    grad = compiled.gradient
    args = [tuple(a[key] for key in grad.dict_inputs[k]) if k in grad.dict_inputs else a
            for k, a in enumerate(args)]
    for k, layout in compiled.nested:
        args.extend(leaves(arguments[k], layout))
    prof = instrument.active
    if prof is None:
        results = compiled.forward(*args)
    else:
        results = prof.run_graph(grad.forward, f"{compiled.name} (forward)", args)
    if len(grad.forward.outputs) == 1:
        results = (results,)
    outputs = results[:grad.num_outputs]
    saved = results[grad.num_outputs:]
    if any(s is not None for s in compiled.shared_outputs):
        memo: dict[int, Any] = {}
        outputs = tuple(_own(o, s, memo) for o, s in zip(outputs, compiled.shared_outputs))

    def backward(cotangents: Any) -> tuple[Any, ...]:
        cts = [cotangents] if grad.num_outputs == 1 else list(cotangents)
        if len(cts) != grad.num_outputs:
            raise SignatureError(f"backward of {compiled.name}: {len(cts)} cotangents for "
                                 f"{grad.num_outputs} outputs")
        # fresh lists and dicts: the backward consumes them (a list's items are popped)
        cts = [_cotangent_like(o, c, f"cotangent {k}") for k, (o, c) in
               enumerate(zip(outputs, cts))]
        prof = instrument.active
        with reported(where, "running the backward of"):
            if prof is None:
                grads = compiled.backward(*cts, *saved)
            else:
                grads = prof.run_graph(grad.backward, f"{compiled.name} (backward)",
                                       (*cts, *saved))
        if len(grad.backward.outputs) == 1:
            grads = (grads,)
        grads = [dict(zip(grad.dict_inputs[k], g)) if k in grad.dict_inputs and g is not None
                 else g for k, g in enumerate(grads)]
        at = len(arguments)
        for k, layout in compiled.nested:
            n = count(layout)
            if any(grad.differentiable[at:at + n]):  # else not differentiated (argnums): None
                grads[k] = rebuild(layout, [
                    g if g is not None else _zero_gradient(x)
                    for g, x in zip(grads[at:at + n], leaves(arguments[k], layout))])
            at += n
        grads = grads[:len(arguments)]
        result = tuple(_gradient_like(a, g) for a, g in zip(arguments, grads))
        given = _host_arrays(cotangents, [])
        return _unaliased(result, given) if given else result

    return (outputs[0] if grad.num_outputs == 1 else tuple(outputs)), backward


def _cotangent_like(output: Any, ct: Any, what: str = "cotangent") -> Any:
    """A user's cotangent as the backward expects it: zeros for None, arrays for numbers, a new
    list for a list output (one cotangent per item), a new dict for a dict output (keys left
    out or None are zero); ``SignatureError`` for one whose nesting or shape differs from its
    output's."""
    if isinstance(output, (tuple, list)):
        cts = ct if ct is not None else (None,) * len(output)
        if not hasattr(cts, "__len__") or len(cts) != len(output):
            raise SignatureError(f"{what}: expected a sequence of {len(output)} cotangents "
                                 f"like the output, got {type(ct).__name__}")
        made = [_cotangent_like(o, c, f"{what}[{k}]")
                for k, (o, c) in enumerate(zip(output, cts))]
        if isinstance(output, list):
            return made
        # a NamedTuple output's cotangent is one of its class (the backward reads its fields)
        return type(output)(*made) if hasattr(output, "_fields") else tuple(made)
    if isinstance(output, dict):
        cts = ct if ct is not None else {}
        if not isinstance(cts, dict):
            raise SignatureError(f"{what}: expected a dict of cotangents like the output, got "
                                 f"{type(ct).__name__}")
        unknown = set(cts) - set(output)
        if unknown:
            raise SignatureError(f"{what}: cotangents for keys the output does not have: "
                                 f"{sorted(unknown, key=repr)}")
        return {k: _cotangent_like(output[k], c, f"{what}[{k!r}]") for k, c in cts.items()
                if c is not None}
    dtype = getattr(output, "dtype", None)
    if ct is None:
        if dtype is not None:
            return np.zeros_like(output)
        # a number's zero of the number's own type: the backward's input is typed like it
        return type(output)(0) if isinstance(output, (int, float)) else 0.0
    xp = ops.array_module(output)
    if dtype is not None and (not hasattr(ct, "shape") or (
            xp is not np and isinstance(ct, (np.ndarray, np.generic)))):
        ct = xp.asarray(ct, dtype=dtype)  # a number, or a host array for a device output
    shape = getattr(output, "shape", None)
    if (isinstance(ct, np.ndarray) or ops.array_module(ct) is not np) and shape is not None \
            and ct.shape != shape:
        try:  # one cotangent for every element (a scalar): spread it over the output
            return ops.array_module(ct).broadcast_to(ct, shape).copy()
        except ValueError:
            raise SignatureError(f"{what} has shape {tuple(ct.shape)} but the output has "
                                 f"shape {tuple(shape)}") from None
    return ct


def _host_arrays(value: Any, found: list[np.ndarray]) -> list[np.ndarray]:
    """The numpy arrays in ``value`` (tuples, lists and dicts walked), appended to ``found``."""
    if type(value) is np.ndarray:
        found.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _host_arrays(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            _host_arrays(v, found)
    return found


def _unaliased(value: Any, cotangents: list[np.ndarray]) -> Any:
    """``value`` (gradients) with a copy of each writeable array that shares memory with one
    of the caller's cotangents: the gradient of an input the output passes on as it is (``acc
    = acc0 + ...``) is the cotangent itself, and a caller scaling it in place (``g *= -lr``)
    would change the cotangent it passes to the next backward. A read-only broadcast of a
    cotangent (the gradient of ``b.sum()``) stays as it is: writing into it raises."""
    if type(value) is np.ndarray:
        if value.flags.writeable and any(np.may_share_memory(value, c) for c in cotangents):
            return value.copy()
        return value
    if isinstance(value, tuple):
        items = [_unaliased(v, cotangents) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [_unaliased(v, cotangents) for v in value]
    if isinstance(value, dict):
        return {k: _unaliased(v, cotangents) for k, v in value.items()}
    return value


def _gradient_like(arg: Any, g: Any) -> Any:
    """An argument's gradient in the argument's structure: a dict argument's has every key of
    the argument (zeros for the entries the output does not depend on)."""
    if not isinstance(arg, dict) or not isinstance(g, dict):
        return g
    return {k: g[k] if k in g else _zero_gradient(v) for k, v in arg.items()}


def _zero_gradient(value: Any) -> Any:
    dtype = getattr(value, "dtype", None)
    return np.zeros_like(value) if dtype is not None and dtype.kind in "fc" else None


def accumulate_parameter_grads(params: Sequence[Any], grads: Sequence[Any]) -> None:
    """``p.grad = p.grad + g`` (or ``g`` when ``p.grad`` is None) for each parameter (None entries
    are plain attributes and are skipped). A parameter read twice by the graph appears twice and
    gets both gradients; a gradient array the backward returned for several inputs is copied, so
    no two ``.grad``s share memory, and so is a read-only one (the gradient of ``b.sum()`` is a
    broadcast of the cotangent), so optimizers and ``clip_grad_norm_`` can update it in place."""
    given: set[int] = set()
    for p, g in zip(params, grads):
        if p is None or g is None or not getattr(p, "requires_grad", True):
            continue
        if p.grad is not None:
            p.grad = p.grad + g
            continue
        memory = {id(g), id(getattr(g, "base", None))} - {id(None)}
        read_only = not getattr(getattr(g, "flags", None), "writeable", True)
        p.grad = g.copy() if memory & given or read_only else g
        given |= memory


def vjp_graphs_for(f: ScriptFunction, *args: Any, argnums: int | Sequence[int] | None = None,
                   regions: bool = False) -> tuple[Graph, Graph]:
    """The optimized augmented forward (outputs, then saved values) and backward graphs of ``f``
    for these graph inputs, differentiated with respect to ``argnums`` as ``vjp`` does. With
    ``regions``, the first graph is instead the forward as differentiated with its active
    regions grouped into ``prim::DifferentiableGraph`` nodes (``passes.autodiff.regions``)."""
    nargs = len(f.definition.arg_names)
    wrt = _positions(argnums, nargs, "vjp_graphs_for")
    if wrt is None and nargs != len(args):
        wrt = frozenset(range(nargs))
    pair = compile_gradient(f, args, wrt=wrt).gradient
    if not regions:
        return pair.forward, pair.backward
    graph, nested = _specialized_graph(f, args)
    plain = {k: a for k, a in enumerate(args) if k not in nested}
    with reported(f.origin, "differentiating"):
        view = differentiate(graph, _list_item_types(f, plain), _dict_item_types(f, plain), wrt,
                             regions=True).regions
    return view, pair.backward


def backward_graph_for(f: ScriptFunction, *args: Any,
                       argnums: int | Sequence[int] | None = None) -> Graph:
    """The optimized backward graph of ``f`` for these arguments (see ``vjp_graphs_for``)."""
    return vjp_graphs_for(f, *args, argnums=argnums)[1]


__all__ = ["BACKWARD_PIPELINE", "CompiledGradient", "accumulate_parameter_grads",
           "backward_graph_for", "compile_gradient", "optimize_gradient", "run_vjp", "vjp",
           "vjp_graphs_for"]
