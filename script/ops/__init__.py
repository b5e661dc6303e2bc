"""The language's op library, ``script.ops``: one eager function per ``tensor::`` op.

Every function takes its op's schema arguments in schema order, with the same names and defaults,
so scripted code, ``python_fn`` and generated code all call ``ops.NAME(a, b, ...)``. Functions run
on numpy arrays, on CuPy arrays (the result stays on the GPU) and, where the schema says
``operand``, on Python numbers (the result is then a Python number). Dtypes follow NumPy 2 with
weak Python scalars, and equal what the op registry infers.

Aliases: ``ops.mm`` is ``ops.matmul``. Helpers: ``ops.array_module(*xs)`` and
``ops.manual_seed(seed)`` (reproducible ``dropout``).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from script.ops._impl_autodiff import (  # noqa: F401  (gradient ops)
    broadcast_to,
    det_backward,
    dropout_mask,
    empty,
    select_backward,
    slice_backward,
    sum_to,
    write_slot,
)
from script.ops._impl_base import array_module, as_ufunc_float, manual_seed, python_result
from script.ops._impl_index_put import (  # noqa: F401  (writes into a region)
    index_pairs_add,
    index_pairs_last,
    index_pairs_put,
    index_pairs_put_,
    select_put,
    select_put_,
    slice_put,
    slice_put_,
    take_add,
    take_last,
    take_put,
    take_put_,
    write_into,
)
from script.ops._impl_indexing import (  # noqa: F401  (integer-array indexing)
    index_pairs,
    index_pairs_backward,
    take,
    take_backward,
)
from script.ops._impl_layout import (  # noqa: F401  (contiguous, copy: inserted by passes)
    contiguous,
    copy,
    detach,
)
from script.ops._impl_nn import (
    all,
    amax,
    amin,
    any,
    det,
    dropout,
    einsum,
    inv,
    layer_norm,
    layer_norm_backward,  # noqa: F401  (a gradient op)
    linear,
    log_softmax,
    matmul,
    matmul_sum,  # noqa: F401  (inserted by passes)
    mean,
    mm,
    prod,
    slogdet,
    softmax,
    solve,
    std,
    sum,
    tensordot,
    var,
)
from script.ops._impl_numpy import (  # noqa: F401  (numpy functions)
    argmax,
    argmin,
    argsort,
    array,
    column_stack,
    cumsum,
    dot,
    dstack,
    empty_like,
    flatten,
    flip,
    hstack,
    moveaxis,
    numel,
    ravel,
    repeat,
    round,
    sort,
    swapaxes,
    tile,
    vstack,
)
from script.ops._impl_shape import (
    arange,
    cat,
    chunk,
    dtype,
    expand_dims,
    full,
    full_like,
    ndim,
    ones,
    ones_like,
    reshape,
    select,
    shape,
    size,
    slice,
    split,
    split_list,
    squeeze,
    stack,
    transpose,
    unbind,
    zeros,
    zeros_like,
)

# -- binary arithmetic ------------------------------------------------------------------------
# On two Python numbers these are Python's arithmetic (True + True is 2), as the IR types them.


def _numbers(a: Any, b: Any) -> bool:
    return type(a) in (int, float, bool) and type(b) in (int, float, bool)


def _arith(a: Any, b: Any, python_op: Any, ufunc: str) -> Any:
    if _numbers(a, b):
        return python_op(a, b)
    return getattr(array_module(a, b), ufunc)(a, b)


def _extremum(a: Any, b: Any, ufunc: str) -> Any:
    result = getattr(array_module(a, b), ufunc)(a, b)
    if not _numbers(a, b):
        return result
    if type(a) is bool and type(b) is bool:
        return bool(result)  # as numpy: the larger of two bools is a bool
    return float(result) if float in (type(a), type(b)) else int(result)


def add(a: Any, b: Any) -> Any:
    """a + b, broadcasting."""
    return _arith(a, b, operator.add, "add")


def sub(a: Any, b: Any) -> Any:
    """a - b, broadcasting."""
    return _arith(a, b, operator.sub, "subtract")


def mul(a: Any, b: Any) -> Any:
    """a * b, broadcasting."""
    return _arith(a, b, operator.mul, "multiply")


def div(a: Any, b: Any) -> Any:
    """True division a / b (integers give float64)."""
    return _arith(a, b, operator.truediv, "true_divide")


def floordiv(a: Any, b: Any) -> Any:
    """Floor division a // b."""
    return _arith(a, b, operator.floordiv, "floor_divide")


def mod(a: Any, b: Any) -> Any:
    """Remainder with the sign of b, as Python's %."""
    return _arith(a, b, operator.mod, "mod")


def pow(a: Any, b: Any) -> Any:  # noqa: A001  (the op's name)
    """a ** b."""
    return _arith(a, b, operator.pow, "power")


def minimum(a: Any, b: Any) -> Any:
    """Elementwise minimum (nan propagates)."""
    return _extremum(a, b, "minimum")


def maximum(a: Any, b: Any) -> Any:
    """Elementwise maximum (nan propagates)."""
    return _extremum(a, b, "maximum")


# -- comparisons and logic --------------------------------------------------------------------


def eq(a: Any, b: Any) -> Any:
    """a == b elementwise, bool result."""
    return python_result(array_module(a, b).equal(a, b), a, b)


def ne(a: Any, b: Any) -> Any:
    """a != b elementwise, bool result."""
    return python_result(array_module(a, b).not_equal(a, b), a, b)


def lt(a: Any, b: Any) -> Any:
    """a < b elementwise, bool result."""
    return python_result(array_module(a, b).less(a, b), a, b)


def le(a: Any, b: Any) -> Any:
    """a <= b elementwise, bool result."""
    return python_result(array_module(a, b).less_equal(a, b), a, b)


def gt(a: Any, b: Any) -> Any:
    """a > b elementwise, bool result."""
    return python_result(array_module(a, b).greater(a, b), a, b)


def ge(a: Any, b: Any) -> Any:
    """a >= b elementwise, bool result."""
    return python_result(array_module(a, b).greater_equal(a, b), a, b)


def logical_and(a: Any, b: Any) -> Any:
    """Elementwise and."""
    return python_result(array_module(a, b).logical_and(a, b), a, b)


def logical_or(a: Any, b: Any) -> Any:
    """Elementwise or."""
    return python_result(array_module(a, b).logical_or(a, b), a, b)


def logical_not(a: Any) -> Any:
    """Elementwise not."""
    return python_result(array_module(a).logical_not(a), a)


# -- unary keeping the dtype ----------------------------------------------------------------------


def _is_bool(a: Any) -> bool:
    return isinstance(a, bool) or getattr(getattr(a, "dtype", None), "kind", "") == "b"


def neg(a: Any) -> Any:
    """-a."""
    return python_result(array_module(a).negative(a), a)


def abs(a: Any) -> Any:  # noqa: A001  (the op's name)
    """|a|."""
    return python_result(array_module(a).abs(a), a)


def _fresh(a: Any) -> Any:
    """A new array holding an array's values; a number as it is."""
    return a.copy() if hasattr(a, "copy") else a


def sign(a: Any) -> Any:
    """Sign of a (-1, 0 or 1; a bool is its own sign, a new array of it)."""
    if _is_bool(a):
        return _fresh(a)
    return python_result(array_module(a).sign(a), a)


def relu(a: Any) -> Any:
    """max(a, 0), keeping a's dtype (nan stays nan; a bool array's is a new array of it)."""
    if _is_bool(a):
        return _fresh(a)
    return python_result(array_module(a).maximum(a, 0), a)


def square(a: Any) -> Any:
    """a * a, keeping a's dtype (bools included)."""
    return python_result(array_module(a).multiply(a, a), a)


# -- unary math in floating point ---------------------------------------------------------------


def _unary(a: Any, name: str) -> Any:
    xp = array_module(a)
    return python_result(getattr(xp, name)(as_ufunc_float(a)), a)


def exp(a: Any) -> Any:
    """e ** a."""
    return _unary(a, "exp")


def log(a: Any) -> Any:
    """Natural logarithm."""
    return _unary(a, "log")


def log1p(a: Any) -> Any:
    """log(1 + a), accurate for small a."""
    return _unary(a, "log1p")


def expm1(a: Any) -> Any:
    """exp(a) - 1, accurate for small a."""
    return _unary(a, "expm1")


def sqrt(a: Any) -> Any:
    """Square root."""
    return _unary(a, "sqrt")


def rsqrt(a: Any) -> Any:
    """1 / sqrt(a)."""
    x = as_ufunc_float(a)
    return python_result(1 / array_module(a).sqrt(x), a)


def tanh(a: Any) -> Any:
    """Hyperbolic tangent."""
    return _unary(a, "tanh")


def sin(a: Any) -> Any:
    """Sine."""
    return _unary(a, "sin")


def cos(a: Any) -> Any:
    """Cosine."""
    return _unary(a, "cos")


def exp2(a: Any) -> Any:
    """2 ** a."""
    return _unary(a, "exp2")


def log2(a: Any) -> Any:
    """Base-2 logarithm."""
    return _unary(a, "log2")


def log10(a: Any) -> Any:
    """Base-10 logarithm."""
    return _unary(a, "log10")


def tan(a: Any) -> Any:
    """Tangent."""
    return _unary(a, "tan")


def arcsin(a: Any) -> Any:
    """Inverse sine."""
    return _unary(a, "arcsin")


def arccos(a: Any) -> Any:
    """Inverse cosine."""
    return _unary(a, "arccos")


def arctan(a: Any) -> Any:
    """Inverse tangent."""
    return _unary(a, "arctan")


def sinh(a: Any) -> Any:
    """Hyperbolic sine."""
    return _unary(a, "sinh")


def cosh(a: Any) -> Any:
    """Hyperbolic cosine."""
    return _unary(a, "cosh")


def arcsinh(a: Any) -> Any:
    """Inverse hyperbolic sine."""
    return _unary(a, "arcsinh")


def arccosh(a: Any) -> Any:
    """Inverse hyperbolic cosine."""
    return _unary(a, "arccosh")


def arctanh(a: Any) -> Any:
    """Inverse hyperbolic tangent."""
    return _unary(a, "arctanh")


def reciprocal(a: Any) -> Any:
    """1 / a (integers give float64)."""
    return _unary(a, "reciprocal")


def floor(a: Any) -> Any:
    """Round down (integers give float64)."""
    return _unary(a, "floor")


def ceil(a: Any) -> Any:
    """Round up (integers give float64)."""
    return _unary(a, "ceil")


def sigmoid(a: Any) -> Any:
    """1 / (1 + exp(-a)), without overflow: exp only ever sees -|a|."""
    xp = array_module(a)
    x = as_ufunc_float(a)
    e = xp.exp(-xp.abs(x))
    return python_result(xp.where(x >= 0, 1, e) / (1 + e), a)


def softplus(a: Any) -> Any:
    """log(1 + exp(a)), without overflow: max(a, 0) + log1p(exp(-|a|))."""
    xp = array_module(a)
    x = as_ufunc_float(a)
    return python_result(xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x))), a)


_erf_numpy = np.frompyfunc(math.erf, 1, 1)


def erf(a: Any) -> Any:
    """The error function, correctly rounded in float64 (``math.erf`` per element on numpy,
    ``cupyx.scipy.special.erf`` on CuPy)."""
    xp = array_module(a)
    x = as_ufunc_float(a)
    if isinstance(x, float):
        return math.erf(x)
    if xp is not np:
        from cupyx.scipy.special import erf as cupy_erf
        return cupy_erf(x)
    result = np.asarray(_erf_numpy(x), dtype=x.dtype)
    return result if result.ndim else result[()]


def gelu(a: Any) -> Any:
    """a * Phi(a) = a / 2 * (1 + erf(a / sqrt(2))), the exact form."""
    x = as_ufunc_float(a)
    return python_result(0.5 * x * (1 + erf(x * (1 / math.sqrt(2)))), a)


# -- ternary and casts --------------------------------------------------------------------------


def clip(a: Any, lo: Any, hi: Any) -> Any:
    """min(max(a, lo), hi); None leaves a side open (both: a new array of a, as numpy's)."""
    if lo is None and hi is None:
        return _fresh(a)
    return python_result(array_module(a, lo, hi).clip(a, lo, hi), a, lo, hi)


def where(cond: Any, a: Any, b: Any) -> Any:
    """a where cond else b."""
    return python_result(array_module(cond, a, b).where(cond, a, b), cond, a, b)


def astype(a: Any, dtype: Any) -> Any:
    """Cast to a dtype given by name (``"float32"``) or numpy type (``np.float32``)."""
    if type(a) in (int, float, bool):  # a Python number (a numpy scalar keeps numpy's type)
        return np.asarray(a).astype(dtype).item()
    return a.astype(dtype)


__all__ = [
    "abs", "add", "all", "amax", "amin", "any", "arange", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctanh", "array_module", "astype", "cat", "ceil", "chunk", "clip", "cos", "cosh",
    "det", "detach", "div", "dropout", "dtype", "einsum", "eq", "erf", "exp", "exp2", "expand_dims",
    "expm1", "floor", "floordiv", "full", "full_like", "ge", "gelu", "gt", "inv", "layer_norm",
    "le", "linear", "log", "log10", "log1p", "log2", "log_softmax", "logical_and", "logical_not",
    "logical_or", "lt", "manual_seed", "matmul", "maximum", "mean", "minimum", "mm", "mod", "mul",
    "ndim", "ne", "neg", "ones", "ones_like", "pow", "prod", "reciprocal", "relu", "reshape",
    "rsqrt", "select", "shape", "sigmoid", "sign", "sin", "sinh", "size", "slice", "slogdet",
    "softmax", "softplus", "solve", "split", "split_list", "sqrt", "square", "squeeze", "stack",
    "std", "sub", "sum", "tan", "tanh", "tensordot", "transpose", "unbind", "var", "where",
    "zeros", "zeros_like",
]
