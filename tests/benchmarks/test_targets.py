"""benchmarks.fastrnns.targets: the performance targets read off one results run."""

from benchmarks.fastrnns import targets


def _rec(fwd, bwd, **extra):
    return {"status": "ok", "avg_fwd": fwd, "avg_bwd": bwd, **extra}


def _sections():
    seed = {"results": {
        "script": _rec(110.0, 200.0, first_call_fwd=900.0, first_call_fb=2500.0, peak_mb=100.0),
        "torch_lstm": _rec(100.0, 200.0, peak_mb=100.0), "floor": _rec(100.0, 190.0),
        "torch_script": _rec(200.0, 300.0)}}
    small = {"results": {"script": _rec(1.0, 1.0), "torch_lstm": _rec(1.0, 1.0),
                         "floor": _rec(0.5, 0.5)}}
    return {"seed": seed, "small": small}


def test_ratios_limits_and_the_floor_column():
    got = {t.text: (value, floor) for t, value, floor in targets.evaluate(_sections())}
    value, floor = got["seed: forward <= 1.10x torch nn.LSTM"]
    assert abs(value - 1.10) < 1e-12 and floor == 1.0
    value, floor = got["seed: torch_script forward >= 1.5x script's"]
    assert abs(value - 200 / 110) < 1e-12 and floor == 2.0
    assert got["seed: forward+backward <= 0.95x torch nn.LSTM"][0] == 310 / 300
    assert got["seed: first call forward+backward <= 2000 ms"] == (2500.0, None)
    assert got["small: torch_compile forward >= 2x script's"] == (None, None)  # no such row


def test_table_says_met_missed_and_not_measured():
    table = "\n".join(targets.lines(_sections(), {"cases": [
        {"fwd_compile_ms": 4.0, "fb_compile_ms": 60.0, "kernels_compiled": 0}]}))
    assert "| seed: forward <= 1.10x torch nn.LSTM | 1.10x | yes | 1.00x |" in table
    assert "| seed: first call forward+backward <= 2000 ms | 2500 ms | no | - |" in table
    assert "| small: torch_compile forward >= 2x script's | not measured | - | - |" in table
    assert "| 60 ms, 0 kernels | no |" in table  # the gradient compile took over 50 ms
