"""stack-to-slots: a layer's outputs are written into one preallocated array step by step
instead of a list stacked after the loop; results and gradients are unchanged."""

import numpy as np
import pytest

import passes
from script import script, vjp
from tests.programs import cells


def _args(T, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    B, IN, H = 3, 4, 5
    shapes = [(T, B, IN), (B, H), (B, H), (4 * H, IN), (4 * H, H), (4 * H,), (4 * H,)]
    return tuple((0.5 * rng.standard_normal(s)).astype(dtype) for s in shapes)


@pytest.mark.parametrize("T", [17, 30])  # shorter loops are unrolled
def test_layer_outputs_written_in_place_equal_eager(T):
    f = script(cells.lstm_layer)
    args = _args(T)
    code = f.code_for(*args)
    assert "np.empty(" in code and "ops.stack(" not in code
    got, want = f(*args), f.python_fn(*args)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1][0], want[1][0], rtol=1e-12)
    assert not np.shares_memory(got[0], got[1][0])  # h_n is not a view of the outputs


def test_gradients_equal_the_list_and_stack_version():
    args = _args(20, seed=1)
    outs, back = vjp(script(cells.lstm_layer), *args)
    cts = (np.ones_like(outs[0]), (np.ones_like(outs[1][0]), None))
    got = back(cts)
    with passes.disable("stack-to-slots"):
        plain = script(cells.lstm_layer)
        assert "ops.stack(" in plain.code_for(*args)
        outs2, back2 = vjp(plain, *args)
        want = back2(cts)
    np.testing.assert_array_equal(outs[0], outs2[0])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
