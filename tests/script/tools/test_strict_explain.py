"""Strict compilation (``script(fn, strict=True)``) and ``fn.explain(*args)``."""

import inspect
import shutil
from typing import List, Tuple

import numpy as np
import pytest

import fuser.cpu
from script import ScriptError, Tensor, ops, script
from tests.programs import cells

B, IN, H, T = 3, 4, 6, 5


def _arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(s).astype(np.float32) for s in shapes)


def layernorm_lstm_cell(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor,
                        g_i: Tensor, b_i: Tensor, g_h: Tensor, b_h: Tensor, g_c: Tensor,
                        b_c: Tensor) -> Tuple[Tensor, Tensor]:
    igates = ops.layer_norm(x @ w_ih.T, g_i, b_i)
    hgates = ops.layer_norm(hx @ w_hh.T, g_h, b_h)
    i, f, g, o = ops.chunk(igates + hgates, 4, 1)
    cy = ops.layer_norm(ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g), g_c, b_c)
    hy = ops.sigmoid(o) * np.tanh(cy)
    return hy, cy


def _norm(v: Tensor, gamma: Tensor, beta: Tensor) -> Tensor:
    mu = v.mean(axis=1, keepdims=True)
    var = v.var(axis=1, keepdims=True)
    return (v - mu) / np.sqrt(var + 1e-5) * gamma + beta


def decomposed_layernorm_lstm_cell(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor,
                                   w_hh: Tensor, g_i: Tensor, b_i: Tensor, g_h: Tensor,
                                   b_h: Tensor, g_c: Tensor, b_c: Tensor) -> Tuple[Tensor, Tensor]:
    gates = _norm(x @ w_ih.T, g_i, b_i) + _norm(hx @ w_hh.T, g_h, b_h)
    i, f, g, o = ops.chunk(gates, 4, 1)
    cy = _norm(ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g), g_c, b_c)
    hy = ops.sigmoid(o) * np.tanh(cy)
    return hy, cy


def erf_cell(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
    a = x @ w.T + h
    return ops.erf(a) * ops.sigmoid(a)


def _line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


def _cases():
    x, hx, cx = _arrays((B, IN), (B, H), (B, H))
    w_ih, w_hh, b_ih, b_hh = _arrays((4 * H, IN), (4 * H, H), (4 * H,), (4 * H,), seed=1)
    g_ih, g_hh, gb_ih, gb_hh = _arrays((3 * H, IN), (3 * H, H), (3 * H,), (3 * H,), seed=2)
    g_i, b_i, g_h, b_h = _arrays((4 * H,), (4 * H,), (4 * H,), (4 * H,), seed=3)
    g_c, b_c = _arrays((H,), (H,), seed=4)
    ln_args = (x, hx, cx, w_ih, w_hh, g_i, b_i, g_h, b_h, g_c, b_c)
    return {
        "lstm_cell": (cells.lstm_cell, (x, (hx, cx), w_ih, w_hh, b_ih, b_hh)),
        "flat_lstm_cell": (cells.flat_lstm_cell, (x, hx, cx, w_ih, w_hh, b_ih, b_hh)),
        "gru_cell": (cells.gru_cell, (x, hx, g_ih, g_hh, gb_ih, gb_hh)),
        "layernorm_lstm_cell": (layernorm_lstm_cell, ln_args),
        "decomposed_layernorm_lstm_cell": (decomposed_layernorm_lstm_cell, ln_args),
    }


@pytest.mark.parametrize("name", sorted(_cases()))
def test_strict_accepts_the_fused_cells(name):
    fn, args = _cases()[name]
    f = script(fn, strict=True)
    got, want = f(*args), fn(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    assert "elementwise ops outside fusion groups: none" in f.explain(*args)


def test_the_decomposed_layer_norm_fuses_into_the_gate_kernels():
    fn, args = _cases()["decomposed_layernorm_lstm_cell"]
    graph = script(fn).graph_for(*args)
    kinds = {n.kind for g in graph.walk() if g.kind == "prim::FusionGroup"
             for n in g.subgraph.walk()}
    assert {"tensor::sqrt", "tensor::div", "tensor::sigmoid", "tensor::tanh"} <= kinds


def test_strict_names_the_op_and_the_line_it_cannot_fuse():
    x, h, w = _arrays((B, IN), (B, H), (H, IN))
    f = script(erf_cell, strict=True)  # nothing is compiled yet: no error
    with pytest.raises(ScriptError) as info:
        f(x, h, w)
    text = str(info.value)
    line = _line_of(erf_cell, "ops.erf(a)")
    assert f"test_strict_explain.py:{line}:" in text
    assert "tensor::erf" in text and "the CPU fuser has no code for tensor::erf" in text
    assert "return ops.erf(a) * ops.sigmoid(a)" in text
    assert info.value.line == _line_of(erf_cell, "x @ w.T + h")  # the first problem's position
    assert f.compiled_signatures == 0
    np.testing.assert_allclose(script(erf_cell)(x, h, w), erf_cell(x, h, w), rtol=1e-5)


def test_fullgraph_is_strict():
    x, h, w = _arrays((B, IN), (B, H), (H, IN))
    with pytest.raises(ScriptError, match="tensor::erf"):
        script(erf_cell, fullgraph=True)(x, h, w)


def test_strict_lists_fusion_groups_that_fall_back_to_python(monkeypatch):
    fn, args = _cases()["gru_cell"]

    def no_kernel(graph):
        raise ValueError("no kernel today")
    monkeypatch.setattr(fuser.cpu.BACKEND, "compile_group", no_kernel)
    with pytest.raises(ScriptError, match="runs as Python.*no kernel today"):
        script(fn, strict=True)(*args)
    f = script(fn)
    np.testing.assert_allclose(f(*args), fn(*args), rtol=1e-5)
    report = f.explain(*args)
    assert "fallbacks to Python: 1" in report and "runs as Python (fallback)" in report


def single_tanh(x: Tensor, w: Tensor) -> Tensor:
    return np.tanh(x @ w)


def stacked(xs: List[Tensor]) -> Tensor:
    s = ops.stack(xs, 0)
    return np.tanh(s) * 2.0


def appends(x: Tensor, xs: List[Tensor]) -> Tensor:
    a = np.tanh(x)
    xs.append(a)
    return ops.sigmoid(a) * 2.0


@pytest.mark.parametrize("fn, make_args, reason", [
    (single_tanh, lambda: _arrays((B, IN), (IN, H)), "a single op with no fusible neighbour"),
    (stacked, lambda: ([_arrays((B, H))[0]] * 2,), "is unknown at compile time"),
    (appends, lambda: (_arrays((B, H))[0], []), "a side effect (prim::ListAppend"),
])
def test_explain_says_why_an_op_was_left_out(fn, make_args, reason):
    report = script(fn).explain(*make_args())
    assert "elementwise ops outside fusion groups: none" not in report
    assert reason in report


def test_strict_accepts_an_op_alone_that_no_group_could_take():
    x, w = _arrays((B, IN), (IN, H))
    f = script(single_tanh, strict=True)
    np.testing.assert_allclose(f(x, w), single_tanh(x, w), rtol=1e-6)
    assert "a single op with no fusible neighbour" in script(single_tanh).explain(x, w)


def test_explain_reports_groups_loops_and_matmuls():
    x, hx, cx = _arrays((T, B, IN), (B, H), (B, H))
    weights = _arrays((4 * H, IN), (4 * H, H), (4 * H,), (4 * H,), seed=1)
    report = script(cells.lstm_layer).explain(x, hx, cx, *weights)
    assert report.startswith("lstm_layer(x: Float(5, 3, 4), hx: Float(3, 6)")
    assert "fusion groups: 1" in report
    assert "sigmoid" in report and "native kernel" in report
    loop_line = _line_of(cells.lstm_layer, "for x_t in")
    assert f"loop at cells.py:{loop_line}:4: {T} iterations" in report
    assert "matmuls: 2 (1 outside loops, 1 inside)" in report
    assert "hoisted out of a loop" in report


def test_explain_svg_says_how_to_install_graphviz_when_missing(monkeypatch, tmp_path):
    fn, args = _cases()["gru_cell"]
    monkeypatch.setattr(shutil, "which", lambda name: None)
    report = script(fn).explain(*args, svg=str(tmp_path / "g.svg"))
    assert "apt-get install graphviz" in report and "pip install graphviz" in report
    assert not (tmp_path / "g.svg").exists()


def test_explain_svg_draws_the_graph_with_graphviz(tmp_path):
    fn, args = _cases()["gru_cell"]
    path = tmp_path / "g.svg"
    report = script(fn).explain(*args, svg=str(path))
    if shutil.which("dot") is None:  # no Graphviz here: the report must say how to get it
        assert "apt-get install graphviz" in report
        return
    assert f"graph picture written to {path}" in report
    assert "<svg" in path.read_text()
