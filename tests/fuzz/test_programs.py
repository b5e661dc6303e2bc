"""Differential fuzzing: random well-typed programs, compiled, compute what plain Python computes.

Each generated program (tests/fuzz/program_gen.py) runs with the full pipeline and the fuser, then
with each optional pass disabled in turn and with fusion off; a mismatch names the configuration.
Float64 programs returning tensors also have their ``vjp`` compared with finite differences.

CI runs a modest number of programs, the same ones on every run (drawn from ``CI_SEED``). The
long run draws new random programs each time (see docs/fuzzing.md):

    RNNSCRIPT_FUZZ_EXAMPLES=10000 python -m pytest --slow -q tests/fuzz/test_programs.py -k slow
"""

from __future__ import annotations

import os
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as pinned_seed
from hypothesis import strategies as st

from fuser.cpu.loop import runtime
from tests.fuzz import differential
from tests.fuzz.differential import (
    Estimate,
    KnownBug,
    assert_same,
    check_gradients,
    check_program,
    configurations,
    cotangent,
    judge,
    numerical_gradient,
    unload,
)
from tests.fuzz.loop_gen import recurrent_programs
from tests.fuzz.program_gen import programs
from tests.fuzz.program_types import (
    FEATURES,
    PENDING_GRADIENTS,
    PENDING_VALUES,
    DictT,
    Param,
    Program,
    TensorT,
    default_features,
)

CI_EXAMPLES = 60
CI_GRADIENT_EXAMPLES = 40
CI_SEED = 18
"""CI checks the same programs on every run: hypothesis draws them from this seed (and no example
database is replayed). ``--slow`` draws fresh random programs each run."""
LONG_EXAMPLES = int(os.environ.get("RNNSCRIPT_FUZZ_EXAMPLES", "10000"))


def _long_features(differentiable: bool) -> frozenset[str]:
    """The features of the long runs: ``RNNSCRIPT_FUZZ_FEATURES=all`` (or a comma-separated
    list) adds pending ones; by default the same as CI's."""
    chosen = os.environ.get("RNNSCRIPT_FUZZ_FEATURES", "")
    if chosen == "all":
        return FEATURES
    if chosen:
        return frozenset(chosen.split(","))
    return default_features(differentiable)


MIN_COMPARED = 0.6
"""Fraction of the gradient programs whose gradients must actually be compared: a checker that
compared nothing would otherwise pass."""

# No shrinking: a failure already prints the whole (small) program and its seed, and shrinking
# a program whose every run compiles twelve times takes minutes.
_SETTINGS = dict(deadline=None, print_blob=True,
                 phases=[Phase.explicit, Phase.reuse, Phase.generate],
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.filter_too_much])
_CI = dict(_SETTINGS, database=None)


def _check(program, seed, configs=None):
    try:
        check_program(program, seed, configs)
    except KnownBug:
        pass  # a reported bug with a strict-xfail regression test (see KNOWN_BUGS)
    finally:
        unload(program)


def _check_gradients(program, seed, outcomes: Counter, random_argnums: bool = False) -> None:
    try:
        outcomes[check_gradients(program, seed, random_argnums)] += 1
    except KnownBug:
        outcomes["known-bug"] += 1  # a reported bug with a strict-xfail regression test
    finally:
        unload(program)


def _assert_enough_compared(outcomes: Counter) -> None:
    """Most gradient programs must have had their gradients compared, not passed over."""
    total = sum(outcomes.values())
    assert total and outcomes["compared"] >= MIN_COMPARED * total, (
        f"only {outcomes['compared']} of {total} gradient programs were compared: {outcomes}")


@pinned_seed(CI_SEED)
@settings(max_examples=CI_EXAMPLES, **_CI)
@given(programs(), st.integers(0, 2**16))
def test_generated_programs_match_python(program, seed):
    _check(program, seed)


def test_generated_gradients_match_finite_differences():
    outcomes: Counter = Counter()

    @pinned_seed(CI_SEED)
    @settings(max_examples=CI_GRADIENT_EXAMPLES, **_CI)
    @given(programs(max_helpers=1, differentiable=True), st.integers(0, 2**16))
    def run(program, seed):
        _check_gradients(program, seed, outcomes)

    run()
    _assert_enough_compared(outcomes)


RECURRENT_EXAMPLES = 30
RECURRENT_CONFIGS = ["pipeline", "row-ranges", "no-fuser"]


def _counting_ranges(monkeypatch) -> Counter:
    """Counts the native loop calls that ran to the end over row ranges (``run_ranges``
    returned 0: not a call some range gave back to Python)."""
    calls: Counter = Counter()
    run = runtime.run_ranges

    def counted(*args):
        status = run(*args)
        calls["ranges"] += status == 0
        return status

    monkeypatch.setattr(runtime, "run_ranges", counted)
    return calls


def test_recurrent_loops_match_python(monkeypatch):
    """Native loops over a batch (``recurrent_programs``), whole and over row ranges, compute
    what Python computes; enough of them run over row ranges that the configuration is
    exercised."""
    calls = _counting_ranges(monkeypatch)

    @pinned_seed(CI_SEED)
    @settings(max_examples=RECURRENT_EXAMPLES, **_CI)
    @given(recurrent_programs(), st.integers(0, 2**16))
    def run(program, seed):
        _check(program, seed, RECURRENT_CONFIGS)

    run()
    assert calls["ranges"] >= RECURRENT_EXAMPLES // 4, calls


def test_recurrent_gradients_over_row_ranges_match_finite_differences(monkeypatch):
    """The forward and reverse loops of ``recurrent_programs``, run over row ranges, give
    gradients equal to finite differences."""
    calls = _counting_ranges(monkeypatch)
    _recurrent_gradients(settings(max_examples=RECURRENT_EXAMPLES, **_CI), CI_SEED)
    assert calls["ranges"] >= RECURRENT_EXAMPLES // 4, calls


def _recurrent_gradients(drawn, pinned: int | None = None) -> None:
    """``recurrent_programs`` drawn as ``drawn`` (hypothesis settings) says, from the seed
    ``pinned`` (None: a fresh draw), their gradients over row ranges checked against finite
    differences; most of them must be compared."""
    outcomes: Counter = Counter()

    @drawn
    @given(recurrent_programs(differentiable=True), st.integers(0, 2**16))
    def run(program, seed):
        with differential.row_ranges():
            _check_gradients(program, seed, outcomes)

    # (the seed goes on the test itself: ``seed(n)`` applied to a settings object is lost,
    # and each run drew other programs)
    (run if pinned is None else pinned_seed(pinned)(run))()
    _assert_enough_compared(outcomes)


@pytest.mark.slow
@settings(max_examples=LONG_EXAMPLES // 10, **_SETTINGS)
@given(recurrent_programs(), st.integers(0, 2**16))
def test_slow_recurrent_loops_match_python(program, seed):
    _check(program, seed, RECURRENT_CONFIGS)


@pytest.mark.slow
def test_slow_recurrent_gradients_over_row_ranges_match_finite_differences():
    _recurrent_gradients(settings(max_examples=LONG_EXAMPLES // 20, **_SETTINGS))


def test_generated_gradients_with_random_argnums_match_finite_differences():
    """Differentiating a random subset of the arguments leaves the requested gradients as
    they were (activity analysis prunes only what the others need)."""
    outcomes: Counter = Counter()

    @pinned_seed(CI_SEED + 1)
    @settings(max_examples=CI_GRADIENT_EXAMPLES // 2, **_CI)
    @given(programs(max_helpers=1, differentiable=True), st.integers(0, 2**16))
    def run(program, seed):
        _check_gradients(program, seed, outcomes, random_argnums=True)

    run()
    _assert_enough_compared(outcomes)


@pytest.mark.slow
@settings(max_examples=LONG_EXAMPLES, **_SETTINGS)
@given(programs(max_statements=14, features=_long_features(False)), st.integers(0, 2**16))
def test_slow_generated_programs_match_python(program, seed):
    _check(program, seed)


@pytest.mark.slow
def test_slow_generated_gradients_match_finite_differences():
    outcomes: Counter = Counter()

    @settings(max_examples=LONG_EXAMPLES // 4, **_SETTINGS)
    @given(programs(max_helpers=1, differentiable=True, features=_long_features(True)),
           st.integers(0, 2**16))
    def run(program, seed):
        _check_gradients(program, seed, outcomes)

    run()
    print(f"gradient programs: {dict(outcomes)}")
    _assert_enough_compared(outcomes)


# -- the fuzzer itself: it must cover the language and be able to fail ----------------------------
CONSTRUCTS = ["for ", "while ", "if ", "else:", "break", "continue", ".append(", "@", "ops.chunk",
              "np.split", "np.concatenate", "stack(", ".sum(axis=", ".reshape(", ".T", "np.where",
              "helper0(", "[::2]", "enumerate(", "float(", "return "]
"""Text every run of the generator writes somewhere (the core language)."""

FEATURE_PATTERNS = {
    "same-value-if": [r"if .*:\n +(\w+) = (\w+)\n +else:\n +\1 = \2\n",
                      r"if .*:\n +(\w+) = (\w+)\n +else:\n +\1 = (?!\2\n)\w+\n"],
    "dict": [r"d\d+: Dict\[int, Tensor\] = \{\}", r"d\d+: Dict\[str, Tensor\] = \{\}",
             r"d\d+\[0\] = ", r"d\d+\['\w+'\] = ", r"[^\n]=[^\n]*d\d+\[\d\]",
             r"[^\n]=[^\n]*d\d+\['\w+'\]"],
    "dict-argument": [r"w: Dict\[str, Tensor\]", r"w\['w0'\]"],
    "list-output": [r"-> List\[Tensor\]", r"-> Tuple\[[^\n]*List\[Tensor\]",
                    r"return \[", r"return l\d+"],
    "comprehension": [r"\[[^\n]*\[:, k\d+\] for k\d+ in range\(\d\)\]",
                      r" for v\d+ in (l\d+|\[)", r"u\d+, u\d+ = \[[^\n]* for "],
    "conditional-append": [r"if i\d+ >= \d:\n +l\d+\.append\(",
                           r"np\.stack\(l\d+, axis=\d\)"],
    "tuple-of-lists": [r"q\d+ = \((l\d+|\[)[^\n]*, \[", r"q\d+\[\d\]\[-?\d\]",
                       r"l\d+, l\d+ = q\d+"],
    "global-array": [r"\nG0 = np\.linspace", r"G0"],
    "append-to-comprehension": [r"(l\d+) = \[[^\n]* for [^\n]*\n(.*\n)*? +\1\.append\("],
    "append-after-read": [r"(l\d+) = \[[^\n]*\n +t\d+ = [^\n]*\(\1\)[^\n]*\n +\1\.append\("],
    "in-place-write": [r"(a\d+) = np\.zeros\(\(\d, [^\n]*\n +for (i\d+) in [^\n]*\n"
                       r" +\1\[\2\] \+?= ",
                       r"a\d+\[i\d+ - 1\]", r"a\d+\[(:, )+:\d+\] = ",
                       r"a\d+\[\.\.\., \d+:\] [-+]?= ",
                       r"a\d+\[-?\d\] \+?= ", r"a\d+ \+= ", r"a\d+ \*= ", r"a\d+\.fill\(",
                       r"a\d+ = np\.empty\("],
    "fancy-index": [r"t\d+ = [^\n]*[\w)\]]\[np\.array\(\[-?\d(, -?\d)*\]\)\]\n",
                    r"\[:, np\.(array|arange)\(", r"\[np\.arange\(\d\), np\.array\(\[",
                    r"a\d+\[np\.(array\(\[[^\n]*\]\)|arange\(\d\))\] [-+]?= ",
                    r"a\d+\[np\.(arange\(\d\)|array\(\[[^\n]*\]\)), np\.array\([^\n]*\)\] [-+]?= "],
    "number-accumulator": [r"(acc\d+) = 0\n +for [^\n]*\n +\1 \+= np\.sum\(",
                           r"(acc\d+) = 0\.0\n", r"(acc\d+) = \1 \+ ",
                           r"accs\d+ = \[0(\.0)?(, 0(\.0)?)+\]", r"accs\d+\[1\] \+= np\.sum\("],
    "float32-accumulator": [r"dtype=np\.float32(?:(?!from typing)[^\n]*\n)*?[^\n]*"
                            r"accs?\d+ = \[?0"
                            r"|accs?\d+ = \[?0(?:(?!from typing)[^\n]*\n)*?[^\n]*"
                            r"dtype=np\.float32"],
    "tensor-containers": [r"hs\d+\.append\(np\.tanh\([^\n]*\+ hs\d+\[(i\d+|-1|len)",
                          r"np\.stack\(hs\d+", r"(hd\d+) = \{\}\n +\1\[-1\] = ",
                          r"(hd\d+)\[(i\d+)\] = np\.tanh\([^\n]*\1\[\2 - 1\]\)",
                          r"(u\d+), (u\d+) = (st\d+)\n +\3 = \("],
    "batched-recurrence": [r"(h\d+) = np\.tanh\((\1 @|np\.dot\(\1,) w\d+",
                           r"for i\d+ in range\([a-z]\w*\):\n +h\d+ = np\.tanh",
                           r"hs\d+\.append\(h\d+\)", r"loss\d+ \+= np\.sum\(h\d+ \* h\d+\)",
                           r"loss\d+ \+= h\d+\.mean\(axis=0\)", r"loss\d+ = 0\.0\n"],
    "augmented-alias": [r"(vb\d+) = va\d+\n *\1 [-+*]= ", r"va\d+ = np\.sum\([^\n]*\)\n",
                        r"va\d+ = np\.sum\([^\n]*, axis=0\)", r"va\d+ = np\.zeros\(\(\)\)",
                        r"va\d+ = [^\n]*\.mean\(\)"],
    "item-update": [r"(ls\d+)\[\d\] [-+*]= ", r"(ls\d+) = \[", r"(ls\d+) = \{0: ",
                    r"(ls\d+)\.append\(\1\[\d\]", r"\n +(ls\d+)\[\d\] [-+*]= "],
}
"""Regular expressions each feature's programs match somewhere: the constructs the feature
stands for (lists read back as ``l[0]``/``l[-1]`` are in ``CORE_PATTERNS``)."""

CORE_PATTERNS = [r"l\d+\[0\]", r"l\d+\[-1\]", r"helper\d\("]


def _generated(strategy, count: int, seed: int = CI_SEED) -> list:
    programs_ = []

    @pinned_seed(seed)
    @settings(max_examples=count, **_CI)
    @given(strategy)
    def collect(program):
        compile(program.source, "<generated>", "exec")  # always valid Python
        programs_.append(program)

    collect()
    return programs_


def test_generator_covers_the_language():
    sources = [p.source for p in _generated(programs(features=frozenset()), 400)]
    text = "\n".join(sources)
    missing = [c for c in CONSTRUCTS if c not in text]
    missing += [p for p in CORE_PATTERNS if not re.search(p, text)]
    assert not missing, f"the generator never wrote {missing}"
    early = sum("        return " in s for s in sources)
    assert early > 0, "no early return inside a branch or loop was generated"


REQUIRES = {"append-to-comprehension": {"comprehension"},
            "float32-accumulator": {"number-accumulator"}}
"""Features that only act together with others."""


SAMPLES = {"in-place-write": 250, "fancy-index": 200}
"""Programs drawn to see every construct of a feature that writes many (100 otherwise)."""


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_generator_writes_each_feature(feature):
    features = frozenset({feature, *REQUIRES.get(feature, ())})
    generated: list = []
    for extra in range(4):  # a rare construct may need more programs (Hypothesis's draws vary)
        generated += _generated(programs(features=features), SAMPLES.get(feature, 100),
                                CI_SEED + extra)
        text = "\n".join(p.source for p in generated)
        missing = [p for p in FEATURE_PATTERNS[feature] if not re.search(p, text)]
        if not missing:
            break
    assert not missing, f"{feature}: the generator never wrote {missing}"
    # the core language can write these two by chance, only less often
    others = set(FEATURE_PATTERNS) - features - {"same-value-if", "append-after-read"}
    leaked = [f for f in others if re.search(FEATURE_PATTERNS[f][0], text)]
    assert not leaked, f"programs(features={sorted(features)}) wrote {leaked}"
    if feature == "global-array":
        assert any(p.updates for p in generated)


def test_ci_leaves_out_only_the_pending_features():
    assert default_features(False) == FEATURES - PENDING_VALUES
    assert default_features(True) == FEATURES - PENDING_GRADIENTS
    with pytest.raises(ValueError, match="unknown"):
        _generated(programs(features=frozenset({"no-such-feature"})), 1)


def test_every_configuration_is_checked():
    configs = configurations()
    assert configs[0] == "pipeline" and configs[-2:] == ["no-fuser", "row-ranges"]
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


# -- the gradient checker: it must judge what it can, and only that --------------------------------
def _program(body: str, params: tuple[Param, ...], returns: str = "Tensor") -> Program:
    signature = ", ".join(f"{p.name}: {p.annotation()}" for p in params)
    source = ("from typing import Dict, List, Tuple\n\nimport numpy as np\n\n"
              "from script import Tensor, ops\n\n\n"
              f"def main({signature}) -> {returns}:\n" + "".join(f"    {line}\n"
                                                             for line in body.splitlines()))
    return Program(source, "main", params, "float64", True)


def test_gradient_checker_accepts_large_outputs_with_small_gradients():
    # outputs near 3e6 leave a 1e-6 step about 1e-4 of rounding noise in a derivative near 1
    program = _program("return x * 0.0 + 3.0e6 + np.sin(x)", (Param("x", TensorT((3, 4))),))
    try:
        assert check_gradients(program, 7) == "compared"
    finally:
        unload(program)


def test_gradient_checker_catches_a_wrong_gradient():
    got = np.array([1.0, 2.0, np.nan])
    exact = np.array([1.0, 2.5, 3.0])
    est = Estimate([exact, exact + 1e-9], [np.zeros(3)] * 2)
    wrong, unjudged = judge(got, est)
    assert wrong.tolist() == [False, True, True] and not unjudged.any()


def test_gradient_checker_leaves_a_kink_unjudged():
    x = (np.array([0.0, 1.0]),)
    # |x| has a kink at 0: the two steps' estimates there agree with each other on nothing
    est = numerical_gradient(lambda a: np.abs(a - 1e-5), x, 0, (), np.ones(2))
    wrong, unjudged = judge(np.array([7.0, 1.0]), est)
    assert not wrong.any() and unjudged.tolist() == [True, False]


def test_every_differentiable_output_gets_a_cotangent():
    out = (np.ones(2), [np.ones((1, 2)), np.ones(3)], 3, 1.5, np.array([1, 2]))
    ct = cotangent(out, np.random.default_rng(0))
    assert isinstance(ct, tuple) and isinstance(ct[1], list)
    assert ct[0].shape == (2,) and ct[1][0].shape == (1, 2) and ct[1][1].shape == (3,)
    assert ct[2] is None and ct[3] is None and ct[4] is None  # ints, floats, int arrays


def test_a_gradient_run_that_compared_too_little_fails():
    with pytest.raises(AssertionError, match="only 1 of 4"):
        _assert_enough_compared(Counter({"compared": 1, "refused": 3}))
    _assert_enough_compared(Counter({"compared": 3, "refused": 1}))


def test_gradient_programs_avoid_points_without_a_derivative():
    text = "\n".join(p.source for p in _generated(programs(differentiable=True), 200))
    assert "np.sqrt(1.0 + " in text and "np.sqrt(np.abs(" not in text
    assert " - 0.375)" in text  # abs and relu with their kinks moved
    assert "float32" not in text


def _fake_vjp(backward):
    """A stand-in for ``vjp`` running the plain function, with a given backward."""
    def fake(f, *args, argnums=None):
        return f.python_fn(*args), lambda ct: backward(args, ct)
    return fake


DICT_PARAMS = (Param("x", TensorT((2,))), Param("w", DictT("str", (("a", (2,)),), argument=True)))


@pytest.mark.parametrize("missing,message", [
    (None, None),
    ("item", r"argument 0 is wrong"),       # the list output's second item got no cotangent
    ("dict", r"argument 1\['a'\] is wrong"),  # the dict argument got no gradient
])
def test_gradient_checker_needs_every_dict_entry_and_list_item(monkeypatch, missing, message):
    program = _program("return [np.tanh(w['a']) * x, x * 2.0]", DICT_PARAMS, "List[Tensor]")

    def backward(args, ct):
        x, w = args
        dx = ct[0] * np.tanh(w["a"]) + (0.0 if missing == "item" else 2.0 * ct[1])
        dw = {"a": ct[0] * x * (1 - np.tanh(w["a"]) ** 2)}
        return dx, (None if missing == "dict" else dw)

    monkeypatch.setattr(differential, "vjp", _fake_vjp(backward))
    try:
        if message:
            with pytest.raises(AssertionError, match=message):
                check_gradients(program, 3)
        else:
            assert check_gradients(program, 3) == "compared"
    finally:
        unload(program)


def test_gradient_checker_leaves_outputs_that_are_a_global_arrays_memory_alone():
    # writing into the returned view of G0 changed G0, so the finite differences computed after
    # it disagreed with vjp's gradient, which was right
    plain = _program("l6 = [G0[1:3]]\nt = np.stack(l6).sum()\nreturn [x * t], l6",
                     (Param("x", TensorT((3,))),), "Tuple[List[Tensor], List[Tensor]]")
    source = plain.source.replace("\n\ndef main", "\nG0 = np.linspace(-1.0, 1.0, 4)\n\n\ndef main")
    program = Program(source, "main", plain.params, "float64", False,
                      resets=("G0[...] = np.linspace(-1.0, 1.0, 4)",))
    try:
        assert check_gradients(program, 0) == "compared"
    finally:
        unload(program)


def test_ownership_check_leaves_results_that_are_a_global_arrays_memory_alone():
    # writing into the returned view of G0 changes G0 in plain Python too, so the next call's
    # result changes there as well: that is no ownership fault of the compiled function
    plain = _program("return [G0[::2], x * G0.sum()]", (Param("x", TensorT((3,))),),
                     "List[Tensor]")
    source = plain.source.replace("\n\ndef main", "\nG0 = np.linspace(-1.0, 1.0, 4)\n\n\ndef main")
    program = Program(source, "main", plain.params, "float64", False,
                      resets=("G0[...] = np.linspace(-1.0, 1.0, 4)",))
    try:
        check_program(program, 0, ["pipeline"])
    finally:
        unload(program)


def test_a_stale_compiled_function_fails_after_the_globals_change(monkeypatch):
    plain = _program("return x * G0", (Param("x", TensorT((3,))),))
    source = plain.source.replace("\n\ndef main", "\nG0 = np.linspace(-1.0, 1.0, 3)\n\n\ndef main")
    program = Program(source, "main", plain.params, "float64", True,
                      resets=("G0[...] = np.linspace(-1.0, 1.0, 3)",), updates=("G0 += 0.25",))
    first = {}

    def stale(base, config, args, f=None):  # the first call's answer, forever
        return first.setdefault(config, differential.call(base.python_fn, args))

    monkeypatch.setattr(differential, "run_configuration", stale)
    try:
        with pytest.raises(AssertionError, match=r"after G0 \+= 0.25"):
            check_program(program, 0, ["pipeline"])
    finally:
        unload(program)
