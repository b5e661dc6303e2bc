"""``isinstance`` is decided as Python decides it: by class (``tuple``, ``list``, ``dict``,
``int``, ``float``, ``bool``, ``str``, ``NoneType``, ``np.ndarray``, a script class), a tuple of
classes, or a bare ``typing`` alias (``typing.Tuple`` is ``tuple``); an Optional value is tested
when the code runs. Subscripted generics and arrays that may be numpy scalars are refused."""

import typing
from typing import List, Optional, Tuple, Union

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.helpers import assert_same


def first_of_pair(old: Tuple[Tensor, Tensor]):
    if isinstance(old, Tuple):  # PaddlePaddle's rnn_numpy update_state
        return old[0]
    return old[1]


def lstm_or_gru(state: Union[Tuple[Tensor, Tensor], Tensor]):
    return state


def classify(x: Tensor, n: int, v: float, flag: bool, s: str, xs: List[Tensor],
             pair: Tuple[Tensor, Tensor], maybe: Optional[Tensor]):
    return (isinstance(pair, tuple), isinstance(pair, (list, tuple)), isinstance(xs, list),
            isinstance(xs, typing.List), isinstance(n, int), isinstance(flag, int),
            isinstance(n, float), isinstance(v, float), isinstance(s, str),
            isinstance(x, np.ndarray), isinstance(x, Tensor), isinstance(x, tuple),
            isinstance(maybe, np.ndarray), isinstance(maybe, type(None)),
            isinstance(maybe, (np.ndarray, type(None))), isinstance(None, type(None)))


@pytest.mark.parametrize("maybe", [None, np.ones(2)])
def test_isinstance_is_pythons(maybe):
    x = np.arange(3.0)
    args = (x, 2, 0.5, True, "a", [x], (x, x + 1.0), maybe)
    assert script(classify)(*args) == classify(*args)
    assert_same(script(first_of_pair)((x, x + 10.0)), x)


def subscripted(x: Tensor, xs: List[Tensor]):
    return isinstance(xs, List[Tensor])


def scalar_maybe(x: Tensor):
    return isinstance(x.sum(), float)


def test_what_types_cannot_decide_is_refused():
    x = np.ones(2)
    with pytest.raises(ScriptError, match=r"isinstance\(\) needs a class or a tuple of classes, "
                                          r"not 'List\[Tensor\]'"):
        script(subscripted)(x, [x])
    with pytest.raises(ScriptError, match=r"an array that may have no axes is not supported"):
        script(scalar_maybe)(x)
