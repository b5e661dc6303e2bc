"""``vjp`` calls inside ``script.profile()`` blocks, nested or not: the same results as
unprofiled calls, and each forward and backward call counted once per block it ran in."""

from __future__ import annotations

import numpy as np
import pytest

import script as rnnscript
from script import Module, Parameter, Tensor, script, vjp
from tests.helpers import assert_same, rand, random_args, rng
from tests.programs.layers import affine_norm, mlp, norm_in_a_loop


def no_loop(x: Tensor, w: Tensor) -> Tensor:
    return np.tanh(x @ w) * 2.0 + x @ w


def two_outputs(x: Tensor, w: Tensor):
    return x @ w, np.tanh(x)


def _calls(prof) -> dict[str, int]:
    return {k: s.calls for k, s in prof.stats.items() if s.category == "call"}


@pytest.mark.parametrize("fn, shapes", [
    (no_loop, [(2, 3), (3, 3)]),
    (two_outputs, [(2, 3), (3, 4)]),
    (affine_norm, [(3, 5), (5,), (5,)]),
    (norm_in_a_loop, [(4, 2, 70), (70,), (70,)]),
], ids=lambda v: getattr(v, "__name__", "shapes"))
def test_profiled_vjp_in_nested_blocks_computes_the_same(fn, shapes):
    args = random_args(shapes, rng(12))
    f = script(fn)
    out, backward = vjp(f, *args)
    cts = tuple(np.ones_like(o) for o in out) if isinstance(out, tuple) else np.ones_like(out)
    want = backward(cts)
    name = fn.__name__
    with rnnscript.profile() as outer:
        out_outer, back_outer = vjp(f, *args)
        with rnnscript.profile() as inner:
            out_inner, back_inner = vjp(f, *args)
            got = [back_inner(cts), back_outer(cts)]
        got.append(back_outer(cts))
    got.append(back_inner(cts))  # outside every block: the fast code
    for o in (out_outer, out_inner):
        for a, b in zip(o if isinstance(o, tuple) else (o,), out if isinstance(out, tuple)
                        else (out,)):
            assert_same(a, b, rtol=1e-12, atol=1e-12)
    for grads in got:
        for a, b in zip(grads, want):
            assert_same(a, b, rtol=1e-12, atol=1e-12)
    assert _calls(inner) == {f"call {name} (forward)": 1, f"call {name} (backward)": 2}
    assert _calls(outer) == {f"call {name} (forward)": 1, f"call {name} (backward)": 1}
    assert inner.node_seconds > 0 and outer.node_seconds > 0
    assert f"{name} (backward)" in str(inner)


def test_profiled_vjp_of_a_list_of_weights():
    r = rng(13)
    x, ws = rand(r, (2, 3)), [rand(r, (3, 4)), rand(r, (4, 2))]
    f = script(mlp)
    out, backward = vjp(f, x, ws)
    want = backward(np.ones_like(out))
    with rnnscript.profile() as prof:
        got_out, got_backward = vjp(f, x, ws)
        got = got_backward(np.ones_like(out))
    assert_same(got_out, out, rtol=1e-12, atol=1e-12)
    assert_same(got[0], want[0], rtol=1e-12, atol=1e-12)
    for g, w in zip(got[1], want[1]):
        assert_same(g, w, rtol=1e-12, atol=1e-12)
    assert _calls(prof) == {"call mlp (forward)": 1, "call mlp (backward)": 1}


class _Scaled(Module):
    def __init__(self):
        super().__init__()
        self.w = Parameter(np.linspace(0.5, 1.5, 3))

    def forward(self, x: Tensor) -> Tensor:
        return np.tanh(x * self.w)


class Gate(_Scaled):
    """Inherits ``forward``: its records are named by this class, as its calls are."""


@pytest.mark.parametrize("wrap", [lambda m: m, script], ids=["module", "script_module"])
def test_profiled_vjp_of_a_module_is_named_by_its_class(wrap):
    module = wrap(Gate())
    x = np.linspace(-1.0, 1.0, 3)
    with rnnscript.profile() as prof:
        out, backward = vjp(module, x)
        (gx,) = backward(np.ones_like(out))
    assert _calls(prof) == {"call Gate.forward (forward)": 1, "call Gate.forward (backward)": 1}
    w = np.linspace(0.5, 1.5, 3)
    assert_same(gx, w * (1.0 - np.tanh(x * w) ** 2), rtol=1e-12, atol=1e-12)
