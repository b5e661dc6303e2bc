"""The Python frontend: the ``ast`` of a type-annotated Python function -> an SSA ``ir.Graph``.

``compile_function(fn)`` reads the function's source (so errors can quote the user's lines),
resolves parameter types from annotations or a ``# type:`` comment and walks the body with one
``visit_X`` method per construct, in the style of Triton's code generator: names map to SSA values
through a chain of ``Frame``s, an ``if`` becomes a ``prim::If`` whose outputs are the names a
branch redefined, a loop becomes a ``prim::Loop`` carrying the names its body assigns. ``break``,
``continue`` and early ``return`` become hidden boolean flags that guard the statements after them
(TorchScript's exit transform). Every construct the language does not support is rejected with a
``ScriptError`` pointing at it.

The work is split by responsibility: this module holds the driver, parameters and the SSA
plumbing; ``definition`` the result (``FunctionDef``) and source loading, ``env`` the scopes,
``exprs`` the expressions, ``calls`` calls and builtins, ``stmts`` the statements and control flow,
``globals`` the names read from the module or closure (arrays become inputs read at every call,
scalars guarded constants), ``modules``, ``objects``, ``iter`` and ``containers`` the rest. The
construct mixins never import this module (it imports them): they compile what the code calls
through ``compile_callee`` and ``compile_module_method``.
"""

from __future__ import annotations

import ast
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from ir.core import Block, Graph, Node, SourceRange, Value
from ir.errors import IRError
from ir.kinds import UNINITIALIZED
from ir.registry import ShapeError, infer_types
from ir.types import ANY, DictType, ListType, Type, is_subtype, unify
from script.errors import ScriptError, SourceInfo
from script.frontend.annotations import (
    function_namespace,
)
from script.frontend.branches import BranchMixin, is_placeholder
from script.frontend.callees import CalleeMixin
from script.frontend.caller_writes import CallerWriteMixin
from script.frontend.calls import CallMixin
from script.frontend.containers import ContainerMixin
from script.frontend.definition import FunctionDef, load_source
from script.frontend.env import (
    RETURN_FLAG,
    RETURN_VALUE,
    Frame,
    LoopContext,
    MaybeUnbound,
    Static,
    Undefined,
    always_returns,
    describe_variable,
    dominating_stores,
    is_function_value,
    loaded_names,
    walk_same_function,
)
from script.frontend.exprs import ExprMixin
from script.frontend.function_tables import FunctionTableMixin
from script.frontend.globals import GlobalsMixin, guards_hold
from script.frontend.in_place_calls import InPlaceCallMixin
from script.frontend.index_chains import IndexChainMixin
from script.frontend.indexing import IndexMixin
from script.frontend.instances import InstanceMixin
from script.frontend.iter import IterMixin
from script.frontend.keywords import Keywords, KeywordsMixin
from script.frontend.literal_types import (
    LiteralSite,
    LiteralTypeMixin,
    RetypeLiteral,
    Site,
    number_tensor_join,
)
from script.frontend.loops import LoopMixin
from script.frontend.masks import MaskMixin
from script.frontend.math_calls import MathMixin
from script.frontend.modules import ModuleMixin
from script.frontend.nested import NestedMixin
from script.frontend.none_tests import NoneTestMixin
from script.frontend.numpy_arrangements import ArrangementMixin
from script.frontend.numpy_calls import NumpyMixin
from script.frontend.numpy_composites import CompositesMixin
from script.frontend.numpy_keywords import NumpyKeywordsMixin
from script.frontend.numpy_shifts import ShiftsMixin
from script.frontend.object_args import ObjectArg, ObjectArgMixin
from script.frontend.object_stores import ObjectStoreMixin, StoredAttributes, original_of
from script.frontend.objects import ObjectMixin
from script.frontend.parameters import ParameterMixin
from script.frontend.random_calls import RandomMixin
from script.frontend.scalar_updates import ScalarUpdateMixin
from script.frontend.sequences import SequenceMixin
from script.frontend.sorting import SortingMixin
from script.frontend.spread import SpreadMixin
from script.frontend.stmts import StmtMixin
from script.frontend.strings import StringMixin
from script.frontend.super_calls import SuperMixin
from script.frontend.unsupported import unsupported_message
from script.frontend.update_checks import UpdateCheckMixin
from script.frontend.whole_writes import WholeWriteMixin, array_results
from script.frontend.writes import WriteMixin

_cache: weakref.WeakKeyDictionary[Any, FunctionDef] = weakref.WeakKeyDictionary()
_typed: weakref.WeakKeyDictionary[Any, dict[Any, FunctionDef]] = weakref.WeakKeyDictionary()
_entries: weakref.WeakKeyDictionary[Any, FunctionDef] = weakref.WeakKeyDictionary()
"""functions compiled as called from Python (``compile_function(entry=True)``)."""
"""function -> (the types calls give its unannotated parameters) -> its definition."""
_compiling: list[Any] = []
_lock = threading.RLock()


def compile_function(fn: Callable[..., Any],
                     arg_types_override: dict[str, Type] | None = None,
                     objects: dict[str, Any] | None = None,
                     read_per_call: frozenset[tuple[type, str]] = frozenset(),
                     keyword_names: tuple[str, ...] | None = None,
                     entry: bool = False) -> FunctionDef:
    """Compile a Python function to a ``FunctionDef``; raises ``ScriptError``.

    Results are cached per function object; a function that is being compiled and is reached
    again (recursion) is an error. ``arg_types_override`` (parameter name, or ``"return"``, ->
    type; from ``script.frontend.infer_types``) types unannotated parameters; ``objects``
    (parameter name -> the call's object) gives the parameters annotated with a plain class
    their layout (``object_args``, with ``read_per_call``); such results are not cached.
    ``keyword_names``: the names a call passes to the ``**kwargs`` parameter (``keywords``).
    ``entry``: the function is called from Python (``script``), so its ``Tensor`` arguments
    are arrays, never numpy's scalars (which a scripted caller may pass a helper): compiled
    and cached apart from the function compiled as a helper.
    """
    if arg_types_override or objects:
        tree, source = load_source(fn)
        compiler = FunctionCompiler(fn, tree, source)
        compiler.entry = entry
        compiler.arg_types_override = arg_types_override
        compiler.objects = objects or {}
        compiler.read_per_call = read_per_call
        compiler.keyword_names = keyword_names
        return compiler.compile()
    existing = getattr(fn, "__rnnscript_function__", None)
    if isinstance(existing, FunctionDef):
        return existing
    cache = _entries if entry else _cache
    with _lock:
        cached = cache.get(fn)
        if cached is not None and guards_hold(cached.guards):
            return cached
        if fn in _compiling:
            raise ScriptError(f"recursive function '{fn.__qualname__}' is not supported")
        _compiling.append(fn)
        try:
            tree, source = load_source(fn)
            compiler = FunctionCompiler(fn, tree, source)
            compiler.entry = entry
            result = compiler.compile()
        finally:
            _compiling.pop()
        cache[fn] = result
        return result


def is_compiling(fn: Any) -> bool:
    """True while ``fn`` is being compiled (a call to it now would be recursion)."""
    return fn in _compiling


def compile_method(fn: Callable[..., Any], owner: Any = None, session: Any = None,
                   self_type: Type | None = None) -> FunctionDef:
    """Compile a method: of the module ``owner`` (``self`` is that object, known at compile time;
    ``session`` collects guards and compiled callees), or of a script class (``self`` is an input
    of type ``self_type``). Not cached here: the callers cache per object or class."""
    tree, source = load_source(fn)
    return FunctionCompiler(fn, tree, source, owner, session, self_type).compile()


class FunctionCompiler(StmtMixin, LoopMixin, WriteMixin, IterMixin, CallMixin, ModuleMixin,
                       GlobalsMixin, ObjectMixin, ObjectArgMixin, ContainerMixin,
                       LiteralTypeMixin, SequenceMixin, ExprMixin, IndexMixin, NumpyMixin,
                       SpreadMixin, SuperMixin, NestedMixin, StringMixin, InstanceMixin,
                       CalleeMixin, ParameterMixin, KeywordsMixin, ShiftsMixin,
                       NumpyKeywordsMixin, NoneTestMixin, MathMixin, RandomMixin,
                       CompositesMixin, WholeWriteMixin, IndexChainMixin, SortingMixin,
                       MaskMixin, ArrangementMixin, FunctionTableMixin, ObjectStoreMixin,
                       CallerWriteMixin, BranchMixin, ScalarUpdateMixin, UpdateCheckMixin,
                       InPlaceCallMixin):
    """Compiles one function; ``compile()`` returns its ``FunctionDef``."""

    def __init__(self, fn: Callable[..., Any], tree: ast.FunctionDef, source: SourceInfo,
                 owner: Any = None, session: Any = None, self_type: Type | None = None,
                 presets: dict[str, Any] | None = None):
        self.fn = fn
        self.owner = owner
        """the module whose method this is (``self`` in the body), or None."""
        self.session = session
        """the module compilation this method belongs to (``modules.ModuleSession``)."""
        self.self_type = self_type
        """for a script-class method: the type of ``self``."""
        self.entry = False
        """called from Python: its ``Tensor`` arguments are arrays (``compile_function``)."""
        self.attr_refs: list[Any] = []
        self.attr_values: dict[Any, Value] = {}
        self.guards: dict[Any, Any] = {}
        self.source = source
        self.presets = presets or {}
        """names of the enclosing function a nested one reads that are compile-time objects
        (``nested``)."""
        self.tree = tree = self.lift_nested(tree)
        self.enclosing_names: tuple[str, ...] = ()
        """for a nested function: its parameters that are the enclosing function's names."""
        self.file_name = os.path.basename(source.file)
        self.graph = Graph(fn.__qualname__)
        self.frame = Frame()
        self.namespace = function_namespace(fn)
        self.reads = [read for stmt in tree.body for read in loaded_names(stmt)]
        self.stores_before = dominating_stores(tree.body)
        """read -> the assignments of its name every path to it passes (``live_after``)."""
        self.statement: ast.stmt | None = None
        """the innermost statement being emitted (see ``WriteMixin.live_after``)."""
        self.loops: list[LoopContext] = []
        self.declared: dict[str, Type] = {}
        """variables with an annotated assignment: later assignments must fit the type."""
        self.return_type: Type | None = None
        self.return_flags = False
        """True when returns become flags (a return other than the body's last statement)."""
        self.direct_return: Value | None = None
        self.where: ast.AST = tree
        self.flag_counter = 0
        self.masked_by: Value | None = None
        """The boolean mask of the masked write whose value is being compiled (``x[m]`` in it
        reads the whole ``x``), else None."""
        self.masked_reads: list[Value] = []
        """The arrays that value read through the mask (their shapes are checked)."""
        self.literal_types: dict[Site, Type] = {}
        """list and dict literals typed by their later use (``literal_types``)."""
        self.literal_tried: set[tuple[Site, Type]] = set()
        self.literal_sites: dict[Node, LiteralSite] = {}
        self.deferred_errors: list[ScriptError] = []
        """the errors of branches that did not compile (``StmtMixin.defer_branch``)."""
        self.deciding: ast.AST | None = None
        """the comparison compiled as an ``if`` / ``while`` condition (``condition_value``)."""
        self.array_aliases: dict[Value, Value] = {}
        """a name's value after ``x += v`` on the array it was bound to, where the rank was not
        known (``WriteMixin.rebind_array``: the old value where 0-d, else ``x``'s new one) ->
        ``x``'s new value: later writes into ``x`` rebind the name too."""
        self.zero_d_copies: set[Value] = set()
        """``np.asarray`` of a value numpy's scalar where 0-d, and its updates: a new 0-d array
        where 0-d, the value's array otherwise (``ScalarUpdateMixin``)."""
        self.array_items: dict[Value, tuple[tuple[int, ...], ...]] = {}
        """a called function's result -> where it is numpy's array (its ``FunctionDef.
        array_results``): the whole result, or items of the tuple it returns."""
        self.updated_from: dict[Value, Value] = {}
        """the value of a name after ``x += v`` (or of another name of it, ``array_aliases``) ->
        ``x``'s value before: numpy's scalar where that was one, the same array where it was
        an array (``whole_writes.made_as_scalar``)."""

    # -- driver -------------------------------------------------------------------------------
    # -- callees: the construct mixins compile what the code calls through these ----------------
    def compile_callee(self, fn: Callable[..., Any], node: ast.AST,
                       objects: dict[str, Any] | None = None,
                       demoted: frozenset[tuple[type, str]] = frozenset(),
                       override: dict[str, Type] | None = None,
                       keyword_names: tuple[str, ...] | None = None) -> FunctionDef:
        """``fn``, a Python function the code calls, compiled (and cached unless it takes
        plain ``objects``, by parameter name), for the types ``override`` gives (its
        unannotated parameters', its ``*args`` and ``**kwargs`` tuples') and the names passed
        to its ``**kwargs``; ``demoted``: the int, bool and str attributes it reads per call
        (``object_stores.callee_examples``)."""
        # a method called for another object (a base class's __call__ reached for the model,
        # then for its layer) is another compilation, not a recursive call
        marker = (fn, tuple((n, id(original_of(o))) for n, o in sorted(objects.items()))) \
            if objects else fn
        if marker in _compiling:
            raise self.error(node, f"recursive calls are not supported: '{fn.__qualname__}' "
                             "is already being compiled")
        if not objects and not override:
            return compile_function(fn)
        key = None if objects else (tuple(sorted(override.items(), key=lambda item: item[0])),
                                    keyword_names)
        with _lock:
            cached = _typed.get(fn, {}).get(key) if key is not None else None
            if cached is not None and guards_hold(cached.guards):
                return cached
            _compiling.append(marker)
            try:
                result = compile_function(fn, arg_types_override=override, objects=objects,
                                          read_per_call=self.read_per_call | demoted,
                                          keyword_names=keyword_names)
            finally:
                _compiling.pop()
            if key is not None:
                _typed.setdefault(fn, {})[key] = result
            return result

    def compile_bound_callee(self, fn: Callable[..., Any], shim: Any, tree: ast.FunctionDef,
                             source: SourceInfo, functions: dict[str, Any],
                             override: dict[str, Type], node: ast.AST) -> FunctionDef:
        """``fn`` (read through ``shim`` and ``tree``, without the parameters ``functions``
        binds) compiled with those parameters bound to the functions, cached per function
        objects (held by the key: an id could be reused) and argument types."""
        key = ("functions", tuple((name, functions[name]) for name in sorted(functions)),
               tuple(sorted(override.items(), key=lambda item: item[0])))
        marker = (fn, key[1])
        with _lock:
            cached = _typed.get(fn, {}).get(key)
            if cached is not None and guards_hold(cached.guards):
                return cached
            if marker in _compiling:
                raise self.error(node, f"recursive calls are not supported: "
                                 f"'{fn.__qualname__}' is already being compiled")
            _compiling.append(marker)
            try:
                compiler = type(self)(shim, tree, source, presets=functions)
                compiler.arg_types_override = override
                result = compiler.compile()
            finally:
                _compiling.pop()
            _typed.setdefault(fn, {})[key] = result
            return result

    def compile_module_method(self, fn: Callable[..., Any], owner: Any, session: Any
                              ) -> FunctionDef:
        """The method ``fn`` of the module ``owner``, compiled for ``session``."""
        return compile_method(fn, owner=owner, session=session)

    def compile(self) -> FunctionDef:
        try:
            return self.compile_once()
        except RetypeLiteral as retype:
            return self.recompiled(retype)
        except StoredAttributes as stored:
            return self.recompiled_with_stores(stored.found)
        except ScriptError:
            if self.deferred_errors:  # the first error in the source, as if none were deferred
                raise self.deferred_errors[0] from None
            raise

    def compile_once(self) -> FunctionDef:
        names, types, defaults = self.parameters()
        static = {n: v for n, v in defaults.items()  # xp=np, act=np.tanh: compile-time objects
                  if isinstance(v, ModuleType) or is_function_value(v)}
        objects = getattr(self, "objects", {})
        for name, obj in self.presets.items():
            self.frame.set(name, Static(obj))
        for name, t in zip(names, types):
            if name in static:
                self.frame.set(name, Static(static[name]))
            elif name in objects:
                param = len(self.graph.inputs)
                self.frame.set(name, Static(self.object_param(name, param, objects[name])))
            elif self.keyword_names is not None and name == self.tree.args.kwarg.arg:  # type: ignore[union-attr]
                self.frame.set(name, Static(Keywords(self.keyword_names,
                                                     self.graph.add_input(t, name), name)))
            else:
                self.frame.set(name, self.graph.add_input(t, name))
        for name in objects:  # each object argument's class is part of the layout
            found = self.frame.find(name)
            if isinstance(found, Static) and isinstance(found.obj, ObjectArg):
                self.reached(found.obj)
        body = _without_docstring(self.tree.body)
        self.check_function_body(body)
        if objects:
            self.start_stored_attributes(body)
        self.__dict__["zero_d_checks"] = []
        result = self.emit_body(body)
        self.check_zero_d_writes()
        self.check_item_updates()
        self.check_name_updates()
        self.graph.set_outputs([result])
        remove_unused_scaffolding(self.graph)
        self.drop_unused_seeds()
        self.read_every_owner()
        caller_writes = self.check_caller_writes()
        return_type = self.return_type or result.type
        kept = [k for k, n in enumerate(names) if n not in static]
        fdef = FunctionDef(self.fn.__qualname__, self.graph, [names[k] for k in kept],
                           [types[k] for k in kept],
                           {n: v for n, v in defaults.items() if n not in static},
                           return_type, self.source, self.attr_refs, self.guards, static,
                           names if static else [],
                           tuple(k for k, n in enumerate(names[j] for j in kept)
                                 if n in objects),
                           tuple(k for k, n in enumerate(names[j] for j in kept)
                                 if n in self.dtype_params))
        fdef.attr_stores = self.attribute_stores()
        fdef.caller_writes = caller_writes
        fdef.array_results = array_results(result, self.updated_from, self.zero_d_copies,
                                           self.array_items, arguments=self.entry)
        fdef.writes_read = bool(self.__dict__.get("writes_read"))
        return fdef

    def emit_body(self, body: list[ast.stmt]) -> Value:
        returns = [n for n in walk_same_function(body) if isinstance(n, ast.Return)]
        self.return_flags = bool(returns) and not (
            len(returns) == 1 and body and body[-1] is returns[0])
        if not self.return_flags:
            self.emit_stmts(body)
            return self.direct_return if self.direct_return is not None else self.const(None)
        self.frame.set(RETURN_FLAG, self.const(False))
        self.frame.set(RETURN_VALUE, self.uninitialized(self.return_type or ANY))
        if not always_returns(body):
            implicit = ast.Return(value=None)
            ast.copy_location(implicit, self.tree)
            implicit.implicit = True  # type: ignore[attr-defined]
            body = body + [implicit]
        self.emit_stmts(body)
        value = self.frame.find(RETURN_VALUE)
        assert isinstance(value, Value)
        return value

    def check_function_body(self, body: list[ast.stmt]) -> None:
        for node in walk_same_function(body):
            if isinstance(node, (ast.Yield, ast.YieldFrom)):
                raise self.error(node, "generators/yield are not supported")
            if isinstance(node, ast.Await):
                raise self.error(node, "await is not supported")

    # -- errors and positions -----------------------------------------------------------------
    def error(self, node: ast.AST, message: str) -> ScriptError:
        """A ScriptError pointing at ``node`` (raise it)."""
        return ScriptError.at(node, self.source, message)

    def unsupported(self, node: ast.AST, what: str) -> ScriptError:
        return self.error(node, f"{what} is not supported")

    def source_range(self) -> SourceRange:
        node = self.where
        return SourceRange(self.file_name, getattr(node, "lineno", self.tree.lineno),
                           getattr(node, "col_offset", 0))

    def visit(self, node: ast.AST) -> Any:
        """Dispatch to ``visit_<Class>``; the node becomes the source of what gets emitted."""
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, unsupported_message(node))
        saved, self.where = self.where, node
        try:
            return method(node)
        except IRError as exc:  # an op rule rejected its inputs: report it at this construct
            raise self.error(self.where, str(exc)) from None
        finally:
            self.where = saved

    # -- emitting nodes -----------------------------------------------------------------------
    def emit(self, kind: str, inputs: Sequence[Value], types: Sequence[Type] | None = None,
             attrs: dict[str, Any] | None = None, nblocks: int = 0,
             names: Sequence[str | None] | None = None) -> Node:
        """Insert a node; with ``types`` None its output types come from the op's rule."""
        node = self.graph.insert(kind, inputs, types or (), attrs, nblocks,
                                 self.source_range(), names)
        if types is not None:
            return node
        try:
            out_types = infer_types(node)
        except ShapeError as exc:
            node.erase()
            raise self.error(self.where, str(exc)) from None
        for t in out_types:
            node.add_output(t)
        return node

    def emit_value(self, kind: str, inputs: Sequence[Value]) -> Value:
        return self.emit(kind, inputs).output

    def const(self, value: Any, type: Type | None = None) -> Value:
        node = self.emit("prim::Constant", (), None if type is None else [type],
                         {"value": value})
        return node.output

    def uninitialized(self, type: Type) -> Value:
        return self.emit(UNINITIALIZED, (), [type]).output

    # -- scopes ---------------------------------------------------------------------------------
    def enter_block(self, block: Block) -> tuple[Frame, Node]:
        """Start emitting into ``block`` with a child frame; returns what ``leave_block`` needs."""
        saved = (self.frame, self.graph.insert_point)
        self.frame = self.frame.child()
        self.graph.set_insert_point(block)
        return saved

    def leave_block(self, saved: tuple[Frame, Node]) -> Frame:
        """Return to the enclosing block; returns the frame the block was emitted in."""
        inner = self.frame
        self.frame, point = saved
        self.graph.set_insert_point(point)
        return inner

    def emit_in_block(self, block: Block, emit_fn: Callable[[], Any]) -> tuple[Frame, Any]:
        saved = self.enter_block(block)
        try:
            result = emit_fn()
        finally:
            frame = self.leave_block(saved)
        return frame, result

    def lookup(self, name: str, node: ast.AST) -> Value | Static | None:
        """The local value of ``name`` (None when it is not a local)."""
        found = self.frame.find(name)
        if isinstance(found, Undefined):
            raise self.error(node, found.message)
        if isinstance(found, MaybeUnbound):
            unbound = self.negate(found.bound)
            self.emit_if(unbound, lambda: self.raise_exception(
                f"cannot access local variable '{name}' where it is not associated with a "
                "value (the loop that assigns it ran no iterations)", "UnboundLocalError"),
                lambda: None, (getattr(node, "lineno", 0), 0), node)
            return found.value
        return found

    def bind(self, name: str, value: Value, node: ast.AST) -> None:
        """Assign ``value`` to the local ``name``."""
        declared = self.declared.get(name)
        if declared is not None and not is_subtype(value.type, declared):
            raise self.error(node, f"variable '{name}' is annotated as {declared}, but is "
                             f"assigned a value of type {value.type}")
        if value.name is None:
            value.name = name
        self.frame.set(name, value)

    def live_names(self, after: tuple[int, int]) -> set[str]:
        """Names that may be read after source position ``after`` (a superset of liveness)."""
        live = {name for name, pos in self.reads if pos >= after}
        for loop in self.loops:
            live |= loop.reads
        return live

    def new_flag(self, kind: str) -> str:
        self.flag_counter += 1
        return f"${kind}{self.flag_counter}"

    # -- joining values from two paths ----------------------------------------------------------
    def join_type(self, name: str, a: Value, b: Value, node: ast.AST, where: tuple[str, str]
                  ) -> Type:
        """The type a variable has after two paths meet; ScriptError when they disagree."""
        if is_placeholder(a):
            return b.type if not is_placeholder(b) or a.type == ANY else a.type
        if is_placeholder(b):
            return a.type
        joined = unify(a.type, b.type)
        if joined is None and name not in self.declared:
            joined = number_tensor_join(a.type, b.type)
        if joined is None:
            error = self.error(node, f"{describe_variable(name)} has type {a.type} {where[0]} "
                               f"and type {b.type} {where[1]}{self.parameter_hint(name, a, b)}")
            for mine, other in ((a, b), (b, a)):  # `if opt is None: opt = {}` of a typed opt
                found = self.literal_sites.get(mine.node)
                if found is not None and found.empty and type(mine.type) is type(other.type) \
                        and isinstance(other.type, (ListType, DictType)):
                    self.retype(found.site, other.type, error)
            raise error
        declared = self.declared.get(name)
        return declared if declared is not None else joined


def remove_unused_scaffolding(graph: Graph) -> None:
    """Drop what SSA construction made that nothing reads: If outputs (merged names or exit
    flags no one uses), constants and placeholders. Keeps the graph as the user wrote it."""
    changed = True
    while changed:
        changed = False
        for node in reversed(list(graph.walk())):
            if node.kind == "prim::If":
                changed |= _drop_unused_if_outputs(node)
            elif node.kind in ("prim::Constant", UNINITIALIZED) and not node.output.uses:
                node.erase()
                changed = True


def _drop_unused_if_outputs(node: Node) -> bool:
    unused = [k for k, v in enumerate(node.outputs) if not v.uses]
    for k in reversed(unused):
        for block in node.blocks:
            block.return_node.remove_input(k)
        node.erase_output(k)
    if not node.outputs and all(len(b) == 0 for b in node.blocks):
        node.erase()
        return True
    return bool(unused)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
            isinstance(first.value.value, str):
        return body[1:]
    return body
