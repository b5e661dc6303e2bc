"""The beam search decoder of KG-IRNet (https://github.com/SmartDataAnalytics/kgirnet,
``utils/beam.py``, MIT License): ``beam_search_decoder`` over a (steps, vocabulary) array of
token probabilities, keeping the ``top_k`` best (sequence, log-likelihood) pairs per step.

Changes: the parameters' annotations, and one for the beam, ``output_sequences: List[Tuple[
List[int], Tensor]]``: the beam starts as ``[([], 0)]``, whose empty list and int score say
nothing of what they later hold (the score becomes numpy's scalar ``0 + np.log(p)``). Without
it the compiler says so at ``old_seq + [char_index]``, naming the annotation to write.
"""

from typing import List, Tuple

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def beam_search_decoder(predictions: Tensor, top_k: int = 3):
    # start with an empty sequence with zero score
    # predictions =
    output_sequences: List[Tuple[List[int], Tensor]] = [([], 0)]

    # looping through all the predictions
    for token_probs in predictions:
        new_sequences = []

        # append new tokens to old sequences and re-score
        for old_seq, old_score in output_sequences:
            for char_index in range(len(token_probs)):
                new_seq = old_seq + [char_index]
                # print (token_probs[char_index])
                # considering log-likelihood for scoring
                # new_score = old_score + np.log(token_probs[char_index])
                new_score = old_score + np.log(token_probs[char_index])
                new_sequences.append((new_seq, new_score))

        # sort all new sequences in the de-creasing order of their score
        output_sequences = sorted(new_sequences, key=lambda val: val[1], reverse=True)

        # select top-k based on score
        # *Note- best sequence is with the highest score
        output_sequences = output_sequences[:top_k]

    return output_sequences


def beam_as_written(predictions: Tensor, top_k: int = 3):
    output_sequences = [([], 0)]
    for token_probs in predictions:
        new_sequences = []
        for old_seq, old_score in output_sequences:
            for char_index in range(len(token_probs)):
                new_seq = old_seq + [char_index]
                new_score = old_score + np.log(token_probs[char_index])
                new_sequences.append((new_seq, new_score))
        output_sequences = sorted(new_sequences, key=lambda val: val[1], reverse=True)
        output_sequences = output_sequences[:top_k]
    return output_sequences


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("steps, vocabulary, top_k", [(5, 4, 5), (6, 7, 3), (1, 3, 2)])
def test_beam_search_equals_numpy(dtype, steps, vocabulary, top_k):
    rng = np.random.default_rng(steps * vocabulary)
    logits = rng.standard_normal((steps, vocabulary))
    probs = (np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)).astype(dtype)
    want = beam_search_decoder(probs, top_k)
    got = script(beam_search_decoder)(probs, top_k)
    assert [seq for seq, _ in got] == [seq for seq, _ in want]
    assert [(type(s), s.dtype) for _, s in got] == [(type(s), s.dtype) for _, s in want]
    np.testing.assert_array_equal([s for _, s in got], [s for _, s in want])


def test_the_source_example():
    """The source's own example and printed result."""
    model_prediction = np.array([[0.1, 0.7, 0.1, 0.1], [0.7, 0.1, 0.1, 0.1],
                                 [0.1, 0.1, 0.6, 0.2], [0.1, 0.1, 0.1, 0.7],
                                 [0.4, 0.3, 0.2, 0.1]])
    got = script(beam_search_decoder)(model_prediction, top_k=5)
    assert [seq for seq, _ in got] == [[1, 0, 2, 3, 0], [1, 0, 2, 3, 1], [1, 0, 2, 3, 2],
                                       [1, 0, 3, 3, 0], [1, 0, 2, 3, 3]]
    np.testing.assert_allclose([s for _, s in got], [-2.497141187456343, -2.784823259908124,
                                                     -3.1902883680162883, -3.595753476124453,
                                                     -3.8834355485762337], rtol=1e-15)


def test_without_the_beams_annotation_the_error_names_it():
    with pytest.raises(ScriptError, match=r"unless the container is annotated") as info:
        script(beam_as_written)(np.full((2, 3), 1 / 3), 2)
    assert "new_seq = old_seq + [char_index]" in str(info.value)
