"""Differentiation tests written as IR text: tests/filecheck/autodiff/*.ir.

Each file starts with ``// RUN: differentiate`` or ``// RUN: differentiate argnums=1,2``: the IR
(a specialized graph, as ``vjp`` differentiates it) is differentiated with respect to those input
positions (every one when none are named), both graphs are optimized as ``vjp`` optimizes them,
and the augmented forward followed by the backward (the one whose first input is ``%grad``) is
checked against the file's FileCheck directives. Last comes the split into differentiable
regions (``passes.autodiff.regions``), under the line ``// ---- differentiable regions ----``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ir
from passes.autodiff import differentiate
from script.runtime.autodiff import optimize_gradient
from tests.helpers import ROOT
from tests.passes.test_filecheck import ir_text, run_line

CASES = sorted((ROOT / "tests" / "filecheck" / "autodiff").glob("*.ir"))


def differentiated(text: str) -> str:
    """The optimized forward and backward graphs of the file's IR, as text."""
    command = run_line(text).split()
    assert command[0] == "differentiate", "the RUN line must be 'differentiate [argnums=...]'"
    wrt = None
    for option in command[1:]:
        name, _, value = option.partition("=")
        assert name == "argnums", f"unknown option {option}"
        wrt = frozenset(int(k) for k in value.split(","))
    grad = differentiate(ir.parse(ir_text(text)), wrt=wrt, regions=True)
    optimize_gradient(grad)
    grad.regions.verify()
    return f"{grad.forward}\n{grad.backward}\n// ---- differentiable regions ----\n{grad.regions}"


def test_there_are_cases():
    assert len(CASES) >= 4


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_filecheck_autodiff(case: Path):
    output = differentiated(case.read_text())
    result = subprocess.run([sys.executable, "-m", "filecheck", str(case)], input=output,
                            capture_output=True, text=True)
    assert result.returncode == 0, f"{result.stdout}{result.stderr}\n--- output ---\n{output}"
