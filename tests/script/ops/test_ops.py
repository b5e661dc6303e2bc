"""The eager op library against the registry: every op's result has the dtype and shape the op's
type rule infers, and the values equal numpy reference formulas; plus the ShapeErrors we promise."""

from __future__ import annotations

import math
import sys
import types
import warnings

import numpy as np
import pytest

from ir.core import Graph
from ir.registry import ShapeError, all_ops, infer_types, op_def
from ir.types import BOOL, FLOAT, INT, STR, ListType, OptionalType, TensorType, TupleType, Type
from script import ops
from script.ops.opdocs import section_of
from tests.helpers import infer

RNG = np.random.default_rng(0)
F32, F64, I64, B = "float32", "float64", "int64", "bool"


def array(shape: tuple, dtype: str, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    """Values of both signs with zeros among them (0.0 and -0.0 for floats), where results and
    their references must agree too; ops defined on part of the line take ``positive`` or
    ``nonzero`` of these."""
    if dtype == B:
        return RNG.random(shape) > 0.5
    kind = np.dtype(dtype).kind
    if kind in "iu":
        return RNG.integers(0 if kind == "u" else -3, 4, shape).astype(dtype)
    values = RNG.uniform(low, high, shape)
    flat = values.reshape(-1)
    flat[::4] = 0.0
    flat[1::7] = -0.0
    return values.astype(dtype)


def positive(x: object) -> object:
    """``x`` moved into the positive numbers, dtype kept (log, sqrt, ...); a 0-d array stays
    one (numpy's arithmetic would make it a numpy scalar)."""
    return np.asarray(np.abs(x) + 1) if isinstance(x, np.ndarray) and x.dtype != np.bool_ else (
        abs(x) + 1 if isinstance(x, (int, float)) and not isinstance(x, bool) else x)


def nonzero(x: object) -> object:
    """``x`` with its zeros replaced by ones (divisors)."""
    if isinstance(x, np.ndarray):
        return np.where(x == 0, np.ones_like(x), x)
    return x if x != 0 else type(x)(1)


def _device(args: tuple) -> str | None:
    has_tensor = any(isinstance(a, np.ndarray) or isinstance(a, list) and a
                     and isinstance(a[0], np.ndarray) for a in args)
    return "cpu" if has_tensor else None


def assert_matches(result: object, t: Type, device: str | None) -> None:
    """``result`` is a value of type ``t`` exactly (dtype, shape and device for tensors)."""
    if isinstance(t, TensorType):
        assert isinstance(result, (np.ndarray, np.generic)), f"{result!r} is not an array"
        assert (result.dtype.name, result.shape) == (t.dtype, t.shape), (result, t)
        assert t.device == device
    elif isinstance(t, ListType):
        # a list of ints may be a shape: a tuple at run time, as numpy's
        assert isinstance(result, list) or isinstance(result, tuple) and t.element == INT
        for item in result:
            assert_matches(item, t.element, device)
    else:
        assert type(result) is {INT: int, FLOAT: float, BOOL: bool, STR: str}[t], (result, t)


def run(name: str, *args: object, outputs: int = 1) -> object:
    """Run ``ops.name`` eagerly and check its result against the inferred types."""
    types = infer(name, *args, outputs=outputs)
    result = getattr(ops, name)(*args)
    if outputs == 1:
        assert_matches(result, types[0], _device(args))
    else:
        assert isinstance(result, tuple) and len(result) == outputs
        for r, t in zip(result, types):
            assert_matches(r, t, _device(args))
    return result


TOLERANCE = {"float16": 2e-3, "float32": 1e-5}


def close(result: object, expected: object) -> None:
    rtol = TOLERANCE.get(np.asarray(result).dtype.name, 1e-12)
    np.testing.assert_allclose(np.asarray(result, np.float64), expected, rtol=rtol, atol=rtol)


def f64(x: object) -> object:
    return np.asarray(x, np.float64) if isinstance(x, np.ndarray) else float(x)


# -- elementwise ---------------------------------------------------------------------------------
BINARY_REF = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "floordiv": lambda a, b: np.floor(a / b),
    "mod": lambda a, b: a - np.floor(a / b) * b, "pow": lambda a, b: a ** b,
    "minimum": np.minimum, "maximum": np.maximum, "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "logical_and": lambda a, b: (a != 0) & (b != 0), "logical_or": lambda a, b: (a != 0) | (b != 0),
}
BINARY_ARGS = [
    (array((3, 4), F32), array((4,), F32)),
    (array((2, 1, 4), F64), array((3, 1), F32)),
    (array((3, 4), I64), array((3, 4), F32)),
    (array((3, 4), I64), array((4,), I64)),
    (array((3, 4), F32), 2), (array((3, 4), F32), 1.5), (3, array((2, 3), F32)),
    (array((3, 4), F32), -2), (array((3, 4), F64), -1.5), (-3, array((2, 3), F32)),
    (array((3,), I64), 2), (array((3,), I64), 2.5), (array((3,), I64), -3),
    (array((5,), I64), 0), (0.0, array((5,), F64)), (array((3,), B), array((3,), B)),
    (array((3,), B), 2), (3, 4), (2.5, 2), (-7, 2), (7, -2), (-2.5, 2), (0, -3), (-0.0, 1.5),
    (True, False),
]


def _divisor_nonzero(a: object, b: object) -> tuple:
    return a, nonzero(b)


def _power_defined(a: object, b: object) -> tuple:
    """Integer exponents non-negative (numpy refuses negative ones); fractional exponents of
    positive bases only (real results)."""
    if isinstance(b, float) or getattr(b, "dtype", np.dtype(int)).kind == "f":
        return positive(a), b
    return a, np.abs(b) if isinstance(b, np.ndarray) else abs(b)


BINARY_DOMAIN = {"div": _divisor_nonzero, "floordiv": _divisor_nonzero,
                 "mod": _divisor_nonzero, "pow": _power_defined}
"""Where an op is defined: the arguments moved into it (others take every value)."""


def _bool_arithmetic(name: str, a: object, b: object) -> bool:
    bools = [isinstance(x, bool) or getattr(x, "dtype", None) == np.bool_ for x in (a, b)]
    return all(bools) and name in ("sub", "div", "floordiv", "mod", "pow")


def _args_id(args: tuple) -> str:
    return "-".join(str(getattr(x, "dtype", type(x).__name__)) + str(getattr(x, "shape", ""))
                    for x in args)


@pytest.mark.parametrize("name,args", [
    pytest.param(name, args, id=f"{name}-{_args_id(args)}")
    for name in sorted(BINARY_REF) for args in BINARY_ARGS
    if not _bool_arithmetic(name, *args)])
@pytest.mark.filterwarnings("error::RuntimeWarning")  # no nan or inf compared to nan or inf
def test_binary_ops_match_the_registry_and_numpy(name, args):
    args = BINARY_DOMAIN.get(name, lambda *xs: xs)(*args)
    result = run(name, *args)
    all_bool = all(isinstance(x, bool) or getattr(x, "dtype", None) == np.bool_ for x in args)
    # bool + bool is "or" and bool * bool is "and" in numpy: compare on the bools themselves
    reference_args = args if all_bool else [f64(x) for x in args]
    close(result, BINARY_REF[name](*reference_args))


def _sigmoid_ref(x):
    return 1 / (1 + np.exp(-x))


UNARY_REF = {
    "neg": lambda x: -x, "abs": np.abs, "sign": np.sign, "relu": lambda x: np.maximum(x, 0),
    "square": lambda x: x * x, "exp": np.exp, "log": np.log, "log1p": np.log1p,
    "expm1": np.expm1, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh,
    "sigmoid": _sigmoid_ref, "sin": np.sin, "cos": np.cos, "reciprocal": lambda x: 1 / x,
    "floor": np.floor, "ceil": np.ceil, "erf": np.vectorize(math.erf),
    "softplus": lambda x: np.log(1 + np.exp(x)), "logical_not": lambda x: x == 0,
    "gelu": lambda x: x / 2 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "exp2": np.exp2, "log2": np.log2, "log10": np.log10, "tan": np.tan, "sinh": np.sinh,
    "cosh": np.cosh, "arctan": np.arctan, "arcsinh": np.arcsinh,
    "arcsin": np.arcsin, "arccos": np.arccos, "arctanh": np.arctanh, "arccosh": np.arccosh,
}
NO_BOOL = {"neg", "log", "log1p", "sqrt", "rsqrt", "reciprocal", "log2", "log10", "arccosh"}
POSITIVE_ONLY = {"log", "log1p", "sqrt", "rsqrt", "reciprocal", "log2", "log10", "arccosh"}
"""Defined (finite) on the positive numbers only: their argument goes through ``positive``."""
UNIT_ONLY = {"arcsin", "arccos", "arctanh"}
"""Defined (finite) inside (-1, 1) only: their float arguments are scaled into it (``unit``),
the others are not used."""


def unit(x: object) -> object:
    """A float ``x`` scaled into (-1, 1), dtype kept."""
    if isinstance(x, np.ndarray):
        return np.asarray(x / (np.abs(x).max() + 1)).astype(x.dtype)
    return x / (abs(x) + 1)
UNARY_ARGS = [array((3, 4), F32), array((2, 3, 4), F64), array((5,), I64), array((2, 3), B),
              array((3,), "int16"), array((3,), "uint8"), np.array(1.5), 2, 1.5]


@pytest.mark.parametrize("name,x", [
    pytest.param(name, x, id=f"{name}-{_args_id((x,))}")
    for name in sorted(UNARY_REF) for x in UNARY_ARGS
    if not (name in NO_BOOL and getattr(x, "dtype", None) == np.bool_)
    and not (name == "neg" and getattr(x, "dtype", None) == np.uint8)  # wraps around
    and not (name in UNIT_ONLY and np.asarray(x).dtype.kind != "f")])
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_unary_ops_match_the_registry_and_numpy(name, x):
    x = positive(x) if name in POSITIVE_ONLY else unit(x) if name in UNIT_ONLY else x
    result = run(name, x)
    close(result, UNARY_REF[name](f64(x)))


def test_sigmoid_is_stable_at_large_magnitudes():
    x = np.array([-1000.0, -40.0, 0.0, 40.0, 1000.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = ops.sigmoid(x)
        y32 = ops.sigmoid(x.astype(np.float32))
    assert y[0] == 0.0 and y[-1] == 1.0 and y[2] == 0.5
    close(y[1], math.exp(-40.0) / (1 + math.exp(-40.0)))
    assert y32.dtype == np.float32 and np.isfinite(y32).all()


def test_softplus_does_not_overflow():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = ops.softplus(np.array([-1000.0, 0.0, 1000.0]))
    close(y, [0.0, math.log(2.0), 1000.0])


def test_erf_agrees_with_math_erf_to_1e_7_relative():
    x = np.linspace(-6, 6, 2001)
    expected = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(ops.erf(x), expected, rtol=1e-7, atol=0)
    assert ops.erf(np.array(0.5, np.float32)).dtype == np.float32


def test_clip_where_astype():
    x = np.linspace(-2, 2, 9).astype(np.float32)
    close(run("clip", x, -1.0, 1.0), np.clip(f64(x), -1, 1))
    close(run("clip", x, None, 0.5), np.minimum(f64(x), 0.5))
    close(run("clip", x, None, None), f64(x))
    cond = x > 0
    close(run("where", cond, x, 0.0), np.where(cond, f64(x), 0.0))
    ints = array((9,), I64)
    close(run("where", cond, ints, x), np.where(cond, f64(ints), f64(x)))
    assert run("astype", x, "int64").tolist() == x.astype(np.int64).tolist()
    assert run("astype", 3, "float32") == 3.0
    assert ops.astype(x, np.float64).dtype == np.float64


def test_python_scalars_give_python_results():
    assert ops.add(1, 2) == 3 and type(ops.add(1, 2)) is int
    assert ops.div(1, 2) == 0.5
    assert ops.mod(-7, 3) == 2
    assert ops.lt(1, 2) is True
    assert ops.add(True, True) == 2  # Python's arithmetic on Python numbers, as the IR types it
    assert ops.maximum(True, 2.5) == 2.5 and type(ops.minimum(True, 2)) is int
    assert ops.minimum(True, False) is False  # as np.minimum: the smaller of two bools
    assert ops.mul(np.float32(2), 3).dtype == np.float32  # a numpy scalar keeps numpy's result


# -- reductions ----------------------------------------------------------------------------------
REDUCTION_REF = {
    "sum": lambda x, axis, keepdims: np.sum(x, axis, keepdims=keepdims),
    "prod": lambda x, axis, keepdims: np.prod(x, axis, keepdims=keepdims),
    "mean": lambda x, axis, keepdims: np.mean(x, axis, keepdims=keepdims),
    "amax": lambda x, axis, keepdims: np.max(x, axis, keepdims=keepdims),
    "amin": lambda x, axis, keepdims: np.min(x, axis, keepdims=keepdims),
    "all": lambda x, axis, keepdims: np.all(x, axis, keepdims=keepdims),
    "any": lambda x, axis, keepdims: np.any(x, axis, keepdims=keepdims),
}


@pytest.mark.parametrize("name", sorted(REDUCTION_REF))
@pytest.mark.parametrize("dtype", [F32, F64, I64, B])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), [1]])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, dtype, axis, keepdims):
    x = array((2, 3, 4), dtype)
    result = run(name, x, axis, keepdims)
    axes = tuple(axis) if isinstance(axis, list) else axis
    close(result, REDUCTION_REF[name](f64(x), axes, keepdims))


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dtype", [F32, F64, I64])
@pytest.mark.parametrize("axis,ddof,keepdims", [(None, 0, False), (1, 1, False), (-1, 0, True)])
def test_var_std(name, dtype, axis, ddof, keepdims):
    x = array((3, 5), dtype)
    result = run(name, x, axis, ddof, keepdims)
    mean = f64(x).mean(axis=axis, keepdims=True)
    n = x.size if axis is None else x.shape[axis]
    variance = ((f64(x) - mean) ** 2).sum(axis=axis, keepdims=keepdims) / (n - ddof)
    close(result, variance if name == "var" else np.sqrt(variance))


@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("axis", [None, 0, (0, 2), [1]])
def test_all_any_of_masks(name, axis):
    x = (np.arange(24).reshape(2, 3, 4) % 5 == 0) if name == "any" else \
        (np.arange(24).reshape(2, 3, 4) % 7 != 0)
    for a in (x, x.astype(F32), x.astype(I64)):
        result = run(name, a, axis, False)
        axes = tuple(axis) if isinstance(axis, list) else axis
        expected = getattr(np, name)(a, axes)
        assert result.dtype == np.bool_ and np.array_equal(result, expected)


@pytest.mark.parametrize("spec,shapes", [("ij,jk->ik", [(2, 3), (3, 4)]), ("ij", [(2, 3)]),
                                         ("ba", [(2, 3)]), ("...i,...i->...", [(2, 3), (1, 3)]),
                                         ("i...->...", [(2, 3, 4)]), ("ij,ij->i", [(2, 3), (2, 1)]),
                                         ("i,j", [(2,), (3,)]), ("ii", [(3, 3)])])
@pytest.mark.parametrize("dtype", [F32, F64, I64])
def test_einsum(spec, shapes, dtype):
    args = [array(s, dtype) for s in shapes]
    close(run("einsum", spec, False, *args), np.einsum(spec, *[f64(a) for a in args]))
    close(run("einsum", spec, True, *args), np.einsum(spec, *[f64(a) for a in args]))


@pytest.mark.parametrize("axes,shapes", [(2, [(2, 3, 4), (3, 4, 5)]), (1, [(2, 3), (3,)]),
                                         (0, [(2,), (3, 2)]), (((0, 2), (1, 0)), [(4, 3, 5),
                                                                              (5, 4, 2)]),
                                         ((-1, 0), [(2, 3), (3, 2)])])
@pytest.mark.parametrize("dtype", [F32, F64, I64])
def test_tensordot(axes, shapes, dtype):
    args = [array(s, dtype) for s in shapes]
    close(run("tensordot", *args, axes), np.tensordot(*[f64(a) for a in args], axes))
    whole = run("tensordot", array((3,), dtype), array((3,), dtype), 1, True)
    assert isinstance(whole, np.dtype(dtype).type)  # np.inner's numpy scalar


@pytest.mark.parametrize("dtype", [F32, F64, I64])
def test_inv_and_solve(dtype):
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((2, 3, 3)) * 2 + 6 * np.eye(3)).astype(dtype)
    b, m = array((3,), dtype), array((2, 3, 4), dtype)
    for got, want in ((run("inv", a), np.linalg.inv(f64(a))),
                      (run("solve", a[0], b), np.linalg.solve(f64(a[0]), f64(b))),
                      (run("solve", a, m), np.linalg.solve(f64(a), f64(m)))):
        assert got.dtype == (F64 if dtype == I64 else dtype)  # numpy.linalg's float64
        close(got, want)


@pytest.mark.parametrize("dtype", [F32, F64, I64])
def test_det_and_slogdet(dtype):
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((2, 3, 3)) * 2 + 6 * np.eye(3)).astype(dtype)
    close(run("det", a), np.linalg.det(f64(a)))
    assert isinstance(run("det", a[0]), np.floating)  # numpy's scalar of one matrix
    sign, logdet = run("slogdet", a, outputs=2)
    want = np.linalg.slogdet(f64(a))
    close(sign, want[0])
    close(logdet, want[1])
    assert logdet.dtype == (F64 if dtype == I64 else dtype)


def test_integer_sums_are_numpys():
    for dtype in ("uint8", "int32", "bool"):
        x = np.ones((4, 3), dtype)
        assert run("sum", x, 0, False).dtype == x.sum(axis=0).dtype  # uint64 for uint8


@pytest.mark.parametrize("dtype", [F32, F64, I64])
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_and_log_softmax(dtype, axis):
    x = array((3, 4), dtype) * 10
    x64 = f64(x)
    e = np.exp(x64) / np.exp(x64).sum(axis=axis, keepdims=True)
    close(run("softmax", x, axis), e)
    close(run("log_softmax", x, axis), np.log(e))
    big = np.array([[1000.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        close(ops.softmax(big), [[1.0, 0.0]])
        close(ops.log_softmax(big), [[0.0, -1000.0]])


# -- linear algebra --------------------------------------------------------------------------------
MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                 ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 3))]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
@pytest.mark.parametrize("dtypes", [(F32, F32), (F32, F64), (I64, I64), (I64, F32), (B, B)])
def test_matmul(shapes, dtypes):
    a, b = array(shapes[0], dtypes[0]), array(shapes[1], dtypes[1])
    result = run("matmul", a, b)
    close(result, np.matmul(f64(a), f64(b)) if dtypes != (B, B) else np.matmul(a, b))
    assert ops.mm is ops.matmul


@pytest.mark.parametrize("x_shape", [(3, 4), (2, 3, 4), (4,)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear(x_shape, with_bias):
    x, w, b = array(x_shape, F32), array((5, 4), F32), array((5,), F32)
    bias = b if with_bias else None
    result = run("linear", x, w, bias)
    close(result, f64(x) @ f64(w).T + (f64(b) if with_bias else 0.0))


@pytest.mark.parametrize("dtype", [F32, F64])
def test_matmul_sum(dtype):
    x, w = array((3, 4), dtype), array((4, 5), dtype)
    h, u = array((3, 2), dtype), array((2, 5), dtype)
    result = run("matmul_sum", x, w, h, u)
    close(result, f64(x) @ f64(w) + f64(h) @ f64(u))
    close(run("matmul_sum", x, w), f64(x) @ f64(w))


# -- shapes ---------------------------------------------------------------------------------------
def test_transpose_reshape_expand_squeeze():
    x = array((2, 3, 4), F32)
    np.testing.assert_array_equal(run("transpose", x, None), x.T)
    np.testing.assert_array_equal(run("transpose", x, (1, 0, 2)), x.transpose(1, 0, 2))
    np.testing.assert_array_equal(run("transpose", x, [-1, 0, 1]), x.transpose(2, 0, 1))
    np.testing.assert_array_equal(run("reshape", x, (6, -1)), x.reshape(6, 4))
    np.testing.assert_array_equal(run("reshape", x, [-1]), x.reshape(-1))
    np.testing.assert_array_equal(run("reshape", x, 24), x.reshape(24))
    assert run("expand_dims", x, 0).shape == (1, 2, 3, 4)
    assert run("expand_dims", x, (-1, 1)).shape == (2, 1, 3, 4, 1)
    y = array((1, 3, 1), I64)
    assert run("squeeze", y, None).shape == (3,)
    assert run("squeeze", y, -1).shape == (1, 3)


def test_select_and_slice_with_negative_indices_and_steps():
    x = array((4, 5, 6), F64)
    np.testing.assert_array_equal(run("select", x, 0, -1), x[-1])
    np.testing.assert_array_equal(run("select", x, -2, 3), x[:, 3])
    v = array((3,), I64)
    assert run("select", v, 0, 1) == v[1]
    for start, stop, step in [(1, None, None), (None, -1, None), (-4, -1, 2), (None, None, -1),
                              (4, 0, -2), (10, 20, None), (None, None, 3)]:
        expected = x[:, start:stop:step]
        np.testing.assert_array_equal(run("slice", x, 1, start, stop, step), expected)
    with pytest.raises(IndexError):
        ops.select(x, 0, 4)


def test_size_shape_ndim():
    x = array((2, 3), F32)
    assert run("size", x, -1) == 3
    assert run("shape", x) == (2, 3)
    assert run("ndim", x) == 2
    assert run("dtype", x) == "float32"


@pytest.mark.parametrize("n,chunks,sizes", [(8, 4, [2, 2, 2, 2]), (10, 4, [3, 3, 3, 1]),
                                            (7, 3, [3, 3, 1]), (3, 3, [1, 1, 1])])
def test_chunk_uneven_like_torch(n, chunks, sizes):
    x = array((2, n), F32)
    pieces = run("chunk", x, chunks, 1, outputs=chunks)
    assert [p.shape[1] for p in pieces] == sizes
    np.testing.assert_array_equal(np.concatenate(pieces, 1), x)


def test_chunk_that_cannot_make_the_count_is_an_error():
    x = array((5, 2), F32)
    with pytest.raises(ShapeError, match="does not make 4 chunks"):
        infer("chunk", x, 4, 0, outputs=4)
    with pytest.raises(ValueError):
        ops.chunk(x, 4, 0)


def test_split_unbind_cat_stack():
    x = array((6, 4), I64)
    parts = run("split", x, 3, 0, outputs=3)
    assert [p.shape for p in parts] == [(2, 4)] * 3
    pieces = run("split_list", x, 3, 0)  # np.split by an argument: a list
    assert isinstance(pieces, list) and [p.shape for p in pieces] == [(2, 4)] * 3
    rows = run("unbind", x, 1)
    assert len(rows) == 4 and rows[0].shape == (6,)
    np.testing.assert_array_equal(rows[2], x[:, 2])
    a, b = array((2, 3), F32), array((4, 3), F64)
    np.testing.assert_array_equal(run("cat", [a, b], 0), np.concatenate([a, b]))
    np.testing.assert_array_equal(run("cat", [a, a], -1), np.concatenate([a, a], -1))
    np.testing.assert_array_equal(run("stack", [a, a, a], 1), np.stack([a, a, a], 1))
    assert run("stack", [a, a], -1).shape == (2, 3, 2)


def test_creation_ops():
    assert run("zeros", (2, 3), "float32").sum() == 0
    assert run("ones", [4], "int64").tolist() == [1, 1, 1, 1]
    assert run("full", (2,), 7, "float64").tolist() == [7.0, 7.0]
    x = array((2, 3), F64)
    assert run("zeros_like", x, None).dtype == np.float64
    assert run("ones_like", x, "float32").dtype == np.float32
    assert run("full_like", x, 2.5, None).tolist() == [[2.5] * 3] * 2
    assert run("arange", 5, None, 1, None).tolist() == [0, 1, 2, 3, 4]
    close(run("arange", 0.0, 1.0, 0.25, None), [0, 0.25, 0.5, 0.75])
    assert run("arange", 10, 0, -3, "float32").tolist() == [10, 7, 4, 1]
    assert ops.zeros((2,)).dtype == np.zeros(2).dtype  # numpy's default: float64
    assert run("full", (2,), 7, None).dtype == np.full(2, 7).dtype
    assert run("full", (2,), 0.5, None).dtype == np.float64


# -- nn --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F32, F64])
def test_layer_norm(dtype):
    x, w, b = array((3, 8), dtype), array((8,), dtype), array((8,), dtype)
    x64 = f64(x)
    normed = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    close(run("layer_norm", x, w, b, 1e-5), normed * f64(w) + f64(b))
    close(run("layer_norm", x, None, None, 1e-5), normed)


def test_dropout():
    x = np.ones((200, 200))
    assert ops.dropout(x, 0.5, False) is x
    assert ops.dropout(x, 0.0, True) is x
    ops.manual_seed(1)
    y = run("dropout", x, 0.25, True)
    ops.manual_seed(1)
    np.testing.assert_array_equal(ops.dropout(x, 0.25, True), y)
    assert set(np.unique(y)) == {0.0, 1 / 0.75}
    assert abs(y.mean() - 1.0) < 0.02
    assert abs((y == 0).mean() - 0.25) < 0.02
    assert ops.dropout(x.astype(np.float32), 0.5, True).dtype == np.float32
    assert not ops.dropout(x, 1.0, True).any()
    assert not op_def("tensor::dropout").is_pure


# -- the registry's rules when something is unknown ------------------------------------------------
def test_unknown_sizes_stay_unknown():
    g = Graph()
    x = g.add_input(TensorType(F32, (6, None), "cpu"))
    n = g.add_input(INT)
    shape = g.insert("prim::TupleConstruct", [n, g.constant(4)],
                     [TupleType((INT, INT))]).output
    (t,) = infer_types(g.insert("tensor::reshape", [x, shape], [TensorType()]))
    assert t == TensorType(F32, (None, 4), "cpu")
    (t,) = infer_types(g.insert("tensor::sum", [x, g.constant(0), g.constant(False)],
                                [TensorType()]))
    assert t == TensorType(F32, (None,), "cpu")
    (t,) = infer_types(g.insert("tensor::slice", [x, g.constant(1), g.constant(1),
                                                  g.constant(None), g.constant(None)],
                                [TensorType()]))
    assert t.shape == (6, None)
    types = infer_types(g.insert("tensor::chunk", [x, g.constant(2), g.constant(1)],
                                 [TensorType()] * 2))
    assert [t.shape for t in types] == [(6, None)] * 2


def test_lists_of_unknown_length_and_optional_bias():
    g = Graph()
    xs = g.add_input(ListType(TensorType(F32, (2, 3), "cpu")))
    (t,) = infer_types(g.insert("tensor::cat", [xs, g.constant(1)], [TensorType()]))
    assert t == TensorType(F32, (2, None), "cpu")
    (t,) = infer_types(g.insert("tensor::stack", [xs, g.constant(0)], [TensorType()]))
    assert t == TensorType(F32, (None, 2, 3), "cpu")
    x = g.add_input(TensorType(F32, (4, 3), "cpu"))
    w = g.add_input(TensorType(F32, (5, 3), "cpu"))
    maybe_bias = g.add_input(OptionalType(TensorType(F64, (5,), "cpu")))
    (t,) = infer_types(g.insert("tensor::linear", [x, w, maybe_bias], [TensorType()]))
    assert t == TensorType(None, (4, 5), "cpu")  # float32 without the bias, float64 with it
    axes = g.insert("prim::ListConstruct", [g.constant(0), g.constant(1)],
                    [ListType(INT)]).output
    (t,) = infer_types(g.insert("tensor::mean", [x, axes, g.constant(True)], [TensorType()]))
    assert t == TensorType(F32, (1, 1), "cpu")


LIBRARY_SECTIONS = {"elementwise", "linalg", "reductions", "shape", "nn", "creation"}
"""The op modules whose ops this file checks (gradient-only ops are checked with autodiff)."""


def test_every_tensor_op_has_a_checked_example():
    """A new op in the library's modules without an example here is a gap in this file."""
    covered = (set(BINARY_REF) | set(UNARY_REF) | set(REDUCTION_REF) |
               {"var", "std", "softmax", "log_softmax", "matmul", "linear", "matmul_sum",
                "transpose", "reshape", "expand_dims", "squeeze", "select", "slice", "size",
                "shape", "ndim",
                "dtype", "chunk", "split", "split_list", "unbind", "cat", "stack", "zeros", "ones",
                "full",
                "zeros_like", "ones_like", "full_like", "arange", "layer_norm", "dropout",
                "clip", "where", "astype", "einsum", "tensordot", "inv",
                "solve", "det", "slogdet"})
    tensor_ops = {op.name for op in all_ops() if op.kind.startswith("tensor::")
                  and section_of(op) in LIBRARY_SECTIONS}
    assert tensor_ops <= covered, sorted(tensor_ops - covered)


# -- shape errors ----------------------------------------------------------------------------------
def test_shape_errors():
    with pytest.raises(ShapeError, match="inner dimensions"):
        infer("matmul", array((3, 4), F32), array((5, 2), F32))
    with pytest.raises(ShapeError, match="at least one dimension"):
        infer("matmul", np.zeros((), np.float32), array((2,), F32))
    with pytest.raises(ShapeError, match="cannot reshape"):
        infer("reshape", array((2, 3), F32), (4, 2))
    with pytest.raises(ShapeError):
        infer("reshape", array((2, 3), F32), (4, -1))
    with pytest.raises(ShapeError, match="same rank"):
        infer("cat", [array((2, 3), F32), array((3,), F32)], 0)
    with pytest.raises(ShapeError, match="differ along axis 1"):
        infer("cat", [array((2, 3), F32), array((2, 4), F32)], 0)
    with pytest.raises(ShapeError, match="equal sections"):
        infer("split", array((5, 2), F32), 2, 0, outputs=2)
    with pytest.raises(ShapeError, match="out of bounds"):
        infer("sum", array((2, 3), F32), 2, False)
    with pytest.raises(ShapeError, match="cannot squeeze"):
        infer("squeeze", array((2, 3), F32), 0)
    with pytest.raises(ShapeError, match="floating-point"):
        infer("dropout", array((2, 3), I64), 0.5, True)


def test_chunk_count_must_be_constant():
    g = Graph()
    x = g.add_input(TensorType(F32, (4, 8), "cpu"))
    count = g.add_input(INT)
    node = g.insert("tensor::chunk", [x, count, g.constant(1)], [TensorType()] * 2)
    with pytest.raises(ShapeError, match="must be a constant"):
        infer_types(node)


def test_array_module_picks_cupy_only_for_cupy_arrays(monkeypatch):
    assert ops.array_module(np.ones(2), 1.0, None) is np
    fake = types.ModuleType("cupy")

    class FakeArray:
        pass

    fake.ndarray = FakeArray
    monkeypatch.setitem(sys.modules, "cupy", fake)
    assert ops.array_module(np.ones(2), FakeArray()) is fake
    assert ops.array_module([np.ones(2), FakeArray()]) is fake
    assert ops.array_module(np.ones(2), 2) is np
