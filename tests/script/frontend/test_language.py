"""Scripted programs compute what plain Python computes, with the pipeline on and off."""

import numpy as np
import pytest

import passes
from script import script
from tests.helpers import assert_same
from tests.programs.language import PROGRAMS


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
