"""Freezing: a scripted module turned into a standalone one whose weights are constants.

``freeze(script_module)`` compiles the preserved methods in eval mode, replaces every parameter
and attribute the methods read by a constant (a private copy, so training the original afterwards
does not change the frozen model), drops inference-mode dropout, and folds everything that
depends only on constants once, whatever its size: ``w_ih.T`` becomes a transposed weight
constant, LayerNorm's constant arithmetic is done, and the concatenated weights the batched-matmul
pass makes are folded when each specialization compiles. The result is a ``StandaloneModule``:
methods without the Python module behind them, which ``script.save`` writes to one file and
``script.load`` reads back.

A ``StandaloneModule`` that is not frozen (what ``standalone(script_module)`` makes, or what
``load`` gives for a saved unfrozen module) keeps its parameters as graph inputs bound at call
time from ``Parameter`` objects, so they can still be read and changed by dotted name.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ir.core import Graph, Node
from ir.registry import NOT_CONSTANT, const, lookup
from ir.types import ClassType, DictType, ListType, OptionalType, TupleType, Type
from passes import CLEANUP_PIPELINE
from passes.constant_prop import fold_limit
from script.errors import Origin, ScriptError, SourceInfo, reported
from script.frontend.classes import python_class
from script.frontend.definition import FunctionDef
from script.frontend.modules import method_function
from script.module import Module, Parameter, is_array, state_changed
from script.runtime.binding import bind_arguments
from script.runtime.function import ScriptFunction, Specialization
from script.runtime.pipelines import FROZEN_PIPELINE, run_pipeline
from script.runtime.script_module import ScriptModule, Variant

DROPOUT = "tensor::dropout"

@dataclass(eq=False)
class Binding:
    """A graph input of a standalone method that is not an argument: a named array of the module
    (a ``Parameter``, or a plain array attribute), read at every call."""

    name: str
    """the dotted name (``layers.0.cell.weight_ih``)."""
    parameter: Parameter
    """holds the array (plain array attributes are wrapped too, so both read as ``.data``)."""
    trainable: bool = True
    """False for a plain array attribute (a buffer)."""


class StandaloneMethod(ScriptFunction):
    """One method of a ``StandaloneModule``: a ``ScriptFunction`` over a graph, with no Python
    function behind it. ``signature`` is what callers pass; the graph's inputs are those
    arguments followed by the ``bindings``."""

    def __init__(self, signature: FunctionDef, bindings: list[Binding] | None = None,
                 frozen: bool = False):
        # ScriptFunction.__init__ wraps a Python function; a standalone method has none
        self.python_fn = None
        self.example_inputs = None
        self.strict = False
        self.__name__ = self.__qualname__ = signature.name.rsplit(".", 1)[-1]
        self.__doc__ = None
        self._cache: dict[Any, Specialization] = {}
        self._lock = threading.RLock()
        self.signature = signature
        """the method as callers see it: ``graph`` inputs start with ``arg_names``."""
        self.bindings: list[Binding] = list(bindings or ())
        """the module arrays the graph reads after the arguments, in graph-input order."""
        self.frozen = frozen
        """compile with unlimited constant folding (the graph's weights are constants)."""
        if frozen:
            self.pipeline = FROZEN_PIPELINE
        names = [b.name for b in self.bindings]
        types = list(signature.graph.inputs[len(signature.arg_names):])
        self._definition = FunctionDef(
            signature.name, signature.graph, signature.arg_names + names,
            signature.arg_types + [v.type for v in types], dict(signature.defaults),
            signature.return_type, signature.source, dtype_args=signature.dtype_args)
        self._definition.array_results = signature.array_results
        self._nargs = -1 if signature.dtype_args else len(self._definition.arg_names)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        bound = bind_arguments(self.signature, args, kwargs)
        return bound + tuple(b.parameter.data for b in self.bindings)

    def gradient_targets(self) -> list[Parameter | None]:
        """Per binding, the ``Parameter`` its gradient accumulates into under ``vjp`` of the
        module (fine-tuning a loaded model), None for a buffer."""
        return [b.parameter if b.trainable else None for b in self.bindings]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.bindings or kwargs or len(args) != self._nargs:
            args = self._bind(args, kwargs)
        return ScriptFunction.__call__(self, *args)

    def _compile(self, args: tuple[Any, ...]) -> Specialization:
        if not self.frozen:
            return super()._compile(args)
        with fold_limit(None):
            return super()._compile(args)

    def __repr__(self) -> str:
        return f"<StandaloneMethod {self.signature.name}>"


class StandaloneModule:
    """A module that runs without the Python code that defined it: what ``freeze`` and
    ``script.load`` return. Call it like the original (``m(*args)`` runs ``forward``); every
    method is an attribute with ``graph_for`` / ``code_for``; an unfrozen one exposes its
    parameters by dotted name."""

    def __init__(self, name: str, methods: dict[str, StandaloneMethod], frozen: bool,
                 training: bool = False, classes: dict[str, type] | None = None,
                 arrays: list[Binding] | None = None):
        self.name = name
        """the class name of the module it came from."""
        self.methods = methods
        """the methods by name."""
        self.frozen = frozen
        """True when parameters are compiled in as constants."""
        self.training = training
        """the mode the methods were compiled in (always False when frozen)."""
        self.classes: dict[str, type] = dict(classes or {})
        """the NamedTuple / script classes the methods take or return, by name (a loaded module
        builds them from the file: ``m.classes["LSTMState"](h, c)``)."""
        self.arrays: list[Binding] = arrays if arrays is not None else _collect(methods)
        """the named arrays the methods read (none when frozen), parameters in the original
        module's order."""

    def __getattr__(self, name: str) -> Any:
        methods = self.__dict__.get("methods", {})
        if name in methods:
            return methods[name]
        raise AttributeError(f"'{self.__dict__.get('name', 'module')}' has no method '{name}'"
                             f" (it has: {', '.join(methods) or 'none'})")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    @property
    def forward(self) -> StandaloneMethod:
        method = self.methods.get("forward")
        if method is None:
            raise AttributeError(f"'{self.name}' has no forward()")
        return method

    @property
    def graph(self) -> Graph:
        """``forward``'s graph (frozen: with the weights as constants)."""
        return self.forward.graph

    def graph_for(self, *args: Any, **kwargs: Any) -> Graph:
        """The optimized graph of ``forward`` for these arguments."""
        return self.forward.graph_for(*args, **kwargs)

    def code_for(self, *args: Any, **kwargs: Any) -> str:
        """The generated Python source of ``forward`` for these arguments."""
        return self.forward.code_for(*args, **kwargs)

    def __rnnscript_module__(self, args: tuple[Any, ...]) -> tuple[StandaloneModule,
                                                                  tuple[Any, ...]]:
        """What ``vjp(self, *args)`` differentiates: ``forward``, whose parameters' gradients
        accumulate into their ``.grad`` (a frozen module has none: its weights are constants)."""
        return self, args

    def bindings(self) -> Iterator[Binding]:
        """Every named array the methods read, each once."""
        return iter(self.arrays)

    def named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, Parameter); none when frozen."""
        for b in self.bindings():
            if b.trainable:
                yield b.name, b.parameter

    def parameters(self) -> Iterator[Parameter]:
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self) -> Iterator[tuple[str, Any]]:
        """(dotted name, array) of the plain array attributes; none when frozen."""
        for b in self.bindings():
            if not b.trainable:
                yield b.name, b.parameter.data

    def get_parameter(self, name: str) -> Parameter:
        for n, p in self.named_parameters():
            if n == name:
                return p
        raise AttributeError(f"'{self.name}' has no parameter '{name}'")

    def state_dict(self) -> dict[str, Any]:
        return {b.name: b.parameter.data for b in self.bindings()}

    def eval(self) -> StandaloneModule:
        return self.train(False)

    def train(self, mode: bool = True) -> StandaloneModule:
        """Only the mode the methods were compiled in is available (there is no source to
        compile the other from)."""
        if bool(mode) != self.training:
            what = "frozen" if self.frozen else "loaded"
            raise ScriptError(f"this {what} module was compiled with training={self.training}; "
                              "it cannot switch modes")
        return self

    def __repr__(self) -> str:
        kind = "frozen" if self.frozen else "standalone"
        return f"<{kind} {self.name} with methods {', '.join(self.methods)}>"


# -- freezing --------------------------------------------------------------------------------------
def freeze(module: Any, preserve: tuple[str, ...] | list[str] = ("forward",)) -> StandaloneModule:
    """A frozen copy of a scripted module (DESIGN.md section 2).

    The methods named in ``preserve`` are compiled in eval mode; the parameters and array
    attributes they read become constants (copies: the frozen model does not follow later
    changes to the original), dropout is dropped, and whatever depends only on constants is
    folded now. Other methods and attributes are left behind. Results equal the original's in
    eval mode.
    """
    with reported(lambda: Origin.of_module(module), "freezing"):
        return _freeze(module, preserve)


def _freeze(module: Any, preserve: tuple[str, ...] | list[str]) -> StandaloneModule:
    python_module = _python_module(module)
    preserve = _check_preserve(python_module, preserve)
    with _eval_mode(python_module):
        variant = Variant(python_module, list(preserve))
    paths = {id(m): p for p, m in python_module.named_modules()}
    methods = {}
    for name in preserve:
        compiled = variant.methods[name]
        names = [_dotted_name(paths, ref) for ref in compiled.attr_refs]
        graph = frozen_graph(compiled.method_definition, names)
        methods[name] = StandaloneMethod(_signature(compiled.method_definition, graph),
                                         frozen=True)
    return StandaloneModule(type(python_module).__name__, methods, frozen=True,
                            classes=_classes_of(methods))


def standalone(module: Any) -> StandaloneModule:
    """The scripted module's methods as an unfrozen ``StandaloneModule`` sharing its parameters
    (what ``save`` writes for a module that is not frozen)."""
    with reported(lambda: Origin.of_module(module), "compiling"):
        return _standalone(module)


def _standalone(module: Any) -> StandaloneModule:
    if isinstance(module, StandaloneModule):
        return module
    if isinstance(module, ScriptFunction) and not hasattr(module, "attr_refs"):
        return _standalone_function(module)
    python_module = _python_module(module)
    scripted = module if isinstance(module, ScriptModule) else ScriptModule(python_module)
    variant = scripted._variant()
    paths = {id(m): p for p, m in python_module.named_modules()}
    canonical = {id(p): name for name, p in python_module.named_parameters()}
    methods = {}
    for name, compiled in variant.methods.items():
        fdef = compiled.method_definition
        graph = fdef.graph.clone()
        run_pipeline(graph, "inline")
        bindings = [_binding(paths, canonical, ref) for ref in fdef.attr_refs]
        for value, b in zip(graph.inputs[len(fdef.arg_names):], bindings):
            value.name = b.name  # the graph reads as the parameter list: %layers.0.cell.weight_ih
        methods[name] = StandaloneMethod(_signature(fdef, graph), bindings)
    order = {name: k for k, (name, _) in enumerate([*python_module.named_parameters(),
                                                      *python_module.named_buffers()])}
    arrays = sorted(_collect(methods), key=lambda b: order.get(b.name, len(order)))
    return StandaloneModule(type(python_module).__name__, methods, frozen=False,
                            training=python_module.training, classes=_classes_of(methods),
                            arrays=arrays)


def _standalone_function(fn: ScriptFunction) -> StandaloneModule:
    """A scripted function as a module whose ``forward`` is the function; the global arrays it
    reads become its named arrays (buffers), holding the arrays the globals hold now."""
    d = fn.definition
    graph = d.graph.clone()
    run_pipeline(graph, "inline")
    bindings = [_binding({}, {}, ref) for ref in d.attr_refs]
    for value, b in zip(graph.inputs[len(d.arg_names):], bindings):
        value.name = b.name
    methods = {"forward": StandaloneMethod(_signature(d, graph), bindings)}
    return StandaloneModule(d.name, methods, frozen=False, classes=_classes_of(methods))


def _collect(methods: dict[str, StandaloneMethod]) -> list[Binding]:
    found: dict[str, Binding] = {}
    for method in methods.values():
        for b in method.bindings:
            found.setdefault(b.name, b)
    return list(found.values())


def frozen_graph(fdef: FunctionDef, names: list[str] | None = None) -> Graph:
    """``fdef``'s graph inlined, its attribute inputs replaced by constant copies of their
    current values (named ``names``, dotted), inference dropout removed and constants folded
    without a size limit."""
    graph = fdef.graph.clone()
    run_pipeline(graph, "inline")
    nargs = len(fdef.arg_names)
    attr_inputs = graph.inputs[nargs:]
    names = names or [ref.name for ref in fdef.attr_refs]
    with graph.inserting_before(graph.block.param_node.next):
        for value, ref, name in zip(attr_inputs, fdef.attr_refs, names):
            snapshot = _snapshot(ref.read(), name)
            _check_not_mutated(value, name)
            value.replace_all_uses_with(graph.constant(snapshot, name=name))
    for k in reversed(range(nargs, len(graph.inputs))):
        graph.block.erase_param(k)
    remove_inference_dropout(graph)
    with fold_limit(None):
        run_pipeline(graph, CLEANUP_PIPELINE)
    return graph


def remove_inference_dropout(graph: Graph) -> bool:
    """``dropout(x, p, False)`` is ``x`` (for a valid constant ``p``); True when any went."""
    changed = False
    for node in list(graph.walk()):
        if node.kind == DROPOUT and _is_inference_dropout(node):
            node.output.replace_all_uses_with(node.inputs[0])
            node.erase()
            changed = True
    return changed


def _is_inference_dropout(node: Node) -> bool:
    p, training = const(node, 1), const(node, 2)
    if p is NOT_CONSTANT or training is NOT_CONSTANT:
        return False
    return training is False and isinstance(p, (int, float)) and 0.0 <= p <= 1.0


def _snapshot(value: Any, name: str) -> Any:
    """A private, read-only copy of an attribute's value to compile in as a constant: a host
    array, also for a CuPy array (a frozen model runs where its inputs are: called with CuPy
    arrays, the generated code copies its constants to the GPU once)."""
    if is_array(value):
        copy = np.array(value if isinstance(value, np.ndarray) else value.get(), copy=True)
        copy.setflags(write=False)
        return copy
    if isinstance(value, (tuple, list)):
        return type(value)(_snapshot(v, name) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ScriptError(f"freeze: attribute '{name}' holds a {type(value).__name__}, which cannot "
                      "be compiled in as a constant")


def _check_not_mutated(value: Any, name: str) -> None:
    """Only attributes the code never changes become constants (a list it appends to would
    keep growing across calls)."""
    if not isinstance(value.type, (ListType, DictType)):
        return
    for user in value.users:
        op = lookup(user.kind)
        if op is None or not op.is_pure:
            raise ScriptError(f"freeze: attribute '{name}' is changed by "
                              f"{user.kind}; only attributes the methods never mutate can "
                              "be frozen")


def _python_module(module: Any) -> Module:
    if isinstance(module, StandaloneModule):
        raise ScriptError("freeze/standalone take a scripted module; this one is already "
                          "standalone")
    python_module = getattr(module, "python_module", module)
    if not isinstance(python_module, Module):
        raise ScriptError(f"expected a scripted Module, not {type(module).__name__}")
    return python_module


def _check_preserve(module: Module, preserve: Any) -> tuple[str, ...]:
    names = (preserve,) if isinstance(preserve, str) else tuple(preserve)
    if not names:
        raise ScriptError("freeze: preserve at least one method")
    for name in names:
        if method_function(module, name) in (None, Module.forward):
            raise ScriptError(f"freeze: '{type(module).__name__}' has no method '{name}' to "
                              "preserve")
    return tuple(dict.fromkeys(names))


class _eval_mode:  # noqa: N801 - used as a context manager, like contextlib's
    """Every submodule in eval mode inside the block; each module's own flag restored after."""

    def __init__(self, module: Module):
        self.modules = list(module.modules())
        self.saved = [m.training for m in self.modules]

    def __enter__(self) -> None:
        for m in self.modules:
            object.__setattr__(m, "training", False)
        state_changed()

    def __exit__(self, *exc: Any) -> None:
        for m, mode in zip(self.modules, self.saved):
            object.__setattr__(m, "training", mode)
        state_changed()


def _signature(fdef: FunctionDef, graph: Graph) -> FunctionDef:
    """``fdef`` as callers see it, over ``graph``."""
    signature = FunctionDef(fdef.name, graph, list(fdef.arg_names), list(fdef.arg_types),
                            dict(fdef.defaults), graph.outputs[0].type if graph.outputs else
                            fdef.return_type, fdef.source, dtype_args=fdef.dtype_args)
    signature.array_results = fdef.array_results
    return signature


def _dotted_name(paths: dict[int, str], ref: Any) -> str:
    path = paths.get(id(ref.owner), "")
    return f"{path}.{ref.name}" if path else ref.name


def _binding(paths: dict[int, str], canonical: dict[int, str], ref: Any) -> Binding:
    """``ref`` as a named array; a parameter is named as ``named_parameters()`` names it (a
    parameter registered twice, like ``rnn.LSTM``'s ``weight_ih_l0``, has its first name)."""
    name = _dotted_name(paths, ref)
    param = ref.parameter
    if param is not None:
        return Binding(canonical.get(id(param), name), param)
    value = ref.read()
    if not is_array(value):
        raise ScriptError(f"attribute '{name}' holds a {type(value).__name__}; only parameters "
                          "and array attributes can be graph inputs of a standalone module")
    holder = Parameter.__new__(Parameter)
    holder.data, holder.grad = value, None
    return Binding(name, holder, trainable=False)


def _classes_of(methods: dict[str, StandaloneMethod]) -> dict[str, type]:
    names: dict[str, None] = {}
    for method in methods.values():
        for t in graph_types(method.signature.graph):
            for c in class_types(t):
                names.setdefault(c.name)
    return {name: python_class(name) for name in names}


def graph_types(graph: Graph) -> Iterator[Type]:
    """The type of every value of ``graph``: inputs, outputs of nodes and block parameters,
    nested blocks and subgraphs included."""
    pending = [graph]
    while pending:
        g = pending.pop()
        yield from (v.type for v in g.inputs)
        for node in g.walk():
            yield from (v.type for v in node.outputs)
            for block in node.blocks:
                yield from (v.type for v in block.params)
            sub = node.attrs.get("Subgraph")
            if isinstance(sub, Graph):
                pending.append(sub)


def class_types(t: Type) -> Iterator[ClassType]:
    """The class types inside ``t`` (itself, container elements, fields), outermost first."""
    pending = [t]
    while pending:
        t = pending.pop()
        if isinstance(t, ClassType):
            yield t
            pending.extend(ft for _, ft in t.fields)
        elif isinstance(t, TupleType):
            pending.extend(t.elements)
        elif isinstance(t, (ListType, OptionalType)):
            pending.append(t.element)
        elif isinstance(t, DictType):
            pending.extend((t.key, t.value))


NO_SOURCE = SourceInfo("<saved model>", ())
"""The source of a loaded method: there is none."""

__all__ = ["Binding", "NO_SOURCE", "StandaloneMethod", "StandaloneModule", "freeze",
           "frozen_graph", "remove_inference_dropout", "standalone"]
