"""A tuple, list or dict passed to an unannotated parameter is typed by the call
(``script.runtime.call_types``): a tuple or list of arrays compiles; a dict, whose unpacking
into two names Python refuses too, is a ScriptError at that line. With ``example_inputs`` the
examples type it.
"""

from __future__ import annotations

import numpy as np
import pytest

from script import ScriptError, script


def affine(x, pair):
    a, b = pair
    return x * a + b


@pytest.mark.parametrize("pair", [(np.full(2, 2.0), np.ones(2)), [np.full(2, 2.0), np.ones(2)]])
def test_a_tuple_or_list_types_the_parameter(pair):
    np.testing.assert_array_equal(script(affine)(np.ones(2), pair), affine(np.ones(2), pair))


def test_a_dict_unpacked_into_two_names_is_refused_at_the_line():
    with pytest.raises(ValueError):
        affine(np.ones(2), {"a": np.ones(2)})
    with pytest.raises(ScriptError) as info:
        script(affine)(np.ones(2), {"a": np.ones(2)})
    assert "a, b = pair" in str(info.value)


def test_example_inputs_type_it():
    pair = (np.full(2, 2.0), np.ones(2))
    f = script(affine, example_inputs=[(np.ones(2), pair)])
    np.testing.assert_array_equal(f(np.ones(2), pair), affine(np.ones(2), pair))
