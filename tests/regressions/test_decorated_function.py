"""A function under a ``functools.wraps`` decorator is compiled as the wrapper Python calls, not
as the function it wraps (``inspect.getsourcelines`` follows ``__wrapped__``: the decorator was
dropped, silently). DAPPER's ``@ens_compatible`` transposes its argument and result this way."""

import functools

import numpy as np

from script import Tensor, script, vjp
from tests.gradcheck import check_vjp


def doubled(func):
    @functools.wraps(func)
    def wrapper(x):
        return func(x) * 2.0
    return wrapper


def transposed(func):
    @functools.wraps(func)
    def wrapper(x):
        return func(x.T).T
    return wrapper


@doubled
def plus_one(x: Tensor):
    return x + 1.0


@transposed
def first_row(x: Tensor):
    return x[0] * x


def caller(x: Tensor):
    return plus_one(x) + first_row(x)


def test_a_decorated_function_compiles_with_its_decorator():
    x = np.arange(6.0).reshape(2, 3)
    for f in (plus_one, first_row, caller):
        np.testing.assert_array_equal(script(f)(x), f(x))
    check_vjp(caller, (x,))
    out, _ = vjp(script(plus_one), x)
    np.testing.assert_array_equal(out, plus_one(x))
