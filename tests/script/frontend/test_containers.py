"""Lists, dicts, Optionals, NamedTuples and script classes in scripted code: each program's
compiled result equals running it as Python, and values cross the boundary both ways."""

from collections import namedtuple
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def check(fn, *args):
    """Compiled equals eager; returns the compiled result."""
    got = script(fn)(*args)
    want = fn(*args)
    assert same(got, want), f"{got!r} != {want!r}"
    return got


def tensors(n=4):
    return [np.full(2, float(i)) for i in range(1, n + 1)]


# -- lists ----------------------------------------------------------------------------------------
def reverse(xs: List[Tensor]) -> List[Tensor]:
    return xs[::-1]


def slices(xs: List[int]) -> List[List[int]]:
    return [xs[::-1], xs[::-2], xs[1:-1], xs[-2:], xs[:-3:-1], xs[3:0:-1]]


def list_methods(xs: List[int]) -> List[int]:
    xs.append(10)
    xs.insert(0, -1)
    last = xs.pop()
    first = xs.pop(0)
    xs.extend([last, first])
    xs += [len(xs)]
    if 3 in xs and 99 not in xs:
        xs.append(xs[-1] + xs[-2])
    return xs


def iteration(xs: List[Tensor], ys: List[Tensor]) -> Tensor:
    acc = xs[0] * 0.0
    for i, x in enumerate(xs):
        acc = acc + x * float(i)
    for a, b in zip(xs, ys):
        acc = acc + a * b
    for k, x in enumerate(reversed(xs), 1):
        acc = acc - x * float(k)
    for x in reversed(ys):
        acc = acc * 0.5 + x
    return acc


def comprehension(xs: List[Tensor], n: int) -> List[Tensor]:
    x = xs[0]
    doubled = [x * 2.0 for x in xs if float(x.sum()) > 2.0]
    counted = [doubled[0] * float(i) for i in range(n)]
    return doubled + counted + [x]


def test_reversed_slice_of_a_tensor_list_is_reversed():
    xs = tensors()
    got = check(reverse, xs)
    assert [float(x[0]) for x in got] == [4.0, 3.0, 2.0, 1.0]
    assert [float(x[0]) for x in xs] == [1.0, 2.0, 3.0, 4.0]  # a new list


def test_list_slices_methods_iteration_and_comprehensions():
    check(slices, [1, 2, 3, 4, 5])
    check(slices, [])
    check(list_methods, [1, 2, 3])
    check(list_methods, [5])
    check(iteration, tensors(), tensors(3))
    got = check(comprehension, tensors(), 3)
    assert float(got[-1][0]) == 1.0  # the comprehension's `x` did not leak


# -- dicts -----------------------------------------------------------------------------------------
def dicts(xs: List[Tensor], names: List[str]) -> Dict[str, Tensor]:
    d: Dict[str, Tensor] = {}
    for name, x in zip(names, xs):
        d[name] = x
    counts = {"a": 1, "b": 2}
    counts["c"] = 3
    total = 0
    for k in counts:
        total += counts[k]
    for k, v in counts.items():
        total = total * 10 + v + len(k)
    for v in counts.values():
        total += v
    if "a" in counts and "z" not in counts:
        total += len(counts)
    d["total"] = d.get("missing", xs[0]) * float(total)
    d["keys"] = xs[0] * float(len(counts.keys()))
    return d


def int_keys(d: Dict[int, Tensor]) -> Tuple[Optional[Tensor], int]:
    found = d.get(7)
    return found, len(d)


def test_dicts_keep_insertion_order_and_cross_the_boundary():
    got = check(dicts, tensors(3), ["z", "y", "x"])
    assert list(got) == ["z", "y", "x", "total", "keys"]
    check(int_keys, {1: np.ones(2), 7: np.zeros(2)})
    check(int_keys, {1: np.ones(2)})


# -- Optional refinement ------------------------------------------------------------------------
class Gate:
    def __init__(self, bias: Optional[Tensor]):
        self.bias = bias

    def apply(self, x: Tensor) -> Tensor:
        bias = self.bias
        if bias is not None:
            return x + bias
        return x


script(Gate)


def optional_field(x: Tensor, use: bool) -> Tensor:
    gate = Gate(x * 2.0 if use else None)
    return gate.apply(x)


def test_optional_attribute_copied_to_a_local_is_refined():
    check(optional_field, np.ones(2), True)
    check(optional_field, np.ones(2), False)


# -- NamedTuples -----------------------------------------------------------------------------------
class Point(NamedTuple):
    x: Tensor
    n: int


Pair = namedtuple("Pair", ["a", "b"])


def named_tuples(p: Point, q: Pair) -> Tuple[Point, Pair, Tensor, int]:
    x, n = p
    moved = Point(x * float(n), n + 1)
    swapped = Pair(q.b, q[0])
    return moved, swapped, p.x + p[0] + q.a, len(p)


def test_named_tuples_construct_access_unpack_and_cross_the_boundary():
    got = check(named_tuples, Point(np.ones(2), 3), Pair(np.zeros(2), np.full(2, 5.0)))
    assert type(got[0]) is Point and type(got[1]) is Pair


def test_named_tuple_field_types_are_checked():
    def bad(x: Tensor) -> Point:
        return Point(x, x)

    with pytest.raises(ScriptError, match="field 'n' of Point is int"):
        script(bad)(np.ones(2))


# -- script classes --------------------------------------------------------------------------------
@script
class Accumulator:
    def __init__(self, total: Tensor):
        self.total = total
        self.count = 0

    def add(self, x: Tensor) -> None:
        self.total = self.total + x
        self.count += 1

    def mean(self) -> Tensor:
        return self.total / float(self.count)


def accumulate(xs: List[Tensor]) -> Accumulator:
    acc = Accumulator(xs[0] * 0.0)
    for x in xs:
        acc.add(x)
    return acc


def mean_of(acc: Accumulator) -> Tensor:
    return acc.mean()


def test_script_class_instances_are_made_inside_and_used_outside():
    acc = script(accumulate)(tensors())
    assert type(acc) is Accumulator and acc.count == 4
    np.testing.assert_array_equal(acc.total, np.full(2, 10.0))
    np.testing.assert_array_equal(script(mean_of)(acc), np.full(2, 2.5))
    assert accumulate(tensors()).count == 4  # the class still works as Python


def test_script_class_fields_are_fixed_by_init():
    def adds_field(x: Tensor) -> Tensor:
        acc = Accumulator(x)
        acc.extra = x
        return x

    def wrong_type(x: Tensor) -> Tensor:
        acc = Accumulator(x)
        acc.count = x
        return x

    with pytest.raises(ScriptError, match="no attribute 'extra'"):
        script(adds_field)(np.ones(2))
    with pytest.raises(ScriptError, match="field 'count' of 'Accumulator' has type int"):
        script(wrong_type)(np.ones(2))


def test_lists_of_tensors_cross_the_boundary_both_ways():
    def scale_all(xs: List[Tensor], k: float) -> List[Tensor]:
        return [x * k for x in xs]

    got = check(scale_all, tensors(), 3.0)
    assert isinstance(got, list) and len(got) == 4


def test_dict_key_type_is_checked():
    def bad(d: Dict[str, Tensor]) -> Tensor:
        return d[1]

    with pytest.raises(ScriptError, match="key"):
        script(bad)({"a": np.ones(2)})
