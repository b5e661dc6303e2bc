"""Compile on first call: the ``rnn`` modules run compiled without the user calling ``script``.

Every module of ``rnn`` (cells, layers, ``LSTM``/``GRU``/``RNN``) derives from ``CompiledModule``:
calling it checks the arguments (``prepare_call``, which raises ``SignatureError`` or
``ValueError`` at the user's call), then runs the module's ``ScriptModule``, made on the first
call and kept on the module. With ``RNNSCRIPT_DISABLE=1`` in the environment, calls run
``forward`` as Python. ``script(module)`` keeps working: it compiles the same ``forward``, and
``vjp(module, ...)`` uses the kept ``ScriptModule`` (``compiled``), so its gradient is compiled
once. A module whose ``forward`` the compiler refuses (a user's cell in a layer, say) warns once
and runs as Python. ``graph_for``, ``code_for``, ``backward_graph_for`` and ``explain`` take a
call's arguments (checked and converted as a call's), as a ``ScriptFunction``'s do;
``script(module, strict=True)`` gives a strict compiled module (which, as ``script(module)``,
takes ``forward``'s arguments unchecked), and ``script.profile()`` records the calls.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from script import Module, ScriptError


def disabled() -> bool:
    """True when ``RNNSCRIPT_DISABLE`` asks for plain Python (read at each call, as ``script``)."""
    return os.environ.get("RNNSCRIPT_DISABLE", "") not in ("", "0")


class CompiledModule(Module):
    """A module whose calls run compiled (see the module docstring)."""

    def prepare_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                     ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments ``forward`` gets for a call: raise ``SignatureError``/``ValueError``
        for ones it cannot take, convert ones it takes in another form (the default passes
        everything on; the compiler's own signature checks still apply)."""
        return args, kwargs

    def compiled(self) -> Module:
        """The module's ``ScriptModule``, compiled on first use and kept (raises the compiler's
        ``ScriptError`` when ``forward`` cannot compile)."""
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            from script.runtime.script_module import ScriptModule
            compiled = ScriptModule(self)
            object.__setattr__(self, "_compiled", compiled)
        return compiled

    def __rnnscript_module__(self, args: tuple[Any, ...]) -> tuple[Module, tuple[Any, ...]]:
        """What ``vjp(self, *args)`` differentiates: the kept ``ScriptModule`` and the
        arguments as ``prepare_call`` passes them on."""
        args, _ = self.prepare_call(args, {})
        return self.compiled(), args

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = self.prepare_call(args, kwargs)
        if disabled() or self.__dict__.get("_refused"):
            return self.forward(*args, **kwargs)
        try:
            compiled = self.compiled()
        except ScriptError as e:
            object.__setattr__(self, "_refused", True)
            warnings.warn(f"{type(self).__name__} runs as Python: its forward does not compile "
                          f"({str(e).splitlines()[0]})", stacklevel=2)
            return self.forward(*args, **kwargs)
        return compiled(*args, **kwargs)

    # -- observability: as a ScriptFunction's, for a call's arguments (checked as a call) ----------
    def _method(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                ) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        args, kwargs = self.prepare_call(args, kwargs)
        return self.compiled().forward.current(), args, kwargs

    def graph_for(self, *args: Any, **kwargs: Any) -> Any:
        """The optimized graph of ``forward`` for these arguments."""
        method, args, kwargs = self._method(args, kwargs)
        return method.graph_for(*args, **kwargs)

    def code_for(self, *args: Any, **kwargs: Any) -> str:
        """The generated Python source of ``forward`` for these arguments."""
        method, args, kwargs = self._method(args, kwargs)
        return method.code_for(*args, **kwargs)

    def backward_graph_for(self, *args: Any, **kwargs: Any) -> Any:
        """The optimized backward graph of ``forward`` for these arguments."""
        method, args, kwargs = self._method(args, kwargs)
        return method.backward_graph_for(*args, **kwargs)

    def explain(self, *args: Any, svg: str | None = None, **kwargs: Any) -> str:
        """How ``forward`` compiled for these arguments: fusion groups, elementwise ops left
        out and why, loops and matmuls (``ScriptFunction.explain``)."""
        method, args, kwargs = self._method(args, kwargs)
        return method.explain(*args, svg=svg, **kwargs)


__all__ = ["CompiledModule", "disabled"]
