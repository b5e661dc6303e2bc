"""benchmarks.fastrnns.targets: the performance targets read off one results run."""

from benchmarks.fastrnns import targets


def _rec(fwd, bwd, **extra):
    return {"status": "ok", "avg_fwd": fwd, "avg_bwd": bwd, **extra}


def _sections():
    seed = {"results": {
        "script": _rec(110.0, 200.0, first_call_fwd=900.0, first_call_fb=2500.0, peak_mb=100.0,
                       busy_ratio=1.1),
        "script_all_grads": _rec(110.0, 250.0, busy_ratio=1.4),
        "torch_lstm": _rec(100.0, 200.0, peak_mb=100.0),
        "floor": _rec(100.0, 190.0, busy_ratio=1.25),
        "torch_script": _rec(200.0, 300.0, busy_ratio=9.0)}}
    small = {"results": {"script": _rec(1.0, 1.0), "torch_lstm": _rec(1.0, 1.0),
                         "floor": _rec(0.5, 0.5)}}
    seed1 = {"results": {"script": _rec(102.0, 1.0), "floor": _rec(100.0, 1.0)}}
    return {"seed": seed, "small": small, "seed1": seed1}


def test_ratios_limits_and_the_floor_column():
    got = {e.target.text: (e.serial, e.at_floor) for e in targets.evaluate(_sections())}
    value, floor = got["seed: forward <= 1.0x torch nn.LSTM"]
    assert abs(value - 1.10) < 1e-12 and floor == 1.0
    value, floor = got["seed: torch_script forward >= 1.5x script's"]
    assert abs(value - 200 / 110) < 1e-12 and floor == 2.0
    assert got["seed: forward+backward <= 0.95x torch nn.LSTM"][0] == 310 / 300
    assert got["seed: first call forward+backward <= 2000 ms"] == (2500.0, None)
    assert got["small: torch_compile forward >= 2x script's"] == (None, None)  # no such row
    assert abs(got["seed, 1 thread: forward <= 1.05x the GEMM floor"][0] - 1.02) < 1e-12
    # the saving of differentiating states and weights only: two scripted rows, no floor column
    assert got["seed: differentiating the input sequence too costs >= 1.0x states + weights "
               "(forward+backward)"] == (360 / 310, None)


def test_busy_target_takes_the_worst_scripted_row():
    got = {e.target.text: e.serial for e in targets.evaluate(_sections())}
    # torch_script's 9.0 is not a scripted row; script_all_grads' 1.4 is the worst one
    assert got["seed: busy neighbour: worst scripted row <= 1.3x its quiet time"] == 1.4
    assert got["small: busy neighbour: worst scripted row <= 1.3x its quiet time"] is None
    assert targets.worst(_sections()["seed"]["results"], "script", "busy") == \
        ("script_all_grads", 1.4)


def test_profile_of_a_floor_slower_than_the_row():
    sections = _sections()
    sections["seed"]["results"]["floor"] = _rec(130.0, 190.0)  # the row split its loop
    table = "\n".join(targets.lines(sections, None))
    assert ("| seed: forward <= 1.0x torch nn.LSTM | 1.10x | - | no | 1.30x | floor slower: its "
            "step GEMMs on one thread |") in table


def test_table_says_met_missed_and_not_measured():
    table = "\n".join(targets.lines(_sections(), {"cases": [
        {"fwd_compile_ms": 4.0, "fb_compile_ms": 60.0, "kernels_compiled": 0}]}))
    assert ("| seed: forward <= 1.0x torch nn.LSTM | 1.10x | - | no | 1.00x | "
            "GEMMs 91% of script |") in table
    assert "| seed: first call forward+backward <= 2000 ms | 2500 ms | - | no | - |" in table
    assert "| small: torch_compile forward >= 2x script's | not measured | - | - | - |" in table
    assert ("| seed: busy neighbour: worst scripted row <= 1.3x its quiet time | "
            "1.40x (script_all_grads) | - | no | - | GEMMs alone 1.25x |") in table
    assert "| small, 1 thread: forward <= 0.9x torch nn.LSTM | not measured | - | - | - |" in table
    assert "| 60 ms, 0 kernels | - | no |" in table  # the gradient compile took over 50 ms
    # the profile of a miss: floor's share of script's time (fwd 100/110, fb 290/310); none for
    # a target met or without a floor row
    assert "| 1.02x | - | yes | - | - |" in table  # seed, 1 thread: met
    assert ("| seed: forward+backward <= 0.95x torch nn.LSTM | 1.03x | - | no | 0.97x | "
            "GEMMs 94% of script |") in table
    assert "| small: busy neighbour: worst scripted row <= 1.3x its quiet time | not measured |" \
        " - | - | - | - |" in table
