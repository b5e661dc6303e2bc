"""A tuple, list or dict passed to an unannotated parameter (taken as an array) is a
SignatureError that names the annotation to write. Before, it said only "expected Tensor, got
tuple", which reads as if the function had asked for an array.
"""

from __future__ import annotations

import numpy as np
import pytest

from script import SignatureError, script


def affine(x, pair):
    a, b = pair
    return x * a + b


@pytest.mark.parametrize("pair, text", [
    ((np.ones(2), np.ones(2)), "pair: Tuple[Tensor, Tensor]"),
    ([np.ones(2), np.ones(2)], "pair: List[Tensor]"),
    ({"a": np.ones(2)}, "pair: Dict[str, Tensor]")])
def test_the_annotation_to_write(pair, text):
    with pytest.raises(SignatureError, match="argument 'pair'") as info:
        script(affine)(np.ones(2), pair)
    assert "'pair' has no annotation" in str(info.value) and text in str(info.value)


def test_example_inputs_type_it():
    pair = (np.full(2, 2.0), np.ones(2))
    f = script(affine, example_inputs=[(np.ones(2), pair)])
    np.testing.assert_array_equal(f(np.ones(2), pair), affine(np.ones(2), pair))
