"""Cotangents given for a ``List[Tensor]`` output were dropped: ``return [np.tanh(x), x * 2.0]``
gave a zero gradient whatever the cotangent, and so did a list built by appends in a loop. The
output's list of cotangents now starts the backward of what built the list."""

from typing import List, Tuple

import numpy as np

from script import Tensor, script, vjp


def literal(x: Tensor) -> List[Tensor]:
    return [np.tanh(x), x * 2.0]


def appended(x: Tensor, n: int) -> Tuple[List[Tensor], Tensor]:
    outs: List[Tensor] = []
    for t in range(n):
        outs.append(x * float(t + 1))
    return outs, x * 5.0


def test_a_list_literal_output():
    x = np.array([0.5, -1.0])
    (dx,) = vjp(script(literal), x)[1]([np.ones(2), np.full(2, 10.0)])
    np.testing.assert_allclose(dx, 1.0 - np.tanh(x) ** 2 + 20.0)


def test_a_list_built_by_appends_inside_a_tuple():
    x = np.array([0.5, -1.0])
    dx, _ = vjp(script(appended), x, 3)[1](([np.ones(2), np.ones(2) * 10.0, np.ones(2) * 100.0],
                                            np.ones(2)))
    np.testing.assert_allclose(dx, np.full(2, 1.0 + 20.0 + 300.0 + 5.0))
