"""ONNX's own reference LSTM and GRU (``onnx.reference.ops.op_lstm`` / ``op_gru``, Apache
License 2.0, the installed ``onnx`` package's code, not a copy): ``script(op._run)`` of the
operator object a user builds from a node, as written: an unannotated method taking arrays
with None defaults, ``np.split`` of the weights, directions in a loop over ``range(num_
directions)``, ``if layout == 1:`` of an unannotated ``layout=None``. Values against the
reference itself in float64 and float32, gradients against finite differences."""

import numpy as np
import pytest

from script import script, vjp

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx.reference.ops.op_gru import GRU  # noqa: E402
from onnx.reference.ops.op_lstm import LSTM  # noqa: E402

RUN_PARAMS = {"log": lambda *a: None, "opsets": {"": 21}, "new_ops": None, "verbose": 0}
GATES = {"LSTM": 4, "GRU": 3}


def operator(op_type, direction, hidden, **attrs):
    node = helper.make_node(op_type, ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=hidden,
                            direction=direction, **attrs)
    return (LSTM if op_type == "LSTM" else GRU)(node, RUN_PARAMS)


def arguments(op_type, direction, dtype, T=5, B=3, D=4, H=6, seed=0):
    rng = np.random.default_rng(seed)
    nd, n = (2 if direction == "bidirectional" else 1), GATES[op_type]
    return tuple(a.astype(dtype) for a in (
        rng.standard_normal((T, B, D)), 0.5 * rng.standard_normal((nd, n * H, D)),
        0.5 * rng.standard_normal((nd, n * H, H)), rng.standard_normal((nd, 2 * n * H))))


@pytest.mark.parametrize("op_type", ["LSTM", "GRU"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_onnx_reference_rnn_equals_the_reference(op_type, direction, dtype, tol):
    op = operator(op_type, direction, 6)
    args = arguments(op_type, direction, dtype)
    want, got = op._run(*args), script(op._run)(*args)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("op_type", ["LSTM", "GRU"])
def test_onnx_reference_rnn_gradients_equal_finite_differences(op_type):
    op = operator(op_type, "bidirectional", 3)
    args = arguments(op_type, "bidirectional", np.float64, T=3, B=2, D=2, H=3, seed=1)
    out, backward = vjp(script(op._run), *args)
    rng = np.random.default_rng(2)
    cts = tuple(rng.standard_normal(o.shape) for o in out)
    grads = backward(cts)

    def loss(*a):
        return sum(float(np.sum(o * c)) for o, c in zip(op._run(*a), cts))

    eps = 1e-6
    for k, (x, g) in enumerate(zip(args, grads)):
        for index in np.ndindex(x.shape):  # every entry (the arrays are small)
            up, down = [a.copy() for a in args], [a.copy() for a in args]
            up[k][index] += eps
            down[k][index] -= eps
            want = (loss(*up) - loss(*down)) / (2 * eps)
            assert abs(g[index] - want) <= 1e-6 * max(1.0, abs(want)), (k, index)
