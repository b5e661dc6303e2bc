"""Expressions: constants, names, operators, comparisons, and/or, conditional expressions,
tuples, lists, attributes (indexing and slicing: ``script.frontend.indexing``).

A mixin of ``FunctionCompiler``: every ``visit_X`` here returns the IR ``Value`` of the
expression. Operators are found through the op registry by their spelling (``"+"``, ``"@"``), so
the registry stays the one place that knows which op an operator means.
"""

from __future__ import annotations

import ast
import types
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.registry import NOT_CONSTANT, OpDef, accepts, constant_of, spelled
from ir.types import (
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
    erase_shape,
    unify,
)
from script.frontend.env import NOT_STATIC, Static, describe_object
from script.frontend.keywords import Keywords
from script.frontend.literal_types import empty_list_hint
from script.frontend.masks import MASK_OPERATORS
from script.frontend.nested import LocalFunction
from script.frontend.none_tests import (
    _known_not_none,
    array_or_none,
    is_none_literal,
    optional_scalar,
)
from script.frontend.object_args import ObjectArg, ObjectSeq
from script.frontend.sequences import numbers_dtype, numbers_sequence
from script.frontend.suggest import did_you_mean, did_you_mean_method
from script.module import is_module

if TYPE_CHECKING:
    from collections.abc import Callable

    from script.frontend.compiler import FunctionCompiler

_PATHS = (ast.Name, ast.Attribute, ast.Subscript)
"""the expressions that read a path (``write_order``)."""

_OPERATORS: dict[type, str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**", ast.MatMult: "@", ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=",
    ast.Gt: ">", ast.GtE: ">=", ast.USub: "-x",
}
_SYMBOLS = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<",
            ast.RShift: ">>", ast.Invert: "~"}
TENSOR_ATTRIBUTES = {"T": "tensor::transpose", "ndim": "tensor::ndim", "size": "tensor::numel"}
"""attributes (not methods) of a tensor, and the op each reads."""

def operator_op(spelling: str) -> OpDef:
    """The op an operator spelling (``"+"``, ``"@"``, ``"-x"``) means."""
    op = spelled(spelling)
    if op is None:
        raise KeyError(spelling)
    return op


_SCALAR_TYPES = frozenset(np.dtype(c).type for c in "?bhilqBHILQefdgFDG")
"""numpy's concrete scalar types (``np.float32``, ``np.int64``, ...)."""


def constant_value(obj: Any) -> Any:
    """A Python object captured from the enclosing scope as a constant, or NOT_CONSTANT."""
    if isinstance(obj, np.floating):  # np.float64(2.5) is not a Python float: float32 * it
        return np.asarray(obj)  # is float64 in numpy 2, as with a 0-d array
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, np.dtype) or (isinstance(obj, type) and issubclass(obj, np.generic)
                                     and obj in _SCALAR_TYPES):
        return np.dtype(obj).name  # a dtype as a value is its name, as ``x.dtype`` is
    if isinstance(obj, tuple):
        items = tuple(constant_value(v) for v in obj)
        if any(v is NOT_CONSTANT or isinstance(v, np.ndarray) for v in items):
            return NOT_CONSTANT
        return items
    return NOT_CONSTANT


class ExprMixin:
    """Expression visitors of ``FunctionCompiler``."""

    def expr(self: FunctionCompiler, node: ast.expr) -> Any:
        value = self.visit(node)
        if isinstance(node, _PATHS) and "_versions" in self.__dict__:
            return self.read_version(value)  # after a write into the caller's array
        return value

    # -- names and compile-time objects ---------------------------------------------------------
    def resolve_static(self: FunctionCompiler, node: ast.expr) -> Any:
        """The Python object a name/attribute chain denotes at compile time (a module, a
        function, a constant), or NOT_STATIC when it involves a local variable."""
        if isinstance(node, ast.Name):
            found = self.frame.find(node.id)
            if isinstance(found, Static):
                return found.obj
            if found is not None:
                return NOT_STATIC
            if node.id not in self.namespace:
                raise self.error(node, f"undefined name '{node.id}'")
            return self.namespace[node.id]
        if isinstance(node, ast.Attribute):
            base = self.resolve_static(node.value)
            if base is NOT_STATIC:
                return NOT_STATIC
            if isinstance(base, ObjectArg):
                member = self.object_arg_member(base, node)
                return NOT_STATIC if member is None else member
            if isinstance(base, ObjectSeq):
                raise self.object_seq_attribute(base, node)
            if is_module(base):
                return self.module_member(base, node.attr, node)
            if not hasattr(base, node.attr):
                hint = did_you_mean(base, node.attr, ast.unparse(node)) \
                    if isinstance(base, types.ModuleType) else ""
                raise self.error(node, f"unknown name {ast.unparse(node)}: "
                                 f"{describe_object(base)} has no attribute '{node.attr}'{hint}")
            return getattr(base, node.attr)
        if isinstance(node, ast.Subscript):
            return self.static_subscript(node)
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and \
                getattr(node.func, "attr", getattr(node.func, "id", None)) in ("finfo", "iinfo"):
            fn = self.resolve_static(node.func)  # np.finfo(np.float32).eps, np.finfo(0.).tiny
            if fn in (np.finfo, np.iinfo):
                arg = node.args[0]
                kind = arg.value if isinstance(arg, ast.Constant) else self.resolve_static(arg)
                if isinstance(kind, (type, np.dtype, str, int, float)):
                    try:
                        return fn(kind)
                    except (TypeError, ValueError) as exc:
                        raise self.error(node, f"{ast.unparse(node)}: {exc}") from None
        return NOT_STATIC

    def static_value(self: FunctionCompiler, node: ast.expr, obj: Any) -> Any:
        """A captured Python object as a constant value; ScriptError when it cannot be one."""
        if isinstance(obj, (ObjectArg, ObjectSeq)):
            raise self.object_arg_as_value(node, obj)
        if isinstance(obj, LocalFunction):
            raise self.error(node, f"'{obj.name}' is a nested function: it can only be called "
                             "(storing, passing or returning it is not supported)")
        value = constant_value(obj)
        if value is NOT_CONSTANT and (obj is np.c_ or obj is np.r_):
            instead = "np.column_stack((a, b)) for 1-D or 2-D arrays, np.concatenate(..., " \
                "axis=-1)" if obj is np.c_ else "np.concatenate((a, b)) or np.arange(...)"
            raise self.error(node, f"'{ast.unparse(node)}[...]' (numpy's index trick) is not "
                             f"supported: write {instead}")
        if value is NOT_CONSTANT:
            raise self.error(node, f"'{ast.unparse(node)}' is {describe_object(obj)}, which "
                             "cannot be used as a value (only numbers, strings, None, tuples "
                             "of those and numpy arrays are captured as constants)")
        if isinstance(obj, np.floating):  # a numpy scalar at run time, as the source's
            return self.numpy_scalar(self.const(float(obj)), self.const(obj.dtype.name))
        return self.const(value)

    def visit_Name(self: FunctionCompiler, node: ast.Name) -> Any:
        local = self.lookup(node.id, node)
        if isinstance(local, Static) and isinstance(local.obj, Keywords):
            raise self.keywords_value_refused(local.obj, node)
        if isinstance(local, Static):
            return self.static_value(node, local.obj)
        if local is not None:
            return local
        return self.captured_value(node, self.resolve_static(node))

    def visit_Constant(self: FunctionCompiler, node: ast.Constant) -> Any:
        if node.value is Ellipsis or isinstance(node.value, (bytes, complex)):
            raise self.unsupported(node, f"the constant {node.value!r}")
        return self.const(node.value)

    # -- operators -----------------------------------------------------------------------------
    def visit_BinOp(self: FunctionCompiler, node: ast.BinOp) -> Any:
        symbol = _OPERATORS.get(type(node.op))
        if symbol is None and type(node.op) in MASK_OPERATORS:
            return self.mask_operator(node)
        if symbol is None:
            raise self.unsupported(node, f"the operator {_SYMBOLS.get(type(node.op), '?')}")
        return self.binary(symbol, self.expr(node.left), self.expr(node.right), node)

    def binary(self: FunctionCompiler, symbol: str, lhs: Any, rhs: Any, node: ast.AST) -> Any:
        """``lhs <symbol> rhs``: tuples and lists concatenate, everything else is an op."""
        if symbol == "+" and isinstance(lhs.type, TupleType) and isinstance(rhs.type, TupleType):
            items = self.tuple_items(lhs) + self.tuple_items(rhs)
            return self.emit_value("prim::TupleConstruct", items)
        if symbol == "+" and self.int_sequences(lhs, rhs):
            return self.concat_int_sequences(lhs, rhs)
        if symbol == "+" and isinstance(lhs.type, ListType) and isinstance(rhs.type, ListType):
            if unify(lhs.type.element, rhs.type.element) is None:
                error = self.error(node, f"cannot concatenate lists of {lhs.type.element} and "
                                   f"{rhs.type.element}{empty_list_hint(lhs, rhs)}")
                # seq = [] then seq + [n]: the empty literal is retyped to hold what is added
                for lst, other in ((lhs, rhs), (rhs, lhs)):
                    found = self.literal_sites.get(lst.node)
                    if found is not None and found.empty:
                        self.widen_list(lst, other.type.element, error)
                raise error
            return self.emit_value("prim::ListAdd", [lhs, rhs])
        if symbol == "*" and {type(lhs.type), type(rhs.type)} & {ListType} and \
                INT in (lhs.type, rhs.type):
            return self.repeat_list(lhs, rhs, node)
        folded = fold_scalars(symbol, lhs, rhs)
        if folded is not NOT_CONSTANT:
            return self.const(folded)
        if symbol in ("==", "!=") and lhs.type == rhs.type == STR:  # if mode == "train":
            same = self.emit_value("prim::str_eq", [lhs, rhs])
            return same if symbol == "==" else self.negate(same)
        if STR in (lhs.type, rhs.type):
            joined = self.string_binary(symbol, lhs, rhs)
            if joined is not None:
                return joined
        op = operator_op(symbol)
        if isinstance(lhs.type, TensorType) != isinstance(rhs.type, TensorType):
            # an array and a list or tuple of numbers: numpy makes the numbers an array
            # (x - [0.1], [2.0] * x)
            lhs, rhs = (self.emit_value("tensor::array", [v, self.const(numbers_dtype(v.type))])
                        if numbers_sequence(v.type) else v for v in (lhs, rhs))
        if symbol not in ("==", "!="):  # None == 3 is False; None < 3 raises
            lhs = self.unwrap_operand(lhs, symbol, node)
            rhs = self.unwrap_operand(rhs, symbol, node)
        for value, arg in zip((lhs, rhs), op.args):
            if not accepts(arg.kind, value.type):
                raise self.error(node, f"unsupported operand types for {symbol}: "
                                 f"'{lhs.type}' and '{rhs.type}'{self.operand_hint(value)}")
        return self.emit_value(op.kind, [lhs, rhs])

    def visit_UnaryOp(self: FunctionCompiler, node: ast.UnaryOp) -> Any:
        if isinstance(node.op, ast.Not):
            return self.negate(self.condition_value(node.operand))
        if isinstance(node.op, ast.Invert):
            return self.mask_not(node)
        operand = self.expr(node.operand)
        if not accepts("operand", operand.type):
            sign = "-" if isinstance(node.op, ast.USub) else "+"
            raise self.error(node, f"bad operand type for unary {sign}: '{operand.type}'")
        if isinstance(node.op, ast.UAdd):  # numpy's +a is a new array (np.positive)
            if isinstance(operand.type, TensorType):
                return self.emit_value("tensor::copy", [operand])
            return operand
        folded = constant_of(operand)
        if isinstance(folded, (int, float)) and not isinstance(folded, bool):
            return self.const(-folded)
        return self.emit_value(operator_op("-x").kind, [operand])

    def negate(self: FunctionCompiler, cond: Any) -> Any:
        folded = constant_of(cond)
        if isinstance(folded, bool):
            return self.const(not folded)
        return self.emit_value("tensor::logical_not", [cond])

    def condition_value(self: FunctionCompiler, node: ast.expr) -> Any:
        """An expression used as a truth value, converted to bool as Python's ``if`` does."""
        if isinstance(node, ast.BoolOp):
            return self.bool_op_condition(node)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
                isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            saved, self.deciding = self.deciding, node
            try:  # `if layout == 1:` of an optional array (see compare_optional)
                value = self.expr(node)
            finally:
                self.deciding = saved
            return self.to_bool(value, node)
        value = self.expr(node)
        return self.to_bool(value, node)

    def to_bool(self: FunctionCompiler, value: Any, node: ast.AST) -> Any:
        t = value.type
        if t == BOOL:
            return value
        if t in (INT, FLOAT) or isinstance(t, TensorType):
            return self.emit_value("prim::Bool", [value])
        if t == STR or isinstance(t, (ListType, DictType)):  # Python's: only empty ones are false
            return self.emit_value("prim::Bool", [self.emit_value("prim::len", [value])])
        if isinstance(t, TupleType):
            return self.const(bool(t.elements))
        if t == NONE:
            return self.const(False)
        if isinstance(t, OptionalType):
            raise self.error(node, f"the truth value of an Optional ({t}) is ambiguous; "
                             "test 'x is not None'")
        raise self.error(node, f"a condition must be a bool, number, str, container or Tensor, "
                         f"not {t}")

    # -- comparisons ------------------------------------------------------------------------------
    def visit_Compare(self: FunctionCompiler, node: ast.Compare) -> Any:
        left = node.left
        result = None
        arrays = False  # a < b < c is (a < b) and (b < c): numpy's np.bool_ when a < b is one
        for k, (op, right) in enumerate(zip(node.ops, node.comparators)):
            if result is None:
                result = self.compare(op, left, right, node)
                arrays = isinstance(result.type, TensorType)
            elif arrays:
                result = self.deciding_operand(result, True, lambda o=op, lft=left, r=right:
                                               self.compare(o, lft, r, node), node)
            else:
                result = self.short_circuit(result, True, lambda o=op, lft=left, r=right:
                                            self.to_bool(self.compare(o, lft, r, node), node),
                                            node)
            if len(node.ops) > 1 and k == 0 and not arrays:
                result = self.to_bool(result, node)
            left = right
        return result

    def compare(self: FunctionCompiler, op: ast.cmpop, left: ast.expr, right: ast.expr,
                node: ast.AST) -> Any:
        if isinstance(op, (ast.Is, ast.IsNot)):
            return self.is_none(op, left, right, node)
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, ast.Set):
            right = ast.copy_location(ast.Tuple(right.elts, ast.Load()), right)  # {"a", "b"}
        table = self.table_of(right) if isinstance(op, (ast.In, ast.NotIn)) else None
        if table is not None:  # `name in ACTIVATIONS`, `name not in reg_types.keys()`
            found = self.key_present(table, self.expr(left))
            return found if isinstance(op, ast.In) else self.negate(found)
        record = self.keywords_of(right)
        if record is not None and isinstance(op, (ast.In, ast.NotIn)) and \
                isinstance(left, ast.Constant) and isinstance(left.value, str):
            return self.const((left.value in record.names) == isinstance(op, ast.In))
        if isinstance(op, (ast.Eq, ast.NotEq)) and (is_none_literal(left)
                                                     or is_none_literal(right)):
            return self.equals_none(op, left, right, node)
        lhs, rhs = self.expr(left), self.expr(right)
        if isinstance(op, (ast.Eq, ast.NotEq)) and (
                optional_scalar(lhs.type) or optional_scalar(rhs.type) or (
                    self.deciding is node and array_or_none(lhs, rhs))):
            return self.compare_optional(op, lhs, rhs, node)
        if isinstance(op, (ast.In, ast.NotIn)):
            found = self.contains(rhs, lhs, node)
            return self.negate(found) if isinstance(op, ast.NotIn) else found
        if isinstance(op, (ast.Eq, ast.NotEq)) and self.int_sequences(lhs, rhs):
            return self.compare_int_sequences(op, lhs, rhs, node)
        return self.binary(_OPERATORS[type(op)], lhs, rhs, node)

    def bool_op_condition(self: FunctionCompiler, node: ast.BoolOp) -> Any:
        """``a and b`` / ``a or b`` as a truth value (an ``if`` or ``while`` test, ``not``):
        each operand converted to bool."""
        is_and = isinstance(node.op, ast.And)
        result = self.condition_value(node.values[0])
        for k, operand in enumerate(node.values[1:], 1):
            known = _known_not_none(node.values[:k], is_and)
            result = self.short_circuit(result, is_and, lambda e=operand, n=known: (
                self.refine(n), self.condition_value(e))[1], node)
        return result

    def visit_BoolOp(self: FunctionCompiler, node: ast.BoolOp) -> Any:
        """``a and b`` / ``a or b`` as a value, by Python's rule: the operand that decides
        (``n or 3`` is ``n`` unless ``n`` is 0), each evaluated only when needed."""
        is_and = isinstance(node.op, ast.And)
        result = self.expr(node.values[0])
        for k, operand in enumerate(node.values[1:], 1):
            result = self.deciding_operand(result, is_and, operand, node,
                                           _known_not_none(node.values[:k], is_and))
        return result

    def deciding_operand(self: FunctionCompiler, first: Any, is_and: bool,
                         operand: ast.expr | Callable[[], Any], node: ast.BoolOp | ast.Compare,
                         known: list[str] | None = None) -> Any:
        """``first and operand`` / ``first or operand``: ``first`` when its truth value decides,
        else ``operand``'s value (an expression, or a function emitting it); the two must have
        one type."""
        cond = self.to_bool(first, node)
        folded = constant_of(cond)
        rest = operand if callable(operand) else lambda: self.expr(operand)
        if isinstance(folded, bool):
            return rest() if folded == is_and else first
        if_node = self.emit("prim::If", [cond], [], nblocks=2)
        def later() -> Any:  # (where the operands before decided: x is not None and x == 1)
            self.refine(known or [])
            return rest()

        evaluate = (later, lambda: first) if is_and else (lambda: first, later)
        values = []
        for block, fn in zip(if_node.blocks, evaluate):
            _, value = self.emit_in_block(block, fn)
            block.add_return(value)
            values.append(value)
        t = unify(values[0].type, values[1].type)
        if t is None and isinstance(node, ast.Compare):
            raise self.error(node, f"the comparisons of this chain give {values[0].type} and "
                             f"{values[1].type}: its value is one of them (Python's rule), so "
                             "they need one type; compare arrays with arrays, or write the "
                             "comparisons joined by 'and' inside bool(...)")
        if t is None:
            word = "and" if is_and else "or"
            raise self.error(node, f"the operands of '{word}' have types {values[0].type} and "
                             f"{values[1].type}: its value is one of them (Python's rule), so "
                             f"they need one type; use it as a condition (if a {word} b:) or "
                             "write a conditional expression (x if c else y)")
        if_node.add_output(t)
        return if_node.output

    def short_circuit(self: FunctionCompiler, first: Any, is_and: bool, rest: Any,
                      node: ast.AST) -> Any:
        """``first and rest()`` / ``first or rest()`` with ``rest`` evaluated only when needed."""
        folded = constant_of(first)
        if isinstance(folded, bool):
            return rest() if folded == is_and else first
        if_node = self.emit("prim::If", [first], [], nblocks=2)
        evaluate = (rest, lambda: self.const(False)) if is_and else \
            (lambda: self.const(True), rest)
        for block, fn in zip(if_node.blocks, evaluate):
            _, value = self.emit_in_block(block, fn)
            block.add_return(value)
        if_node.add_output(BOOL)
        return if_node.output

    def refine(self: FunctionCompiler, names: list[str]) -> None:
        """Inside a branch where these Optional names are known not to be None."""
        for name in names:
            if "." in name:
                if not self.refine_attribute(name):
                    self.refine_field(name)
                continue
            value = self.frame.find(name)
            if value is None or not isinstance(getattr(value, "type", None), OptionalType):
                continue
            unwrapped = self.emit_value("prim::unchecked_unwrap_optional", [value])
            unwrapped.name = name
            self.frame.refined[name] = unwrapped

    # -- containers -----------------------------------------------------------------------------
    def visit_Tuple(self: FunctionCompiler, node: ast.Tuple) -> Any:
        items: list[Any] = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                items += self.tuple_spread_items(elt)
            else:
                items.append(self.expr(elt))
        return self.emit_value("prim::TupleConstruct", items)

    def visit_List(self: FunctionCompiler, node: ast.List, element: Type | None = None) -> Any:
        if any(isinstance(elt, ast.Starred) for elt in node.elts):
            return self.list_with_spreads(node, element)
        items = [self.expr(e) if element is None else self.expr_expecting(e, element)
                 for e in node.elts]
        if element is None:
            hinted = self.literal_type(node)
            if isinstance(hinted, ListType):
                out = self.list_literal(items, hinted.element, node)
                return self.note_literal(out, node, items)
            if not items:
                out = self.emit("prim::ListConstruct", [], [ListType(TensorType())]).output
                return self.note_literal(out, node, items)
        out = self.list_literal(items, element, node)
        return self.note_literal(out, node, items) if element is None else out

    def list_literal(self: FunctionCompiler, items: list[Any], element: Type | None,
                         node: ast.List) -> Any:
        """A list of ``items`` with the element type ``element`` (None: the items')."""
        if element is not None:
            items = self.number_items(items, element)
        if not items:
            return self.emit("prim::ListConstruct", [], [ListType(element or TensorType())]).output
        for item in items:
            if element is not None and unify(item.type, element) != element:
                raise self.error(node, f"a list of {element} cannot hold a {item.type}")
        if element is None:
            # lists are mutable: a literal of tensors is a Tensor[] (as TorchScript types it), so
            # appending a tensor of another shape or dtype later is as legal as in Python
            joined = items[0].type
            for item in items[1:]:
                joined = unify(joined, item.type) if joined is not None else None
            if joined is None and any(i.type in (INT, BOOL) for i in items):
                # [left, -1] of left = np.prod(...): numpy reads the integer array's int
                ints = [self.as_index(i) for i in items]
                if all(i.type in (INT, BOOL) for i in ints):
                    items, joined = ints, INT if any(i.type == INT for i in ints) else BOOL
            if joined is None:
                raise self.error(node, "list elements have different types: " +
                                 ", ".join(str(i.type) for i in items) + " (a list holds "
                                 "items of one type; a record of values of different types "
                                 "is a tuple: (seq, score))")
            element = erase_shape(joined)
        return self.emit("prim::ListConstruct", items, [ListType(element)]).output

    def tuple_items(self: FunctionCompiler, value: Any) -> list[Any]:
        """The element values of a tuple value."""
        if value.node.kind == "prim::TupleConstruct":
            return list(value.node.inputs)
        elements = value.type.elements
        if not elements:
            return []
        return list(self.emit("prim::TupleUnpack", [value], list(elements)).outputs)

    def visit_Starred(self: FunctionCompiler, node: ast.Starred) -> Any:
        raise self.unsupported(node, "* unpacking here")

    # -- attributes --------------------------------------------------------------------------
    def visit_Attribute(self: FunctionCompiler, node: ast.Attribute) -> Any:
        owner = self.resolve_static(node.value)
        if owner is not NOT_STATIC and is_module(owner):
            return self.module_value(owner, node.attr, node)
        if isinstance(owner, ObjectArg):
            return self.object_arg_value(owner, node)
        obj = self.resolve_static(node)
        if obj is not NOT_STATIC:
            return self.captured_value(node, obj)
        narrowed = self.refined_field(node)
        if narrowed is not None:
            return narrowed
        base = self.expr(node.value)
        return self.attribute(base, node.attr, node)

    def attribute(self: FunctionCompiler, base: Any, name: str, node: ast.AST) -> Any:
        t = base.type
        if isinstance(t, TensorType):
            if name in TENSOR_ATTRIBUTES:
                kind = TENSOR_ATTRIBUTES[name]
                extra = [self.const(None)] if kind == "tensor::transpose" else []
                return self.emit_value(kind, [base, *extra])
            if name == "shape":
                return self.emit_value("tensor::shape", [base])
            if name == "mT":  # numpy's matrix transpose: the last two axes swapped
                if t.shape is not None and len(t.shape) < 2:
                    raise self.error(node, f".mT of an array of {len(t.shape)} axes: numpy "
                                     "needs at least 2")
                return self.emit_value("tensor::swapaxes", [base, self.const(-2),
                                                           self.const(-1)])
            if name == "dtype" and t.dtype is not None:
                return self.const(t.dtype)
            if name == "dtype":  # a constant once the function is specialized (shape_prop)
                return self.emit_value("tensor::dtype", [base])
        if isinstance(t, ClassType):
            return self.object_attribute(base, name, node)
        hint = did_you_mean_method(name) if isinstance(t, TensorType) else ""
        if isinstance(t, TensorType) and not hint and self.unannotated_parameter(base):
            hint = (f"; the unannotated parameter '{base.name}' is a Tensor: to pass an object "
                    "whose attributes are arrays, annotate it with the object's class")
        raise self.error(node, f"'{_type_name(t)}' has no attribute '{name}'{hint}")


_SCALAR_FOLDS: dict[str, Any] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "//": lambda a, b: a // b, "%": lambda a, b: a % b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def fold_scalars(symbol: str, lhs: Any, rhs: Any) -> Any:
    """``lhs <symbol> rhs`` for two int/bool constants (a counter in an unrolled loop, an index
    into a ModuleList, ``i < self.num_layers - 1``) or ``==`` / ``!=`` of two str constants
    (``self.nonlinearity == "relu"``), else NOT_CONSTANT."""
    fn = _SCALAR_FOLDS.get(symbol)
    a, b = constant_of(lhs), constant_of(rhs)
    if symbol in ("==", "!=") and type(a) is str and type(b) is str:
        return fn(a, b)
    if fn is None or type(a) not in (int, bool) or type(b) not in (int, bool):
        return NOT_CONSTANT
    if symbol in ("//", "%") and b == 0:
        return NOT_CONSTANT  # keep the division: it raises at run time, as Python does
    return fn(a, b)


def _type_name(t: Type) -> str:
    if isinstance(t, TensorType):
        return "Tensor"
    return str(t)
