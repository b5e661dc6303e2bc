"""The profiler: ``with script.profile() as prof:`` around scripted calls."""

import json
import time

import numpy as np

from script import Tensor, ops, script
from tests.programs import cells

T, B, IN, H = 8, 64, 256, 256


def _layer_args(seed=0, size=H):
    rng = np.random.default_rng(seed)
    IN = H = size
    shapes = [(T, B, IN), (B, H), (B, H), (4 * H, IN), (4 * H, H), (4 * H,), (4 * H,)]
    return tuple((0.1 * rng.standard_normal(s)).astype(np.float32) for s in shapes)


def odd_gate(x: Tensor, w: Tensor) -> Tensor:
    a = x @ w
    return np.tanh(a) * 3.125 + ops.sigmoid(a) * 1.0625


def _profile_layer(f, args, calls=5):
    """A profile of one untimed call (it builds the instrumented code, like a first compile)
    and ``calls`` timed ones; returns the profile, the timed calls' wall time, and the node and
    call seconds the profile recorded for the timed calls alone."""
    wall = 0.0
    with script.profile() as prof:
        f(*args)
        nodes_before, calls_before = prof.node_seconds, prof.call_seconds
        for _ in range(calls):
            start = time.perf_counter()
            f(*args)
            wall += time.perf_counter() - start
    return prof, wall, prof.node_seconds - nodes_before, prof.call_seconds - calls_before


def test_node_times_add_up_to_the_wall_time_of_the_calls():
    f = script(cells.lstm_layer)
    # nodes of a size whose time is the matmuls' (at H=256 the Python between nodes was 1.5% of
    # a quiet call, and a busy 2-core CI machine once left every one of five sessions at <= 89.5%)
    args = _layer_args(size=512)
    f(*args)  # compiled outside: only the calls are measured
    # a busy machine only ever adds wall time the nodes did not see (a preempted thread between
    # two nodes), so the best session is the one to hold to the 90% bound: sessions run until one
    # reaches it, ten at most
    sessions = []
    while len(sessions) < 10 and not any(s[2] >= 0.9 * s[1] for s in sessions):
        sessions.append(_profile_layer(f, args))
    for _, wall, nodes, calls in sessions:
        assert nodes <= calls <= wall
    prof, wall, nodes, _ = max(sessions, key=lambda s: s[2] / s[1])
    assert nodes >= 0.9 * wall
    rows = prof.stats
    fusion = [k for k, s in rows.items() if s.category == "fusion"]
    assert fusion == [k for k in rows if k.startswith("lstm_layer/FusionGroup_0 [add, ")]
    assert rows[fusion[0]].calls == 6 * T
    matmuls = {k: s for k, s in rows.items() if s.category == "matmul"}
    assert len(matmuls) == 2  # the hoisted input projection and the per-step matmul
    assert sorted(s.calls for s in matmuls.values()) == [6, 6 * T]
    assert rows["call lstm_layer"].calls == 6


def test_results_are_unchanged_and_the_fast_code_is_untouched():
    f = script(cells.lstm_layer)
    args = _layer_args(1)
    plain = f(*args)
    with script.profile() as prof:
        profiled = f(*args)
    # profiled calls run their loops as Python (node by node), whose products numpy computes:
    # equal to the native loop's up to float32 rounding
    np.testing.assert_allclose(profiled[0], plain[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(profiled[1][1], plain[1][1], rtol=1e-5, atol=1e-6)
    assert "_prof" not in f.code_for(*args)
    recorded = {k: s.calls for k, s in prof.stats.items()}
    f(*args)  # after the block: nothing more is recorded
    assert {k: s.calls for k, s in prof.stats.items()} == recorded


def test_first_call_compile_time_is_split_by_stage():
    f = script(odd_gate)
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((8, 5)), rng.standard_normal((5, 7))
    with script.profile() as prof:
        f(x, w)
        f(x, w)
    compile_rows = prof.totals("compile")
    assert set(compile_rows) == {"compile: frontend", "compile: passes", "compile: codegen",
                                 "compile: native compile"}
    assert all(seconds >= 0 for seconds in compile_rows.values())
    assert prof.stats["compile: passes"].calls == 1  # the second call hits the cache
    np.testing.assert_allclose(f(x, w), odd_gate(x, w), rtol=1e-12)


def test_table_is_sorted_by_total_time():
    f = script(cells.gru_cell)
    rng = np.random.default_rng(3)
    args = tuple(rng.standard_normal(s).astype(np.float32)
                 for s in [(4, 8), (4, 6), (18, 8), (18, 6), (18,), (18,)])
    with script.profile() as prof:
        for _ in range(3):
            f(*args)
    table = prof.table()
    assert table == str(prof)
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["name", "category", "calls"]
    names = [line.split("  ")[0].strip() for line in lines[1:-1]]
    totals = [prof.stats[n].total for n in names]
    assert totals == sorted(totals, reverse=True)
    assert set(names) == set(prof.stats)
    assert any(n.startswith("gru_cell/FusionGroup_0") for n in names)


def test_chrome_trace_is_valid_trace_event_json(tmp_path):
    f = script(cells.gru_cell)
    rng = np.random.default_rng(4)
    args = tuple(rng.standard_normal(s).astype(np.float32)
                 for s in [(4, 8), (4, 6), (18, 8), (18, 6), (18,), (18,)])
    with script.profile() as prof:
        f(*args)
        f(*args)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    assert events
    for e in events:
        assert {"name", "ph", "ts", "dur", "pid", "tid", "cat"} <= set(e)
        assert e["ph"] == "X"
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
        assert e["dur"] >= 0 and e["ts"] >= 0
    assert sum(1 for e in events if e["cat"] == "call") == 2
    assert {"fusion", "matmul"} <= {e["cat"] for e in events}


def test_nested_profiles_restore_the_outer_one():
    f = script(cells.rnn_tanh_cell)
    rng = np.random.default_rng(5)
    args = tuple(rng.standard_normal(s) for s in [(2, 3), (2, 4), (4, 3), (4, 4), (4,), (4,)])
    with script.profile() as outer:
        with script.profile() as inner:
            f(*args)
        f(*args)
    assert inner.stats["call rnn_tanh_cell"].calls == 1
    assert outer.stats["call rnn_tanh_cell"].calls == 1


def test_gradient_calls_are_profiled_with_equal_results():
    from script import vjp
    f = script(cells.lstm_layer)
    args = _layer_args(2)
    outs, back = vjp(f, *args)
    cts = tuple(np.ones_like(o) for o in outs)
    plain = back(cts)
    with script.profile() as prof:
        p_outs, p_back = vjp(f, *args)
        profiled = p_back(cts)
    for a, b in zip((*outs, *plain), (*p_outs, *profiled)):  # Python loops when profiled
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(b).max())
    rows = prof.stats
    assert rows["call lstm_layer (forward)"].calls == 1
    assert rows["call lstm_layer (backward)"].calls == 1
    backward_groups = [k for k, s in rows.items()
                       if s.category == "fusion" and k.startswith("lstm_layer (backward)/")]
    assert backward_groups and all(rows[k].calls == T for k in backward_groups)
    assert prof.node_seconds <= prof.call_seconds
