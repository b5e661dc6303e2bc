"""What a user runs on a GPU, with CuPy arrays, against the same compiled code on numpy arrays:
scripted cells and layers forward and backward, the torch-style ``rnn`` modules moved with
``.cuda()``, a training step with an optimizer, an embedding and a loss, in float32 and float64.
Every test is marked ``gpu`` and skips without a CUDA device visible to CuPy."""

import numpy as np
import pytest

import rnn
from script import Module, Tensor, script, vjp
from tests.gpu.device import GPU, assert_device_equal, to_device
from tests.programs import cells

TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-11)}


pytestmark = GPU


def cp():
    import cupy
    return cupy


def move(module, device):
    """``module.cuda()`` / ``module.cpu()``."""
    return module.cuda() if device == "cuda" else module.cpu()


def close(got, want, dtype):
    """``got`` (from CuPy arrays) equals ``want`` (numpy's) within the dtype's tolerance."""
    assert_device_equal(got, want, **TOL[dtype])


def _cell(name, rng, dtype, B=5, D=7, H=9):
    f = lambda *s: (rng.standard_normal(s) * 0.5).astype(dtype)
    if name == "lstm":
        return cells.flat_lstm_cell, (f(B, D), f(B, H), f(B, H), f(4 * H, D), f(4 * H, H),
                                      f(4 * H), f(4 * H))
    if name == "milstm":
        return cells.milstm_cell, (f(B, D), f(B, H), f(B, H), f(4 * H, D), f(4 * H, H),
                                   f(4 * H), f(4 * H), f(4 * H), f(4 * H))
    if name == "gru":
        return cells.gru_cell, (f(B, D), f(B, H), f(3 * H, D), f(3 * H, H), f(3 * H), f(3 * H))
    return cells.rnn_tanh_cell, (f(B, D), f(B, H), f(H, D), f(H, H), f(H), f(H))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["lstm", "milstm", "gru", "rnn_tanh"])
def test_cells_forward_and_backward(name, dtype):
    fn, args = _cell(name, np.random.default_rng(1), dtype)
    want, want_back = vjp(script(fn), *args)
    got, back = vjp(script(fn), *to_device(args))
    close(got, want, dtype)
    rng = np.random.default_rng(2)
    cts = tuple(rng.standard_normal(w.shape).astype(dtype) for w in
                (want if isinstance(want, tuple) else (want,)))
    cts = cts if isinstance(want, tuple) else cts[0]
    close(back(to_device(cts)), want_back(cts), dtype)
    assert "prim::FusionGroup" in str(script(fn).graph_for(*to_device(args)))


@pytest.mark.parametrize("steps,B", [(6, 4), (1, 1), (5, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_layer_loop_forward_and_backward(steps, B, dtype):
    rng = np.random.default_rng(3)
    D, H = 8, 16
    f = lambda *s: (rng.standard_normal(s) * 0.5).astype(dtype)
    args = (f(steps, B, D), f(B, H), f(B, H), f(4 * H, D), f(4 * H, H), f(4 * H), f(4 * H))
    want, want_back = vjp(script(cells.lstm_layer), *args)
    got, back = vjp(script(cells.lstm_layer), *to_device(args))
    close(got, want, dtype)
    cts = (f(*want[0].shape), (f(B, H), f(B, H)))
    close(back(to_device(cts)), want_back(cts), dtype)


def _pair(make, dtype):
    """The same module twice: on numpy, and a copy of its state moved with ``.cuda()``."""
    cpu, gpu = make(), make()
    gpu.load_state_dict({k: v.copy() for k, v in cpu.state_dict().items()})
    cpu.to(dtype=dtype)
    gpu.to(dtype=dtype)
    assert move(gpu, "cuda") is gpu
    for p in gpu.parameters():
        assert isinstance(p.data, cp().ndarray)
    return cpu, gpu


MODULES = {
    "lstm": lambda: rnn.LSTM(6, 10, rng=0),
    "lstm_2l_bidir": lambda: rnn.LSTM(6, 10, num_layers=2, bidirectional=True, rng=0),
    "lstm_proj_batch_first": lambda: rnn.LSTM(6, 10, proj_size=4, batch_first=True, rng=0),
    "gru_2l": lambda: rnn.GRU(6, 10, num_layers=2, rng=0),
    "rnn_relu_bidir": lambda: rnn.RNN(6, 10, nonlinearity="relu", bidirectional=True, rng=0),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(MODULES))
def test_rnn_modules_on_cuda_equal_numpy(name, dtype):
    cpu, gpu = _pair(MODULES[name], dtype)
    x = np.random.default_rng(4).standard_normal((7, 3, 6)).astype(dtype)
    want = cpu(x)
    close(gpu(to_device(x)), want, dtype)
    # the scripted module, differentiated: outputs, input gradients and parameters' .grad
    want_out, want_back = vjp(script(cpu), x)
    got_out, back = vjp(script(gpu), to_device(x))
    close(got_out, want_out, dtype)
    rng = np.random.default_rng(5)
    cts = tuple(rng.standard_normal(w.shape).astype(dtype) if not isinstance(w, tuple) else
                tuple(rng.standard_normal(v.shape).astype(dtype) for v in w) for w in want_out)
    close(back(to_device(cts)), want_back(cts), dtype)
    for (name_c, p), (name_g, q) in zip(cpu.named_parameters(), gpu.named_parameters()):
        assert name_c == name_g
        close(q.grad, p.grad, dtype)


def test_unbatched_input_and_explicit_state():
    cpu, gpu = _pair(lambda: rnn.LSTM(6, 10, num_layers=2, rng=1), "float32")
    rng = np.random.default_rng(6)
    x = rng.standard_normal((5, 6)).astype("float32")
    h0, c0 = (rng.standard_normal((2, 10)).astype("float32") for _ in range(2))
    close(gpu(to_device(x), to_device((h0, c0))), cpu(x, (h0, c0)), "float32")


def test_cells_as_modules():
    for make in (lambda: rnn.LSTMCell(6, 10, rng=2), lambda: rnn.GRUCell(6, 10, rng=2),
                 lambda: rnn.LayerNormLSTMCell(6, 10, rng=2)):
        cpu, gpu = _pair(make, "float32")
        rng = np.random.default_rng(7)
        x = rng.standard_normal((3, 6)).astype("float32")
        h = rng.standard_normal((3, 10)).astype("float32")
        state = (h, h * 0.5) if not isinstance(cpu, rnn.GRUCell) else h
        close(script(gpu)(to_device(x), to_device(state)), script(cpu)(x, state), "float32")


class Tagger(Module):
    """An embedding, an LSTM and a linear readout; forward returns the mean cross-entropy."""

    def __init__(self):
        super().__init__()
        self.embedding = rnn.Embedding(11, 6, rng=3)
        self.lstm = rnn.LSTM(6, 10, rng=3)
        self.readout = rnn.Linear(10, 11, rng=3)

    def forward(self, tokens: Tensor, targets: Tensor) -> Tensor:
        out, _ = self.lstm(self.embedding(tokens))
        logits = self.readout(out)
        return rnn.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1))


def test_training_steps_with_adam_equal_numpy():
    """Three steps of embedding -> LSTM -> linear -> cross-entropy with Adam and gradient
    clipping: the losses and the updated parameters equal the numpy run's."""
    cpu, gpu = _pair(Tagger, "float32")
    rng = np.random.default_rng(8)
    tokens = rng.integers(0, 11, (5, 4))
    targets = rng.integers(0, 11, (5, 4))
    runs = []
    for model, move in ((cpu, lambda a: a), (gpu, to_device)):
        scripted = script(model)
        # eps well above float32 rounding: an update does not amplify a gradient that is
        # rounding noise on one device and not the other
        opt = rnn.Adam(model.parameters(), lr=0.01, eps=1e-3)
        losses = []
        for _ in range(3):
            loss, backward = vjp(scripted, move(tokens), move(targets))
            opt.zero_grad()
            backward(np.float32(1.0))
            rnn.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(float(loss))
        runs.append(losses)
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-4)
    for p, q in zip(cpu.parameters(), gpu.parameters()):
        close(q.data, p.data, "float32")


def test_module_moves_back_to_cpu():
    cpu, gpu = _pair(lambda: rnn.GRU(6, 10, rng=4), "float32")
    x = np.random.default_rng(9).standard_normal((4, 2, 6)).astype("float32")
    gpu(to_device(x))
    assert move(gpu, "cpu") is gpu
    out, h = gpu(x)
    assert isinstance(out, np.ndarray)
    want_out, want_h = cpu(x)
    np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)


def test_freeze_save_and_load_on_cuda(tmp_path):
    """A frozen model runs where its inputs are (its constants are host copies the generated
    code copies to the GPU); a saved model loads onto the GPU with ``device="cuda"``."""
    from script import freeze, load, save
    cpu, gpu = _pair(lambda: rnn.LSTM(6, 10, num_layers=2, rng=5), "float32")
    x = np.random.default_rng(10).standard_normal((5, 3, 6)).astype("float32")
    want = cpu(x)
    close(freeze(script(gpu))(to_device(x)), want, "float32")  # a module on the GPU, frozen
    close(freeze(script(cpu))(to_device(x)), want, "float32")  # a host one, called on the GPU
    for model in (cpu, gpu):
        path = tmp_path / f"lstm-{id(model)}.rns"
        save(script(model), path)
        close(load(path, device="cuda")(to_device(x)), want, "float32")


def draws(x: Tensor, p: Tensor):
    i = np.random.choice(range(p.size), p=p.ravel())
    return x + np.random.normal(x, 1.0), i, x * np.random.rand(*x.shape)


def test_random_draws_of_device_arguments_draw_numpys_numbers():
    """numpy's generator draws from host copies of device arguments (``choice(p=...)``,
    ``normal(mu, ...)``): after the same seed, the numbers the plain program draws."""
    x, p = np.arange(3.0), np.array([0.2, 0.3, 0.5])
    np.random.seed(4)
    want = draws(x, p)
    np.random.seed(4)
    got = script(draws)(to_device(x), to_device(p))
    close(got[0], want[0], "float64")
    close(got[2], want[2], "float64")
    assert int(got[1]) == int(want[1])
    after_compiled = np.random.random()
    np.random.seed(4)
    draws(x, p)
    assert after_compiled == np.random.random()  # the generator is left in the same state
