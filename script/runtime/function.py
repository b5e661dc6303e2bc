"""``ScriptFunction``: a scripted function with a cache of specializations.

On each call the arguments' signature (array dtypes and shapes, scalar types) is looked up in a
cache; a miss specializes a copy of the graph to those types, runs the optimization pipeline,
generates a Python function for it and caches it. Concurrent first calls with one signature compile
once.

The global arrays the function reads are looked up at every call and passed after the arguments
(their dtypes and shapes are part of the signature); the global scalars it compiled in are checked,
and a changed one compiles the function again (``script.frontend.globals``).

Two user-facing methods delegate upward through a function-level import, the only two in
``script`` (pyproject.toml's import contracts name them): ``backward_graph_for`` to
``runtime.autodiff`` (which builds on this module) and ``explain`` / ``strict=True`` to
``tools.explain``. Everything else the runtime needs it imports at the top.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import fuser
import ir
from ir.core import Graph
from passes import STANDARD_PIPELINE
from passes.autodiff.nested_inputs import unroll_reads
from passes.shape_prop import specialize
from passes.static_ints import bind_static_ints
from script.errors import Origin, ScriptError, SignatureError, reported
from script.frontend.annotations import declared
from script.frontend.caller_writes import writes_apart
from script.frontend.compiler import compile_function
from script.frontend.globals import guards_hold
from script.frontend.infer_types import Conflict, annotation_text, infer_signature, type_of_example
from script.frontend.object_args import (
    changed_constants,
    check_object_argument,
    object_param_kinds,
)
from script.frontend.object_reads import entry, read_inputs
from script.frontend.object_stores import distinct_owners
from script.frontend.signature import (
    call_key,
    shared_positions,
)
from script.runtime import instrument, list_lengths
from script.runtime.array_results import with_array_results
from script.runtime.binding import (
    bind_arguments,
    check_devices,
    coerce_numbers,
    input_items,
    input_types,
    static_arguments,
)
from script.runtime.call_types import (
    call_types,
    compile_for_call,
    none_arguments,
    object_parameters,
    widen,
)
from script.runtime.codegen import generate
from script.runtime.nested_args import (
    Nested,
    flatten_nested,
    forward_item_stores,
    with_leaves,
)
from script.runtime.pipelines import FORWARD_PIPELINE, refused_shapes, run_pipeline


@dataclass(frozen=True)
class Specialization:
    """One compiled entry: the optimized graph and the generated Python function."""

    graph: Graph
    """the graph after specialization and the pipeline."""
    fn: Callable[..., Any]
    """the generated function."""
    source: str
    """its Python source."""
    compile_seconds: float
    """how long specializing and compiling took."""
    nested: Nested = ()
    """the arguments given to ``graph`` as their arrays (``script.runtime.nested_args``): its
    code takes them after the inputs; ``fn`` reads them out of the inputs itself."""


MAX_LAYOUTS = 8
"""Definitions kept per function for object arguments of different layouts."""

MAX_CONSTANT_VALUES = 4
"""Values an int, bool or str attribute of an object argument is compiled in for before it is
read per call instead, where the code allows (``ScriptFunction.count_constants``)."""


class ScriptFunction:
    """A function compiled by ``@script``; call it like the original."""

    pipeline = FORWARD_PIPELINE
    """the passes run on each specialized graph (frozen methods add folds after the RNN passes)."""

    def __init__(self, fn: Callable[..., Any], *, example_inputs: Any = None,
                 strict: bool = False):
        functools.update_wrapper(self, fn)
        self.python_fn = fn
        """the undecorated function, run eagerly (the reference implementation)."""
        self.example_inputs = example_inputs
        """example argument tuples typing the unannotated parameters
        (``script.frontend.infer_types``)."""
        self.strict = strict
        """compiling a specialization that leaves an elementwise op unfused or falls back to
        Python raises ScriptError (``script.tools.explain``)."""
        self._definition: Any = None
        self._cache: dict[Any, Specialization] = {}
        self._lock = threading.RLock()
        self._nargs = -1
        self._call_example: tuple[dict[str, ir.Type], dict[str, ir.Type]] | None = None
        """what the call that compiled the definition says of the unannotated parameters: the
        types its values give them, and None for those it left None (``call_types``; the
        values themselves are not kept)."""
        self._call_typed: dict[str, ir.Type] = {}
        """the types ``_call_types`` gave, widened by later calls (``_widened``)."""
        self._objects: dict[str, Any] = {}
        """the objects passed for the parameters annotated with a plain class in the call the
        definition compiled for (they decide which attributes hold objects)."""
        self._constant_values: dict[tuple[type, str], set[Any]] = {}
        """the values compiled in for each (class, attribute name) of the object arguments."""
        self._read_per_call: frozenset[tuple[type, str]] = frozenset()
        """the (class, attribute name) pairs that took too many values: read per call."""
        self._kept_constant: frozenset[tuple[type, str]] = frozenset()
        """those that took too many values but that the code needs constant."""

    # -- compilation ----------------------------------------------------------------------------
    @property
    def definition(self) -> Any:
        """The frontend's result (graph, parameter names/types/defaults, the globals it reads);
        compiled on first use, and again when a global scalar compiled into it changed."""
        d = self._definition
        if d is None or (d.guards and not guards_hold(d.guards)):
            with self._lock:
                d = self._definition
                if d is None or not guards_hold(d.guards):
                    d = self._compile_definition()
        return d

    def _compile_definition(self) -> Any:
        """Compile the function again (the caller holds the lock), dropping what a stale
        definition compiled."""
        if self._object_params() and not self._objects:
            names = ", ".join(f"'{n}'" for n in self._object_params())
            raise ScriptError(f"{self.python_fn.__qualname__}(): the parameters {names} are "
                              "annotated with plain classes, whose objects' attributes are "
                              "read per call, so it compiles for the objects a call passes: "
                              "call it, or pass the arguments to graph_for / code_for / explain "
                              "(export_onnx and save take no object arguments)")
        with instrument.stage("frontend"), reported(self.origin, "compiling"):
            types = self._example_types() or self._call_types()
            nones = self._call_example[1] if self._call_example is not None and \
                self.example_inputs is None else {}
            d, used = compile_for_call(lambda t: compile_function(
                self.python_fn, t, self._objects, self._read_per_call, entry=True), types,
                nones)
            self._call_typed.update(used)
        if self._definition is not None:  # a stale one: drop what it compiled
            self._cache = {}
            self.__dict__.pop("_gradient_cache", None)
        # a dtype argument is passed as its name: every call binds its arguments
        self._nargs = -1 if d.dtype_args else len(d.arg_names)
        self._definition = d
        return d

    def _object_params(self) -> dict[str, str]:
        """The parameters annotated with a plain class, or a list of them, by name: their kind
        ("object" or "sequence", ``script.frontend.object_args.object_param_kinds``)."""
        found = self.__dict__.get("_object_names")
        if found is None:
            found = object_param_kinds(self.python_fn)
            if self.example_inputs is not None:  # unannotated ones the examples pass objects
                found.update(dict.fromkeys(
                    infer_signature(self.python_fn, self.example_inputs).objects, "object"))
            self.__dict__["_object_names"] = found
        return found

    def _call_objects(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Before the first call compiles: its plain objects passed to unannotated parameters
        make those object parameters too (``call_types.object_parameters``)."""
        if "_object_names" not in self.__dict__ and self.example_inputs is None:
            self.__dict__["_object_names"] = {**object_parameters(self.python_fn, args, kwargs),
                                              **object_param_kinds(self.python_fn)}

    def origin(self) -> Origin:
        """Where this function's errors point when the line at fault is not known."""
        d = self._definition
        source = d.source if d is not None else None
        name = d.name if d is not None else None
        return Origin.of(self.python_fn, source, name)

    def _call_types(self) -> dict[str, ir.Type] | None:
        """Types for the unannotated parameters from the call that compiles the definition
        (``script.runtime.call_types``), widened by later calls (``_widened``)."""
        if not self._call_typed and self._call_example is not None:
            self._call_typed = dict(self._call_example[0])
        return dict(self._call_typed) or None

    def _widened(self, d: Any, args: tuple[Any, ...]) -> bool:
        """Whether a call passing other types for call-typed parameters compiled the
        definition again, for the types holding both (``call_types.widen``)."""
        annotated = declared(self.python_fn)
        open_optional = {n for n in d.arg_names if n not in annotated
                         and n not in self._call_typed and d.defaults.get(n, 0) is None}
        changed = widen(self._call_typed, d.arg_names, args, open_optional)
        if not changed:
            return False
        self._call_typed.update(changed)
        self._compile_definition()
        return True

    def _example_types(self) -> dict[str, ir.Type] | None:
        if self.example_inputs is None:
            return None
        return infer_signature(self.python_fn, self.example_inputs).compile_types() or None

    @property
    def __rnnscript_function__(self) -> Any:
        return self.definition

    @property
    def graph(self) -> Graph:
        """The graph as written, before any specialization."""
        return self.definition.graph

    @property
    def compiled_signatures(self) -> int:
        """How many specializations have been compiled."""
        return len(self._cache)

    # -- calling --------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self._definition
        if d is None:
            self._call_objects(args, kwargs)
        if d.object_args if d is not None else self._object_params():
            # objects of another layout switch the definition and its cache: bind and look
            # up under the lock, so another thread's switch cannot pair them wrongly
            with self._lock:
                found = self._entered(args) if not kwargs else None
                if found is not None:
                    args, spec = found
                else:
                    args = self._bind(args, kwargs)
                    if instrument.active is None:
                        d = self._definition  # (the one _bind checked)
                        spec = self._cache.get(call_key(args, d.static_ints, d.trip_ints,
                                                        d.any_length, d.container_inputs)) \
                            or self._specialize(args)
            if instrument.active is not None:
                return instrument.active.call(self, args)
            return spec.fn(*args)
        if d is None or d.guards or d.attr_refs or d.object_args or d.caller_writes:
            args = self._bind(args, kwargs)
            d = self._definition
        elif kwargs or len(args) != self._nargs:
            args = bind_arguments(d, args, kwargs)
        if instrument.active is not None:
            return instrument.active.call(self, args)
        spec = self._cache.get(call_key(args, d.static_ints, d.trip_ints, d.any_length,
                                        d.container_inputs))
        if spec is None:
            spec = self._specialize(args)
        return spec.fn(*args)

    def graph_for(self, *args: Any, **kwargs: Any) -> Graph:
        """The optimized graph for these arguments (compiling it if needed, without running)."""
        return self.specialization(*args, **kwargs).graph

    def backward_graph_for(self, *args: Any, argnums: Any = None, **kwargs: Any) -> Graph:
        """The optimized backward graph for these arguments, differentiated with respect to
        ``argnums`` (None: every argument; see ``script.vjp``)."""
        from script.runtime.autodiff import backward_graph_for  # user-facing delegation (1 of 2)
        return backward_graph_for(self, *self._bind(args, kwargs), argnums=argnums)

    def vjp_graphs_for(self, *args: Any, argnums: Any = None, regions: bool = False,
                       **kwargs: Any) -> tuple[Graph, Graph]:
        """``(forward, backward)``: the optimized augmented forward (outputs, then the values
        saved for the backward) and backward graphs, differentiated with respect to
        ``argnums`` (None: every argument; see ``script.vjp``). ``regions=True``
        shows the forward's differentiable regions instead of the augmented forward."""
        from script.runtime.autodiff import vjp_graphs_for  # the same delegation (1 of 2)
        return vjp_graphs_for(self, *self._bind(args, kwargs), argnums=argnums, regions=regions)

    def explain(self, *args: Any, svg: str | None = None, **kwargs: Any) -> str:
        """A readable report on how the specialization for these arguments compiled: fusion
        groups, elementwise ops left out and why, fallbacks, loops and matmuls. With ``svg``,
        also renders the optimized graph there (needs Graphviz's ``dot`` program)."""
        from script.tools.explain import explain_report  # user-facing delegation (2 of 2)
        args = self._bind(args, kwargs)
        with reported(self.origin, "explaining"):
            return explain_report(self, args, svg)

    def code_for(self, *args: Any, **kwargs: Any) -> str:
        """The generated Python source for these arguments."""
        return self.specialization(*args, **kwargs).source

    def specialization(self, *args: Any, **kwargs: Any) -> Specialization:
        return self.specialization_for(self._bind(args, kwargs))

    def specialization_for(self, inputs: tuple[Any, ...]) -> Specialization:
        """The specialization for a call's graph inputs (what ``_bind`` returns)."""
        return self._cache.get(self.call_key(inputs)) or self._specialize(inputs)

    def call_key(self, inputs: tuple[Any, ...]) -> Any:
        """The cache key of a call's graph inputs: their signature, with the values of the int
        arguments that size arrays (``FunctionDef.static_ints``) and of the trip counts that
        equal an array argument's axis (``FunctionDef.trip_ints``); lists passed at many lengths
        whatever their length (``FunctionDef.any_length``)."""
        d = self.definition
        return call_key(inputs, d.static_ints, d.trip_ints, d.any_length, d.container_inputs)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """The graph's inputs for a call: the arguments bound to the parameters (defaults filled
        in), then what each global array the function reads holds now."""
        if self._definition is None and self._call_example is None:
            self._call_objects(args, kwargs)
            objects = set(self._object_params())
            self._call_example = (call_types(self.python_fn, args, kwargs, objects),
                                  none_arguments(self.python_fn, (args, kwargs), objects))
        if self._object_params():
            return self._bind_objects(args, kwargs)
        d = self.definition
        inputs = bind_arguments(d, args, kwargs) + tuple(ref.read() for ref in d.attr_refs)
        if d.caller_writes:
            writes_apart(d.name, inputs, d.caller_writes, d.input_names(), d.writes_read)
        return inputs

    def _bind_objects(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """``_bind`` for a function with plain object parameters: the objects' attributes the
        function reads are inputs after the arguments, and the objects' places hold None. A call
        whose objects have another layout than the compiled one compiles the function again."""
        if self._definition is None:
            with self._lock:
                if not self._objects:
                    self._objects = self._objects_of(args, kwargs)
        d = self.definition
        bound = bind_arguments(d, args, kwargs)
        kinds = self._object_params()
        for k in d.object_args:
            check_object_argument(d.arg_names[k], bound[k], d.name, kinds[d.arg_names[k]])
        extra = read_inputs(d.attr_refs, bound)
        if extra is None:
            with self._lock:
                d = self._other_layout(d, bound)
            bound = bind_arguments(d, args, kwargs)
            extra = read_inputs(d.attr_refs, bound)
            if extra is None:  # an attribute the new definition reads changed meanwhile
                raise SignatureError(f"{d.name}(): the attributes of the object arguments "
                                     "changed while the function compiled")
        if d.attr_stores:
            distinct_owners(d.name, d.attr_refs, extra)
        if d.caller_writes:
            writes_apart(d.name, (*bound, *extra), d.caller_writes, d.input_names(),
                         d.writes_read)
        inputs = list(bound)
        for k in d.object_args:
            inputs[k] = None
        return (*inputs, *extra)

    def _entered(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any] | None:
        """The graph inputs and the specialization of a positional call with plain object
        arguments through the definition's generated entry (``object_reads.entry``), or None
        where the general bind and lookup must run (the caller holds the lock)."""
        d = self._definition
        if d is None or d.guards or instrument.active is not None:
            return None
        entries = self.__dict__.setdefault("_entries", {})
        found = entries.get(id(d))
        if found is None or found[0] is not d or found[2] != d.any_length:  # (lists may be
            # keyed by any length from a later call on: ``list_lengths.note``)
            if len(entries) >= MAX_LAYOUTS:
                entries.pop(next(iter(entries)))
            kinds = self._object_params()
            plain = not (d.static_args or d.dtype_args or d.caller_writes or d.any_length
                         or d.static_ints or d.trip_ints or len(d.container_inputs) > 1
                         or any(kinds[d.arg_names[k]] != "object" for k in d.object_args))
            found = entries[id(d)] = (d, entry(d.attr_refs, len(d.arg_names), d.object_args)
                                      if plain else None, d.any_length)
        if found[1] is None:
            return None
        made = found[1](args)
        if made is None:
            return None
        spec = self._cache.get(made[1])
        return None if spec is None else (made[0], spec)

    def _other_layout(self, d: Any, bound: tuple[Any, ...]) -> Any:
        """The definition for object arguments whose layout ``d`` was not compiled for: one
        compiled before for it (with its specializations), else a new one; the last
        ``MAX_LAYOUTS`` are kept (objects of two layouts passed in turn compile once each)."""
        layouts = self.__dict__.setdefault("_layouts", {})
        layouts[id(d)] = (d, self._cache, self.__dict__.setdefault("_gradient_cache", {}),
                          self._objects)
        for other, cache, gradients, objects in layouts.values():
            if other is not d and guards_hold(other.guards) and \
                    read_inputs(other.attr_refs, bound) is not None:
                self._definition, self._cache, self._objects = other, cache, objects
                self.__dict__["_gradient_cache"] = gradients
                return other
        demoted = self.count_constants(d, bound)
        self._objects = {d.arg_names[k]: bound[k] for k in d.object_args}
        self._definition, self._cache = None, {}
        self.__dict__.pop("_gradient_cache", None)
        try:
            new = self._compile_layout(demoted)
        except BaseException:  # keep the definition the last call used
            self._definition, self._cache, gradients, self._objects = layouts[id(d)]
            self.__dict__["_gradient_cache"] = gradients
            raise
        if len(layouts) >= MAX_LAYOUTS:
            layouts.pop(next(iter(layouts)))
        return new

    def count_constants(self, d: Any, bound: tuple[Any, ...]) -> frozenset[tuple[type, str]]:
        """Count the values of the attributes ``d`` compiled in as constants that the call
        ``bound`` changes; the (class, attribute name) pairs that now took more than
        ``MAX_CONSTANT_VALUES`` are returned, to be read per call (``_compile_layout``).

        Ints, bools and strs of object arguments are constants so that a count
        (``range(self.num_layers)``), an index or a condition (``if self.bidirectional``) is
        decided when compiling, as a global scalar's is; but an attribute that changes at every
        call (a step counter ``self.t``) would compile every call."""
        demoted = set()
        for key, old, new in changed_constants(d.attr_refs, bound):
            if key in self._read_per_call or key in self._kept_constant:
                continue
            seen = self._constant_values.setdefault(key, set())
            seen.update((old, new))
            if len(seen) > MAX_CONSTANT_VALUES:
                demoted.add(key)
        return frozenset(demoted)

    def _compile_layout(self, demoted: frozenset[tuple[type, str]]) -> Any:
        """Compile the definition for ``self._objects``, reading the ``demoted`` attributes per
        call (with a warning), as int arguments are; when the code needs one constant (a count
        of a loop indexing a list of objects) it stays compiled in, at every value."""
        if not demoted:
            return self._compile_definition()
        self._read_per_call |= demoted
        known = {e.fields for e in self._definition.deferred_errors} if self._definition else set()
        try:
            new = self._compile_definition()
            if any(e.fields not in known for e in new.deferred_errors):
                raise new.deferred_errors[0]  # a branch that compiled with the constant
        except ScriptError:
            self._read_per_call -= demoted
            self._kept_constant |= demoted
            return self._compile_definition()
        for cls, name in sorted(demoted, key=lambda key: (key[0].__qualname__, key[1])):
            warnings.warn(f"{self.python_fn.__qualname__}(): the attribute '{name}' of "
                          f"{cls.__name__} objects took {MAX_CONSTANT_VALUES + 1} values across "
                          "calls, each compiling the function again: it is read per call from "
                          "now on, as an int argument is", RuntimeWarning, stacklevel=6)
        return new

    def _objects_of(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The objects a call passes for the plain object parameters, by name."""
        try:
            bound = inspect.signature(self.python_fn).bind(*args, **kwargs).arguments
        except TypeError as exc:
            raise SignatureError(f"{self.python_fn.__qualname__}(): {exc}") from None
        kinds = self._object_params()
        found = {n: bound[n] for n in kinds if n in bound}
        for name, value in found.items():
            check_object_argument(name, value, self.python_fn.__qualname__, kinds[name])
        return found

    def _specialize(self, args: tuple[Any, ...]) -> Specialization:
        key = self.call_key(args)
        with self._lock:
            spec = self._cache.get(key)
            if spec is None and list_lengths.note(self.definition, args):
                key = self.call_key(args)  # (a list keyed by any length from now on)
                spec = self._cache.get(key)
            if spec is None:
                spec = self._compile(args)
                self._cache[key] = spec
        return spec

    def _compile(self, args: tuple[Any, ...]) -> Specialization:
        with reported(self.origin, "compiling"):
            return self._compile_unchecked(args)

    def _compile_unchecked(self, args: tuple[Any, ...], flatten: bool = True
                           ) -> Specialization:
        start = time.perf_counter()
        d = self.definition
        try:
            types = input_types(d, args)
        except SignatureError as e:
            if self._widened(d, args):  # (under the lock _specialize holds)
                return self._compile_unchecked(args)
            raise SignatureError(f"{e}{self._annotation_hint(d, args, str(e))}") from None
        check_devices(d, args)
        graph = d.graph.clone()
        with instrument.stage("passes"):
            run_pipeline(graph, "inline")  # callee graphs are unspecialized: inline first
            bind_static_ints(graph, static_arguments(d, args))
            coerce_numbers(graph, types)
            items = list_lengths.items_for(d, args, input_items(d, args))
            for k in shared_positions(args, d.container_inputs):
                items[k] = None  # (one container at two inputs: a change through either)
            nested = flatten_nested(graph, d, args, types, items, lossy_only=True) \
                if flatten else ()
            if nested:  # the loops over a rebuilt container unrolled, its reads forwarded
                try:
                    specialize(graph, types, items)
                    fuser.prefetch(graph)
                    run_pipeline(graph, STANDARD_PIPELINE)
                    unroll_reads(graph)
                    run_pipeline(graph, "constant-prop,canonicalize")
                    forward_item_stores(graph, items)
                    run_pipeline(graph, "shape-prop")
                except (ir.ShapeError, ir.VerifyError):
                    # an op refuses an item's shape, in code that may never run or runs after
                    # other writes: compiled over the container as it is, failing as numpy does
                    return self._compile_unchecked(args, flatten=False)
            else:
                with refused_shapes(d, types, graph):
                    specialize(graph, types, items)
            with refused_shapes(d, types, graph, empty_joins=True):
                if not nested:
                    fuser.prefetch(graph)  # the product kernel compiles beside the passes
                run_pipeline(graph, self.pipeline)
        with instrument.stage("codegen"):
            fn, source = generate(graph, name=_py_name(d.name))
        if self.strict:  # after codegen: it knows which groups compiled natively
            from script.tools.explain import check_strict  # strict=True: the same delegation
            check_strict(graph, d)
        fn = with_array_results(fn, graph, d.array_results)
        return Specialization(graph, with_leaves(fn, nested), source,
                              time.perf_counter() - start, nested)

    def _annotation_hint(self, d: Any, args: tuple[Any, ...], error: str) -> str:
        """For a container passed to an unannotated parameter (taken as an array), the
        argument ``error`` names: the annotation to write."""
        annotations = getattr(self.python_fn, "__annotations__", {})
        for name, value, t in zip(d.arg_names, args, d.arg_types):
            if name in annotations or f"argument '{name}'" not in error:
                continue
            default = d.defaults.get(name)
            if t == ir.INT and type(default) is int and isinstance(value, (float, np.floating)):
                return (f" ('{name}' has no annotation, and its default {default} made it an "
                        f"int: annotate it, {name}: float = {default})")
            if t != ir.TENSOR or not isinstance(value, (tuple, list, dict)):
                continue
            try:
                text = annotation_text(type_of_example(value))
            except Conflict:
                continue
            return (f" ('{name}' has no annotation, so it is taken as an array: annotate it, "
                    f"{name}: {text}, or script the function with example_inputs=)")
        return ""

    def __repr__(self) -> str:
        return f"<ScriptFunction {self.python_fn.__qualname__}>"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self, obj)


def _py_name(qualname: str) -> str:
    name = qualname.rsplit(".", 1)[-1]
    return name if name.isidentifier() and not name.startswith("<") else "forward"


def is_function(obj: Any) -> bool:
    return inspect.isfunction(obj)
