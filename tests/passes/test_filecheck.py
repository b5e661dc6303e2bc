"""Pass tests written as IR text: tests/filecheck/*.ir.

Each file starts with ``// RUN: <pass list>``; the other ``//`` lines are FileCheck directives
(``// CHECK:``, ``// CHECK-NEXT:``, ``// CHECK-NOT:``). The IR (every line not starting with ``//``)
is parsed, the passes run, and the printed graph is checked against the file with the ``filecheck``
package.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import fuser
import ir
import passes
from tests.helpers import ROOT

fuser.register_passes()  # fuse-elementwise has cases here too

CASES = sorted((ROOT / "tests" / "filecheck").glob("*.ir"))


def run_line(text: str) -> str:
    """The pass list of the file's ``// RUN:`` line."""
    for line in text.splitlines():
        if line.strip().startswith("// RUN:"):
            return line.split("RUN:", 1)[1].strip()
    raise AssertionError("the file has no '// RUN:' line")


def ir_text(text: str) -> str:
    """The file without its ``//`` lines."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def test_every_pass_has_filecheck_cases():
    covered = {name.strip() for case in CASES for name in run_line(case.read_text()).split(",")}
    registered = set(passes.all_passes())
    assert registered - covered == set(), "passes without a tests/filecheck case"
    assert covered <= registered, "filecheck cases name passes nobody registers"


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_filecheck(case: Path):
    text = case.read_text()
    graph = ir.parse(ir_text(text))
    passes.run_pipeline(graph, run_line(text))
    output = str(graph)
    result = subprocess.run([sys.executable, "-m", "filecheck", str(case)], input=output,
                            capture_output=True, text=True)
    assert result.returncode == 0, f"{result.stdout}{result.stderr}\n--- output ---\n{output}"
