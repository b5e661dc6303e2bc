"""Gradients through lists made in the function are right or refused, never silently zero.

The backward keeps a list of each list's item cotangents in step with the list. Before, reads of
items appended after the list was made (every list comprehension is a list built by appends)
were dropped, an ``if`` whose branch only appends was skipped, and a stack read before a later
append was typed (and differentiated) with the list's final length. Each case is checked against
central finite differences of the plain function over the full arrays.
"""

from __future__ import annotations

import inspect
from typing import List, Tuple

import numpy as np
import pytest

from ir.errors import IRError
from script import ScriptError, Tensor, ops, script, vjp
from tests.gradcheck import check_vjp

# -- list comprehensions ------------------------------------------------------------------------


def comprehension_unpacked(x: Tensor) -> Tensor:
    a, i = [x[:, k] for k in range(2)]
    return np.tanh(a) * i


def comprehension_indexed(x: Tensor) -> Tensor:
    items = [x[:, k] * 2.0 for k in range(3)]
    return items[0] + items[2]


def comprehension_over_unbind(x: Tensor) -> Tensor:
    items = [np.sin(r) for r in ops.unbind(x, 0)]
    return items[0] * items[-1]


def comprehension_over_rows(x: Tensor) -> Tensor:
    rows = [r * 2.0 for r in x]
    return rows[0] * rows[-1] + rows[1]


def comprehension_in_a_loop(x: Tensor) -> Tensor:
    y = x
    for _ in range(3):
        parts = [y[k] * 2.0 for k in range(2)]
        y = y * parts[1] + parts[0]
    return y


@pytest.mark.parametrize("fn", [comprehension_unpacked, comprehension_indexed,
                                comprehension_over_unbind, comprehension_over_rows,
                                comprehension_in_a_loop])
def test_values_from_a_list_comprehension(fn):
    x = np.random.default_rng(0).standard_normal((3, 3)) if fn is not comprehension_unpacked \
        else np.random.default_rng(0).standard_normal((3, 2))
    check_vjp(script(fn), (x,))


# -- appends under an if ------------------------------------------------------------------------


def echo_state(W: Tensor, data: Tensor) -> Tensor:
    X: List[Tensor] = []
    x = np.zeros((4, 1))
    for t in range(6):
        x = 0.7 * x + 0.3 * np.tanh(np.dot(W, x) + data[t])
        if t >= 2:
            X.append(x[:, 0])
    return np.stack(X, axis=1)


def test_conditional_append_with_a_leaky_recurrence():
    rng = np.random.default_rng(1)
    W, data = rng.standard_normal((4, 4)), rng.standard_normal((6, 4, 1))
    _, backward = vjp(script(echo_state), W, data)
    dW, _ = backward(np.ones((4, 4)))
    assert abs(dW[1, 2]) > 0.01  # was exactly 0
    check_vjp(script(echo_state), (W, data))


def appends_under_if_in_while(x: Tensor, w: Tensor) -> Tensor:
    outs: List[Tensor] = []
    h = x
    t = 0
    while t < 5:
        h = np.tanh(h @ w)
        if t % 2 == 0:
            outs.append(h * 2.0)
        t += 1
    return ops.stack(outs, 0)


def mean_of_conditional_appends(x: Tensor, w: Tensor, n: int) -> Tensor:
    outs: List[Tensor] = []
    h = x
    for t in range(n):
        h = np.tanh(h @ w)
        if t % 2 == 0:
            outs.append(h)
    steps = ops.stack(outs, 0)
    return steps.mean(axis=0) + steps.var(axis=0) + steps.std(axis=0, ddof=1)


def test_mean_over_a_stack_of_conditional_appends():
    # the stack's length is only known at run time: the mean's gradient divides by it then
    rng = np.random.default_rng(10)
    check_vjp(script(mean_of_conditional_appends),
              (rng.standard_normal((2, 3)), 0.5 * rng.standard_normal((3, 3)), 5))


def test_appends_under_an_if_in_a_while_loop():
    rng = np.random.default_rng(2)
    check_vjp(script(appends_under_if_in_while),
              (rng.standard_normal((2, 3)), 0.5 * rng.standard_normal((3, 3))))


# -- stacks and reads before later changes -----------------------------------------------------


def stack_then_append(x: Tensor) -> Tensor:
    items = [np.ones((3, 4, 4)) * x.sum()]
    t = ops.stack(items).mean(axis=0)
    items.append(np.ones((3, 4, 4)))
    return t


def test_a_stack_before_an_append_is_of_the_list_as_it_was():
    x = np.random.default_rng(3).standard_normal(2)
    _, backward = vjp(script(stack_then_append), x)
    (dx,) = backward(np.ones((3, 4, 4)))
    np.testing.assert_allclose(dx, np.full(2, 48.0))  # was 24: the stack was typed with 2 items
    check_vjp(script(stack_then_append), (x,))


def stacked_twice(x: Tensor) -> Tensor:
    items = [x * 2.0]
    a = ops.stack(items, 0)
    items.append(x * x)
    b = ops.stack(items, 0)
    return a.sum(axis=0) + b.sum(axis=0) * b[1]


def stacked_in_a_loop(x: Tensor) -> Tensor:
    items: List[Tensor] = []
    y = x
    for t in range(3):
        items.append(np.sin(x) * float(t + 1))
        y = y * ops.stack(items, 0).sum(axis=0)
    return y


def length_dependent(x: Tensor) -> Tensor:
    items: List[Tensor] = []
    for k in range(3):
        items.append(x * float(k + 1))
    y = x * 0.0
    for i in range(len(items)):
        y = y + items[i] * items[len(items) - 1 - i]
    return y


@script
def first_times_last(items: List[Tensor]) -> Tensor:
    return items[0] * items[-1]


def passed_to_a_helper(x: Tensor) -> Tensor:
    items = [x * 2.0]
    items.append(np.sin(x))
    return first_times_last(items)


def stored_into(x: Tensor) -> Tensor:
    items = [x * 2.0, x * 3.0]
    a = items[0] * items[1]
    items[0] = np.sin(x)
    return a + items[0] * items[1]


def popped(x: Tensor) -> Tensor:
    items = [x * 2.0, x * 3.0]
    items.append(np.sin(x))
    y = items.pop()
    z = items.pop(0)
    return y * z + items[0]


def popped_then_appended(x: Tensor) -> Tensor:
    items = [x * 2.0, np.sin(x)]
    y = items.pop() * 0.5
    items.append(y * 3.0)
    return y + items[0]


def extended(x: Tensor) -> Tensor:
    items = [x * 2.0]
    m: List[Tensor] = []
    m.append(np.sin(x))
    m.append(x * x)
    items.extend(m)
    return ops.stack(items, 0).sum(axis=0) * items[1]


def last_of_appended(x: Tensor) -> Tensor:
    outs = [x * 0.5]
    for _ in range(3):
        outs.append(np.tanh(outs[-1]) * 2.0)
    return outs[-1] * outs[1]


def extended_by_constants(x: Tensor) -> Tensor:
    items = [x * 2.0]
    consts: List[Tensor] = []
    consts.append(np.ones((2, 3)))
    consts.append(np.ones((2, 3)) * 2.0)
    items.extend(consts)
    items.append(np.sin(x))
    return items[-1] * items[0] + ops.stack(items, 0).sum(axis=0)


def concatenated_twice(x: Tensor) -> Tensor:
    items = [x * 2.0]
    a = ops.cat(items, 0)
    items.append(x * x)
    b = ops.cat(items, 0)
    return b * 1.0 + ops.cat([a, a], 0)


def stack_feeding_its_items(x: Tensor) -> Tensor:
    """The list's items all have x's type, so the stack in the loop is typed and followed."""
    items: List[Tensor] = []
    y = x
    for _ in range(3):
        items.append(y * 2.0)
        y = y + ops.stack(items, 0).sum(axis=0) * 0.5
    return y


@pytest.mark.parametrize("fn", [stacked_twice, stacked_in_a_loop, length_dependent,
                                passed_to_a_helper, stored_into, popped,
                                popped_then_appended, extended,
                                last_of_appended, extended_by_constants, concatenated_twice,
                                stack_feeding_its_items])
def test_reads_of_a_changing_list(fn):
    check_vjp(script(fn), (np.random.default_rng(4).standard_normal((2, 3)),))


# -- items read back from a list appended to in a loop (typed by the items they all share) -------


def last_step_of_a_while(x: Tensor, w: Tensor, n: int) -> Tensor:
    outs = [x]
    t = 0
    while t < n:
        outs.append(np.tanh(outs[-1] @ w))
        t += 1
    return outs[-1] + outs[1]


def read_at_the_counter(x: Tensor, w: Tensor) -> Tensor:
    hs = [x]
    for t in range(4):
        hs.append(np.tanh(hs[t] @ w) + hs[t] * 0.5)
    return ops.stack(hs, 0)


def conditional_append_read_back(x: Tensor, w: Tensor) -> Tensor:
    outs: List[Tensor] = []
    h = x
    for t in range(5):
        h = 0.5 * h + np.tanh(h @ w)
        if t >= 2:
            outs.append(h)
            h = h + outs[-1] * 0.1
    return ops.stack(outs, 1)


def two_lists_read_across(x: Tensor, w: Tensor) -> Tensor:
    a: List[Tensor] = []
    b: List[Tensor] = []
    h = x
    for t in range(3):
        h = np.tanh(h @ w)
        a.append(h)
        b.append(h * 2.0)
        if t > 0:
            b.append(a[-2] * b[-1])
    return ops.stack(a, 0).sum(axis=0) + ops.stack(b, 0).sum(axis=0)


def list_per_step_under_if(x: Tensor, w: Tensor) -> Tensor:
    h = x
    for t in range(4):
        parts: List[Tensor] = [h]
        if t % 2 == 1:
            parts.append(np.tanh(h @ w))
        else:
            parts.append(h * 0.5)
        h = parts[-1] + parts[0] * 0.1
    return h


def extended_each_step(x: Tensor, w: Tensor) -> Tensor:
    outs = [x * 0.5]
    h = x
    t = 0
    while t < 3:
        h = np.tanh(h @ w) + outs[-1] * 0.1
        outs.extend([h * 0.2, np.sin(h)])
        t += 1
    return ops.stack(outs, 0).sum(axis=0) + h


@pytest.mark.parametrize("fn, extra", [
    (last_step_of_a_while, (3,)), (extended_each_step, ()), (read_at_the_counter, ()),
    (conditional_append_read_back, ()), (two_lists_read_across, ()), (list_per_step_under_if, ()),
])
def test_items_read_back_in_a_loop(fn, extra):
    rng = np.random.default_rng(8)
    check_vjp(script(fn), (rng.standard_normal((2, 3)), 0.5 * rng.standard_normal((3, 3)),
                           *extra))


def unpacked_argument(x: Tensor, ws: List[Tensor]) -> Tensor:
    a, b = ws
    return x * a + b


def test_unpacking_a_list_argument():
    rng = np.random.default_rng(5)
    check_vjp(script(unpacked_argument),
              (rng.standard_normal((2, 3)), [rng.standard_normal((2, 3)),
                                             rng.standard_normal(3)]))


def stacked_in_a_while(x: Tensor) -> Tensor:
    items = [x * 0.3]
    acc = x * 0.0
    t = 0
    while t < 3:
        acc = acc + ops.stack(items, 0).sum(axis=0) * 0.1
        items.append(np.tanh(acc + x))
        t += 1
    return acc


def test_a_stack_of_a_list_the_loop_appends_to_is_not_hoisted():
    # the stack read the list as it was before the loop: vjp's own forward was wrong too
    x = np.random.default_rng(9).standard_normal((2, 3))
    out, _ = vjp(script(stacked_in_a_while), x)
    np.testing.assert_allclose(out, stacked_in_a_while(x))
    check_vjp(script(stacked_in_a_while), (x,))


def literal_of_two_shapes(x0: Tensor, x1: Tensor) -> Tensor:
    u9, u10 = [x0.reshape(3, 2, 1) * float(k + 1) for k in range(2)]
    items = [u10 / 2.0]
    t14 = np.concatenate(items, axis=0).sum(axis=0)
    items.append(u10)
    joined = np.concatenate([t14.reshape(1, 2), x1.reshape(1, 1)], axis=1)
    return np.tanh(joined.reshape(3)).sum()


def test_an_item_type_assumed_for_a_list_that_cannot_hold_is_dropped():
    # the literal [t14.reshape(1, 2), x1.reshape(1, 1)] was assumed to hold (1, 1) items while
    # t14's shape was not known yet: propagation then failed ("cannot reshape ... size 2")
    rng = np.random.default_rng(11)
    check_vjp(script(literal_of_two_shapes), (rng.standard_normal((2, 3, 1)),
                                              rng.standard_normal(1)))


# -- lists returned -----------------------------------------------------------------------------


def returned_after_appends(x: Tensor) -> List[Tensor]:
    items: List[Tensor] = []
    h = x
    for _ in range(3):
        h = np.tanh(h) * 2.0
        items.append(h)
    return items


def returned_after_a_stack(x: Tensor) -> List[Tensor]:
    items = [x * 2.0]
    y = ops.stack(items, 0)
    items.append(y[0] * 3.0)
    return items


def returned_in_a_tuple(x: Tensor) -> Tuple[List[Tensor], Tensor]:
    items = [x * 2.0]
    items.append(np.sin(x))
    return items, items[0] * 3.0


def returned_twice(x: Tensor) -> Tuple[List[Tensor], List[Tensor], Tensor]:
    items = [x * 2.0]
    items.append(np.sin(x))
    return items, items, items[0] * 3.0


def returned_in_nested_tuples(x: Tensor) -> Tuple[Tuple[List[Tensor], Tensor], List[Tensor]]:
    items = [x * 2.0]
    items.append(np.sin(x))
    return (items, x * 1.0), items


@pytest.mark.parametrize("fn", [returned_after_appends, returned_after_a_stack,
                                returned_in_a_tuple, returned_twice, returned_in_nested_tuples])
def test_a_returned_list_hands_its_items_cotangents_on(fn):
    check_vjp(script(fn), (np.random.default_rng(7).standard_normal((2, 3)),))


# -- what the backward cannot follow is refused, at the user's line ----------------------------


def sliced(x: Tensor, k: int) -> Tensor:
    items = [x * 2.0, np.sin(x), x * x]
    m = items[k:]
    return ops.stack(m, 0)  # a bound known only when it runs: the stack of items, sliced


def sliced_at_constants(x: Tensor) -> Tensor:
    items = [x * 2.0, np.sin(x), x * x]
    m = items[1:]  # the literal [np.sin(x), x * x] (canonicalize folds the slice)
    return ops.stack(m, 0)


def test_a_slice_of_a_literal_at_constant_bounds_differentiates():
    from tests.gradcheck import check_vjp
    check_vjp(script(sliced_at_constants), (np.random.default_rng(5).standard_normal((2, 3)),))


def test_a_stack_of_a_slice_at_a_run_time_bound_differentiates():
    from tests.gradcheck import check_vjp
    x = np.random.default_rng(5).standard_normal((2, 3))
    f = script(sliced)
    for k in (0, 1, 2, -1):
        check_vjp(lambda x, k=k: f(x, k), (x,))
    with pytest.raises(ValueError, match="need at least one array to stack"):
        f(x, 3)


def added(x: Tensor) -> Tensor:
    items = [x * 2.0]
    items.append(np.cos(x))  # before any read: the literal [x * 2.0, np.cos(x)]
    l2 = items + [np.sin(x)]
    return l2[0] * l2[2]


def chosen_by_if(x: Tensor, c: float) -> Tensor:
    if c > 0.0:
        items = [x * 2.0]
    else:
        items = [np.sin(x)]
    return items[0]  # refused


def argument_appended(x: Tensor, xs: List[Tensor]) -> Tensor:
    xs.append(x * 2.0)
    return xs[0] * xs[-1]  # refused


def inserted(x: Tensor) -> Tensor:
    items = [x * 2.0]
    items.insert(0, np.sin(x))  # refused
    return items[0] * items[1]


def popped_at_run_time(x: Tensor, i: int) -> Tensor:
    items = [x * 2.0, np.sin(x)]
    y = items.pop(i)  # refused
    return y * items[0]


def changed_through_another_list(x: Tensor) -> Tensor:
    items = [x * 2.0]
    nested = [items]
    nested.append([x])  # before any read: the literal [items, [x]]
    nested[0].append(np.sin(x))  # items, changed after nested took it
    return items[-1] * 3.0


def joined_and_read(x: Tensor) -> Tensor:
    items = [x * 2.0]
    l2 = items + [np.sin(x)]
    nested = [l2]
    return l2[0] * nested[0][1]


def test_lists_only_read_are_followed():
    """A list built and only read is its items: ``[a] + [b]`` is ``[a, b]`` and ``[a, b][1]``
    is ``b``, so the gradient flows through them."""
    x = np.random.default_rng(6).standard_normal((2, 3))
    np.testing.assert_allclose(script(joined_and_read)(x), joined_and_read(x))
    check_vjp(joined_and_read, (x,))


def _refused_line(fn) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if "# refused" in line)


@pytest.mark.parametrize("fn", [added, changed_through_another_list])
def test_appends_before_any_read_make_one_list_the_backward_follows(fn):
    # items = [a]; items.append(b) with nothing reading items between: the literal [a, b]
    check_vjp(fn, (np.random.default_rng(6).standard_normal((2, 3)),))


@pytest.mark.parametrize("fn, extra", [
    (chosen_by_if, (1.0,)), (inserted, ()),
    (argument_appended, ([np.ones((2, 3))],)), (popped_at_run_time, (0,)),
])
def test_what_cannot_be_followed_is_refused_at_its_line(fn, extra):
    x = np.random.default_rng(6).standard_normal((2, 3))
    with pytest.raises((IRError, ScriptError)) as info:
        vjp(script(fn), x, *extra)
    message = str(info.value)
    assert "cannot differentiate" in message
    assert f"{__name__.split('.')[-1]}.py:{_refused_line(fn)}:" in message
