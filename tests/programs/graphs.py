"""The LSTM cell built through the IR API, whole or in parts, for the tests of the IR, the passes
and the fuser. The cell's math is written once (``lstm_state_update``); the graphs differ in where
they start: the gate pre-activations, the matmul results, or the cell's own inputs."""

from __future__ import annotations

from ir import Graph, Value
from tests.helpers import T, emit


def lstm_state_update(g: Graph, i: Value, f: Value, c: Value, o: Value, cx: Value):
    """Emit ``cy = sigmoid(f) * cx + sigmoid(i) * tanh(c)``, ``hy = sigmoid(o) * tanh(cy)``;
    returns ``(hy, cy)``."""
    i, f, o = (emit(g, "tensor::sigmoid", v) for v in (i, f, o))
    c = emit(g, "tensor::tanh", c)
    cy = emit(g, "tensor::add", emit(g, "tensor::mul", f, cx), emit(g, "tensor::mul", i, c),
              name="cy")
    hy = emit(g, "tensor::mul", o, emit(g, "tensor::tanh", cy), name="hy")
    return hy, cy


def lstm_gates(g: Graph, gates: Value):
    """The four gate pre-activations: ``gates`` chunked in four along axis 1."""
    return emit(g, "tensor::chunk", gates, g.constant(4), g.constant(1))


def lstm_pointwise_graph(dtype: str = "float32", B: int = 64, H: int = 512) -> Graph:
    """The cell's pointwise part: the gate pre-activations and ``cx`` in, ``(hy, cy)`` out."""
    g = Graph("lstm_cell")
    i, f, c, o, cx = (g.add_input(T(dtype, B, H), n)
                      for n in ("ingate", "forgetgate", "cellgate", "outgate", "cx"))
    g.add_output(emit(g, "prim::TupleConstruct", *lstm_state_update(g, i, f, c, o, cx)))
    return g


def lstm_tail(dtype: str = "float32", B: int = 4, H: int = 8) -> Graph:
    """The cell's elementwise part after the matmuls (the chunk included): the two matmul
    results, the biases and ``cx`` in; ``hy`` and ``cy`` out."""
    g = Graph("lstm_tail")
    mm1, mm2 = g.add_input(T(dtype, B, 4 * H), "mm1"), g.add_input(T(dtype, B, 4 * H), "mm2")
    b_ih, b_hh = g.add_input(T(dtype, 4 * H), "b_ih"), g.add_input(T(dtype, 4 * H), "b_hh")
    cx = g.add_input(T(dtype, B, H), "cx")
    gates = emit(g, "tensor::add", emit(g, "tensor::add", emit(g, "tensor::add", mm1, b_ih), mm2),
                 b_hh)
    hy, cy = lstm_state_update(g, *lstm_gates(g, gates), cx)
    g.add_output(hy)
    g.add_output(cy)
    return g


def lstm_cell_graph(B: int = 3, H: int = 4, order=(0, 1, 2, 3), dtype: str = "float32",
                    input_size: int | None = None) -> Graph:
    """The whole cell: two matmuls, the gate sum (its terms ``x @ w_ih.T``, ``b_ih``,
    ``hx @ w_hh.T``, ``b_hh`` added in ``order``) and the elementwise tail; ``(hy, cy)`` out."""
    inp = H if input_size is None else input_size
    g = Graph("lstm_cell")
    x = g.add_input(T(dtype, B, inp), "x")
    hx, cx = (g.add_input(T(dtype, B, H), n) for n in ("hx", "cx"))
    w_ih, w_hh = g.add_input(T(dtype, 4 * H, inp), "w_ih"), g.add_input(T(dtype, 4 * H, H), "w_hh")
    b_ih, b_hh = (g.add_input(T(dtype, 4 * H), n) for n in ("b_ih", "b_hh"))
    none = g.constant(None)
    mm1 = emit(g, "tensor::matmul", x, emit(g, "tensor::transpose", w_ih, none))
    mm2 = emit(g, "tensor::matmul", hx, emit(g, "tensor::transpose", w_hh, none))
    terms = [(mm1, b_ih, mm2, b_hh)[k] for k in order]
    gates = terms[0]
    for t in terms[1:]:
        gates = emit(g, "tensor::add", gates, t)
    g.add_output(emit(g, "prim::TupleConstruct", *lstm_state_update(g, *lstm_gates(g, gates), cx)))
    return g
