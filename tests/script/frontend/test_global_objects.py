"""A plain object held by a global (NumpyDL's ``_zero = Zero()`` initializer, called as
``_zero((n, h))``) is refused at the call with what to write instead: its methods compile for
objects passed as arguments, which work."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script


class Zero:
    def __call__(self, size):
        return self.call(size)

    def call(self, size):
        return np.zeros(size)


_zero = Zero()


def calls_a_global_object(x: Tensor):
    return _zero(x.shape) + x


def calls_a_global_objects_method(x: Tensor):
    return _zero.call(x.shape) + x


def calls_an_object_argument(zero: Zero, x: Tensor):
    return zero(x.shape) + zero.call(x.shape) + x


@pytest.mark.parametrize("fn, spelled", [(calls_a_global_object, "_zero: calling a Zero"),
                                         (calls_a_global_objects_method,
                                          "_zero.call: a method of a Zero")])
def test_a_global_objects_call_is_refused_with_the_argument_to_write(fn, spelled):
    with pytest.raises(ScriptError, match=spelled) as info:
        script(fn)(np.ones(3))
    assert "pass the object as an argument (zero: Zero)" in str(info.value)


def test_the_object_as_an_argument_compiles():
    x = np.arange(3.0)
    np.testing.assert_array_equal(script(calls_an_object_argument)(Zero(), x), x)


@script
class ScriptGate:
    def forward(self, W: Tensor, x: Tensor) -> Tensor:
        return np.dot(W, x)


script_gate = ScriptGate()


def use_script_gate(W: Tensor, x: Tensor):
    return script_gate.forward(W, x)  # pangolulu's rnn-from-scratch: module-level gate objects


def test_a_global_script_class_objects_method_says_to_pass_it():
    with pytest.raises(ScriptError, match=r"a method of a ScriptGate object \(a @script class\) "
                       r"held by a global .* \(scriptgate: ScriptGate\)"):
        script(use_script_gate)(np.eye(3), np.ones(3))
