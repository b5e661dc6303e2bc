"""Scripted programs compute what plain Python computes, with the pipeline on and off."""

import numpy as np
import pytest

import passes
from script import script
from tests.programs.language import PROGRAMS


def assert_same(got, want):
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
        return
    if isinstance(want, (bool, int, float)) and not isinstance(want, np.generic):
        assert type(got) is type(want), (got, want)
        assert got == want or (got != got and want != want)
        return
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.dtype == want_a.dtype, (got_a.dtype, want_a.dtype)
    assert got_a.shape == want_a.shape
    np.testing.assert_allclose(got_a, want_a, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_python(name):
    fn, make_args = PROGRAMS[name]
    args = make_args(np.random.default_rng(0))
    assert_same(script(fn)(*args), fn(*args))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_without_optimizations(name):
    fn, make_args = PROGRAMS[name]
    args = make_args(np.random.default_rng(1))
    optional = [p for p in passes.STANDARD_PIPELINE.split(",") if p != "inline"]
    with passes.disable(*optional):
        got = script(fn)(*args)
    assert_same(got, fn(*args))
