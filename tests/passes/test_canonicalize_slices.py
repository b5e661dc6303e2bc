"""A slice that is one of equal pieces of its axis becomes that piece of a split (a view the
fuser reads at an offset), so gate math written with slices fuses like math on chunk pieces."""

from typing import Tuple

import numpy as np

from script import Tensor, script


def dlfs2_gates(a: Tensor, c: Tensor) -> Tuple[Tensor, Tensor]:
    h = c.shape[1]
    f = a[:, :h]
    g = a[:, h:2 * h]
    i = a[:, 2 * h:3 * h]
    o = a[:, 3 * h:]
    c_next = 1 / (1 + np.exp(-f)) * c + np.tanh(g) / (1 + np.exp(-i))
    return c_next, np.tanh(c_next) / (1 + np.exp(-o))


def uneven(a: Tensor) -> Tensor:
    return np.tanh(a[:, 1:4]) * 2.0


def test_equal_slices_fuse_as_split_pieces():
    rng = np.random.default_rng(0)
    a, c = rng.standard_normal((3, 24)), rng.standard_normal((3, 6))
    f = script(dlfs2_gates)
    graph = str(f.graph_for(a, c))
    assert "tensor::slice" not in graph and "tensor::split" in graph
    assert graph.count("prim::FusionGroup_") >= 1 and "tensor::exp(" not in graph.split("with ")[0]
    for got, want in zip(f(a, c), dlfs2_gates(a, c)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_slice_that_is_not_an_equal_piece_stays_a_slice():
    a = np.arange(12.0).reshape(2, 6)
    f = script(uneven)
    assert "tensor::slice" in str(f.graph_for(a))
    np.testing.assert_allclose(f(a), uneven(a))
