"""A None check of an Optional field of a script class (``if self.b is not None:``) narrows
reads of that field, as it narrows a local; an assignment of the field or a call ends it."""

from typing import Optional

import numpy as np
import pytest

from script import ScriptError, Tensor, script


@script
class Biased:
    def __init__(self, b: Optional[Tensor]):
        self.b = b

    def apply(self, x: Tensor) -> Tensor:
        if self.b is not None:
            return x + self.b
        return x

    def early_exit(self, x: Tensor) -> Tensor:
        if self.b is None:
            return x
        return x * self.b

    def branches(self, x: Tensor) -> Tensor:
        if self.b is None:
            y = x
        else:
            y = x - self.b
        return y if self.b is None else y + self.b

    def in_loop(self, x: Tensor, n: int) -> Tensor:
        if self.b is not None and n > 0:
            for _ in range(n):
                x = x + self.b
        return x

    def clear(self) -> None:
        self.b = None

    def assigned(self, x: Tensor) -> Tensor:
        if self.b is not None:
            self.b = None
            return x + self.b
        return x

    def after_call(self, x: Tensor) -> Tensor:
        if self.b is not None:
            self.clear()
            return x + self.b
        return x

    def assigned_in_loop(self, x: Tensor, n: int) -> Tensor:
        if self.b is not None:
            for _ in range(n):
                x = x + self.b
                self.b = None
        return x


def narrowed(x: Tensor, use: bool):
    obj = Biased(x * 2.0 if use else None)
    return obj.apply(x), obj.early_exit(x), obj.branches(x), obj.in_loop(x, 3)


def other_object(x: Tensor):
    obj = Biased(x)
    if obj.b is not None:
        obj = Biased(None)
        return obj.apply(x) + obj.b
    return x


def assigned(x: Tensor):
    return Biased(x).assigned(x)


def after_call(x: Tensor):
    return Biased(x).after_call(x)


def assigned_in_loop(x: Tensor):
    return Biased(x).assigned_in_loop(x, 2)


@pytest.mark.parametrize("use", [True, False])
def test_reads_of_a_checked_field_have_the_narrowed_type(use):
    x = np.arange(3.0)
    got, want = script(narrowed)(x, use), narrowed(x, use)
    assert type(got) is tuple and len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype


@pytest.mark.parametrize("fn", [other_object, assigned, after_call, assigned_in_loop])
def test_a_rebound_object_assigned_field_or_call_ends_the_narrowing(fn):
    with pytest.raises(TypeError):
        fn(np.ones(2))
    with pytest.raises(ScriptError, match="unsupported operand types for \\+: 'Tensor' and "
                       "'Tensor\\?'"):
        script(fn)(np.ones(2))


# -- the operands after a None test in `and` / `or` ----------------------------------------------
def narrowed_in_the_expression(x: Tensor, k: Optional[int], h: Optional[Tensor]):
    a = 2.0 if k is not None and k == 1 else 3.0
    b = h is not None and h.shape[0] == 2
    c = h is None or h.shape[0] == 2
    if k is not None and k > 0 and h is not None and h.ndim == 1:
        a = a + 1.0
    return x * a, b, c


@pytest.mark.parametrize("k, h", [(1, np.ones(2)), (None, None), (2, np.ones(3)), (1, None)])
def test_an_operand_after_a_none_test_in_and_or_is_narrowed(k, h):
    """ONNX's reference ops: ``layout is not None and layout == 1``."""
    x = np.ones(2)
    got, want = script(narrowed_in_the_expression)(x, k, h), narrowed_in_the_expression(x, k, h)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:] == want[1:]


def still_optional_after(k: Optional[int]) -> int:
    a = k is not None and k == 1
    return k + 1 if a else 0


def test_the_narrowing_ends_with_the_expression():
    """After the expression ``k`` is Optional again: ``k + 1`` runs Python's check, a
    TypeError where ``k`` is None (here never: ``a`` is False then)."""
    assert script(still_optional_after)(1) == still_optional_after(1) == 2
    assert script(still_optional_after)(None) == still_optional_after(None) == 0


def plus_one(k: Optional[int]) -> int:
    return k + 1


def test_an_optional_operand_that_is_none_raises_pythons_error():
    with pytest.raises(TypeError):
        plus_one(None)
    with pytest.raises(TypeError, match="unsupported operand type"):
        script(plus_one)(None)
