"""``Module.to`` / ``float`` / ``double`` / ``half`` / ``cpu``: parameters (data and gradient)
and array attributes converted in place as torch does, the ``Parameter`` objects kept, compiled
modules re-specialized on the new dtype; values equal the eager (numpy) run and torch's."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np
import pytest

import rnn
from rnn.checks import RNNInputError
from script import Module, Parameter, Tensor, script

SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 6


def _x(dtype="float32"):
    return np.random.default_rng(1).standard_normal((SEQ, BATCH, INPUT)).astype(dtype)


class Scaled(Module):
    def __init__(self):
        super().__init__()
        self.w = Parameter(np.ones((INPUT, HIDDEN), "float32"))
        self.scale = np.full(HIDDEN, 0.5, "float32")
        self.index = np.arange(3)

    def forward(self, x: Tensor) -> Tensor:
        return np.tanh(x @ self.w) * self.scale + 1.0


def test_double_converts_in_place_and_keeps_parameters():
    m = Scaled()
    param = m._parameters["w"]
    param.grad = np.ones((INPUT, HIDDEN), "float32")
    assert m.double() is m
    assert m._parameters["w"] is param
    assert param.data.dtype == np.float64 and param.grad.dtype == np.float64
    assert m.scale.dtype == np.float64
    assert m.index.dtype == np.int64  # not floating point: unchanged, as torch
    assert m.half().w.dtype == np.float16 and m.float().w.dtype == np.float32


def test_to_arguments_as_torch():
    m = Scaled()
    assert m.to("cpu", np.float64).w.dtype == np.float64
    assert m.to(dtype="float32").w.dtype == np.float32
    assert m.to("cpu").w.dtype == np.float32
    with pytest.raises(TypeError, match="floating-point"):
        m.to("int32")
    with pytest.raises(ValueError, match="unknown device"):
        m.to(device="tpu")
    with pytest.raises(ValueError, match="unknown device"):
        m.to("cuda:first")
    with pytest.raises(TypeError, match="neither a device"):
        m.to("gpu")


def _fake_cupy(devices):
    def count():
        if isinstance(devices, Exception):
            raise devices
        return devices
    return SimpleNamespace(cuda=SimpleNamespace(runtime=SimpleNamespace(getDeviceCount=count)))


@pytest.mark.parametrize("cupy, device, message", [
    (None, "cuda", r"to\('cuda'\): moving a module to a GPU needs CuPy and a CUDA device "
                   r"\((ModuleNotFoundError|ImportError)"),
    (RuntimeError("no CUDA driver"), "cuda", r"needs CuPy and a CUDA device \(RuntimeError: "
                                             "no CUDA driver"),
    (0, "cuda", "there is no CUDA device 0 \\(0 found\\)"),
    (1, "cuda:1", "there is no CUDA device 1 \\(1 found\\)"),
], ids=["no_cupy", "no_driver", "no_gpu", "no_such_gpu"])
def test_to_cuda_without_a_gpu_is_a_clear_error_and_moves_nothing(monkeypatch, cupy, device,
                                                                   message):
    m = rnn.LSTM(INPUT, HIDDEN, rng=0)
    x = _x()
    expected = m(x)[0]
    weight = next(iter(m.parameters()))
    weight.grad = np.zeros_like(weight.data)
    with monkeypatch.context() as patched:
        patched.setitem(sys.modules, "cupy", cupy if cupy is None else _fake_cupy(cupy))
        for move in (lambda: m.to(device), lambda: m.to(device, np.float64),
                     lambda: m.cuda(None if device == "cuda" else 1)):
            with pytest.raises(RuntimeError, match=message):
                move()
    assert all(type(p.data) is np.ndarray and p.data.dtype == np.float32
               for p in m.parameters())
    assert type(weight.grad) is np.ndarray
    np.testing.assert_array_equal(m(x)[0], expected)


def test_script_module_re_specializes_on_the_new_dtype():
    m = script(Scaled())
    x = _x()[0]
    assert m(x).dtype == np.float32
    m.double()
    out = m(x.astype("float64"))
    assert out.dtype == np.float64
    assert "Double(" in str(m.graph_for(x.astype("float64")))
    np.testing.assert_allclose(out, m.python_module.forward(x.astype("float64")), rtol=1e-12)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_rnn_front_end_double_and_half(mode):
    m = getattr(rnn, mode)(INPUT, HIDDEN, num_layers=2, bidirectional=True, rng=0)
    x = _x()
    out32 = m(x)[0]
    m.double()
    out64 = m(x.astype("float64"))[0]
    assert out64.dtype == np.float64
    np.testing.assert_allclose(out64, m.forward(x.astype("float64"))[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out64, out32, rtol=1e-4, atol=1e-5)
    with pytest.raises(RNNInputError, match="float32.*float64|float64.*float32"):
        m(x)  # torch refuses a float32 input into a float64 model, and so do we
    m.half()
    out16 = m(x.astype("float16"))[0]
    assert out16.dtype == np.float16
    np.testing.assert_allclose(out16.astype("float64"), out64, atol=5e-3)
    assert m.float()(x)[0].dtype == np.float32


def test_double_equals_torch():
    torch = pytest.importorskip("torch")
    t = torch.nn.LSTM(INPUT, HIDDEN, num_layers=2).double()
    m = rnn.LSTM(INPUT, HIDDEN, num_layers=2)
    m(_x())  # compiled in float32 first
    m.double()
    m.load_state_dict({k: v.detach().numpy().copy() for k, v in t.state_dict().items()})
    x = _x("float64")
    out, (h, c) = m(x)
    t_out, (t_h, t_c) = t(torch.tensor(x))
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(c, t_c.detach().numpy(), rtol=1e-10, atol=1e-12)
