"""Observability of modules as of functions: ``script.profile()`` records calls of scripted
modules and their exported methods; ``explain``, ``strict=True``, ``graph_for``, ``code_for`` and
``backward_graph_for`` work on a ``ScriptModule`` and on the ``rnn`` front ends (which take their
arguments there as a call does: a list of lengths, an unbatched input)."""

from __future__ import annotations

import numpy as np
import pytest

import rnn
from ir.core import Graph
from script import Module, Parameter, ScriptError, Tensor, ops, script

B, IN, H = 3, 4, 6


class Gate(Module):
    """A fusible tail: ``tanh(x @ w) * 2 + 1`` (one fusion group)."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(np.random.default_rng(0).standard_normal((IN, H)).astype("float32"))

    def forward(self, x: Tensor) -> Tensor:
        return np.tanh(x @ self.w) * 2.0 + 1.0

    @script.export
    def score(self, x: Tensor) -> Tensor:
        return np.tanh(x @ self.w) * 2.0 + 1.0


class Lonely(Module):
    """An elementwise op the CPU fuser has no code for, beside one it has: the two cannot form
    a group (strict mode refuses it; a single op alone, not worth a kernel, it would accept)."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(np.ones((IN, H), "float32"))

    def forward(self, x: Tensor) -> Tensor:
        return ops.erf(x @ self.w) * np.tanh(x @ self.w)


def _x(steps=None):
    shape = (B, IN) if steps is None else (steps, B, IN)
    return np.random.default_rng(1).standard_normal(shape).astype("float32")


def test_profile_records_module_calls_and_exported_methods():
    m = script(Gate())
    x = _x()
    m(x)
    with script.profile() as prof:
        for _ in range(3):
            m(x)
        m.score(x)
    assert prof.stats["call Gate.forward"].calls == 3
    assert prof.stats["call Gate.score"].calls == 1
    fusion = [k for k, s in prof.stats.items() if s.category == "fusion"]
    assert any(k.startswith("Gate.forward/FusionGroup_0") for k in fusion)
    np.testing.assert_allclose(m(x), Gate().forward(x), rtol=1e-5)


def test_profile_records_rnn_front_end_calls():
    lstm = rnn.LSTM(IN, H, rng=0)
    x = _x(steps=5)
    expected, _ = lstm(x)
    with script.profile() as prof:
        out, _ = lstm(x)
        out2, _ = lstm(x, None, [5, 2, 4])
    np.testing.assert_array_equal(out, expected)
    assert prof.stats["call LSTM.forward"].calls == 2
    assert any(k.startswith("LSTM.forward/FusionGroup_") for k in prof.stats)
    assert not out2[2:, 1].any()  # the lengths were converted and applied


def test_explain_graph_and_code_on_a_script_module():
    m = script(Gate())
    x = _x()
    report = m.explain(x)
    assert report.startswith("Gate.forward(x: Float(3, 4), self.w: Float(4, 6))")
    assert "fusion groups: 1" in report and "outside fusion groups: none" in report
    assert "prim::FusionGroup" in str(m.graph_for(x))
    assert "np.tanh" not in m.code_for(x) and "def forward(" in m.code_for(x)
    assert isinstance(m.backward_graph_for(x), Graph)
    assert "Gate.score(" in m.score.explain(x)
    assert isinstance(m.score.backward_graph_for(x), Graph)


def test_strict_module_refuses_an_unfused_op_and_accepts_a_fused_module():
    x = _x()
    refused = r"(?s)strict mode: Lonely.forward\(\).*tensor::erf is not fused"
    with pytest.raises(ScriptError, match=refused):
        script(Lonely(), strict=True)(x)
    assert script(Lonely())(x).shape == (B, H)  # not strict: runs
    np.testing.assert_allclose(script(Gate(), strict=True)(x), Gate().forward(x), rtol=1e-5)
    lax = script(Lonely())
    assert script(lax) is lax and script(lax, strict=True).strict


def test_rnn_front_end_tools_take_a_call_s_arguments():
    gru = rnn.GRU(IN, H, num_layers=2, rng=0)
    x = _x(steps=5)
    report = gru.explain(x, None, [5, 2, 4])  # a list of lengths, converted as a call does
    assert report.startswith("GRU.forward(input: Float(5, 3, 4), hx: NoneType, lengths: Long(3)")
    assert "prim::FusionGroup" in str(gru.graph_for(x))
    assert isinstance(gru.backward_graph_for(x), Graph)
    assert "def " in gru.code_for(x[:, 0])  # unbatched
    with pytest.raises(rnn.checks.RNNInputError):
        gru.graph_for(x.astype("float64"))  # checked as a call is
    cell = rnn.LSTMCell(IN, H, rng=0)
    h = np.zeros((B, H), "float32")
    strict_cell = script(cell, strict=True)  # the cell's tail fuses: strict mode accepts it
    np.testing.assert_allclose(strict_cell(x[0], (h, h))[0], cell.forward(x[0], (h, h))[0],
                               rtol=1e-5, atol=1e-6)
