"""Layout rewrites for speed: the scripted code copies loop-invariant transposed weights to
contiguous storage once, before the loop, and still computes what plain Python computes."""

from typing import List

import numpy as np
import pytest

import passes
from script import Tensor, ops, script, vjp
from tests.programs import cells
from tests.programs.cell_inputs import cell_args


def _layer_args(rng, seq=6, batch=3, inp=5, hid=4):
    return cell_args("lstm_layer", rng, np.float32, batch, inp, hid, seq=seq)


def test_lstm_layer_multiplies_by_a_contiguous_copy_made_before_the_loop():
    args = _layer_args(np.random.default_rng(0))
    f = script(cells.lstm_layer)
    code = f.code_for(*args)
    before, body = code.split("for ", 1)
    copy = next(line for line in before.splitlines() if "ops.contiguous(" in line)
    name = copy.split("=")[0].strip()
    assert f", {name})" in body, code  # np.dot(hx, <the copy>)
    assert "ops.contiguous(" not in body and "ops.transpose(" not in body


def test_lstm_layer_with_contiguous_weights_equals_python():
    args = _layer_args(np.random.default_rng(1))
    got_y, (got_h, got_c) = script(cells.lstm_layer)(*args)
    want_y, (want_h, want_c) = cells.lstm_layer(*args)
    for got, want in ((got_y, want_y), (got_h, want_h), (got_c, want_c)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_lstm_layer_gradients_are_unchanged_by_the_copy():
    args = _layer_args(np.random.default_rng(2))
    f = script(cells.lstm_layer)
    (y, (h, c)), backward = vjp(f, *args)
    ct = (np.ones_like(y), (np.ones_like(h), np.ones_like(c)))
    got = backward(ct)
    with passes.disable("contiguous-weights"):
        g = script(cells.lstm_layer)
        _, plain_backward = vjp(g, *args)
        want = plain_backward(ct)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def recurrence_returning_the_transpose(x: Tensor, h: Tensor, w: Tensor):
    wt = w.T
    for t in range(x.shape[0]):
        h = np.tanh(x[t] + h @ wt)
    return h, wt


def test_the_transposed_view_returned_beside_the_loop_keeps_its_values():
    rng = np.random.default_rng(3)
    x, h, w = (rng.standard_normal(s).astype(np.float32) for s in ((40, 2, 4), (2, 4), (4, 4)))
    f = script(recurrence_returning_the_transpose)
    got_h, got_wt = f(x, h, w)
    want_h, want_wt = recurrence_returning_the_transpose(x, h, w)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got_wt, want_wt)
    assert "ops.contiguous(" in f.code_for(x, h, w)


def stacked_steps(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
    outs: List[Tensor] = []
    for t in range(x.shape[0]):
        h = h @ w.T + x[t]
        outs.append(h)
    return ops.stack(outs, 0)


def test_a_step_index_out_of_range_still_raises():
    def read_step(x: Tensor, t: int) -> Tensor:
        return x[t]

    x = np.zeros((3, 2), np.float32)
    f = script(read_step)
    np.testing.assert_array_equal(f(x, -1), x[-1])
    with pytest.raises(IndexError):
        f(x, 3)


def test_contiguous_copies_a_view_and_keeps_a_contiguous_array():
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    copy = ops.contiguous(w.T)
    assert copy.flags.c_contiguous
    np.testing.assert_array_equal(copy, w.T)
    assert ops.contiguous(w) is w


def test_stacked_recurrence_equals_python():
    rng = np.random.default_rng(4)
    x, h, w = (rng.standard_normal(s).astype(np.float32) for s in ((7, 3, 4), (3, 4), (4, 4)))
    np.testing.assert_allclose(script(stacked_steps)(x, h, w), stacked_steps(x, h, w),
                               rtol=1e-5, atol=1e-6)


def products(a: Tensor, b: Tensor, batch: Tensor, v: Tensor):
    for _ in range(3):
        a = a @ b
        batch = batch @ b
        v = v @ b
    return a, batch, v, a @ b


def test_matrix_vector_and_batched_products_in_a_loop_equal_python():
    rng = np.random.default_rng(5)
    a, b, batch, v = (rng.standard_normal(s).astype(np.float32)
                      for s in ((3, 4), (4, 4), (2, 3, 4), (4,)))
    f = script(products)
    with passes.disable("unroll"):
        code = f.code_for(a, b, batch, v)
        got = f(a, b, batch, v)
    assert "np.dot(a_1, b)" in code, code  # the matrix product in the loop
    for g, want in zip(got, products(a, b, batch, v)):
        assert g.shape == want.shape
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def joined(a: Tensor, b: Tensor):
    return ops.cat([a, b], 1), ops.cat([a, b])


def test_cat_equals_numpy_along_either_axis():
    rng = np.random.default_rng(6)
    a, b = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
    wide, tall = script(joined)(a, b)
    np.testing.assert_array_equal(wide, np.concatenate([a, b], 1))
    np.testing.assert_array_equal(tall, np.concatenate([a, b], 0))


def test_contiguous_is_numpys_ascontiguousarray():
    from script import ops
    scalar = np.array(2.5)
    assert ops.contiguous(scalar).shape == np.ascontiguousarray(scalar).shape == (1,)
    view = np.arange(6.0).reshape(2, 3).T
    out = ops.contiguous(view)
    assert out.flags.c_contiguous and out.shape == (3, 2)
    np.testing.assert_array_equal(out, view)


def test_folded_constants_are_contiguous_and_keep_their_rank():
    import ir
    from passes import constant_prop
    from script.runtime import pipelines
    pipelines.register()  # the runtime's evaluator (the test ran alone found none)
    g = ir.Graph()
    c = g.constant(np.arange(6.0).reshape(2, 3))
    n = g.insert("tensor::transpose", [c, g.constant(None)], [ir.TensorType("float64", (3, 2))])
    g.add_output(n.output)
    constant_prop.run(g)
    (out,) = g.outputs
    assert out.is_constant and out.constant.flags.c_contiguous
    np.testing.assert_array_equal(out.constant, np.arange(6.0).reshape(2, 3).T)
    assert constant_prop._contiguous(np.array(3.0)).shape == ()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64", "bool"])
@pytest.mark.parametrize("shape", [(2048, 512), (512, 2048), (100, 127), (8192, 2), (2, 8192)])
def test_a_large_transposed_matrix_is_copied_in_blocks_to_numpys_values(shape, dtype,
                                                                        monkeypatch):
    from script.ops import _impl_layout
    blocked = []
    copy = _impl_layout._transposed_copy
    monkeypatch.setattr(_impl_layout, "_transposed_copy", lambda a: blocked.append(a) or copy(a))
    rng = np.random.default_rng(7)
    w = (rng.standard_normal(shape[::-1]) * 100).astype(dtype)
    view = w.T
    assert view.flags.f_contiguous and view.size >= _impl_layout.TRANSPOSE_BLOCKED_MIN \
        or shape == (100, 127)
    out = ops.contiguous(view)
    assert out.flags.c_contiguous and out.shape == shape and out.dtype == view.dtype
    assert not np.shares_memory(out, w)
    np.testing.assert_array_equal(out, np.ascontiguousarray(view))
    assert len(blocked) == (shape != (100, 127))
    strided = w[:, ::2].T  # neither C- nor F-ordered: numpy's own copy
    np.testing.assert_array_equal(ops.contiguous(strided), np.ascontiguousarray(strided))
