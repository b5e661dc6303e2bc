"""A call's arguments as a specialization takes them: bound to the parameters of a compiled
definition (``bind_arguments``), typed and checked against the declared types
(``input_types``, ``input_items``, ``check_devices``), with the values a specialization
compiles in (``static_arguments``) and the number parameters a call passes ints for made
floats (``coerce_numbers``)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import ir
from ir.core import Graph
from script.errors import SignatureError
from script.frontend.signature import (
    device_of,
    dtype_name,
    item_types,
    static_value,
    trip_value,
    type_of,
)


def bind_arguments(d: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``args`` and ``kwargs`` bound to the parameters of the ``FunctionDef`` ``d``, defaults
    filled in; raises SignatureError where Python would raise TypeError."""
    if d.static_args:
        args, kwargs = _without_static_args(d, args, kwargs)
    names = d.arg_names
    if len(args) > len(names):
        raise SignatureError(f"{d.name}() takes {len(names)} arguments but {len(args)} "
                             "were given")
    bound = list(args)
    for name in names[len(args):]:
        if name in kwargs:
            bound.append(kwargs[name])
        elif name in d.defaults:
            bound.append(d.defaults[name])
        else:
            raise SignatureError(f"{d.name}() missing required argument '{name}'")
    for name in kwargs:
        if name not in names:
            raise SignatureError(f"{d.name}() got an unexpected keyword argument '{name}'")
        if names.index(name) < len(args):
            raise SignatureError(f"{d.name}() got multiple values for argument '{name}'")
    for k in d.dtype_args:
        name = "float64" if bound[k] is None else dtype_name(bound[k])  # np.dtype(None)
        if name is None and not isinstance(bound[k], str):
            raise SignatureError(f"{d.name}() argument '{names[k]}' must be a dtype, as its "
                                 f"default is (np.float32, np.dtype('float32'), 'float32'); "
                                 f"got {type(bound[k]).__name__}")
        bound[k] = name or bound[k]
    return tuple(bound)


def _without_static_args(d: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                         ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments less those of parameters with a module default (``xp=numpy``) or a
    function default (``act=np.tanh``), which the compiled code does not take: any array module
    may be passed for the first, only the default itself for the second."""
    named = dict(zip(d.python_params, args))
    if len(args) > len(d.python_params):
        raise SignatureError(f"{d.name}() takes {len(d.python_params)} arguments but "
                             f"{len(args)} were given")
    for name in d.static_args:
        default = d.static_args[name]
        value = named.pop(name, kwargs.get(name, default))
        if not isinstance(default, ModuleType) and value is not default:
            raise SignatureError(
                f"{d.name}() argument '{name}' is compiled as its default, "
                f"{getattr(default, '__name__', default)!s}; got {value!r} (call the function "
                "with another one from a plain Python function, or script a wrapper that "
                "passes it)")
        if isinstance(default, ModuleType) and not isinstance(value, ModuleType):
            raise SignatureError(f"{d.name}() argument '{name}' must be an array module (numpy "
                                 f"or cupy), as its default is; got {type(value).__name__}")
    rest = {k: v for k, v in kwargs.items() if k not in d.static_args}
    return tuple(named.values()), rest


def static_arguments(d: Any, inputs: tuple[Any, ...]) -> dict[int, Any]:
    """The values a specialization compiles in for the int inputs that size arrays, and for the
    trip counts that equal an array argument's axis, by input position (the call key holds
    them: ``ScriptFunction.call_key``)."""
    found = {}
    for k in d.static_ints:
        value = static_value(inputs[k])
        if value is not None:
            found[k] = value
    for k in d.trip_ints:
        value = trip_value(inputs, inputs[k])
        if value is not None:
            found[k] = value
    return found


def coerce_numbers(graph: Graph, types: list[ir.Type]) -> None:
    """An int passed for a ``float`` parameter becomes a float at the top of the graph, so the
    rest of the graph sees the type it was written for."""
    for k, (value, actual) in enumerate(zip(graph.inputs, types)):
        if value.type != ir.FLOAT or actual not in (ir.INT, ir.BOOL):
            continue
        with graph.inserting_before(graph.block.param_node.next):
            as_float = graph.insert("prim::Float", [value], [ir.FLOAT], names=[value.name]).output
        value.replace_all_uses_with(as_float)
        as_float.node.set_input(0, value)
        value.type = actual
        types[k] = actual


def input_types(d: Any, inputs: tuple[Any, ...]) -> list[ir.Type]:
    """The IR types of a call's graph inputs (arguments, then globals and attributes), each
    checked against its declared type."""
    return [type_of(a, t, f"{d.name}(): {_describe_input(d, k, n)}")
            for k, (a, t, n) in enumerate(zip(inputs, d.input_types(), d.input_names()))]


def input_items(d: Any, inputs: tuple[Any, ...]) -> list[Any]:
    """Per graph input, the types of its items when it is a list or dict (else None)."""
    return [item_types(a, t) for a, t in zip(inputs, d.input_types())]


def _describe_input(d: Any, k: int, name: str) -> str:
    if k < len(d.arg_names):
        return f"argument '{name}'"
    ref = d.attr_refs[k - len(d.arg_names)]
    return f"the attribute '{name}'" if type(ref).__name__ == "ArgAttrRef" else \
        f"the global '{name}'"


def check_devices(d: Any, args: tuple[Any, ...]) -> None:
    seen: dict[str, str] = {}
    for name, a in zip(d.input_names(), args):
        dev = device_of(a)
        if dev is not None:
            seen.setdefault(dev, name)
    if len(seen) > 1:
        raise SignatureError(f"{d.name}(): arguments mix devices: '{seen.get('cpu')}' is a numpy "
                             f"array and '{seen.get('cuda')}' a CuPy array")
