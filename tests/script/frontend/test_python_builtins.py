"""Python builtins and truth values in scripted code compute what plain Python computes: strings
as conditions and in ``or``/``and``, ``sum``, ``list`` and ``dict``; float32 and float64 values
equal, gradients equal finite differences, and bad uses are ScriptErrors at the user's line."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.helpers import assert_same


# -- strings as truth values -------------------------------------------------------------------
def name_or_default(name: str, x: Tensor):
    label = name or "default"
    scale = 2.0 if name and x.sum() > 1.0 else 0.5
    return label, x * scale


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["", "a"])
def test_string_truth_value_is_pythons(name, dtype):
    for x in (np.arange(3, dtype=dtype), -np.arange(3, dtype=dtype)):
        (label, y), (want_label, want_y) = script(name_or_default)(name, x), \
            name_or_default(name, x)
        assert label == want_label
        assert_same(y, want_y)


def string_times(name: str):
    return name or 1.0


def test_string_or_number_needs_one_type():
    with pytest.raises(ScriptError, match="the operands of 'or' have types str and float") as info:
        script(string_times)("")
    assert "return name or 1.0" in str(info.value)
