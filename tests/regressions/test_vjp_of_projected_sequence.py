"""The backward of an LSTM layer whose input projection is written by hand (upstream's premul
variants) must cost what the plain layer's backward costs: the same arithmetic.

Two causes made it several times slower:

- ``for g in unbind((x2 @ w.T + b).reshape(seq, batch, -1), 0)``: the loop's trip count is
  ``size(igates, 0)``, known only once shape propagation had typed the reshape, and nothing folded
  it afterwards. The reverse loop then ran a saved, unknown number of steps, so the batching of
  its weight-gradient sums did not apply and every step added a ``select_backward`` of the whole
  (T, B, 4H) gradient into an accumulator: O(T^2) work.
- ``unbind(x @ w.T, 0)`` with a 3-D ``x``: the weight's gradient was a batched matmul per time
  step, ``transpose(x) @ g`` of shape (T, I, 4H), then summed over T; and numpy runs a (T, m, k) @
  (k, n) product as T small GEMMs (forward and input gradient alike).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from benchmarks.fastrnns import cells
from script import script, vjp
from tests.gradcheck import check_vjp

SEQ, BATCH, INPUT, HIDDEN = 6, 3, 5, 4
PREMUL = [cells.lstm_layer_premul, cells.lstm_layer_premul_bias]


def layer_args(seed: int = 0):
    rng = np.random.default_rng(seed)
    g = 4 * HIDDEN
    return (rng.standard_normal((SEQ, BATCH, INPUT)), rng.standard_normal((BATCH, HIDDEN)),
            rng.standard_normal((BATCH, HIDDEN)), 0.5 * rng.standard_normal((g, INPUT)),
            0.5 * rng.standard_normal((g, HIDDEN)), rng.standard_normal(g),
            rng.standard_normal(g))


def filecheck(text: str, checks: str) -> None:
    """Run the ``filecheck`` package on ``text`` with ``checks`` (``// CHECK...`` lines)."""
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".ir", delete=False) as f:
        f.write(checks)
    result = subprocess.run([sys.executable, "-m", "filecheck", f.name], input=text,
                            capture_output=True, text=True)
    assert result.returncode == 0, f"{result.stdout}{result.stderr}\n--- graph ---\n{text}"


def reverse_loop(graph):
    (loop,) = [n for n in graph.nodes() if n.kind == "prim::Loop"]
    return loop


@pytest.mark.parametrize("fn", PREMUL, ids=lambda f: f.__name__)
def test_premul_gradients_match_finite_differences(fn):
    check_vjp(fn, layer_args())


@pytest.mark.parametrize("fn", PREMUL, ids=lambda f: f.__name__)
def test_premul_gradients_equal_the_plain_layer_gradients(fn):
    args = layer_args(1)
    rng = np.random.default_rng(2)
    ct = (rng.standard_normal((SEQ, BATCH, HIDDEN)), rng.standard_normal((BATCH, HIDDEN)),
          rng.standard_normal((BATCH, HIDDEN)))
    _, plain = vjp(script(cells.lstm_layer), *args)
    _, premul = vjp(script(fn), *args)
    for k, (got, want) in enumerate(zip(premul(ct), plain(ct))):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=f"input {k}")


@pytest.mark.parametrize("fn", PREMUL, ids=lambda f: f.__name__)
def test_premul_reverse_loop_has_only_per_step_work(fn):
    g = script(fn).backward_graph_for(*layer_args())
    loop = reverse_loop(g)
    assert loop.inputs[0].is_constant and loop.inputs[0].constant == SEQ
    body = [n.kind for n in loop.blocks[0].nodes]
    assert body.count("tensor::matmul") == 1  # the recurrent one; weight gradients left
    for n in loop.blocks[0].nodes:
        for v in n.outputs:  # nothing per step is as large as the whole sequence
            shape = getattr(v.type, "shape", None)
            assert not (shape and len(shape) == 3 and shape[0] == SEQ), f"{n.kind}: {v.type}"
    any_dtype = "{{[A-Za-z]+}}"
    filecheck(str(g), f"""
// CHECK: prim::Loop(
// CHECK-NOT: select_backward
// CHECK-NOT: {any_dtype}({SEQ}, {BATCH}, {4 * HIDDEN}) = tensor::add
// CHECK: -> (
// CHECK-NOT: prim::Loop(
// CHECK: {any_dtype}({INPUT}, {4 * HIDDEN}) = tensor::matmul
// CHECK: return
""")


@pytest.mark.parametrize("fn", [cells.lstm_layer] + PREMUL, ids=lambda f: f.__name__)
def test_every_matmul_of_the_backward_is_two_dimensional(fn):
    g = script(fn).backward_graph_for(*layer_args())
    for n in g.nodes():
        if n.kind == "tensor::matmul":
            assert all(len(v.type.shape) == 2 for v in n.inputs), str(n)


def batched_product(x, w):
    return np.tanh(x @ w.T)


def test_a_batched_product_by_a_matrix_is_one_two_dimensional_matmul():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((4, 3, 2, 5)), rng.standard_normal((6, 5))
    f = script(batched_product)
    np.testing.assert_allclose(f(x, w), batched_product(x, w), rtol=1e-12)
    (mm,) = [n for n in f.graph_for(x, w).nodes() if n.kind == "tensor::matmul"]
    assert [v.type.shape for v in mm.inputs] == [(24, 5), (5, 6)]
    check_vjp(batched_product, (x, w))
