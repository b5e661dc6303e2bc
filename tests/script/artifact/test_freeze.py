"""freeze(): frozen modules compute what the original computes in eval mode, with their weights
compiled in as constants and folded."""

import re

import numpy as np
import pytest

import rnn
from passes import constant_prop
from script import Module, Parameter, ScriptError, Tensor, freeze, ops, script
from tests.helpers import assert_same, flat
from tests.programs.custom_lstms import random_states, script_lnlstm, script_lstm
from tests.programs.gru import StackedGRU, reference_gru


def _assert_same(a, b, tol=1e-6):
    """The same arrays, whatever tuple types hold them (a frozen module returns plain tuples)."""
    assert_same(flat(a), flat(b), rtol=tol, atol=tol)


def _kinds(graph):
    return set(re.findall(r"= ((?:tensor|prim)::\w+?)(?:_\d+)?[\[(]", str(graph)))


def _constants(graph):
    """Every array constant of ``graph``, nested blocks included."""
    return [n.attrs["value"] for n in graph.walk()
            if n.kind == "prim::Constant" and isinstance(n.attrs.get("value"), np.ndarray)]


def _lstm_inputs(layers, batch, input_size, hidden, seed=1, steps=5):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((steps, batch, input_size)), random_states(layers, batch, hidden,
                                                                          rng)


MODELS = {
    "lstm": (lambda: script_lstm(6, 8, 2), lambda: _lstm_inputs(2, 3, 6, 8)),
    "lnlstm": (lambda: script_lnlstm(6, 8, 2), lambda: _lstm_inputs(2, 3, 6, 8)),
    "lstm_dropout": (lambda: script_lstm(6, 8, 3, dropout=True), lambda: _lstm_inputs(3, 3, 6, 8)),
    "gru": (lambda: StackedGRU(6, 8, 2), lambda: (
        np.random.default_rng(1).standard_normal((5, 3, 6)),
        list(np.random.default_rng(2).standard_normal((2, 3, 8))))),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_frozen_model_matches_unfrozen(name):
    build, inputs = MODELS[name]
    module = script(build())
    args = inputs()
    frozen = freeze(module)
    module.eval()
    _assert_same(frozen(*args), module(*args))


def test_frozen_gru_matches_numpy_reference():
    model = StackedGRU(6, 8, 2)
    frozen = freeze(script(model))
    x = np.random.default_rng(3).standard_normal((5, 3, 6))
    states = list(np.random.default_rng(4).standard_normal((2, 3, 8)))
    weights = [(layer.cell.weight_ih, layer.cell.weight_hh, layer.cell.bias_ih,
                layer.cell.bias_hh) for layer in model.layers]
    _assert_same(frozen(x, states), reference_gru(x, states, weights))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_frozen_graph_has_no_parameter_inputs(name):
    build, inputs = MODELS[name]
    module = script(build())
    frozen = freeze(module)
    assert [v.name for v in frozen.graph.inputs] == \
        module.forward.current().method_definition.arg_names
    assert len(frozen.graph_for(*inputs()).inputs) == len(frozen.graph.inputs)
    assert list(frozen.named_parameters()) == []


def test_weight_transposes_are_folded_into_constants():
    module = script(script_lstm(6, 8, 2))
    args = _lstm_inputs(2, 3, 6, 8)
    unfrozen_graph = module.graph_for(*args)
    frozen_graph = freeze(module).graph_for(*args)
    assert "tensor::transpose" in _kinds(unfrozen_graph)
    assert "tensor::transpose" not in _kinds(frozen_graph)
    constants = _constants(frozen_graph)
    for name, param in module.named_parameters():
        if "weight" in name:  # each weight is in the graph already transposed
            assert any(c.shape == param.data.T.shape and np.array_equal(c, param.data.T)
                       for c in constants), name


def test_folds_ignore_the_fold_limit_for_large_weights():
    hidden = 64  # weight_hh has 4 * 64 * 64 = 16384 elements, above FOLD_LIMIT
    assert 4 * hidden * hidden > constant_prop.FOLD_LIMIT
    module = script(script_lstm(hidden, hidden, 1))
    args = _lstm_inputs(1, 2, hidden, hidden)
    frozen = freeze(module)
    assert "tensor::transpose" not in _kinds(frozen.graph_for(*args))
    big = [c for c in _constants(frozen.graph) if c.size > constant_prop.FOLD_LIMIT]
    assert big, "the large transposed weights should be constants"
    _assert_same(frozen(*args), module.eval()(*args))


def test_fold_limit_is_restored_after_freezing():
    module = script(script_lstm(64, 64, 1))
    freeze(module)
    # the executor still leaves big folds alone for ordinary (unfrozen) compilation
    assert "tensor::transpose" in _kinds(module.graph_for(*_lstm_inputs(1, 2, 64, 64)))


def test_freezing_copies_the_weights():
    model = script_lstm(6, 8, 1)
    module = script(model)
    args = _lstm_inputs(1, 3, 6, 8)
    frozen = freeze(module)
    before = frozen(*args)
    module.eval()
    original_before = module(*args)
    for param in model.parameters():
        param.data *= 0.5  # training the original afterwards ...
    _assert_same(frozen(*args), before)  # ... leaves the frozen model alone
    with pytest.raises(AssertionError):
        _assert_same(module(*args), original_before)


def test_dropout_and_training_branches_are_removed():
    class Noisy(Module):
        def __init__(self):
            super().__init__()
            self.weight = Parameter(np.random.default_rng(0).standard_normal((4, 4)))

        def forward(self, x: Tensor) -> Tensor:
            y = ops.dropout(x @ self.weight, 0.5, self.training)
            if self.training:
                y = y * 2.0
            return y

    module = script(Noisy())
    assert module.training
    x = np.random.default_rng(1).standard_normal((3, 4))
    frozen = freeze(module)
    assert module.training, "freeze must not change the original's mode"
    kinds = _kinds(frozen.graph) | _kinds(frozen.graph_for(x))
    assert "tensor::dropout" not in kinds and "prim::If" not in kinds
    np.testing.assert_array_equal(frozen(x), x @ module.weight)
    assert frozen.training is False


def test_dropout_stack_freezes_in_eval_mode():
    module = script(script_lstm(6, 8, 3, dropout=True))
    args = _lstm_inputs(3, 3, 6, 8)
    frozen = freeze(module)
    assert "tensor::dropout" not in _kinds(frozen.graph)
    assert frozen(*args)[0].tolist() == frozen(*args)[0].tolist()  # deterministic


class TwoMethods(Module):
    def __init__(self):
        super().__init__()
        self.weight = Parameter(np.arange(6.0).reshape(2, 3))
        self.scale = 3.0

    def forward(self, x: Tensor) -> Tensor:
        return x @ self.weight

    @script.export
    def project(self, x: Tensor, k: float = 2.0) -> Tensor:
        return (x @ self.weight) * self.scale * k

    def unused(self, x: Tensor) -> Tensor:
        return x


def test_preserved_methods_are_kept_and_others_dropped():
    module = script(TwoMethods())
    x = np.ones((4, 2))
    only_forward = freeze(module)
    assert set(only_forward.methods) == {"forward"}
    with pytest.raises(AttributeError, match="project"):
        only_forward.project(x)
    both = freeze(module, preserve=("forward", "project"))
    np.testing.assert_array_equal(both.project(x), x @ module.weight * 6.0)
    np.testing.assert_array_equal(both.project(x, k=1.0), x @ module.weight * 3.0)
    np.testing.assert_array_equal(both(x), x @ module.weight)


def test_preserving_a_missing_method_is_an_error():
    with pytest.raises(ScriptError, match="no method 'nope'"):
        freeze(script(TwoMethods()), preserve=("forward", "nope"))


def test_frozen_module_cannot_switch_to_training():
    frozen = freeze(script(TwoMethods()))
    assert frozen.eval() is frozen
    with pytest.raises(ScriptError, match="training"):
        frozen.train()


def test_freezing_a_mutated_list_attribute_is_an_error():
    class Appender(Module):
        def __init__(self):
            super().__init__()
            self.seen = [np.zeros(2)]

        def forward(self, x: Tensor) -> Tensor:
            self.seen.append(x)
            return x

    with pytest.raises(ScriptError, match="seen"):
        freeze(script(Appender()))


def test_freeze_accepts_an_unscripted_module_and_rejects_other_things():
    frozen = freeze(TwoMethods())
    np.testing.assert_array_equal(frozen(np.ones((1, 2))), np.ones((1, 2)) @ np.arange(6.0)
                                  .reshape(2, 3))
    with pytest.raises(ScriptError):
        freeze(frozen)
    with pytest.raises(ScriptError):
        freeze(lambda x: x)


def test_frozen_code_binds_weights_as_globals():
    module = script(script_lstm(6, 8, 1))
    args = _lstm_inputs(1, 3, 6, 8)
    code = freeze(module).code_for(*args)
    header = code.splitlines()[0]
    assert header.startswith("def forward(") and header.count(",") == 1  # input, states only
    assert "transpose" not in code


def test_fold_limit_setting_controls_tensor_folding():
    from ir.core import Graph
    from script.runtime.pipelines import run_pipeline  # (with the runtime's evaluator)

    def graph_with_big_fold():
        g = Graph()
        big = g.constant(np.ones(constant_prop.FOLD_LIMIT + 1))
        g.set_outputs([g.insert("tensor::tanh", [big], [big.type]).output])
        return g

    g = graph_with_big_fold()
    run_pipeline(g, "constant-prop")
    assert g.outputs[0].node.kind == "tensor::tanh"
    with constant_prop.fold_limit(None):
        g = graph_with_big_fold()
        run_pipeline(g, "constant-prop")
    assert g.outputs[0].node.kind == "prim::Constant"
    np.testing.assert_allclose(g.outputs[0].node.attrs["value"], np.tanh(1.0))


RNN_MODULES = {
    "LSTM": lambda: rnn.LSTM(6, 8, num_layers=2, dropout=0.25, rng=0, dtype="float64"),
    "GRU bidirectional": lambda: rnn.GRU(6, 8, num_layers=2, bidirectional=True, rng=1,
                                         dtype="float64"),
    "RNN relu": lambda: rnn.RNN(6, 8, nonlinearity="relu", rng=2, dtype="float64"),
}


@pytest.mark.parametrize("name", sorted(RNN_MODULES))
def test_frozen_rnn_modules_match_unfrozen(name):
    module = script(RNN_MODULES[name]())
    x = np.random.default_rng(5).standard_normal((5, 3, 6))
    lengths = np.array([5, 3, 2])
    frozen = freeze(module)
    module.eval()
    _assert_same(frozen(x), module(x))
    _assert_same(frozen(x, None, lengths), module(x, None, lengths))
    assert len(frozen.graph.inputs) == 3 and list(frozen.named_parameters()) == []
    assert "tensor::transpose" not in _kinds(frozen.graph_for(x))
