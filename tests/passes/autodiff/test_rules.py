"""Every VJP rule against central finite differences (float64), through the optimized and the
unoptimized backward, with the eager and the compiled forward (tests/gradcheck.py)."""

from typing import Tuple

import numpy as np
import pytest

from passes.autodiff import NON_DIFFERENTIABLE, VJP_RULES
from script import Tensor, ops, script
from tests.gradcheck import check_vjp


# -- one small program per rule (each op's gradient is what reaches the inputs) ------------------
def add(x: Tensor, b: Tensor) -> Tensor:
    return x + b


def sub(x: Tensor, b: Tensor) -> Tensor:
    return b - x - 2.0


def mul(x: Tensor, b: Tensor) -> Tensor:
    return x * b * 3.0


def div(x: Tensor, b: Tensor) -> Tensor:
    return x / (b * b + 1.0)


def mod(x: Tensor, b: Tensor) -> Tensor:
    return x % (b * b + 2.0)


def power(x: Tensor, b: Tensor) -> Tensor:
    return (x * x + 0.5) ** b + x ** 3


def minimum(x: Tensor, y: Tensor) -> Tensor:
    return np.minimum(x, y)


def maximum(x: Tensor, y: Tensor) -> Tensor:
    return np.maximum(x, y) + np.maximum(x, 0.1)


def unary_a(x: Tensor) -> Tensor:
    return -np.abs(x) + ops.relu(x) + np.square(x) + np.exp(x) + np.tanh(x) + ops.sigmoid(x)


def unary_b(x: Tensor) -> Tensor:
    p = x * x + 0.5
    return np.log(p) + np.log1p(p) + np.sqrt(p) + ops.rsqrt(p) + np.reciprocal(p) + np.expm1(x)


def unary_c(x: Tensor) -> Tensor:
    return np.sin(x) * np.cos(x) + ops.erf(x) + ops.softplus(x) + ops.gelu(x)


def unary_d(x: Tensor) -> Tensor:
    u = np.tanh(x) * 0.9  # inside (-1, 1)
    p = x * x + 1.5  # above 1
    return np.exp2(x) + np.log2(p) * np.log10(p) + np.tan(u) + np.arcsin(u) * np.arccos(u) + \
        np.arctan(x) + np.sinh(x) * np.cosh(x) + np.arcsinh(x) + np.arccosh(p) + np.arctanh(u)


def einsums(x: Tensor, w: Tensor) -> Tensor:
    return np.einsum("bi,ij->bj", x, w) + np.einsum("bi,bi->b", x, x)[:, None] + \
        np.einsum("ij->", w)


def tensordots(x: Tensor, w: Tensor) -> Tensor:
    return np.tensordot(x, w, axes=([0, 2], [1, 0])) + np.inner(x[0], w[:, 0, :].T)[:, :1]


def linear_systems(a: Tensor, b: Tensor) -> Tensor:
    m = a + 4.0 * np.eye(3)
    return np.linalg.inv(m) @ b + np.linalg.solve(m, b) + np.linalg.solve(m, b[:, 0])[:, None]


def determinants(a: Tensor) -> Tensor:
    m = a + 4.0 * np.eye(3)
    sign, logdet = np.linalg.slogdet(np.stack([m, m @ m.T]))
    return np.linalg.det(m) * sign + logdet


def scatter_adds(a: Tensor, v: Tensor) -> Tensor:
    g = a * 1.0
    np.add.at(g, np.array([0, 2, 0]), v)
    np.subtract.at(g, (np.array([1, 1]), np.array([3, 3])), v[0, 0])
    return g * a


def clip(x: Tensor, lo: Tensor) -> Tensor:
    return np.clip(x, lo, 0.5) + np.clip(x, -0.3, None)


def where(x: Tensor, y: Tensor) -> Tensor:
    return np.where(x > y, x * 2.0, y * y)


def astype(x: Tensor) -> Tensor:
    return (x.astype(np.float32) * 2.0).astype(np.float64)


def transpose(x: Tensor) -> Tensor:
    return x.T * np.transpose(x, (1, 0))


def transpose3(x: Tensor) -> Tensor:
    return np.transpose(x, (2, 0, 1)) * 2.0


def reshape(x: Tensor) -> Tensor:
    return np.squeeze(np.expand_dims(x.reshape(4, 3), 0), 0) * 2.0


def select_slice(x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    return x[1], x[0:2], x[::2]


def chunk_split(x: Tensor) -> Tuple[Tensor, Tensor]:
    a, b = ops.chunk(x, 2, 1)
    c, d = np.split(x, 2, 0)
    return a * b, np.tanh(c) + d


def unused_chunk(x: Tensor) -> Tensor:
    a, b, c = ops.chunk(x, 3, 0)
    return b * 2.0


def cat_stack(x: Tensor, y: Tensor) -> Tuple[Tensor, Tensor]:
    return np.concatenate([x, y * 2.0], 1), np.stack([x, y], 0)


def unbind(x: Tensor) -> Tensor:
    a, b, c = ops.unbind(x, 0)
    return a * c


def reductions(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return x.sum(axis=1), x.mean(axis=0, keepdims=True), np.sum(x * x), x.mean()


def variance(x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    return x.var(axis=1), x.var(ddof=1), x.std(axis=0, keepdims=True)


def products(x: Tensor, z: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """z's rows hold no zero, one and two zeros: the gradient at a zero is the product of the
    others, beside two zeros 0 (finite differences at a zero see exactly that)."""
    return x.prod(axis=1), np.prod(x * 0.5, axis=(0, 1), keepdims=True), np.prod(z, axis=1)


def extrema(x: Tensor) -> Tuple[Tensor, Tensor]:
    return x.max(axis=1), np.min(x)


def softmaxes(x: Tensor) -> Tuple[Tensor, Tensor]:
    return ops.softmax(x, 1), ops.log_softmax(x, 0)


def matmul2(a: Tensor, b: Tensor) -> Tensor:
    return a @ b


def matmul_vec(a: Tensor, v: Tensor, w: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    return a @ v, w @ a, v @ v


def matmul_sum(a: Tensor, b: Tensor, c: Tensor, d: Tensor) -> Tensor:
    return ops.matmul_sum(a, b, c, d)


def matmul_batched(a: Tensor, b: Tensor) -> Tensor:
    return np.matmul(a, b)


def linear(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return ops.linear(x, w, b)


def layer_norm(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return ops.layer_norm(x, w, b)


def layer_norm_plain(x: Tensor) -> Tensor:
    return ops.layer_norm(x)


def layer_norm_grad(g: Tensor, x: Tensor, w: Tensor) -> Tensor:
    da, dw, db = ops.layer_norm_backward(g, x, w)
    return da * da + dw * 2.0 + db * db


def dropout(x: Tensor) -> Tensor:
    return ops.dropout(x * 2.0, 0.3)


def gradient_ops(x: Tensor, g: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return (ops.sum_to(x, (4,)), ops.broadcast_to(g, (3, 4)),
            ops.select_backward(g, (2, 4), 0, 1), ops.slice_backward(x, (5, 4), 0, 1, 4, 1))


def copies(x: Tensor) -> Tuple[Tensor, Tensor]:
    return np.tanh(x) * 3.0, np.tanh(x) * 3.0  # the second becomes a copy of the first


def contiguous_views(x: Tensor, s: Tensor) -> Tuple[Tensor, Tensor]:
    return np.ascontiguousarray(x.T) * 2.0, np.ascontiguousarray(s) * x[0]  # s is 0-d


def _r(rng, *shape):
    return rng.standard_normal(shape)


CASES = {
    "add": (add, lambda r: (_r(r, 3, 4), _r(r, 4)), ["tensor::add"]),
    "sub": (sub, lambda r: (_r(r, 3, 4), _r(r, 3, 1)), ["tensor::sub"]),
    "mul": (mul, lambda r: (_r(r, 3, 4), _r(r, 1, 4)), ["tensor::mul"]),
    "div": (div, lambda r: (_r(r, 3, 4), _r(r, 4)), ["tensor::div"]),
    "mod": (mod, lambda r: (_r(r, 3, 4) * 3, _r(r, 4)), ["tensor::mod"]),
    "pow": (power, lambda r: (_r(r, 3, 4), _r(r, 4)), ["tensor::pow"]),
    "minimum": (minimum, lambda r: (_r(r, 3, 4), _r(r, 4)), ["tensor::minimum"]),
    "maximum": (maximum, lambda r: (_r(r, 3, 4), _r(r, 3, 4)), ["tensor::maximum"]),
    "unary_a": (unary_a, lambda r: (_r(r, 3, 4),),
                ["tensor::neg", "tensor::abs", "tensor::relu", "tensor::square", "tensor::exp",
                 "tensor::tanh", "tensor::sigmoid"]),
    "unary_b": (unary_b, lambda r: (_r(r, 3, 4),),
                ["tensor::log", "tensor::log1p", "tensor::sqrt", "tensor::rsqrt",
                 "tensor::reciprocal", "tensor::expm1"]),
    "unary_c": (unary_c, lambda r: (_r(r, 3, 4),),
                ["tensor::sin", "tensor::cos", "tensor::erf", "tensor::softplus", "tensor::gelu"]),
    "unary_d": (unary_d, lambda r: (_r(r, 3, 4),),
                ["tensor::exp2", "tensor::log2", "tensor::log10", "tensor::tan", "tensor::arcsin",
                 "tensor::arccos", "tensor::arctan", "tensor::sinh", "tensor::cosh",
                 "tensor::arcsinh", "tensor::arccosh", "tensor::arctanh"]),
    "einsum": (einsums, lambda r: (_r(r, 3, 4), _r(r, 4, 2)), ["tensor::einsum"]),
    "tensordot": (tensordots, lambda r: (_r(r, 2, 3, 4), _r(r, 4, 2, 3)),
                  ["tensor::tensordot"]),
    "linear_systems": (linear_systems, lambda r: (_r(r, 3, 3), _r(r, 3, 2)),
                       ["tensor::inv", "tensor::solve"]),
    "scatter_adds": (scatter_adds, lambda r: (_r(r, 3, 4), _r(r, 3, 4)),
                     ["tensor::take_add", "tensor::index_pairs_add"]),
    "determinants": (determinants, lambda r: (_r(r, 3, 3),), ["tensor::det", "tensor::slogdet"]),
    "clip": (clip, lambda r: (_r(r, 3, 4), _r(r, 4) * 0.3 - 0.5), ["tensor::clip"]),
    "where": (where, lambda r: (_r(r, 3, 4), _r(r, 4)), ["tensor::where"]),
    "transpose": (transpose, lambda r: (_r(r, 3, 3),), ["tensor::transpose"]),
    "transpose3": (transpose3, lambda r: (_r(r, 2, 3, 4),), ["tensor::transpose"]),
    "reshape": (reshape, lambda r: (_r(r, 3, 4),),
                ["tensor::reshape", "tensor::expand_dims", "tensor::squeeze"]),
    "select_slice": (select_slice, lambda r: (_r(r, 5, 3),), ["tensor::select", "tensor::slice"]),
    "chunk_split": (chunk_split, lambda r: (_r(r, 4, 6),), ["tensor::chunk", "tensor::split"]),
    "unused_chunk": (unused_chunk, lambda r: (_r(r, 6, 2),), ["tensor::chunk"]),
    "cat_stack": (cat_stack, lambda r: (_r(r, 3, 2), _r(r, 3, 2)), ["tensor::cat",
                                                                      "tensor::stack"]),
    "unbind": (unbind, lambda r: (_r(r, 3, 4),), ["tensor::unbind"]),
    "reductions": (reductions, lambda r: (_r(r, 3, 4),), ["tensor::sum", "tensor::mean"]),
    "variance": (variance, lambda r: (_r(r, 3, 4),), ["tensor::var", "tensor::std"]),
    "extrema": (extrema, lambda r: (_r(r, 3, 4),), ["tensor::amax", "tensor::amin"]),
    "products": (products, lambda r: (_r(r, 3, 4), _r(r, 3, 4) * np.array(
        [[1, 1, 1, 1], [1, 0, 1, 1], [0, 1, 0, 1]])), ["tensor::prod"]),
    "softmax": (softmaxes, lambda r: (_r(r, 3, 4),), ["tensor::softmax", "tensor::log_softmax"]),
    "matmul": (matmul2, lambda r: (_r(r, 3, 4), _r(r, 4, 2)), ["tensor::matmul"]),
    "matmul_vec": (matmul_vec, lambda r: (_r(r, 3, 3), _r(r, 3), _r(r, 3)), ["tensor::matmul"]),
    "matmul_batched": (matmul_batched, lambda r: (_r(r, 2, 3, 4), _r(r, 4, 2)),
                       ["tensor::matmul"]),
    "matmul_sum": (matmul_sum, lambda r: (_r(r, 3, 4), _r(r, 4, 2), _r(r, 3, 5), _r(r, 5, 2)),
                   ["tensor::matmul_sum"]),
    "linear": (linear, lambda r: (_r(r, 2, 3, 4), _r(r, 5, 4), _r(r, 5)), ["tensor::linear"]),
    "layer_norm": (layer_norm, lambda r: (_r(r, 3, 6), _r(r, 6), _r(r, 6)),
                   ["tensor::layer_norm"]),
    "layer_norm_plain": (layer_norm_plain, lambda r: (_r(r, 3, 6),), ["tensor::layer_norm"]),
    "layer_norm_grad": (layer_norm_grad, lambda r: (_r(r, 3, 6), _r(r, 3, 6), _r(r, 6)),
                        ["tensor::layer_norm_backward"]),
    "astype": (astype, lambda r: (_r(r, 3, 4),), ["tensor::astype"]),
    "gradient_ops": (gradient_ops, lambda r: (_r(r, 3, 4), _r(r, 4)),
                     ["tensor::sum_to", "tensor::broadcast_to", "tensor::select_backward",
                      "tensor::slice_backward"]),
    "copy": (copies, lambda r: (_r(r, 3, 4),), ["tensor::copy"]),
    "contiguous": (contiguous_views, lambda r: (_r(r, 3, 4), _r(r)), ["tensor::contiguous"]),
}

TOLERANCE = {"astype": dict(eps=1e-2, rtol=1e-6, atol=1e-6)}  # linear: a big step is exact


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_matches_finite_differences(name):
    fn, make_args, _ = CASES[name]
    args = make_args(np.random.default_rng(len(name)))
    check_vjp(script(fn), args, **TOLERANCE.get(name, {}))


def test_dropout_gradient_uses_the_forward_mask():
    x = np.random.default_rng(1).standard_normal((4, 5))
    check_vjp(script(dropout), (x,), before_call=lambda: ops.manual_seed(7))


def test_every_rule_is_checked():
    from tests.passes.autodiff.test_rules_numpy import CASES as NUMPY_CASES
    from tests.script.frontend.test_index_put import CASES as WRITE_CASES
    checked = {kind for _, _, kinds in (CASES | NUMPY_CASES | WRITE_CASES).values()
               for kind in kinds}
    # their rules only refuse: test_rules_numpy and test_write_order check the refusals
    refused = {"tensor::sort", "tensor::write_into", "tensor::det_backward"}  # (2nd order)
    assert set(VJP_RULES) - checked - refused == set()


def test_non_differentiable_ops_give_no_gradient_path():
    from script.runtime.autodiff import vjp

    def f(x: Tensor) -> Tensor:
        return (x > 0.0).astype(np.float64) * 3.0 + np.floor(x) + np.sign(x)

    x = np.random.default_rng(2).standard_normal((3, 4))
    _, backward = vjp(script(f), x)
    (g,) = backward(np.ones((3, 4)))
    assert np.array_equal(g, np.zeros((3, 4)))
    assert {"tensor::gt", "tensor::floor", "tensor::sign"} <= NON_DIFFERENTIABLE


class _RecordingBuilder:
    """A stand-in for the backward builder: ops are recorded as tuples, activity is a set."""

    def __init__(self, active):
        self.active = active

    def is_active(self, v):
        return v in self.active

    def op(self, kind, *args):
        return (kind, *args)


def test_defbinary_runs_active_partials_only_and_sums_back_to_each_operand():
    from ir.core import Graph
    from ir.types import TensorType
    from passes.autodiff.rules.combinators import defbinary

    graph = Graph("f")
    x = graph.add_input(TensorType("float64", (3, 4)), "x")
    y = graph.add_input(TensorType("float64", (4,)), "y")
    node = graph.insert("tensor::add", [x, y], [TensorType("float64", (3, 4))])

    def never(b, g, n):
        raise AssertionError("the partial of an operand that takes no gradient ran")

    rule = defbinary(lambda b, g, n: ("dx", g), never)
    assert rule(_RecordingBuilder({x}), node, ["g"]) == [("dx", "g"), None]
    rule = defbinary(never, lambda b, g, n: ("dy", g))
    summed = ("tensor::sum_to", ("dy", "g"), (4,))
    assert rule(_RecordingBuilder({y}), node, ["g"]) == [None, summed]


def test_autodiff_modules_stay_small():
    """One rule module per op family under the pass-file budget (250 lines); every autodiff
    module under the module budget (600)."""
    import pathlib

    import passes.autodiff.rules as rules

    rule_dir = pathlib.Path(rules.__file__).parent
    for budget, paths in ((250, rule_dir.glob("*.py")), (600, rule_dir.parent.glob("*.py"))):
        for path in paths:
            assert len(path.read_text().splitlines()) <= budget, path.name
