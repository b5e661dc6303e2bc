"""Gradients with respect to plain object arguments (``script.frontend.object_args``).

The attributes a function reads from an object argument are graph inputs after the arguments;
``vjp`` differentiates those of the objects it is asked for and gives each object's gradient as
an object of the same class (made without calling ``__init__``, as ``copy`` makes one) holding,
at every attribute path the function read, that attribute's gradient: ``g.W_f.v`` is the
gradient of ``p.W_f.v``; a list (or tuple) of objects, an argument or an attribute, gets a list
(tuple) of such objects, one per item: ``g.layers[1].W``. An attribute that is not
differentiable (an int, an integer array, a Python float) holds None; attributes the function
did not read are not set.
"""

from __future__ import annotations

import types
from typing import Any

from script.frontend.object_args import ArgAttrRef


def object_attribute_positions(d: Any, wrt: frozenset[int] | None) -> frozenset[int]:
    """``wrt`` (argument positions, None: all) with the graph inputs of the attributes read from
    the object arguments in it added."""
    nargs = len(d.arg_names)
    wanted = frozenset(range(nargs)) if wrt is None else wrt
    return wanted | {nargs + j for j, ref in enumerate(d.attr_refs)
                     if isinstance(ref, ArgAttrRef) and ref.param in wanted
                     and ref.holds_attribute}


def object_gradients(d: Any, bound: tuple[Any, ...], wrt: frozenset[int],
                     grads: tuple[Any, ...]) -> tuple[Any, ...]:
    """The arguments' gradients, from the graph inputs' ``grads``: an object argument's is an
    object like it, a list of objects' a list (or tuple) of such objects (None when it is not
    differentiated)."""
    nargs = len(d.arg_names)
    result = list(grads[:nargs])
    for k in d.object_args:
        if k not in wrt:
            result[k] = None
            continue
        made: dict[tuple[Any, ...], Any] = {}
        _make(made, (), bound[k])
        for j, ref in enumerate(d.attr_refs):
            if isinstance(ref, ArgAttrRef) and ref.param == k and ref.holds_attribute:
                _put(made, bound[k], ref.path, grads[nargs + j])
        result[k] = made[()]
    return tuple(result)


def _put(made: dict[tuple[Any, ...], Any], root: Any, path: tuple[Any, ...], g: Any) -> None:
    """Set ``g`` at ``path`` in the gradient object ``made[()]``, making the objects (and lists
    of objects) on the way (one per path prefix)."""
    source = root
    for depth in range(1, len(path)):
        step = path[depth - 1]
        source = source[step] if type(step) is int else getattr(source, step)
        if path[:depth] not in made:
            _make(made, path[:depth], source)
            setattr(made[path[:depth - 1]], step, made[path[:depth]])  # not an int step: made
    setattr(made[path[:-1]], path[-1], g)


def _make(made: dict[tuple[Any, ...], Any], prefix: tuple[Any, ...], source: Any) -> None:
    """The gradient at ``prefix`` of ``source``: a blank object, or a list (tuple) of blank
    objects for a list of objects (its items made too)."""
    if type(source) not in (list, tuple):
        made[prefix] = _blank_like(source)
        return
    for index, item in enumerate(source):
        _make(made, prefix + (index,), item)
    made[prefix] = type(source)(made[prefix + (index,)] for index in range(len(source)))


def _blank_like(obj: Any) -> Any:
    """An object of ``obj``'s class with no attributes set (``__init__`` is not called)."""
    cls = type(obj)
    try:
        blank = cls.__new__(cls)
        blank.__dict__.clear()
    except Exception:  # a class whose __new__ needs arguments
        return types.SimpleNamespace()
    return blank
