"""``np.clip`` and ``.clip`` take numpy's own keyword names for the bounds: ``np.clip(g,
a_min=-5, a_max=5, out=g)`` (min-char-rnn's gradient clipping), ``np.clip(g, min=...)``,
``g.clip(max=...)``, and bounds left out. Before, only the op's own names (``lo``, ``hi``) were
accepted and the first was refused with "missing required argument 'lo'".
"""

from __future__ import annotations

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same


def clip_in_place(g: Tensor):
    g = g.copy()
    np.clip(g, a_min=-1.0, a_max=1.0, out=g)
    return g


def clip_spellings(g: Tensor):
    return (np.clip(g, -0.5, a_max=0.5) + g.clip(min=-0.2, max=0.3) + np.clip(g, None, 0.1)
            + np.clip(g, min=-0.5) + np.clip(g) + g.clip(-1) + g.clip() + np.clip(g, max=0.1))


@pytest.mark.parametrize("fn", [clip_in_place, clip_spellings])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_keyword_spellings_of_the_bounds(fn, dtype):
    g = np.linspace(-2, 2, 9).astype(dtype)
    assert_same(script(fn)(g), fn(g))


def test_gradient_through_keyword_bounds():
    g = np.linspace(-2, 2, 9) + 0.01
    check_vjp(script(clip_spellings), (g,))


def one_bound_of_the_pair(g: Tensor):
    return np.clip(g, a_min=-1)


def both_spellings(g: Tensor):
    return np.clip(g, -1, 1, min=0)


def test_numpys_errors_for_the_pair():
    g = np.ones(3)
    with pytest.raises(ScriptError, match="missing required argument 'a_max'"):
        script(one_bound_of_the_pair)(g)
    with pytest.raises(TypeError):
        one_bound_of_the_pair(g)
    with pytest.raises(ScriptError, match="min= or max= beside a_min and a_max"):
        script(both_spellings)(g)
    with pytest.raises(ValueError):
        both_spellings(g)
