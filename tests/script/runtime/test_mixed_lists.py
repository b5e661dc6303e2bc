"""Lists and dicts of arrays of different shapes (an optimizer's ``params``, its state lists)
are given to the compiled code as their arrays (``script.runtime.nested_args``): the loop over
them is unrolled, each item keeps its own shape, and its updates fuse (``fuser.updates``) where
a list read at the loop counter typed every item as an array of unknown shape."""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

from benchmarks.realworld_programs.dlfs2_optimizers import Adam, Momentum
from script import Tensor, script

SHAPES = [(7, 3), (3, 16), (16,), (4, 7), (2, 2, 5)]


def arrays(seed: int, dtype: str = "float64", shapes=SHAPES) -> list:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def sgd(params: List[Tensor], grads: List[Tensor], lr: float):
    for i in range(len(params)):
        params[i] -= lr * grads[i]


def scaled(xs: List[Tensor], w: float) -> Tensor:
    total = 0.0
    for i in range(len(xs)):
        total = total + np.sum(np.tanh(xs[i] * w))
    return total


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adam_over_mixed_shapes_updates_every_array_in_place_as_numpy(dtype):
    plain, compiled = Adam(), Adam()
    update = script(Adam.update)
    p_plain, p_compiled = arrays(0, dtype), arrays(0, dtype)
    held = [id(p) for p in p_compiled]
    for step in range(4):
        grads = arrays(10 + step, dtype)
        Adam.update(plain, p_plain, grads)
        update(compiled, p_compiled, grads)
        state = [id(a) for a in compiled.m + compiled.v]
        for a, b in zip(p_plain + plain.m + plain.v, p_compiled + compiled.m + compiled.v):
            assert a.dtype == b.dtype
            np.testing.assert_allclose(b, a, rtol=2e-6 if dtype == "float32" else 1e-13,
                                       atol=1e-7)
        assert [id(p) for p in p_compiled] == held  # updated in place, as numpy does
        if step:
            assert [id(a) for a in compiled.m + compiled.v] == state


def test_the_loop_over_the_items_is_unrolled_and_each_update_is_one_kernel():
    optimizer = Adam()
    params, grads = arrays(0), arrays(1)
    Adam.update(optimizer, [p.copy() for p in params], grads)  # its state, made
    graph = script(Adam.update).graph_for(optimizer, params, grads)
    kinds = [n.kind for n in graph.walk()]
    assert "prim::Loop" not in kinds and "prim::ListIndex" not in kinds
    assert kinds.count("prim::FusionGroup") == 3 * len(SHAPES)  # m, v and the parameter's
    for node in graph.walk():
        if node.kind == "tensor::write_into":  # writing what its kernel computed
            assert node.inputs[1].node.kind == "prim::FusionGroup"
            assert node.inputs[2].constant == ""


def test_sgd_over_a_list_of_one_array_twice_updates_it_twice():
    a, b = arrays(2, shapes=[(3, 4), (5,)])
    grads = arrays(3, shapes=[(3, 4), (5,), (3, 4)])
    params_plain = [a.copy(), b.copy()]
    params_plain.append(params_plain[0])
    params = [a, b, a]
    sgd(params_plain, grads, 0.5)
    script(sgd)(params, grads, 0.5)
    for x, y in zip(params_plain, params):
        np.testing.assert_array_equal(y, x)


def test_items_of_shapes_that_do_not_fit_fail_as_numpy_does():
    # numpy updates the items before the one that does not fit, then raises; an update the
    # call never makes is no error
    a, b = arrays(4, shapes=[(3, 4), (5,)])
    plain, compiled = [a.copy(), b.copy()], [a.copy(), b.copy()]
    with pytest.raises(ValueError):
        sgd(plain, [a, a], 0.1)
    with pytest.raises(ValueError):
        script(sgd)(compiled, [a, a], 0.1)
    for x, y in zip(plain, compiled):
        np.testing.assert_array_equal(y, x)

    def first(params: List[Tensor], grads: List[Tensor], n: int):
        for i in range(len(params)):
            if i < n:
                params[i] -= 0.5 * grads[i]
    plain, compiled = [a.copy(), b.copy()], [a.copy(), b.copy()]
    first(plain, [a, a], 1)
    script(first)(compiled, [a, a], 1)
    for x, y in zip(plain, compiled):
        np.testing.assert_array_equal(y, x)


def test_lists_longer_than_an_unrolled_loop_keep_numpys_values():
    f = script(scaled)
    rng = np.random.default_rng(5)
    for n in (2, 3, 17, 40, 5, 6, 7):
        xs = [rng.standard_normal((k % 4 + 1, 3)) for k in range(n)]
        np.testing.assert_allclose(f(xs, 0.5), scaled(xs, 0.5), rtol=1e-12)


def test_a_list_the_function_changes_is_passed_whole():
    def grow(xs: List[Tensor]) -> Tensor:
        xs.append(xs[0] * 2.0)
        return xs[1] + 1.0
    plain, compiled = arrays(6, shapes=[(2, 3), (3,)]), arrays(6, shapes=[(2, 3), (3,)])
    np.testing.assert_array_equal(script(grow)(compiled), grow(plain))
    assert len(compiled) == len(plain) == 3
    np.testing.assert_array_equal(compiled[2], plain[2])


def test_dicts_of_arrays_of_different_shapes_are_given_as_their_arrays_too():
    # Deep Learning from Scratch's Adam over dicts: `for key in params.keys()` unrolled over the
    # call's keys, each update one kernel
    from tests.script.frontend.test_write_order import Adam as DictAdam
    rng = np.random.default_rng(7)
    shapes = {"W1": (6, 5), "b1": (5,), "W2": (5, 3), "b2": (3,)}
    params = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    plain, compiled = DictAdam(), DictAdam()
    plain_params = {k: v.copy() for k, v in params.items()}
    update = script(DictAdam.update)
    for _ in range(3):
        grads = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
        DictAdam.update(plain, plain_params, grads)
        update(compiled, params, grads)
        for key in shapes:
            np.testing.assert_allclose(params[key], plain_params[key], rtol=2e-6, atol=1e-7)
            np.testing.assert_allclose(compiled.v[key], plain.v[key], rtol=2e-6, atol=1e-9)
    kinds = [n.kind for n in update.graph_for(compiled, params, grads).walk()]
    assert "prim::Loop" not in kinds and kinds.count("prim::FusionGroup") == 3 * len(shapes)


def test_a_state_dict_whose_items_are_replaced_reads_back_what_was_stored():
    from tests.script.frontend.test_write_order import Momentum as DictMomentum
    rng = np.random.default_rng(8)
    shapes = {"W1": (6, 5), "b1": (5,), "W2": (5, 3)}
    params = {k: rng.standard_normal(s) for k, s in shapes.items()}
    plain, compiled = DictMomentum(), DictMomentum()
    plain_params = {k: v.copy() for k, v in params.items()}
    update = script(DictMomentum.update)
    for _ in range(3):
        grads = {k: rng.standard_normal(s) for k, s in shapes.items()}
        DictMomentum.update(plain, plain_params, grads)
        update(compiled, params, grads)
        for key in shapes:
            np.testing.assert_allclose(params[key], plain_params[key], rtol=1e-14)
            np.testing.assert_allclose(compiled.v[key], plain.v[key], rtol=1e-14)
    kinds = [n.kind for n in update.graph_for(compiled, params, grads).walk()]
    assert "prim::Loop" not in kinds and kinds.count("prim::FusionGroup") == len(shapes)


def test_a_state_list_whose_items_are_replaced_reads_back_what_was_stored():
    plain, compiled = Momentum(), Momentum()
    update = script(Momentum.update)
    p_plain, p_compiled = arrays(0, "float32"), arrays(0, "float32")
    for step in range(3):
        grads = arrays(20 + step, "float32")
        Momentum.update(plain, p_plain, grads)
        update(compiled, p_compiled, grads)
        for a, b in zip(p_plain + plain.v, p_compiled + compiled.v):
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    kinds = [n.kind for n in update.graph_for(compiled, p_compiled, grads).walk()]
    assert "prim::Loop" not in kinds and kinds.count("prim::FusionGroup") == len(SHAPES)


def stores_and_reads(params: List[Tensor], held: List[Tensor]):
    for i in range(len(params)):
        held[i] = params[i] * 2.0
    held[-1] = held[0] + 1.0  # (the last item: read back through its other index)
    return held[len(params) - 1], held[1] - params[1]


def stores_through_another_list(params: List[Tensor], held: List[Tensor],
                                holder: List[List[Tensor]]):
    held[0] = params[0] * 2.0
    holder[0][0] = params[0] * 3.0  # (holder[0] may be held itself)
    return held[0] + 1.0


def test_reads_after_stores_are_the_stored_arrays_and_other_reads_the_call_s_items():
    params = arrays(1, shapes=[(2, 3), (3,), (2, 3)])
    for fn, extra in [(stores_and_reads, ()), (stores_through_another_list, True)]:
        plain_held, held = arrays(2, shapes=[(2, 3), (3,), (2, 3)]), \
            arrays(2, shapes=[(2, 3), (3,), (2, 3)])
        args_plain = (params, plain_held) + (([plain_held],) if extra else ())
        args = (params, held) + (([held],) if extra else ())
        want, got = fn(*args_plain), script(fn)(*args)
        for a, b in zip(want if isinstance(want, tuple) else (want,),
                        got if isinstance(got, tuple) else (got,)):
            np.testing.assert_array_equal(b, a)
        for a, b in zip(plain_held, held):
            np.testing.assert_array_equal(b, a)
        if fn is stores_and_reads:
            assert got[0] is held[-1]  # the very array stored


def test_a_first_call_reads_back_the_state_it_made_and_fuses_its_updates():
    params, grads = arrays(0, "float32"), arrays(1, "float32")
    graph = script(Adam.update).graph_for(Adam(), params, grads)  # self.m is None: made here
    kinds = [n.kind for n in graph.walk()]
    assert "prim::ListIndex" not in kinds and "prim::If" not in kinds
    assert kinds.count("prim::ListAppend") == 2 * len(SHAPES)
    assert kinds.count("prim::FusionGroup") >= 3 * len(SHAPES)
