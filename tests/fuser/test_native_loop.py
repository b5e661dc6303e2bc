"""Native recurrent loops (``fuser.cpu.loop``): a loop of matmuls, fusion groups, row selects and
slot writes runs as one native function and gives the Python loop's results; anything it cannot
take runs the Python loop instead, with the same result or error."""

import time
from typing import List, Tuple

import numpy as np
import pytest

import rnn
from benchmarks.fastrnns import cells
from fuser.cpu import loop as native
from script import Tensor, ops, script
from tests.helpers import gradient_loops, native_loops, python_loop_result


def lstm_args(T, B, I, H, dtype, seed=0):  # noqa: E741
    rng = np.random.default_rng(seed)

    def f(*s):
        return (rng.standard_normal(s) * 0.5).astype(dtype)
    return (f(T, B, I), f(B, H), f(B, H), f(4 * H, I), f(4 * H, H), f(4 * H), f(4 * H))


def gru_args(T, B, I, H, dtype, seed=0):  # noqa: E741
    rng = np.random.default_rng(seed)

    def f(*s):
        return (rng.standard_normal(s) * 0.5).astype(dtype)
    return (f(T, B, I), f(B, H), f(3 * H, I), f(3 * H, H), f(3 * H), f(3 * H))


def assert_same(got, want, dtype):
    tol = 1e-5 if dtype == np.float32 else 1e-10
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


LAYERS = [(cells.lstm_layer, lstm_args), (cells.lstm_layer_premul, lstm_args),
          (cells.lstm_layer_premul_bias, lstm_args), (cells.lstm_layer_simple, lstm_args),
          (cells.gru_layer, gru_args)]
SIZES = [(5, 3, 4, 6), (1, 1, 3, 2), (7, 5, 9, 11), (12, 8, 64, 64)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layer,make", LAYERS, ids=lambda x: getattr(x, "__name__", ""))
def test_fastrnns_layers_run_natively_with_the_python_loops_results(monkeypatch, layer, make,
                                                                     size, dtype):
    args = make(*size, dtype)
    f = script(layer)
    got = f(*args)
    loops = native_loops(f, *args)
    kept = [n for n in f.graph_for(*args).nodes() if n.kind == "prim::Loop"]
    assert len(loops) == len(kept) and all(lp.calls == 1 for lp in loops)
    assert loops or size[0] == 1  # one step is unrolled: no loop is left
    assert_same(got, python_loop_result(monkeypatch, layer, *args), dtype)
    assert_same(got, layer(*args), dtype)  # and the plain function's


def test_outputs_are_fresh_on_every_call():
    args = lstm_args(6, 4, 5, 3, np.float32)
    f = script(cells.lstm_layer)
    out1, h1, c1 = f(*args)
    keep = h1.copy(), c1.copy(), out1.copy()
    out2, h2, c2 = f(*args)
    assert h1 is not h2 and c1 is not c2
    h2[...] = 7.0
    c2[...] = 7.0
    assert_same((h1, c1, out1), keep, np.float32)


def test_a_non_contiguous_initial_state_runs_natively_from_a_copy():
    args = list(lstm_args(6, 4, 5, 3, np.float64))
    f = script(cells.lstm_layer)
    f(*args)
    (lp,) = native_loops(f, *args)
    before = lp.calls
    hx = np.asfortranarray(args[1])
    kept = hx.copy()
    args[1] = hx
    got = f(*args)
    assert lp.calls == before + 1  # the steps read a C-ordered copy of hx
    assert_same(got, cells.lstm_layer(*args), np.float64)
    np.testing.assert_array_equal(hx, kept)


def _keeps_its_initial_state(x: Tensor, h: Tensor, w: Tensor) -> Tuple[List[Tensor], Tensor]:
    hs: List[Tensor] = []
    for t in range(x.shape[0]):
        hs.append(h)  # the first item is the initial state itself
        h = np.tanh(x[t] @ w + h)
    return hs, h


def test_a_non_contiguous_initial_state_the_steps_keep_runs_the_python_loop():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((20, 3, 4)), rng.standard_normal((4, 4)) * 0.5
    h = rng.standard_normal((3, 4))
    f = script(_keeps_its_initial_state)
    f(x, h, w)
    (lp,) = native_loops(f, x, h, w)
    before = lp.calls
    hf = np.asfortranarray(h)
    got = f(x, hf, w)
    assert lp.calls == before  # a copy would be kept in place of the caller's array
    assert got[0][0] is hf
    want = _keeps_its_initial_state(x, hf, w)
    assert_same((np.stack(got[0]), got[1]), (np.stack(want[0]), want[1]), np.float64)


def test_transposed_weights_multiply_through_blas_flags():
    def layer(x: Tensor, h: Tensor, w: Tensor, u: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            h = np.tanh(x[t] @ w + h @ u)
        return h

    rng = np.random.default_rng(1)
    x = rng.standard_normal((20, 3, 4))
    h = rng.standard_normal((3, 6))
    w = rng.standard_normal((6, 4)).T  # F-ordered views: gemm reads them transposed
    u = rng.standard_normal((6, 6)).T
    f = script(layer)
    got = f(x, h, w, u)
    (lp,) = native_loops(f, x, h, w, u)
    assert lp.calls == 1
    assert_same(got, layer(x, h, w, u), np.float64)


def fill(x: Tensor, n: int) -> Tuple[Tensor, Tensor]:
    out = np.zeros((20, 2, 3))
    h = x[0]
    for t in range(n):
        h = np.tanh(h + x[t])
        out[t] = h
    return h, out


def test_index_out_of_range_raises_numpys_error():
    x = np.random.default_rng(0).standard_normal((20, 2, 3))
    f = script(fill)
    assert_same(f(x, 20), fill(x, 20), np.float64)
    assert native_loops(f, x, 20)[0].calls == 1
    with pytest.raises(IndexError):
        fill(x, 21)
    with pytest.raises(IndexError):
        f(x, 21)


def test_negative_indices_wrap_like_python():
    def backwards(x: Tensor, h: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            h = np.tanh(h * 0.5 + x[-1 - t])
        return h

    rng = np.random.default_rng(2)
    x, h = rng.standard_normal((20, 2, 3)), rng.standard_normal((2, 3))
    f = script(backwards)
    got = f(x, h)
    assert native_loops(f, x, h)[0].calls == 1
    assert_same(got, backwards(x, h), np.float64)


def test_zero_trips_return_the_initial_state():
    args = lstm_args(0, 3, 4, 5, np.float32)
    f = script(cells.lstm_layer_simple)
    h, c = f(*args)
    np.testing.assert_array_equal(h, args[1])
    np.testing.assert_array_equal(c, args[2])


def test_scalars_from_outside_reach_the_kernel():
    def leaky(x: Tensor, h: Tensor, alpha: float, k: int) -> Tensor:
        for t in range(x.shape[0] - k):
            h = alpha * h + (1.0 - alpha) * np.tanh(x[t + k])
        return h

    rng = np.random.default_rng(3)
    x, h = rng.standard_normal((26, 2, 3)), rng.standard_normal((2, 3))
    f = script(leaky)
    for alpha, k in ((0.25, 1), (0.75, 2), (0.5, 0)):
        assert_same(f(x, h, alpha, k), leaky(x, h, alpha, k), np.float64)
    assert native_loops(f, x, h, 0.25, 1)[0].calls == 3


def collect(x: Tensor, h: Tensor, b: Tensor) -> Tuple[List[Tensor], List[Tensor], Tensor]:
    hs: List[Tensor] = []
    prev: List[Tensor] = []
    for t in range(x.shape[0]):
        prev.append(h)
        h = np.tanh(h + x[t])
        hs.append(h)
        hs.append(b)
    return hs, prev, h


def test_appended_values_keep_one_slot_per_step():
    rng = np.random.default_rng(7)
    x, h, b = (rng.standard_normal((20, 2, 2)), rng.standard_normal((2, 2)),
               rng.standard_normal((2, 2)))
    f = script(collect)
    hs, prev, last = f(x, h, b)
    assert native_loops(f, x, h, b)[0].calls == 1
    want_hs, want_prev, want_last = collect(x, h, b)
    assert len(hs) == len(want_hs) == 40 and len(prev) == len(want_prev) == 20
    for g, w in zip([*hs, *prev, last], [*want_hs, *want_prev, want_last]):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert prev[0] is h and hs[1] is b and hs[39] is b
    np.testing.assert_array_equal(prev[5], hs[8])  # the state a step starts from was appended
    assert not np.shares_memory(hs[0], hs[2])


def test_a_list_read_and_appended_in_one_loop_stays_python_and_says_why():
    def running(x: Tensor, h: Tensor) -> Tensor:
        hs: List[Tensor] = [h]
        for t in range(x.shape[0]):
            hs.append(np.tanh(hs[-1] + x[t]))
        return hs[-1]

    x, h = np.ones((20, 2, 2)), np.zeros((2, 2))
    f = script(running)
    np.testing.assert_allclose(f(x, h), running(x, h))
    assert not native_loops(f, x, h)
    (node,) = [n for n in f.graph_for(x, h).nodes() if n.kind == "prim::Loop"]
    with pytest.raises(native.LoopRefused, match="ListIndex|used as"):
        native.compile_loop(node)


def test_state_unchanged_by_the_loop_is_the_caller_s_array():
    def keep(x: Tensor, h: Tensor, c: Tensor) -> Tuple[Tensor, Tensor]:
        for t in range(x.shape[0]):
            h = np.tanh(x[t] + c)
        return h, c

    rng = np.random.default_rng(4)
    x, h, c = (rng.standard_normal((20, 2, 3)), rng.standard_normal((2, 3)),
               rng.standard_normal((2, 3)))
    f = script(keep)
    got_h, got_c = f(x, h, c)
    assert got_c is c  # as the Python loop returns it
    assert_same((got_h, got_c), keep(x, h, c), np.float64)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("layers,bidir", [(1, False), (2, True)])
def test_rnn_modules_in_eval_run_natively(monkeypatch, mode, layers, bidir):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((20, 3, 4)).astype(np.float32)
    m = getattr(rnn, mode)(4, 5, num_layers=layers, bidirectional=bidir)
    m.eval()
    got = m(x)
    with monkeypatch.context() as mp:
        mp.setenv("RNNSCRIPT_DISABLE", "1")
        m2 = getattr(rnn, mode)(4, 5, num_layers=layers, bidirectional=bidir)
    m2.load_state_dict(m.state_dict())
    m2.eval()
    want = m2(x)
    flat_got, flat_want = _flatten(got), _flatten(want)
    for g, w in zip(flat_got, flat_want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def _flatten(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in _flatten(t)]
    return [tree]


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_every_thread_count_gives_the_python_loops_results(monkeypatch, threads):
    from fuser.cpu import blas
    args = lstm_args(9, 17, 33, 40, np.float32, seed=threads)
    want = python_loop_result(monkeypatch, cells.lstm_layer, *args)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", str(threads))  # row ranges run at once
    with blas.threads(threads):
        inside = blas.get_threads()  # OpenBLAS caps it at the threads it started with
        f = script(cells.lstm_layer)
        got = f(*args)
        got_again = f(*args)
        assert blas.get_threads() == inside  # the BLAS setting is back after each call
    (lp,) = native_loops(f, *args)
    assert lp.calls == 2 and lp.prog.batch == 17
    assert [len(r) if r else 1 for v in lp.variants.values() for r in v.splits.values()] == \
        ([] if threads == 1 else [min(threads, 17 // 4)])
    assert_same(got, want, np.float32)
    assert_same(got_again, want, np.float32)


def test_ops_chunk_cell_in_a_loop_matches():
    def layer(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            a, b = ops.chunk(x[t] + h @ w, 2, 1)
            h = ops.sigmoid(a) * np.tanh(b)
        return h

    rng = np.random.default_rng(6)
    x, h, w = (rng.standard_normal((20, 3, 8)), rng.standard_normal((3, 4)),
               rng.standard_normal((4, 8)))
    f = script(layer)
    assert_same(f(x, h, w), layer(x, h, w), np.float64)
    assert native_loops(f, x, h, w)[0].calls == 1


# -- training: the forward that saves values for the backward, and the reverse loop --------------
def vjp_result(fn, args, seed=1):
    from script import vjp
    out, back = vjp(fn, *args)
    rng = np.random.default_rng(seed)
    flat = out if isinstance(out, tuple) else (out,)
    cts = tuple(rng.standard_normal(o.shape).astype(o.dtype) for o in flat)
    grads = back(cts if isinstance(out, tuple) else cts[0])
    return flat, grads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [(20, 3, 4, 6), (1, 1, 3, 2), (17, 1, 5, 3), (25, 7, 9, 11)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layer,make", LAYERS, ids=lambda x: getattr(x, "__name__", ""))
def test_fastrnns_layers_train_natively_with_the_python_loops_gradients(monkeypatch, layer, make,
                                                                       size, dtype):
    args = make(*size, dtype)
    f = script(layer)
    out, grads = vjp_result(f, args)
    if size[0] > 16:  # shorter loops are unrolled
        loops = gradient_loops(f)
        assert len(loops) == 2 and all(lp.calls == 1 for lp in loops)
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        g = script(layer)
        want_out, want_grads = vjp_result(g, args)
        assert not gradient_loops(g)
    assert_same(tuple(out), tuple(want_out), dtype)
    assert_same(tuple(grads), tuple(want_grads), dtype)


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
@pytest.mark.parametrize("layer,make", LAYERS, ids=lambda x: getattr(x, "__name__", ""))
def test_training_at_every_thread_count(monkeypatch, layer, make, threads):
    from fuser.cpu import blas
    args = make(21, 13, 7, 11, np.float64, seed=threads)
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want = vjp_result(script(layer), args)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", str(threads))
    with blas.threads(threads):
        f = script(layer)
        got = vjp_result(f, args)
    loops = gradient_loops(f)
    assert len(loops) == 2 and all(lp.calls == 1 for lp in loops)
    assert_same(tuple(got[0]), tuple(want[0]), np.float64)
    assert_same(tuple(got[1]), tuple(want[1]), np.float64)


def test_gradients_equal_finite_differences():
    def layer(x: Tensor, h: Tensor, w: Tensor, u: Tensor) -> Tensor:
        out = np.zeros((x.shape[0], h.shape[0], h.shape[1]))
        for t in range(x.shape[0]):
            h = np.tanh(x[t] @ w + h @ u)
            out[t] = h
        return out

    rng = np.random.default_rng(8)
    args = [rng.standard_normal(s) * 0.5 for s in ((20, 2, 3), (2, 4), (3, 4), (4, 4))]
    from script import vjp
    f = script(layer)
    out, back = vjp(f, *args)
    ct = rng.standard_normal(out.shape)
    grads = back(ct)
    assert all(lp.calls == 1 for lp in gradient_loops(f))
    eps = 1e-6
    for k, a in enumerate(args):
        for index in [(0,) * a.ndim, tuple(d - 1 for d in a.shape)]:
            plus = [b.copy() for b in args]
            minus = [b.copy() for b in args]
            plus[k][index] += eps
            minus[k][index] -= eps
            fd = np.sum((layer(*plus) - layer(*minus)) * ct) / (2 * eps)
            np.testing.assert_allclose(grads[k][index], fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("layers,bidir", [(1, False), (2, True)])
def test_rnn_modules_train_natively_with_the_python_loops_gradients(monkeypatch, mode, layers,
                                                                   bidir):
    from script import vjp
    rng = np.random.default_rng(9)
    x = rng.standard_normal((20, 3, 4)).astype(np.float32)

    def run():
        m = getattr(rnn, mode)(4, 5, num_layers=layers, bidirectional=bidir)
        m.load_state_dict(state)
        out, back = vjp(m, x)
        cts = [np.ones_like(leaf) for leaf in _flatten(out)]
        ct = (cts[0], tuple(cts[1:])) if mode == "LSTM" else (cts[0], cts[1])
        return _flatten(out), _flatten(back(ct))

    state = getattr(rnn, mode)(4, 5, num_layers=layers, bidirectional=bidir).state_dict()
    got = run()
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want = run()
    assert len(got[1]) == len(want[1])
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_an_int_that_leaves_64_bits_is_computed_by_python():
    def scaled(x: Tensor, h: Tensor, big: int) -> Tensor:
        for t in range(x.shape[0]):
            h = np.tanh(h * 0.5 + x[t] * (t * big) * 1e-20)
        return h

    rng = np.random.default_rng(10)
    x, h = rng.standard_normal((20, 2, 3)), rng.standard_normal((2, 3))
    f = script(scaled)
    assert_same(f(x, h, 3), scaled(x, h, 3), np.float64)
    (lp,) = native_loops(f, x, h, 3)
    assert lp.calls == 1
    assert_same(f(x, h, 2**61), scaled(x, h, 2**61), np.float64)  # t * 2**61 needs a big int
    assert lp.calls == 1


def test_a_constant_appended_each_step_is_a_fresh_copy_each_step():
    def zeros_each_step(x: Tensor) -> List[Tensor]:
        out: List[Tensor] = []
        for _ in range(x.shape[0]):
            out.append(np.zeros(3))
        return out

    x = np.ones((20, 2))
    got = script(zeros_each_step)(x)
    got[0][0] = 5.0
    assert got[1][0] == 0.0


def test_steps_that_mix_batch_rows_run_as_one_range(monkeypatch):
    def mixes(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            h = np.tanh(x[t] + w @ h)  # row r of the result reads every row of h
        return h

    rng = np.random.default_rng(11)
    x, h, w = (rng.standard_normal((20, 8, 8)), rng.standard_normal((8, 8)),
               rng.standard_normal((8, 8)) * 0.3)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", "2")
    f = script(mixes)
    assert_same(f(x, h, w), mixes(x, h, w), np.float64)
    (lp,) = native_loops(f, x, h, w)
    assert lp.calls == 1 and lp.prog.batch is None


def cs231n_style(x: Tensor, h0: Tensor, wx: Tensor, wh: Tensor, b: Tensor) -> Tensor:
    n, t_len, _ = x.shape
    h = np.zeros((n, t_len, h0.shape[1]))
    prev = h0
    for t in range(t_len):
        prev = np.tanh(x[:, t, :] @ wx + prev @ wh + b)
        h[:, t, :] = prev
    return h


def test_slots_along_a_later_axis_are_written_block_by_block(monkeypatch):
    """CS231n's ``h[:, t, :] = ...`` and ``x[:, t, :]``, and the cat the batch-matmul pass makes
    of a strided row and the state."""
    rng = np.random.default_rng(12)
    args = (rng.standard_normal((5, 20, 4)), rng.standard_normal((5, 6)),
            rng.standard_normal((4, 6)) * 0.5, rng.standard_normal((6, 6)) * 0.5,
            rng.standard_normal(6))
    f = script(cs231n_style)
    assert_same(f(*args), cs231n_style(*args), np.float64)
    (lp,) = native_loops(f, *args)
    assert lp.calls == 1
    out, grads = vjp_result(f, args)
    loops = gradient_loops(f)
    # the forward and the reverse loop run natively (the reverse step makes the forward's row
    # index again from its counter: the forward saves no ints on a list)
    assert len(loops) == 2 and all(lp.calls == 1 for lp in loops)
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want_out, want_grads = vjp_result(script(cs231n_style), args)
    assert_same(tuple(out), tuple(want_out), np.float64)
    assert_same(tuple(grads), tuple(want_grads), np.float64)


def gated_step(x: Tensor, h: Tensor, w: Tensor) -> Tuple[Tensor, Tensor]:
    z = x @ w
    return np.tanh(z[:, :4] + h), ops.sigmoid(z[:, 4:])


def views_and_tuples(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
    for t in range(x.shape[0]):
        a, g = gated_step(x[t], h, w)
        h = (a * g + h[:, ::-1]).reshape(h.shape[0], 4)
    return h


def test_slices_reshapes_and_tuples_in_the_body(monkeypatch):
    rng = np.random.default_rng(13)
    args = (rng.standard_normal((20, 3, 5)), rng.standard_normal((3, 4)),
            rng.standard_normal((5, 8)) * 0.5)
    f = script(views_and_tuples)
    assert_same(f(*args), views_and_tuples(*args), np.float64)
    (lp,) = native_loops(f, *args)
    assert lp.calls == 1
    out, grads = vjp_result(f, args)
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want_out, want_grads = vjp_result(script(views_and_tuples), args)
    assert_same(tuple(out), tuple(want_out), np.float64)
    assert_same(tuple(grads), tuple(want_grads), np.float64)


def test_a_number_divided_by_zero_raises_python_s_error():
    def scaled(x: Tensor, h: Tensor, k: int) -> Tensor:
        for t in range(x.shape[0]):
            h = np.tanh(h + x[t] * (1.0 / (t - k)))
        return h

    rng = np.random.default_rng(14)
    x, h = rng.standard_normal((20, 2, 3)), rng.standard_normal((2, 3))
    f = script(scaled)
    assert_same(f(x, h, -1), scaled(x, h, -1), np.float64)
    assert native_loops(f, x, h, -1)[0].calls == 1
    with pytest.raises(ZeroDivisionError):
        f(x, h, 3)


def test_a_list_item_of_another_layout_runs_the_python_loop():
    def reads(xs: List[Tensor], h: Tensor) -> Tensor:
        for t in range(20):
            h = np.tanh(h * 0.5 + xs[t])
        return h

    rng = np.random.default_rng(15)
    xs = [rng.standard_normal((2, 3)) for _ in range(20)]
    h = rng.standard_normal((2, 3))
    f = script(reads)
    assert_same(f(xs, h), reads(xs, h), np.float64)
    loops = native_loops(f, xs, h)
    if not loops:
        pytest.skip("the list's item shapes are not part of this specialization")
    (lp,) = loops
    assert lp.calls == 1
    odd = list(xs)
    odd[7] = rng.standard_normal((3, 2)).T  # (2, 3), not C-ordered
    assert_same(f(odd, h), reads(odd, h), np.float64)
    assert lp.calls == 1  # this call ran the Python loop


# -- reductions and array constructors in the body -------------------------------------------------
REDUCE_AXES = [None, 0, 1, -1, (0, 2), (1, 2)]


def reducing(op: str, axis, keepdims: bool):
    reduce = getattr(np, op)

    def layer(x: Tensor, h: Tensor, acc: Tensor) -> Tuple[Tensor, Tensor]:
        for t in range(x.shape[0]):
            acc = acc * 0.5 + reduce(x[t] * h, axis=axis, keepdims=keepdims)
            h = np.tanh(h * 0.5 + x[t])
        return h, acc
    return layer


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", REDUCE_AXES, ids=str)
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "var", "std"])
def test_reductions_run_natively_with_the_python_loops_results(monkeypatch, op, axis, keepdims,
                                                               dtype):
    layer = reducing(op, axis, keepdims)
    rng = np.random.default_rng(16)
    shape = np.sum(np.ones((3, 5, 7)), axis=axis, keepdims=keepdims).shape
    for steps in (20, 1):
        x = rng.standard_normal((steps, 3, 5, 7)).astype(dtype)
        h = rng.standard_normal((3, 5, 7)).astype(dtype)
        acc = np.zeros(shape, dtype)
        f = script(layer)
        got = f(x, h, acc)
        loops = native_loops(f, x, h, acc)
        assert [lp.calls for lp in loops] == ([1] if steps > 1 else [])  # one step is unrolled
        assert_same(got, python_loop_result(monkeypatch, layer, x, h, acc), dtype)
        assert_same(got, layer(x, h, acc), dtype)
        assert [type(v) for v in got] == [type(v) for v in layer(x, h, acc)]  # a number: numpy's
        if steps > 1:
            assert "runs natively" in f.explain(x, h, acc)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "var", "std"])
def test_reductions_of_strided_views_and_their_gradients(monkeypatch, op, dtype):
    """A reduction over a strided row (the scalar paths) and over a kept axis, trained: the
    reverse loop's ``sum_to``, ``broadcast_to`` and ``expand_dims`` run natively too."""
    reduce = getattr(np, op)

    def layer(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            s = reduce(x[t].T * 0.5, axis=0)
            c = reduce(np.tanh(x[t] @ w), axis=1, keepdims=True)
            h = np.tanh(h * 0.5 + s + c)
        return h

    rng = np.random.default_rng(17)
    args = (rng.standard_normal((20, 7, 7)).astype(dtype),
            rng.standard_normal((7, 7)).astype(dtype),
            (rng.standard_normal((7, 7)) * 0.5).astype(dtype))
    f = script(layer)
    assert_same(f(*args), layer(*args), dtype)
    assert native_loops(f, *args)[0].calls == 1
    out, grads = vjp_result(f, args)
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want_out, want_grads = vjp_result(script(layer), args)
    assert [lp.calls for lp in gradient_loops(f)] == [1, 1]
    assert_same(tuple(out), tuple(want_out), dtype)
    assert_same(tuple(grads), tuple(want_grads), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layer", [cells.layernorm_decom_lstm_layer, cells.layernorm_lstm_layer],
                         ids=["mean and std ops", "layer_norm"])
def test_a_layer_norm_lstm_runs_natively_forward_and_backward(monkeypatch, layer, dtype):
    """fastrnns' LayerNorm LSTMs, its layer norms decomposed (``x.std(-1, keepdims=True)`` per
    gate block) or as ``layer_norm`` (the row kernels, forward and gradient), and a ``ddof`` of
    1: native forward and reverse loops give the Python loops' results."""
    from benchmarks.fastrnns import factory
    inp = factory.rnn_inputs(factory.Sizes(12, 1, 16, 16, 5, np.dtype(dtype).name, 3))
    args = (inp.x, inp.hx[0], inp.cx[0], *factory.layernorm_weights(inp)[0])
    f = script(layer)
    assert_same(f(*args), layer(*args), dtype)
    assert native_loops(f, *args)[0].calls == 1
    out, grads = vjp_result(f, args)
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want_out, want_grads = vjp_result(script(layer), args)
    reverse = [v for cg in f.__dict__["_gradient_cache"].values()
               for k, v in cg.backward.__globals__.items() if k.startswith("_loop")]
    assert [lp.calls for lp in reverse] == [1]  # the reverse loop ran natively
    assert all(lp.calls == 1 for lp in gradient_loops(f))
    assert_same(tuple(out), tuple(want_out), dtype)
    if dtype == np.float64:
        assert_same(tuple(grads), tuple(want_grads), dtype)
    else:  # weight gradients summed over T*B float32 terms through 1/std: rounding, at 1e-4
        for g, w in zip(grads, want_grads):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)

    def unbiased(x: Tensor, h: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            h = np.tanh(h + np.std(x[t], axis=1, ddof=1, keepdims=True) + np.var(x[t], 0, ddof=2))
        return h

    x, h = inp.x[:, :, :5].copy(), inp.hx[0][:, :5].copy()
    g = script(unbiased)
    assert_same(g(x, h), unbiased(x, h), dtype)
    assert native_loops(g, x, h)[0].calls == 1


@pytest.mark.parametrize("op", ["amax", "amin"])
def test_a_native_max_keeps_nan_as_numpy_does(op):
    reduce = getattr(np, op)

    def layer(x: Tensor, h: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            h = h + reduce(x[t], axis=1) + reduce(x[t])
        return h

    x = np.random.default_rng(18).standard_normal((20, 4, 70))
    x[3, 1, 50] = np.nan  # in the vector part of a row
    x[5, 2, 69] = np.nan  # in its scalar tail
    h = np.zeros(4)
    f = script(layer)
    got = f(x, h)
    assert native_loops(f, x, h)[0].calls == 1
    np.testing.assert_array_equal(np.isnan(got), np.isnan(layer(x, h)))
    assert np.isnan(got).all()
    y = x.copy()
    y[3, 1, 50] = y[5, 2, 69] = 0.0
    np.testing.assert_allclose(f(y, h), layer(y, h), rtol=1e-12)


def test_a_reduction_to_a_number_kept_beyond_the_step_runs_the_python_loop():
    def total(x: Tensor, h: Tensor) -> List[Tensor]:
        out: List[Tensor] = []
        for t in range(x.shape[0]):
            h = np.tanh(h + x[t])
            out.append(np.sum(h))
        return out

    rng = np.random.default_rng(19)
    x, h = rng.standard_normal((20, 3)), rng.standard_normal(3)
    f = script(total)
    got = f(x, h)
    assert not native_loops(f, x, h)  # numpy gives numbers, not 0-d arrays
    assert [type(v) for v in got] == [type(v) for v in total(x, h)]
    assert "reduction to one number" in f.explain(x, h)
    np.testing.assert_allclose(got, total(x, h), rtol=1e-12)


def constructing(x: Tensor, h: Tensor, c: float) -> Tuple[Tensor, List[Tensor], Tensor]:
    kept: List[Tensor] = []
    acc = np.zeros_like(h)
    for t in range(x.shape[0]):
        z = np.zeros((3, 5), x.dtype)
        o = np.ones_like(h)
        f = np.full((3, 5), c, x.dtype)
        h = np.tanh(h * 0.5 + z + o * 0.25 + f + x[t])
        kept.append(z)
        kept.append(f)
        acc = acc + np.zeros_like(x[t])
    return h, kept, acc


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_array_constructors_in_the_body(monkeypatch, dtype):
    rng = np.random.default_rng(20)
    for steps in (20, 1):
        x = rng.standard_normal((steps, 3, 5)).astype(dtype)
        h = rng.standard_normal((3, 5)).astype(dtype)
        f = script(constructing)
        h_got, kept, acc = f(x, h, 0.5)
        assert [lp.calls for lp in native_loops(f, x, h, 0.5)] == ([1] if steps > 1 else [])
        h_want, kept_want, acc_want = python_loop_result(monkeypatch, constructing, x, h, 0.5)
        assert_same((h_got, acc), (h_want, acc_want), dtype)
        assert len(kept) == 2 * steps and all(k.dtype == dtype for k in kept)
        assert_same(tuple(kept), tuple(kept_want), dtype)
        kept[0][0, 0] = 9.0  # each step's zeros are its own array
        assert steps == 1 or kept[2][0, 0] == 0.0
        assert_same(f(x, h, -2.0)[0], constructing(x, h, -2.0)[0], dtype)


def copies_strided_rows(x: Tensor, h: Tensor) -> Tuple[Tensor, Tensor]:
    seen = np.empty((x.shape[1], x.shape[0], x.shape[2]))  # written slot by slot, in place
    for t in range(x.shape[1]):
        h = np.tanh(h * 0.5 + x[:, t, :])
        seen[t] = x[:, t, :]  # a strided value: copied element by element
    return h, seen


def test_a_slot_write_of_a_strided_value_is_copied_element_by_element():
    rng = np.random.default_rng(21)
    x, h = rng.standard_normal((9, 20, 5)), rng.standard_normal((9, 5))
    f = script(copies_strided_rows)
    got = f(x, h)
    (lp,) = native_loops(f, x, h)
    assert lp.calls == 1
    np.testing.assert_array_equal(got[1], x.transpose(1, 0, 2))
    assert_same(got, copies_strided_rows(x, h), np.float64)


def attention(hs: Tensor, q: Tensor) -> Tuple[Tensor, List[Tensor]]:
    """Deep Learning from Scratch 2's attention: a sum of a broadcast product over the last axis
    (the rows of both operands contiguous), a softmax, a sum of a product over a middle axis (the
    weights repeated along the kept last axis)."""
    n, t_len, h = hs.shape
    out = np.empty_like(q)
    weights: List[Tensor] = []
    for t in range(q.shape[1]):
        s = np.sum(hs * q[:, t, :].reshape(n, 1, h), axis=2)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        a = e / e.sum(axis=1, keepdims=True)
        out[:, t, :] = np.sum(hs * a.reshape(n, t_len, 1), axis=1)
        weights.append(a)
    return out, weights


def attention_out(hs: Tensor, q: Tensor) -> Tensor:
    n, t_len, h = hs.shape
    out = np.empty_like(q)
    for t in range(q.shape[1]):
        s = np.sum(hs * q[:, t, :].reshape(n, 1, h), axis=2)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        out[:, t, :] = np.sum(hs * (e / e.sum(axis=1, keepdims=True)).reshape(n, t_len, 1), axis=1)
    return out


# every operand layout of the row loops: along a reduced or a kept last axis
def reduced_both_contiguous(x: Tensor, w: Tensor) -> Tensor:
    return np.sum(w[0] * x.reshape(1, 7), axis=1)


def reduced_second_repeated(x: Tensor, w: Tensor) -> Tensor:
    return np.sum(w[0] * x.reshape(7, 1), axis=1)


def reduced_strided(x: Tensor, w: Tensor) -> Tensor:
    return np.sum(x.reshape(7, 1) * w[:, 1, :].T, axis=1)


def kept_both_contiguous(x: Tensor, w: Tensor) -> Tensor:
    return np.sum(w[:, 0, :] * x, axis=0)


def kept_first_repeated(x: Tensor, w: Tensor) -> Tensor:
    return np.sum(x.reshape(7, 1) * w[0], axis=0)


def kept_second_repeated(x: Tensor, w: Tensor) -> Tensor:
    return np.sum(w[0] * x.reshape(7, 1), axis=0)


def kept_strided(x: Tensor, w: Tensor) -> Tensor:
    return np.sum(w[:, :, 0] * x, axis=0)


def mean_over_two_axes(x: Tensor, w: Tensor) -> Tensor:
    return np.mean(w * x, axis=(0, 2))


PRODUCTS = {f.__name__: f for f in (
    reduced_both_contiguous, reduced_second_repeated, reduced_strided, kept_both_contiguous,
    kept_first_repeated, kept_second_repeated, kept_strided, mean_over_two_axes)}


def summing(product):
    def layer(x: Tensor, w: Tensor, h: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            h = np.tanh(h * 0.5 + product(x[t], w) * 0.1)
        return h
    return layer


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_sum_of_a_product_is_summed_as_it_is_made(monkeypatch, dtype):
    rng = np.random.default_rng(22)
    for size in ((3, 5, 7, 20), (1, 1, 1, 1), (4, 9, 33, 18), (1, 1, 1, 17)):
        n, t_len, h, t_dec = size
        args = (rng.standard_normal((n, t_len, h)).astype(dtype),
                rng.standard_normal((n, t_dec, h)).astype(dtype))
        f = script(attention)
        got = f(*args)
        loops = native_loops(f, *args)
        assert [lp.calls for lp in loops] == ([1] if t_dec > 16 else [])  # short: unrolled
        if loops:
            assert len(loops[0].prog.products) == 2 and len(loops[0].prog.fused) == 2
        want = python_loop_result(monkeypatch, attention, *args)
        assert_same(got[0], want[0], dtype)
        assert_same(tuple(got[1]), tuple(want[1]), dtype)
        f = script(attention_out)
        out, grads = vjp_result(f, args)
        # (the forward that saves values appends views of q: it and the reverse loop stay Python)
        with monkeypatch.context() as m:
            m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
            want_out, want_grads = vjp_result(script(attention_out), args)
        assert_same(tuple(out), tuple(want_out), dtype)
        assert_same(tuple(grads), tuple(want_grads), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_every_layout_of_a_summed_product(monkeypatch, name, dtype):
    rng = np.random.default_rng(23)
    args = (rng.standard_normal((20, 7)).astype(dtype),
            rng.standard_normal((9, 7, 7)).astype(dtype), rng.standard_normal(7).astype(dtype))
    layer = summing(PRODUCTS[name])
    f = script(layer)
    assert_same(f(*args), python_loop_result(monkeypatch, layer, *args), dtype)
    (lp,) = native_loops(f, *args)
    assert lp.calls == 1 and len(lp.prog.products) == 1


def vector_rnn(x: Tensor, h: Tensor, w: Tensor, u: Tensor, v: Tensor) -> Tuple[Tensor, Tensor]:
    """An RNN over one vector per step, as numpy tutorials write it: matrix @ vector, vector @
    matrix, a strided column of a matrix."""
    y = np.zeros(v.shape[1])
    for t in range(x.shape[0]):
        h = np.tanh(w @ h + u[:, t] + x[t] @ v.T)
        y = y + h @ v
    return h, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [(20, 5, 7), (1, 1, 1), (19, 1, 3), (25, 33, 2)],
                         ids=lambda s: "x".join(map(str, s)))
def test_matrix_vector_products_run_natively(monkeypatch, size, dtype):
    steps, n, m = size
    rng = np.random.default_rng(24)
    x, h, w, u, v = (rng.standard_normal(s) * 0.5 for s in ((steps, m), (n,), (n, n), (n, steps),
                                                          (n, m)))
    w /= np.sqrt(n)  # contracting: rounding does not grow step by step
    args = tuple(a.astype(dtype) for a in (x, h, w, u, v))
    f = script(vector_rnn)
    got = f(*args)
    assert [lp.calls for lp in native_loops(f, *args)] == ([1] if steps > 16 else [])
    assert_same(got, python_loop_result(monkeypatch, vector_rnn, *args), dtype)
    out, grads = vjp_result(f, args)
    with monkeypatch.context() as mp:
        mp.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want_out, want_grads = vjp_result(script(vector_rnn), args)
    assert_same(tuple(out), tuple(want_out), dtype)
    assert_same(tuple(grads), tuple(want_grads), dtype)


def test_a_loop_holding_a_loop_says_so_first():
    def nested(xs: Tensor, h: Tensor) -> Tensor:
        for i in range(xs.shape[0]):
            k = int(np.arange(xs.shape[0])[i])  # a select the native code would refuse too
            for t in range(xs.shape[1]):
                h = np.tanh(h + xs[k, t])
        return h

    xs, h = np.ones((20, 20, 3)), np.zeros(3)
    f = script(nested)
    np.testing.assert_allclose(f(xs, h), nested(xs, h))
    report = f.explain(xs, h)
    assert "a nested loop" in report


def rnn_layer(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
    for t in range(x.shape[0]):
        h = np.tanh(x[t] + h @ w)
    return h


@pytest.mark.parametrize("blas_threads", [1, 2])
def test_loops_with_large_step_products_split_by_default(monkeypatch, blas_threads):
    """Unset ``RNNSCRIPT_LOOP_THREADS``: a loop whose products reach ``SPLIT_MIN_PRODUCT``
    multiply-adds a step runs one row range per thread a product gets; a smaller one, or one
    thread, runs as one loop."""
    from fuser.cpu import products
    from fuser.cpu.loop import ranges

    monkeypatch.delenv("RNNSCRIPT_LOOP_THREADS", raising=False)
    monkeypatch.setattr(products, "threads", lambda: blas_threads)
    rng = np.random.default_rng(5)
    for hidden, splits in ((16, False), (1024, blas_threads > 1)):
        x, h = rng.standard_normal((20, 8, hidden)), rng.standard_normal((8, hidden))
        w = rng.standard_normal((hidden, hidden)) / hidden
        f = script(rnn_layer)
        assert_same(f(x, h, w), rnn_layer(x, h, w), np.float64)
        (lp,) = native_loops(f, x, h, w)
        (variant,) = lp.variants.values()
        # the product's multiply-adds and the cell's work (an add, and a tanh counting 8)
        assert variant.step_product == 8 * hidden * hidden + 8 * hidden * 9
        assert (variant.step_product >= ranges.SPLIT_MIN_PRODUCT) == (hidden == 1024)
        assert bool(variant.splits) == splits
        if splits:
            assert [len(v) for v in variant.splits.values()] == [2]


def test_a_reverse_loop_at_a_new_length_reuses_its_machine_code():
    """``T - 1 - k`` is a constant of the specialization: read at run time, so the code of the
    loop does not depend on T (a new sequence length compiles and loads nothing)."""
    from fuser.cpu import jit

    def backwards(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
        n = x.shape[0]
        for k in range(n):
            h = np.tanh(x[n - 1 - k] + h @ w)
        return h

    rng = np.random.default_rng(8)
    w = rng.standard_normal((5, 5)) * 0.3
    f = script(backwards)
    for t in (20, 31):
        x, h = rng.standard_normal((t, 3, 5)), rng.standard_normal((3, 5))
        before = (jit.STATS.kernels, jit.STATS.disk_hits)
        assert_same(f(x, h, w), backwards(x, h, w), np.float64)
        (lp,) = native_loops(f, x, h, w)
        assert lp.calls == 1
    assert (jit.STATS.kernels, jit.STATS.disk_hits) == before



@pytest.mark.parametrize("threads", [2, 3, 4])
@pytest.mark.parametrize("batch", [8, 13, 17])
@pytest.mark.parametrize("layer", ["time_lstm_forward", "time_rnn_forward"])
def test_batch_first_slots_split_into_row_ranges(monkeypatch, threads, batch, layer):
    """DLFS2's Time layers keep states batch first (``hs[:, t, :] = h`` into a (B, T, H)
    buffer): a slot along axis 1 takes each row range's rows of it, so the loop runs over row
    ranges at once, with the one loop's results."""
    from benchmarks.realworld_programs import dlfs2_time_rnn as M
    rng = np.random.default_rng(batch + threads)
    xs, wx, wh, b, h = ((rng.standard_normal(s) * 0.5).astype(np.float32) for s in (
        (batch, 20, 5), (5, 4 * 7), (7, 4 * 7), (4 * 7,), (batch, 7)))
    fn = getattr(M, layer)
    if layer == "time_rnn_forward":
        args = (xs, [wx[:, :7], wh[:, :7], b[:7]], h, True)
    else:
        args = (xs, [wx, wh, b], None, None, False)
    got = _split_result(monkeypatch, fn, args, threads, batch)
    assert_same(got, fn(*args), np.float32)


def _split_result(monkeypatch, fn, args, threads, batch):
    """``fn(*args)`` compiled with ``threads`` row ranges, checked to run natively over
    ``min(threads, batch // 4)`` ranges with the Python loop's results."""
    want = python_loop_result(monkeypatch, fn, *args)
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", str(threads))
    f = script(fn)
    got = f(*args)
    (lp,) = native_loops(f, *args)
    assert lp.calls == 1 and lp.prog.batch == batch
    assert [len(r) for v in lp.variants.values() for r in v.splits.values() if r] == \
        [min(threads, batch // 4)]
    assert_same(got, want, np.float32)
    return got


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("batch", [8, 13])
def test_pieces_of_a_steps_rows_split_into_row_ranges(monkeypatch, threads, batch):
    """DLFS2's GRU takes its gates as column slices of the weights and column pieces of a
    step's product: views along a later axis of (B, ...) rows are the same rows, so the loop
    runs over row ranges at once, with the one loop's results."""
    from benchmarks.realworld_programs import dlfs2_gru as M
    rng = np.random.default_rng(batch + threads)
    xs, wx, wh, h = ((rng.standard_normal(s) * 0.5).astype(np.float32) for s in (
        (batch, 20, 5), (5, 3 * 7), (7, 3 * 7), (batch, 7)))
    _split_result(monkeypatch, M.time_gru_forward, (xs, wx, wh, h, True), threads, batch)


def test_a_slice_of_a_steps_rows_along_the_batch_does_not_split(monkeypatch):
    """A step that reads other rows of a value it made (a slice along the batch axis) is not
    row-wise: the loop runs over every row at once."""

    def shifted(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            a = np.tanh(x[t] + h @ w)
            h = np.concatenate((a[1:], a[:1]), axis=0)
        return h

    rng = np.random.default_rng(4)
    x, h = rng.standard_normal((6, 8, 5)), rng.standard_normal((8, 5))
    w = rng.standard_normal((5, 5)) * 0.3
    monkeypatch.setenv("RNNSCRIPT_LOOP_THREADS", "2")
    f = script(shifted)
    assert_same(f(x, h, w), shifted(x, h, w), np.float64)
    for lp in native_loops(f, x, h, w):
        assert lp.prog.batch is None


@pytest.mark.parametrize("awake", [False, True])
def test_loops_with_mid_step_products_split_while_blas_threads_are_awake(monkeypatch, awake):
    """Unset ``RNNSCRIPT_LOOP_THREADS``: a loop whose products take from ``AWAKE_MIN_PRODUCT``
    to ``SPLIT_MIN_PRODUCT`` multiply-adds a step runs as two row ranges only while
    OpenBLAS's threads are awake (``blas.awake``), with the same results either way."""
    from fuser.cpu import blas, products
    from fuser.cpu.loop import ranges

    monkeypatch.delenv("RNNSCRIPT_LOOP_THREADS", raising=False)
    monkeypatch.setattr(products, "threads", lambda: 2)
    monkeypatch.setattr(blas, "awake", lambda again=False: awake)
    rng = np.random.default_rng(6)
    hidden = 128
    x, h = rng.standard_normal((20, 8, hidden)), rng.standard_normal((8, hidden))
    w = rng.standard_normal((hidden, hidden)) / hidden
    f = script(rnn_layer)
    assert_same(f(x, h, w), rnn_layer(x, h, w), np.float64)
    (lp,) = native_loops(f, x, h, w)
    (variant,) = lp.variants.values()
    assert ranges.AWAKE_MIN_PRODUCT <= variant.step_product < ranges.SPLIT_MIN_PRODUCT
    assert bool(variant.splits) == (awake and ranges.can_share())


def test_blas_threads_are_awake_just_after_a_shared_job(monkeypatch):
    """``blas.awake``: a job shared with OpenBLAS's threads that ended within ``AWAKE_S``, and
    no lag backoff in force."""
    from fuser.cpu import blas

    clock = [100.0]  # the jobs' own clock: a preempted test must not see the threads asleep
    monkeypatch.setattr(blas.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(blas, "_last", [clock[0]])
    monkeypatch.setattr(blas, "_lag", {"skip": 0, "backoff": 0, "streak": 0})
    assert blas.awake()
    blas._lag["skip"] = 3
    assert not blas.awake()
    blas._lag["skip"] = 0
    blas._last[0] -= 2 * blas.AWAKE_S
    assert not blas.awake()
    assert blas.awake(again=True)  # the caller's own last run ended just now


def test_jobs_declined_for_a_lag_backoff_count_toward_it(monkeypatch):
    """Each job ``blas.awake`` declines while shared jobs back off is one the backoff sends
    elsewhere: the backoff ends though no job runs ``blas.share`` (a program whose only
    shareable jobs are mid-sized loops had stayed on one thread for good after one lag)."""
    from fuser.cpu import blas

    monkeypatch.setattr(blas, "_last", [time.perf_counter() + 3600])  # awake throughout
    monkeypatch.setattr(blas, "_lag", {"skip": 3, "backoff": 3, "streak": 0})
    assert [blas.awake() for _ in range(5)] == [False, False, False, True, True]
    blas._last[0] = -1.0  # asleep: nothing declined for the backoff, nothing counted
    blas._lag["skip"] = 2
    assert not blas.awake()
    assert blas._lag["skip"] == 2


def test_a_loop_run_again_at_once_splits_into_row_ranges(monkeypatch):
    """A loop with a mid-sized step product (``AWAKE_MIN_PRODUCT`` to ``SPLIT_MIN_PRODUCT``)
    whose last run ended ``blas.AWAKE_S`` ago or less (a loop inside a Python loop) runs as
    row ranges though no shared job woke OpenBLAS's threads; its first run does not; results
    equal the Python loop's."""
    from fuser.cpu import blas, products
    from fuser.cpu.loop import ranges

    monkeypatch.delenv("RNNSCRIPT_LOOP_THREADS", raising=False)
    monkeypatch.setattr(products, "threads", lambda: 2)
    monkeypatch.setattr(blas, "_last", [-1.0])
    monkeypatch.setattr(blas, "_lag", {"skip": 0, "backoff": 0, "streak": 0})
    monkeypatch.setattr(blas, "share", lambda *args: False)  # (keeps _last asleep)
    if not ranges.can_share():
        pytest.skip("no thread server to run row ranges on")
    rng = np.random.default_rng(7)
    hidden = 128
    x, h = rng.standard_normal((20, 8, hidden)), rng.standard_normal((8, hidden))
    w = rng.standard_normal((hidden, hidden)) / hidden
    f = script(rnn_layer)
    f(x, h, w)  # compiles
    (lp,) = native_loops(f, x, h, w)
    (variant,) = lp.variants.values()
    assert ranges.AWAKE_MIN_PRODUCT <= variant.step_product < ranges.SPLIT_MIN_PRODUCT
    lp.ended = -1.0
    variant.splits.clear()
    assert_same(f(x, h, w), rnn_layer(x, h, w), np.float64)
    assert not variant.splits  # the first of a burst: one loop
    assert_same(f(x, h, w), rnn_layer(x, h, w), np.float64)
    assert variant.splits.get(2)  # run again at once: two ranges


def preallocated_rows(x: Tensor, h0: Tensor, W: Tensor, U: Tensor) -> Tensor:
    # Karpathy's style: a buffer made before the loop, the previous row read back
    H = np.zeros((x.shape[0], h0.shape[0], h0.shape[1]), dtype=x.dtype)
    for t in range(x.shape[0]):
        prevh = H[t - 1] if t > 0 else h0
        H[t] = np.tanh(x[t] @ W + prevh @ U)
    return H


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("T,B", [(9, 5), (1, 3), (2, 1)])
def test_a_preallocated_buffers_gradient_loops_run_natively(monkeypatch, dtype, T, B):
    """The branch on ``t > 0`` is peeled before differentiation, the reverse step makes the row
    index ``t - 1`` from its counter and a row copied before the write runs as a kernel: both
    loops of the gradient run natively (they ran as Python), with the Python loops' results."""
    rng = np.random.default_rng(T)
    args = tuple(rng.standard_normal(s).astype(dtype) * 0.5
                 for s in ((T, B, 4), (B, 6), (4, 6), (6, 6)))
    f = script(preallocated_rows)
    out, grads = vjp_result(f, args)
    loops = gradient_loops(f)
    if T > 2:  # (two steps: the loop over the trips after the first is unrolled)
        assert len(loops) == 2 and all(lp.calls == 1 for lp in loops)
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
        want_out, want_grads = vjp_result(script(preallocated_rows), args)
    assert_same(tuple(out), tuple(want_out), dtype)
    assert_same(tuple(grads), tuple(want_grads), dtype)
