"""Differential fuzzing: random well-typed programs, compiled, compute what plain Python computes.

Each generated program (tests/fuzz/program_gen.py) runs with the full pipeline and the fuser, then
with each optional pass disabled in turn and with fusion off; a mismatch names the configuration.
Float64 programs returning tensors also have their ``vjp`` compared with finite differences.

CI runs a modest number of programs. The long run (see docs/fuzzing.md):

    RNNSCRIPT_FUZZ_EXAMPLES=10000 python -m pytest --slow -q tests/test_fuzz_programs.py -k slow
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from tests.fuzz.differential import (
    KnownBug,
    assert_same,
    check_gradients,
    check_program,
    configurations,
    unload,
)
from tests.fuzz.program_gen import programs

CI_EXAMPLES = 60
CI_GRADIENT_EXAMPLES = 40
LONG_EXAMPLES = int(os.environ.get("RNNSCRIPT_FUZZ_EXAMPLES", "10000"))

# No shrinking: a failure already prints the whole (small) program and its seed, and shrinking
# a program whose every run compiles twelve times takes minutes.
_SETTINGS = dict(deadline=None, print_blob=True,
                 phases=[Phase.explicit, Phase.reuse, Phase.generate],
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.filter_too_much])


def _check(program, seed):
    try:
        check_program(program, seed)
    except KnownBug:
        pass  # a reported bug with a strict-xfail regression test (see KNOWN_BUGS)
    finally:
        unload(program)


def _check_gradients(program, seed):
    assume(program.dtype == "float64" and program.returns_only_tensors)
    try:
        check_gradients(program, seed)
    except KnownBug:
        pass  # a reported bug with a strict-xfail regression test (see KNOWN_BUGS)
    finally:
        unload(program)


@settings(max_examples=CI_EXAMPLES, **_SETTINGS)
@given(programs(), st.integers(0, 2**16))
def test_generated_programs_match_python(program, seed):
    _check(program, seed)


@settings(max_examples=CI_GRADIENT_EXAMPLES, **_SETTINGS)
@given(programs(max_helpers=1, differentiable=True), st.integers(0, 2**16))
def test_generated_gradients_match_finite_differences(program, seed):
    _check_gradients(program, seed)


@pytest.mark.slow
@settings(max_examples=LONG_EXAMPLES, **_SETTINGS)
@given(programs(max_statements=14), st.integers(0, 2**16))
def test_slow_generated_programs_match_python(program, seed):
    _check(program, seed)


@pytest.mark.slow
@settings(max_examples=LONG_EXAMPLES // 4, **_SETTINGS)
@given(programs(max_helpers=1, differentiable=True), st.integers(0, 2**16))
def test_slow_generated_gradients_match_finite_differences(program, seed):
    _check_gradients(program, seed)


# -- the fuzzer itself: it must cover the language and be able to fail ----------------------------
CONSTRUCTS = ["for ", "while ", "if ", "else:", "break", "continue", ".append(", "@", "ops.chunk",
              "np.split", "np.concatenate", "stack(", ".sum(axis=", ".reshape(", ".T", "np.where",
              "helper0(", "[::2]", "enumerate(", "float(", "return "]


def test_generator_covers_the_language():
    sources = []

    @settings(max_examples=300, database=None, **_SETTINGS)
    @given(programs())
    def collect(program):
        compile(program.source, "<generated>", "exec")  # always valid Python
        sources.append(program.source)

    collect()
    text = "\n".join(sources)
    missing = [c for c in CONSTRUCTS if c not in text]
    assert not missing, f"the generator never wrote {missing}"
    early = sum("        return " in s for s in sources)
    assert early > 0, "no early return inside a branch or loop was generated"


def test_every_configuration_is_checked():
    configs = configurations()
    assert configs[0] == "pipeline" and configs[-1] == "no-fuser"
    for name in ("no-canonicalize", "no-constant-prop", "no-shape-prop", "no-dce", "no-cse"):
        assert name in configs


@pytest.mark.parametrize("got,want", [
    (np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-6])),       # beyond float64 tolerance
    (np.array([1.0, np.nan]), np.array([1.0, 1.0])),           # NaN where there was none
    (np.array([1.0], np.float32), np.array([1.0])),            # dtype
    (np.array([[1.0]]), np.array([1.0])),                      # shape
    (np.array([1, 2]), np.array([1, 3])),                      # ints exactly
    ((np.zeros(1),), [np.zeros(1)]),                           # tuple vs list
    (1, 1.0),                                                  # int vs float
    (np.float64(1.0), 1.0),                                    # numpy scalar vs float
])
def test_comparison_catches_differences(got, want):
    with pytest.raises(AssertionError):
        assert_same(got, want, rtol=1e-9)


def test_comparison_accepts_rounding_and_matching_nans():
    assert_same(np.array([1.0, np.nan, 1e6]), np.array([1.0 + 1e-12, np.nan, 1e6 + 1e-4]),
                rtol=1e-9)
    assert_same((np.float32(0.1) * np.ones(2, np.float32), 3),
                (np.full(2, 0.1, np.float32), 3), rtol=1e-5)
