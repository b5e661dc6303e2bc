"""ONNX export (``script.export_onnx``): the exported model, run by onnxruntime, equals the
model itself at the example shape and at another sequence length and batch size; what ONNX
cannot express is a ScriptError at the user's line, before any file is written."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import List, NamedTuple, Tuple

import numpy as np
import pytest

import rnn
import script
from benchmarks.fastrnns import cells as fast
from script import Module, Parameter, ScriptError, Tensor, ops

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

RTOL, ATOL = 1e-4, 1e-5


def leaves(result):
    """The model's outputs flattened depth-first (the ONNX outputs' order)."""
    if isinstance(result, tuple):
        return [leaf for item in result for leaf in leaves(item)]
    return [result]


def run_onnx(path, args):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    arrays = [a for arg in args for a in (arg if isinstance(arg, tuple) else (arg,))
              if isinstance(a, np.ndarray)]
    names = [i.name for i in session.get_inputs()]
    assert len(names) == len(arrays)
    return session.run(None, dict(zip(names, arrays)))


def check_export(tmp_path, model, example, *others, reference=None):
    """Export at ``example``; onnxruntime equals ``reference`` (the model) at every input set."""
    path = tmp_path / "model.onnx"
    script.export_onnx(model, example, path)
    onnx.checker.check_model(str(path), full_check=True)
    reference = reference or model
    for args in (example, *others):
        expected = leaves(reference(*args))
        got = run_onnx(path, args)
        assert len(got) == len(expected)
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g, np.asarray(e), rtol=RTOL, atol=ATOL)
    return path


def op_types(graph):
    """The op types of an ONNX graph and its subgraphs, each subgraph's as a nested list."""
    found = []
    for node in graph.node:
        found.append(node.op_type)
        found += [op_types(a.g) for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
    return found


def seq(rng, t, b, size, dtype=np.float32):
    return rng.standard_normal((t, b, size)).astype(dtype)


# -- the torch.nn front ends ----------------------------------------------------------------------
def test_the_time_loop_stays_a_loop_with_the_projection_hoisted(tmp_path):
    model = rnn.LSTM(4, 8, rng=0)
    path = tmp_path / "lstm.onnx"
    script.export_onnx(model, (np.ones((6, 2, 4), np.float32),), path)
    graph = onnx.load(str(path)).graph
    found = op_types(graph)
    assert found.count("Loop") == 1
    body = found[found.index("Loop") + 1]
    assert body.count("MatMul") == 1 and "Split" in body  # only h @ W_hh^T inside
    # the parameters, under the module's own names (PyTorch's), not transposed copies
    assert {i.name for i in graph.initializer} == {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0",
                                                   "bias_hh_l0"}


@pytest.mark.parametrize("kind", [rnn.LSTM, rnn.GRU, rnn.RNN])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, False), (1, True), (2, True)])
def test_front_ends_export(tmp_path, kind, layers, bidirectional):
    rng = np.random.default_rng(0)
    model = kind(5, 6, num_layers=layers, bidirectional=bidirectional, rng=1)
    check_export(tmp_path, model, (seq(rng, 4, 3, 5),), (seq(rng, 7, 2, 5),),
                 (seq(rng, 1, 5, 5),))


def test_batch_first_with_initial_state(tmp_path):
    rng = np.random.default_rng(1)
    model = rnn.LSTM(3, 4, num_layers=2, batch_first=True, rng=2)

    def args(t, b):
        h = rng.standard_normal((2, b, 4)).astype(np.float32)
        return seq(rng, b, t, 3), (h, h * 0.5)
    path = check_export(tmp_path, model, args(5, 2), args(3, 4))
    session = ort.InferenceSession(str(path))
    assert [i.name for i in session.get_inputs()] == ["input", "hx_0", "hx_1"]
    assert len(session.get_outputs()) == 3


def test_gru_with_lengths(tmp_path):
    rng = np.random.default_rng(2)
    model = rnn.GRU(3, 4, bidirectional=True, rng=3)
    example = (seq(rng, 5, 3, 3), None, np.array([5, 2, 4]))
    other = (seq(rng, 6, 2, 3), None, np.array([1, 6]))
    check_export(tmp_path, model, example, other)


def test_batch_first_bidirectional_gru_with_lengths_and_state(tmp_path):
    rng = np.random.default_rng(15)
    model = rnn.GRU(3, 4, num_layers=2, batch_first=True, bidirectional=True, rng=1)

    def args(b, t, lengths):
        return (rng.standard_normal((b, t, 3)).astype(np.float32),
                rng.standard_normal((4, b, 4)).astype(np.float32), np.array(lengths))
    check_export(tmp_path, model, args(2, 5, [5, 3]), args(3, 7, [7, 1, 4]))


def test_layernorm_lstm(tmp_path):
    rng = np.random.default_rng(3)
    model = rnn.layer(rnn.LayerNormLSTMCell(4, 5, rng=4))
    state = lambda b: np.zeros((1, b, 5), np.float32) + 0.1  # noqa: E731
    check_export(tmp_path, model, (seq(rng, 3, 2, 4), state(2), state(2)),
                 (seq(rng, 6, 4, 4), state(4), state(4)))


# -- a custom cell -----------------------------------------------------------------------------
class PeepholeLSTMCell(Module):
    """An LSTM whose gates also see the cell state (peephole connections)."""

    state_arity = 2

    def __init__(self, input_size: int, hidden_size: int, seed: int = 0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.hidden_size = hidden_size
        self.weight_ih = Parameter(rng.uniform(-0.3, 0.3, (4 * hidden_size, input_size))
                                   .astype(np.float32))
        self.weight_hh = Parameter(rng.uniform(-0.3, 0.3, (4 * hidden_size, hidden_size))
                                   .astype(np.float32))
        self.bias = Parameter(rng.uniform(-0.3, 0.3, (4 * hidden_size,)).astype(np.float32))
        self.peep = Parameter(rng.uniform(-0.3, 0.3, (3, hidden_size)).astype(np.float32))

    def forward(self, input: Tensor, state: Tuple[Tensor, Tensor]) -> Tuple[Tensor, Tensor]:
        hx, cx = state
        gates = input @ self.weight_ih.T + hx @ self.weight_hh.T + self.bias
        i, f, g, o = ops.chunk(gates, 4, 1)
        i = ops.sigmoid(i + self.peep[0] * cx)
        f = ops.sigmoid(f + self.peep[1] * cx)
        cy = f * cx + i * np.tanh(g)
        hy = ops.sigmoid(o + self.peep[2] * cy) * np.tanh(cy)
        return hy, cy


def test_custom_peephole_cell_stack(tmp_path):
    rng = np.random.default_rng(4)
    layers = [rnn.bidirectional(PeepholeLSTMCell(3, 4, 1), PeepholeLSTMCell(3, 4, 2)),
              rnn.bidirectional(PeepholeLSTMCell(8, 4, 3), PeepholeLSTMCell(8, 4, 4))]
    model = rnn.StackedRNN(layers)

    def args(t, b):
        h = rng.standard_normal((4, b, 4)).astype(np.float32)
        return seq(rng, t, b, 3), h, h + 1.0
    check_export(tmp_path, model, args(4, 2), args(9, 3))


# -- the fastrnns layers -------------------------------------------------------------------------
class FastLayer(Module):
    """A fastrnns layer function with its weights as parameters."""

    def __init__(self, weights: list):
        super().__init__()
        self.w_ih, self.w_hh, self.b_ih, self.b_hh = (Parameter(w) for w in weights)


def fast_weights(rng, size, hidden, gates=4):
    def u(*shape):
        return rng.uniform(-0.4, 0.4, shape).astype(np.float32)
    return [u(gates * hidden, size), u(gates * hidden, hidden), u(gates * hidden),
            u(gates * hidden)]


class LSTMLayer(FastLayer):
    def forward(self, x: Tensor, hx: Tensor, cx: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        return fast.lstm_layer(x, hx, cx, self.w_ih, self.w_hh, self.b_ih, self.b_hh)


class PremulLayer(FastLayer):
    def forward(self, x: Tensor, hx: Tensor, cx: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        return fast.lstm_layer_premul_bias(x, hx, cx, self.w_ih, self.w_hh, self.b_ih,
                                           self.b_hh)


class SimpleLayer(FastLayer):
    def forward(self, x: Tensor, hx: Tensor, cx: Tensor) -> Tuple[Tensor, Tensor]:
        return fast.lstm_layer_simple(x, hx, cx, self.w_ih, self.w_hh, self.b_ih, self.b_hh)


class GRULayer(FastLayer):
    def forward(self, x: Tensor, hx: Tensor, cx: Tensor) -> Tuple[Tensor, Tensor]:
        return fast.gru_layer(x, hx, self.w_ih, self.w_hh, self.b_ih, self.b_hh)


@pytest.mark.parametrize("layer,gates", [(LSTMLayer, 4), (PremulLayer, 4), (SimpleLayer, 4),
                                         (GRULayer, 3)])
def test_fastrnns_layers(tmp_path, layer, gates):
    rng = np.random.default_rng(5)
    model = layer(fast_weights(rng, 3, 4, gates))

    def args(t, b):
        return seq(rng, t, b, 3), rng.standard_normal((b, 4)).astype(np.float32), \
            rng.standard_normal((b, 4)).astype(np.float32)
    check_export(tmp_path, model, args(5, 2), args(2, 6))


def test_fastrnns_layernorm_functions_with_weights_as_inputs(tmp_path):
    rng = np.random.default_rng(6)
    h = 4

    def args(t, b):
        ws = [rng.uniform(-0.4, 0.4, s).astype(np.float32)
              for s in [(4 * h, 3), (4 * h, h), (4 * h,), (4 * h,), (4 * h,), (4 * h,), (h,),
                        (h,)]]
        ws[2] += 1.0
        ws[4] += 1.0
        ws[6] += 1.0
        return (seq(rng, t, b, 3), rng.standard_normal((b, h)).astype(np.float32),
                rng.standard_normal((b, h)).astype(np.float32), *ws)
    for fn in (fast.layernorm_lstm_layer, fast.layernorm_decom_lstm_layer):
        compiled = script.script(fn)
        check_export(tmp_path, compiled, args(3, 2), args(6, 3))


def test_a_list_argument_is_refused(tmp_path):
    rng = np.random.default_rng(7)
    params = fast_weights(rng, 3, 3) + fast_weights(rng, 3, 3)
    compiled = script.script(fast.multilayer_lstm)
    x, h = seq(rng, 4, 2, 3), rng.standard_normal((2, 2, 3)).astype(np.float32)
    with pytest.raises(ScriptError, match="argument 'params' is a list"):
        script.export_onnx(compiled, (x, h, h, params), tmp_path / "m.onnx")
    assert not (tmp_path / "m.onnx").exists()


# -- refusals ----------------------------------------------------------------------------------
class ConditionalAppend(Module):
    def __init__(self):
        super().__init__()
        self.w = Parameter(np.eye(3, dtype=np.float32))

    def forward(self, x: Tensor) -> Tensor:
        outputs: List[Tensor] = []
        for t in range(x.shape[0]):
            if ops.sum(x[t]) > 0.0:
                outputs.append(x[t] @ self.w)
        return ops.stack(outputs, 0)


def test_unsupported_construct_is_a_script_error_at_its_line(tmp_path):
    x = np.ones((4, 2, 3), np.float32)
    path = tmp_path / "bad.onnx"
    with pytest.raises(ScriptError) as info:
        script.export_onnx(ConditionalAppend(), (x,), path)
    message = str(info.value)
    assert "prim::ListAppend" in message and "test_onnx_export.py" in message
    assert "outputs.append(x[t] @ self.w)" in message
    assert not path.exists()


def math_scaled_scores(q: Tensor, k: Tensor):
    return q @ k.T / math.sqrt(q.shape[-1])


def math_of_a_total(x: Tensor):
    return x * math.exp(float(np.sum(x)))


def random_noise(x: Tensor):
    return x + np.random.randn(x.shape[0], x.shape[1])


def test_math_of_known_numbers_exports_and_of_run_time_ones_is_refused(tmp_path):
    rng = np.random.default_rng(9)
    q, k = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5, 4)))
    check_export(tmp_path, script.script(math_scaled_scores), (q, k))
    for fn, message in [(math_of_a_total, r"math\.exp\(\) of a number known only when the "
                         "model runs"), (random_noise, "cannot export prim::random")]:
        path = tmp_path / f"{fn.__name__}.onnx"
        with pytest.raises(ScriptError, match=message):
            script.export_onnx(script.script(fn), (q,), path)
        assert not path.exists()


def test_training_dropout_is_refused(tmp_path):
    compiled = script.script(fast.dropout_lstm)
    rng = np.random.default_rng(8)
    params = fast_weights(rng, 3, 3)
    x, h = seq(rng, 4, 2, 3), rng.standard_normal((1, 2, 3)).astype(np.float32)
    with pytest.raises(ScriptError, match="export_onnx"):
        script.export_onnx(compiled, (x, h, h, params, True), tmp_path / "d.onnx")


def test_opset_below_18_is_refused(tmp_path):
    model = rnn.RNN(2, 2, rng=0)
    with pytest.raises(ScriptError, match="opset 13"):
        script.export_onnx(model, (np.ones((2, 1, 2), np.float32),), tmp_path / "o.onnx",
                           opset=13)


def test_static_axes_fix_the_shapes(tmp_path):
    model = rnn.GRU(2, 3, rng=0)
    x = np.ones((4, 2, 2), np.float32)
    path = tmp_path / "s.onnx"
    script.export_onnx(model, (x,), path, dynamic_axes=False)
    session = ort.InferenceSession(str(path))
    assert session.get_inputs()[0].shape == [4, 2, 2]
    np.testing.assert_allclose(session.run(None, {"input": x})[0], model(x)[0], rtol=RTOL,
                               atol=ATOL)


def test_command_line_exports_a_saved_model(tmp_path, capsys):
    from script.__main__ import main
    model = rnn.LSTM(3, 4, num_layers=2, rng=5)
    saved = tmp_path / "lstm.rns"
    script.save(script.freeze(model), saved)
    out = tmp_path / "lstm.onnx"
    assert main(["export", str(saved), "--onnx", str(out), "--input", "6,2,3"]) == 0
    x = np.random.default_rng(9).standard_normal((9, 5, 3)).astype(np.float32)
    for e, g in zip(leaves(model(x)), run_onnx(out, (x,))):
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)
    assert main(["export", str(saved), "--onnx", str(out), "--input", "6,x"]) == 1
    assert "SHAPE[:DTYPE]" in capsys.readouterr().err


def test_unfrozen_saved_module_exports_with_its_parameters(tmp_path):
    model = rnn.GRU(3, 4, rng=6)
    saved = tmp_path / "gru.rns"
    script.save(script.script(model), saved)
    rng = np.random.default_rng(10)
    check_export(tmp_path, script.load(saved), (seq(rng, 4, 2, 3),), (seq(rng, 2, 3, 3),),
                 reference=model)


# -- functions: run-time conditions, carried numbers, the op table ----------------------------
def attention_pool(x: Tensor, w: Tensor, scale: float) -> Tuple[Tensor, Tensor, int]:
    scores = ops.softmax((x @ w) * scale, 0)
    positive = 0
    steps: List[Tensor] = []
    for t in range(x.shape[0]):
        if ops.sum(x[t]) > 0.0:
            y = np.tanh(x[t]) * scores[t]
            positive = positive + 1
        else:
            y = np.maximum(x[t], 0.0) - scores[t]
        steps.append(y)
    out = ops.stack(steps, 1)
    return ops.cat([out, out[:, 0:1]], 1), ops.transpose(out, (1, 0, 2)), positive


def test_function_with_a_runtime_condition_and_a_carried_number(tmp_path):
    rng = np.random.default_rng(11)
    compiled = script.script(attention_pool)
    w = rng.standard_normal((4, 1)).astype(np.float32)

    def args(t, b):
        return rng.standard_normal((t, b, 4)).astype(np.float32), w, 0.5
    path = check_export(tmp_path, compiled, args(3, 3), args(5, 3), reference=attention_pool)
    ops_ = op_types(onnx.load(str(path)).graph)
    body = ops_[ops_.index("Loop") + 1]
    assert "If" in body  # the condition is decided at run time, in the loop


def reductions(x: Tensor, lengths: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    inside = np.expand_dims(ops.arange(0, x.shape[0]), 1) < np.expand_dims(lengths, 0)
    masked = np.where(np.expand_dims(inside, 2), x, 0.0)
    norm = ops.layer_norm(masked, None, None, 1e-3)
    best = ops.argmax(ops.amax(masked, 2), 0).astype(np.int32)
    spread = ops.std(masked, (0, 2)) + ops.var(masked, 2, keepdims=True)[0, :, 0]
    return norm, best, spread, ops.clip(masked, -0.5, 0.5)


def test_function_of_reductions_masks_and_casts(tmp_path):
    rng = np.random.default_rng(12)
    compiled = script.script(reductions)

    def args(t, b):
        return rng.standard_normal((t, b, 5)), rng.integers(1, t + 1, b)
    check_export(tmp_path, compiled, args(4, 3), args(7, 2), reference=reductions)


def einsums_and_trigonometry(q: Tensor, k: Tensor) -> Tuple[Tensor, Tensor]:
    scores = np.einsum("bhtd,bhsd->bhts", q, k)
    scores = scores + np.tensordot(q, k[0, 0], axes=([3], [1]))
    return np.arctan(scores) + np.expand_dims(np.cosh(np.einsum("...d,...d->...", q, q)), -1), \
        np.einsum("bhtd", q)


def test_einsum_and_trigonometric_functions(tmp_path):
    rng = np.random.default_rng(13)

    def args(t):  # float32: onnxruntime's CPU has no float64 Atan or Cosh
        return tuple((rng.standard_normal((2, 3, t, 4)) * 0.3).astype(np.float32)
                     for _ in range(2))
    check_export(tmp_path, script.script(einsums_and_trigonometry), args(5), args(2),
                 reference=einsums_and_trigonometry)


@pytest.mark.parametrize("make", [
    lambda: rnn.RNN(3, 4, nonlinearity="relu", rng=0),
    lambda: rnn.GRU(3, 4, num_layers=2, rng=0, dtype=np.float64),
    lambda: rnn.layer(rnn.LayerNormGRUCell(3, 4, rng=0), reverse=True),
])
def test_more_cells_and_dtypes(tmp_path, make):
    model = make()
    rng = np.random.default_rng(13)
    dtype = np.float64 if "float64" in str(getattr(model, "dtype", "")) else np.float32

    def args(t, b):
        x = seq(rng, t, b, 3, dtype)
        if isinstance(model, rnn.Recurrent):
            h = np.zeros((1, b, 4), np.float32)
            return x, h, h
        return (x,)
    check_export(tmp_path, model, args(4, 2), args(2, 5))


def test_named_dynamic_axes(tmp_path):
    model = rnn.LSTM(3, 4, rng=0)
    path = tmp_path / "d.onnx"
    x = np.ones((5, 2, 3), np.float32)
    script.export_onnx(model, (x,), path, dynamic_axes={"input": [0]})
    session = ort.InferenceSession(str(path))
    shape = session.get_inputs()[0].shape
    assert shape[1:] == [2, 3] and isinstance(shape[0], str)
    longer = np.random.default_rng(14).standard_normal((8, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(session.run(None, {"input": longer})[0], model(longer)[0],
                               rtol=RTOL, atol=ATOL)


def test_without_onnx_installed_export_is_a_script_error(tmp_path):
    program = ("import sys\nsys.modules['onnx'] = None\nimport numpy as np, rnn, script\n"
               "try:\n    script.export_onnx(rnn.GRU(2, 2), (np.ones((2, 1, 2), np.float32),), "
               "'m.onnx')\nexcept script.ScriptError as e:\n    print('refused:', e)\n")
    root = Path(script.__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(root)})
    assert "refused: export_onnx needs the onnx package" in done.stdout, done.stderr
    assert not (tmp_path / "m.onnx").exists()


class Pair(NamedTuple):
    h: Tensor
    c: Tensor


def named_pair_loop(xs: Tensor, w: Tensor) -> Pair:
    h = xs[0] * 0.0
    c = h
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ w + h)
        c = c + h
    return Pair(h, c)


def test_a_named_tuple_made_by_a_loop_exports(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3)).astype(np.float32)
    xs = rng.standard_normal((4, 2, 3)).astype(np.float32)
    f = script.script(named_pair_loop)
    check_export(tmp_path, f, (xs, w), (xs[:2, :1].copy(), w),
                 reference=lambda a, b: tuple(f(a, b)))


def test_dynamic_axes_must_name_arguments_and_their_axes(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3)).astype(np.float32)
    xs = rng.standard_normal((4, 2, 3)).astype(np.float32)
    f = script.script(named_pair_loop)
    with pytest.raises(ScriptError, match="not arguments of"):
        script.export_onnx(f, (xs, w), tmp_path / "m.onnx", dynamic_axes={"x": [0]})
    with pytest.raises(ScriptError, match="not axes of an array of 3"):
        script.export_onnx(f, (xs, w), tmp_path / "m.onnx", dynamic_axes={"xs": [5]})
    assert not (tmp_path / "m.onnx").exists()


def test_checks_in_compiled_code_are_left_out_of_the_export(tmp_path):
    """An LSTM's forward checks h0's shape and the lengths (raises where they are wrong); with
    free batch and time axes those checks cannot fold, and ONNX has no exceptions: the model
    exports without them and equals the model on good inputs."""
    lstm = rnn.LSTM(3, 4, rng=0)
    xs = np.random.default_rng(1).standard_normal((5, 2, 3)).astype(np.float32)
    lengths = np.array([5, 3])
    check_export(tmp_path, lstm.compiled(), (xs, None, lengths),
                 (xs[:4, :1].copy(), None, np.array([2])), reference=lstm)


def step_with_state(x: Tensor, s: Pair) -> Tensor:
    return x + s.h * s.c


def test_a_named_tuple_argument_exports_as_its_fields(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    state = Pair(rng.standard_normal((2, 3)).astype(np.float32),
                 rng.standard_normal((2, 3)).astype(np.float32))
    f = script.script(step_with_state)
    check_export(tmp_path, f, (x, state), (x[:1].copy(), Pair(state.h[:1].copy(),
                                                               state.c[:1].copy())))
