"""Every graph the language test programs produce prints, parses back and prints identically."""

import numpy as np
import pytest

import ir
from script import script
from tests.programs import cells
from tests.programs.cell_inputs import CELLS, cell_args
from tests.programs.language import PROGRAMS


def _roundtrip(graph):
    text = str(graph)
    again = ir.parse(text)
    assert str(again) == text
    again.verify()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_graphs_round_trip(name):
    fn, make_args = PROGRAMS[name]
    f = script(fn)
    _roundtrip(f.graph)
    _roundtrip(f.graph_for(*make_args(np.random.default_rng(0))))


@pytest.mark.parametrize("name", CELLS)
def test_cell_graphs_round_trip(name):
    f = script(getattr(cells, name))
    _roundtrip(f.graph)
    _roundtrip(f.graph_for(*cell_args(name, np.random.default_rng(0), np.float32, 3, 5, 4)))
