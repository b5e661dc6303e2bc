"""min-char-rnn's ``sample`` (the gist's, ``benchmarks.realworld_programs.min_char_rnn``):
compiled, it draws the same characters as plain numpy after the same ``np.random.seed``, the
hidden state carried through the steps and each one-hot input written in place."""

import numpy as np
import pytest

from benchmarks.realworld_programs import min_char_rnn
from script import script


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", ["test", "bench"])
def test_sample_draws_what_numpy_draws(dtype, size):
    _, _, hprev, Wxh, Whh, Why, bh, by, vocab_size = min_char_rnn.make_args(dtype, size)
    args = (hprev, 2, 40, Wxh * 3, Whh, Why * 3, bh, by, vocab_size)
    np.random.seed(7)
    want = min_char_rnn.sample(*args)
    np.random.seed(7)
    got = script(min_char_rnn.sample)(*args)
    assert got == want and [type(i) for i in got] == [type(i) for i in want]
    assert len(set(want)) > 3  # the draws vary: the comparison is not of constants
    after = np.random.random()  # both left the generator in the same state
    np.random.seed(7)
    min_char_rnn.sample(*args)
    assert np.random.random() == after
