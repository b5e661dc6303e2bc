"""``python -m benchmarks.realworld --quick`` on one program: a row with both times and their
ratio, and a program that does not compile listed with its error. Structure only: no speed is
asserted."""

from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks import realworld
from benchmarks.realworld_programs import Case
from script import Tensor


def test_quick_run_of_one_program(capsys):
    rows = realworld.main(["--quick", "--programs", "dlfs2_gru"])
    assert [(r.program, r.case, r.cell) for r in rows] == [
        ("dlfs2_gru", "time_gru_forward", False), ("dlfs2_gru", "gru_forward", True)]
    for row in rows:
        assert not row.error and row.plain_s > 0 and row.compiled_s > 0
        assert row.ratio == pytest.approx(row.plain_s / row.compiled_s)
    out = capsys.readouterr().out
    assert "plain/compiled" in out and "time_gru_forward" in out and "gru_forward (cell)" in out


def test_every_cell_named_is_a_case():
    from benchmarks.realworld_programs import programs
    for name, module in programs().items():
        assert set(getattr(module, "CELLS", ())) <= set(module.CASES), name


def refused(x: Tensor) -> Tensor:
    try:
        y = x * 2.0
    except ValueError:
        y = x
    return y


def test_a_program_that_does_not_compile_is_listed_with_its_error(monkeypatch, capsys):
    module = SimpleNamespace(CASES={"refused": Case(refused, lambda d, s: (np.ones(3, d),))},
                             BENCH="refused")
    monkeypatch.setattr(realworld, "programs", lambda: {"broken": module})
    rows = realworld.main(["--quick"])
    assert rows[0].error.startswith("test_realworld.py:") and "try" in rows[0].error
    assert "does not compile" in capsys.readouterr().out


def test_unknown_program_names_are_refused():
    with pytest.raises(SystemExit):
        realworld.main(["--quick", "--programs", "no_such_program"])
