"""``seq = []`` then ``seq + [n]`` (a beam search's ``new_seq = old_seq + [char_index]``): the
empty literal takes the type of what is added to it, as it does for ``append``. Before, it
stayed a list of arrays and the concatenation was refused ("cannot concatenate lists of
Tensor and int"). A list literal of mixed types names the tuple to write instead.
"""

from __future__ import annotations

import pytest

from script import ScriptError, script


def extended(n: int):
    seq = []
    more = [n] + seq
    return seq + [n], more + [n * 2]


def test_empty_literal_takes_the_type_added():
    assert script(extended)(3) == extended(3)


def mixed(n: int):
    return [[n], 2.5]


def test_mixed_list_names_a_tuple():
    with pytest.raises(ScriptError, match="is a tuple"):
        script(mixed)(3)
