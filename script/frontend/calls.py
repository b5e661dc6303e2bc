"""Calls: ops by their numpy / ``script.ops`` / method spellings, Python builtins, and other
scripted or plain Python functions.

Callees are resolved at compile time by evaluating the callee expression against the function's
globals and closure (``np.tanh`` is the object ``numpy.tanh``), then looked up by identity in a
table built from the registry's spellings: ``"np.NAME"`` is ``getattr(numpy, NAME)``,
``"ops.NAME"`` and every ``tensor::NAME`` op is ``getattr(script.ops, NAME)``, ``".NAME"`` is a
tensor method. Arguments are bound with the op's schema; defaults become constants.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import sys
import typing
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.ops.script_prim import ITEM_KIND
from ir.registry import (
    NO_DEFAULT,
    NOT_CONSTANT,
    Arg,
    OpDef,
    ShapeError,
    accepts,
    constant_of,
    lookup,
)
from ir.types import (
    BOOL,
    FLOAT,
    INT,
    STR,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
    is_number,
    is_subtype,
    unify,
)
from script.frontend import classes
from script.frontend.annotations import (
    class_type,
    is_plain_class,
)
from script.frontend.exprs import NOT_STATIC, constant_value
from script.frontend.function_tables import TableChoice
from script.frontend.math_calls import math_function_name
from script.frontend.modules import is_module_sequence
from script.frontend.nested import LocalFunction
from script.frontend.numpy_calls import numpy_composite
from script.frontend.numpy_keywords import MEMORY_ORDERS
from script.frontend.object_args import ObjectArg, ObjectSeq, is_plain_object, plain_class_params
from script.frontend.op_lookup import method_op, op_for_object
from script.frontend.random_calls import random_function_name
from script.frontend.sequences import numbers_dtype, numbers_sequence
from script.frontend.spread import positional_params
from script.frontend.suggest import did_you_mean_method
from script.frontend.whole_writes import mark_new_array
from script.module import is_array, is_module

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

KIND_TEXT = {
    "Tensor": "a Tensor", "number": "a number", "operand": "a Tensor or a number",
    "int": "an int", "float": "a float", "bool": "a bool", "str": "a str",
    "ints": "an int or a tuple of ints", "Tensor[]": "a list or tuple of Tensors",
    "list": "a list", "tuple": "a tuple", "dict": "a dict", "any": "any value",
}
_LIBRARY_MODULES = {"numpy", "math", "builtins", "script", "typing", "cupy", "ir", "scipy",
                    "torch", "jax", "jaxlib", "tensorflow", "sklearn", "pandas"}
"""Modules whose Python functions are not compiled as the user's are: a call of one that is not
an op is an "unknown function" at the user's line (not an error inside the library's source)."""
_LOOP_ONLY = ("range",)
_LIST_AS_TUPLE = ("axes", "shape", "newshape", "reps")
"""The int-tuple parameters numpy also takes as a list of ints (``np.transpose(x, [1, 0, 2])``,
``np.zeros([2, 3])``); an ``axis`` it does not (``np.sum(x, axis=[0, 1])`` is a TypeError)."""
_PACKED = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
"""a function taking ``*args`` or ``**kwargs``: the call packs them (``call_with_varargs``)."""



class CallMixin:
    """Call visitors of ``FunctionCompiler``."""

    def visit_Call(self: FunctionCompiler, node: ast.Call) -> Any:
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            node = self.spread_arguments(node)
        if any(kw.arg is None for kw in node.keywords):
            spread = self.spread_keywords(node)
            if not isinstance(spread, ast.Call):  # calls chosen by the keys a dict holds
                return self.expr(spread)
            node = spread
        func = node.func
        out = next((kw for kw in node.keywords if kw.arg == "out"), None)
        if out is not None and op_for_object(self.resolve_static(func)) is not None:
            return self.call_with_out(node, out)
        if (kept := self.extremum_keepdims(node)) is not None:  # np.argmax(..., keepdims=)
            return kept
        if isinstance(func, ast.Attribute):
            if self.is_super_call(func.value):
                return self.call_super_method(func.value, func.attr, node)
            record = self.keywords_of(func.value)
            if record is not None:
                return self.keywords_method(record, func.attr, node)
            base = self.resolve_static(func.value)
            if base is NOT_STATIC:
                return self.call_method(self.expr(func.value), func.attr, node)
            if isinstance(base, ObjectArg) and self.object_method(base, func.attr) is not None:
                return self.call_object_argument(base, node, func.attr)
            if constant_value(base) is not NOT_CONSTANT or is_array(base):
                # a method of a captured array (numpy's or CuPy's)
                return self.call_method(self.captured_value(func.value, base), func.attr, node)
        obj = self.resolve_static(func)
        if obj is NOT_STATIC:
            return self.call_instance(self.expr(func), node)
        return self.call_object(obj, node)

    def dtype_scalar(self: FunctionCompiler, dtype: Any, node: ast.Call) -> Any:
        """``x.dtype.type(v)``: numpy's scalar of ``x``'s dtype holding ``v`` (a 0-d array of
        that dtype here: Chainer's ``x.dtype.type(0.5)``)."""
        if len(node.args) != 1 or node.keywords:
            raise self.error(node, "x.dtype.type() takes one number here")
        value = self.expr(node.args[0])
        if not is_number(value.type):
            raise self.error(node.args[0],
                             f"x.dtype.type() takes a number here, not {value.type}")
        shape = self.emit_value("prim::TupleConstruct", [])
        return self.emit_value("tensor::full", [shape, value, dtype])

    def call_instance(self: FunctionCompiler, value: Any, node: ast.Call) -> Any:
        """``layer(x)`` on a value: a script-class object's ``__call__``."""
        t = value.type
        if isinstance(t, ClassType) and not t.named_tuple:
            return self.call_object_method(value, "__call__", node)
        raise self.error(node.func, f"a value of type {t} is not callable")

    def call_object_argument(self: FunctionCompiler, obj: ObjectArg, node: ast.Call,
                             name: str = "__call__") -> Any:
        """``layer(x)`` or ``layer.forward(x)`` on a plain object argument: its class's method,
        compiled as a function taking the object (its attributes read per call, as the
        caller's are); a static method is a plain function."""
        method = self.object_method(obj, name)
        if method is None:
            raise self.unsupported(node.func, f"calling the object argument '{obj.spelling}' "
                                   "(its class has no __call__; its attributes are read: call a "
                                   "function with them)")
        self.called_method(obj, name, method)
        return self.call_plain_method(obj, method, node)

    def call_plain_method(self: FunctionCompiler, obj: ObjectArg, method: Any, node: ast.Call
                          ) -> Any:
        """Call ``method`` (a function, static or class method stored in the class of the
        object argument ``obj`` or a base class) on ``obj``."""
        if isinstance(method, staticmethod):
            return self.call_python_function(method.__func__, node)
        if isinstance(method, classmethod):
            raise self.unsupported(node.func, f"calling the class method "
                                   f"'{method.__func__.__name__}' of '{obj.spelling}' (make it "
                                   "a static method or a function)")
        objects = self.object_arguments(method.__get__(obj.example), node)
        objects[next(iter(inspect.signature(method).parameters))] = obj
        if method.__code__.co_flags & _PACKED and len(objects) == 1:
            return self.call_with_varargs(method, node, objects)  # def __call__(self, *args)
        override = None
        if len(objects) == 1:  # unannotated parameters take the call's types, as a function's
            node, override = self.typed_by_the_call(method.__get__(obj.example), node)
        fdef = self.compile_callee(method, node, *self.callee_examples(objects), override)
        return self.call_function(fdef, node, bound=(self.const(None),), objects=objects)

    def call_object(self: FunctionCompiler, obj: Any, node: ast.Call) -> Any:
        if isinstance(obj, TableChoice):
            return self.call_table_choice(obj, node)
        if isinstance(obj, LocalFunction):
            return self.call_local_function(obj, node)
        if isinstance(obj, ObjectArg):
            return self.call_object_argument(obj, node)
        if is_module(obj):
            return self.call_module(obj, "forward", node)
        if inspect.ismethod(obj) and is_module(obj.__self__):
            return self.call_module(obj.__self__, obj.__func__.__name__, node)
        if isinstance(obj, type) and class_type(obj) is not None:
            return self.construct(obj, node)
        python_fn = getattr(obj, "python_fn", None)
        if inspect.isfunction(python_fn) and plain_class_params(python_fn):
            return self.call_python_function(python_fn, node)  # a @script one taking objects
        fdef = getattr(obj, "__rnnscript_function__", None)
        if fdef is not None:
            return self.call_function(fdef, node)
        if (drawn := random_function_name(obj)) is not None:
            return self.call_random(drawn, node)
        if not inspect.isfunction(obj) or _is_library(obj):
            node = self.spread_into_library(positional_params(obj, op_for_object(obj)), node)
        if obj is super:
            raise self.super_refused(node)
        if obj is typing.cast:  # a hint to type checkers: the value itself
            if node.keywords or len(node.args) != 2:
                raise self.error(node, "cast() takes exactly 2 arguments")
            return self.expr(node.args[1])
        builtin = _builtin_name(obj)
        if builtin is not None and hasattr(self, f"builtin_{builtin}"):
            return getattr(self, f"builtin_{builtin}")(node)
        if builtin in _LOOP_ONLY:
            raise self.error(node, f"{builtin}() is only supported as the iterable of a for loop")
        composite = numpy_composite(obj)
        if composite is not None:
            return mark_new_array(obj, getattr(self, composite)(node))
        op = op_for_object(obj)
        if op is not None:
            result = mark_new_array(obj, self.call_op(op, node, display=ast.unparse(node.func)))
            # a numpy function of Python numbers gives a numpy scalar (np.clip(0.5, 0, 1),
            # np.dot(1, 0): filterpy's predict with its defaults B=1, u=0)
            scalar = isinstance(obj, np.ufunc) or obj is np.dot or op.is_elementwise and \
                obj.__module__ and obj.__module__.startswith("numpy")
            return self.ufunc_result(result) if scalar else result
        if inspect.isfunction(obj) and not _is_library(obj):
            return self.call_python_function(obj, node)
        if (name := math_function_name(obj)) is not None:
            return self.call_math(name, node)
        if isinstance(obj, type) and is_plain_class(obj) and \
                obj.__module__.partition(".")[0] not in sys.stdlib_module_names:
            raise self.error(node.func, f"{obj.__name__}(): making an object of a plain class "
                             "is not supported (objects are arguments here): decorate the "
                             f"class with @script to make {obj.__name__} objects in compiled "
                             "code, or return the arrays and build the object outside")
        held = getattr(obj, "__self__", obj) if inspect.ismethod(obj) else obj
        if held is not obj and classes.info_of(type(held)) is not None:
            cls = type(held).__name__
            raise self.error(node.func, f"{ast.unparse(node.func)}: a method of a {cls} object "
                             "(a @script class) held by a global or closure is not supported: "
                             f"pass the object as an argument ({cls.lower()}: {cls}), or make "
                             "it in the compiled function")
        if is_plain_object(held):
            what = "a method of" if held is not obj else "calling"
            raise self.error(node.func, f"{ast.unparse(node.func)}: {what} a "
                             f"{type(held).__name__} object held by a global or closure is not "
                             "supported (objects' methods compile for objects passed as "
                             f"arguments): pass the object as an argument "
                             f"({type(held).__name__.lower()}: {type(held).__name__}), or call "
                             "a function")
        module = getattr(obj, "__module__", None) if obj is not NOT_STATIC else None
        library = f" ({module}.{getattr(obj, '__qualname__', '')} is not supported in compiled " \
            "code)" if isinstance(module, str) and module.partition(".")[0] in \
            sys.stdlib_module_names and module != "builtins" else ""
        raise self.error(node.func, f"unknown function {ast.unparse(node.func)}{library}")

    # -- ops ------------------------------------------------------------------------------------
    def call_method(self: FunctionCompiler, base: Any, name: str, node: ast.Call) -> Any:
        t = base.type
        if isinstance(t, TensorType) or not isinstance(t, ClassType):
            op = method_op(name) if isinstance(t, TensorType) else None
            node = self.spread_into_library(positional_params(None, op) if op else None, node,
                                            method=True)
        if isinstance(t, TensorType):
            op = method_op(name)
            if op is not None:
                result = self.call_op(op, node, display=f".{name}", self_value=base)
                if op.kind == "prim::item" and t.dtype is None:
                    result.node.attrs[ITEM_KIND] = "float"
                return result
        if isinstance(t, ListType) and hasattr(self, f"list_{name}"):
            return getattr(self, f"list_{name}")(base, node)
        if isinstance(t, DictType) and hasattr(self, f"dict_{name}"):
            return getattr(self, f"dict_{name}")(base, node)
        if t == STR and name == "type" and base.node.kind == "tensor::dtype":
            return self.dtype_scalar(base, node)  # x.dtype.type(0.5)
        if t == STR:
            return self.string_method(base, name, node)
        if isinstance(t, ClassType):
            return self.call_object_method(base, name, node)
        type_name = "Tensor" if isinstance(t, TensorType) else str(t)
        hint = did_you_mean_method(name) if isinstance(t, TensorType) else ""
        raise self.error(node.func, f"'{type_name}' has no attribute '{name}'{hint}")

    def call_op(self: FunctionCompiler, op: OpDef, node: ast.Call, display: str,
                self_value: Any = None) -> Any:
        """Bind a call's arguments to the op's schema and emit the op."""
        inputs = self.bind_op_arguments(op, node, display, self_value)
        args = list(op.args)
        if display.startswith("np.") and op.is_elementwise and BOOL in (
                v.type for v in inputs) and not any(isinstance(v.type, TensorType)
                                                    for v in inputs):
            # numpy runs a ufunc of Python numbers on numpy scalars: a bool's loop is the bool
            # one (np.add(True, True) is True, np.log(True) a float16), not Python's int
            inputs = [self.numpy_scalar(v, self.const("bool")) if v.type == BOOL else v
                      for v in inputs]
        for k, value in enumerate(inputs):
            arg = args[min(k, len(args) - 1)]
            if arg.kind == "Tensor" and display.startswith("np.") and (
                    value.type in (INT, FLOAT, BOOL) or numbers_sequence(value.type)):
                # numpy takes a number as a 0-d array (np.sum(3.0)), numbers as a 1-d one
                # (np.prod(x.shape)), of the dtype their type gives (a list of ints that is
                # empty when it runs is an int64 array, as it is typed, where numpy makes
                # float64: np.prod(x.shape[1:]) of a vector is the int 1, numpy's 1.0)
                value = inputs[k] = self.emit_value("tensor::array", [
                    value, self.const(numbers_dtype(value.type))])
            elif arg.kind == "Tensor[]" and self.numbers_among_arrays(value, display):
                value = inputs[k] = self.numbers_as_arrays(value)  # np.vstack((1, u))
            elif arg.kind == "Tensor[]" and display.startswith("np.") and \
                    isinstance(value.type, TensorType):
                # numpy joins the items of one array (np.concatenate(y_heads, axis=-1))
                if value.type.shape == ():
                    raise self.error(node, f"{display}() of a 0-d array: numpy iterates the "
                                     "array it is given, and a 0-d one has no items")
                value = inputs[k] = self.emit_value("tensor::unbind", [value, self.const(0)])
            elif arg.kind in ("Tensor", "operand") and display.startswith("np.") and \
                    _arrays(value.type):
                # and a list of arrays as their stack: np.sum([np.sum(w * w) for w in ws])
                if isinstance(value.type, TupleType):  # (a list: gradients follow those)
                    items = self.emit("prim::TupleUnpack", [value],
                                      list(value.type.elements)).outputs
                    value = self.emit_value("prim::ListConstruct", list(items))
                value = inputs[k] = self.emit_value("tensor::stack", [value, self.const(0)])
            if arg.kind.rstrip("?") in ("int", "ints", "number") and \
                    display.startswith("np."):  # np.arange(n), np.zeros(n) of a 0-d int array
                value = inputs[k] = self.as_index(value)
            if arg.kind.rstrip("?") == "ints" and isinstance(value.type, TupleType) and any(
                    isinstance(e, TensorType) for e in value.type.elements):
                # x.reshape(-1, np.prod(x.shape[1:])): a 0-d integer array in a shape is its int
                items = self.emit("prim::TupleUnpack", [value],
                                  list(value.type.elements)).outputs
                value = inputs[k] = self.emit_value("prim::TupleConstruct",
                                                    [self.as_index(v) for v in items])
            if not accepts(arg.kind, value.type):
                kind = arg.kind.rstrip("?")
                text = KIND_TEXT.get(kind, kind) + (" or None" if arg.kind.endswith("?") else "")
                hint = ""
                if kind in ("int", "number") and isinstance(value.type, TensorType):
                    hint = (": a 0-d array's value as a number is int(x) or float(x), "
                            f"{display}(int(n))")
                error = self.error(node, f"{display}() argument '{arg.name}' must be {text}, "
                                   f"not {value.type}{hint}")
                if not (isinstance(value.type, OptionalType)
                        and accepts(arg.kind, value.type.element)):
                    raise error
                value = inputs[k] = self.optional_or_refused(value, error)
        ir_node = self.emit(op.kind, inputs)
        if op.results.startswith("("):  # numpy's np.split gives a list, torch's chunk a tuple
            kind = "prim::ListConstruct" if display.startswith("np.") else "prim::TupleConstruct"
            return self.emit_value(kind, ir_node.outputs)
        if not ir_node.outputs:
            return self.const(None)
        return ir_node.output

    def as_index(self: FunctionCompiler, value: Any) -> Any:
        """An integer array where Python or numpy takes an int (``range(n)``, ``np.zeros(n)``
        for ``n = np.argmax(x)``): its int, as ``operator.index`` reads a 0-d integer array;
        any other value as it is."""
        t = value.type
        if isinstance(t, TensorType) and t.dtype is not None and \
                np.dtype(t.dtype).kind in "iub" and (t.shape is None or len(t.shape) == 0):
            return self.emit_value("prim::Int", [value])
        return value

    def bind_op_arguments(self: FunctionCompiler, op: OpDef, node: ast.Call, display: str,
                          self_value: Any) -> list[Any]:
        positional: list[Any] = ([self_value] if self_value is not None else []) + list(node.args)
        keywords = {kw.arg: kw.value for kw in node.keywords}
        if op.kind == "tensor::clip":
            keywords = self.clip_keywords(node, display, len(positional), keywords)
        if "order" in keywords and op.kind in MEMORY_ORDERS:  # np.zeros(n, order="C")
            self.check_memory_order(op, keywords.pop("order"), display)
        pack_at = self.varargs_slot(op, positional, keywords, display, node)
        if pack_at is not None:
            positional = positional[:pack_at] + [ast.Tuple(elts=positional[pack_at:],
                                                           ctx=ast.Load())]
        try:
            slots = op.bind(len(positional), list(keywords))
        except ShapeError as exc:
            message = str(exc).removeprefix(f"{op.name}() ").removeprefix(f"{op.kind} ")
            raise self.error(node, f"{display}() {message}") from None
        if op.variadic:
            return [self.argument(p, op.args[min(k, len(op.args) - 1)])
                    for k, p in enumerate(positional)]
        values = []
        for arg, slot in zip(op.args, slots):
            if slot == "=default":
                values.append(self.const(arg.default))
            elif isinstance(slot, str):
                values.append(self.argument(keywords[slot], arg))
            else:
                values.append(self.argument(positional[slot], arg))
        return values

    def varargs_slot(self: FunctionCompiler, op: OpDef, positional: list[Any],
                     keywords: dict[str, ast.expr], display: str, node: ast.Call) -> int | None:
        """Where ``x.reshape(a, b)`` style extra positional ints start (packed into a tuple)."""
        if op.variadic or len(positional) <= len(op.args):
            return None
        for k, arg in enumerate(op.args):
            if arg.kind.rstrip("?") == "ints" and k < len(positional) and \
                    all(a.name not in keywords or a.default is not NO_DEFAULT
                        for a in op.args[k + 1:]):
                return k
        shown = len(positional) - (1 if display.startswith(".") else 0)
        most = len(op.args) - (1 if display.startswith(".") else 0)
        raise self.error(node, f"{display}() takes at most {most} positional arguments, "
                         f"got {shown}")

    def argument(self: FunctionCompiler, node: Any, arg: Arg) -> Any:
        if not isinstance(node, ast.AST):
            return node  # already a value (the receiver of a method call)
        if arg.name == "dtype" and arg.kind.rstrip("?") == "str":
            return self.dtype_value(node)
        value = self.expr(node)
        if arg.kind == "Tensor[]" and isinstance(node, ast.Tuple) and \
                value.node.kind == "prim::TupleConstruct" and value.node.inputs and \
                all(isinstance(v.type, TensorType) for v in value.node.inputs):
            # np.concatenate((a, b)) reads the sequence as np.concatenate([a, b]) does: the
            # list literal, whose items the passes and the differentiation follow
            return self.list_literal(list(value.node.inputs), None, node)
        if arg.kind.rstrip("?") == "ints" and arg.name in _LIST_AS_TUPLE and \
                isinstance(node, ast.List) and all(
                isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts):
            # np.transpose(x, [1, 0, 2]): numpy reads a list of ints as their tuple
            return self.const(tuple(e.value for e in node.elts))  # type: ignore[attr-defined]
        return value

    def dtype_value(self: FunctionCompiler, node: ast.expr) -> Any:
        """A dtype argument (``np.float32``, ``float``, ``"float32"``) as its numpy name."""
        if isinstance(node, ast.Constant) and node.value is None:
            return self.const(None)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            obj: Any = node.value
        else:
            obj = self.resolve_static(node)
            if obj is NOT_STATIC:
                value = self.expr(node)
                if value.type == STR:
                    return value
                raise self.error(node, f"a dtype must be a numpy type or a dtype name, "
                                 f"not {value.type}")
        try:
            return self.const(np.dtype(obj).name)
        except TypeError:
            raise self.error(node, f"'{ast.unparse(node)}' is not a dtype") from None

    # -- builtins -----------------------------------------------------------------------------
    def builtin_args(self: FunctionCompiler, node: ast.Call, name: str, count: int) -> list[Any]:
        if node.keywords or len(node.args) != count:
            raise self.error(node, f"{name}() takes exactly {count} positional argument"
                             f"{'s' if count > 1 else ''} here")
        return [self.expr(a) for a in node.args]

    def builtin_len(self: FunctionCompiler, node: ast.Call) -> Any:
        if len(node.args) == 1 and not node.keywords:
            record = self.keywords_of(node.args[0])
            if record is not None:
                return self.const(len(record.names))
            static = self.resolve_static(node.args[0])
            if isinstance(static, ObjectSeq):
                return self.const(len(self.object_items(static)))
            if static is not NOT_STATIC and is_module_sequence(static):
                return self.const(len(static))
        (value,) = self.builtin_args(node, "len", 1)
        t = value.type
        if isinstance(t, TupleType):
            return self.const(len(t.elements))
        if isinstance(t, ClassType) and t.named_tuple:
            return self.const(len(t.fields))
        if isinstance(t, (ListType, TensorType, DictType)) or t == STR:
            return self.emit_value("prim::len", [value])
        raise self.error(node, f"len() of a value of type {t} is not supported")

    def convert(self: FunctionCompiler, node: ast.Call, name: str, target: Type,
                kind: str) -> Any:
        (value,) = self.builtin_args(node, name, 1)
        folded = constant_of(value)
        if folded is not NOT_CONSTANT and isinstance(folded, (bool, int, float, str)):
            try:
                return self.const(getattr(builtins, name)(folded))
            except ValueError as exc:
                raise self.error(node, f"{name}(): {exc}") from None
        if value.type == target:
            return value
        if value.type not in (BOOL, INT, FLOAT) and not isinstance(value.type, TensorType):
            raise self.error(node, f"{name}() of a value of type {value.type} is not supported")
        return self.emit_value(kind, [value])

    def builtin_float(self: FunctionCompiler, node: ast.Call) -> Any:
        return self.convert(node, "float", FLOAT, "prim::Float")

    def builtin_int(self: FunctionCompiler, node: ast.Call) -> Any:
        return self.convert(node, "int", INT, "prim::Int")

    def builtin_bool(self: FunctionCompiler, node: ast.Call) -> Any:
        return self.convert(node, "bool", BOOL, "prim::Bool")

    def builtin_str(self: FunctionCompiler, node: ast.Call) -> Any:
        """``str(n)`` of a number or a string (``cache['a' + str(t)]``): ``'{}'.format(n)``,
        which is ``str(n)`` for these; folded when ``n`` is a constant."""
        (value,) = self.builtin_args(node, "str", 1)
        folded = constant_of(value)
        if folded is not NOT_CONSTANT and isinstance(folded, (bool, int, float, str)):
            return self.const(str(folded))
        if value.type == STR:
            return value
        if value.type not in (BOOL, INT, FLOAT):
            raise self.error(node, f"str() of a value of type {value.type} is not supported "
                             "(str() of a number or a string is)")
        return self.emit_value("prim::str_op", [self.const("format"), self.const("{}"), value])

    def builtin_abs(self: FunctionCompiler, node: ast.Call) -> Any:
        """``abs(x)``: of a Python number, Python's (an int or a float, not a numpy scalar);
        of an array, ``np.abs``."""
        if len(node.args) == 1 and not node.keywords:
            value = self.expr(node.args[0])
            if value.type in (INT, FLOAT, BOOL):
                return self.emit_value("prim::abs", [value])
            node = self.call_of_values(node, [value], {})
        return self.call_op(lookup("tensor::abs"), node, display="abs")

    def builtin_min(self: FunctionCompiler, node: ast.Call) -> Any:
        return self.extremum(node, "min")

    def builtin_max(self: FunctionCompiler, node: ast.Call) -> Any:
        return self.extremum(node, "max")

    def builtin_print(self: FunctionCompiler, node: ast.Call) -> Any:
        if node.keywords:
            raise self.unsupported(node.keywords[0], "keyword arguments of print()")
        self.emit("prim::Print", [self.expr(a) for a in node.args], [])
        return self.const(None)

    # -- list methods -----------------------------------------------------------------------------
    def list_element(self: FunctionCompiler, lst: Any, value: Any, node: ast.AST) -> Any:
        element = lst.type.element
        if not is_subtype(value.type, element):
            return self.widen_or_number(value, element, f"cannot add a {value.type} to a list "
                                        f"of {element}", node,
                                        lambda error: self.widen_list(lst, value.type, error))
        return value

    def list_args(self: FunctionCompiler, node: ast.Call, name: str, low: int, high: int
                  ) -> list[Any]:
        if node.keywords or not low <= len(node.args) <= high:
            count = str(low) if low == high else f"{low} to {high}"
            raise self.error(node, f"list.{name}() takes {count} argument"
                             f"{'s' if high != 1 else ''}")
        return [self.expr(a) for a in node.args]

    def list_append(self: FunctionCompiler, lst: Any, node: ast.Call) -> Any:
        (value,) = self.list_args(node, "append", 1, 1)
        self.emit("prim::ListAppend", [lst, self.list_element(lst, value, node)], [])
        return self.const(None)

    def list_extend(self: FunctionCompiler, lst: Any, node: ast.Call) -> Any:
        (other,) = self.list_args(node, "extend", 1, 1)
        self.extend_list(lst, other, node)
        return self.const(None)

    def extend_list(self: FunctionCompiler, lst: Any, other: Any, node: ast.AST) -> None:
        if isinstance(other.type, TupleType):
            for item in self.tuple_items(other):
                self.emit("prim::ListAppend", [lst, self.list_element(lst, item, node)], [])
            return
        error = self.error(node, f"cannot extend a list of {lst.type.element} with {other.type}")
        if not isinstance(other.type, ListType):
            raise error
        if unify(lst.type.element, other.type.element) != lst.type.element:
            self.widen_list(lst, other.type.element, error)
        self.emit("prim::ListExtend", [lst, other], [])

    def list_insert(self: FunctionCompiler, lst: Any, node: ast.Call) -> Any:
        index, value = self.list_args(node, "insert", 2, 2)
        if index.type not in (INT, BOOL):
            raise self.error(node.args[0], f"a list index must be an int, not {index.type}")
        self.emit("prim::ListInsert", [lst, index, self.list_element(lst, value, node)], [])
        return self.const(None)

    def list_pop(self: FunctionCompiler, lst: Any, node: ast.Call) -> Any:
        args = self.list_args(node, "pop", 0, 1)
        index = args[0] if args else self.const(-1)
        if index.type not in (INT, BOOL):
            raise self.error(node, f"a list index must be an int, not {index.type}")
        return self.emit_value("prim::ListPop", [lst, index])


def _builtin_name(obj: Any) -> str | None:
    name = getattr(obj, "__name__", None)
    if isinstance(name, str) and getattr(builtins, name, None) is obj:
        return name
    return None


def _is_library(fn: Any) -> bool:
    module = getattr(fn, "__module__", None) or ""
    return module.split(".")[0] in _LIBRARY_MODULES and module != "script.frontend.numpy_shims"


def _arrays(t: Type) -> bool:
    """A list or tuple of arrays (which numpy functions take as the array of their stack)."""
    if isinstance(t, ListType):
        return isinstance(t.element, TensorType)
    return isinstance(t, TupleType) and bool(t.elements) and all(
        isinstance(e, TensorType) for e in t.elements)
