"""Unannotated parameters typed by the calls: a number, string, tuple, list or dict passed for a
parameter without an annotation (``def rnn(inputs, state, params)`` called with a tuple state
and a list of weights) is typed as passed, as the functions a scripted function calls are
(``script.frontend.callees.typed_by_the_call``). Read as an array, which an unannotated
parameter otherwise is, the call would be refused. Arrays and plain objects keep that reading
(objects are object arguments), and so does None (an optional array where the parameter's
default is None), unless the function does not compile so (``if state is None: state = (x,
x)``): then None is None (``none_arguments``). A later call passing another type widens the
type to one holding both (an int and then a float is a float, a tuple and then None an
Optional tuple) and the function compiles again; one no type holds with the first (an int,
then an array) is a ``SignatureError`` as for an annotated parameter."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ir.types import NONE, TENSOR, OptionalType, Type
from script.errors import ScriptError
from script.frontend.annotations import declared
from script.frontend.infer_types import Conflict, erase_dtypes, join, type_of_example
from script.frontend.object_args import is_object_sequence, is_plain_object
from script.module import is_array

TYPED = (int, float, str, tuple, list, dict)
"""The Python types of the values that type an unannotated parameter."""


def call_types(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
               objects: set[str]) -> dict[str, Type]:
    """The types a call ``fn(*args, **kwargs)`` gives ``fn``'s unannotated parameters (not
    those in ``objects``): dtypes left open, as an annotation ``Tensor`` leaves them."""
    try:
        signature = inspect.signature(fn)
        binding = signature.bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return {}
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
             inspect.Parameter.KEYWORD_ONLY)
    annotations = declared(fn)
    found: dict[str, Type] = {}
    for name, value in binding.arguments.items():
        parameter = signature.parameters[name]
        if parameter.kind not in plain or name in annotations or name in objects:
            continue
        if parameter.default not in (inspect.Parameter.empty, None):
            # another default keeps its reading, but a number's where the call passes an
            # array (filterpy's ``predict(x, P, F=1, Q=0)`` called with matrices)
            if type(parameter.default) in (int, float, bool) and is_array(value):
                found[name] = TENSOR
            continue
        if value is None or is_array(value) or not isinstance(value, TYPED):
            continue
        try:
            found[name] = erase_dtypes(type_of_example(value))
        except Conflict:  # a value the language has no type for: the signature refuses it
            continue
    return found


def compile_for_call(compile: Callable[[dict[str, Type] | None], Any],
                     types: dict[str, Type] | None, nones: dict[str, Type]
                     ) -> tuple[Any, dict[str, Type]]:
    """``compile(types)``, or where that raises a ``ScriptError`` and the call left parameters
    None (``nones``), ``compile`` with those read as None (``if state is None: state = (x,
    x)`` refused with the default's optional array); where that fails too, the first error (its
    hints name the parameter), unless it named one of those parameters and the second names
    none of them nor a None: the None reading got past them to another refusal (a ``try`` in a
    called function). Returns the definition and the None types it took."""
    try:
        return compile(types), {}
    except ScriptError as error:
        if not nones:
            raise
        try:
            return compile((types or {}) | nones), nones
        except ScriptError as second:
            def names(e: ScriptError) -> bool:
                return any(f"'{name}'" in str(e) for name in nones)
            if names(error) and not names(second) and "NoneType" not in str(second):
                raise second from None  # (not a use of the None itself)
            raise error from None


def none_arguments(fn: Callable[..., Any], example: tuple[tuple[Any, ...], dict[str, Any]] | None,
                   objects: set[str]) -> dict[str, Type]:
    """``NONE`` for each unannotated parameter (not in ``objects``) with a None default that the
    call ``example`` (args, kwargs) leaves None: the reading a definition refused with their
    optional-array type compiles with instead."""
    if example is None:
        return {}
    try:
        signature = inspect.signature(fn)
        binding = signature.bind_partial(*example[0], **example[1])
    except (TypeError, ValueError):
        return {}
    annotations = declared(fn)
    return {name: NONE for name, p in signature.parameters.items()
            if p.default is None and name not in annotations and name not in objects
            and binding.arguments.get(name) is None}


def widen(typed: dict[str, Type], names: Sequence[str], inputs: Sequence[Any],
          open_optional: set[str] = frozenset()) -> dict[str, Type]:  # type: ignore[assignment]
    """The call-typed parameters (``typed``) whose type a call's ``inputs`` (by parameter
    ``names``) widen, with the widened types; empty when none does or when one passes a value
    no type holds with the first. ``open_optional``: unannotated parameters with a None
    default that no call typed yet (each call so far passed None or an array): one passed a
    value ``call_types`` types becomes Optional of its type."""
    changed = {}
    for name, value in zip(names, inputs):
        old = typed.get(name)
        if old is None:
            if name in open_optional and value is not None and not is_array(value) and \
                    isinstance(value, TYPED):
                try:
                    changed[name] = OptionalType(erase_dtypes(type_of_example(value)))
                except Conflict:
                    return {}
            continue
        try:
            new = join(old, erase_dtypes(type_of_example(value)))
        except Conflict:
            return {}
        if new != old:
            changed[name] = new
    return changed


def object_parameters(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                      ) -> dict[str, str]:
    """The unannotated parameters a call passes a plain object (``"object"``) or a list or tuple
    of them (``"sequence"``): object arguments, as if annotated with the class (numpy-ml's
    drivers, ``def run(L1, X): ... L1.forward(X[:, :, t])``), by name."""
    try:
        signature = inspect.signature(fn)
        binding = signature.bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return {}
    annotated = declared(fn)
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
             inspect.Parameter.KEYWORD_ONLY)
    found = {}
    for name, value in binding.arguments.items():
        if name in annotated or signature.parameters[name].kind not in plain:
            continue
        if is_plain_object(value):
            found[name] = "object"
        elif isinstance(value, (list, tuple)) and value and is_object_sequence(value):
            found[name] = "sequence"
    return found
