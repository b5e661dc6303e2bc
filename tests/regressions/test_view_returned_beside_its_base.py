"""A chunk of a value that the caller also receives was computed inside a fusion group, which
writes each output into memory of its own: ``return [g], [ops.chunk(g, 1, 1)[0]]`` came back as
two separate arrays where plain Python's share memory (writing into one changes the other). Views
whose result and whose base the caller can both reach now stay views. Found by the program
fuzzer's ownership check."""

from typing import List, Tuple

import numpy as np

from script import Tensor, ops, script


def piece_beside_its_base(x: Tensor) -> Tuple[List[Tensor], List[Tensor]]:
    g10, g11 = ops.chunk(np.ones((3, 4, 2)) * x.sum(), 2, 1)
    return [g11], [ops.chunk(g11, 1, 1)[0], g11 * 2.0]


def piece_of_an_argument(x: Tensor) -> Tuple[Tensor, Tensor]:
    a, b = ops.chunk(x, 2, 0)
    return a, np.tanh(a) * 2.0


def _sharing(result) -> list[bool]:
    flat = [a for part in result for a in (part if isinstance(part, list | tuple) else [part])]
    return [np.shares_memory(flat[i], flat[j]) for i in range(len(flat)) for j in range(i)]


def test_a_piece_returned_beside_its_base_shares_its_memory():
    x = np.random.default_rng(0).random(3)
    want, got = piece_beside_its_base(x), script(piece_beside_its_base)(x)
    assert _sharing(got) == _sharing(want)
    np.testing.assert_allclose(got[1][0], want[1][0])


def test_a_returned_piece_of_an_argument_is_a_view_of_it():
    x = np.random.default_rng(1).random((4, 3))
    got = script(piece_of_an_argument)(x)
    assert np.shares_memory(got[0], x)
    np.testing.assert_allclose(got[1], np.tanh(x[:2]) * 2.0)
