"""docs/language.md: its code blocks run, in order, as one program, and the examples check
themselves (so the page cannot claim what the compiler does not do). In the blocks,
``check(f, *args)`` calls ``f`` compiled and plain and asserts the same results (dtypes, shapes,
containers, values), ``check_grad(f, *args)`` also compares ``vjp`` gradients with central
finite differences, and ``refused(f, *args, match=...)`` asserts the ScriptError."""

import copy
import re
import runpy
import textwrap
from typing import Any

import numpy as np
import pytest

from script import ScriptError, script
from tests.gradcheck import check_vjp
from tests.helpers import ROOT, assert_same, assert_same_at

LANGUAGE = ROOT / "docs" / "language.md"


def code_blocks(text: str) -> list[str]:
    """The ```python blocks of a markdown text, indented ones (inside a list item) dedented."""
    found = re.findall(r"^( *)```python\n(.*?)^\1```", text, re.S | re.M)
    return [textwrap.dedent(body) for _, body in found]


def same(got: Any, want: Any) -> None:
    """``got`` is ``want``: the containers of the same kinds (dict keys in order), strings equal,
    arrays of the same dtype and shape and equal within the dtype's tolerance."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), (got, want)
        for key in want:
            same(got[key], want[key])
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            same(g, w)
    elif isinstance(want, str):
        assert got == want, (got, want)
    elif isinstance(want, np.ndarray) and want.dtype.kind == "f":
        assert_same_at(got, want)
    else:
        assert_same(got, want)


class Checks:
    """The helpers the blocks call, counting the examples they check."""

    def __init__(self) -> None:
        self.checked: list[str] = []

    def check(self, fn: Any, *args: Any) -> Any:
        plain = getattr(fn, "python_fn", fn)
        want = plain(*copy.deepcopy(args))
        got = script(fn)(*copy.deepcopy(args))
        same(got, want)
        self.checked.append(plain.__name__)
        return got

    def check_grad(self, fn: Any, *args: Any) -> None:
        self.check(fn, *args)
        check_vjp(script(fn), args)

    def refused(self, fn: Any, *args: Any, match: str) -> None:
        with pytest.raises(ScriptError, match=match):
            script(fn)(*args)
        self.checked.append(fn.__name__)

    def raises_as_python(self, fn: Any, *args: Any, error: type) -> None:
        """The plain function and the compiled one raise ``error`` for ``args``."""
        for f in (fn, script(fn)):
            with pytest.raises(error):
                f(*copy.deepcopy(args))
        self.checked.append(fn.__name__)


def test_code_blocks_are_found_in_list_items_too():
    text = "a\n```python\nx = 1\n```\n- item:\n\n  ```python\n  if x:\n      y = 2\n  ```\n"
    assert code_blocks(text) == ["x = 1\n", "if x:\n    y = 2\n"]


@pytest.mark.filterwarnings("ignore:`row_stack` alias is deprecated:DeprecationWarning")
def test_language_code_blocks_run_and_check_themselves(tmp_path):
    blocks = code_blocks(LANGUAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 15
    # scripted functions need a source file, so the blocks run as one module written to disk
    program = tmp_path / "language_program.py"
    program.write_text("\n\n".join(blocks), encoding="utf-8")
    checks = Checks()
    runpy.run_path(str(program), run_name="language", init_globals=dict(
        check=checks.check, check_grad=checks.check_grad, refused=checks.refused,
        raises_as_python=checks.raises_as_python))
    assert len(checks.checked) >= 40, checks.checked
