"""``script(obj.forward)``: a method of a plain object, scripted as its class's function with the
object as ``self`` (``script.frontend.object_args.method_class``), and called as the bound method
is: ``fm(h, x)`` is ``GRUCell.forward(cell, h, x)`` compiled. The object's attributes are read at
every call, as for any object argument, so a weight the object is given later is the one used.
``vjp``, ``grad`` and ``value_and_grad`` of it differentiate its arguments; the object is a
constant (``vjp(script(GRUCell.forward), cell, h, x)`` differentiates its arrays too)."""

from __future__ import annotations

import types
from typing import Any

from script.runtime.function import ScriptFunction


class BoundScriptMethod:
    """A scripted function (``function``) with its first argument bound to ``obj``."""

    def __init__(self, function: ScriptFunction, obj: Any):
        self.function = function
        self.obj = obj
        self.__name__ = function.python_fn.__name__
        self.__qualname__ = function.python_fn.__qualname__
        self.__doc__ = function.python_fn.__doc__
        self.python_fn = types.MethodType(function.python_fn, obj)
        """the Python method (its signature without ``self``: keyword arguments bind to it)."""

    def __repr__(self) -> str:
        return f"<bound scripted method {self.__qualname__} of {self.obj!r}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(self.obj, *args, **kwargs)

    def graph_for(self, *args: Any, **kwargs: Any) -> Any:
        return self.function.graph_for(self.obj, *args, **kwargs)

    def code_for(self, *args: Any, **kwargs: Any) -> str:
        return self.function.code_for(self.obj, *args, **kwargs)

    def explain(self, *args: Any, **kwargs: Any) -> str:
        return self.function.explain(self.obj, *args, **kwargs)
