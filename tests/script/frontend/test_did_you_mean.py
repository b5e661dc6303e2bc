"""A misspelled ``np``/``ops`` name or tensor method gets a ScriptError at the user's line that
offers the registry's spellings closest to it."""

import numpy
import numpy as np
import pytest

from script import ScriptError, Tensor, ops, script


def np_typo(x: Tensor):
    return np.tanhh(x)


def ops_typo(x: Tensor):
    return ops.sigmod(x)


def long_name_typo(x: Tensor):
    return numpy.concatnate([x, x])


def dtype_typo(x: Tensor):
    return x.astype(np.float23)


def method_typo(x: Tensor):
    return x.sumn(axis=0)


def attribute_typo(x: Tensor):
    return x.shap


def far_from_anything(x: Tensor):
    return np.frobnicate(x)


@pytest.mark.parametrize("fn,hint,line", [
    (np_typo, "(did you mean 'np.tanh' or 'np.tan'?)", "np.tanhh(x)"),
    (ops_typo, "(did you mean 'ops.sigmoid'?)", "ops.sigmod(x)"),
    (long_name_typo, "(did you mean 'numpy.concatenate'?)", "numpy.concatnate"),
    (dtype_typo, "'np.float32'", "np.float23"),
    (method_typo, "(did you mean '.sum'?)", "x.sumn(axis=0)"),
    (attribute_typo, "'.shape'", "x.shap"),
])
def test_a_misspelled_name_gets_the_closest_spellings(fn, hint, line):
    with pytest.raises(ScriptError) as info:
        script(fn)(np.ones(3))
    message = str(info.value)
    assert hint in message and line in message, message


def test_no_offer_when_nothing_is_close():
    with pytest.raises(ScriptError, match="has no attribute 'frobnicate'\\n") as info:
        script(far_from_anything)(np.ones(3))
    assert "did you mean" not in str(info.value)
