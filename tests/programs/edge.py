"""Programs at the edges of what compiles: their plain Python raises (a numpy or Python error),
or they do something a compiler can easily get wrong (index past the end, divide by zero, shapes
that do not fit). Compiling, calling and differentiating them must raise only user-facing errors
(``ScriptError``, ``SignatureError``) or the error the plain function raises itself.
"""
# ruff: noqa

from typing import List, Optional, Tuple

import numpy as np

from script import Tensor, ops


def edge_index_past_the_end(x: Tensor) -> Tensor:
    return x[10] * 2.0


def edge_constant_division_by_zero(x: Tensor) -> Tensor:
    k = 1 // 0
    return x * float(k)


def edge_float_division_by_zero(x: Tensor) -> Tensor:
    return x / 0.0


def edge_reshape_that_does_not_fit(x: Tensor) -> Tensor:
    return x.reshape((7, 5))


def edge_matmul_that_does_not_fit(x: Tensor) -> Tensor:
    return x @ np.ones((7, 2))


def edge_assert_false(x: Tensor) -> Tensor:
    assert x.sum() > 1e9, "too small"
    return x


def edge_raise(x: Tensor, n: int) -> Tensor:
    if n > 1:
        raise ValueError("n too big")
    return x


def edge_empty_list_stack(x: Tensor) -> Tensor:
    l: List[Tensor] = []
    return np.stack(l) + x


def edge_list_read_past_the_end(x: Tensor) -> Tensor:
    l = [x, x * 2.0]
    return l[5]


def edge_none_used_as_array(x: Tensor, y: Optional[Tensor]) -> Tensor:
    return x + y


def edge_chunk_that_does_not_divide(x: Tensor) -> Tensor:
    a, b, c = ops.chunk(x, 3, 0)
    return a + c


def edge_zero_trip_loop_result(x: Tensor, n: int) -> Tensor:
    for i in range(n):
        y = x * float(i)
    return y


def edge_huge_exponent(x: Tensor) -> Tensor:
    return np.exp(x * 1e6)


def edge_integer_overflow(n: int) -> int:
    return n ** 100


def edge_unpack_wrong_length(x: Tensor) -> Tensor:
    a, b = [x, x, x]
    return a + b


def edge_tuple_index_out_of_range(x: Tensor) -> Tensor:
    t = (x, x * 2.0)
    return t[2]


def edge_deep_recursion(x: Tensor, n: int) -> Tensor:
    if n == 0:
        return x
    return edge_deep_recursion(x * 0.5, n - 1)


def edge_sum_over_missing_axis(x: Tensor) -> Tensor:
    return x.sum(axis=5)


def edge_transpose_bad_axes(x: Tensor) -> Tensor:
    return x.transpose((0, 0))


def edge_slice_step_zero(x: Tensor) -> Tensor:
    return x[::0]
