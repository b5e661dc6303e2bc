"""Test configuration: the verifier runs after every pass; `--slow` enables long fuzzing runs."""

import os

import pytest

os.environ.setdefault("RNNSCRIPT_VERIFY", "1")


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
