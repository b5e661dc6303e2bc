"""Import structure: the import-linter contracts in pyproject.toml hold (layers ir <- passes <-
fuser <- script <- rnn, script layered by role, the runtime never importing the tools, no cycles
inside script), the only function-level imports between script modules are the two documented
delegations, and importing the packages changes no state outside them."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import importlinter  # noqa: F401  (the `test` extra installs it; CI must not skip this file)

ROOT = Path(__file__).resolve().parent.parent

DOCUMENTED_LAZY_IMPORTS = {
    ("script.runtime.function", "script.runtime.autodiff"),  # fn.backward_graph_for()
    ("script.runtime.function", "script.tools.explain"),  # fn.explain(), strict=True
}
"""(importer, imported): the user-facing delegations pyproject.toml's contracts ignore."""


def _run(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter that imports this checkout."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_import_contracts_hold():
    done = _run("import sys\nfrom importlinter.cli import lint_imports\n"
                "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, "
                "no_logo=True))")
    assert done.returncode == 0, done.stdout + done.stderr


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _function_level_imports(path: Path) -> set[tuple[str, str]]:
    """(importer, imported module) for each import of a script module inside a function."""
    importer = _module_name(path)
    found = set()
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            found |= {(importer, name) for name in names
                      if name == "script" or name.startswith("script.")}
    return found


def test_the_only_function_level_imports_in_script_are_the_documented_delegations():
    found = set()
    for path in sorted((ROOT / "script").rglob("*.py")):
        found |= _function_level_imports(path)
    assert found == DOCUMENTED_LAZY_IMPORTS


PROGRAM = """
import numpy as np

import fuser
import passes
import script
from passes import constant_prop


def state():
    print(constant_prop.get_evaluator() is None, "fuse-elementwise" in passes.all_passes())


@script.script
def f(x):
    return np.tanh(x) + 1.0


state()
f(np.ones(3))
state()
"""


def test_importing_the_packages_registers_nothing_until_a_pipeline_runs(tmp_path):
    program = tmp_path / "program.py"
    program.write_text(PROGRAM, encoding="utf-8")
    done = _run(f"import runpy; runpy.run_path({str(program)!r}, run_name='__main__')")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["True False", "False True"]
