"""What a compiled module keeps between calls is refreshed when the module changes.

A call of ``rnn.LSTM`` checks the module's guards again only after ``script.module.state_version``
moved, and keeps its ``Parameter`` objects and the positions a ``vjp`` differentiates until then.
Each test calls the module (compiled, forward and ``vjp``), changes it the way a user does
(a parameter assigned anew, ``double()``, ``load_state_dict``, an attribute, ``eval()``, a
``ModuleList`` grown, a global), and checks that the next call computes what plain Python does
with the changed module and that gradients land on the parameters the module holds now.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import rnn
from rnn.checks import RNNInputError
from script import Module, ModuleList, Parameter, vjp
from script.module import state_version

SEQ, BATCH, INPUT, HIDDEN = 4, 2, 3, 5


def make(**kwargs):
    return rnn.LSTM(INPUT, HIDDEN, rng=0, dtype="float64", **kwargs)


def sample(dtype="float64", seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((SEQ, BATCH, INPUT)).astype(dtype)


def eager(model, *args):
    """The module's ``forward`` as plain Python (no compilation)."""
    return model.forward(*model.prepare_call(args, {})[0])


def assert_same_result(got, want, rtol=1e-10):
    out, (h, c) = got
    out_e, (h_e, c_e) = want
    for a, b in ((out, out_e), (h, h_e), (c, c_e)):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


def train_step(model, x):
    """A ``vjp`` of the sum of the output; the parameters' ``.grad`` afterwards."""
    model.zero_grad()
    (out, _), back = vjp(model, x, argnums=())
    back((np.ones_like(out), None))
    return {name: p.grad for name, p in model.named_parameters()}


def test_a_parameter_assigned_anew_is_read_and_gets_the_gradient():
    model, x = make(), sample()
    model(x)
    train_step(model, x)
    cell = model.rnn.layers[0].cell
    old = cell.get_parameter("weight_hh")
    new = Parameter(np.random.default_rng(5).standard_normal(old.data.shape))
    cell.weight_hh = new
    assert_same_result(model(x), eager(model, x))
    train_step(model, x)  # the front end still registers the old one: zero_grad clears it
    assert old.grad is None
    assert new.grad is not None and new.grad.shape == new.data.shape


def test_double_after_a_call_takes_effect_and_the_float32_input_is_refused():
    model = rnn.LSTM(INPUT, HIDDEN, rng=0)  # float32
    x32 = sample("float32")
    model(x32)
    train_step(model, x32)
    model.double()
    x64 = x32.astype("float64")
    got = model(x64)
    assert got[0].dtype == np.float64
    assert_same_result(got, eager(model, x64))
    grads = train_step(model, x64)
    assert all(g.dtype == np.float64 for g in grads.values())
    with pytest.raises(RNNInputError, match="dtype"):
        model(x32)


def test_load_state_dict_after_a_call_takes_effect():
    model, other, x = make(), rnn.LSTM(INPUT, HIDDEN, rng=7, dtype="float64"), sample()
    before = model(x)[0].copy()
    model.load_state_dict(other.state_dict())
    got = model(x)
    assert_same_result(got, other(x))
    assert not np.allclose(got[0], before)
    grads, want = train_step(model, x), train_step(other, x)
    for name in want:
        np.testing.assert_allclose(grads[name], want[name], rtol=1e-10, atol=1e-12)


def test_a_changed_attribute_recompiles():
    model, x = make(), sample()
    model(x)
    model.batch_first = True  # a constant of the compiled code: its guard fails
    xb = x.transpose(1, 0, 2).copy()
    got = model(xb)
    assert got[0].shape == (BATCH, SEQ, HIDDEN)
    assert_same_result(got, eager(model, xb))


def test_eval_after_training_calls_drops_dropout():
    model = rnn.LSTM(INPUT, HIDDEN, num_layers=2, dropout=0.9, rng=0, dtype="float64")
    x = sample()
    model(x)
    model.eval()
    assert_same_result(model(x), model(x))  # no dropout: the same output twice
    assert_same_result(model(x), eager(model, x))


def test_a_state_change_moves_the_version():
    model = make()
    seen = state_version()
    model.hidden_size = model.hidden_size
    assert state_version() != seen
    seen = state_version()
    model.train()
    assert state_version() != seen
    seen = state_version()
    model(sample())
    model.zero_grad()
    assert state_version() == seen  # calls and training steps do not count as changes


class Scaled(Module):
    """Sums the outputs of its layers, times a global."""

    def __init__(self, layers):
        super().__init__()
        self.layers = ModuleList(layers)

    def forward(self, x):
        y = x * 0.0
        for layer in self.layers:
            y = y + layer(x)
        return y * SCALE


class Affine(Module):
    def __init__(self, w):
        super().__init__()
        self.w = Parameter(np.asarray(w, dtype="float64"))

    def forward(self, x):
        return x * self.w


SCALE = 1.0


class CompiledScaled(rnn.compiled.CompiledModule, Scaled):
    """``Scaled`` compiled on first call, as the ``rnn`` modules are."""


def test_a_grown_module_list_and_a_changed_global_recompile():
    global SCALE
    first, extra, other = Affine(2.0), Affine(3.0), Affine(-1.0)  # made first: making one
    model = CompiledScaled([first])  # counts as a change (its parameter is assigned)
    x = np.arange(3.0)
    for _ in range(2):  # the second call finds the guards held (their state kept)
        np.testing.assert_allclose(model(x), 2.0 * x)
    model.layers.append(extra)
    for _ in range(2):
        np.testing.assert_allclose(model(x), 5.0 * x)
    model.layers[0] = other
    for _ in range(2):
        np.testing.assert_allclose(model(x), 2.0 * x)
    SCALE = 10.0  # a global is checked at every call, not only after a module changed
    try:
        np.testing.assert_allclose(model(x), 20.0 * x)
    finally:
        SCALE = 1.0
    np.testing.assert_allclose(model(x), 2.0 * x)


class Shifted(rnn.compiled.CompiledModule):
    """``x * w + b`` with ``b`` a plain array (no gradient) until it is made a parameter."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(np.asarray(2.0))
        self.b = np.ones(3)

    def forward(self, x):
        return x * self.w + self.b


def test_an_array_attribute_made_a_parameter_gets_its_gradient():
    model, x = Shifted(), np.arange(3.0)
    for _ in range(2):
        y, back = vjp(model, x, argnums=())
        back(np.ones(3))
    np.testing.assert_allclose(model.get_parameter("w").grad, 2 * x.sum())
    model.zero_grad()
    model.b = Parameter(np.array([1.0, 2.0, 3.0]))
    y, back = vjp(model, x, argnums=())
    np.testing.assert_allclose(y, 2.0 * x + [1.0, 2.0, 3.0])
    back(np.ones(3))
    np.testing.assert_allclose(model.get_parameter("b").grad, np.ones(3))


def test_parameters_modules_and_zero_grad_follow_the_module_tree():
    model = make()
    before = list(model.parameters())
    model.zero_grad()
    cell = model.rnn.layers[0].cell
    extra = Parameter(np.ones(2))
    cell.extra = extra
    assert list(model.parameters()) == [*before, extra]
    extra.grad = np.ones(2)
    model.zero_grad()
    assert extra.grad is None
    del cell.extra
    assert list(model.parameters()) == before
    outer = Scaled([Affine(1.0)])
    assert len(list(outer.modules())) == 3  # Scaled, the ModuleList, one Affine
    added = Affine(2.0)
    outer.layers.append(added)
    assert list(outer.modules())[-1] is added
    assert list(outer.parameters())[-1] is added.get_parameter("w")
    assert next(copy.copy(outer).modules()) is not outer  # a shallow copy walks from itself
