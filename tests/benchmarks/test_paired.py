"""benchmarks.fastrnns.paired: two rows timed side by side, and the targets and results file that
read it. Structure and arithmetic only: no timing is asserted."""

import contextlib
import dataclasses
import json

import numpy as np
import pytest

from benchmarks import respecialize
from benchmarks.fastrnns import bench, paired, report, results, runner, targets

TINY = ["--seqLength", "3", "--miniBatch", "2", "--inputSize", "4", "--hiddenSize", "4",
        "--warmup", "1", "--quiet", "--device", "cpu"]


def _paired(capsys, tmp_path, *flags):
    path = tmp_path / "paired.json"
    status = paired.main(TINY + list(flags) + ["--json", str(path)])
    out = capsys.readouterr().out
    return status, out, json.loads(path.read_text()) if path.exists() else None


def test_pairs_are_timed_in_alternated_rounds(capsys, tmp_path):
    status, out, payload = _paired(capsys, tmp_path, "--pairs", "script:floor,rnn_lstm:script",
                                   "--rounds", "3", "--threads", "1")
    assert status == 0
    assert [(p["a"], p["b"], p["status"]) for p in payload["pairs"]] == [
        ("script", "floor", "ok"), ("rnn_lstm", "script", "ok")]
    assert set(payload["rows"]) == {"script", "floor", "rnn_lstm"}  # each row built once
    assert payload["rows"]["script"]["check"]["against"] == "py"
    for record in payload["pairs"]:
        for name in (record["a"], record["b"]):
            assert len(record["times"][name]["fwd"]) == 3
            assert len(record["times"][name]["fb"]) == 3
            # forward + backward of a round includes that round's forward
            assert all(fb > fwd for fwd, fb in zip(record["times"][name]["fwd"],
                                                    record["times"][name]["fb"]))
        for figure in ("fwd", "fb"):
            stats = record[figure]
            a, b = record["times"][record["a"]][figure], record["times"][record["b"]][figure]
            assert stats["a_ms"] == pytest.approx(float(np.median(a)))
            assert stats["b_ms"] == pytest.approx(float(np.median(b)))
            assert stats["ratio"] == pytest.approx(stats["a_ms"] / stats["b_ms"])
            assert stats["q1"] <= stats["q3"]
    header = next(line for line in out.splitlines() if line.startswith("pair"))
    assert header.split() == ["pair", "fwd_a", "fwd_b", "x_fwd", "x_fwd_q1-q3", "fb_a", "fb_b",
                              "x_fb", "x_fb_q1-q3"]
    assert any(line.startswith("script:floor ") for line in out.splitlines())
    assert "medians over 3 rounds of alternated calls" in out
    assert payload["config"]["threads"] == 1


def test_ratio_is_of_the_medians_not_the_median_of_round_ratios():
    a = {"fwd": [1.0, 4.0, 9.0], "fb": [2.0, 5.0, 10.0]}
    b = {"fwd": [1.0, 8.0, 3.0], "fb": []}  # b has no backward
    got = paired.summarize(a, b)
    # medians 4 / 3; the rounds' own ratios 1, 0.5, 3 have median 1
    assert got["fwd"]["ratio"] == pytest.approx(4 / 3)
    assert (got["fwd"]["a_ms"], got["fwd"]["b_ms"]) == (4.0, 3.0)
    assert (got["fwd"]["q1"], got["fwd"]["q3"]) == pytest.approx((0.75, 2.0))
    assert got["fb"] is None


def test_ratio_lookup_inverts_a_pair_measured_the_other_way():
    payload = {"pairs": [
        {"a": "torch_lstm", "b": "script", "status": "ok",
         "fwd": {"a_ms": 2.0, "b_ms": 1.0, "ratio": 2.0}, "fb": None},
        {"a": "rnn_lstm", "b": "script", "status": "not measured", "reason": "rnn_lstm error"}]}
    assert paired.ratio(payload, "torch_lstm", "script", "fwd") == 2.0
    assert paired.ratio(payload, "script", "torch_lstm", "fwd") == 0.5
    assert paired.ratio(payload, "script", "torch_lstm", "fb") is None
    assert paired.ratio(payload, "rnn_lstm", "script", "fwd") is None
    assert paired.ratio(None, "script", "torch_lstm", "fwd") is None


@pytest.mark.parametrize("pairs, message", [
    ("script:no_such_row", "unknown row(s) no_such_row"),
    ("script", "is not ROW_A:ROW_B"),
    ("script:script", "pairs a row with itself"),
    ("script:vl_script", "run on different inputs"),
    (",", "no pair given"),
])
def test_bad_pairs_are_refused(capsys, pairs, message):
    assert paired.main(TINY + ["--pairs", pairs]) == 2
    assert message in capsys.readouterr().err


def test_a_row_that_fails_its_check_is_not_timed(capsys, tmp_path, monkeypatch):
    def doubled_output(inputs):
        model = runner.RUNNERS["py"].create(inputs)

        def forward():
            (y, h, c), saved = model.forward()
            return (2 * y, h, c), saved
        return dataclasses.replace(model, forward=forward, reference="py")

    monkeypatch.setitem(runner.RUNNERS, "wrong", runner.Runner("wrong", doubled_output))
    status, out, payload = _paired(capsys, tmp_path, "--pairs", "wrong:script,script:floor",
                                   "--rounds", "1")
    assert status == 1
    assert payload["rows"]["wrong"]["status"] == "check failed"
    first, second = payload["pairs"]
    assert first["status"] == "not measured" and first["reason"] == "wrong check failed"
    assert second["status"] == "ok"
    assert "wrong:script: not measured: wrong check failed" in out


def test_rows_run_under_the_given_threads_and_compiler_settings(capsys, tmp_path, monkeypatch):
    seen = []
    real = bench.compiler_settings

    @contextlib.contextmanager
    def spy(args, say):
        with real(args, say):
            seen.append((args.threads, args.fuser, args.disable_passes))
            yield

    monkeypatch.setattr(bench, "compiler_settings", spy)
    status, _, _ = _paired(capsys, tmp_path, "--pairs", "script:floor", "--rounds", "1",
                           "--threads", "1", "--fuser", "off", "--disable-passes", "unroll")
    assert status == 0
    assert seen == [(1, "off", "unroll")]


def test_flags_from_a_harness_config_reproduce_its_settings():
    config = vars(bench.parse_args(["--seqLength", "7", "--miniBatch", "3", "--threads", "1",
                                    "--fuser", "off", "--device", "cpu", "--quiet"]))
    args = paired.parse_args(paired.flags_from_config(config) + ["--pairs", "script:floor"])
    for key in ("seqLength", "miniBatch", "inputSize", "hiddenSize", "numLayers", "dtype",
                "device", "seed", "threads", "fuser", "disable_passes", "quiet"):
        assert getattr(args, key) == config[key], key


# -- targets ------------------------------------------------------------------------------------
def _rec(fwd, bwd):
    return {"status": "ok", "avg_fwd": fwd, "avg_bwd": bwd}


def test_targets_are_judged_side_by_side_when_measured():
    side = {"pairs": [{"a": "script", "b": "torch_lstm", "status": "ok",
                       "fwd": {"a_ms": 90.0, "b_ms": 100.0, "ratio": 0.9},
                       "fb": {"a_ms": 290.0, "b_ms": 300.0, "ratio": 290 / 300}}]}
    seed = {"results": {"script": _rec(110.0, 200.0), "torch_lstm": _rec(100.0, 200.0),
                        "floor": _rec(100.0, 190.0)}, "paired": side}
    got = {e.target.text: e for e in targets.evaluate({"seed": seed})}
    fwd = got["seed: forward <= 1.0x torch nn.LSTM"]
    assert fwd.serial == pytest.approx(1.10) and fwd.side_by_side == 0.9
    assert fwd.value == 0.9 and fwd.met  # the serial 1.10x alone would miss the target
    fb = got["seed: forward+backward <= 0.95x torch nn.LSTM"]
    assert fb.side_by_side == pytest.approx(290 / 300) and fb.met is False
    table = "\n".join(targets.lines({"seed": seed}, None))
    assert "| target | serial | side by side | met | at the GEMM floor |" in table
    assert "| seed: forward <= 1.0x torch nn.LSTM | 1.10x | 0.90x | yes | 1.00x |" in table
    # without a side-by-side measurement the serial ratio decides
    del seed["paired"]
    fwd = {e.target.text: e for e in targets.evaluate({"seed": seed})}[
        "seed: forward <= 1.0x torch nn.LSTM"]
    assert fwd.side_by_side is None and fwd.value == pytest.approx(1.10) and not fwd.met


def test_target_pairs_are_the_ratios_of_two_rows_times():
    assert targets.pairs("seed") == [("script", "torch_lstm"), ("script_all_grads", "script"),
                                     ("torch_script", "script"),
                                     ("torch_layernorm", "script_layernorm")]
    assert targets.pairs("seed1") == [("script", "floor")]
    assert ("rnn_gru", "torch_gru") in targets.pairs("small1")
    assert targets.pairs("nowhere") == []


# -- the results file -----------------------------------------------------------------------------
def _fake_harness(monkeypatch, rows):
    def fake_run(args):
        records = {n: {"group": "lstm", "std_fwd": 0.0, "std_bwd": 0.0, **_rec(1.0, 1.0)} if ok
                   else {"group": "lstm", "status": "error", "notes": []}
                   for n, ok in rows.items()}
        bench.add_ratios(records)
        return {"config": dict(vars(args)), "environment": report.environment("cpu"),
                "results": records}

    monkeypatch.setattr(bench, "run", fake_run)
    monkeypatch.setattr(respecialize, "run",
                        lambda args: {"config": vars(args), "base": {"T": 1, "B": 1},
                                      "cases": []})


def test_results_measure_each_sections_pairs_of_rows_that_ran(monkeypatch, tmp_path, capsys):
    _fake_harness(monkeypatch, {"script": True, "torch_lstm": True, "floor": True,
                                "script_all_grads": False})
    calls = []

    def fake_paired(args):
        calls.append((args.pairs, args.rounds, args.threads, args.seqLength))
        return {"config": dict(vars(args)), "rows": {}, "pairs": []}

    monkeypatch.setattr(paired, "run", fake_paired)
    out = tmp_path / "r.md"
    assert results.main(TINY + ["--out", str(out)]) == 1  # script_all_grads raised
    # seed: script_all_grads errored and torch_script, torch_layernorm did not run
    assert calls[0] == ("script:torch_lstm", results.PAIRED_ROUNDS["seed"], None, 3)
    assert calls[1] == ("script:torch_lstm", results.PAIRED_ROUNDS["small"], None, 3)
    assert calls[2] == ("script:floor", results.PAIRED_ROUNDS["seed1"], 1, 3)
    assert calls[3] == ("script:torch_lstm", results.PAIRED_ROUNDS["small1"], 1, 3)
    assert len(calls) == 4
    assert "### Side by side" in out.read_text()
    calls.clear()
    assert results.main(TINY + ["--paired-rounds", "0", "--out", str(out)]) == 1
    assert calls == []
    assert "### Side by side" not in out.read_text()
    assert "--paired-rounds 0" in out.read_text()  # the file says how it was made
    capsys.readouterr()


def test_results_file_shows_the_side_by_side_ratio(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(results, "CONFIGS", [("Tiny", ["--rnns", "script", "floor"])])
    monkeypatch.setattr(results, "SECTION_KEYS", ("seed1",))
    monkeypatch.setattr(respecialize, "run",
                        lambda args: {"config": vars(args), "base": {"T": 1, "B": 1},
                                      "cases": []})
    out = tmp_path / "r.md"
    assert results.main(TINY + ["--nloops", "1", "--threads", "1", "--paired-rounds", "2",
                                "--out", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text()
    row = next(line for line in text.splitlines()
               if line.startswith("| seed, 1 thread: forward <= 1.05x the GEMM floor |"))
    serial, side = row.split(" | ")[1:3]
    assert serial.endswith("x") and side.endswith("x")
    assert "### Side by side" in text and "| script:floor |" in text
    assert "judged on the side-by-side ratio where there is one" in text


def test_untimed_calls_fill_the_warm_time_after_the_rest(monkeypatch):
    assert paired.warm_calls(20.0, 0.0) == 1  # no call timed yet
    assert paired.warm_calls(20.0, 0.2) == 1  # a 200 ms call: one
    assert paired.warm_calls(20.0, 0.003) == 7  # 3 ms calls: 21 ms of them
    assert paired.warm_calls(0.0, 0.003) == 1  # none asked: still one after the rest
    assert paired.warm_calls(20.0, 1e-7) == 100
    calls = []
    monkeypatch.setattr(paired.time, "sleep", lambda s: None)
    monkeypatch.setattr(paired.bench, "time_call",
                        lambda model, ct, sync: calls.append(model) or (0.004, 0, 0.001, 0))
    prepared = {n: bench.Prepared({"status": "ok"}, n) for n in ("a", "b")}
    record = paired.measure_pair("a", "b", prepared, 0, 2, lambda: None, settle=0.1,
                                 warm_ms=20.0)
    # each timed call after the rest: 1 untimed call (no time known yet), then 4 of 5 ms
    assert calls == ["a", "a", "b", "b"] + ["b"] * 5 + ["a"] * 5
    assert record["fwd"]["ratio"] == 1.0
