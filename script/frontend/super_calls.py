"""``super()`` in methods: ``super().name(...)`` and ``super(Class, self).name(...)``.

The call runs the method Python's method resolution finds: in the MRO of the object's own class
(``type(self).__mro__``), the first class after the class that defines the current method (its
``__class__`` cell, what zero-argument ``super()`` reads; ``Class`` in the two-argument form)
that defines ``name``. So a middle class of a three-level hierarchy calling ``super()`` reaches
its own base, not itself again. The method found is compiled for the object as a direct call of
it would be: for a script-class object with ``self`` typed as the object's class (a base
``__init__`` defines the subclass's fields), for a plain object argument as a function of the
object (its attributes read per call), for a module as a method of that module. Only method
calls go through ``super()``; any other use is a ScriptError.
"""

from __future__ import annotations

import ast
import inspect
from typing import TYPE_CHECKING, Any

from ir.core import Value
from ir.types import ClassType
from script.errors import ScriptError
from script.frontend.classes import class_info, compile_class_function, find_in_mro
from script.frontend.exprs import NOT_STATIC
from script.frontend.modules import unwrap_module
from script.frontend.object_args import ObjectArg
from script.module import is_module

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


class SuperMixin:
    """``super().method(...)`` calls in ``FunctionCompiler``."""

    def is_super_call(self: FunctionCompiler, node: ast.expr) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            self.resolve_static(node.func) is super

    def super_refused(self: FunctionCompiler, node: ast.Call) -> ScriptError:
        return self.unsupported(node, "super() other than to call a method of a base class "
                                "(`super().forward(x)`, `super().__init__(W)`); read fields "
                                "through self (`self.W`), which a base __init__ sets")

    def call_super_method(self: FunctionCompiler, sup: ast.Call, name: str, node: ast.Call
                          ) -> Any:
        """``super(...).name(...)``: the method after the current class in the object's MRO."""
        start, target = self.super_arguments(sup)
        cls = self.super_object_class(sup, target, start)
        method = find_in_mro(cls, name, after=start)
        if method is object.__init__:  # a root class's cooperative super().__init__()
            if node.args or node.keywords:
                raise self.error(node, "object.__init__() takes no arguments")
            return self.const(None)
        if isinstance(target, ObjectArg) and (inspect.isfunction(method) or
                                              isinstance(method, (staticmethod, classmethod))):
            return self.call_plain_method(target, method, node)
        method = getattr(method, "python_fn", method)  # a module method decorated with @script
        if not inspect.isfunction(method):
            raise self.error(node.func, f"super().{name}: no class after '{start.__name__}' in "
                             f"the MRO of '{cls.__name__}' defines a method '{name}' that "
                             "scripted code can call")
        if isinstance(target, Value):
            return self.call_super_class_method(target, method, node)
        if self.session is None:
            raise self.error(sup, f"super() of the module '{cls.__name__}' can only be used "
                             "in a method of a scripted module")
        return self.call_module_function(unwrap_module(target), method, node)

    def call_super_class_method(self: FunctionCompiler, obj: Value, method: Any,
                                node: ast.Call) -> Any:
        info = class_info(obj.type)
        if method.__name__ == "__init__" and not info.compiling:
            raise self.unsupported(node, "super().__init__(...) outside the __init__ of a script "
                                   "class (it defines the class's fields)")
        fdef = compile_class_function(info, method)
        assert fdef is not None
        return self.call_function(fdef, node, bound=(obj,))

    def super_arguments(self: FunctionCompiler, sup: ast.Call) -> tuple[type, Any]:
        """The class after which ``super(...)`` looks, and the object it binds (a script-class
        value, an ``ObjectArg`` or a module)."""
        if sup.keywords or len(sup.args) not in (0, 2):
            raise self.unsupported(sup, "super() with other than no arguments or two "
                                   "(`super(Class, self)`)")
        if sup.args:
            start, target_node = self.resolve_static(sup.args[0]), sup.args[1]
            if not isinstance(start, type):
                raise self.error(sup.args[0], "the first argument of super() must be a class")
        else:
            start = self.namespace.get("__class__") \
                if "__class__" in self.fn.__code__.co_freevars else None
            params = self.tree.args.posonlyargs + self.tree.args.args
            if not isinstance(start, type) or not params:
                raise self.unsupported(sup, "super() without arguments outside a method "
                                       "defined in a class body (write `super(Class, self)`)")
            target_node = ast.copy_location(ast.Name(params[0].arg, ast.Load()), sup)
        target = self.resolve_static(target_node)
        return start, self.expr(target_node) if target is NOT_STATIC else target

    def super_object_class(self: FunctionCompiler, sup: ast.Call, target: Any, start: type
                           ) -> type:
        """The class of the object ``super()`` binds, whose MRO it follows."""
        if isinstance(target, ObjectArg):
            cls = type(target.example)
        elif is_module(target):
            cls = type(unwrap_module(target))
        elif isinstance(target, Value) and isinstance(target.type, ClassType) and \
                not target.type.named_tuple:
            cls = class_info(target.type).cls
        else:
            raise self.unsupported(sup, "super() of a value that is not a script-class "
                                   "object, an object argument or a module")
        if not issubclass(cls, start):
            raise self.error(sup, f"super({start.__name__}, obj): obj is a '{cls.__name__}', "
                             f"not an instance of '{start.__name__}'")
        return cls
