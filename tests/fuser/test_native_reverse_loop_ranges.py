"""A reverse loop is row-wise too: a layer written ``outputs += [h]`` (fastrnns' own layers)
appends each step's state (``l += [x]`` is ``l.append(x)``), so its backward hands each step's
cotangent to the state directly, with no list of zeros made per step, and the reverse loop runs
over batch row ranges at once with the Python loops' gradients."""

import numpy as np
import pytest

from benchmarks.fastrnns import cells
from fuser.cpu import blas
from script import script, vjp
from tests.fuser.test_native_loop import gru_args, lstm_args


def _train(f, args):
    out, back = vjp(f, *args)
    rng = np.random.default_rng(0)
    return out, back(tuple(rng.standard_normal(o.shape) for o in out))


def _loops(f):
    return [v for cg in f.__dict__["_gradient_cache"].values()
            for fn in (cg.forward, cg.backward)
            for k, v in fn.__globals__.items() if k.startswith("_loop")]


@pytest.mark.parametrize("threads", [2, 3, 4])
@pytest.mark.parametrize("layer,make", [(cells.lstm_layer, lstm_args),
                                        (cells.gru_layer, gru_args)],
                         ids=["lstm", "gru"])
def test_the_reverse_loop_splits_into_row_ranges(monkeypatch, layer, make, threads):
    # 13 x 320 states: more items than constant propagation folds into a constant array
    args = make(21, 13, 7, 320, np.float64, seed=threads)
    args = (*args[:3], *(w * 0.05 for w in args[3:]))  # weights of a trained size: no blow-up
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want_out, want_grads = _train(script(layer), args)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", str(threads))
    with blas.threads(threads):
        f = script(layer)
        out, grads = _train(f, args)
    forward, reverse = _loops(f)
    assert [lp.calls for lp in (forward, reverse)] == [1, 1]
    assert reverse.prog.batch == 13
    assert [len(r) for v in reverse.variants.values() for r in v.splits.values() if r] == \
        [min(threads, 13 // 4)]
    for got, want in zip((*out, *grads), (*want_out, *want_grads)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_no_zeros_are_made_in_the_reverse_loop():
    args = lstm_args(21, 5, 4, 6, np.float64)
    f = script(cells.lstm_layer)
    _train(f, args)
    (cg,) = f.__dict__["_gradient_cache"].values()
    (loop,) = [n for n in cg.gradient.backward.block if n.kind == "prim::Loop"]
    assert not [n for n in loop.blocks[0] if n.kind in ("tensor::zeros", "tensor::unbind")]
