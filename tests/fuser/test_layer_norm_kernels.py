"""Layer norm's native row kernels (``fuser.cpu.rowkernels``): forward and backward equal the eager
numpy formula for every shape and layout; scripted layer norms run them and their gradients equal
finite differences; the layer-norm LSTM layer compiled equals eager, forward and backward."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.fastrnns import cells
from benchmarks.fastrnns.factory import Sizes, layernorm_weights, rnn_inputs
from fuser.cpu import rowkernels
from script import Tensor, ops, script, vjp
from script.runtime.autodiff import compile_gradient
from tests.gradcheck import check_vjp

TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-12, atol=1e-12)}
SHAPES = [(1, 1), (1, 7), (5, 1), (3, 7), (4, 64), (2, 3, 5), (3, 129), (2, 2, 2, 33), (11,),
          (6, 300)]


class Fallback:
    """An eager implementation that records that it ran."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fn(*args)


def reference_forward(a, weight, bias, eps):
    centred = a - a.mean(-1, keepdims=True)
    y = centred / np.sqrt((centred * centred).mean(-1, keepdims=True) + eps)
    y = y if weight is None else y * weight
    return y if bias is None else y + bias


def reference_backward(g, a, weight, eps):
    """Written independently of ``ops.layer_norm_backward``: the Jacobian of each row applied to
    its cotangent, in float64."""
    a, g = a.astype(np.float64), g.astype(np.float64)
    n = a.shape[-1]
    x2, g2 = a.reshape(-1, n), g.reshape(-1, n)
    w = np.ones(n) if weight is None else weight.astype(np.float64).reshape(n)
    da = np.empty_like(x2)
    for r in range(len(x2)):
        c = x2[r] - x2[r].mean()
        s = np.sqrt((c * c).mean() + eps)
        xhat = c / s
        jac = (np.eye(n) - 1.0 / n - np.outer(xhat, xhat) / n) / s  # d xhat_i / d x_j
        da[r] = jac.T @ (g2[r] * w)
    xhat = (x2 - x2.mean(-1, keepdims=True)) / np.sqrt(x2.var(-1, keepdims=True) + eps)
    return da.reshape(a.shape), (g2 * xhat).sum(0), g2.sum(0)


def arrays(rng, shape, dtype):
    a = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = rng.standard_normal(shape[-1]).astype(dtype)
    b = rng.standard_normal(shape[-1]).astype(dtype)
    return a, w, b


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
def test_forward_kernel_equals_the_eager_formula(dtype, shape, affine):
    rng = np.random.default_rng(len(shape) * 7 + shape[-1])
    a, w, b = arrays(rng, shape, dtype)
    w = w if affine in ("weight", "both") else None
    b = b if affine in ("bias", "both") else None
    fallback = Fallback(ops.layer_norm)
    kernel = rowkernels.layer_norm_forward(dtype, w is not None, b is not None, fallback)
    got = kernel(a, w, b, 1e-5)
    assert fallback.calls == 0, "the native kernel rejected a contiguous array"
    assert got.dtype == np.dtype(dtype) and got.shape == a.shape
    np.testing.assert_allclose(got, reference_forward(a, w, b, 1e-5), **TOL[dtype])
    np.testing.assert_allclose(got, ops.layer_norm(a, w, b, 1e-5), **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("with_weight", [False, True])
def test_backward_kernel_equals_the_row_jacobian(dtype, shape, with_weight):
    rng = np.random.default_rng(len(shape) * 5 + shape[-1])
    a, w, _ = arrays(rng, shape, dtype)
    g = rng.standard_normal(shape).astype(dtype)
    w = w if with_weight else None
    fallback = Fallback(ops.layer_norm_backward)
    kernel = rowkernels.layer_norm_backward(dtype, with_weight, fallback)
    got = kernel(g, a, w, 1e-5)
    assert fallback.calls == 0
    want = reference_backward(g, a, w, 1e-5)
    eager = ops.layer_norm_backward(g, a, w, 1e-5)
    tol = TOL[dtype] if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    for name, x, y, z in zip(("da", "dweight", "dbias"), got, want, eager):
        assert x.dtype == np.dtype(dtype) and x.shape == y.shape, name
        np.testing.assert_allclose(x, y, err_msg=name, **tol)
        np.testing.assert_allclose(z, y, err_msg=f"eager {name}", **tol)


def test_kernels_take_non_contiguous_inputs():
    rng = np.random.default_rng(3)
    base, w, b = arrays(rng, (6, 16), "float64")
    fallback = Fallback(ops.layer_norm)
    forward = rowkernels.layer_norm_forward("float64", True, True, fallback)
    views = [base[:, ::2], base.T.copy().T, np.asfortranarray(base), base[::2], base[:, 3:11]]
    for a in views:
        ww, bb = w[:a.shape[-1]], b[:a.shape[-1]]
        np.testing.assert_allclose(forward(a, ww, bb, 1e-5), reference_forward(a, ww, bb, 1e-5),
                                   rtol=1e-12, atol=1e-12)
    strided_weight = np.repeat(w, 2)[::2]
    np.testing.assert_allclose(forward(base, strided_weight, b, 1e-5),
                               reference_forward(base, w, b, 1e-5), rtol=1e-12, atol=1e-12)
    assert fallback.calls == 0  # copies, not the eager op
    backward = rowkernels.layer_norm_backward("float64", True, Fallback(ops.layer_norm_backward))
    g = rng.standard_normal((16, 6)).T
    for got, want in zip(backward(g, base[:, ::-1], w, 1e-5),
                         reference_backward(g, base[:, ::-1], w, 1e-5)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_kernels_leave_what_they_do_not_handle_to_the_eager_op():
    a = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    w32 = np.ones(4, np.float32)
    cases = [
        (a, w32.astype(np.float64), None),  # promotes to float64
        (a.astype(np.float64), w32, None),  # another dtype than the kernel's
        (a, np.ones((3, 4), np.float32), None),  # a weight per element
        (a, np.ones((2, 3, 4), np.float32), None),  # a weight that adds an axis
        (np.zeros((0, 4), np.float32), w32, None),  # empty
    ]
    for x, w, b in cases:
        fallback = Fallback(ops.layer_norm)
        got = rowkernels.layer_norm_forward("float32", True, False, fallback)(x, w, b, 1e-5)
        assert fallback.calls == 1
        np.testing.assert_allclose(got, ops.layer_norm(x, w, b, 1e-5))
    fallback = Fallback(ops.layer_norm)
    with pytest.raises(ValueError):  # 0-d: the eager op's error
        rowkernels.layer_norm_forward("float32", False, False, fallback)(
            np.float32(2.0) * np.ones((), np.float32), None, None, 1e-5)
    backward = Fallback(ops.layer_norm_backward)
    with pytest.raises(ValueError):  # a cotangent of another shape: the eager op's error
        rowkernels.layer_norm_backward("float32", False, backward)(a[:2], a, None, 1e-5)
    assert backward.calls == 1


def test_eps_is_used():
    a = np.array([[1.0, 2.0, 3.0, 4.0]])
    kernel = rowkernels.layer_norm_forward("float64", False, False, ops.layer_norm)
    np.testing.assert_allclose(kernel(a, None, None, 10.0), reference_forward(a, None, None, 10.0),
                               rtol=1e-13)
    np.testing.assert_allclose(kernel(a, None, None, 0), reference_forward(a, None, None, 0.0),
                               rtol=1e-13)


# -- scripted -------------------------------------------------------------------------------------
def affine_norm(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return np.tanh(ops.layer_norm(x * 2.0, w, b)) * x


def plain_norm(x: Tensor) -> Tensor:
    return ops.layer_norm(x, None, None, 1e-3) * 3.0


def weight_norm(x: Tensor, w: Tensor) -> Tensor:
    return ops.layer_norm(x, w)


def broadcast_norm(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return ops.layer_norm(x, w, b)


def test_compiled_code_calls_the_row_kernels():
    rng = np.random.default_rng(5)
    args = arrays(rng, (3, 6), "float32")
    sf = script(affine_norm)
    assert "_layer_norm(" in sf.code_for(*args)
    np.testing.assert_allclose(sf(*args), sf.python_fn(*args), rtol=1e-5, atol=1e-5)
    args64 = arrays(rng, (3, 6), "float64")
    out, backward = vjp(sf, *args64)
    np.testing.assert_allclose(out, sf.python_fn(*args64), rtol=1e-12, atol=1e-12)
    grads = backward(np.ones_like(out))
    assert all(g is not None and g.shape == a.shape for g, a in zip(grads, args64))


@pytest.mark.parametrize("fn, shapes", [
    (affine_norm, [(3, 6), (6,), (6,)]),
    (affine_norm, [(2, 3, 5), (5,), (5,)]),
    (plain_norm, [(4, 5)]),
    (plain_norm, [(1, 1)]),
    (weight_norm, [(3, 4), (1, 4)]),
    (weight_norm, [(3, 4), (3, 4)]),  # a weight per element: the general path
    (broadcast_norm, [(1, 4), (3, 4), (4,)]),  # the weight adds rows to the input
    (broadcast_norm, [(3, 4), (1,), (1, 1)]),  # scalar-like weight and bias
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_gradients_equal_finite_differences(fn, shapes):
    rng = np.random.default_rng(len(shapes) + shapes[0][-1])
    args = tuple(rng.standard_normal(s) for s in shapes)
    check_vjp(script(fn), args, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("sizes", [Sizes(seq_length=6, mini_batch=3, input_size=5, hidden_size=7),
                                   Sizes(seq_length=4, mini_batch=8, input_size=64,
                                         hidden_size=64)], ids=["odd", "small"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_lstm_compiled_equals_eager(sizes, dtype):
    inp = rnn_inputs(sizes)
    args = tuple(np.asarray(a, dtype) for a in
                 (inp.x, inp.hx[0], inp.cx[0], *layernorm_weights(inp)[0]))
    sf = script(cells.layernorm_lstm_layer)
    tol = TOL[dtype] if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    backward_source = compile_gradient(sf, args).backward.__rnnscript_source__
    assert backward_source.count("_layer_norm_backward") >= 3  # the native kernels run
    outs, backward = vjp(sf, *args)
    want = sf.python_fn(*args)
    for got, ref in zip(outs, want):
        np.testing.assert_allclose(got, ref, **tol)
    rng = np.random.default_rng(0)
    ct = tuple(rng.standard_normal(o.shape).astype(dtype) for o in outs)
    grads = backward(ct)
    with_eager = _eager_gradients(args, ct)
    for k, (got, ref) in enumerate(zip(grads, with_eager)):
        np.testing.assert_allclose(got, ref, err_msg=f"argument {k}",
                                   rtol=tol["rtol"] * 10, atol=tol["atol"] * 10)


def _eager_gradients(args, ct):
    """The gradients through the same layer with every layer norm and its gradient run by the
    eager numpy ops (the unoptimized backward never calls the row kernels for float64 either:
    the generated code is the same, so patch the kernels out instead)."""
    import script.runtime.codegen as codegen
    saved = dict(codegen.STRUCTURE_WRITERS)
    codegen.STRUCTURE_WRITERS.pop("tensor::layer_norm")
    codegen.STRUCTURE_WRITERS.pop("tensor::layer_norm_backward")
    try:
        sf = script(cells.layernorm_lstm_layer)
        assert "_layer_norm" not in sf.code_for(*args)
        _, backward = vjp(sf, *args)
        return backward(ct)
    finally:
        codegen.STRUCTURE_WRITERS.clear()
        codegen.STRUCTURE_WRITERS.update(saved)


def cubed_norm(x: Tensor, w: Tensor) -> Tensor:
    return np.sum(ops.layer_norm(x, w) ** 3)


def test_second_derivatives_equal_finite_differences_of_the_gradient():
    from script.runtime.gradients import grad

    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((3, 5)), rng.standard_normal(5)
    first = grad(cubed_norm, argnums=(0, 1))
    out, backward = vjp(first, x, w)
    ct = tuple(rng.standard_normal(o.shape) for o in out)
    got = backward(ct)
    for k, arg in enumerate((x, w)):
        want = np.zeros_like(arg)
        for idx in np.ndindex(arg.shape):
            up, down = [x.copy(), w.copy()], [x.copy(), w.copy()]
            up[k][idx] += 1e-6
            down[k][idx] -= 1e-6
            want[idx] = sum(np.sum(c * (p - m)) for c, p, m in
                            zip(ct, first(*up), first(*down))) / 2e-6
        np.testing.assert_allclose(got[k], want, rtol=1e-5, atol=1e-6, err_msg=f"argument {k}")
