"""Bad programs get the promised ScriptError: the message, the line, and a caret under the code.

The corpus is tests/programs/bad.py: every ``bad_*`` function there marks its offending line with
``# ERROR: <regex>``.
"""

import inspect
import re

import pytest

from script.errors import ScriptError
from script.frontend.compiler import compile_function
from tests.programs import bad as bad_programs

MARK = re.compile(r"#\s*ERROR:\s*(.+?)\s*$")


def corpus() -> list[tuple[str, int, str]]:
    """(function name, marked line, expected regex) for every bad program."""
    cases = []
    for name, fn in vars(bad_programs).items():
        if not name.startswith("bad_") or not inspect.isfunction(fn):
            continue
        lines, start = inspect.getsourcelines(fn)
        marks = [(start + k, m.group(1)) for k, line in enumerate(lines)
                 if (m := MARK.search(line))]
        assert len(marks) == 1, f"{name} must mark exactly one line with '# ERROR:'"
        cases.append((name, *marks[0]))
    return cases


CASES = corpus()


def first_error(fn) -> ScriptError:
    """The error compiling ``fn`` raises, or where the error is in a branch whose condition a
    call may decide (``if n == 0:`` of a parameter), the branch's deferred error: code
    generation raises it for every call that keeps the branch."""
    try:
        definition = compile_function(fn)
    except ScriptError as error:
        return error
    assert definition.deferred_errors, f"{fn.__name__} compiled"
    return definition.deferred_errors[0]


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 30


@pytest.mark.parametrize("name,line,pattern", CASES, ids=[c[0] for c in CASES])
def test_bad_program_is_rejected_at_the_marked_line(name, line, pattern):
    fn = getattr(bad_programs, name)
    error = first_error(fn)
    assert re.search(pattern, error.reason), f"{error.reason!r} does not match {pattern!r}"
    assert error.line == line, f"error at line {error.line}, expected {line}:\n{error}"
    assert error.file == inspect.getsourcefile(fn)
    text = str(error)
    assert f"bad.py:{line}:" in text
    source_line = inspect.getsource(bad_programs).splitlines()[line - 1]
    assert source_line.rstrip() in text  # the offending line is quoted
    caret = text.splitlines()[-1]
    assert caret.strip().startswith("^")
    assert caret.index("^") - 4 == error.col  # the caret sits under the construct


def test_functions_without_source_are_rejected():
    namespace: dict = {}
    exec("def made_by_exec(x):\n    return x\n", namespace)
    with pytest.raises(ScriptError, match="source code is unavailable.*define it in a .py file"):
        compile_function(namespace["made_by_exec"])


def test_lambdas_compile_as_their_def_unless_ambiguous():
    fdef = compile_function(lambda x: x * 2.0)
    assert fdef.arg_names == ["x"]
    twins = [lambda x: x, lambda x: -x]  # one line, the same parameters: which one is it?
    with pytest.raises(ScriptError, match="several lambdas on its line"):
        compile_function(twins[1])


def test_non_functions_are_rejected():
    with pytest.raises(ScriptError, match="only Python functions can be scripted"):
        compile_function(len)
