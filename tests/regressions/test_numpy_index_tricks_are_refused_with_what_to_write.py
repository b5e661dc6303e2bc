"""``np.c_[...]`` (Deep Learning from Scratch 2's SigmoidWithLoss: ``np.c_[1 - self.y,
self.y]``) said "'np.c_' is a CClass, which cannot be used as a value": it now says what to write
instead."""

import numpy as np
import pytest

from script import ScriptError, script


def columns(y):
    return np.c_[1 - y, y]


def test_np_c_says_to_write_column_stack():
    with pytest.raises(ScriptError, match=r"'np.c_\[\.\.\.\]' \(numpy's index trick\) is not "
                                          r"supported: write np.column_stack\(\(a, b\)\)"):
        script(columns)(np.ones(3))
