"""``sorted(items, key=..., reverse=...)``, ``list.sort(key=..., reverse=...)`` and
``list.reverse()`` in scripted code: what Python gives (ties keep their order, also reversed),
gradients through a reversed list of arrays, and ScriptErrors for what stays unsupported."""

from typing import List, Tuple

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp


def reverse_numbers(n: int) -> List[int]:
    items = [1, 2, 3]
    items.append(n)
    items.reverse()
    return items


def reverse_arrays(x: Tensor) -> Tensor:
    hs: List[Tensor] = []
    for i in range(3):
        hs.append(np.tanh(x * float(i + 1)))
    hs.reverse()
    return hs[0] * 2.0 - hs[2] + hs[1] * hs[0]


def sort_numbers(x: Tensor) -> Tuple[List[float], List[float], List[int]]:
    values = [float(v) for v in x]
    return sorted(values), sorted(values, reverse=True), sorted([3, 1, 2], key=lambda v: -v)


def sort_beams(x: Tensor) -> List[Tuple[int, float]]:
    """A beam search's pruning: candidates by score, best first, ties in their first order."""
    beams: List[Tuple[int, float]] = []
    for i in range(4):
        beams.append((i, float(x[i])))
    return sorted(beams, key=lambda b: b[1], reverse=True)[:3]


def sort_tuples(x: Tensor) -> List[Tuple[float, int]]:
    pairs = [(float(x[i]), i) for i in range(4)]
    return sorted(pairs)


def sort_in_place(x: Tensor, scores: List[float]):
    """NeuralTalk's beam search: ``beam_candidates.sort(reverse=True)``; the caller's list and
    every name of it see the order."""
    same = scores
    scores.sort(reverse=True)
    candidates = [(float(x[i]), i) for i in range(4)]
    candidates.sort(key=lambda c: c[0])
    counts = [3, 1, 2]
    counts.sort()
    return same, candidates, counts


PROGRAMS = {
    "reverse_numbers": (reverse_numbers, (7,)),
    "reverse_arrays": (reverse_arrays, (np.array([0.1, -0.4, 0.7]),)),
    "sort_numbers": (sort_numbers, (np.array([0.3, -1.0, 0.3, 2.0]),)),
    "sort_beams": (sort_beams, (np.array([0.3, 0.5, 0.3, 0.5]),)),
    "sort_tuples": (sort_tuples, (np.array([0.5, 0.5, -1.0, 2.0]),)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_equals_python(name):
    fn, args = PROGRAMS[name]
    got, want = script(fn)(*args), fn(*args)
    if isinstance(want, np.ndarray):
        np.testing.assert_allclose(got, want)
    else:
        assert got == want and type(got) is type(want)


def test_sort_in_place_is_pythons():
    x = np.array([0.5, 0.5, -1.0, 2.0])
    mine, theirs = [1.0, 3.0, 2.0], [1.0, 3.0, 2.0]
    assert script(sort_in_place)(x, mine) == sort_in_place(x, theirs)
    assert mine == theirs == [3.0, 2.0, 1.0]


def test_gradient_through_a_reversed_list():
    check_vjp(script(reverse_arrays), (np.array([0.1, -0.4, 0.7]),))


REFUSED = [
    ("def f(x: Tensor) -> List[Tensor]:\n    return sorted([x, x])\n",
     "sorted\\(\\) of a list of Tensor is not supported"),
    ("def f(x: Tensor) -> List[float]:\n    return sorted([1.0], key=abs)\n",
     "must be a lambda of one argument"),
    ("def f(x: Tensor) -> List[Tensor]:\n    return sorted([x, x], key=lambda v: [v])\n",
     "only numbers, strings and tuples of them are supported as keys"),
]


def by_value(x: Tensor):
    return sorted([x[1], x[0], x[2]], key=lambda v: v)


def by_array(x: Tensor):
    return sorted([x, x], key=lambda v: v)


def test_numpy_scalar_keys_sort_by_value_and_array_keys_raise():
    x = np.array([3.0, -1.0, 2.0])
    got = script(by_value)(x)
    assert got == by_value(x) and all(type(v) is np.float64 for v in got)
    with pytest.raises((TypeError, ValueError)):  # as Python's: an array has no order
        script(by_array)(x)


@pytest.mark.parametrize("source, message", REFUSED)
def test_unsupported_forms_are_script_errors(tmp_path, source, message):
    import importlib.util
    path = tmp_path / "refused_order.py"
    path.write_text("from typing import List\n\nimport numpy as np\nfrom script import Tensor\n\n"
                    + source)
    spec = importlib.util.spec_from_file_location("refused_order", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ScriptError, match=message) as info:
        script(module.f)(np.ones(3))
    assert "return sorted(" in str(info.value)
