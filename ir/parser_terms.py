"""Terms of the IR text: types, attribute literals and arrays, as the parser builds them.

Split from ``ir.parser``: these callbacks turn the tokens of a type or an attribute value into a
``Term`` (a value or a type with its source token) and check it, raising ``_Fail`` with the
offending token; the parser turns that into a ``ParseError``.
"""

from __future__ import annotations

import re
from math import prod
from typing import Any

import numpy as np
from lark import Token

from ir.types import (
    DTYPE_NAMES,
    DTYPE_OF_NAME,
    SCALARS,
    TENSOR,
    AnyType,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
)

CONSTANT_TABLE: dict[str, dict[str, np.ndarray] | None] = {}
"""The named-array table of the parse in progress (parses are serialized by the parser's lock)."""


class _Fail(Exception):
    """A problem found while building; becomes a ParseError with the source line quoted."""

    def __init__(self, message: str, tok: Token | None):
        super().__init__(message)
        self.message = message
        self.line = getattr(tok, "line", None) or 1
        self.column = getattr(tok, "column", None) or 1
        self.token = str(tok) if tok is not None else ""


# -- terms: types and attribute values ----------------------------------------------------------
_NO: Any = object()
"""Marks a term that has no meaning as a value (or as a type)."""


class Term:
    """A parsed ``term``, read both ways at once: as a type and as an attribute value.

    Both readings are computed bottom-up as lark reduces the rules, so nesting depth costs no
    recursion. Where a reading is impossible, the reason and its token are kept instead.
    """

    __slots__ = ("tok", "kind", "ty", "ty_err", "val", "val_err", "inner")

    def __init__(self, tok: Token, kind: str, ty: Type | None = None, ty_err: Any = None,
                 val: Any = _NO, val_err: Any = None):
        self.tok = tok
        """the first token (for error positions)."""
        self.kind = kind
        """the syntactic form: name, call, paren, list, int, float, str, star, ellipsis, keyword."""
        self.ty = ty
        self.ty_err = ty_err if ty is None else None
        """(message, token) saying why this is not a type."""
        self.val = val
        self.val_err = val_err if val is _NO else None
        """(message, token) saying why this is not a value."""
        self.inner: Term | None = None
        """for ``name=term`` inside a call: the term."""


def term_type(term: Term) -> Type:
    """The type a term spells; a ParseError naming the bad part otherwise."""
    if term.ty is None:
        message, tok = term.ty_err or ("expected a type", term.tok)
        raise _Fail(f"bad type: {message}", tok)
    return term.ty


def term_value(term: Term) -> Any:
    """An attribute value: a literal, or a type (``type=Tensor[]``)."""
    if term.val is not _NO:
        return term.val
    if term.ty is not None:
        return term.ty
    message, tok = term.val_err or ("expected a value", term.tok)
    raise _Fail(f"bad attribute value: {message}", tok)


def _first_type_error(terms: list[Term]) -> Any:
    return next((t.ty_err or ("expected a type", t.tok) for t in terms if t.ty is None), None)


def _first_value_error(terms: list[Term]) -> Any:
    return next((t.val_err or ("expected a value", t.tok) for t in terms if t.val is _NO), None)


_LITERAL_NAMES = {"True": True, "False": False, "None": None}
_ESCAPE = re.compile(r'\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[nrt"\\]|.)')
_SIMPLE = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def _named_type(name: str) -> Type | None:
    if name == "Tensor":
        return TENSOR
    if name in DTYPE_OF_NAME:
        return TensorType(DTYPE_OF_NAME[name])
    if name in SCALARS:
        return SCALARS[name]
    if name == "Any":
        return AnyType()
    if name.startswith("__class__.") and len(name) > len("__class__."):
        return ClassType(name[len("__class__."):])
    return None


def _unescape(tok: Token) -> str:
    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        if code in _SIMPLE:
            return _SIMPLE[code]
        if code[0] in "xuU" and len(code) > 1:
            return chr(int(code[1:], 16))
        raise _Fail(f"bad escape '\\{code}' in string", tok)
    try:
        return _ESCAPE.sub(one, tok[1:-1])
    except ValueError:  # a code point beyond U+10FFFF
        raise _Fail("bad escape in string", tok) from None


class _TermBuilder:
    """lark callbacks for the term rules."""

    def targs(self, children: list[Any]) -> list[Term]:
        return [c for c in children if c is not None]

    def t_name(self, children: list[Token]) -> Term:
        tok = children[0]
        name = str(tok)
        val = _LITERAL_NAMES.get(name, _NO)
        return Term(tok, "name", _named_type(name), (f"unknown type '{name}'", tok), val,
                    (f"unknown name '{name}' (strings are written in double quotes)", tok))

    def t_int(self, children: list[Token]) -> Term:
        tok = children[0]
        if len(tok) > 4000:  # beyond what int() converts
            raise _Fail("integer literal too long", tok)
        return Term(tok, "int", None, (f"expected a type, found the number {tok}", tok), int(tok))

    def t_float(self, children: list[Token]) -> Term:
        tok = children[0]
        return Term(tok, "float", None, (f"expected a type, found the number {tok}", tok),
                    float(tok))

    def t_string(self, children: list[Token]) -> Term:
        tok = children[0]
        return Term(tok, "str", None, ("expected a type, found a string", tok), _unescape(tok))

    def t_star(self, children: list[Token]) -> Term:
        tok = children[0]
        return Term(tok, "star", None, ("'*' is only a tensor dimension", tok), _NO,
                    ("'*' is only a tensor dimension", tok))

    def t_ellipsis(self, children: list[Token]) -> Term:
        tok = children[0]
        why = ("'...' only stands for the elements of a large array", tok)
        return Term(tok, "ellipsis", None, why, _NO, why)

    def t_keyword(self, children: list[Any]) -> Term:
        tok, inner = children
        why = (f"unexpected keyword '{tok}='", tok)
        term = Term(tok, "keyword", None, why, _NO, why)
        term.inner = inner
        return term

    def t_list_of(self, children: list[Term]) -> Term:
        inner = children[0]
        ty = ListType(inner.ty) if inner.ty is not None else None
        return Term(inner.tok, "postfix", ty, inner.ty_err, _NO,
                    ("'[]' only follows a type", inner.tok))

    def t_optional(self, children: list[Term]) -> Term:
        inner = children[0]
        ty = OptionalType(inner.ty) if inner.ty is not None else None
        return Term(inner.tok, "postfix", ty, inner.ty_err, _NO,
                    ("'?' only follows a type", inner.tok))

    def t_empty_paren(self, children: list[Any]) -> Term:
        tok = children[0]
        return Term(tok, "paren", TupleType(()), None, ())

    def t_group(self, children: list[Term]) -> Term:
        inner = children[0]
        ty = TupleType((inner.ty,)) if inner.ty is not None else None  # TorchScript's (T)
        return Term(inner.tok, "paren", ty, inner.ty_err, _NO,
                    ("a 1-tuple is written with a trailing comma: (x,)", inner.tok))

    def t_tuple(self, children: list[Any]) -> Term:
        items = [c for c in children if c is not None]
        ty_err = _first_type_error(items)
        val_err = _first_value_error(items)
        ty = TupleType(tuple(t.ty for t in items)) if ty_err is None else None
        val = tuple(t.val for t in items) if val_err is None else _NO
        return Term(items[0].tok, "paren", ty, ty_err, val, val_err)

    def t_list_literal(self, children: list[Any]) -> Term:
        items = [c for c in children[1:-1] if c is not None]
        items = items[0] if items else []
        tok = children[0]
        val_err = _first_value_error(items)
        val = [t.val for t in items] if val_err is None else _NO
        return Term(tok, "list", None, ("a list literal is not a type (write T[])", tok), val,
                    val_err)

    def t_call(self, children: list[Any]) -> Term:
        tok, args = children[0], children[1] or []
        name = str(tok)
        if name == "array":
            why = ("an array is a value, not a type", tok)
            return Term(tok, "call", None, why, _array(tok, args))
        if name == "Dict":
            ty = _dict_type(tok, args)
        elif name == "Tensor" or name in DTYPE_OF_NAME:
            ty = _tensor_type(tok, args)
        else:
            ty = (f"unknown type '{name}'", tok)
        if isinstance(ty, tuple):
            return Term(tok, "call", None, ty, _NO, ty)
        return Term(tok, "call", ty, None, _NO, (f"expected a value, found the type {ty}", tok))


def _tensor_type(tok: Token, args: list[Term]) -> Type | tuple[str, Token]:
    """``Float(64, *, device=cpu)``: sizes, ``*`` for unknown sizes, then an optional device."""
    dtype = None if str(tok) == "Tensor" else DTYPE_OF_NAME[str(tok)]
    dims: list[int | None] = []
    device = None
    if args and args[0].kind == "ellipsis":  # Float(..., device=cpu): the rank is unknown
        shape_known, args = False, args[1:]
    else:
        shape_known = True
    for arg in args:
        if device is not None:
            return ("the device comes last in a tensor type", arg.tok)
        if arg.kind == "keyword" and str(arg.tok) == "device" and arg.inner is not None \
                and arg.inner.kind == "name":
            device = str(arg.inner.tok)
        elif arg.kind == "star":
            dims.append(None)
        elif arg.kind == "int" and arg.val >= 0:
            dims.append(arg.val)
        else:
            return (f"a tensor dimension is a size or '*', not {arg.tok}", arg.tok)
    return TensorType(dtype, tuple(dims) if shape_known else None, device)


def _dict_type(tok: Token, args: list[Term]) -> Type | tuple[str, Token]:
    if len(args) != 2:
        return (f"Dict takes a key and a value type, found {len(args)} argument(s)", tok)
    err = _first_type_error(args)
    return err if err is not None else DictType(args[0].ty, args[1].ty)  # type: ignore[arg-type]


def _array(tok: Token, args: list[Term]) -> np.ndarray:
    """``array(Float(2, 2), [1.0, 2.0, 3.0, 4.0])``, or ``array(Float(512, 512), ...)`` (zeros)."""
    if len(args) != 2:
        raise _Fail("an array is written array(Type(sizes), [values]) or array(Type(sizes), ...)",
                    tok)
    ty, items = args
    t = ty.ty
    if not isinstance(t, TensorType) or t.dtype is None or t.shape is None or None in t.shape:
        raise _Fail("an array needs a dtype and a complete shape, e.g. Float(2, 3)", ty.tok)
    if items.kind == "keyword" and str(items.tok) == "ref":
        return _array_ref(t, items)
    if prod(t.shape) > _MAX_ARRAY_ELEMENTS:
        raise _Fail(f"array of type {t} is too large", ty.tok)
    if items.kind == "ellipsis":
        return np.zeros(t.shape, dtype=t.dtype)
    if items.kind != "list" or items.val is _NO:
        raise _Fail("expected the array's elements as [...] or '...'", items.tok)
    values = items.val
    if len(values) != prod(t.shape):
        raise _Fail(f"an array of type {t} has {prod(t.shape)} element(s), found {len(values)}",
                    items.tok)
    if not all(_fits(v, t.dtype) for v in values):
        raise _Fail(f"array elements do not fit dtype {DTYPE_NAMES[t.dtype]}", items.tok)
    try:
        return np.array(values, dtype=t.dtype).reshape(t.shape)
    except (OverflowError, ValueError) as e:
        raise _Fail(f"bad array elements: {e}", items.tok) from None


def _array_ref(t: TensorType, ref: Term) -> np.ndarray:
    """``array(Float(2, 3), ref="c0")``: the array named ``c0`` in the parse's constant table."""
    inner = ref.inner
    if inner is None or inner.kind != "str":
        raise _Fail('an array reference is written ref="name"', ref.tok)
    table = CONSTANT_TABLE.get("current")
    if table is None:
        raise _Fail(f"array reference {inner.val!r} needs a constant table "
                    "(ir.parse(text, constants=...))", inner.tok)
    a = table.get(inner.val)
    if a is None:
        raise _Fail(f"array reference {inner.val!r} is not in the constant table", inner.tok)
    dtype = getattr(getattr(a, "dtype", None), "name", None)
    if dtype != t.dtype or tuple(getattr(a, "shape", ())) != t.shape:
        found = TensorType(dtype, tuple(a.shape)) if dtype in DTYPE_NAMES else type(a).__name__
        raise _Fail(f"array reference {inner.val!r} is written {t} but the table holds {found}",
                    inner.tok)
    return a


_MAX_ARRAY_ELEMENTS = 1 << 28
"""Bigger elided arrays are refused rather than allocated as zeros."""


def _fits(v: Any, dtype: str) -> bool:
    if dtype == "bool":
        return isinstance(v, bool)
    if dtype.startswith("float"):
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, int) and not isinstance(v, bool)
