"""``m = n or 3`` compiled to the truth value of ``n or 3`` (``True``), so ``x * m`` was ``x``
where Python gives ``x * n`` (or ``x * 3`` for ``n == 0``). As a value, ``a or b`` / ``a and b``
is the operand that decides, as in Python; as a condition it is still a bool."""

from typing import Optional

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def scaled(x: Tensor, n: int) -> Tensor:
    m = n or 3
    return x * m


def first_nonzero(a: float, b: float, c: float) -> float:
    return a or b or c


def both(a: int, b: int) -> int:
    return a and b


def mixed(x: Tensor, flag: bool, n: int):
    if flag or n:
        return x * 2.0
    return x


@pytest.mark.parametrize("n", [0, 5])
def test_or_gives_the_deciding_operand(n):
    x = np.ones(2)
    np.testing.assert_array_equal(script(scaled)(x, n), scaled(x, n))


@pytest.mark.parametrize("args", [(0.0, 0.0, 2.5), (0.0, 1.5, 2.5), (0.5, 0.0, 0.0),
                                  (0.0, 0.0, 0.0)])
def test_a_chain_of_or_and_and(args):
    assert script(first_nonzero)(*args) == first_nonzero(*args)
    assert script(both)(int(args[0] * 2), int(args[1] * 2)) == both(int(args[0] * 2),
                                                                      int(args[1] * 2))


@pytest.mark.parametrize("flag, n", [(True, 0), (False, 0), (False, 3)])
def test_as_a_condition_the_operands_may_differ(flag, n):
    np.testing.assert_array_equal(script(mixed)(np.ones(2), flag, n), mixed(np.ones(2), flag, n))


def test_operands_of_two_types_as_a_value_are_refused():
    def bad(flag: bool, n: int):
        return flag or n

    with pytest.raises(ScriptError, match="the operands of 'or' have types bool and int"):
        script(bad)(False, 3)


def test_an_optional_operand_is_refused():
    def bad(x: Tensor, h: Optional[Tensor] = None) -> Tensor:
        return h or x

    with pytest.raises(ScriptError, match="truth value of an Optional"):
        script(bad)(np.ones(1))
