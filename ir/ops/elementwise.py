"""Elementwise ops: arithmetic, comparisons, math functions, casts and ``where``.

Every op here broadcasts its tensor operands (numpy rules) and also works on Python scalars, as
numpy's ufuncs do. Each has an eager function of the same name in ``script.ops``.
"""

from __future__ import annotations

from ir.core import Node
from ir.ops.rules import (
    broadcast_rule,
    compare_rule,
    float_result_dtype,
    same_as_input_rule,
    unary_float_rule,
)
from ir.registry import (
    ARRAY_RESULT,
    COMMUTATIVE,
    ELEMENTWISE,
    NOT_CONSTANT,
    PURE,
    ZERO_DERIVATIVE,
    ShapeError,
    const,
    defop,
)
from ir.types import BOOL, DTYPE_NAMES, FLOAT, INT, TensorType, Type

EW = (PURE, ELEMENTWISE)
EW_ZERO = EW + (ZERO_DERIVATIVE,)
"""elementwise ops whose result is constant almost everywhere (or bool): no derivative."""
EW_OR_INPUT = EW
"""elementwise with a case with nothing to compute (a bool's sign or relu, a clip without
bounds): the result is still a new array, as numpy's ``np.clip(x, None, None)`` is, so that a
write into it never reaches the input."""


def _binary(node: Node) -> list[Type]:
    return broadcast_rule(node, count=2)


def _extremum(node: Node) -> list[Type]:
    """minimum / maximum: as arithmetic, except that two bools give a bool (numpy's
    ``np.maximum(True, False)`` is ``True``, where ``True + False`` is the int 1)."""
    types = [v.type for v in node.inputs[:2]]
    return broadcast_rule(node, count=2, scalar=BOOL if types == [BOOL, BOOL] else None)


def _true_divide(node: Node) -> list[Type]:
    types = [v.type for v in node.inputs[:2]]
    if not any(isinstance(t, TensorType) for t in types):
        return [FLOAT]
    (out,) = broadcast_rule(node, count=2)
    assert isinstance(out, TensorType)
    return [out.with_dtype(float_result_dtype(types))]


def _logical(node: Node) -> list[Type]:
    return broadcast_rule(node, dtype="bool", scalar=BOOL)


def _where(node: Node) -> list[Type]:
    cond, a, b = (v.type for v in node.inputs)
    types = [a, b]
    tensors = [t for t in (cond, a, b) if isinstance(t, TensorType)]
    if not tensors:
        return [FLOAT if FLOAT in types else INT]
    from ir.ops.rules import broadcast_shapes, common_device, result_dtype
    shape = broadcast_shapes([t.shape for t in tensors])
    dtype = result_dtype(types) if any(isinstance(t, TensorType) for t in types) else (
        "float64" if FLOAT in types else "int64")
    return [TensorType(dtype, shape, common_device(node))]


def _clip(node: Node) -> list[Type]:
    return broadcast_rule(node)


CASTING_ATTR = "casting"
"""``tensor::astype[casting="same_kind"]``: the cast of an in-place update (``x += v``), which
numpy refuses where it would change the kind (a float result into an int array). The type rule
does not refuse it (the update may sit in a branch that never runs, ``if x.dtype == ...``);
``canonicalize`` puts a ``raise`` before it once both dtypes are known, as numpy raises when
the update runs."""


def _astype(node: Node) -> list[Type]:
    t = node.inputs[0].type
    dtype = const(node, 1)
    of = node.inputs[1].node
    if dtype is NOT_CONSTANT and of.kind == "tensor::dtype" and \
            isinstance(of.inputs[0].type, TensorType) and of.inputs[0].type.dtype is not None:
        dtype = of.inputs[0].type.dtype  # `x.astype(y.dtype)` for a y of known dtype
    if dtype is NOT_CONSTANT and isinstance(t, TensorType):
        return [t.with_dtype(None)]  # `x.astype(y.dtype)`: known once specialized
    if dtype is NOT_CONSTANT:
        raise ShapeError("astype needs a constant dtype")
    if dtype not in DTYPE_NAMES:
        raise ShapeError(f"astype: unknown dtype {dtype!r}")
    if not isinstance(t, TensorType):
        return [FLOAT if dtype.startswith("float") else BOOL if dtype == "bool" else INT]
    return [t.with_dtype(dtype)]


# -- binary arithmetic ------------------------------------------------------------------------
defop("tensor::add(a: operand, b: operand) -> operand", _binary, EW + (COMMUTATIVE,),
      ("+", "np.add"), "a + b, broadcasting")
defop("tensor::sub(a: operand, b: operand) -> operand", _binary, EW, ("-", "np.subtract"),
      "a - b, broadcasting")
defop("tensor::mul(a: operand, b: operand) -> operand", _binary, EW + (COMMUTATIVE,),
      ("*", "np.multiply"), "a * b, broadcasting")
defop("tensor::div(a: operand, b: operand) -> operand", _true_divide, EW,
      ("/", "np.divide", "np.true_divide"), "true division a / b (integers give float64)")
AUGMENTED = {"tensor::add": "+=", "tensor::sub": "-=", "tensor::mul": "*=", "tensor::div": "/="}
"""arithmetic with an augmented assignment (numpy's ``a += b`` stores ``a + b`` into ``a``)."""
IN_PLACE_ATTR = "in_place"
"""set (True) on an ``AUGMENTED`` node whose result is its first operand's array, updated in
place: the inplace-writes pass marks it when nothing reads that operand's old value afterwards
and the result has its type (no broadcast of it, no cast). A native loop computes it as the
plain op into its own buffer; Python code writes ``a += b``."""
defop("tensor::floordiv(a: operand, b: operand) -> operand", _binary, EW_ZERO,
      ("//", "np.floor_divide"), "floor division a // b")
defop("tensor::mod(a: operand, b: operand) -> operand", _binary, EW,
      ("%", "np.mod", "np.remainder"), "remainder with the sign of b, as Python's %")
defop("tensor::pow(a: operand, b: operand) -> operand", _binary, EW, ("**", "np.power"),
      "a ** b")
# not commutative: at a tie the operands differ in the gradient they get, and numpy returns the
# second of 0.0 and -0.0, so maximum(a, b) and maximum(b, a) are different computations
defop("tensor::minimum(a: operand, b: operand) -> operand", _extremum, EW,
      ("np.minimum",), "elementwise minimum (nan propagates); at a tie the gradient goes to a")
defop("tensor::maximum(a: operand, b: operand) -> operand", _extremum, EW,
      ("np.maximum",), "elementwise maximum (nan propagates); at a tie the gradient goes to a")

# -- comparisons and logic --------------------------------------------------------------------
for _name, _op, _np in (("eq", "==", "equal"), ("ne", "!=", "not_equal"), ("lt", "<", "less"),
                        ("le", "<=", "less_equal"), ("gt", ">", "greater"),
                        ("ge", ">=", "greater_equal")):
    defop(f"tensor::{_name}(a: operand, b: operand) -> operand", compare_rule,
          EW_ZERO + ((COMMUTATIVE,) if _name in ("eq", "ne") else ()), (_op, f"np.{_np}"),
          f"a {_op} b elementwise, bool result")
defop("tensor::logical_and(a: operand, b: operand) -> operand", _logical,
      EW_ZERO + (COMMUTATIVE,),
      ("np.logical_and",), "elementwise and")
defop("tensor::logical_or(a: operand, b: operand) -> operand", _logical,
      EW_ZERO + (COMMUTATIVE,),
      ("np.logical_or",), "elementwise or")
defop("tensor::logical_not(a: operand) -> operand", _logical, EW_ZERO, ("np.logical_not",),
      "elementwise not")

# -- unary ------------------------------------------------------------------------------------
defop("tensor::neg(a: operand) -> operand", same_as_input_rule, EW, ("-x", "np.negative"),
      "-a")
defop("tensor::abs(a: operand) -> operand", same_as_input_rule, EW, ("np.abs", "np.absolute",
                                                                    "abs"),
      "|a| (gradient 0 at 0)")
defop("tensor::sign(a: operand) -> operand", same_as_input_rule, EW_OR_INPUT + (ZERO_DERIVATIVE,),
      ("np.sign",), "sign of a")
defop("tensor::relu(a: operand) -> operand", same_as_input_rule, EW_OR_INPUT, (),
      "max(a, 0) (gradient 0 at 0)")
defop("tensor::square(a: operand) -> operand", same_as_input_rule, EW, ("np.square",), "a * a")
for _name, _np, _doc in (
        ("exp", "np.exp", "e ** a"), ("log", "np.log", "natural logarithm"),
        ("log1p", "np.log1p", "log(1 + a)"), ("expm1", "np.expm1", "exp(a) - 1"),
        ("sqrt", "np.sqrt", "square root"), ("rsqrt", "", "1 / sqrt(a)"),
        ("tanh", "np.tanh", "hyperbolic tangent"), ("sigmoid", "", "1 / (1 + exp(-a))"),
        ("sin", "np.sin", "sine"), ("cos", "np.cos", "cosine"),
        ("reciprocal", "np.reciprocal", "1 / a"), ("floor", "np.floor", "round down"),
        ("ceil", "np.ceil", "round up"), ("erf", "", "the error function"),
        ("softplus", "", "log(1 + exp(a)), overflow-safe"),
        ("exp2", "np.exp2", "2 ** a"), ("log2", "np.log2", "base-2 logarithm"),
        ("log10", "np.log10", "base-10 logarithm"), ("tan", "np.tan", "tangent"),
        ("arcsin", "np.arcsin", "inverse sine"), ("arccos", "np.arccos", "inverse cosine"),
        ("arctan", "np.arctan", "inverse tangent"), ("sinh", "np.sinh", "hyperbolic sine"),
        ("cosh", "np.cosh", "hyperbolic cosine"),
        ("arcsinh", "np.arcsinh", "inverse hyperbolic sine"),
        ("arccosh", "np.arccosh", "inverse hyperbolic cosine"),
        ("arctanh", "np.arctanh", "inverse hyperbolic tangent")):
    defop(f"tensor::{_name}(a: operand) -> operand", unary_float_rule,
          EW_ZERO if _name in ("floor", "ceil") else EW,
          (_np,) if _np else (), _doc)

# -- ternary and casts --------------------------------------------------------------------------
defop("tensor::clip(a: operand, lo: operand?, hi: operand?) -> operand", _clip, EW_OR_INPUT,
      ("np.clip", ".clip"),
      "min(max(a, lo), hi); None leaves a side open; at a bound the gradient goes to a")
UFUNC_ATTR = "ufunc"
"""``tensor::where[ufunc=True]``: the where a ufunc's composite ends with (``np.logaddexp``),
whose 0-d result is a numpy scalar as the ufunc's is (not an array as ``np.where``'s:
``ARRAY_RESULT``)."""

defop("tensor::where(cond: operand, a: operand, b: operand) -> operand", _where,
      EW + (ARRAY_RESULT,), ("np.where",), "a where cond else b")
defop("tensor::astype(a: operand, dtype: str) -> operand", _astype, EW, (".astype",),
      "cast to a dtype given by name or numpy type")
