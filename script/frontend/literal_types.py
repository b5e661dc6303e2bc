"""Literals typed from their later use: ``out = []`` then ``out.append(i * 2)``, ``hs = {}`` then
``hs[-1] = h``, ``grads = [0, 0]`` then ``grads[i] += g``.

A mixin of ``FunctionCompiler``. A list or dict literal without an annotation gets the type its
items give (an empty one ``List[Tensor]`` / ``Dict[str, Tensor]``). When a later store does not
fit that type but would fit a wider one the literal could have had (an empty literal's element
or key type; a tensor where the literal held numbers, which become 0-d tensors as in numpy), the
store raises ``RetypeLiteral`` and the function is compiled again from the start with that
literal given the wider type. Each retry widens one literal, so compilation ends; a store that
fits no type the literal could have is the ``ScriptError`` it was before.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from ir.types import (
    INT,
    STR,
    TENSOR,
    DictType,
    ListType,
    TensorType,
    TupleType,
    Type,
    erase_shape,
    is_number,
    unify,
)
from passes.shape_prop import WEAK_DTYPE
from script.errors import ScriptError

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler

Site = tuple[int, int]
"""a literal's position in the source: (line, column)."""


def _number_and_tensor(a: Type, b: Type) -> bool:
    return is_number(a) and isinstance(b, TensorType) or is_number(b) and isinstance(a, TensorType)


def number_tensor_join(a: Type, b: Type) -> Type | None:
    """The join of a number and a tensor (``total = 0`` on one path, a tensor on the other):
    a 0-d tensor; of tuples, element by element (``return 0.0, g`` beside ``return loss, g``).
    None where the types do not join so."""
    if _number_and_tensor(a, b):
        return TENSOR
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.elements) == len(
            b.elements):
        items = [unify(x, y) or number_tensor_join(x, y) for x, y in zip(a.elements,
                                                                            b.elements)]
        if all(t is not None for t in items):
            return TupleType(tuple(items))  # type: ignore[arg-type]
    return None


def is_tuple_of_numbers_for(value: Any, t: Type) -> bool:
    """Whether ``value`` is a tuple that ``t`` (a join by ``number_tensor_join``) types with a
    0-d array where the value holds a number."""
    return isinstance(value.type, TupleType) and isinstance(t, TupleType) and value.type != t


class RetypeLiteral(Exception):
    """Compile again with the literal at ``site`` typed ``type`` (``error`` if that fails)."""

    def __init__(self, site: Site, type: Type, error: ScriptError):
        super().__init__(str(error))
        self.site, self.type, self.error = site, type, error


@dataclass(frozen=True)
class LiteralSite:
    """Where a container value came from: an unannotated literal."""

    site: Site
    """its position (the key of ``literal_types``)."""
    numbers: bool
    """it held only numbers (or nothing): they may become 0-d tensors."""
    empty: bool
    """it held nothing: its element (or key and value) types are free."""


class LiteralTypeMixin:
    """Literal retyping for ``FunctionCompiler``."""

    def literal_type(self: FunctionCompiler, node: ast.expr) -> Type | None:
        """The type an earlier attempt found ``node`` (a list or dict literal) must have."""
        return self.literal_types.get(_site(node))

    def expr_expecting(self: FunctionCompiler, node: ast.expr, expected: Type) -> Any:
        """``node`` compiled where a value of type ``expected`` goes (an item of an annotated
        list, ``seqs: List[Tuple[List[int], float]] = [([], 0.0)]``): a list literal, ``list()``
        or a tuple literal of them takes its item types from ``expected``, so an empty one holds
        what the annotation says rather than the default ``Tensor``; a number where an array goes
        is a 0-d array (``([], 0)`` for ``Tuple[List[int], Tensor]``)."""
        if isinstance(expected, ListType) and not any(
                isinstance(e, ast.Starred) for e in getattr(node, "elts", ())):
            if isinstance(node, ast.List):
                return self.visit_List(node, expected.element)
            if isinstance(node, ast.Call) and not node.args and not node.keywords and \
                    self.resolve_static(node.func) is list:
                return self.visit_List(ast.copy_location(ast.List(elts=[], ctx=ast.Load()), node),
                                       expected.element)
        if isinstance(expected, TupleType) and isinstance(node, ast.Tuple) and \
                len(node.elts) == len(expected.elements) and \
                not any(isinstance(e, ast.Starred) for e in node.elts):
            items = [self.expr_expecting(e, t) for e, t in zip(node.elts, expected.elements)]
            return self.emit_value("prim::TupleConstruct", items)
        value = self.expr(node)
        if isinstance(expected, TensorType) and is_number(value.type):
            return self.number_tensor(value, weak=True)  # a score that starts as 0, as numpy's
        return value

    def note_literal(self: FunctionCompiler, value: Any, node: ast.expr, items: list[Any]
                     ) -> Any:
        """Remember that ``value`` is the unannotated literal ``node`` (of ``items``)."""
        self.literal_sites[value.node] = LiteralSite(
            _site(node), all(is_number(v.type) for v in items), not items)
        return value

    def number_items(self: FunctionCompiler, items: list[Any], element: Type) -> list[Any]:
        """``items`` with numbers made 0-d tensors when the list holds tensors (weak: shape
        propagation gives them the dtype of the tensors stored over them, see
        ``passes.shape_prop._settle_weak_items``)."""
        if not isinstance(element, TensorType):
            return items
        return [self.number_tensor(v, weak=True) if is_number(v.type) else v for v in items]

    def number_items_as_tensors(self: FunctionCompiler, value: Any, t: TupleType) -> Any:
        """The tuple ``value`` with each number where ``t`` has a tensor made a 0-d array."""
        items = [self.emit_value("prim::TupleIndex", [value, self.const(k)])
                 for k in range(len(t.elements))]
        return self.emit_value("prim::TupleConstruct", [
            self.number_tensor(v) if is_number(v.type) and isinstance(e, TensorType) else v
            for v, e in zip(items, t.elements)])

    def number_tensor(self: FunctionCompiler, number: Any, weak: bool = False) -> Any:
        """A 0-d tensor holding ``number`` (int64, float64 or bool as ``np.asarray`` makes it;
        ``weak``: the dtype is left to shape propagation, see ``passes.shape_prop.WEAK_DTYPE``)."""
        shape = self.emit_value("prim::TupleConstruct", [])
        attrs = {WEAK_DTYPE: True} if weak else None
        return self.emit("tensor::full", [shape, number, self.const(None)], attrs=attrs).output

    def widen_list(self: FunctionCompiler, lst: Any, value_type: Type, error: ScriptError
                   ) -> NoReturn:
        """Retype the literal ``lst`` came from to hold ``value_type`` too, or raise ``error``."""
        found = self.literal_sites.get(lst.node)
        element = _wider(lst.type.element, value_type, found)
        if found is None or element is None:
            raise error
        self.retype(found.site, ListType(element), error)

    def widen_dict(self: FunctionCompiler, d: Any, key_type: Type, value_type: Type,
                   error: ScriptError) -> NoReturn:
        """Retype the literal ``d`` came from to hold this key and value, or raise ``error``."""
        found = self.literal_sites.get(d.node)
        t: DictType = d.type
        key = t.key if key_type == t.key else key_type if found and found.empty and \
            key_type in (STR, INT) else None
        value = _wider(t.value, value_type, found)
        if found is None or key is None or value is None:
            raise error
        self.retype(found.site, DictType(key, value), error)

    def retype(self: FunctionCompiler, site: Site, t: Type, error: ScriptError) -> NoReturn:
        """Start again with the literal at ``site`` typed ``t``; ``error`` when tried before."""
        if (site, t) in self.literal_tried:
            raise error
        raise RetypeLiteral(site, t, error)

    def recompiled(self: FunctionCompiler, retype: RetypeLiteral) -> Any:
        """The function compiled again with one more literal typed."""
        again = self.compiler_again()
        again.literal_types = {**self.literal_types, retype.site: retype.type}
        again.literal_tried = self.literal_tried | {(retype.site, retype.type)}
        return again.compile()

    def recompiled_with_stores(self: FunctionCompiler, found: dict[Any, str]) -> Any:
        """The function compiled again knowing the object attributes it assigns
        (``object_stores``)."""
        again = self.compiler_again()
        again.literal_types, again.literal_tried = self.literal_types, self.literal_tried
        again.presumed_stores = found
        return again.compile()

    def compiler_again(self: FunctionCompiler) -> Any:
        """A new compiler of the same function, given what this one's caller gave it."""
        again = type(self)(self.fn, self.unlifted, self.source, self.owner, self.session,
                           self.self_type, self.presets)
        if hasattr(self, "arg_types_override"):
            again.arg_types_override = self.arg_types_override
        if hasattr(self, "objects"):
            again.objects = self.objects
        for kept in ("read_per_call", "keyword_names"):  # a callee's: what its call gave it
            if kept in vars(self):
                setattr(again, kept, getattr(self, kept))
        return again


def empty_list_hint(*lists: Any) -> str:
    """A hint for a list of the default ``Tensor`` element that meets another type: an empty
    list kept inside another container (``[([], 0.0)]``) holds arrays unless annotated."""
    if not any(v.type.element == TENSOR for v in lists):
        return ""
    return (" (an empty list inside another container is a list of arrays unless the "
            "container is annotated: seqs: List[Tuple[List[int], float]] = [([], 0.0)])")


def _wider(old: Type, new: Type, found: LiteralSite | None) -> Type | None:
    """The element type a literal needs to hold items of type ``old`` and ``new``."""
    if found is None:
        return None
    if isinstance(new, TensorType) and (found.numbers or isinstance(old, TensorType)):
        return TENSOR
    if not found.empty:
        return None
    if old == TENSOR:  # the default of an empty literal
        return erase_shape(new)
    return None


def _site(node: ast.expr) -> Site:
    return (node.lineno, node.col_offset)
