"""The measurements behind the performance targets, at tiny sizes: peak memory, the torch
layer-norm twin, fresh-process first calls, re-specialization and the results file. Structure and
sane values only: no timing target is asserted."""

import json
import os

import numpy as np
import pytest

from benchmarks import respecialize
from benchmarks.fastrnns import bench, memory, report, results, runner
from benchmarks.fastrnns.factory import Sizes, layernorm_weights, rnn_inputs

TINY = ["--seqLength", "3", "--miniBatch", "2", "--inputSize", "4", "--hiddenSize", "4",
        "--warmup", "0", "--nloops", "1", "--quiet", "--device", "cpu"]
ALLOCATING = ["--seqLength", "50", "--miniBatch", "64", "--inputSize", "64", "--hiddenSize", "64",
              "--warmup", "0", "--nloops", "1", "--quiet", "--device", "cpu"]
"""Large enough that a forward + backward allocates several MB (py's tape alone is ~6 MB)."""

HAS_PROC = os.path.exists("/proc/self/clear_refs")


def _bench(tmp_path, *flags):
    path = tmp_path / "out.json"
    status = bench.main(list(flags) + ["--json", str(path)])
    return status, json.loads(path.read_text())


def _table(out, first):
    lines = out.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("name"))
    header = lines[start].split()
    rows = {}
    for line in lines[start + 1:]:
        if not line or line.startswith("("):
            break
        rows[line.split()[0]] = line
    assert first in rows
    return header, rows


# -- peak memory ----------------------------------------------------------------------------------
def test_peak_memory_counts_what_a_run_allocates():
    def allocate():
        a = np.ones((64, 1024, 1024 // 8))  # 64 MB of float64, every page touched
        return float(a[-1, -1, -1])

    peak = memory.peak_mb(allocate)
    if not HAS_PROC:
        assert peak is None
        return
    assert 60 <= peak <= 100
    assert memory.peak_mb(lambda: None) < 5


def test_peak_memory_is_unknown_when_the_peak_cannot_be_reset(monkeypatch):
    monkeypatch.setattr(memory, "_reset_peak", lambda: False)
    assert memory.peak_mb(lambda: np.ones(10**6)) is None
    assert memory.peak_mb(lambda: None, device="tpu") is None


def test_peak_memory_on_a_gpu_asks_cupys_pool(monkeypatch):
    import sys
    import types

    class Pool:
        """Holds 10 MB in use before the run; 74 MB held (used or cached) after it."""

        def __init__(self):
            self.held, self.freed = 10, False

        def free_all_blocks(self):
            self.freed = True

        def used_bytes(self):
            return 10 * 2**20

        def total_bytes(self):
            return self.held * 2**20

    pool = Pool()
    device = types.SimpleNamespace(synchronize=lambda: None)
    cupy = types.SimpleNamespace(get_default_memory_pool=lambda: pool,
                                 cuda=types.SimpleNamespace(Device=lambda: device))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.delitem(sys.modules, "torch", raising=False)

    def run():
        pool.held = 74
    assert memory.peak_mb(run, device="cuda") == 64
    assert pool.freed  # cached blocks of earlier rows do not count as this run's


def test_peak_column_and_its_ratio(capsys, tmp_path):
    status, payload = _bench(tmp_path, *ALLOCATING, "--rnns", "py", "script")
    out = capsys.readouterr().out
    assert status == 0
    header, rows = _table(out, "py")
    assert "peak_mb" in header and "peak_x_torch_lstm" in header
    for name in ("py", "script"):
        peak = payload["results"][name]["peak_mb"]
        if HAS_PROC:
            assert 1 < peak < 500, (name, peak)
        else:
            assert peak is None
    # no torch_lstm row in this run: no memory ratio
    assert payload["results"]["script"]["peak_ratios"] == {}


def test_peak_column_shows_a_dash_when_unknown(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "_reset_peak", lambda: False)
    status, payload = _bench(tmp_path, *TINY, "--rnns", "py")
    out = capsys.readouterr().out
    assert status == 0 and payload["results"]["py"]["peak_mb"] is None
    header, rows = _table(out, "py")
    assert rows["py"].split()[header.index("peak_mb")] == "-"


def test_peak_ratio_to_torch_lstm(capsys, tmp_path):
    pytest.importorskip("torch")
    status, payload = _bench(tmp_path, *ALLOCATING, "--rnns", "script", "torch_lstm")
    capsys.readouterr()
    assert status == 0
    r = payload["results"]
    if HAS_PROC:
        want = r["script"]["peak_mb"] / r["torch_lstm"]["peak_mb"]
        assert r["script"]["peak_ratios"]["torch_lstm"] == pytest.approx(want)
        assert r["torch_lstm"]["peak_ratios"]["torch_lstm"] == 1.0


# -- the torch layer-norm twin --------------------------------------------------------------------
def test_peers_add_the_layernorm_twin_only_with_a_layernorm_row():
    assert "torch_layernorm" in runner.select(["script_layernorm"], True, False)
    assert "torch_layernorm" in runner.select(["all"], True, False)
    assert "torch_layernorm" not in runner.select(["script"], True, False)
    assert "torch_layernorm" not in runner.select(["script_layernorm"], False, False)


def test_torch_layernorm_matches_the_scripted_layer():
    pytest.importorskip("torch")
    from benchmarks.fastrnns import cells, torch_models
    from benchmarks.fastrnns.factory import self_checked_creator

    inp = rnn_inputs(Sizes(4, 2, 6, 5, 3))
    ours = self_checked_creator(cells.layernorm_lstm_layer, layernorm_weights)(inp)
    theirs = torch_models.layernorm_creator(inp)
    got, saved = theirs.forward()
    want, back = ours.forward()
    for g, w in zip(got, want):
        np.testing.assert_allclose(torch_models.to_numpy(g), w, rtol=1e-4, atol=1e-5)
    rng = np.random.default_rng(0)
    ct = tuple(rng.standard_normal(w.shape).astype(np.float32) for w in want)
    got_grads = theirs.backward(saved, theirs.prepare_cotangent(ct))
    want_grads = ours.backward(back, ct)
    assert len(got_grads) == len(want_grads) == 3 + 2 * 8
    assert got_grads[0] is None and want_grads[0] is None  # the input sequence: not trained
    for g, w in zip(got_grads[1:], want_grads[1:]):
        np.testing.assert_allclose(torch_models.to_numpy(g), w, rtol=1e-3, atol=1e-4)


def test_layernorm_row_shows_its_ratio_to_the_twin(capsys, tmp_path):
    pytest.importorskip("torch")
    status, payload = _bench(tmp_path, *TINY, "--rnns", "script_layernorm", "--peers")
    out = capsys.readouterr().out
    assert status == 0
    r = payload["results"]
    assert r["torch_layernorm"]["status"] == "ok"
    assert r["torch_layernorm"]["check"]["passed"]
    assert r["torch_layernorm"]["check"]["against"] == "itself, unoptimized"
    peer = r["script_layernorm"]["peer_ratio"]
    assert peer["peer"] == "torch_layernorm"
    assert peer["fwd"] == pytest.approx(r["script_layernorm"]["avg_fwd"]
                                        / r["torch_layernorm"]["avg_fwd"])
    _, rows = _table(out, "script_layernorm")
    assert "(torch_layernorm)" in rows["script_layernorm"]
    assert "x_peer = this row / its torch eager twin" in out


# -- first calls ----------------------------------------------------------------------------------
def test_fresh_first_calls_compile_from_an_empty_cache(capsys, tmp_path):
    status, payload = _bench(tmp_path, *TINY, "--rnns", "py", "script", "--first-call", "fresh")
    out = capsys.readouterr().out
    assert status == 0
    script = payload["results"]["script"]
    assert script["first_call_how"] == "fresh"
    fresh = script["first_call_fresh"]
    for what in ("fwd", "fb"):
        assert fresh[what]["disk_hits"] == 0 and fresh[what]["kernels"] >= 1, fresh
        # kernels compile on threads of their own, beside each other and the compiler's work:
        # their summed compile time is not bounded by the call's wall time
        assert fresh[what]["ms"] > 0 and fresh[what]["kernel_ms"] > 0
        assert fresh[what]["ms"] >= fresh[what]["setup_ms"]
    assert fresh["fwd"]["plain"] is True
    assert fresh["fb"]["kernels"] > fresh["fwd"]["kernels"]  # the backward's kernels too
    assert (script["first_call_fwd"], script["first_call_fb"]) == (fresh["fwd"]["ms"],
                                                                   fresh["fb"]["ms"])
    # py compiles nothing: measured in this process
    assert payload["results"]["py"]["first_call_how"] == "here"
    assert "fresh process with an empty kernel disk cache" in out
    assert "native kernel(s) compiled for the plain forward" in out


def test_fresh_first_call_failure_is_a_note(capsys, tmp_path, monkeypatch):
    from benchmarks.fastrnns import firstcall
    monkeypatch.setattr(firstcall, "measure", lambda *a, **k: {"error": "exit status 1: boom"})
    status, payload = _bench(tmp_path, *TINY, "--rnns", "script", "--first-call", "fresh")
    capsys.readouterr()
    script = payload["results"]["script"]
    assert status == 0 and script["first_call_how"] == "here"
    assert any("fresh first call failed" in n and "boom" in n for n in script["notes"])


# -- re-specialization ----------------------------------------------------------------------------
def test_new_shapes_compile_no_native_kernel(capsys):
    status = respecialize.main(["--seqLength", "4", "--miniBatch", "4", "--inputSize", "8",
                                "--hiddenSize", "8", "--repeat", "1"])
    out = capsys.readouterr().out
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == respecialize.HEADER
    labels = ["new T and B", "new T", "new B"]  # longest first: "new T" prefixes another
    rows = {next(lab for lab in labels if line.startswith(lab)): line.split()
            for line in lines[1:4]}
    assert set(rows) == set(labels)
    # counted from the right: the label "new T and B" is several words
    compiled = respecialize.HEADER.index("kernels_compiled") - len(respecialize.HEADER)
    assert all(cells[compiled] == "0" for cells in rows.values())
    assert "0 expected: kernels do not depend on sizes" in out


def test_respecialization_record():
    args = respecialize.parse_args(["--seqLength", "3", "--miniBatch", "5", "--inputSize", "4",
                                    "--hiddenSize", "4", "--repeat", "1"])
    result = respecialize.run(args)
    assert [(c["T"], c["B"]) for c in result["cases"]] == [(1, 5), (3, 2), (1, 2)]
    for c in result["cases"]:
        assert c["kernels_compiled"] == 0 and c["kernels_added"] == 0
        assert c["fwd_compile_ms"] > 0 and c["fb_compile_ms"] > 0
        assert c["fwd_first_ms"] >= c["fwd_compile_ms"]  # the first call compiled
        assert c["fb_respecialize_ms"] == pytest.approx(c["fb_first_ms"] - c["fb_steady_ms"])


# -- the results file -----------------------------------------------------------------------------
def test_results_file_has_the_new_columns_and_sections(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(results, "CONFIGS", [
        ("Tiny", ["--rnns", "py", "script", "--first-call", "fresh"])])
    out = tmp_path / "r.md"
    status = results.main(TINY + ["--threads", "1", "--out", str(out)])
    capsys.readouterr()
    assert status == 0
    text = out.read_text()
    assert ("| name | avg_fwd | std_fwd | avg_bwd | std_bwd | first_fwd | first_fb | peak_mb |"
            in text)
    assert "First calls: scripted rows in fresh processes with an empty kernel disk cache." in text
    assert "## Re-specialization: a new sequence length or batch size" in text
    assert "| new T and B | 1 | 1 |" in text  # halved from the run's T=3, B=2
    assert "`peak_mb`" in text and "`x_peer`" in text


def test_results_compile_flag_adds_torch_compile(monkeypatch, tmp_path, capsys):
    seen = []

    def fake_run(args):
        seen.append(list(args.rnns))
        return {"config": dict(vars(args)), "results": {},
                "environment": report.environment("cpu")}

    monkeypatch.setattr(bench, "run", fake_run)
    monkeypatch.setattr(respecialize, "run",
                        lambda args: {"config": vars(args), "base": {"T": 1, "B": 1},
                                      "cases": []})
    out = tmp_path / "r.md"
    assert results.main(TINY + ["--compile", "--out", str(out)]) == 0
    assert len(seen) == len(results.CONFIGS)
    every_row = [r for r in seen if "all" in r]  # torch_compile joins the runs of every row
    assert len(every_row) == 2 and all(r[-1] == "torch_compile" for r in every_row)
    assert all("torch_compile" not in r for r in seen if "all" not in r)
    assert "--compile" in out.read_text()
    seen.clear()
    assert results.main(TINY + ["--out", str(out)]) == 0
    assert all("torch_compile" not in r for r in seen)
    capsys.readouterr()
