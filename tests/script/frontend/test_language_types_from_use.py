"""The examples of docs/language.md's "Types from use" section compile and equal plain numpy:
the section is read from the file, so it stays true."""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from script import script

DOC = Path(__file__).resolve().parents[3] / "docs" / "language.md"
HEADER = """\
from typing import Dict, List, Optional
import numpy as np
from script import Tensor

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))

# the page's own checks (tests/test_docs_language.py runs them); here the examples run in float32
check = check_grad = lambda *args: None
rng = np.random.default_rng(0)
"""


def section_code() -> str:
    text = DOC.read_text()
    section = text.split("## Types from use", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    return "\n\n".join(re.sub(r"(?m)^  ", "", b) for b in blocks)


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    path = tmp_path_factory.mktemp("doc") / "types_from_use.py"
    path.write_text(HEADER + "\n" + section_code())
    spec = importlib.util.spec_from_file_location("types_from_use", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _args(name):
    r = np.random.default_rng(0)
    f32 = lambda *s: r.standard_normal(s).astype(np.float32)  # noqa: E731
    weights = {f"{k}_{g}": f32(3, 3) if k in "WU" else f32(3) for g in "zh" for k in "WUb"}
    return {
        "squared_loss": (f32(4, 3), f32(4, 3)),
        "doubled": (4,),
        "rnn": (f32(4, 2, 3), f32(2, 3), f32(3, 3)),
        "accumulate": (f32(3), f32(3)),
        "init_hidden": (f32(2, 3), 5),
        "gru": (f32(4, 2, 3), f32(2, 3), weights),
    }[name]


NAMES = ["squared_loss", "doubled", "rnn", "accumulate", "init_hidden", "gru"]


def test_the_section_shows_every_example():
    code = section_code()
    assert all(f"def {name}(" in code for name in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_example_compiles_and_equals_numpy(examples, name):
    fn = getattr(examples, name)
    args = _args(name)
    got, want = script(fn)(*args), fn(*args)
    if isinstance(want, list):
        assert got == want
        return
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
