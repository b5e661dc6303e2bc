"""Modules, parameters and ScriptModules: the custom_lstms family compiles and matches its eager
output; parameters are shared with the original module; train/eval recompiles; bad modules get
ScriptErrors that point at the source."""

from typing import Final, List

import numpy as np
import pytest

from script import Module, ModuleList, Parameter, ScriptError, Tensor, ops, script
from tests.programs import custom_lstms as cl

SEQ, BATCH, INPUT, HIDDEN, LAYERS = 5, 2, 3, 7, 4
TOLERANCE = {"float64": 1e-6, "float32": 1e-5}


def assert_close(got, want, dtype="float64"):
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w, dtype)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def inputs(dtype="float64", seed=1, directions=1, layers=LAYERS):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((SEQ, BATCH, INPUT)).astype(dtype)
    return x, cl.random_states(layers, BATCH, HIDDEN, rng, directions, dtype)


# -- the custom_lstms family -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("cell", [cl.LSTMCell, cl.LayerNormLSTMCell])
def test_cells_match_eager(cell, dtype):
    m = cell(INPUT, HIDDEN, np.random.default_rng(0), dtype)
    x, states = inputs(dtype)
    hy, state = script(m)(x[0], states[0])
    want_hy, want_state = m(x[0], states[0])
    assert isinstance(state, cl.LSTMState)
    assert_close(hy, want_hy, dtype)
    assert_close(state, want_state, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("layer", [cl.LSTMLayer, cl.ReverseLSTMLayer])
def test_layers_match_eager(layer, dtype):
    m = layer(cl.LSTMCell, INPUT, HIDDEN, np.random.default_rng(0), dtype)
    x, states = inputs(dtype)
    assert_close(script(m)(x, states[0]), m(x, states[0]), dtype)


def test_reverse_layer_runs_backwards_in_time():
    rng = np.random.default_rng(0)
    fwd = cl.LSTMLayer(cl.LSTMCell, INPUT, HIDDEN, rng)
    rev = cl.ReverseLSTMLayer(cl.LSTMCell, INPUT, HIDDEN, rng)
    rev.cell = fwd.cell
    x, states = inputs()
    out, _ = script(rev)(x, states[0])
    flipped, _ = fwd(x[::-1].copy(), states[0])
    assert_close(out, flipped[::-1].copy())


def test_bidirectional_layer_matches_eager_and_concatenates_directions():
    m = cl.BidirLSTMLayer(cl.LSTMCell, INPUT, HIDDEN, np.random.default_rng(0))
    x, states = inputs(directions=2, layers=1)
    out, out_states = script(m)(x, states[0])
    assert out.shape == (SEQ, BATCH, 2 * HIDDEN)
    assert_close((out, out_states), m(x, states[0]))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_stacked_lstm_matches_eager_and_a_plain_numpy_lstm(dtype):
    m = cl.script_lstm(INPUT, HIDDEN, LAYERS, dtype=dtype)
    x, states = inputs(dtype)
    out, out_states = script(m)(x, states)
    assert_close((out, out_states), m(x, states), dtype)
    weights = [(lay.cell.weight_ih, lay.cell.weight_hh, lay.cell.bias_ih, lay.cell.bias_hh)
               for lay in m.layers]
    ref, ref_states = cl.reference_lstm(x, states, weights)
    assert_close(out, ref, dtype)
    for got, (h, c) in zip(out_states, ref_states):
        assert_close((got.hx, got.cx), (h, c), dtype)


def test_bidirectional_stack_matches_eager():
    m = cl.script_lstm(INPUT, HIDDEN, LAYERS, bidirectional=True)
    x, states = inputs(directions=2)
    out, out_states = script(m)(x, states)
    assert out.shape == (SEQ, BATCH, 2 * HIDDEN)
    assert len(out_states) == LAYERS and all(len(s) == 2 for s in out_states)
    assert_close((out, out_states), m(x, states))


def test_layer_norm_stack_matches_eager():
    m = cl.script_lnlstm(INPUT, HIDDEN, LAYERS)
    x, states = inputs()
    assert_close(script(m)(x, states), m(x, states))


def test_dropout_stack_applies_dropout_only_in_training_mode():
    m = cl.script_lstm(INPUT, HIDDEN, LAYERS, dropout=True)
    sm = script(m)
    x, states = inputs()
    sm.eval()
    assert not m.training and not m.dropout_layer.training
    assert_close(sm(x, states), m(x, states))
    evaluated, _ = sm(x, states)
    sm.train()
    ops.manual_seed(7)
    trained, _ = sm(x, states)
    ops.manual_seed(7)
    eager, _ = m(x, states)
    assert_close(trained, eager)
    assert np.abs(trained - evaluated).max() > 1e-3
    sm.eval()
    assert_close(sm(x, states)[0], evaluated)
    assert sm.compiled_variants == 2  # eval, train; back to eval reuses the first


def test_compiled_graph_takes_parameters_as_inputs():
    m = cl.LSTMCell(INPUT, HIDDEN, np.random.default_rng(0))
    sm = script(m)
    names = [v.name for v in sm.graph.inputs]
    assert names[:2] == ["input", "state"]
    assert set(names[2:]) == {"weight_ih", "weight_hh", "bias_ih", "bias_hh"}
    x, states = inputs()
    assert "Double(2, 28)" in str(sm.graph_for(x[0], states[0]))
    assert "def forward(" in sm.code_for(x[0], states[0])


# -- parameters, state and traversal ---------------------------------------------------------------
def test_named_parameters_are_dotted_and_in_registration_order():
    m = cl.script_lstm(INPUT, HIDDEN, 2)
    names = [n for n, _ in m.named_parameters()]
    assert names[:4] == ["layers.0.cell.weight_ih", "layers.0.cell.weight_hh",
                         "layers.0.cell.bias_ih", "layers.0.cell.bias_hh"]
    assert len(names) == 8 and names[4] == "layers.1.cell.weight_ih"
    assert [type(c).__name__ for c in m.children()] == ["ModuleList"]
    assert len(list(m.modules())) == 1 + 1 + 2 * 2
    p = m.get_parameter("layers.1.cell.bias_hh")
    assert isinstance(p, Parameter) and p.grad is None and p.shape == (4 * HIDDEN,)
    assert m.layers[1].cell.bias_hh is p.data  # inside forward, self.bias_hh reads as the array
    assert [n for n, _ in script(m).named_parameters()] == names


def test_optimizer_updates_are_seen_by_the_script_module():
    m = cl.script_lstm(INPUT, HIDDEN, 2)
    sm = script(m)
    x, states = inputs(layers=2)
    before, _ = sm(x, states)
    for p in sm.parameters():  # an SGD step, in place
        p.data -= 0.1 * np.ones_like(p.data)
    after, _ = sm(x, states)
    assert np.abs(after - before).max() > 1e-3
    assert_close(after, m(x, states)[0])
    p = m.get_parameter("layers.0.cell.weight_ih")
    p.data = p.data * 0.5  # rebinding .data is seen too
    assert_close(sm(x, states)[0], m(x, states)[0])


def test_parameter_dtype_change_recompiles():
    m = cl.LSTMCell(INPUT, HIDDEN, np.random.default_rng(0))
    sm = script(m)
    x, states = inputs("float32")
    for p in m.parameters():
        p.data = p.data.astype("float32")
    hy, _ = sm(x[0], states[0])
    assert hy.dtype == np.float32
    assert_close(hy, m(x[0], states[0])[0], "float32")


def test_state_dict_round_trip():
    source = cl.script_lstm(INPUT, HIDDEN, 2, seed=1)
    target = cl.script_lstm(INPUT, HIDDEN, 2, seed=2)
    compiled = script(target)
    x, states = inputs(layers=2)
    assert np.abs(compiled(x, states)[0] - source(x, states)[0]).max() > 1e-3
    state = source.state_dict()
    assert list(state) == [n for n, _ in source.named_parameters()]
    target.load_state_dict(state)
    assert_close(compiled(x, states), source(x, states))
    with pytest.raises(KeyError):
        target.load_state_dict({"layers.0.cell.weight_ih": state["layers.0.cell.weight_ih"]})
    missing = target.load_state_dict({}, strict=False).missing_keys
    assert len(missing) == 8


def test_module_registration_rules():
    class Holder(Module):
        def __init__(self):
            super().__init__()
            self.w = Parameter(np.ones(3))
            self.cells = [cl.Dropout(0.1), cl.Dropout(0.2)]
            self.table = np.zeros(2)

    h = Holder()
    assert isinstance(h.cells, ModuleList) and len(h.cells) == 2
    assert h.cells[::-1][0].p == 0.2
    assert [n for n, _ in h.named_buffers()] == ["table"]
    with pytest.raises(TypeError, match="Parameter"):
        h.w = np.zeros(3)
    h.eval()
    assert not h.cells[1].training


# -- methods, constants, export --------------------------------------------------------------------
class Scaler(Module):
    hidden: Final[int]

    def __init__(self, hidden: int):
        super().__init__()
        self.hidden = hidden
        self.scale = Parameter(np.full(hidden, 2.0))
        self.offset = np.ones(hidden)
        self.name = "scaler"

    def helper(self, x: Tensor) -> Tensor:
        return x * self.scale + self.offset

    def forward(self, x: Tensor) -> Tensor:
        pad = ops.zeros((x.shape[0], self.hidden), dtype=np.float64)
        if self.training:
            return self.helper(x) + pad
        return x + pad

    @script.export
    def describe(self, x: Tensor) -> Tensor:
        return x.sum() * float(len(self.name))


def test_methods_constants_and_exported_methods():
    m = Scaler(4)
    sm = script(m)
    x = np.arange(8.0).reshape(2, 4)
    np.testing.assert_array_equal(sm(x), x * 2.0 + 1.0)
    np.testing.assert_array_equal(sm.describe(x), x.sum() * 6.0)
    sm.eval()
    np.testing.assert_array_equal(sm(x), x)
    m.name = "s"  # a changed constant attribute recompiles
    np.testing.assert_array_equal(sm.describe(x), x.sum())


class Stack(Module):
    def __init__(self, modules):
        super().__init__()
        self.layers = modules

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers[::-1]:
            x = layer(x)
        for k, layer in enumerate(reversed(self.layers)):
            x = layer(x) + float(k)
        return self.layers[-1](x) + float(len(self.layers))


def test_module_list_reversed_slicing_enumerate_and_constant_index():
    m = Stack([Scaler(2), Scaler(2), cl.Dropout(0.0)])
    x = np.ones((1, 2))
    np.testing.assert_allclose(script(m)(x), m(x))


# -- errors ------------------------------------------------------------------------------------
class AddsAttribute(Module):
    def forward(self, x: Tensor) -> Tensor:
        self.cache = x
        return x


class ReadsMissing(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x + self.bias


class RebindsParameter(Module):
    def __init__(self):
        super().__init__()
        self.weight = Parameter(np.ones(2))

    def forward(self, x: Tensor) -> Tensor:
        self.weight = x
        return x


class IndexesDynamically(Module):
    def __init__(self):
        super().__init__()
        self.layers = [Scaler(2), cl.Dropout(0.1)]

    def forward(self, x: Tensor, n: int) -> Tensor:
        for i in range(n):
            x = self.layers[i](x)
        return x


class MixedList(Module):
    def __init__(self):
        super().__init__()
        self.things = [Scaler(2), 3]

    def forward(self, x: Tensor) -> Tensor:
        return x * len(self.things)


class UnsupportedAttribute(Module):
    def __init__(self):
        super().__init__()
        self.tags = {"a", "b"}

    def forward(self, x: Tensor) -> Tensor:
        return x if len(self.tags) else x


@pytest.mark.parametrize("module, pattern, line", [
    (AddsAttribute(), "cannot add the attribute 'cache'", "self.cache = x"),
    (ReadsMissing(), "has no attribute 'bias'", "return x + self.bias"),
    (RebindsParameter(), "cannot rebind the parameter 'weight'", "self.weight = x"),
    (IndexesDynamically(), "known only when the function runs", "x = self.layers[i](x)"),
    (MixedList(), "mixing modules and other values", "len(self.things)"),
    (UnsupportedAttribute(), "attribute 'tags'.*cannot use", "len(self.tags)"),
])
def test_unsupported_module_code_is_a_script_error_at_the_line(module, pattern, line):
    with pytest.raises(ScriptError, match=pattern) as info:
        script(module)
    assert "test_modules.py:" in str(info.value)
    assert line in str(info.value)


def test_list_attribute_of_arrays_is_an_input():
    class Bank(Module):
        def __init__(self):
            super().__init__()
            self.weights = [np.ones(2), np.full(2, 3.0)]

        def forward(self, x: Tensor) -> List[Tensor]:
            return [x * w for w in self.weights]

    m = Bank()
    sm = script(m)
    x = np.arange(2.0)
    assert_close(sm(x), m(x))
    m.weights.append(np.zeros(2))
    assert len(sm(x)) == 3
