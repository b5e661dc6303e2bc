"""Compiling NamedTuple and script-class objects: construction, fields and methods.

``ObjectMixin`` is the part of ``FunctionCompiler`` that compiles them; the classes themselves are
registered in ``classes`` and typed in ``annotations.class_type``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.registry import NOT_CONSTANT, constant_of
from ir.types import ClassType, OptionalType, TensorType, is_subtype, unify
from script.frontend.annotations import class_type
from script.frontend.classes import NO_INIT, class_info, compile_class_method, find_in_mro

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler
    from script.frontend.env import Frame


class ObjectMixin:
    """Construction, fields and methods of NamedTuples and script-class objects."""

    def construct(self: FunctionCompiler, cls: type, node: ast.Call) -> Any:
        t = class_type(cls)
        assert t is not None
        if t.named_tuple:
            return self.construct_named_tuple(cls, t, node)
        info = class_info(t)
        if info.init is NO_INIT and (node.args or node.keywords):
            raise self.error(node, f"{cls.__name__}() takes no arguments (the class has no "
                             "__init__)")
        obj = self.emit("prim::CreateObject", [], [t]).output
        if info.init is not NO_INIT:
            self.call_function(info.init, node, bound=(obj,))
        return obj

    def construct_named_tuple(self: FunctionCompiler, cls: type, t: ClassType,
                              node: ast.Call) -> Any:
        names = [n for n, _ in t.fields]
        self.refuse_list_spread(node)
        if len(node.args) > len(names):
            raise self.error(node, f"{cls.__name__}() takes {len(names)} arguments but "
                             f"{len(node.args)} were given")
        values = dict(zip(names, (self.expr(a) for a in node.args)))
        for kw in node.keywords:
            if kw.arg not in names or kw.arg in values:
                raise self.error(kw, f"{cls.__name__}() got an unexpected or repeated "
                                 f"argument '{kw.arg}'")
            values[kw.arg] = self.expr(kw.value)
        defaults = getattr(cls, "_field_defaults", {})
        items = []
        for name, ft in t.fields:
            if name not in values and name not in defaults:
                raise self.error(node, f"{cls.__name__}() missing argument '{name}'")
            value = values[name] if name in values else self.static_value(node, defaults[name])
            if not is_subtype(value.type, ft):
                raise self.error(node, f"field '{name}' of {cls.__name__} is {ft}, not "
                                 f"{value.type}")
            items.append(value)
        return self.emit("prim::NamedTupleConstruct", items, [t]).output

    def object_attribute(self: FunctionCompiler, base: Any, name: str, node: ast.AST) -> Any:
        t = base.type
        info = class_info(t)
        if name in info.fields:
            kind = "prim::GetAttr" if t.named_tuple else "prim::LoadAttr"
            return self.emit(kind, [base], [info.fields[name]], {"name": name}).output
        if not t.named_tuple and callable(find_in_mro(info.cls, name)):
            raise self.unsupported(node, f"using the method '{name}' as a value")
        raise self.error(node, f"'{info.cls.__name__}' object has no attribute '{name}'")

    # -- fields narrowed by a None check -----------------------------------------------------------
    def refine_field(self: FunctionCompiler, key: str) -> None:
        """After ``if obj.name is not None:`` reads of ``obj.name`` give the unwrapped value,
        until ``obj`` is rebound, a field of that name is assigned or a function is called."""
        base_name, name = key.split(".", 1)
        base = self.frame.find(base_name)
        if not isinstance(getattr(base, "type", None), ClassType) or base.type.named_tuple:
            return
        declared = class_info(base.type).fields.get(name)
        if not isinstance(declared, OptionalType):
            return
        read = self.emit("prim::LoadAttr", [base], [declared], {"name": name}).output
        unwrapped = self.emit_value("prim::unchecked_unwrap_optional", [read])
        self.frame.fields[key] = (base, unwrapped)

    def refined_field(self: FunctionCompiler, node: ast.Attribute) -> Any:
        """The narrowed value of ``obj.name`` (see ``refine_field``), or None."""
        if not isinstance(node.value, ast.Name):
            return None
        key = f"{node.value.id}.{node.attr}"
        frame: Frame | None = self.frame
        while frame is not None and key not in frame.fields:
            frame = frame.parent
        if frame is None:
            return None
        base, unwrapped = frame.fields[key]
        return unwrapped if self.frame.find(node.value.id) is base else None

    def forget_fields(self: FunctionCompiler, name: str | None = None) -> None:
        """A field ``name`` (every field when None) may have changed: drop its narrowings in
        every enclosing block (the code after them sees the change too)."""
        frame: Frame | None = self.frame
        while frame is not None:
            for key in [k for k in frame.fields if name is None or k.endswith("." + name)]:
                del frame.fields[key]
            frame = frame.parent

    def narrowed_fields(self: FunctionCompiler) -> set[str]:
        """The keys of the narrowed fields visible here."""
        found: set[str] = set()
        frame: Frame | None = self.frame
        while frame is not None:
            found |= set(frame.fields)
            frame = frame.parent
        return found

    def named_tuple_items(self: FunctionCompiler, value: Any) -> list[Any]:
        if value.node.kind == "prim::NamedTupleConstruct":
            return list(value.node.inputs)
        return [self.emit("prim::GetAttr", [value], [ft], {"name": n}).output
                for n, ft in value.type.fields]

    def index_named_tuple(self: FunctionCompiler, value: Any, index: ast.expr) -> Any:
        items = self.named_tuple_items(value)
        if isinstance(index, ast.Slice):
            bounds = [constant_of(b) for b in self.slice_bounds(index)]
            if NOT_CONSTANT in bounds:
                raise self.error(index, "NamedTuple slice bounds must be constants")
            return self.emit_value("prim::TupleConstruct", items[slice(*bounds)])
        i = constant_of(self.index_value(index))
        if not isinstance(i, int):
            raise self.error(index, "a NamedTuple index must be a constant int")
        if not -len(items) <= i < len(items):
            raise self.error(index, f"index {i} out of range for {value.type}")
        return items[i]

    def call_object_method(self: FunctionCompiler, base: Any, name: str, node: ast.Call) -> Any:
        info = class_info(base.type)
        if name in info.fields:  # self.layer(x): the object a field holds, called
            return self.call_instance(self.object_attribute(base, name, node.func), node)
        fdef = None if base.type.named_tuple else compile_class_method(info, name)
        if fdef is None:
            raise self.error(node.func, f"'{info.cls.__name__}' object has no method '{name}' "
                             "that scripted code can call")
        return self.call_function(fdef, node, bound=(base,))

    def assign_field(self: FunctionCompiler, target: ast.Attribute, value: Any) -> None:
        """``obj.field = value`` on a script-class object (``__init__`` defines the fields)."""
        base = self.expr(target.value)
        t = base.type
        if not isinstance(t, ClassType):
            raise self.unsupported(target, f"assigning an attribute of a {t}")
        info = class_info(t)
        if t.named_tuple:
            raise self.error(target, f"cannot assign to field '{target.attr}' of the NamedTuple "
                             f"'{info.cls.__name__}': NamedTuples are immutable")
        declared = info.fields.get(target.attr)
        if declared is None:
            if not self.defining_fields(base):
                raise self.error(target, f"'{info.cls.__name__}' object has no attribute "
                                 f"'{target.attr}' (fields are created in __init__)")
            info.fields[target.attr] = declared = value.type
        if isinstance(declared, TensorType) and isinstance(value.type, TensorType) and \
                not is_subtype(value.type, declared):
            # __init__'s np.zeros(n) is a float64 vector; a method may store any array there
            info.fields[target.attr] = declared = unify(declared, value.type) or TensorType()
        if not is_subtype(value.type, declared):
            raise self.error(target, f"field '{target.attr}' of '{info.cls.__name__}' has type "
                             f"{declared}, not {value.type}")
        self.emit("prim::SetAttr", [base, value], [], {"name": target.attr})
        self.forget_fields(target.attr)

    def defining_fields(self: FunctionCompiler, base: Any) -> bool:
        """Inside a script class's ``__init__``, assigning ``self.<new field>`` defines it."""
        return self.self_type is not None and self.fn.__name__ == "__init__" and \
            bool(self.graph.inputs) and base is self.graph.inputs[0]
