"""Plain Python objects as arguments: ``p: Params`` where ``Params`` is an ordinary class.

Numpy RNN code keeps its weights in plain objects (``p.W_f.v``, ``layer.U``). Such an argument is
not an IR value: while the function compiles, its name stands for an ``ObjectArg`` (a
compile-time placeholder holding the call's object as an example), an attribute that holds
another plain object is another ``ObjectArg``, and an attribute that holds anything else (an
array, a number, a list...) is a graph input (an ``ArgAttrRef``) read from the call's object at
every call, after the arguments, like a global array (``globals.GlobalRef``). Its dtype and
shape, or its type, are part of the call signature, so a call with other shapes specializes
again. Which attributes hold objects and which hold values is the object's *layout*; a call
whose layout differs from the one compiled compiles the function again
(``script.frontend.object_reads.read_inputs``).

An attribute holding an int, bool or str is part of the layout too: it is compiled in as a
constant (``ArgAttrRef.constant``), as a global scalar is, so ``range(self.num_layers)`` has a
constant count (``self.layers[i]`` in it is unrolled) and ``if self.bidirectional:`` is decided
when compiling; a call that finds another value compiles again. One that changes at every call (a
step counter) would compile every call: once it has taken a few values, the runtime reads it per
call instead where the code allows (``read_per_call``; ``ScriptFunction.count_constants``).

A list or tuple of plain objects (an argument annotated ``List[Layer]``, or an attribute holding
one) is an ``ObjectSeq``: its items are ``ObjectArg``s whose paths step through the item's index,
so each item's attributes are read on their own (their shapes may differ). The code iterates it
(unrolled), indexes it with constants or takes its ``len``; its length is part of the layout (an
``ArgAttrRef`` with a ``length`` checks it). A method of an object's class is compiled as a
function taking the object (``call_object_argument``).

An assignment ``p.W = ...`` stores into the object (``object_stores``).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.registry import NOT_CONSTANT, constant_of
from ir.types import (
    ANY,
    INT,
    NONE,
    STR,
    TENSOR,
    DictType,
    OptionalType,
    TensorType,
    Type,
    erase_shape,
)
from script.errors import ScriptError, SignatureError
from script.frontend.annotations import (
    AnnotationError,
    declared,
    evaluate_annotation,
    function_namespace,
    is_plain_class,
)
from script.frontend.signature import type_of

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


CONSTANT_KINDS = (int, bool, str)
"""The Python types of the attributes compiled in as constants (``object_arg_value``)."""


def is_plain_object(value: Any) -> bool:
    """An instance of a plain class (``is_plain_class``): what an object argument may be."""
    return is_plain_class(type(value)) and hasattr(value, "__dict__")


@dataclass(frozen=True, eq=False)
class ObjectArg:
    """A plain object argument, or an object reached through its attributes, at compile time."""

    param: int
    """the position of the argument among the graph's inputs."""
    path: tuple[str | int, ...]
    """the attributes (and, for an item of a list, indices) followed from the argument (``()``
    for the argument itself)."""
    spelling: str
    """how the code names it (``p.W_f``, ``layers[0]``)."""
    example: Any
    """what it is in the call the function is compiled for (decides the layout)."""


@dataclass(frozen=True, eq=False)
class ObjectSeq:
    """A list or tuple of plain objects: an object argument, or held by one, at compile time."""

    param: int
    """the position of the argument among the graph's inputs."""
    path: tuple[str | int, ...] | None
    """the path from the argument to the list; None for a slice of one (its items keep the
    paths into the list, whose length its parent checks)."""
    spelling: str
    """how the code names it (``layers``, ``self.layers``)."""
    items: tuple[ObjectArg, ...]
    kind: type
    """list or tuple: a call passing the other compiles again."""

    @staticmethod
    def of(param: int, path: tuple[str | int, ...], spelling: str, example: Any) -> ObjectSeq:
        items = tuple(ObjectArg(param, path + (k,), f"{spelling}[{k}]", item)
                      for k, item in enumerate(example))
        return ObjectSeq(param, path, spelling, items, type(example))

    @property
    def example(self) -> Any:
        """What it is in the call the function is compiled for."""
        return self.kind(item.example for item in self.items)

    def length_ref(self) -> ArgAttrRef:
        """The graph input that checks a call's list has as many items (its value unused)."""
        assert self.path is not None
        return ArgAttrRef(self.param, self.path, f"len({self.spelling})", INT, self.kind,
                          len(self.items))

    def describe(self) -> str:
        classes = sorted({type(item.example).__name__ for item in self.items})
        return f"a {self.kind.__name__} of {'/'.join(classes) or 'no'} objects"


@dataclass(frozen=True, eq=False)
class ArgAttrRef:
    """An attribute of an object argument holding a value: a graph input after the arguments,
    read from the call's argument (``object_reads.read_inputs``). Has ``GlobalRef``'s interface."""

    param: int
    """the position of the argument among the graph's inputs."""
    path: tuple[str, ...]
    """the attribute path from the argument."""
    name: str
    """how the code spells it (``p.W_f.v``)."""
    type: Type
    """its IR type, shapes left unknown (the executor specializes on the actual value)."""
    kind: type
    """the Python type it had when compiled: a call that finds another compiles again."""
    length: int | None = None
    """for a list of objects (``ObjectSeq.length_ref``): the length it must have; its value is
    the length."""
    constant: Any = None
    """for an int, bool or str compiled in as a constant (``CONSTANT_KINDS``): the value a call's
    attribute must hold (a call that finds another compiles again); None when read per call."""
    items: tuple[type, ...] | None = None
    """for a tuple: the Python types of its items when compiled (a call whose tuple holds
    others, ``self.cache`` of another kind, compiles again)."""
    check: str | None = None
    """what a call's object is checked for, besides an attribute's value (None):

    - ``"hasattr"``: whether the path exists; its value is that bool, ``constant`` the answer
      compiled in.
    - ``"function"``: the attribute holds ``constant``, a function compiled in
      (``self.act = np.tanh``); its value is None.
    - ``"class"``: the object at the path is of class ``constant``, whose methods were compiled
      in; its value is None.
    - ``"method"``: the path ends at the name of a method the code calls; the object's class
      holds ``constant`` for it and the object holds no attribute of that name (which Python
      would call instead); its value is None.

    A call that finds otherwise compiles again."""

    @property
    def holds_attribute(self) -> bool:
        """Whether its value is the attribute itself (not a length or one of the checks)."""
        return self.length is None and self.check is None

    @property
    def key(self) -> tuple[Any, ...]:
        return ("argument", self.param, self.path, self.length, self.check)

    @property
    def parameter(self) -> None:
        return None

    def read(self) -> Any:
        raise ScriptError(f"'{self.name}' is an attribute of an argument: it is read per call")


def plain_class_params(fn: Any) -> tuple[str, ...]:
    """The parameters of ``fn`` annotated with a plain class or a list or tuple of one."""
    return tuple(object_param_kinds(fn))


def object_param_kinds(fn: Any) -> dict[str, str]:
    """The parameters of ``fn`` annotated with a plain class (``"object"``) or with ``List[C]``
    / ``Tuple[C, ...]`` / ``Tuple[C, D]`` of plain classes (``"sequence"``), by name (string
    annotations resolved in its namespace; one that does not resolve is left to the compiler
    to report)."""
    namespace: dict[str, Any] | None = None
    found = {}
    for name, annotation in getattr(fn, "__annotations__", {}).items():
        if name == "return":
            continue
        if isinstance(annotation, str):
            namespace = function_namespace(fn) if namespace is None else namespace
            try:
                annotation = evaluate_annotation(annotation, namespace)
            except AnnotationError:
                continue
        if is_plain_class(annotation):
            found[name] = "object"
        elif _is_object_sequence_annotation(annotation):
            found[name] = "sequence"
    if method_class(fn) is not None:
        found.setdefault("self", "object")
    return found


def method_class(fn: Any) -> type | None:
    """The plain class ``fn`` is a method of when its first parameter is an unannotated
    ``self`` (``def forward(self, h, x)`` in ``class GRUCell``, at a module's top level, or in a
    class there): ``self`` is then an object of it, as if annotated ``self: GRUCell``."""
    code = getattr(fn, "__code__", None)
    parts = getattr(fn, "__qualname__", "").split(".")
    if code is None or not code.co_argcount or code.co_varnames[0] != "self" or \
            "self" in getattr(fn, "__annotations__", {}) or len(parts) < 2 or "<locals>" in parts:
        return None
    owner = getattr(fn, "__globals__", {}).get(parts[0])
    for part in parts[1:-1]:
        owner = getattr(owner, part, None)
    if not isinstance(owner, type) or vars(owner).get(parts[-1]) is not fn:
        return None
    return owner if is_plain_class(owner) else None


def _is_object_sequence_annotation(annotation: Any) -> bool:
    if typing.get_origin(annotation) not in (list, tuple):
        return False
    args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
    return bool(args) and all(is_plain_class(a) for a in args)


def class_member(cls: type, name: str) -> Any:
    """What ``cls`` (or the first class of its MRO defining it) holds for ``name``, unbound;
    None when none does."""
    for c in cls.__mro__:
        if name in c.__dict__:
            return c.__dict__[name]
    return None


def is_static_function(value: Any) -> bool:
    """A function an attribute may hold for the compiled code to call (``self.act = np.tanh``,
    a Python function, a scripted one): compiled in, like the functions of a module's
    namespace. Classes, bound methods and callable objects are not."""
    return (inspect.isfunction(value) or isinstance(value, np.ufunc)
            or inspect.isbuiltin(value) or type(value).__name__ == "_ArrayFunctionDispatcher"
            or inspect.isfunction(getattr(value, "python_fn", None)))


def is_object_sequence(value: Any) -> bool:
    """A list or tuple of plain objects (an empty one too)."""
    return type(value) in (list, tuple) and all(is_plain_object(v) for v in value)


def changed_constants(refs: list[Any], inputs: tuple[Any, ...]
                      ) -> list[tuple[tuple[type, str], Any, Any]]:
    """The attributes compiled in as constants (``ArgAttrRef.constant``) that hold another value
    of their type in a call whose bound arguments are ``inputs``: ((the class of the object
    holding it, its name), the compiled value, the call's value) for each."""
    found = []
    for ref in refs:
        if type(ref) is not ArgAttrRef or not ref.holds_attribute or ref.constant is None:
            continue
        value = follow(inputs[ref.param], ref.path)
        if type(value) is ref.kind and value != ref.constant:
            owner = follow(inputs[ref.param], ref.path[:-1])
            found.append(((type(owner), ref.path[-1]), ref.constant, value))
    return found


def follow(value: Any, path: tuple[str | int, ...]) -> Any:
    """What ``path`` reaches from an object argument's ``value`` (``_MISSING`` when it does not
    cross plain objects and lists of them, or an attribute or index is missing)."""
    for step in path:
        if type(step) is int:
            if type(value) not in (list, tuple) or step >= len(value):
                return _MISSING
            value = value[step]
        elif is_plain_object(value):
            value = getattr(value, step, _MISSING)
        else:
            return _MISSING
    return value


_MISSING: Any = object()


def _holds_objects(value: Any) -> bool:
    """A list or tuple holding a plain object, at any depth."""
    return any(is_plain_object(v) or type(v) in (list, tuple) and _holds_objects(v)
               for v in value)


def check_object_argument(name: str, value: Any, function: str, kind: str = "object") -> None:
    """SignatureError unless ``value`` can be passed for the parameter ``name``, annotated with
    a plain class (``kind`` "object") or a list or tuple of them ("sequence")."""
    if is_plain_object(value) if kind == "object" else is_object_sequence(value):
        return
    what = f"an array of shape {value.shape}" if isinstance(value, np.ndarray) else \
        f"a value of type {type(value).__name__}"
    if kind == "object":
        raise SignatureError(f"{function}(): argument '{name}' is annotated with a plain class "
                             "(or was passed an object by the call that compiled the function), "
                             f"whose objects' attributes are read per call; got {what}")
    raise SignatureError(f"{function}(): argument '{name}' is annotated with a list or tuple of "
                         f"a plain class; got {what} (pass a list or tuple of such objects)")


def _declared(value: Any) -> Type:
    """What an attribute's value is checked against: a dict's keys decide its key type."""
    if isinstance(value, dict):
        if not value:  # an empty dict: str keys and arrays, the usual ones (a cache, grads)
            return DictType(STR, TENSOR)
        keys = {type(k) for k in value}
        item = OptionalType(TENSOR) if all(v is None for v in value.values()) else ANY
        if keys == {str}:
            return DictType(STR, item)
        if keys == {int}:
            return DictType(INT, item)
    return ANY


class ObjectArgMixin:
    """Reading the attributes of plain object arguments in ``FunctionCompiler``."""

    read_per_call: frozenset[tuple[type, str]] = frozenset()
    """(class, attribute name) of the int, bool and str attributes read per call rather than
    compiled in (``compile_function`` sets it)."""

    def object_param(self: FunctionCompiler, name: str, param: int, example: Any) -> Any:
        """What the name of an object parameter is bound to while the body compiles: the graph
        input itself is a placeholder (None at run time)."""
        self.graph.add_input(NONE, name)
        if type(example) in (list, tuple):
            return ObjectSeq.of(param, (), name, example)
        return ObjectArg(param, (), name, example)  # its class: ``reached`` after the params

    def reached(self: FunctionCompiler, obj: ObjectArg) -> ObjectArg:
        """``obj``, its class made part of the layout: the code compiled for it (its methods,
        ``__call__``, ``hasattr``, ``isinstance``) holds for objects of that class only."""
        self.add_attr_input(ArgAttrRef(obj.param, obj.path, f"type({obj.spelling})", NONE,
                                       type, constant=type(obj.example),
                                       check="class"))
        return obj

    def object_arg_member(self: FunctionCompiler, owner: ObjectArg, node: ast.Attribute) -> Any:
        """``owner.<attr>`` at compile time: an ``ObjectArg`` for an attribute holding a plain
        object, an ``ObjectSeq`` for one holding a list or tuple of them; else None (its value
        is a graph input, ``object_arg_value``)."""
        if self.assigns_attribute(owner, node.attr):  # (a value: ``object_stores``)
            return None
        value = self.object_arg_example(owner, node)
        path, spelling = owner.path + (node.attr,), f"{owner.spelling}.{node.attr}"
        if is_static_function(value):  # compiled in; a call holding another compiles again
            self.add_attr_input(ArgAttrRef(owner.param, path, spelling, NONE, type(value),
                                           constant=value, check="function"))
            return value
        if is_plain_object(value):
            return self.reached(ObjectArg(owner.param, path, spelling, value))
        if type(value) in (list, tuple) and _holds_objects(value):
            if not is_object_sequence(value):
                raise self.error(node, f"'{spelling}' is a {type(value).__name__} mixing plain "
                                 "objects and other values (or lists of them): scripted code "
                                 "reads a flat list of objects only (keep the other values in "
                                 "another attribute)")
            return ObjectSeq.of(owner.param, path, spelling, value)
        return None

    def object_arg_example(self: FunctionCompiler, owner: ObjectArg, node: ast.Attribute
                           ) -> Any:
        if node.attr == "__dict__":
            raise self.error(node, f"scripted code reads the attributes of '{owner.spelling}' "
                             "by name, not its __dict__")
        if not hasattr(owner.example, node.attr):
            raise self.error(node, f"'{owner.spelling}' ({type(owner.example).__name__} object) "
                             f"has no attribute '{node.attr}'")
        if self.object_method(owner, node.attr) is not None:
            raise self.error(node, f"the method '{owner.spelling}.{node.attr}' can only be "
                             f"called (`{owner.spelling}.{node.attr}(...)`), not used as a "
                             "value")
        return getattr(owner.example, node.attr)

    def called_method(self: FunctionCompiler, owner: ObjectArg, name: str, method: Any
                      ) -> None:
        """Record that the code calls ``method``, what ``owner``'s class holds for ``name``:
        a call where it holds another, or where the object shadows it, compiles again."""
        self.add_attr_input(ArgAttrRef(owner.param, owner.path + (name,),
                                       f"{owner.spelling}.{name}", NONE, type(method),
                                       constant=method, check="method"))

    def object_method(self: FunctionCompiler, owner: ObjectArg, name: str) -> Any:
        """The function defined by the class of ``owner`` for the method ``name`` (a
        ``staticmethod`` or ``classmethod`` as such), or None when ``name`` is not a method (an
        attribute of the object itself, a value of the class, a method of ``object``)."""
        if name in getattr(owner.example, "__dict__", {}):
            return None
        found = inspect.getattr_static(type(owner.example), name, None)
        if isinstance(found, (staticmethod, classmethod)) or \
                inspect.isfunction(found):
            return found
        return None

    def object_items(self: FunctionCompiler, seq: ObjectSeq) -> tuple[ObjectArg, ...]:
        """The items of a list of objects the code uses: the call's list must have as many."""
        if seq.path is not None:
            self.add_attr_input(seq.length_ref())
        return tuple(self.reached(item) for item in seq.items)

    def object_seq_subscript(self: FunctionCompiler, seq: ObjectSeq, node: ast.Subscript
                             ) -> Any:
        """``layers[k]`` / ``layers[1:]`` with constant ``k`` and bounds."""
        items = self.object_items(seq)
        found = self.static_item(items, node, f"'{seq.spelling}' ({seq.describe()})",
                                 "its objects' attributes are read per item", seq.spelling)
        if isinstance(node.slice, ast.Slice):
            return ObjectSeq(seq.param, None, ast.unparse(node), found, seq.kind)
        return found

    def static_item(self: FunctionCompiler, items: tuple, node: ast.Subscript, what: str,
                    why: str, spelling: str) -> Any:
        """``items[k]`` or ``items[a:b:c]`` for a sequence known when compiling (a list of
        objects, a module list), with a constant index or constant bounds; a run-time index is
        a ScriptError saying to unroll a loop over ``range(len(spelling))`` (``why``: why a
        run-time index cannot pick an item)."""
        if isinstance(node.slice, ast.Slice):
            bounds = [constant_of(b) for b in self.slice_bounds(node.slice)]
            if any(b is NOT_CONSTANT for b in bounds):
                raise self.error(node.slice, f"a slice of {what} needs constant bounds")
            return items[slice(*bounds)]
        index = constant_of(self.index_value(node.slice))
        if type(index) is not int:
            raise self.error(node.slice, f"{what} is indexed with '{ast.unparse(node.slice)}', "
                             f"an int known only when the function runs ({why}): index it "
                             "with a constant or in a loop of a constant count, which is "
                             f"unrolled (`for i in range(len({spelling})):`), or iterate over "
                             "it with for / enumerate / zip")
        if not -len(items) <= index < len(items):
            raise self.error(node.slice, f"index {index} out of range: '{spelling}' has "
                             f"{len(items)} items")
        return items[index]

    def object_arg_value(self: FunctionCompiler, owner: ObjectArg, node: ast.Attribute) -> Any:
        """The graph input standing for ``owner.<attr>`` when it holds a value; for an int, bool
        or str (``CONSTANT_KINDS``) not in ``read_per_call``, the value as a constant (its graph
        input, unused, checks a call's value is the same). An attribute the function assigns
        is the value assigned (``object_stores``)."""
        stored = self.stored_attribute(owner, node.attr, node)
        if stored is not None:
            return stored
        return self.attribute_input(owner, node)

    def attribute_input(self: FunctionCompiler, owner: ObjectArg, node: ast.Attribute) -> Any:
        """``object_arg_value`` of an attribute read from the call's object."""
        static = self.object_arg_member(owner, node)
        if static is not None and is_static_function(static):
            raise self.error(node, f"'{owner.spelling}.{node.attr}' holds a function: scripted "
                             "code calls it or binds a name to it (act = "
                             f"{owner.spelling}.{node.attr}); it cannot be a value otherwise")
        if static is not None:
            raise self.object_arg_as_value(node, static)
        value = getattr(owner.example, node.attr)
        name = f"{owner.spelling}.{node.attr}"
        declared = _declared(value)
        try:
            t = erase_shape(type_of(value, declared, f"'{name}'"))
        except SignatureError as exc:
            raise self.error(node, f"{exc}; scripted code cannot read it") from None
        if isinstance(t, DictType) and t.value == NONE and isinstance(declared, DictType):
            t = declared  # None for every value now: optional arrays (accumulators to start)
        if type(value) is np.ndarray and value.dtype == np.bool_:
            t = TensorType("bool")  # a mask (``out[self.mask] = 0``): a call's must be one too
        ref = ArgAttrRef(owner.param, owner.path + (node.attr,), name, t, type(value),
                         items=tuple(map(type, value)) if type(value) is tuple else None)
        if type(value) not in CONSTANT_KINDS or \
                (type(owner.example), node.attr) in self.read_per_call:
            return self.add_attr_input(ref)
        self.add_attr_input(dataclasses.replace(ref, constant=value))  # checked per call
        return self.const(value)

    def object_arguments(self: FunctionCompiler, fn: Any, node: ast.Call) -> dict[str, Any]:
        """The object arguments a call passes for the parameters of ``fn`` annotated with a
        plain class (or a list of them), by parameter name (each must be an object argument or
        one reached from it: an ``ObjectArg``, or an ``ObjectSeq`` for a list), and for its
        unannotated parameters where the call passes one (``rnn(self.cell, inputs)``)."""
        wanted = object_param_kinds(fn)
        try:
            names = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            return {}
        given = list(zip(names, node.args)) + [(kw.arg, kw.value) for kw in node.keywords]
        annotated = declared(fn)
        found = {}
        for name, arg in given:
            if name not in wanted:
                if name not in annotated and isinstance(arg, (ast.Name, ast.Attribute)):
                    obj = self.resolve_static(arg)  # an unannotated parameter passed an object
                    if isinstance(obj, (ObjectArg, ObjectSeq)):  # is one, as annotated
                        found[name] = obj
                continue
            obj = self.resolve_static(arg)
            if wanted[name] == "object" and not isinstance(obj, ObjectArg):
                raise self.error(arg, f"{fn.__qualname__}() argument '{name}' is annotated with "
                                 "a plain class: pass it an object argument of this function "
                                 "(or an object one holds)")
            if wanted[name] == "sequence" and not isinstance(obj, ObjectSeq):
                raise self.error(arg, f"{fn.__qualname__}() argument '{name}' is annotated with "
                                 "a list of a plain class: pass it a list of objects this "
                                 "function takes as an argument (or one an object holds)")
            found[name] = obj
        return found

    def callee_input(self: FunctionCompiler, fdef: Any, ref: Any, objects: dict[str, Any]
                     ) -> Any:
        """A callee's attribute input as the caller's: an attribute of an object the caller
        passed is the same attribute path from the caller's own argument (through the item's
        path for an item of a list)."""
        if not isinstance(ref, ArgAttrRef):
            return self.add_attr_input(ref)
        owner = objects[fdef.arg_names[ref.param]]
        path = ref.path
        if isinstance(owner, ObjectSeq):
            if not path:  # the length of the list passed
                items = self.object_items(owner)
                return self.const(len(items)) if owner.path is None else \
                    self.add_attr_input(owner.length_ref())
            owner, path = owner.items[path[0]], path[1:]
        spelling = owner.spelling + "".join(f"[{s}]" if type(s) is int else f".{s}"
                                            for s in path)
        if ref.check == "hasattr":
            spelling = f"hasattr({spelling.rpartition('.')[0]}, {path[-1]!r})"
        elif ref.check == "owner":
            spelling = ref.name if not path else spelling
        else:
            stored = self.attribute_for_callee(ref, owner.param, owner.path + path, spelling)
            if stored is not None:
                return stored
        return self.add_attr_input(dataclasses.replace(ref, param=owner.param,
                                                       path=owner.path + path, name=spelling))

    def object_arg_as_value(self: FunctionCompiler, node: ast.AST, owner: Any) -> Any:
        if isinstance(owner, ObjectSeq):
            return self.error(node, f"'{owner.spelling}' is {owner.describe()}: scripted code "
                              f"iterates over it (`for item in {owner.spelling}:`), indexes it "
                              "with a constant, takes its len() or passes it to a function; "
                              "it cannot use the list itself as a value")
        return self.error(node, f"'{owner.spelling}' is a {type(owner.example).__name__} object "
                          "argument: scripted code reads its attributes "
                          f"('{owner.spelling}.<name>'), it cannot use the object itself as a "
                          "value (pass the attributes instead)")

    def object_seq_attribute(self: FunctionCompiler, seq: ObjectSeq, node: ast.Attribute
                             ) -> Any:
        return self.error(node, f"'{seq.spelling}' is {seq.describe()}: it has no attribute "
                          f"'{node.attr}' scripted code can use (iterate over it, index it with "
                          "a constant or take its len())")

