"""An ``if`` whose condition only a dropped branch decides (``not flag and x.shape[0] != 1``:
the ``and`` is a branch itself) was left in place with the type of the block it takes, its
other block returning a value of the old type: the IR no longer verified (an internal compiler
error under ``RNNSCRIPT_VERIFY``). Branches are dropped until none is left to drop."""

import numpy as np
import pytest

from script import Tensor, script


def gram(a: Tensor, rowvar: bool):
    x = a[None]
    if not rowvar and x.shape[0] != 1:
        x = x.T
    c = x @ x.T
    if c.shape[0] == 1:
        return c[0, 0]
    return c


def gram_default(m, rowvar=True):
    x = np.atleast_2d(m)
    if not rowvar and x.shape[0] != 1:
        x = x.T
    c = x @ x.T
    if c.shape[0] == 1:
        return c[0, 0] * np.ones(())
    return c


def calls_it(a: Tensor):
    return gram_default(a), gram_default(a, False)


@pytest.mark.parametrize("rowvar", [True, False])
def test_the_branch_left_is_the_one_taken(monkeypatch, rowvar):
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "1")
    a = np.random.default_rng(0).random(4)
    np.testing.assert_allclose(script(gram)(a, rowvar), gram(a, rowvar))
    for got, want in zip(script(calls_it)(a), calls_it(a)):
        np.testing.assert_allclose(got, want)
        assert np.shape(got) == np.shape(want)


def summed_when_3d(a: Tensor):
    x = a
    if x.ndim == 3 and x.size > 6:  # ruled out for a 1-D a: its branch is never typed
        x = x.sum(axis=0).sum(axis=0).sum(axis=0)
    return x


def test_an_and_the_types_decide_decides_its_if(monkeypatch):
    monkeypatch.setenv("RNNSCRIPT_VERIFY", "1")
    np.testing.assert_array_equal(script(summed_when_3d)(np.ones(4)), np.ones(4))
    np.testing.assert_array_equal(script(summed_when_3d)(np.ones((2, 2, 2))), 8.0)
