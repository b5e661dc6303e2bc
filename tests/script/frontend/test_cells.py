"""The fastrnns cell family: scripted results equal the plain Python function's."""

import numpy as np
import pytest

from script import script
from tests.helpers import assert_same_at
from tests.programs import cells
from tests.programs.cell_inputs import CELLS, cell_args

SHAPES = [(3, 5, 4), (1, 5, 4), (2, 3, 1), (1, 1, 1), (8, 16, 32)]  # (batch, input, hidden)


@pytest.mark.parametrize("name", CELLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cell_matches_python(name, dtype):
    fn = getattr(cells, name)
    scripted = script(fn)
    rng = np.random.default_rng(0)
    for batch, inp, hid in SHAPES:
        args = cell_args(name, rng, dtype, batch, inp, hid)
        assert_same_at(scripted(*args), fn(*args), dtype)


def test_cell_reuses_specialization():
    scripted = script(cells.flat_lstm_cell)
    rng = np.random.default_rng(1)
    args = cell_args("flat_lstm_cell", rng, np.float32, 3, 5, 4)
    scripted(*args)
    scripted(*args)
    assert scripted.compiled_signatures == 1
    scripted(*cell_args("flat_lstm_cell", rng, np.float32, 2, 5, 4))
    assert scripted.compiled_signatures == 2
    scripted(*cell_args("flat_lstm_cell", rng, np.float64, 2, 5, 4))
    assert scripted.compiled_signatures == 3
