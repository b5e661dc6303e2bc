"""A module whose file was edited after it was imported: the function's line now holds another
definition. Compiling what sits there would run other code than Python runs (a silent wrong
value); the compiler refuses, naming the function and the file."""

import importlib
import os
import sys
import time

import numpy as np
import pytest

from script import ScriptError, script

SOURCE = ("from script import Tensor\n\n\ndef f(x: Tensor) -> Tensor:\n    return x * 2.0\n\n\n"
          "def g(x: Tensor) -> Tensor:\n    return x * 3.0\n")


def test_a_definition_moved_by_an_edit_is_refused(tmp_path, monkeypatch):
    (tmp_path / "edited_module.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_module")
    try:
        edited = "# one\n# two\n# three\n" + SOURCE.replace("x * 2.0", "x * 100.0")
        (tmp_path / "edited_module.py").write_text(edited)
        later = time.time() + 5
        os.utime(tmp_path / "edited_module.py", (later, later))
        with pytest.raises(ScriptError, match="source file has changed.*now defines 'f'"):
            script(module.g)(np.arange(3.0))
    finally:
        sys.modules.pop("edited_module", None)
