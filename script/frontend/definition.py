"""The frontend's result, ``FunctionDef``, and reading a function's source (``load_source``).

Everything that holds or passes a compiled function (the runtime, freezing, saving, the construct
mixins) imports them from here, below the compiler.
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ir.core import Graph
from ir.ops.prim import DEFERRED_ERROR
from ir.types import DictType, ListType, OptionalType, Type
from passes.static_ints import sizing_inputs, trip_inputs
from script.errors import ScriptError, SourceInfo


@dataclass
class FunctionDef:
    """A compiled Python function: its graph and what a caller needs to bind arguments."""

    name: str
    """``fn.__qualname__``."""
    graph: Graph
    """inputs are the parameters in order; exactly one output, the return value."""
    arg_names: list[str]
    """parameter names in order."""
    arg_types: list[Type]
    """parameter types (from annotations; unannotated parameters are Tensor)."""
    defaults: dict[str, object]
    """Python default values by parameter name."""
    return_type: Type
    """the annotated return type, or the type inferred from the returned values."""
    source: SourceInfo
    """the file the function came from, to point errors at it."""
    attr_refs: list[Any] = field(default_factory=list)
    """what the graph reads after the parameters, in input order: module attributes (parameters,
    arrays; ``modules.AttrRef``) and global arrays (``globals.GlobalRef``),
    each read at every call."""
    guards: dict[Any, Any] = field(default_factory=dict)
    """the global scalars compiled in as constants (``modules.Guard``s, callees'
    included): the definition is stale once one no longer holds."""

    static_args: dict[str, Any] = field(default_factory=dict)
    """parameters whose default is a module (``xp=numpy``): compile-time names in the body, not
    inputs of the graph; a caller may pass any array module for them."""
    python_params: list[str] = field(default_factory=list)
    """every parameter name in the Python signature's order (``static_args`` included)."""
    object_args: tuple[int, ...] = ()
    """the positions of the parameters annotated with a plain class (``object_args``): their
    inputs are None placeholders, the attributes read are ``attr_refs`` (``ArgAttrRef``)."""
    dtype_args: tuple[int, ...] = ()
    """the positions of the parameters whose default is a dtype (``dtype=np.float64``): typed
    as its name, a ``str``; a call's dtype (``np.float32``, ``np.dtype("float32")``, ``float``)
    is passed as its name (``bind_arguments``)."""
    any_length: frozenset[int] = frozenset()
    """the positions of the list inputs a call is keyed and compiled for whatever their length
    (``script.runtime.list_lengths``): calls passed lists of many lengths there."""
    list_lengths: dict[int, set[int]] = field(default_factory=dict)
    """per list input, the lengths the compiled calls passed."""
    attr_stores: tuple[tuple[int, tuple[Any, ...], Type], ...] = ()
    """the attributes of object arguments the function assigns (``object_stores``): (the
    parameter's position, the path from it, the type of the value it leaves there)."""
    caller_writes: tuple[int, ...] = ()
    """the positions of the inputs (arrays, or lists and dicts of them) holding arrays the
    function writes into in place (``caller_writes``): each call checks no other input shares
    their memory."""
    array_results: tuple[tuple[int, ...], ...] = ()
    """where the result is numpy's array even when 0-d (``np.zeros(())``, ``z += v`` of one, an
    argument's copy): ``()`` for the result itself, ``(k,)`` for item ``k`` of a returned
    tuple. Operations on 0-d arrays give numpy's scalars, so the code a specialization runs may
    return one there; a call gives back the array (``script.runtime.function``)."""
    writes_read: bool = False
    """whether the function reads an array it writes into (``write_order``): each call also
    checks the written arrays apart from one another."""

    @property
    def deferred_errors(self) -> list[Any]:
        """The ``ScriptError``s of the branches that did not compile (``defer_branch``), in
        the graph's order: a specialization that keeps such a branch raises its error."""
        return [ScriptError(*n.attrs[DEFERRED_ERROR]) for n in self.graph.walk()
                if n.kind == "prim::RaiseException" and DEFERRED_ERROR in n.attrs]

    @functools.cached_property
    def static_ints(self) -> tuple[int, ...]:
        """The positions of the int inputs whose values size arrays (``passes.static_ints``):
        the call signature holds their values, and each specialization compiles them in."""
        return sizing_inputs(self.graph)

    @functools.cached_property
    def trip_ints(self) -> tuple[int, ...]:
        """The positions of the other int inputs that count a loop's trips
        (``passes.static_ints.trip_inputs``): a call that passes one equal to an array
        argument's axis or a list argument's length is keyed by that value, and compiles it in."""
        return trip_inputs(self.graph, self.static_ints)

    @functools.cached_property
    def container_inputs(self) -> tuple[int, ...]:
        """The positions of the list and dict inputs (a call passing one object at two of them
        compiles a specialization of its own: ``signature.shared_positions``)."""
        return tuple(k for k, t in enumerate(self.input_types())
                     if isinstance(t.element if isinstance(t, OptionalType) else t,
                                   (ListType, DictType)))

    def positional_names(self) -> list[str]:
        """The parameter names positional arguments bind to, ``static_args`` included."""
        return self.python_params or self.arg_names

    def input_names(self) -> list[str]:
        """The names of all the graph's inputs: the parameters, then ``attr_refs``."""
        return self.arg_names + [ref.name for ref in self.attr_refs]

    def input_types(self) -> list[Type]:
        return self.arg_types + [ref.type for ref in self.attr_refs]


def load_source(fn: Callable[..., Any]) -> tuple[ast.FunctionDef, SourceInfo]:
    """The function's ``ast`` (line and column numbers absolute in its file) and its file."""
    name = getattr(fn, "__qualname__", repr(fn))
    if not inspect.isfunction(fn):
        raise ScriptError(f"cannot compile {name!r}: only Python functions can be scripted")
    if fn.__name__ == "<lambda>":
        return _lambda_source(fn)
    try:  # of the code object: the function's own (a decorator's wrapper is not unwrapped)
        file, lines, start = _code_source(fn)
    except (OSError, TypeError):
        file, lines, start = None, [], 0
    if not file or not lines:
        raise ScriptError(f"cannot compile '{name}': its source code is unavailable (functions "
                          "defined in an interactive session or with exec() have no source "
                          "file); define it in a .py file")
    source = SourceInfo(file, tuple(line.rstrip("\n") for line in linecache.getlines(file)))
    text = "".join(lines)
    offset = start - 1
    if text[:1].isspace():  # a nested or method definition: parse it inside a dummy block
        text, offset = "if 1:\n" + text, start - 2
    tree = ast.parse(text, type_comments=True)
    ast.increment_lineno(tree, offset)
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            raise ScriptError.at(node, source, "lambda is not supported; use a def")
        if isinstance(node, ast.AsyncFunctionDef):
            raise ScriptError.at(node, source, "async functions are not supported")
        if isinstance(node, ast.FunctionDef) and node.name != fn.__code__.co_name:
            raise ScriptError(f"cannot compile '{name}': its source file has changed since it "
                              f"was defined (line {start} of {file} now defines "
                              f"'{node.name}'); reload the module")
        if isinstance(node, ast.FunctionDef):
            _mangle_private_names(node, fn)
            return node, source
    raise ScriptError(f"cannot compile '{name}': no function definition found in its source")


def _mangle_private_names(tree: ast.FunctionDef, fn: Callable[..., Any]) -> None:
    """``self.__forward`` in a method of ``BatchNormalization`` is the attribute
    ``_BatchNormalization__forward``, as Python's compiler mangles it (its code object names
    the mangled attribute)."""
    parts = fn.__qualname__.split(".")
    if len(parts) < 2 or parts[-2] == "<locals>":
        return
    owner = parts[-2].lstrip("_")
    names = set(fn.__code__.co_names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("__") and \
                not node.attr.endswith("__") and f"_{owner}{node.attr}" in names:
            node.attr = f"_{owner}{node.attr}"


_DEFINITION = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")
"""A line that starts a definition (``inspect.findsource``'s pattern)."""


def _code_source(fn: Callable[..., Any]) -> tuple[str | None, list[str], int]:
    """(file, the lines of the definition, its first line number) of the function's code
    object, as ``inspect.getsourcelines(fn.__code__)`` finds them, without its search of
    every loaded module for the one that holds the code (``inspect.getmodule``: a third of a
    second on a first call with torch, jax or cupy imported): the function's globals are its
    module's."""
    code = fn.__code__
    file = inspect.getsourcefile(code)
    if not file:
        return None, [], 0
    linecache.checkcache(file)
    lines = linecache.getlines(file, fn.__globals__)
    at = code.co_firstlineno - 1
    if not 0 <= at < len(lines):
        return file, [], 0
    while at > 0 and not _DEFINITION.match(lines[at]):
        at -= 1
    return file, inspect.getblock(lines[at:]), at + 1


def _lambda_source(fn: Callable[..., Any]) -> tuple[ast.FunctionDef, SourceInfo]:
    """A lambda (``relu = lambda z: np.maximum(z, 0)`` at module level, one an attribute holds)
    as the ``def`` it stands for: found in its file by its line and its parameters' names."""
    code = fn.__code__
    line = linecache.getline(code.co_filename, code.co_firstlineno).rstrip()
    lines = linecache.getlines(code.co_filename)
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        tree = None
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    found = [] if tree is None else [
        node for node in ast.walk(tree) if isinstance(node, ast.Lambda)
        and node.lineno == code.co_firstlineno
        and [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
        == params]
    if len(found) != 1:
        why = "its source code is unavailable" if tree is None else \
            "several lambdas on its line take the same parameters"
        raise ScriptError(f"cannot compile this lambda: {why}; use a def", code.co_filename,
                          code.co_firstlineno, 0, line)
    node = found[0]
    fdef = ast.FunctionDef(name="<lambda>", args=node.args, body=[ast.Return(node.body)],
                           decorator_list=[], returns=None, type_comment=None, type_params=[])
    ast.copy_location(fdef.body[0], node.body)
    ast.copy_location(fdef, node)
    source = SourceInfo(code.co_filename, tuple(x.rstrip("\n") for x in lines))
    return fdef, source
