"""Test configuration: the verifier runs after every pass; `--slow` enables long fuzzing runs."""

import atexit
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("RNNSCRIPT_VERIFY", "1")
# compiled kernels go to a private cache, not the user's ~/.cache/rnnscript
if "RNNSCRIPT_CACHE_DIR" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="rnnscript-test-cache-")
    os.environ["RNNSCRIPT_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help="run the slow fuzzing tests with many examples")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow fuzzing run: pass --slow to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
