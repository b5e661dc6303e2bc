"""Updates of a caller's array computed by the kernel computing their value (``fuser.updates``,
``script.runtime.slot_writes.update_writes``): ``p -= lr * g`` is one pass over ``p`` and ``g``
writing ``p`` itself, with numpy's values, dtypes and identities."""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

import fuser
from script import Tensor, script


def sgd(params: List[Tensor], grads: List[Tensor], lr: float):
    for i in range(len(params)):
        params[i] -= lr * grads[i]


def momentum_step(params: List[Tensor], grads: List[Tensor], state: List[Tensor]):
    for i in range(len(params)):
        state[i] *= 0.9
        state[i] += 0.1 * grads[i] * grads[i]
        params[i] -= 0.01 * grads[i] / (np.sqrt(state[i]) + 1e-7)


class Weights:
    def __init__(self, W, G):
        self.W, self.G = W, G

    def step(self, lr: float):
        self.W -= lr * self.G * 2.0


def _arrays(seed, dtype="float64", shapes=((3, 4), (5,), (2, 3, 2))):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fused", [True, False])
def test_updates_give_numpys_values_into_the_callers_arrays(dtype, fused):
    plain, compiled = _arrays(0, dtype), _arrays(0, dtype)
    s_plain, s_compiled = [abs(a) for a in _arrays(1, dtype)], [abs(a) for a in _arrays(1, dtype)]
    held = [id(a) for a in compiled + s_compiled]
    step = script(momentum_step)
    saved = fuser.is_enabled()
    fuser.set_enabled(fused)
    try:
        for k in range(3):
            grads = _arrays(2 + k, dtype)
            momentum_step(plain, grads, s_plain)
            step(compiled, grads, s_compiled)
    finally:
        fuser.set_enabled(saved)
    for a, b in zip(plain + s_plain, compiled + s_compiled):
        assert b.dtype == a.dtype
        np.testing.assert_allclose(b, a, rtol=1e-6 if dtype == "float32" else 1e-14)
    assert [id(a) for a in compiled + s_compiled] == held


def test_the_kernel_writes_the_update_into_the_array_itself():
    params, grads = _arrays(0), _arrays(1)
    source = script(sgd).code_for(params, grads, 0.1)
    assert ".into(" in source and "write_into" not in source


def test_a_float32_array_updated_by_a_float64_value_is_rounded_once_as_numpy_does():
    p = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    g = np.linspace(0.3, 0.7, 64, dtype=np.float32).reshape(8, 8)
    lr = np.float64(1e-3) / 3  # numpy's float64 scalar: the update is computed in float64
    expected = p.copy()
    expected -= lr * g / (np.sqrt(g) + 1e-7)

    def update(params: List[Tensor], grads: List[Tensor], lr: Tensor):
        for i in range(len(params)):
            params[i] -= lr * grads[i] / (np.sqrt(grads[i]) + 1e-7)
    params = [p, p[:2, :2].copy()]
    script(update)(params, [g, g[:2, :2].copy()], np.asarray(lr))
    np.testing.assert_allclose(params[0], expected, rtol=0, atol=2e-8)
    assert params[0] is p


def test_a_strided_array_is_updated_through_its_view():
    base = np.arange(48.0).reshape(6, 8)
    view = base.T[::2]
    expected = base.copy()
    expected.T[::2] -= 0.5 * np.ones((4, 6)) * 3.0
    sgd_list = [view, np.zeros(3)]
    script(sgd)(sgd_list, [np.ones((4, 6)) * 3.0, np.ones(3)], 0.5)
    np.testing.assert_array_equal(base, expected)


def test_an_input_sharing_memory_with_the_array_written_is_read_before_the_write():
    # the call's check refuses such arguments (the update would change what it reads); the
    # generated code compares them too, and computes apart when they overlap
    W = np.arange(16.0).reshape(4, 4)
    w = Weights(W.copy(), np.ones((4, 4)))
    step = script(Weights.step)
    step(w, 0.5)
    spec = step.specialization(w, 0.5)
    assert "_may_share" in spec.source
    args = step._bind((w, 0.5), {})  # the graph's inputs: w.W and w.G among them
    expected = w.W - 0.5 * w.W.T * 2.0
    spec.fn(*[w.W.T if a is w.G else a for a in args])
    np.testing.assert_array_equal(w.W, expected)


def powers(params: List[Tensor], grads: List[Tensor]):
    for i in range(len(params)):
        params[i] **= grads[i] * 0.5
        params[i] %= grads[i] + 2.0


def test_an_update_no_kernel_computes_stays_numpys_own_with_its_values():
    # (the CPU kernels have no power by an array nor modulo: `p **= v`, `p %= v` run as numpy)
    plain = [abs(a) for a in _arrays(0)]
    compiled = [a.copy() for a in plain]
    grads = [abs(a) for a in _arrays(1)]
    powers(plain, grads)
    f = script(powers)
    f(compiled, grads)
    for a, b in zip(plain, compiled):
        np.testing.assert_allclose(b, a, rtol=1e-14)
    source = f.code_for(compiled, grads)
    assert "'**', '...')" in source and "'%', '...')" in source
