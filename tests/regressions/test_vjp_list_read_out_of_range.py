"""A list argument read at a constant index past its end (``ws[i + 1]`` in the last unrolled
iteration) stayed a list read, and ``vjp`` blamed "a non-constant index", which points the user
at the wrong line of thought. It now names the index and the list's length (the eager function
raises IndexError there)."""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

from script import Tensor, script, vjp
from script.errors import ScriptError


def read_past_the_end(x: Tensor, ws: List[Tensor]) -> Tensor:
    for i in range(len(ws)):
        x = x * ws[i + 1]
    return x


def test_read_past_the_end_is_named():
    x, ws = np.ones((2, 3)), [np.ones(3), np.ones(3)]
    with pytest.raises(IndexError):
        read_past_the_end(x, list(ws))
    with pytest.raises(ScriptError, match=r"test_vjp_list_read_out_of_range\.py:\d+:\d+: "
                       r".*list argument of 2 items at index 2"):
        vjp(script(read_past_the_end), x, list(ws))
