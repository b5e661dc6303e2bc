"""A loop that writes a preallocated array row by row and reads the previous row back
(Karpathy's batched LSTM's ``Hout[t] = ...`` after ``prevh = Hout[t - 1]``): its gradient costs a
row a step, not the whole array (``slot-adds``; ``inplace-writes`` copying the row a later reader
keeps instead of the array), with the values of the list-and-stack form."""

from __future__ import annotations

import numpy as np
import pytest

from script import script, vjp
from tests.gradcheck import check_vjp


def prealloc(X: np.ndarray, W: np.ndarray, h0: np.ndarray):
    n, b, _ = X.shape
    d = W.shape[1]
    H = np.zeros((n, b, d))
    for t in range(n):
        prevh = H[t - 1] if t > 0 else h0
        H[t] = np.tanh(X[t] + prevh.dot(W))
    return H


def listed(X: np.ndarray, W: np.ndarray, h0: np.ndarray):
    hs = []
    h = h0
    for t in range(X.shape[0]):
        h = np.tanh(X[t] + h.dot(W))
        hs.append(h)
    return np.stack(hs)


def _args(n, b=3, d=4, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, b, d)), rng.standard_normal((d, d)) * 0.4,
            rng.standard_normal((b, d)))


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_gradients_equal_the_list_forms_and_finite_differences(n):
    args = _args(n)
    out, back = vjp(script(prealloc), *args)
    want_out, want_back = vjp(script(listed), *args)
    ct = np.random.default_rng(1).standard_normal(out.shape)
    np.testing.assert_allclose(out, prealloc(*args), rtol=1e-12)
    for got, want in zip(back(ct), want_back(ct)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    if n <= 7:
        check_vjp(script(prealloc), args)


def test_both_loops_write_the_buffer_in_place():
    f = script(prealloc)
    forward, backward = f.vjp_graphs_for(*_args(40))
    for graph in (forward, backward):
        loop, = [m for m in graph.walk() if m.kind == "prim::Loop"]
        kinds = [m.kind for m in loop.blocks[0].walk()]
        assert "tensor::select_put" not in kinds  # no copy of the (40, 3, 4) array a step
        assert "tensor::select_put_" in kinds
        assert "tensor::select_backward" not in kinds and "tensor::zeros" not in kinds


def cached(X: np.ndarray, W: np.ndarray, h0: np.ndarray):
    # Karpathy's LSTM's return: the buffers in a cache dict beside the outputs
    n, b, _ = X.shape
    H = np.zeros((n, b, W.shape[1]))
    for t in range(n):
        prevh = H[t - 1] if t > 0 else h0
        H[t] = np.tanh(X[t] + prevh.dot(W))
    cache = {}
    cache["H"] = H
    cache["h0"] = h0
    return H[n - 1], cache


def test_a_buffer_returned_in_a_dict_keeps_its_gradients_shape():
    # the dict's cotangent joins every key's shape: read back for a key, it has that key's
    args = _args(9)
    f = script(cached)
    backward = f.vjp_graphs_for(*args)[1]
    loop, = [m for m in backward.walk() if m.kind == "prim::Loop"]
    assert all(p.type.shape is not None and None not in p.type.shape
               for p in loop.blocks[0].params[1:])
    assert "tensor::select_backward" not in [m.kind for m in loop.blocks[0].walk()]
    rng = np.random.default_rng(3)
    ct = rng.standard_normal((3, 4))
    _, back = vjp(f, *args)
    got = back((ct, {}))
    for k, a in enumerate(args):
        want = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            up, down = [x.copy() for x in args], [x.copy() for x in args]
            up[k][idx] += 1e-6
            down[k][idx] -= 1e-6
            want[idx] = (np.sum(cached(*up)[0] * ct) - np.sum(cached(*down)[0] * ct)) / 2e-6
        np.testing.assert_allclose(got[k], want, rtol=1e-6, atol=1e-8)


def rebound_key(h0: np.ndarray):
    c = {}
    c["x"] = np.sum(h0, axis=0, keepdims=True)  # (1, d)
    y = c["x"] * h0  # the (1, d) value read
    c["x"] = h0 * 2.0  # then the key given a (B, d) value
    return y, c


def test_a_key_given_a_value_of_another_shape_keeps_its_cotangent_unshaped():
    # the key's cotangent restarts at zeros of the new value's shape: read back for the old
    # value it is not that value's shape, so it is not made so
    h0 = np.random.default_rng(0).standard_normal((3, 4))
    _, back = vjp(script(rebound_key), h0)
    got = back((np.ones((3, 4)), {"x": np.ones((3, 4))}))[0]
    want = 2 * np.sum(h0, axis=0, keepdims=True) + 2.0 + 0 * h0
    np.testing.assert_allclose(got, want, rtol=1e-12)
