"""``z = v.copy(); y = z; z += 1`` in a helper whose caller passes numpy's scalar (``np.sum(x)``):
numpy's copy is a scalar, ``+=`` makes a new one for ``z`` alone, and ``y`` keeps the old value.
The compiled code took an argument's copy for an array and changed ``y`` too (4.0 for numpy's
3.0). A helper's code cannot tell a scalar argument from a 0-d array, so where the copy may be
0-d and has another name read later the update is refused at the user's line; with axes it is
numpy's in-place update, seen under both names. A copy with no other name compiles at any
rank, and a 0-d copy of an argument can be written into (``z[()] = v``). Called from Python,
the function's ``Tensor`` arguments are arrays (numpy's scalars are refused), so there the
update is numpy's in-place one at every rank."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def _copy_named_twice(v: Tensor):
    z = v.copy()
    y = z
    z += 1.0
    return y


def passes_a_scalar(x: Tensor):
    return _copy_named_twice(np.sum(x))


def passes_an_array(x: Tensor):
    return _copy_named_twice(x * 2.0)


def copy_named_once(x: Tensor):
    z = x.copy()
    z *= 3.0
    return z


def write_into_a_0d_copy(x: Tensor):
    z = x.copy()
    z[()] = 3.0
    return z * 1.0


def test_a_helper_given_numpys_scalar_is_refused():
    x = np.arange(3.0)
    assert passes_a_scalar(x) == 3.0  # numpy: y keeps the sum
    with pytest.raises(ScriptError, match=r"0-d copy of an argument that 'y' also names") as info:
        script(passes_a_scalar)(x)
    assert "test_argument_copy_updates.py" in str(info.value)


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_with_axes_the_update_is_seen_under_both_names(shape):
    x = np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape)
    np.testing.assert_array_equal(script(passes_an_array)(x.copy()), passes_an_array(x.copy()))
    np.testing.assert_array_equal(script(_copy_named_twice)(x.copy()), _copy_named_twice(x))


def test_called_from_python_the_argument_is_an_array():
    """``script`` refuses numpy's scalars as ``Tensor`` arguments, so there the copy of a 0-d
    argument is an array, updated under both names as numpy's."""
    x = np.array(2.0)
    got, want = script(_copy_named_twice)(x.copy()), _copy_named_twice(x.copy())
    assert type(got) is type(want) is np.ndarray and got == want == 3.0


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_a_copy_with_one_name(shape):
    x = np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape)
    np.testing.assert_array_equal(script(copy_named_once)(x.copy()), copy_named_once(x.copy()))
    np.testing.assert_array_equal(script(write_into_a_0d_copy)(x.copy()),
                                  write_into_a_0d_copy(x.copy()))


def _copy_updated(v: Tensor):
    z = v.copy()
    y = z  # (read nowhere after)
    z += 1.0
    return z


def passes_a_scalar_to_an_update_alone(x: Tensor):
    return _copy_updated(np.sum(x))


def _filled(v: Tensor):
    z = v.copy()
    z.fill(3.0)
    return z


def fills_a_scalars_copy(x: Tensor):
    return _filled(np.sum(x) * 2.0) + 1.0


def test_an_other_name_read_nowhere_after_is_no_refusal():
    x = np.arange(3.0)
    assert script(passes_a_scalar_to_an_update_alone)(x) == passes_a_scalar_to_an_update_alone(x)


def test_a_write_into_a_helpers_copy_of_numpys_scalar_is_refused():
    """numpy ignores ``.fill`` of its scalar (7.0 here): the compiled helper cannot tell the
    scalar from a 0-d array, and refuses the write when it runs rather than fill it."""
    x = np.arange(3.0)
    assert fills_a_scalars_copy(x) == 7.0
    with pytest.raises(TypeError, match="writing into a 0-d value numpy may hold as a scalar"):
        script(fills_a_scalars_copy)(x)
