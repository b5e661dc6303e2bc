"""The fastrnns harness at tiny sizes: it runs, checks its variants, and prints and writes what it
promises. Structure only: no timing is ever asserted."""

import json

import numpy as np
import pytest

from benchmarks.fastrnns import bench, checks, report, runner

TINY = ["--seqLength", "3", "--miniBatch", "2", "--inputSize", "4", "--hiddenSize", "4",
        "--warmup", "1", "--nloops", "2", "--quiet", "--device", "cpu"]


def _run(capsys, *flags):
    status = bench.main(TINY + list(flags))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_default_variants_are_checked_and_timed(capsys, tmp_path):
    path = tmp_path / "out.json"
    status, out, _ = _run(capsys, "--json", str(path))
    assert status == 0
    header = next(line for line in out.splitlines() if line.startswith("name")).split()
    assert header == ["name", "avg_fwd", "std_fwd", "avg_bwd", "std_bwd", "first_fwd",
                      "first_fb", "peak_mb", "x_py", "x_torch_lstm", "x_floor",
                      "peak_x_torch_lstm", "x_peer"]
    payload = json.loads(path.read_text())
    results = payload["results"]
    assert list(results) == runner.DEFAULT_RNNS
    for name in runner.DEFAULT_RNNS:
        r = results[name]
        assert r["status"] == "ok", (name, r)
        assert r["check"]["passed"]
        assert len(r["fwd_times"]) == 2 and r["avg_fwd"] > 0
        assert r["first_call"] >= r["first_fwd"] > 0
        assert r["first_call_fb"] >= r["first_call_fwd"] > 0 and r["first_call_how"] == "here"
        assert name in out
    # every scripted LSTM row was compared with py, gradients too where it has a backward
    for name in ("script", "script_premul", "script_premul_bias", "script_simple"):
        check = results[name]["check"]
        assert check["against"] == "py" and check["bwd_error"] is not None
        assert check["fwd_error"] <= check["fwd_tol"]
        assert len(results[name]["bwd_times"]) == 2
    assert results["py"]["ratios"]["py"] == {"fwd": 1.0, "bwd": 1.0}
    assert set(results["script"]["ratios"]) == {"py", "floor"}
    env = payload["environment"]
    assert {"cpu", "blas", "versions", "date", "load_average"} <= set(env)
    assert env["versions"]["numpy"]
    assert payload["config"]["seqLength"] == 3 and payload["config"]["nloops"] == 2


def test_extra_and_variable_length_variants(capsys):
    status, out, err = _run(capsys, "--rnns", "script_gru", "script_layernorm",
                            "script_dropout", "--variable-lstms", "--print-json")
    assert status == 0
    assert "Benchmarking variable-length sequence LSTMs..." in err
    data = json.loads(out)
    assert set(data["lstm"]) == {"script_gru", "script_layernorm", "script_dropout"}
    assert set(data["vl_lstm"]) == {"vl_py", "vl_script"}
    assert "script_gru" in data["lstm-backward"] and "vl_py" in data["vl_lstm-backward"]


def test_table_goes_to_stderr_with_print_json(capsys):
    status, out, err = _run(capsys, "--rnns", "py", "script", "--print-json", "--sep", ",")
    assert status == 0
    assert set(json.loads(out)) == {"lstm", "lstm-backward"}
    table = [line for line in err.splitlines() if line.startswith(("name", "py", "script"))]
    assert table[0].split(",")[:3] == ["name", "avg_fwd", "std_fwd"]
    assert len(table) == 3


def test_pep_lines_one_per_timed_iteration(capsys):
    status, out, _ = _run(capsys, "--rnns", "py", "--print-json", "pep")
    assert status == 0
    lines = out.strip().splitlines()
    assert len(lines) == 4  # 2 forward + 2 backward iterations
    record = json.loads(lines[0].split(" ", 1)[1])
    assert record["metric"] == "lstm-py" and record["unit"] == "ms"


def test_two_layers_run_stacked(capsys, tmp_path):
    path = tmp_path / "out.json"
    status, _, _ = _run(capsys, "--numLayers", "2", "--rnns", "py", "script", "script_simple",
                        "--json", str(path))
    assert status == 0
    results = json.loads(path.read_text())["results"]
    assert results["script"]["check"]["passed"]
    assert results["script_simple"]["status"] == "skipped"
    assert "numLayers 1" in results["script_simple"]["notes"][0]


def test_wrong_results_fail_the_check():
    bad = [[0.0, 1.0], [2.0]]
    assert checks.max_error(bad, [[0.0, 1.0], [2.5]])[0] == pytest.approx(0.2)
    assert checks.max_error([[1.0]], [[1.0], [2.0]])[0] == float("inf")


def test_unknown_variant_is_an_error(capsys):
    assert bench.main(TINY + ["--rnns", "no_such_rnn"]) == 2
    assert "no_such_rnn" in capsys.readouterr().err


def test_peers(capsys):
    pytest.importorskip("torch")
    status, out, _ = _run(capsys, "--rnns", "py", "--peers", "--warmup", "0", "--nloops", "1")
    assert status == 0
    for name in runner.PEER_RNNS:
        assert any(line.startswith(name + " ") for line in out.splitlines()), name


def test_peers_without_torch_are_skipped_with_a_message(capsys, monkeypatch):
    monkeypatch.setattr(runner, "torch_available", lambda: "ModuleNotFoundError: torch")
    status, out, _ = _run(capsys, "--rnns", "py", "--peers")
    assert status == 0
    assert "skipping torch_lstm, torch_script, torch_eager: torch does not import" in out
    assert not any(line.startswith("torch_") for line in out.splitlines())


def test_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "bars.png"
    status, _, err = _run(capsys, "--rnns", "py", "floor", "--plot", str(path))
    assert status == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {path}" in err


def test_plot_without_matplotlib_says_so(monkeypatch, tmp_path):
    import builtins
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    message = report.write_plot({"results": {}}, str(tmp_path / "x.png"))
    assert "matplotlib is not installed" in message


def test_progress_without_tqdm_counts_on_stderr(capsys, monkeypatch):
    import builtins

    from benchmarks.fastrnns.progress import Progress
    real_import = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name == "tqdm":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    progress = Progress(3)
    progress.describe("script")
    progress.update()
    progress.close()
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "1/3 script" in captured.err


def test_threads_fuser_and_passes_flags(capsys, tmp_path):
    path = tmp_path / "out.json"
    status, _, _ = _run(capsys, "--rnns", "py", "script", "--threads", "1", "--fuser", "off",
                        "--disable-passes", "unroll", "--json", str(path))
    assert status == 0
    payload = json.loads(path.read_text())
    assert payload["results"]["script"]["check"]["passed"]
    pools = payload["environment"]["blas"]["threadpools"]
    if isinstance(pools, list):  # threadpoolctl installed: the limit was in force
        assert all(p["num_threads"] == 1 for p in pools if p["internal_api"] == "openblas")


def test_front_end_rows_are_checked_against_their_twins(capsys, tmp_path):
    """The rnn.LSTM / rnn.GRU rows (as users call them) and the hand-written twins with the same
    layers and directions run by default; each row's outputs and gradients are checked, and
    with torch installed so are the torch twins."""
    path = tmp_path / "out.json"
    peers = ["--peers"] if runner.torch_available() is None else []
    status, out, _ = _run(capsys, "--rnns", *runner.FRONT_END_RNNS, *peers, "--json", str(path))
    assert status == 0
    assert set(runner.FRONT_END_RNNS) <= set(runner.DEFAULT_RNNS)
    results = json.loads(path.read_text())["results"]
    twins = ["torch_lstm_2l", "torch_lstm_bidir", "torch_gru"] if peers else []
    for name in [n for n in runner.FRONT_END_RNNS if n.startswith("rnn_")] + twins:
        check = results[name]["check"]
        assert results[name]["status"] == "ok" and check["passed"], (name, check)
        assert check["bwd_error"] is not None and check["bwd_error"] <= check["bwd_tol"]
    assert results["rnn_lstm"]["check"]["against"] == "py"


@pytest.mark.parametrize("name", ["script", "script_simple", "script_multilayer"])
def test_training_rows_do_not_differentiate_the_input_sequence(name):
    """Like torch_lstm (an input that does not require grad), the scripted training rows
    differentiate the initial states and the weights only: dx is None, the others are there."""
    from benchmarks.fastrnns.factory import Sizes, rnn_inputs
    inputs = rnn_inputs(Sizes(seq_length=3, mini_batch=2, input_size=4, hidden_size=4))
    model = runner.RUNNERS[name].create(inputs)
    outputs, saved = model.forward()
    ct = checks.random_like(outputs, np.random.default_rng(0), inputs.xp)
    grads = model.backward(saved, ct)
    assert grads[0] is None
    assert all(g is not None for g in grads[1:])


def test_all_grads_row_differentiates_the_input_sequence_too():
    from benchmarks.fastrnns.factory import Sizes, rnn_inputs
    inputs = rnn_inputs(Sizes(seq_length=3, mini_batch=2, input_size=4, hidden_size=4))
    reference = runner.RUNNERS["py"].create(inputs)
    model = runner.RUNNERS["script_all_grads"].create(inputs)
    outputs, saved = model.forward()
    ct = checks.random_like(outputs, np.random.default_rng(0), inputs.xp)
    grads = model.backward(saved, ct)
    want = reference.backward(reference.forward()[1], ct)
    assert grads[0] is not None
    assert checks.max_error(grads, want)[0] < 1e-4


def test_busy_times_each_row_again_beside_a_spinning_process(capsys, tmp_path):
    path = tmp_path / "busy.json"
    status, out, _ = _run(capsys, "--rnns", "script", "--busy", "--threads", "1", "--json",
                          str(path))
    assert status == 0
    record = json.loads(path.read_text())["results"]["script"]
    assert record["busy_fwd"] > 0 and record["busy_bwd"] > 0 and record["busy_ratio"] > 0
    assert "script: busy neighbour: forward" in out
