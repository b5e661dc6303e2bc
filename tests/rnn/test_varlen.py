"""Variable-length batches: each sequence of a padded batch gives what it gives alone, padded
outputs are zero, and one compiled graph serves every set of lengths."""

from __future__ import annotations

import numpy as np
import pytest

import rnn
from script import script

INPUT, HIDDEN = 3, 4


def sequences(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, INPUT)).astype("float32") for n in lengths]


def test_pad_sequence_and_lengths_of():
    seqs = sequences([3, 1, 2])
    padded = rnn.pad_sequence(seqs)
    assert padded.shape == (3, 3, INPUT)
    assert np.array_equal(padded[:1, 1], seqs[1]) and not padded[1:, 1].any()
    assert rnn.pad_sequence(seqs, batch_first=True).shape == (3, 3, INPUT)
    assert rnn.pad_sequence(seqs, padding_value=-1.0)[2, 1, 0] == -1.0
    assert rnn.lengths_of(seqs).tolist() == [3, 1, 2]
    assert rnn.lengths_of([3, 1, 2]).dtype == np.int64
    assert rnn.lengths_of(padded).tolist() == [3, 1, 2]
    back = rnn.unpad(padded, [3, 1, 2])
    assert all(np.array_equal(a, b) for a, b in zip(back, seqs))
    with pytest.raises(ValueError, match="agree"):
        rnn.pad_sequence([np.zeros((2, 3)), np.zeros((2, 4))])


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("bidir", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_each_sequence_equals_running_it_alone(mode, bidir, batch_first):
    m = getattr(rnn, mode)(INPUT, HIDDEN, num_layers=2, bidirectional=bidir,
                           batch_first=batch_first, rng=0)
    sm = script(m)
    lengths = [5, 2, 4, 1]
    seqs = sequences(lengths)
    x = rnn.pad_sequence(seqs, batch_first=batch_first)
    out, state = sm(x, None, rnn.lengths_of(lengths))
    eager_out, _ = m(x, None, rnn.lengths_of(lengths))
    np.testing.assert_allclose(out, eager_out, rtol=1e-5, atol=1e-6)
    h_n = state[0] if mode == "LSTM" else state
    for b, seq in enumerate(seqs):
        alone = seq[None] if batch_first else seq[:, None]
        want_out, want_state = sm(alone)
        want_h = want_state[0] if mode == "LSTM" else want_state
        got = out[b, :len(seq)] if batch_first else out[:len(seq), b]
        pad = out[b, len(seq):] if batch_first else out[len(seq):, b]
        np.testing.assert_allclose(got, want_out[0] if batch_first else want_out[:, 0],
                                   rtol=1e-5, atol=1e-6)
        assert not pad.any()
        np.testing.assert_allclose(h_n[:, b], want_h[:, 0], rtol=1e-5, atol=1e-6)
        if mode == "LSTM":
            np.testing.assert_allclose(state[1][:, b], want_state[1][:, 0], rtol=1e-5,
                                       atol=1e-6)


def test_one_compilation_serves_every_set_of_lengths():
    m = rnn.LSTM(INPUT, HIDDEN, bidirectional=True, rng=0)
    sm = script(m)
    x = rnn.pad_sequence(sequences([4, 4, 4]))
    outs = [sm(x, None, np.array(lens)) for lens in ([4, 4, 4], [1, 2, 3], [4, 0, 2], [2, 2, 2])]
    assert sm.forward.current().compiled_signatures == 1
    assert not np.allclose(outs[0][0], outs[1][0])
    assert not outs[2][0][:, 1].any()  # an empty sequence outputs zeros and keeps h0
    assert not outs[2][1][0][:, 1].any()
