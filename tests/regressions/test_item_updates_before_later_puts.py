"""``l[i] += v`` in a loop, checked against what the rest of the loop does: a put or a name bound
later in the step (``hs[-1] += 1`` then ``hs.append(a)``) makes the next step's update reach an
array held at another place or by another name too, and a container made in one step and kept in
a dict, a list or an object reaches later steps as a loop's own name would. numpy's update
changes that array everywhere it is held; the compiled code stored a new array at the updated
place alone, and gave other values (the first value in each comment is numpy's). The check saw
only the code compiled before the update; it now runs again on the whole function, and a
container kept elsewhere outlives the loop's steps: these are refused."""

from typing import Dict, List

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def appended_after_the_update(x: Tensor):  # [[1, 1], [2, 3], [2, 3]], not [.., [1, 2]]
    a = x * 1.0
    hs = [x * 0.0]
    for t in range(2):
        hs[-1] += 1.0
        hs.append(a)
    return hs


def stored_at_the_next_place(x: Tensor):  # [[2, 2], [2, 2], [2, 2]], not [[1, 1], ..]
    hs = [x * 0.0 for t in range(3)]
    for t in range(2):
        hs[t] += 1.0
        hs[t + 1] = hs[t]
    return hs


def state_appended_after_the_update(x: Tensor):  # [.., [3, 5], [6, 10]], not [.., [4, 8]]
    hs = [x * 0.0]
    h = x * 1.0
    for t in range(2):
        hs[-1] += 1.0
        h = h * 2.0
        hs.append(h)
    return hs


def appended_in_a_while_loop(x: Tensor):
    a = x * 1.0
    hs = [x * 0.0]
    t = 0
    while t < 2:
        hs[-1] += 1.0
        hs.append(a)
        t += 1
    return hs


def stored_at_a_key_after_the_update(x: Tensor):
    a = x * 1.0
    d = {"a": x * 0.0, "b": x * 2.0}
    for t in range(2):
        d["b"] += 1.0
        d["a"] = a
        d["b"] = a
    return d["a"], d["b"]


def made_in_a_step_kept_in_a_dict(x: Tensor):  # [[5, 10], [2, 3], [2, 3]]
    a = x * 1.0
    d = {}
    for t in range(2):
        if t == 0:
            d["l"] = [x * 5.0]
        d["l"].append(a)
    l = d["l"]
    l[1] += 1.0
    return l


def setdefault_in_each_step(x: Tensor):  # [[2, 3], [2, 3]]
    a = x * 1.0
    d: Dict[str, List[Tensor]] = {}
    for t in range(2):
        d.setdefault("h", []).append(a)
    l = d["h"]
    l[0] += 1.0
    return l


def made_in_a_step_kept_in_a_list(x: Tensor):
    a = x * 1.0
    holder: List[List[Tensor]] = []
    for t in range(2):
        if t == 0:
            holder.append([x * 5.0])
        holder[0].append(a)
    l = holder[0]
    l[1] += 1.0
    return l


def previous_steps_array_kept_in_a_list(x: Tensor):  # [[3, 5], [4, 7], [4, 8]]
    D = []
    h = x * 1.0
    for t in range(3):
        g = h
        h = x * float(t + 2)
        c = [g]  # (a new list each step, holding the array the last step appended)
        c[0] += 1.0
        D.append(h)
    return D


def previous_steps_array_read_by_a_name(x: Tensor):  # [7, 12]
    h = x * 1.0
    k = x * 0.0
    s = x * 0.0
    for t in range(3):
        g = h
        h = x * float(t + 2)
        c = [g]
        c[0] += 1.0
        s = s + k
        k = h
    return s, s


def nested_loops_previous_step_kept(x: Tensor):
    D = []
    h = x * 1.0
    for i in range(2):
        for j in range(2):
            g = h
            h = x * float(i * 2 + j + 2)
            c = [g]
            c[0] += 1.0
            D.append(h)
    return D


def cached_previous_state_scaled(x: Tensor):  # numpy halves hs[0] and hs[1] too
    hs = []
    caches = []
    h = x * 0.0 + 0.5
    for t in range(3):
        h_prev = h
        h = np.tanh(h_prev + x)
        cache = {"h_prev": h_prev, "t": x * float(t)}
        cache["h_prev"] *= 0.5
        caches.append(cache)
        hs.append(h)
    return hs


REFUSED = [previous_steps_array_kept_in_a_list, previous_steps_array_read_by_a_name,
           nested_loops_previous_step_kept, cached_previous_state_scaled,
           appended_after_the_update, stored_at_the_next_place, state_appended_after_the_update,
           appended_in_a_while_loop, stored_at_a_key_after_the_update,
           made_in_a_step_kept_in_a_dict, setdefault_in_each_step,
           made_in_a_step_kept_in_a_list]


@pytest.mark.parametrize("fn", REFUSED, ids=lambda f: f.__name__)
def test_numpy_sees_the_update_at_another_place(fn):
    """Each program's numpy result differs from storing a new array at the updated place."""
    import ast
    import inspect
    import textwrap
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))

    class Rewrite(ast.NodeTransformer):
        def visit_AugAssign(self, node):
            if not isinstance(node.target, ast.Subscript):
                return node
            load = ast.parse(ast.unparse(node.target), mode="eval").body
            return ast.copy_location(ast.Assign([node.target], ast.BinOp(load, node.op,
                                                                         node.value)), node)

    namespace: dict = {"np": np, "Tensor": Tensor, "Dict": Dict, "List": List}
    exec(compile(ast.fix_missing_locations(Rewrite().visit(tree)), "<rewritten>", "exec"),
         namespace)
    x = np.array([1.0, 2.0])
    numpy, stored_anew = fn(x.copy()), namespace[fn.__name__](x.copy())
    assert any(not np.array_equal(a, b) for a, b in zip(numpy, stored_anew))


def the_callers_array_in_the_next_step(x: Tensor):  # numpy changes x too
    h = x * 2.0
    for t in range(2):
        g = h
        h = x
        c = [g]
        c[0] += 1.0
    return h


def a_name_updated_in_place(x: Tensor):  # D[0] and D[1] change with the next step's g
    D = []
    h = x * 1.0
    for t in range(3):
        g = h
        h = x * float(t + 2)
        g += 1.0
        D.append(h)
    return D


@pytest.mark.parametrize("fn", [the_callers_array_in_the_next_step, a_name_updated_in_place],
                         ids=lambda f: f.__name__)
def test_an_array_a_step_gives_the_next_is_followed(fn):
    with pytest.raises(ScriptError, match=r"would also change|held elsewhere"):
        script(fn)(np.array([1.0, 2.0]))


def test_a_name_updated_in_place_is_numpys_scalar_where_0d():
    """Where the name is 0-d, numpy's += makes a new scalar for it alone: that compiles, only
    the specialization where it has axes is refused."""
    x = np.array(1.0)
    want, got = a_name_updated_in_place(x.copy()), script(a_name_updated_in_place)(x.copy())
    assert [type(g) for g in got] == [type(w) for w in want]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fn", REFUSED, ids=lambda f: f.__name__)
def test_the_update_is_refused(fn):
    with pytest.raises(ScriptError, match=r"may also change other places of|would also change"):
        script(fn)(np.array([1.0, 2.0]))


def update_then_append_new_arrays(x: Tensor):
    hs = [x * 0.0]
    for t in range(3):
        hs[-1] += 1.0
        hs.append(np.tanh(x * float(t)))
    return hs


def gradients_accumulated_in_a_loop(x: Tensor):
    grads = {"W": np.zeros_like(x), "b": np.zeros_like(x)}
    dh = x * 0.5
    for t in reversed(range(3)):
        grads["W"] += dh * x
        grads["b"] += dh
        dh = np.tanh(dh) * 0.9
    return grads["W"], grads["b"]


def caches_made_in_each_step(x: Tensor):
    caches = []
    for t in range(3):
        c = {"h": np.tanh(x * float(t)), "dh": np.zeros_like(x)}
        c["dh"] += x
        caches.append(c)
    return [c["dh"] for c in caches], [c["h"] for c in caches]


def gradients_of_each_epoch_kept(x: Tensor):
    total = []
    for epoch in range(2):
        grads = {"W": np.zeros_like(x)}
        for t in range(3):
            grads["W"] += x * float(t + epoch)
        total.append(grads)
    return total[0]["W"], total[1]["W"]


@pytest.mark.parametrize("fn", [update_then_append_new_arrays, gradients_accumulated_in_a_loop,
                                caches_made_in_each_step, gradients_of_each_epoch_kept],
                         ids=lambda f: f.__name__)
def test_updates_of_places_of_their_own_compile(fn):
    x = np.linspace(-1.0, 1.0, 4)
    want, got = fn(x.copy()), script(fn)(x.copy())
    assert len(want) == len(got)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-12)
