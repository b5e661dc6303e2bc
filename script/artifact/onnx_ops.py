"""The ONNX spelling of each tensor op: one small rule per ``tensor::`` kind (``TENSOR_RULES``).

A rule takes the ``Lowering`` and the node and returns the output symbol(s). Operands follow
NumPy 2's promotion (Python numbers, known or computed, are weak), so ``h * 0.5`` stays float32
and ``steps - 1 - k`` is int64. Every op whose operands are all known at export time is folded
by the eager op library instead (``fold``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ir.core import Node
from ir.types import ScalarType, TensorType
from script import ops
from script.artifact.onnx_lower import (
    STRUCTURE_RULES,
    WEAK,
    Lowering,
    Outputs,
    Stacked,
    numpy_helper,
    out_dtype,
)

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def syms(low: Lowering, node: Node) -> list[Any]:
    return [low.sym(v, node) for v in node.inputs]


def is_known(sym: Any) -> bool:
    """True when ``sym`` holds no ONNX tensor (a value known at export time)."""
    if isinstance(sym, (str, Stacked)):
        return False
    if isinstance(sym, (tuple, list)):
        return all(map(is_known, sym))
    return True


def folding(rule: Any) -> Any:
    """``rule``, or the eager op library's result when every operand is known."""
    def folded(low: Lowering, node: Node) -> Any:
        operands = syms(low, node)
        if not all(map(is_known, operands)):
            return rule(low, node)
        result = getattr(ops, node.kind.split("::", 1)[1])(*operands)
        return Outputs(result) if isinstance(result, tuple) and len(node.outputs) > 1 else result
    return folded


def promoted(low: Lowering, node: Node, operands: list[Any]) -> np.dtype:
    """NumPy's result dtype of the operands (run-time Python numbers count as weak)."""
    parts = []
    for value, sym in zip(node.inputs, operands):
        if sym is None:
            continue
        if isinstance(sym, str):
            weak = isinstance(value.type, ScalarType) and value.type in WEAK
            parts.append(WEAK[value.type] if weak else low.x.dtypes[sym])
        else:
            parts.append(sym)
    return np.result_type(*parts)


def static_int(low: Lowering, node: Node, sym: Any, what: str) -> int:
    if isinstance(sym, (int, np.integer)):
        return int(sym)
    raise low.error(node, f"the {what} must be known at export time")


def rank_of(low: Lowering, node: Node, k: int = 0) -> int:
    t = node.inputs[k].type
    if isinstance(t, TensorType) and t.shape is not None:
        return len(t.shape)
    raise low.error(node, "the rank of its operand is not known")


# -- elementwise ---------------------------------------------------------------------------------
def binary(op: str, compare: bool = False, true_divide: bool = False) -> Any:
    def rule(low: Lowering, node: Node) -> Any:
        a, b = syms(low, node)[:2]
        dtype = promoted(low, node, [a, b])
        if true_divide and dtype.kind in "biu":
            dtype = np.dtype(np.float64)
        return low.emit(op, [low.tensor(a, dtype, node), low.tensor(b, dtype, node)],
                        np.bool_ if compare else dtype)
    return rule


def unary(*chain: str) -> Any:
    """An op applied as ONNX ops in a chain (``rsqrt`` is Sqrt then Reciprocal)."""
    def rule(low: Lowering, node: Node) -> Any:
        (a,) = syms(low, node)[:1]
        dtype = out_dtype(node.output, a, low)
        x = low.tensor(a, dtype, node)
        for op in chain:
            x = low.emit(op, [x])
        return x
    return rule


def _with_one(op: str, after: bool) -> Any:
    """log1p (Log of x + 1) and expm1 (Exp of x, less 1)."""
    def rule(low: Lowering, node: Node) -> Any:
        dtype = out_dtype(node.output, low.sym(node.inputs[0], node), low)
        x = low.tensor(low.sym(node.inputs[0], node), dtype, node)
        one = low.const(1, dtype)
        if after:
            return low.emit("Sub", [low.emit(op, [x]), one])
        return low.emit(op, [low.emit("Add", [x, one])])
    return rule


def _square(low: Lowering, node: Node) -> Any:
    x = low.tensor(low.sym(node.inputs[0], node), out_dtype(node.output, None, low), node)
    return low.emit("Mul", [x, x])


def _einsum(low: Lowering, node: Node) -> Any:
    """numpy's subscripts are ONNX's equation (implicit outputs and ``...`` alike)."""
    spec = low.sym(node.inputs[0], node)
    dtype = out_dtype(node.output, None, low)
    xs = [low.tensor(low.sym(v, node), dtype, node) for v in node.inputs[2:]]
    return low.emit("Einsum", xs, equation=str(spec).replace(" ", ""))


def _tensordot(low: Lowering, node: Node) -> Any:
    """``np.tensordot`` as the ``Einsum`` of its subscripts (``tensordot_spec``)."""
    from ir.ops.linalg import tensordot_spec

    dtype = out_dtype(node.output, None, low)
    xs = [low.tensor(low.sym(v, node), dtype, node) for v in node.inputs[:2]]
    spec = tensordot_spec(low.sym(node.inputs[2], node), rank_of(low, node, 0),
                          rank_of(low, node, 1))
    return low.emit("Einsum", xs, equation=spec)


def _gelu(low: Lowering, node: Node) -> Any:
    dtype = out_dtype(node.output, low.sym(node.inputs[0], node), low)
    x = low.tensor(low.sym(node.inputs[0], node), dtype, node)
    phi = low.emit("Erf", [low.emit("Mul", [x, low.const(1 / np.sqrt(2), dtype)])])
    half = low.emit("Mul", [x, low.const(0.5, dtype)])
    return low.emit("Mul", [half, low.emit("Add", [phi, low.const(1, dtype)])])


def _where(low: Lowering, node: Node) -> Any:
    cond, a, b = syms(low, node)
    dtype = promoted(low, node, [None, a, b])
    return low.emit("Where", [low.tensor(cond, np.bool_, node), low.tensor(a, dtype, node),
                              low.tensor(b, dtype, node)], dtype)


def _clip(low: Lowering, node: Node) -> Any:
    a, lo, hi = syms(low, node)
    dtype = promoted(low, node, [a, lo, hi])
    bounds = ["" if s is None else low.tensor(s, dtype, node) for s in (lo, hi)]
    return low.emit("Clip", [low.tensor(a, dtype, node), *bounds], dtype)


def _mod(low: Lowering, node: Node) -> Any:
    a, b = syms(low, node)
    dtype = promoted(low, node, [a, b])
    a, b = low.tensor(a, dtype, node), low.tensor(b, dtype, node)
    if dtype.kind in "iu":
        return low.emit("Mod", [a, b], fmod=0)
    floor = low.emit("Floor", [low.emit("Div", [a, b])])
    return low.emit("Sub", [a, low.emit("Mul", [floor, b])])


def _floordiv(low: Lowering, node: Node) -> Any:
    a, b = syms(low, node)
    dtype = promoted(low, node, [a, b])
    a, b = low.tensor(a, dtype, node), low.tensor(b, dtype, node)
    if dtype.kind in "iu":  # exact: (a - a mod b) / b, with Python's sign of the modulus
        return low.emit("Div", [low.emit("Sub", [a, low.emit("Mod", [a, b], fmod=0)]), b])
    return low.emit("Floor", [low.emit("Div", [a, b])])


def _astype(low: Lowering, node: Node) -> Any:
    a, dtype = syms(low, node)
    return low.tensor(a, np.dtype(dtype), node)


# -- linear algebra and nn -----------------------------------------------------------------------
def _matmul(low: Lowering, node: Node) -> Any:
    a, b = syms(low, node)
    dtype = promoted(low, node, [a, b])
    return low.emit("MatMul", [low.tensor(a, dtype, node), low.tensor(b, dtype, node)])


def _matmul_sum(low: Lowering, node: Node) -> Any:
    operands = syms(low, node)
    dtype = promoted(low, node, operands)
    total = None
    for a, b in zip(operands[::2], operands[1::2]):
        product = low.emit("MatMul", [low.tensor(a, dtype, node), low.tensor(b, dtype, node)])
        total = product if total is None else low.emit("Add", [total, product])
    return total


def _linear(low: Lowering, node: Node) -> Any:
    x, w, b = syms(low, node)
    dtype = promoted(low, node, [x, w, b])
    wt = low.emit("Transpose", [low.tensor(w, dtype, node)], perm=[1, 0])
    y = low.emit("MatMul", [low.tensor(x, dtype, node), wt])
    return y if b is None else low.emit("Add", [y, low.tensor(b, dtype, node)])


def _layer_norm(low: Lowering, node: Node) -> Any:
    a, w, b, eps = syms(low, node)
    dtype = out_dtype(node.output, a, low)
    x = low.tensor(a, dtype, node)
    if w is None:
        last = low.emit("Shape", [x], np.int64, start=-1)
        w = low.emit("ConstantOfShape", [last], dtype, value=_one(dtype, 1))
    inputs = [x, low.tensor(w, dtype, node)] + ([] if b is None else [low.tensor(b, dtype)])
    return low.emit("LayerNormalization", inputs, axis=-1,
                    epsilon=float(static_number(low, node, eps)))


def static_number(low: Lowering, node: Node, sym: Any) -> float:
    if isinstance(sym, (int, float, np.number)):
        return float(sym)
    raise low.error(node, "a parameter that must be known at export time is computed")


def _softmax(op: str) -> Any:
    def rule(low: Lowering, node: Node) -> Any:
        a, axis = syms(low, node)
        x = low.tensor(a, out_dtype(node.output, a, low), node)
        return low.emit(op, [x], axis=static_int(low, node, axis, "axis"))
    return rule


def _one(dtype: Any, value: Any) -> Any:
    return numpy_helper.from_array(np.array([value], dtype=dtype))


# -- reductions ----------------------------------------------------------------------------------
def _axes_input(low: Lowering, node: Node, axis: Any) -> list[str]:
    if axis is None:
        return []
    items = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    return [low.const(np.array([static_int(low, node, i, "axis") for i in items], np.int64),
                      np.int64)]


def reduce(op: str) -> Any:
    def rule(low: Lowering, node: Node) -> Any:
        a, axis, keepdims = syms(low, node)
        x = low.tensor(a, out_dtype(node.output, a, low), node)
        return low.emit(op, [x, *_axes_input(low, node, axis)], keepdims=int(bool(keepdims)))
    return rule


def _variance(root: bool) -> Any:
    def rule(low: Lowering, node: Node) -> Any:
        a, axis, ddof, keepdims = syms(low, node)
        if ddof != 0:
            raise low.error(node, "a variance with ddof other than 0")
        x = low.tensor(a, out_dtype(node.output, a, low), node)
        axes = _axes_input(low, node, axis)
        centred = low.emit("Sub", [x, low.emit("ReduceMean", [x, *axes], keepdims=1)])
        squares = low.emit("Mul", [centred, centred])
        y = low.emit("ReduceMean", [squares, *axes], keepdims=int(bool(keepdims)))
        return low.emit("Sqrt", [y]) if root else y
    return rule


def _arg(op: str) -> Any:
    def rule(low: Lowering, node: Node) -> Any:
        a, axis = syms(low, node)
        x = low.tensor(a, None, node)
        if axis is None:
            x = low.emit("Reshape", [x, low.const(np.array([-1], np.int64), np.int64)])
            axis = 0
        return low.emit(op, [x], np.int64, axis=static_int(low, node, axis, "axis"), keepdims=0)
    return rule


# -- shapes and layout ---------------------------------------------------------------------------
def _reshape(low: Lowering, node: Node) -> Any:
    a, shape = syms(low, node)
    return low.emit("Reshape", [low.tensor(a, None, node), low.int_vector(shape, node)])


def _flatten(low: Lowering, node: Node) -> Any:
    a = low.tensor(low.sym(node.inputs[0], node), None, node)
    return low.emit("Reshape", [a, low.const(np.array([-1], np.int64), np.int64)])


def _transpose(low: Lowering, node: Node) -> Any:
    a, axes = syms(low, node)
    perm = list(axes) if axes is not None else list(reversed(range(rank_of(low, node))))
    return low.emit("Transpose", [low.tensor(a, None, node)],
                    perm=[static_int(low, node, p, "axes") for p in perm])


def _unsqueeze(op: str) -> Any:
    def rule(low: Lowering, node: Node) -> Any:
        a, axis = syms(low, node)
        return low.emit(op, [low.tensor(a, None, node), *_axes_input(low, node, axis)])
    return rule


def _select(low: Lowering, node: Node) -> Any:
    a, axis, index = syms(low, node)
    return low.emit("Gather", [low.tensor(a, None, node), low.tensor(index, np.int64, node)],
                    axis=static_int(low, node, axis, "axis"))


def _take(low: Lowering, node: Node) -> Any:
    a, index, axis = syms(low, node)
    return low.emit("Gather", [low.tensor(a, None, node), low.tensor(index, np.int64, node)],
                    axis=static_int(low, node, axis, "axis"))


def _slice(low: Lowering, node: Node) -> Any:
    a, axis, start, stop, step = syms(low, node)
    step = 1 if step is None else step
    backwards = isinstance(step, (int, np.integer)) and step < 0
    if not isinstance(step, (int, np.integer)):
        raise low.error(node, "a slice step computed at run time")
    start = (INT64_MAX if backwards else 0) if start is None else start
    stop = (INT64_MIN if backwards else INT64_MAX) if stop is None else stop
    parts = [low.int_vector([s], node) for s in (start, stop, axis, step)]
    return low.emit("Slice", [low.tensor(a, None, node), *parts])


def _size(low: Lowering, node: Node) -> Any:
    a, axis = syms(low, node)
    axis = static_int(low, node, axis, "axis")
    if axis < 0:
        axis += rank_of(low, node)
    shape = low.emit("Shape", [low.tensor(a, None, node)], np.int64, start=axis, end=axis + 1)
    return low.emit("Squeeze", [shape])


def _shape(low: Lowering, node: Node) -> Any:
    x = low.tensor(low.sym(node.inputs[0], node), None, node)
    return [low.emit("Squeeze", [low.emit("Shape", [x], np.int64, start=k, end=k + 1)])
            for k in range(rank_of(low, node))]


def _numel(low: Lowering, node: Node) -> Any:
    shape = low.emit("Shape", [low.tensor(low.sym(node.inputs[0], node), None, node)], np.int64)
    return low.emit("ReduceProd", [shape], keepdims=0)


def _split(low: Lowering, node: Node) -> Any:
    a, count, axis = syms(low, node)
    count = static_int(low, node, count, "number of pieces")
    pieces = low.emit("Split", [low.tensor(a, None, node)], outputs=count,
                      axis=static_int(low, node, axis, "axis"), num_outputs=count)
    pieces = pieces if count > 1 else [pieces]
    return Outputs(pieces) if len(node.outputs) == count else tuple(pieces)


def _join(stack: bool) -> Any:
    def rule(low: Lowering, node: Node) -> Any:
        items, axis = syms(low, node)
        axis = static_int(low, node, axis, "axis")
        if isinstance(items, Stacked):
            if not stack:
                raise low.error(node, "concatenating a list grown by a loop")
            if axis == 0:
                return low.emit("Identity", [items.name])
            rank = items.rank
            if rank is None:
                raise low.error(node, "stacking on an inner axis items of unknown rank")
            axis = axis + rank if axis < 0 else axis
            perm = list(range(1, rank))
            perm.insert(axis, 0)
            return low.emit("Transpose", [items.name], perm=perm)
        dtype = np.result_type(*[low.x.dtypes[s] if isinstance(s, str) else s for s in items])
        tensors = [low.tensor(s, dtype, node) for s in items]
        if stack:
            at = low.const(np.array([axis], np.int64), np.int64)
            tensors = [low.emit("Unsqueeze", [t, at]) for t in tensors]
        return low.emit("Concat", tensors, axis=axis)
    return rule


# -- creation ------------------------------------------------------------------------------------
def _filled(value: Any, like: bool) -> Any:
    """zeros/ones/full/empty(shape, ...) and their ``_like`` forms: ConstantOfShape."""
    def rule(low: Lowering, node: Node) -> Any:
        args = syms(low, node)
        dtype = out_dtype(node.output, None, low)
        fill = args[1] if value is None else value
        if like:
            shape = low.emit("Shape", [low.tensor(args[0], None, node)], np.int64)
        else:
            shape = low.int_vector(args[0], node)
        return low.emit("ConstantOfShape", [shape], dtype,
                        value=_one(dtype, static_number(low, node, fill)))
    return rule


def _arange(low: Lowering, node: Node) -> Any:
    start, stop, step, _ = syms(low, node)
    if stop is None:
        start, stop = 0, start
    dtype = out_dtype(node.output, None, low)
    return low.emit("Range", [low.tensor(s, dtype, node) for s in (start, stop, step)], dtype)


def _broadcast(op: str) -> Any:
    def rule(low: Lowering, node: Node) -> Any:
        a, shape = syms(low, node)[:2]
        return low.emit(op, [low.tensor(a, None, node), low.int_vector(shape, node)])
    return rule


def _identity(low: Lowering, node: Node) -> Any:
    return low.emit("Identity", [low.tensor(low.sym(node.inputs[0], node), None, node)])


def _dropout(low: Lowering, node: Node) -> Any:
    a, p, training = syms(low, node)
    if training is not False and p != 0:
        raise low.error(node, "dropout in training mode (export a model in eval mode)")
    return _identity(low, node)


UNARY = {"abs": "Abs", "neg": "Neg", "exp": "Exp", "log": "Log", "tanh": "Tanh",
         "sigmoid": "Sigmoid", "relu": "Relu", "sqrt": "Sqrt", "reciprocal": "Reciprocal",
         "sin": "Sin", "cos": "Cos", "erf": "Erf", "floor": "Floor", "ceil": "Ceil",
         "sign": "Sign", "softplus": "Softplus", "logical_not": "Not", "tan": "Tan",
         "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan", "sinh": "Sinh", "cosh": "Cosh",
         "arcsinh": "Asinh", "arccosh": "Acosh", "arctanh": "Atanh"}
BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "pow": "Pow", "maximum": "Max",
          "minimum": "Min", "logical_and": "And", "logical_or": "Or"}
COMPARE = {"eq": "Equal", "ne": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
           "ge": "GreaterOrEqual"}


def _not_equal(low: Lowering, node: Node) -> Any:
    return low.emit("Not", [binary("Equal", compare=True)(low, node)])


TENSOR_RULES = {
    **{f"tensor::{k}": unary(v) for k, v in UNARY.items()},
    **{f"tensor::{k}": binary(v) for k, v in BINARY.items()},
    **{f"tensor::{k}": binary(v, compare=True) for k, v in COMPARE.items()},
    "tensor::ne": _not_equal,
    "tensor::div": binary("Div", true_divide=True),
    "tensor::floordiv": _floordiv,
    "tensor::mod": _mod,
    "tensor::rsqrt": unary("Sqrt", "Reciprocal"),
    "tensor::log1p": _with_one("Log", after=False),
    "tensor::expm1": _with_one("Exp", after=True),
    "tensor::square": _square,
    "tensor::gelu": _gelu,
    "tensor::einsum": _einsum,
    "tensor::tensordot": _tensordot,
    "tensor::where": _where,
    "tensor::clip": _clip,
    "tensor::astype": _astype,
    "tensor::matmul": _matmul,
    "tensor::matmul_sum": _matmul_sum,
    "tensor::dot": _matmul,
    "tensor::linear": _linear,
    "tensor::layer_norm": _layer_norm,
    "tensor::softmax": _softmax("Softmax"),
    "tensor::log_softmax": _softmax("LogSoftmax"),
    "tensor::sum": reduce("ReduceSum"),
    "tensor::mean": reduce("ReduceMean"),
    "tensor::amax": reduce("ReduceMax"),
    "tensor::amin": reduce("ReduceMin"),
    "tensor::var": _variance(root=False),
    "tensor::std": _variance(root=True),
    "tensor::argmax": _arg("ArgMax"),
    "tensor::argmin": _arg("ArgMin"),
    "tensor::reshape": _reshape,
    "tensor::flatten": _flatten,
    "tensor::ravel": _flatten,
    "tensor::transpose": _transpose,
    "tensor::expand_dims": _unsqueeze("Unsqueeze"),
    "tensor::squeeze": _unsqueeze("Squeeze"),
    "tensor::select": _select,
    "tensor::take": _take,
    "tensor::slice": _slice,
    "tensor::size": _size,
    "tensor::shape": _shape,
    "tensor::ndim": lambda low, node: rank_of(low, node),
    "tensor::numel": _numel,
    "tensor::chunk": _split,
    "tensor::split": _split,
    "tensor::stack": _join(stack=True),
    "tensor::cat": _join(stack=False),
    "tensor::zeros": _filled(0, like=False),
    "tensor::ones": _filled(1, like=False),
    "tensor::empty": _filled(0, like=False),
    "tensor::full": _filled(None, like=False),
    "tensor::zeros_like": _filled(0, like=True),
    "tensor::ones_like": _filled(1, like=True),
    "tensor::empty_like": _filled(0, like=True),
    "tensor::full_like": _filled(None, like=True),
    "tensor::arange": _arange,
    "tensor::broadcast_to": _broadcast("Expand"),
    "tensor::tile": _broadcast("Tile"),
    "tensor::contiguous": _identity,
    "tensor::copy": _identity,
    "tensor::detach": _identity,
    "tensor::dropout": _dropout,
}
"""ONNX lowering rules for the tensor ops, by kind."""

RULES = STRUCTURE_RULES | {kind: folding(rule) for kind, rule in TENSOR_RULES.items()}
"""Every lowering rule: the structural ops' and the tensor ops' (folded when known)."""
