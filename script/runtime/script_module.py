"""``ScriptModule``: a ``Module`` whose ``forward`` (and exported methods) run compiled.

``script(module)`` compiles ``forward``, every method it reaches and every submodule's methods it
calls (inlined), plus the methods marked ``@script.export``. The compiled graph of a method takes
its arguments followed by the module attributes it reads (parameters and arrays, ``AttrRef``s),
and those are read from the Python module at every call: the ScriptModule shares its parameters
with the original (an optimizer step on ``param.data`` is seen by both).

Constants of the module tree (``training``, int/float/bool/str attributes, which submodule sits
where) are compiled in; each compilation records them as guards, and a call whose guards fail
(after ``eval()``, say) compiles again, keeping a few variants. Each variant's methods cache one
specialization per signature of arguments and attribute arrays, like a ``ScriptFunction``.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from ir.core import Graph
from script.errors import Origin, ScriptError, reported
from script.frontend.compiler import compile_method
from script.frontend.definition import FunctionDef
from script.frontend.globals import GlobalRef
from script.frontend.modules import AttrRef, ModuleSession, method_function
from script.module import Module, state_version
from script.runtime import instrument
from script.runtime.binding import bind_arguments
from script.runtime.function import ScriptFunction, Specialization

MAX_VARIANTS = 8
"""Compiled variants (sets of module constants) kept per ScriptModule."""


def export(fn: Any) -> Any:
    """Mark a module method to be compiled by ``script(module)`` even when ``forward`` does not
    call it (``@script.export``)."""
    fn.__rnnscript_export__ = True
    return fn


def entry_methods(module: Module) -> list[str]:
    """``forward`` (when the class defines one) and the exported methods, by name."""
    names = []
    if method_function(module, "forward") not in (None, Module.forward):
        names.append("forward")
    for cls in type(module).__mro__:
        for name, member in vars(cls).items():
            fn = getattr(member, "python_fn", member)
            if getattr(fn, "__rnnscript_export__", False) and name not in names:
                names.append(name)
    return names


class CompiledMethod(ScriptFunction):
    """One method of one variant: a ``ScriptFunction`` over the method's arguments followed by
    the module attributes it reads (``attr_refs``), which ``_bind`` appends from the module."""

    def __init__(self, fn: Any, method: FunctionDef, attr_names: list[str],
                 strict: bool = False, name: str | None = None):
        super().__init__(fn, strict=strict)
        self.method_definition = method
        """the method as compiled: its graph's inputs are the arguments then ``attr_refs``."""
        self.attr_refs: list[AttrRef] = list(method.attr_refs)
        """the module attributes the method reads, in graph-input order (``ref.parameter`` is
        the ``Parameter`` object for a parameter)."""
        self._definition = FunctionDef(
            name or method.name, method.graph, method.arg_names + attr_names,
            method.arg_types + [ref.type for ref in self.attr_refs], dict(method.defaults),
            method.return_type, method.source, dtype_args=method.dtype_args)
        self._definition.array_results = method.array_results
        self._nargs = -1 if method.dtype_args else len(self._definition.arg_names)
        self._targets: tuple[int | None, list[Any]] = (None, [])
        """(``state_version``, ``gradient_targets``) as last looked up."""

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        bound = bind_arguments(self.method_definition, args, kwargs)
        params = self.gradient_targets()
        return bound + tuple([ref.read() if p is None else p.data
                              for p, ref in zip(params, self.attr_refs)])

    def gradient_targets(self) -> list[Any]:
        """Per attribute input, the ``Parameter`` its gradient accumulates into (``vjp`` of a
        module), None for a plain array. Looked up again only after a module changed
        (``script.module.state_version``: a parameter assigned anew, say); callers must not
        change the list."""
        version = state_version()
        seen, params = self._targets
        if seen != version:
            params = [ref.parameter for ref in self.attr_refs]
            self._targets = (version, params)
        return params

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        full = self._bind(args, kwargs)
        if instrument.active is not None:  # a profiler: it runs the call and records it
            return instrument.active.call(self, full)
        spec = self._cache.get(self.call_key(full))
        if spec is None:
            spec = self._specialize(full)
        return spec.fn(*full)


class Variant:
    """The entry methods compiled under one set of module constants (the session's guards)."""

    def __init__(self, module: Module, names: list[str], strict: bool = False):
        self.session = ModuleSession()
        paths = {id(m): p for p, m in module.named_modules()}
        self.methods: dict[str, CompiledMethod] = {}
        for name in names:
            fn = method_function(module, name)
            with reported(lambda: Origin.of(fn), "compiling"):
                fdef = self.session.method(module, fn, ScriptError, compile_method)
            attr_names = [_attr_name(paths, ref) for ref in fdef.attr_refs]
            self.methods[name] = CompiledMethod(  # named by the module's class, not the base's
                getattr(module, name), fdef, attr_names, strict, f"{type(module).__name__}.{name}")

    def holds(self) -> bool:
        return self.session.guards_hold()


def _attr_name(paths: dict[int, str], ref: AttrRef | GlobalRef) -> str:
    if isinstance(ref, GlobalRef):
        return ref.name
    path = paths.get(id(ref.owner), "")
    return f"self.{path}.{ref.name}" if path else f"self.{ref.name}"


class ScriptMethod:
    """``script_module.<method>``: calls the variant of the method the module's state selects.
    The graph tools (``graph_for``, ``code_for``, ``explain``, ``backward_graph_for``) take the
    method's arguments as a call does."""

    def __init__(self, owner: ScriptModule, name: str):
        self.owner = owner
        self.name = name

    def current(self) -> CompiledMethod:
        """The compiled method for the module as it is now (compiling it if needed)."""
        return self.owner._variant().methods[self.name]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.current()(*args, **kwargs)

    @property
    def graph(self) -> Graph:
        """The method's graph as written (arguments, then attribute inputs)."""
        return self.current().graph

    def graph_for(self, *args: Any, **kwargs: Any) -> Graph:
        """The optimized graph for these arguments."""
        return self.current().graph_for(*args, **kwargs)

    def code_for(self, *args: Any, **kwargs: Any) -> str:
        """The generated Python source for these arguments."""
        return self.current().code_for(*args, **kwargs)

    def backward_graph_for(self, *args: Any, **kwargs: Any) -> Graph:
        """The optimized backward graph for these arguments (module attributes included)."""
        return self.current().backward_graph_for(*args, **kwargs)

    def explain(self, *args: Any, svg: str | None = None, **kwargs: Any) -> str:
        """How the specialization for these arguments compiled (``ScriptFunction.explain``)."""
        return self.current().explain(*args, svg=svg, **kwargs)

    def specialization(self, *args: Any, **kwargs: Any) -> Specialization:
        return self.current().specialization(*args, **kwargs)

    @property
    def python_fn(self) -> Any:
        """The method of the original module, run eagerly."""
        return getattr(self.owner.python_module, self.name)

    def __repr__(self) -> str:
        return f"<ScriptMethod {type(self.owner.python_module).__name__}.{self.name}>"


class ScriptModule(Module):
    """A compiled ``Module``: ``forward`` and exported methods run compiled; parameters,
    submodules and attributes are the original module's (``python_module``). With
    ``strict=True`` compiling a specialization that leaves an elementwise op unfused raises
    ``ScriptError``, as for a function."""

    def __init__(self, module: Module, strict: bool = False):
        if isinstance(module, ScriptModule):
            module = module.python_module
        set_ = object.__setattr__
        set_(self, "python_module", module)
        set_(self, "strict", strict)
        set_(self, "_parameters", module._parameters)
        set_(self, "_modules", module._modules)
        set_(self, "_variants", [])
        set_(self, "_lock", threading.RLock())
        set_(self, "_entry_names", entry_methods(module))
        set_(self, "_methods", {n: ScriptMethod(self, n) for n in self._entry_names})
        if not self._entry_names:
            raise ScriptError(f"cannot script '{type(module).__name__}': it defines no forward() "
                              "and no @script.export methods")
        self._variant()  # compile now, so errors surface at script() time

    python_module: Module
    """the original module (its ``forward`` runs eagerly)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> ScriptModule:
        """A compiled module of a deep copy of the original (``best = copy.deepcopy(model)``):
        the copy compiles its own code."""
        return ScriptModule(copy.deepcopy(self.python_module, memo), self.strict)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ScriptModule, (self.python_module, self.strict))

    @property  # type: ignore[override]
    def training(self) -> bool:
        return self.python_module.training

    @training.setter
    def training(self, mode: bool) -> None:
        self.python_module.training = mode

    def _variant(self) -> Variant:
        variants = self._variants
        if variants and variants[0].holds():
            return variants[0]
        with self._lock:
            for k, variant in enumerate(variants):
                if variant.holds():
                    variants.insert(0, variants.pop(k))
                    return variant
            variant = Variant(self.python_module, self._entry_names, self.strict)
            variants.insert(0, variant)
            del variants[MAX_VARIANTS:]
            return variant

    @property
    def compiled_variants(self) -> int:
        """How many sets of module constants have been compiled."""
        return len(self._variants)

    def __getattr__(self, name: str) -> Any:
        methods = self.__dict__.get("_methods", {})
        if name in methods:
            return methods[name]
        return getattr(self.__dict__["python_module"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "training":
            object.__setattr__(self, name, value)
            return
        setattr(self.python_module, name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self.python_module, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._methods["forward"](*args, **kwargs)

    @property
    def forward(self) -> ScriptMethod:  # type: ignore[override]
        """The compiled ``forward`` (``m.forward.graph_for(...)`` etc.)."""
        method = self._methods.get("forward")
        if method is None:
            raise AttributeError(f"'{type(self.python_module).__name__}' has no forward()")
        return method

    def graph_for(self, *args: Any, **kwargs: Any) -> Graph:
        """The optimized graph of ``forward`` for these arguments."""
        return self.forward.graph_for(*args, **kwargs)

    def code_for(self, *args: Any, **kwargs: Any) -> str:
        """The generated Python source of ``forward`` for these arguments."""
        return self.forward.code_for(*args, **kwargs)

    def backward_graph_for(self, *args: Any, **kwargs: Any) -> Graph:
        """The optimized backward graph of ``forward`` for these arguments."""
        return self.forward.backward_graph_for(*args, **kwargs)

    def explain(self, *args: Any, svg: str | None = None, **kwargs: Any) -> str:
        """How ``forward`` compiled for these arguments (``ScriptFunction.explain``)."""
        return self.forward.explain(*args, svg=svg, **kwargs)

    @property
    def graph(self) -> Graph:
        return self._methods["forward"].graph

    def _apply(self, convert: Any) -> Module:
        """``to``/``float``/...: convert the original module's arrays (compiled variants
        re-specialize on the new dtypes)."""
        self.python_module._apply(convert)
        return self

    def named_buffers(self, prefix: str = "") -> Any:
        return self.python_module.named_buffers(prefix)

    def __repr__(self) -> str:
        return f"ScriptModule({self.python_module!r})"
