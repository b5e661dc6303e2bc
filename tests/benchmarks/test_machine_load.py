"""What other processes do to a run: measured apart from the run's own work."""

import subprocess
import sys
import time

import pytest

from benchmarks.fastrnns import report, results

linux_only = pytest.mark.skipif(report.cpu_snapshot() is None, reason="needs /proc/stat")


@linux_only
def test_a_neighbour_the_run_starts_and_waits_for_counts_as_its_own_work():
    start = report.cpu_snapshot()
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(1.0)
    spinner.kill()
    spinner.wait()
    end = report.cpu_snapshot()
    own, machine = end[2] - start[2], end[1] - start[1]
    assert own > 0.2  # the spinner's time, once waited for
    assert machine >= own - 0.05  # (clock ticks of 10 ms)


def test_other_work_is_the_machine_busy_time_less_the_runs_own(monkeypatch):
    monkeypatch.setattr(report, "cpu_snapshot", lambda: (12.0, 130.0, 21.0))
    # 2 s of wall time; 30 CPU seconds busy machine-wide, 1 of them the run's: 29 / 2
    assert report.others_cpus((10.0, 100.0, 20.0)) == pytest.approx(14.5)
    monkeypatch.setattr(report, "cpu_snapshot", lambda: (12.0, 101.0, 21.5))
    assert report.others_cpus((10.0, 100.0, 20.0)) == 0.0  # (ticks: never below 0)
    assert report.others_cpus(None) is None


def _section(others, load):
    env = {"versions": {}, "blas": {"threadpools": "none"}, "cpu": "cpu", "logical_cpus": 2,
           "platform": "p", "python": "3", "load_average": load, "others_cpus": others}
    return ("title", {"environment": env, "config": {}})


def test_the_caveat_follows_other_work_not_the_load_average():
    quiet = results._environment_lines([_section(0.05, [2.6, 2.0, 1.5])])
    assert not any("Caveat" in line for line in quiet)
    assert any("0.05" in line for line in quiet)
    busy = results._environment_lines([_section(0.05, [0.1] * 3), _section(0.9, [0.1] * 3)])
    assert any("Caveat" in line and "0.90" in line for line in busy)


def test_without_the_measure_the_load_average_decides():
    lines = results._environment_lines([_section(None, [2.6, 2.0, 1.5])])
    assert any("Caveat" in line and "load average 2.6" in line for line in lines)
