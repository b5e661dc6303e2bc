"""Types from example calls: annotations for unannotated parameters and the return value.

``script(fn, example_inputs=[args1, args2, ...])`` runs ``fn`` eagerly on each example (to see what
it returns), takes the type of every value each parameter received and joins them across examples:
arrays give tensors of their dtype with unknown shape (``Float``), scalars and containers their
types, ``None`` in one example and a value in another gives ``Optional``. Values that cannot share
one type (an int in one call, an array in another) are a ``ScriptError`` naming the parameter.

``infer_annotations(fn, examples)`` returns the inferred signature as source text to paste in.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ir.types import (
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    TENSOR,
    AnyType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
    strip_optional,
)
from script.errors import ScriptError
from script.frontend.annotations import declared
from script.frontend.definition import load_source
from script.frontend.object_args import is_plain_object
from script.module import is_array


class Conflict(Exception):
    """Two observed types that cannot be joined; the caller names the parameter."""


@dataclass(frozen=True)
class InferredSignature:
    """What the examples say about a function's unannotated parameters and return value."""

    names: list[str]
    """every parameter name, in order."""
    types: dict[str, Type]
    """parameter name (and ``"return"`` when unannotated) -> the inferred type; annotated
    parameters are absent."""
    annotated: dict[str, Any]
    """parameter name (and ``"return"``) -> the annotation the source already has."""
    objects: dict[str, type] = field(default_factory=dict)
    """unannotated parameter name -> the plain class of the objects every example passed for
    it: an object argument whose attributes are read per call (``object_args``)."""

    def compile_types(self) -> dict[str, Type]:
        """The types handed to the frontend: tensors left dtype-free, as the annotation
        ``Tensor`` the examples stand for says (a later call with float32 arrays where the
        examples passed float64 ones specializes again; the return value is checked before
        dtypes are known)."""
        return {name: erase_dtypes(t) for name, t in self.types.items()}


# -- the type of one example value ----------------------------------------------------------------
def type_of_example(value: Any) -> Type:
    """The type a parameter receiving ``value`` should have (tensor shapes left unknown)."""
    if is_array(value):
        return TensorType(value.dtype.name)
    if isinstance(value, (bool, np.bool_)):
        return BOOL
    if isinstance(value, (int, np.integer)):
        return INT
    if isinstance(value, (float, np.floating)):
        return FLOAT
    if isinstance(value, str):
        return STR
    if value is None:
        return NONE
    if isinstance(value, tuple):
        return TupleType(tuple(type_of_example(v) for v in value))
    if isinstance(value, list):
        return ListType(_join_all([type_of_example(v) for v in value]))
    if isinstance(value, dict):
        keys = _join_all([type_of_example(k) for k in value])
        return DictType(STR if isinstance(keys, AnyType) else keys,
                        _join_all([type_of_example(v) for v in value.values()]))
    raise Conflict(f"a value of type {type(value).__name__} has no type in the language")


def _join_all(types: Sequence[Type]) -> Type:
    """The join of a container's element types; ``Any`` stands for "no element seen"."""
    result: Type = AnyType()
    for t in types:
        result = join(result, t)
    return result


# -- joining observations -------------------------------------------------------------------------
def join(a: Type, b: Type) -> Type:
    """The least type holding both ``a`` and ``b``; raises ``Conflict`` when there is none."""
    if a == b:
        return a
    if isinstance(a, AnyType):
        return b
    if isinstance(b, AnyType):
        return a
    if a == NONE or b == NONE:
        return _optional(b if a == NONE else a)
    if isinstance(a, OptionalType) or isinstance(b, OptionalType):
        return _optional(join(strip_optional(a), strip_optional(b)))
    if {a, b} == {INT, FLOAT}:
        return FLOAT  # an int passes for a float, as in Python
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return TENSOR  # dtypes differ: keep the dtype open
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        if len(a.elements) != len(b.elements):
            raise Conflict(f"tuples of {len(a.elements)} and {len(b.elements)} elements")
        return TupleType(tuple(join(x, y) for x, y in zip(a.elements, b.elements)))
    if isinstance(a, ListType) and isinstance(b, ListType):
        return ListType(join(a.element, b.element))
    if isinstance(a, DictType) and isinstance(b, DictType):
        return DictType(join(a.key, b.key), join(a.value, b.value))
    raise Conflict(f"{describe(a)} in one example and {describe(b)} in another")


def _optional(t: Type) -> Type:
    return t if isinstance(t, OptionalType) or t == NONE else OptionalType(t)


def erase_dtypes(t: Type) -> Type:
    """``t`` with every tensor's dtype forgotten (what an annotation ``Tensor`` says)."""
    if isinstance(t, TensorType):
        return TENSOR
    if isinstance(t, TupleType):
        return TupleType(tuple(erase_dtypes(e) for e in t.elements))
    if isinstance(t, ListType):
        return ListType(erase_dtypes(t.element))
    if isinstance(t, DictType):
        return DictType(t.key, erase_dtypes(t.value))
    if isinstance(t, OptionalType):
        return OptionalType(erase_dtypes(t.element))
    return t


def describe(t: Type) -> str:
    """A type in words for messages (``a tensor``, ``int``)."""
    if isinstance(t, TensorType):
        return "a tensor" if t.dtype is None else f"a {t.dtype} tensor"
    return str(t)


# -- whole signatures -----------------------------------------------------------------------------
def infer_signature(fn: Callable[..., Any], examples: Sequence[Any]) -> InferredSignature:
    """Run ``fn`` on every example and infer its unannotated parameter and return types."""
    examples = _as_calls(fn, examples)
    sig = inspect.signature(fn)
    names = list(sig.parameters)
    annotated = _source_annotations(fn, sig)
    observed: dict[str, list[Type]] = {n: [] for n in names if n not in annotated}
    objects: dict[str, type] = {}
    returns: list[Type] = []
    for k, args in enumerate(examples):
        try:
            bound = sig.bind(*args)
        except TypeError as exc:
            raise ScriptError(f"example {k} cannot be passed to {fn.__qualname__}(): {exc}") \
                from None
        bound.apply_defaults()
        for name in observed:
            value = bound.arguments[name]
            if (name in objects or k == 0) and is_plain_object(value):
                objects.setdefault(name, type(value))
                continue
            if name in objects:
                raise ScriptError(f"cannot infer the type of parameter '{name}': a "
                                  f"{objects[name].__name__} object in example 0 and a "
                                  f"{type(value).__name__} in example {k}")
            observed[name].append(_typed(value, f"parameter '{name}'", k))
        if "return" not in annotated:
            returns.append(_typed(fn(*args), "the return value", k))
    types = {name: _joined(ts, f"parameter '{name}'", fn) for name, ts in observed.items()
             if name not in objects}
    for name, t in list(types.items()):  # None in every example, by default: left to the
        if t == NONE and sig.parameters[name].default is None:  # default rule (Optional)
            del types[name]
    if returns:
        types["return"] = _joined(returns, "the return value", fn)
    return InferredSignature(names, types, annotated, objects)


def _as_calls(fn: Callable[..., Any], examples: Any) -> list[tuple[Any, ...]]:
    if isinstance(examples, tuple) or not isinstance(examples, (list, tuple)):
        raise ScriptError(f"example_inputs for {fn.__qualname__}() must be a list of argument "
                          "tuples, e.g. [(x, h), (x2, h2)]")
    if not examples:
        raise ScriptError(f"example_inputs for {fn.__qualname__}() is empty")
    return [tuple(e) if isinstance(e, (tuple, list)) else (e,) for e in examples]


def _source_annotations(fn: Callable[..., Any], sig: inspect.Signature) -> dict[str, Any]:
    """What the source annotates already (a ``# type:`` comment annotates everything)."""
    if _has_type_comment(fn):
        return {**{n: "comment" for n in sig.parameters}, "return": "comment"}
    return dict(declared(fn))


def _has_type_comment(fn: Callable[..., Any]) -> bool:
    try:
        tree, _ = load_source(fn)
    except ScriptError:
        return False
    return bool(tree.type_comment)


def _typed(value: Any, what: str, example: int) -> Type:
    try:
        return type_of_example(value)
    except Conflict as exc:
        raise ScriptError(f"cannot infer the type of {what} from example {example}: {exc}") \
            from None


def _joined(types: list[Type], what: str, fn: Callable[..., Any]) -> Type:
    result: Type = AnyType()
    for t in types:
        try:
            result = join(result, t)
        except Conflict as exc:
            raise ScriptError(f"{fn.__qualname__}(): the examples disagree on the type of "
                              f"{what}: {exc}") from None
    return _settle(result)


def _settle(t: Type) -> Type:
    """Element types no example showed (only empty lists) default to Tensor."""
    if isinstance(t, AnyType):
        return TENSOR
    if isinstance(t, TupleType):
        return TupleType(tuple(_settle(e) for e in t.elements))
    if isinstance(t, ListType):
        return ListType(_settle(t.element))
    if isinstance(t, DictType):
        return DictType(_settle(t.key), _settle(t.value))
    if isinstance(t, OptionalType):
        return OptionalType(_settle(t.element))
    return t


# -- source text ----------------------------------------------------------------------------------
def annotation_text(t: Type) -> str:
    """The Python annotation for ``t`` (``Tuple[Tensor, Tensor]``, ``Optional[int]``)."""
    if isinstance(t, TensorType):
        return "Tensor"
    if t == NONE:
        return "None"
    if isinstance(t, TupleType):
        return f"Tuple[{', '.join(annotation_text(e) for e in t.elements) or '()'}]"
    if isinstance(t, ListType):
        return f"List[{annotation_text(t.element)}]"
    if isinstance(t, DictType):
        return f"Dict[{annotation_text(t.key)}, {annotation_text(t.value)}]"
    if isinstance(t, OptionalType):
        return f"Optional[{annotation_text(t.element)}]"
    return str(t)


def infer_annotations(fn: Callable[..., Any], examples: Sequence[Any]) -> str:
    """The signature of ``fn`` with the types the examples show, as source text to paste in,
    e.g. ``def f(x: Tensor, h: Tuple[Tensor, Tensor], n: int) -> Tensor:``. Existing annotations
    are kept as written."""
    inferred = infer_signature(fn, examples)
    sig = inspect.signature(fn)
    written = _written_annotations(fn)
    parts = [_parameter_text(p, inferred, written) for p in sig.parameters.values()]
    ret = _annotation_for("return", inferred, written)
    arrow = f" -> {ret}" if ret else ""
    name = getattr(fn, "__name__", "f")
    return f"def {name}({', '.join(parts)}){arrow}:"


def _written_annotations(fn: Callable[..., Any]) -> dict[str, str]:
    """The annotations as the source spells them (``Tensor``, not ``script.Tensor``)."""
    import ast

    try:
        tree, _ = load_source(fn)
    except ScriptError:
        return {}
    args = tree.args.posonlyargs + tree.args.args
    found = {a.arg: ast.unparse(a.annotation) for a in args if a.annotation is not None}
    if tree.returns is not None:
        found["return"] = ast.unparse(tree.returns)
    return found


def _parameter_text(p: inspect.Parameter, inferred: InferredSignature,
                    written: dict[str, str]) -> str:
    text = p.name
    annotation = _annotation_for(p.name, inferred, written)
    if annotation:
        text += f": {annotation}"
    if p.default is not inspect.Parameter.empty:
        text += f" = {p.default!r}" if annotation else f"={p.default!r}"
    return text


def _annotation_for(name: str, inferred: InferredSignature, written: dict[str, str]) -> str:
    if name in inferred.types:
        return annotation_text(inferred.types[name])
    if name in inferred.objects:
        return inferred.objects[name].__qualname__
    return written.get(name, "")
