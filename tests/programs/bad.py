"""Programs the frontend must reject. Each function marks the offending line with a comment
``# ERROR: <regex>``; compiling it must raise a ScriptError matching the regex at that line.

The bodies are never run; they only need to be valid Python syntax.
"""
# ruff: noqa

import contextlib
from typing import Dict, List, Optional, Set, Tuple

import numpy as np

from script import Tensor, ops


def helper(x: Tensor, scale: float = 2.0) -> Tensor:
    return x * scale


def helper2(x: Tensor, y: Tensor) -> Tensor:
    return x - y


# -- unsupported syntax ---------------------------------------------------------------------
def bad_lambda(x: Tensor) -> Tensor:
    return (lambda v: v + 1.0)(x)  # ERROR: lambda is not supported


def bad_with(x: Tensor) -> Tensor:
    with contextlib.suppress(ValueError):  # ERROR: a with statement other than
        x = x + 1.0
    return x


def bad_try(x: Tensor) -> Tensor:
    try:  # ERROR: try/except is not supported
        x = x + 1.0
    except ValueError:
        pass
    return x


def bad_class(x: Tensor) -> Tensor:
    class Inner:  # ERROR: class definitions are not supported
        pass
    return x


def bad_nested_def(x: Tensor) -> Tensor:
    def inner(v):
        return v
    return [inner][0](x)  # ERROR: 'inner' is a nested function: it can only be called


def bad_nonlocal(x: Tensor) -> Tensor:
    y = x

    def double():
        nonlocal y  # ERROR: nonlocal is not supported: return the new value
        y = y * 2
    double()
    return y


def bad_generator(x: Tensor):
    yield x  # ERROR: generators/yield are not supported


def bad_global(x: Tensor) -> Tensor:
    global COUNTER  # ERROR: global/nonlocal are not supported
    return x


def bad_del(x: Tensor) -> Tensor:
    y = x
    del y  # ERROR: del is not supported
    return x


def bad_star_args(x: Tensor, *rest):  # ERROR: \*args is not supported
    return x


def bad_keyword_only(x: Tensor, *, scale: float = 1.0):  # ERROR: keyword-only arguments are not supported
    return x


def bad_walrus(x: Tensor, n: int) -> Tensor:
    if (m := n + 1) > 2:  # ERROR: the walrus operator := is not supported
        return x
    return x


def bad_comprehension(xs: List[Tensor]) -> List[Tensor]:
    return [x + 1.0 for x in {x for x in xs}]  # ERROR: set comprehensions are not supported


def bad_import(x: Tensor) -> Tensor:
    import math  # ERROR: import statements are not supported
    return x


def bad_fstring(x: Tensor, n: int) -> Tensor:
    print(f"n = {n}, x = {x}")  # ERROR: an f-string field of type
    return x


def bad_for_else(x: Tensor, n: int) -> Tensor:
    for i in range(n):  # ERROR: for/else is not supported
        x = x + 1.0
    else:
        x = x - 1.0
    return x


def bad_bitwise(a: int, b: int) -> int:
    return a & b  # ERROR: the operator & of int and int is not supported


def bad_star_call(xs: List[Tensor]) -> Tensor:
    return ops.stack(*xs)  # ERROR: \*xs in a call of ops.stack\(\) is not supported: the defaults of ops.stack\(\) \(axis\) leave the list's length open \(unpack it first


def bad_star_call_defaults(xs: List[Tensor]) -> Tensor:
    return helper(*xs)  # ERROR: the defaults of helper\(\) \(scale\) leave the list's length open


def bad_star_call_two_lists(xs: List[Tensor], ys: List[Tensor]) -> Tensor:
    return ops.sigmoid(xs[0]) + helper2(*xs, *ys)  # ERROR: \*ys in a call of helper2\(\) is not supported: two lists share


def bad_star_call_tensor(x: Tensor) -> Tensor:
    return helper2(*x)  # ERROR: cannot spread a value of type Tensor into a call: \*x must be a tuple or a list


def bad_double_star_call(x: Tensor, d: Dict[str, float]) -> Tensor:
    return np.sum(x, **d)  # ERROR: \*\* of a dict whose keys are known only when the code runs


# -- names ------------------------------------------------------------------------------------
def bad_undefined(x: Tensor) -> Tensor:
    return x + foo  # ERROR: undefined name 'foo'


def bad_maybe_undefined(x: Tensor, flag: bool) -> Tensor:
    if flag:
        y = x + 1.0
    return y  # ERROR: 'y' is not defined in the false branch


def bad_loop_only_variable(x: Tensor, n: int) -> Tensor:
    for i in range(n):
        if i > 0:  # (bound in every step, y would hold the last step's value after the loop)
            y = x * 2.0
    return y  # ERROR: 'y' is only assigned inside the loop


def bad_tensor_attribute(x: Tensor) -> Tensor:
    return x.bar  # ERROR: 'Tensor' has no attribute 'bar'


def bad_tensor_method(x: Tensor) -> Tensor:
    return x.frobnicate(1)  # ERROR: 'Tensor' has no attribute 'frobnicate'


def bad_module_value(x: Tensor) -> Tensor:
    m = np
    return x + m  # ERROR: is module 'numpy', which cannot be used as a value


def bad_recursion(x: Tensor, n: int) -> Tensor:
    if n == 0:
        return x
    return bad_recursion(x, n - 1)  # ERROR: recursive calls are not supported


# -- types ------------------------------------------------------------------------------------
def bad_tuple_plus_tensor(x: Tensor) -> Tensor:
    t = (x, x)
    return t + x  # ERROR: unsupported operand types for \+: '\(Tensor, Tensor\)' and 'Tensor'


def bad_return_type(x: Tensor) -> Tensor:
    return x.shape[0]  # ERROR: the return value has type int, but 'bad_return_type' is annotated to return Tensor


def bad_return_tuple(x: Tensor) -> Tuple[Tensor, Tensor]:
    return x  # ERROR: the return value has type Tensor, .* annotated to return \(Tensor, Tensor\)


def bad_missing_return(x: Tensor, flag: bool) -> Tensor:  # ERROR: not every path returns a value
    if flag:
        return x


def bad_branch_types(x: Tensor, flag: bool) -> Tensor:
    if flag:  # ERROR: variable 'y' has type Tensor in the true branch and type \(Tensor, Tensor\) in the false branch
        y = x
    else:
        y = (x, x)
    return y


def bad_loop_type_change(x: Tensor, n: int) -> Tensor:
    acc = 0
    for i in range(n):  # ERROR: variable 'acc' has type int before the loop and type str after an iteration
        acc = "a"
    return x + acc


def bad_optional_use(x: Tensor, b: Optional[Tensor]) -> Tensor:
    return x + b  # ERROR: unsupported operand types for \+: 'Tensor' and 'Tensor\?'


def bad_annotation(x: Set[int]) -> int:  # ERROR: is not a supported type
    return 1


def bad_list_element(x: Tensor) -> List[int]:
    items: List[int] = []
    items.append(x)  # ERROR: cannot add a Tensor to a list of int
    return items


def bad_mixed_list(x: Tensor) -> Tensor:
    items = [x, 1]  # ERROR: list elements have different types
    return x


def bad_tensor_item_assignment(x: Tensor) -> Tensor:
    x[0] = 1.0  # ERROR: in-place write to the argument 'x'.*copy it first: x = x.copy\(\)
    return x


def bad_iterate_int(x: Tensor, n: int) -> Tensor:
    for i in n:  # ERROR: cannot iterate over a value of type int
        x = x + 1.0
    return x


def bad_range_float(x: Tensor) -> Tensor:
    for i in range(2.5):  # ERROR: range\(\) arguments must be ints, not float
        x = x + 1.0
    return x


def bad_conditional_types(x: Tensor, flag: bool) -> Tensor:
    y = x if flag else "1"  # ERROR: the branches of the conditional expression have types Tensor and str
    return x


def bad_tensor_index(x: Tensor) -> Tensor:
    return x[x, x, x]  # ERROR: an index must be an int, not a Tensor


def bad_two_ellipses(x: Tensor) -> Tensor:
    return x[..., None, ...]  # ERROR: an index can only have a single ellipsis


def bad_tuple_index(t: Tuple[Tensor, Tensor], i: int) -> Tensor:
    return t[i]  # ERROR: a tuple index must be a constant int


def bad_is(x: Tensor, y: Tensor) -> bool:
    return x is y  # ERROR: 'is' / 'is not' are only supported with None


def bad_unpack_count(x: Tensor) -> Tensor:
    a, b = (x, x, x)  # ERROR: cannot unpack 3 values into 2 targets
    return a


def bad_shapes_do_not_broadcast() -> Tensor:
    return np.zeros((2, 3)) + np.zeros((4, 5))  # ERROR: do not broadcast


# -- calls ------------------------------------------------------------------------------------
def bad_string_to_op(x: Tensor) -> Tensor:
    return np.tanh("x")  # ERROR: np.tanh\(\) argument 'a' must be a Tensor or a number, not str


def bad_unknown_numpy(x: Tensor) -> Tensor:
    return np.fft.fft(x)  # ERROR: unknown function np.fft.fft


def bad_missing_argument(x: Tensor) -> Tensor:
    a, b = ops.chunk(x)  # ERROR: ops.chunk\(\) missing required argument 'chunks'
    return a


def bad_unexpected_keyword(x: Tensor) -> Tensor:
    return x.sum(axes=1)  # ERROR: .sum\(\) got an unexpected keyword argument 'axes'


def bad_too_many_arguments(x: Tensor) -> Tensor:
    return np.tanh(x, x, x)  # ERROR: np.tanh\(\) takes at most 1 positional arguments, got 3


def bad_helper_argument_type(x: Tensor) -> Tensor:
    return helper(x, "big")  # ERROR: helper\(\) argument 'scale' must be float, not str


def bad_helper_keyword(x: Tensor) -> Tensor:
    return helper(x, size=2.0)  # ERROR: helper\(\) got an unexpected keyword argument 'size'


def bad_helper_missing(x: Tensor) -> Tensor:
    return helper()  # ERROR: helper\(\) missing required argument 'x'


def bad_range_outside_for(n: int) -> int:
    r = range(n)  # ERROR: range\(\) is only supported as the iterable of a for loop
    return n


def bad_call_a_value(x: Tensor) -> Tensor:
    return x(1)  # ERROR: a value of type Tensor is not callable


def bad_dtype(x: Tensor) -> Tensor:
    return x.astype(helper)  # ERROR: 'helper' is not a dtype
