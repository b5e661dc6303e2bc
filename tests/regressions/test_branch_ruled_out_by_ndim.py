"""A branch that ``x.ndim`` / ``x.size`` / ``x.shape[i]`` rules out for the specialized types is
not typed (its ops may reject them, as numpy would if it ran): rank-polymorphic helpers like
"Deep Learning from Scratch 2"'s softmax compile for each rank (the 1-D call was refused with
"axis 1 is out of bounds for a tensor of rank 1")."""

import numpy as np

from script import Tensor, script


def softmax(x: Tensor) -> Tensor:
    if x.ndim == 2:
        x = x - x.max(axis=1, keepdims=True)
        x = np.exp(x)
        x /= x.sum(axis=1, keepdims=True)
    elif x.ndim == 1:
        x = x - np.max(x)
        x = np.exp(x) / np.sum(np.exp(x))
    return x


def first_column_or_all(x: Tensor) -> Tensor:
    if x.size > 4:
        if x.shape[1] != 1:
            return x[:, 0]
    return x


def test_each_rank_compiles_its_own_branch():
    f = script(softmax)
    for x in (np.array([1.0, 2.0, 0.5]), np.array([[1.0, 2.0], [0.0, -1.0]])):
        np.testing.assert_allclose(f(x), softmax(x))
    g = script(first_column_or_all)
    for x in (np.arange(3.0), np.ones((3, 2)), np.ones((5, 1))):
        np.testing.assert_array_equal(g(x), first_column_or_all(x))
