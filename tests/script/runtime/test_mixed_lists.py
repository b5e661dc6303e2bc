"""Lists and dicts of arrays of different shapes (an optimizer's ``params``, its state lists)
are given to the compiled code as their arrays (``script.runtime.nested_args``): the loop over
them is unrolled, each item keeps its own shape, and its updates fuse (``fuser.updates``) where
a list read at the loop counter typed every item as an array of unknown shape."""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

from script import Tensor, script

SHAPES = [(7, 3), (3, 16), (16,), (4, 7), (2, 2, 5)]


def arrays(seed: int, dtype: str = "float64", shapes=SHAPES) -> list:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


class Adam:
    """Deep Learning from Scratch 2's Adam (``common/optimizer.py``, MIT License), as written."""

    def __init__(self, lr=0.001, beta1=0.9, beta2=0.999):
        self.lr = lr
        self.beta1 = beta1
        self.beta2 = beta2
        self.iter = 0
        self.m = None
        self.v = None

    def update(self, params, grads):
        if self.m is None:
            self.m, self.v = [], []
            for param in params:
                self.m.append(np.zeros_like(param))
                self.v.append(np.zeros_like(param))

        self.iter += 1
        lr_t = self.lr * np.sqrt(1.0 - self.beta2**self.iter) / (1.0 - self.beta1**self.iter)

        for i in range(len(params)):
            self.m[i] += (1 - self.beta1) * (grads[i] - self.m[i])
            self.v[i] += (1 - self.beta2) * (grads[i]**2 - self.v[i])

            params[i] -= lr_t * self.m[i] / (np.sqrt(self.v[i]) + 1e-7)


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
