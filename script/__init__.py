"""rnnscript: a JIT scripting language for recurrent models over numpy and CuPy arrays.

``@script`` turns a type-annotated Python function into SSA IR, optimizes and specializes it per
input signature, and runs the generated code; ``python_fn`` stays available as the reference.
"""

from __future__ import annotations

import os
from typing import Any

from script import ops
from script.autodiff import value_and_grad, vjp
from script.errors import ScriptError, SignatureError
from script.function import ScriptFunction


class Tensor:
    """Annotation for a numpy or CuPy ndarray argument or result."""

    def __init__(self) -> None:
        raise TypeError("Tensor is an annotation; pass numpy or CuPy arrays")


def script(obj: Any = None, *, example_inputs: Any = None) -> Any:
    """Compile a function for fast repeated execution (usable as ``@script``).

    With ``RNNSCRIPT_DISABLE=1`` in the environment it returns ``obj`` unchanged, so everything
    runs as plain Python.
    """
    if obj is None:
        return lambda f: script(f, example_inputs=example_inputs)
    if os.environ.get("RNNSCRIPT_DISABLE", "") not in ("", "0"):
        return obj
    if isinstance(obj, ScriptFunction):
        return obj
    if callable(obj) and hasattr(obj, "__code__"):
        return ScriptFunction(obj)
    raise ScriptError(f"cannot script an object of type {type(obj).__name__}: "
                      "@script takes a function")


def _register_constant_evaluator() -> None:
    """Let constant propagation fold tensor ops with the eager op library."""
    try:
        from passes import constant_prop
    except ImportError:
        return
    setter = getattr(constant_prop, "set_evaluator", None)
    if setter is not None:
        setter(lambda kind, args: getattr(ops, kind.split("::", 1)[1])(*args))


_register_constant_evaluator()

__all__ = ["ScriptError", "ScriptFunction", "SignatureError", "Tensor", "ops", "script",
           "value_and_grad", "vjp"]
