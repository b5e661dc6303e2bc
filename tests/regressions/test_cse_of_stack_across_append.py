"""Two `stack`s of one list with an `append` between them were merged by CSE, so the second read
the list as it was before the append (found by the program fuzzer)."""

import numpy as np

from script import Tensor, ops, script


def stack_twice(x: Tensor) -> Tensor:
    items = [x]
    first = ops.stack(items).sum(axis=0)
    items.append(x + 1.0)
    second = ops.stack(items).sum(axis=0)
    return first + second


def test_stack_after_append_sees_the_new_element():
    x = np.arange(3.0)
    np.testing.assert_array_equal(script(stack_twice)(x), stack_twice(x))
