"""rnnscript: a JIT scripting language for recurrent models over numpy and CuPy arrays.

``@script`` turns a type-annotated Python function into SSA IR, optimizes and specializes it per
input signature, and runs the generated code; ``python_fn`` stays available as the reference.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

from script import ops
from script._version import __version__  # noqa: F401  (re-exported)
from script.artifact.freeze import freeze
from script.artifact.onnx_export import export_onnx
from script.artifact.serialize import load, save
from script.errors import ArgumentShapeError, LoadError, ScriptError, SignatureError
from script.frontend.classes import register_script_class
from script.frontend.compiler import compile_method
from script.frontend.infer_types import infer_annotations
from script.frontend.object_args import is_plain_object, method_class
from script.module import Module, ModuleList, Parameter
from script.runtime.autodiff import vjp
from script.runtime.bound_method import BoundScriptMethod
from script.runtime.function import ScriptFunction
from script.runtime.gradients import grad, value_and_grad
from script.runtime.script_module import ScriptModule, export
from script.tools.profiler import profile


class Tensor:
    """Annotation for a numpy or CuPy ndarray argument or result."""

    def __init__(self) -> None:
        raise TypeError("Tensor is an annotation; pass numpy or CuPy arrays")


def script(obj: Any = None, *, example_inputs: Any = None, strict: bool = False,
           fullgraph: bool = False) -> Any:
    """Compile a function for fast repeated execution (usable as ``@script``).

    ``example_inputs=[args1, args2, ...]`` types unannotated parameters and the return value from
    example calls (``script.frontend.infer_types``). ``strict=True`` (alias ``fullgraph=True``)
    makes compiling a specialization raise ScriptError when an elementwise op stays outside a fusion
    group or a group falls back to Python (``fn.explain(*args)`` reports the same, politely).
    With ``RNNSCRIPT_DISABLE=1`` in the environment it returns ``obj`` unchanged, so everything
    runs as plain Python.
    """
    strict = strict or fullgraph
    if obj is None:
        return lambda f: script(f, example_inputs=example_inputs, strict=strict)
    if os.environ.get("RNNSCRIPT_DISABLE", "") not in ("", "0"):
        return obj
    if isinstance(obj, ScriptFunction):
        return obj
    if isinstance(obj, Module):
        if isinstance(obj, ScriptModule) and (obj.strict or not strict):
            return obj
        return ScriptModule(obj, strict=strict)
    if isinstance(obj, type):
        return register_script_class(obj, compile_method)
    if inspect.ismethod(obj) and inspect.isfunction(obj.__func__) and (
            method_class(obj.__func__) is not None or is_plain_object(obj.__self__)):
        # a plain object's method (one attached to its class too: d2l's add_to_class)
        function = ScriptFunction(obj.__func__, example_inputs=example_inputs, strict=strict)
        first = obj.__func__.__code__.co_varnames[0]
        function.__dict__["_object_names"] = {first: "object"} | function._object_params()
        return BoundScriptMethod(function, obj.__self__)
    if callable(obj) and hasattr(obj, "__code__"):
        return ScriptFunction(obj, example_inputs=example_inputs, strict=strict)
    raise ScriptError(f"cannot script an object of type {type(obj).__name__}: "
                      "@script takes a function, a Module instance or a class")


script.infer_annotations = infer_annotations  # type: ignore[attr-defined]
script.profile = profile  # type: ignore[attr-defined]


script.export = export  # type: ignore[attr-defined]

__all__ = ["ArgumentShapeError", "LoadError", "Module", "ModuleList", "Parameter", "ScriptError",
           "ScriptFunction", "SignatureError", "Tensor", "export_onnx", "freeze",
           "infer_annotations", "load", "ops", "grad", "profile", "save", "script",
           "value_and_grad", "vjp"]
