"""``l.append(l[0]); l[1] += 1``: the list holds one array at two places, and numpy's ``+=``
changes that array, seen at both. The compiled code stored a new array at place 1 and left
place 0 as it was (``[0, 1, 2]`` for numpy's ``[1, 2, 3]``). The same held for ``l[1] = l[0]``,
``[a, a]`` and one array appended at every step of a loop. Such updates are now refused with
what to write instead; an update of a list or dict whose every place holds its own array (a
literal of new arrays, a comprehension, a loop appending what its step makes) compiles, with
numpy's values."""

from typing import Dict, List

import numpy as np
import pytest

from script import ScriptError, Tensor, script


# -- numpy would change the array at another place too: refused ---------------------------------
def appended_item(x: Tensor):
    l = [x * 1.0]
    l.append(l[0])
    l[1] += 1.0
    return l[0] * 1.0


def appended_last_item(x: Tensor):
    l = [x * 1.0]
    l.append(l[-1])
    l[-1] *= 3.0
    return l[0] + l[1]


def typed_empty_list(x: Tensor):
    l: List[Tensor] = []
    a = x * 1.0
    l.append(a)
    l.append(l[0])
    l[0] += 1.0
    return l[1] * 1.0


def item_stored_at_another_place(x: Tensor):
    l = [x * 1.0, x * 2.0]
    l[1] = l[0]
    l[1] += 1.0
    return l[0] * 1.0


def items_appended_in_a_loop(x: Tensor):
    l = [x * 1.0]
    for i in range(2):
        l.append(l[i])
    l[2] += 1.0
    return l[0] * 1.0


def one_array_twice_in_a_literal(x: Tensor):
    a = x * 2.0
    l = [a * 1.0]
    l.append(a)
    l.append(a)
    l[1] += 1.0
    return l[2] * 1.0


def one_array_every_step(x: Tensor):
    a = x * 2.0
    l: List[Tensor] = []
    for _ in range(3):
        l.append(a)
    l[0] += 1.0
    return l[2] * 1.0


def same_array_through_a_helper(x: Tensor):
    a = x * 2.0
    l = [a, _same(a)]
    l[0] += 1.0
    return l[1] * 1.0


def _same(v: Tensor) -> Tensor:
    return v


def dict_value_twice(x: Tensor):
    d: Dict[str, Tensor] = {}
    d["a"] = x * 1.0
    d["b"] = d["a"]
    d["b"] += 1.0
    return d["a"] * 1.0


def dict_of_one_array(x: Tensor):
    a = x * 2.0
    d = dict([(k, a) for k in ["p", "q"]])
    d["p"] += 1.0
    return d["q"] * 1.0


def _pair(a: Tensor):
    return (a, a * 2.0)


def pairs_from_a_helper(x: Tensor):
    a = x * 1.0
    pairs = [(a, x * 2.0)]
    pairs.append(_pair(a))
    l2: List[Tensor] = []
    for i in range(2):
        p, q = pairs[i]
        l2.append(p)
    l2[0] += 1.0
    return l2[1] * 1.0


def source_shifted_by_the_loop(x: Tensor):
    src = [x * 1.0, x * 2.0]
    l2: List[Tensor] = []
    for i in range(2):
        l2.append(src[i])
        src.insert(0, x * 0.0)
    l2[0] += 1.0
    return l2[1] * 1.0


def state_appended_before_and_after_the_steps_too(x: Tensor):
    h = x * 1.0
    hs = [h]
    for _ in range(3):
        hs.append(h)  # (the first step appends h again)
        h = np.tanh(h) + 0.5
    hs.append(h)
    hs[0] += 1.0
    return hs[1] * 1.0


def new_state_appended_in_the_step_and_the_next(x: Tensor):
    h = x * 1.0
    hs: List[Tensor] = []
    for _ in range(3):
        hs.append(h)
        h = np.tanh(h) + 0.5
        hs.append(h)  # (the next step appends it again)
    hs[0] += 1.0
    return hs[1] * 1.0


REFUSED = [state_appended_before_and_after_the_steps_too,
           new_state_appended_in_the_step_and_the_next, pairs_from_a_helper, source_shifted_by_the_loop, dict_of_one_array, appended_item, appended_last_item, typed_empty_list, item_stored_at_another_place,
           items_appended_in_a_loop, one_array_twice_in_a_literal, one_array_every_step,
           same_array_through_a_helper, dict_value_twice]


@pytest.mark.parametrize("fn", REFUSED, ids=lambda f: f.__name__)
def test_an_update_numpy_sees_at_two_places_is_refused(fn):
    x = np.arange(3.0)
    with pytest.raises(ScriptError, match=r"may also change other places of") as info:
        script(fn)(x)
    assert "test_list_holds_array_twice.py" in str(info.value)
    assert "^" in str(info.value)  # the caret under the user's line


@pytest.mark.parametrize("fn", REFUSED, ids=lambda f: f.__name__)
def test_the_suggested_rewrite_gives_numpys_values(fn, tmp_path):
    """The error says to store a new array instead: ``l[1] = l[1] + 1.0`` is numpy's too."""
    import ast
    import inspect
    import textwrap
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))

    class Rewrite(ast.NodeTransformer):
        def visit_AugAssign(self, node):
            load = ast.parse(ast.unparse(node.target), mode="eval").body
            return ast.copy_location(ast.Assign([node.target], ast.BinOp(load, node.op,
                                                                         node.value)), node)

    tree = ast.fix_missing_locations(Rewrite().visit(tree))
    path = str(tmp_path / f"rewritten_{fn.__name__}.py")
    source = "from typing import Dict, List\nimport numpy as np\nfrom script import Tensor\n" \
        "def _same(v: Tensor) -> Tensor:\n    return v\n" \
        "def _pair(a: Tensor):\n    return (a, a * 2.0)\n" + ast.unparse(tree) + "\n"
    with open(path, "w") as f:
        f.write(source)
    namespace: dict = {}
    exec(compile(source, path, "exec"), namespace)
    rewritten = namespace[fn.__name__]
    x = np.arange(3.0)
    np.testing.assert_array_equal(script(rewritten)(x.copy()), rewritten(x.copy()))


# -- every place holds its own array: compiles, with numpy's values -----------------------------
def literal_of_new_arrays(x: Tensor):
    l = [x * 1.0, x * 2.0]
    l[1] += 1.0
    return l[0], l[1]


def comprehension(x: Tensor):
    l = [x * float(i) for i in range(3)]
    l[0] += 1.0
    l[2] *= 2.0
    return l[0], l[1], l[2]


def appended_what_each_step_makes(x: Tensor):
    hs: List[Tensor] = []
    h = x * 1.0
    for _ in range(3):
        h = np.tanh(h)
        hs.append(h)
    hs[0] += 1.0
    return hs[0], hs[1], hs[2]


def appended_then_rebound(x: Tensor):
    hs: List[Tensor] = []
    h = x * 0.5
    for _ in range(3):
        hs.append(h)
        h = np.tanh(h) + 1.0
    hs[1] += 1.0
    return hs[0], hs[1], hs[2]


def states_before_each_step_and_the_last(x: Tensor, n: int):
    h = x * 1.0
    hs: List[Tensor] = []
    for _ in range(n):
        hs.append(h)
        h = np.tanh(h) + 0.5
    hs.append(h)
    hs[0] += 1.0
    hs[-1] *= 2.0
    return hs


@pytest.mark.parametrize("n", [0, 1, 3])
def test_states_before_each_step_and_the_last_compile(n):
    x = np.linspace(-1.0, 1.0, 3)
    want = states_before_each_step_and_the_last(x.copy(), n)
    got = script(states_before_each_step_and_the_last)(x.copy(), n)
    assert len(got) == len(want) == n + 1
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def gradients_per_parameter(xs: List[Tensor]):
    grads = [np.zeros_like(p) for p in xs]
    for _ in range(2):
        for i in range(len(xs)):
            grads[i] += xs[i] * 2.0
    return grads[0], grads[1]


def dict_of_new_arrays(x: Tensor):
    d: Dict[str, Tensor] = {}
    d["a"] = x * 1.0
    d["b"] = x * 2.0
    d["a"] += 1.0
    return d["a"], d["b"]


def dict_of_pairs(x: Tensor):
    d = dict([(k, np.zeros_like(x) + float(i)) for i, k in enumerate(["p", "q"])])
    d["p"] += x
    return d["p"], d["q"]


def one_hot_items_updated(x: Tensor):
    xs: Dict[int, Tensor] = {}
    for t in range(2):
        xs[t] = np.zeros((3, 1)) + x[0]
        xs[t][t] = 1.0
        xs[t] *= 2.0
    xs[0] += 1.0
    return xs[0], xs[1]


@pytest.mark.parametrize("fn", [one_hot_items_updated, dict_of_pairs, literal_of_new_arrays,
                                comprehension,
                                appended_what_each_step_makes, appended_then_rebound,
                                dict_of_new_arrays], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_places_of_their_own_compile(fn, dtype):
    x = np.linspace(-1.0, 1.0, 6).astype(dtype).reshape(2, 3)
    want, got = fn(x.copy()), script(fn)(x.copy())
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-6)
        assert g.dtype == w.dtype


def test_gradient_accumulators_per_parameter_compile():
    xs = [np.arange(3.0), np.ones((2, 2))]
    want = gradients_per_parameter([x.copy() for x in xs])
    got = script(gradients_per_parameter)([x.copy() for x in xs])
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


# -- more ways, from a review: each gave a wrong value, or (the last) a RecursionError ---------
def updated_in_the_step_that_appends(x: Tensor, n: int):
    h = x * 1.0
    hs: List[Tensor] = []
    for i in range(n):
        hs.append(h)
        h = x * 0.0
        hs[0] += 1.0
        h = hs[0]
    return hs


def one_value_stored_twice_at_a_key(x: Tensor):
    v = x * 2.0
    d: Dict[int, Tensor] = {}
    for t in range(3):
        d[t] = v
        d[t] = v
    d[0] += 1.0
    return d


def same_index_after_an_insert(x: Tensor):
    l = [x * 1.0, x * 3.0]
    k = 0
    a = l[k]
    l.insert(0, x * 5.0)
    l[k] = a
    l[1] += 1.0
    return l


def source_extended_by_the_loop(x: Tensor):
    src = [x * 1.0, x * 2.0]
    l: List[Tensor] = []
    for i in range(3):
        l.append(src[i])
        src.extend([src[0]])
    l[0] += 1.0
    return l


def source_rebound_by_the_loop(x: Tensor):
    src = [x * 1.0, x * 2.0]
    l: List[Tensor] = []
    for i in range(2):
        l.append(src[i])
        src = [src[1], src[0]]
    l[0] += 1.0
    return l


def rebound_to_a_literal_in_a_loop(x: Tensor):
    a = x * 1.0
    hs: List[Tensor] = []
    for i in range(2):
        hs = [a, a]
    hs[1] += 1.0
    return hs


def extended_with_an_item(x: Tensor):
    l = [x * 1.0]
    l.extend([l[0]])
    l[1] += 1.0
    return l


def _push(l: List[Tensor], v: Tensor):
    l.append(v)


def appended_by_a_helper(x: Tensor):
    l = [x * 1.0]
    _push(l, l[0])
    l[1] += 1.0
    return l


def appended_through_another_list(x: Tensor):
    hs = [x * 1.0]
    outer = [hs]
    outer[0].append(hs[0])
    hs[1] += 1.0
    return hs


def carried_through_a_helper_returning_it(x: Tensor):
    h = x * 1.0
    hs = [x * 0.0]
    for i in range(2):
        h = _same(h)
    hs.append(h)
    hs[-1] += 1.0
    return hs


def concatenated_lists(x: Tensor):
    a = x * 1.0
    l = [a] + [a]
    l[1] += 1.0
    return l


def slice_of_a_list(x: Tensor):
    a = x * 1.0
    l = [a, a]
    l2 = l[0:2]
    l2[0] += 1.0
    return l2


MORE = [(concatenated_lists, None), (slice_of_a_list, None), (updated_in_the_step_that_appends, 2), (one_value_stored_twice_at_a_key, None),
        (same_index_after_an_insert, None), (source_extended_by_the_loop, None),
        (source_rebound_by_the_loop, None), (rebound_to_a_literal_in_a_loop, None),
        (extended_with_an_item, None), (appended_by_a_helper, None),
        (appended_through_another_list, None), (carried_through_a_helper_returning_it, None)]


@pytest.mark.parametrize("fn, n", MORE, ids=lambda v: getattr(v, "__name__", str(v)))
def test_more_ways_to_hold_an_array_twice_are_refused(fn, n):
    args = (np.arange(3.0),) if n is None else (np.arange(3.0), n)
    with pytest.raises(ScriptError, match=r"may also change other places of"):
        script(fn)(*args)
