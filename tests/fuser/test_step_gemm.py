"""The recurrent step's GEMM (``fuser.cpu.stepgemm``): the compiled kernel equals numpy's product
for every shape class it handles (row blocks of 8, 4, 2, 1; two-vector, one-vector and
masked panels; row chunks; leading dimensions wider than the matrix), and a native loop
that calls it gives what the same loop gives through BLAS, forward and backward."""


import ctypes

import numpy as np
import pytest

from benchmarks.fastrnns import cells
from fuser.cpu import products, stepgemm
from fuser.cpu.loop import ranges
from script import Tensor, script, vjp


def _product(dtype, m, k, n, pad=(0, 0, 0), seed=0, pack=False):
    """C = A @ B through the kernel as a native loop calls it (one task, k in one block), A, B
    and C being views into wider arrays (``pad`` extra columns each), C prefilled with NaN;
    with ``pack``, each panel of B copied to a pack first (prefilled with NaN: lanes past B's
    last column must not reach C); returns (C, A @ B in float64)."""
    rng = np.random.default_rng(seed)
    wa = rng.standard_normal((m, k + pad[0])).astype(dtype)
    wb = rng.standard_normal((k, n + pad[1])).astype(dtype)
    wc = np.full((m, n + pad[2]), np.nan, dtype)
    a, b, c = wa[:, :k], wb[:, :n], wc[:, :n]
    item = np.dtype(dtype).itemsize
    counter = np.zeros(1, np.int64)
    room = np.full(max(k, 1) * 2 * stepgemm.lanes(item), np.nan, dtype) if pack else None
    stepgemm.kernel(dtype == np.float64)(
        m, n, k, a.ctypes.data, wa.strides[0] // item, 1, b.ctypes.data, wb.strides[0] // item, 1,
        c.ctypes.data, wc.strides[0] // item, k, None if room is None else room.ctypes.data,
        counter.ctypes.data, max(n, 1))
    if pad[2]:
        assert np.isnan(wc[:, n:]).all()  # nothing written beyond C's columns
    return c, a.astype(np.float64) @ b.astype(np.float64)


SHAPES = [(1, 1, 1), (8, 64, 256), (8, 256, 64), (3, 5, 7), (13, 17, 50), (9, 64, 33),
          (32, 100, 200), (5, 3, 16), (2, 7, 31), (15, 1, 47), (7, 33, 8), (64, 40, 96),
          (14, 9, 40), (20, 5, 33)]


@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_kernel_equals_the_product(dtype, m, k, n, pack):
    got, want = _product(dtype, m, k, n, pack=pack)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))


@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_leading_dimensions_wider_than_the_matrices(dtype, pack):
    got, want = _product(dtype, 11, 19, 37, pad=(3, 5, 7), seed=1, pack=pack)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m", [8, 9, 14, 15, 11])
def test_a_rows_values_do_not_depend_on_its_block(dtype, m):
    """Each item of C is one sum over k in order, whichever block of rows computes it
    (``ROW_SCHEDULE``): the rows of one call equal, bit for bit, each row computed alone."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, 37)).astype(dtype)
    b = rng.standard_normal((37, 45)).astype(dtype)

    def product(rows):
        c, counter = np.empty((rows.shape[0], 45), dtype), np.zeros(1, np.int64)
        stepgemm.kernel(dtype == np.float64)(
            rows.shape[0], 45, 37, rows.ctypes.data, 37, 1, b.ctypes.data, 45, 1, c.ctypes.data,
            45, 37, None, counter.ctypes.data, 45)
        return c

    whole = product(a)
    for i in range(m):
        np.testing.assert_array_equal(whole[i], product(a[i:i + 1].copy())[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_row_count_writes_each_row_once(dtype):
    """Blocks of 6, 4, 2 and 1 rows (``ROW_SCHEDULE``) cover any number of rows: C starts as
    NaN, so a row no block computes fails."""
    for m in range(1, 27):
        got, want = _product(dtype, m, 5, 19, seed=m)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"m={m}")


def test_rows_in_several_chunks():
    # k large enough that a chunk of A (CHUNK_BYTES) holds fewer rows than m
    k = stepgemm.CHUNK_BYTES // 4 // 16  # 16 float32 rows per chunk
    got, want = _product(np.float32, 37, k, 40, seed=2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_no_rows_writes_nothing():
    c = np.full((2, 3), np.nan, np.float32)
    a, b = np.ones((2, 4), np.float32), np.ones((4, 3), np.float32)
    counter = np.zeros(1, np.int64)
    stepgemm.kernel(False)(0, 3, 4, a.ctypes.data, 4, 1, b.ctypes.data, 3, 1, c.ctypes.data,
                              3, 4, None, counter.ctypes.data, 3)
    assert np.isnan(c).all()


# -- products outside loops: any strides, k in blocks, tasks shared by threads ------------------
def _operands(dtype, m, k, n, layout, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    if "At" in layout:  # A given as a transposed view (a weight gradient's dG.T)
        a = np.ascontiguousarray(a.T).T
    if "Bt" in layout:  # B given as a transposed view (x @ w.T): its slabs are packed
        b = np.ascontiguousarray(b.T).T
    if "step" in layout:  # every other row and column: strides that are not the sizes
        a = np.repeat(np.repeat(a, 2, 0), 2, 1)[::2, ::2]
        b = np.repeat(np.repeat(b, 2, 0), 2, 1)[::2, ::2]
    return a, b


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["", "At", "Bt", "At Bt", "step"])
@pytest.mark.parametrize("m,k,n", [(37, 700, 300), (130, 260, 70), (5, 1030, 33), (64, 9, 1),
                                   (64, 300, 1030)])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_matmul_equals_numpy(monkeypatch, dtype, layout, m, k, n, threads):
    monkeypatch.setattr(products, "threads", lambda: threads)
    monkeypatch.setattr(products, "POOL_MIN_PRODUCT", 0)  # shared even when small
    a, b = _operands(dtype, m, k, n, layout)
    got = products.matmul(a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert got.dtype == dtype and got.shape == (m, n)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))


def test_matmul_leaves_what_it_does_not_take_to_numpy():
    a = np.ones((3, 4), np.float32)
    assert products.matmul(a, np.ones((4, 2), np.float64)).dtype == np.float64  # mixed dtypes
    assert products.matmul(np.ones((2, 3, 4)), np.ones((4, 2))).shape == (2, 3, 2)  # a batch
    assert products.matmul(np.ones(4), np.ones((4, 2))).shape == (2,)  # a vector
    rng = np.random.default_rng(4)  # another byte order: the kernel reads native floats only
    a = rng.standard_normal((64, 300)).astype(">f4")
    b = rng.standard_normal((300, 64)).astype(">f4")
    np.testing.assert_allclose(products.matmul(a, b), a.astype(np.float64) @ b, rtol=1e-4,
                               atol=1e-3)
    with pytest.raises(ValueError):  # numpy's own error for mismatched sizes
        products.matmul(a, np.ones((5, 2), np.float32))


def test_matmul_for_takes_large_float_products_only():
    assert products.matmul_for(64, 2048, 512, "float32") is products.matmul
    assert products.matmul_for(8, 16, 16, "float32") is None
    assert products.matmul_for(64, 2048, 512, "int64") is None
    assert products.matmul_for(64, 2048, 512, "float64") is products.matmul


def test_which_products_pack_their_panels():
    assert stepgemm.packs(64, 1024 * 4)  # rows 4 KB apart: same L1 sets, a page each
    assert stepgemm.packs(32, 2048 * 4)
    assert not stepgemm.packs(8, 1024 * 4)  # too few blocks of rows to pay the copy back
    assert not stepgemm.packs(64, 256 * 4)  # rows in one page: in place is as fast
    assert not stepgemm.packs(32, 768 * 4)


def test_rows_that_alias_in_cache_are_packed():
    a, b = _operands(np.float32, 64, 300, 1024, "")
    plan = products._Plan.of((a, b), None, False)
    _, per_pack = plan.block(1)
    assert per_pack == min(300, products.KC) * 2 * stepgemm.lanes(4)  # a panel of a k block
    np.testing.assert_allclose(products.matmul(a, b), a.astype(np.float64) @ b,
                               rtol=1e-5, atol=1e-3)


def test_which_products_it_takes():
    assert stepgemm.use(8, 256, 64, 4)
    assert stepgemm.use(64, 2048, 512, 4)
    assert not stepgemm.use(stepgemm.MAX_ROWS + 1, 256, 64, 4)  # a large product: BLAS
    assert not stepgemm.use(8, 256, 1 << 20, 8)  # its panel of B would not stay in cache
    assert not stepgemm.use(0, 256, 64, 4)


def _gradient_loops(f):
    """The native loops of ``f``'s training forward and backward."""
    found = []
    for cg in f.__dict__.get("_gradient_cache", {}).values():
        for fn in (cg.forward, cg.backward):
            found += [v for k, v in fn.__globals__.items() if k.startswith("_loop")]
    return found


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("T,B,I,H", [(9, 8, 6, 16), (9, 1, 4, 9), (9, 13, 5, 7), (9, 33, 5, 256)])
def test_a_native_lstm_layer_through_the_kernel_equals_blas(monkeypatch, dtype, T, B, I, H):  # noqa: E741
    packs = stepgemm.packs
    monkeypatch.setattr(ranges, "THREADED_MIN_PRODUCT", 1 << 62)  # every product the kernel's
    rng = np.random.default_rng(3)
    scale = 0.5 * min(1.0, 4 / np.sqrt(H))  # a recurrence that does not amplify rounding
    args = tuple((rng.standard_normal(s) * scale).astype(dtype) for s in
                 ((T, B, I), (B, H), (B, H), (4 * H, I), (4 * H, H), (4 * H,), (4 * H,)))
    results, packed = {}, []
    for setting in ("1", "0", "in place"):
        monkeypatch.setenv("RNNSCRIPT_STEP_GEMM", "0" if setting == "0" else "1")
        monkeypatch.setattr(stepgemm, "packs", lambda m, row, depth=0, keep=setting == "1":
                            packed.append(keep and packs(m, row, depth)) or packed[-1])
        f = script(cells.lstm_layer)
        out, back = vjp(f, *args, argnums=(1, 2, 3, 4, 5, 6))
        grads = back(tuple(np.ones_like(o) for o in out))
        loops = _gradient_loops(f)
        assert len(loops) == 2 and all(loop.calls for loop in loops)  # forward and reverse
        double = dtype == np.float64
        # a row (B=1) times the transposed weight runs the matrix-vector kernel on its storage
        kernels = [loop.fns[2 + double] or loop.fns[4 + double] for loop in loops]
        # the forward's hx @ w_hh.T is (B, H) x (H, 4H), the reverse loop's (B, 4H) x (4H, H):
        # the kernel takes each where its panel fits (with AVX-512 at H=256 the second's does
        # not)
        itemsize = np.dtype(dtype).itemsize
        takes = [stepgemm.use(B, 4 * H, H, itemsize), stepgemm.use(B, H, 4 * H, itemsize)]
        assert [bool(k) for k in kernels] == [setting != "0" and t for t in takes]
        results[setting] = (out, grads)
    assert any(packed) == (B == 33)  # rows of hx @ w_hh.T 4 KB apart or more: panels packed
    tol = 1e-5 if dtype == np.float32 else 1e-10
    for a, b in zip(results["1"][0], results["0"][0]):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    for a, b in zip(results["1"][1][1:], results["0"][1][1:]):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * 10)
    for a, b in zip(results["1"][0] + results["1"][1][1:],
                    results["in place"][0] + results["in place"][1][1:]):
        np.testing.assert_array_equal(a, b)  # a packed panel is summed in the same order


def weight_gradient(g: Tensor, x: Tensor, w: Tensor) -> Tensor:
    """A hand-written backward's weight gradient: per step a transposed A times a row-major B
    (``g[t].T @ x[t]``: (H, B) x (B, I)), scaled by a step-dependent factor."""
    gw = np.zeros((g.shape[2], x.shape[2]), dtype=g.dtype)
    for t in range(g.shape[0]):
        gw += g[t].T.dot(x[t]) * w[t]
    return gw


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("T,B,H,I", [(17, 512, 10, 61), (18, 7, 13, 33), (17, 1, 5, 3)])
def test_a_transposed_a_in_a_native_loop_runs_the_kernel(monkeypatch, dtype, T, B, H, I):  # noqa: E741
    rng = np.random.default_rng(8)
    g = rng.standard_normal((T, B, H)).astype(dtype)
    x = rng.standard_normal((T, B, I)).astype(dtype)
    w = rng.standard_normal((T, I)).astype(dtype)
    results = {}
    for setting in ("1", "0"):
        monkeypatch.setenv("RNNSCRIPT_STEP_GEMM", setting)
        f = script(weight_gradient)
        results[setting] = f(g, x, w)
        (loop,) = [v for k, v in f.specialization(g, x, w).fn.__globals__.items()
                   if k.startswith("_loop")]
        assert loop.calls and bool(loop.fns[2 + (dtype == np.float64)]) == (setting == "1")
    want = weight_gradient(g.astype(np.float64), x.astype(np.float64), w.astype(np.float64))
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for got in results.values():
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_a_forked_child_gets_its_own_threads(monkeypatch):
    import os
    import signal
    monkeypatch.setattr(products, "threads", lambda: 2)
    monkeypatch.setattr(products, "POOL_MIN_PRODUCT", 0)
    a, b = _operands(np.float32, 40, 300, 200, "")
    want = products.matmul(a, b)  # the parent's helper threads exist now
    pid = os.fork()
    if pid == 0:  # the child: the product must finish (and be right) without them
        signal.alarm(60)  # a hang ends the child with SIGALRM
        ok = np.allclose(products.matmul(a, b), want, rtol=1e-5, atol=1e-4)
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_products_into_a_given_array():
    a, b = _operands(np.float32, 20, 300, 70, "Bt", seed=4)
    out = np.full((20, 70), np.nan, np.float32)
    assert products.matmul(a, b, out=out) is out
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
    h, w = _operands(np.float32, 8, 64, 256, "", seed=5)
    step_out = np.full((8, 256), np.nan, np.float32)
    assert products.step(h, w, step_out) is step_out
    np.testing.assert_allclose(step_out, h @ w, rtol=1e-5, atol=1e-5)
    overlapping = np.zeros((20, 300), np.float32)  # out sharing memory with an operand: numpy's
    got = products.matmul(overlapping[:, :20], np.eye(20, dtype=np.float32), out=None)
    np.testing.assert_array_equal(got, np.zeros((20, 20)))



@pytest.mark.parametrize("summed", [False, True])
def test_a_given_out_overlapping_an_operand_gets_numpys_product(summed):
    rng = np.random.default_rng(9)
    buf = rng.standard_normal(2000).astype(np.float32)
    a = buf[:600].reshape(20, 30)
    b = rng.standard_normal((30, 20)).astype(np.float32)
    for at in (580, 0, 200):  # out over a's end, over its start (out = a's rows), inside it
        out = buf[at:at + 400].reshape(20, 20)
        want = (a @ b) * (2 if summed else 1)
        got = (products.matmul_sum(a, b, a, b, out=out) if summed
               else products.matmul(a, b, out=out))
        assert got is out
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
        buf[:] = rng.standard_normal(2000).astype(np.float32)
    separate = np.full((20, 20), np.nan, np.float32)  # next to a, sharing no byte with it
    whole = np.concatenate([a.ravel(), separate.ravel()])
    a2, out2 = whole[:600].reshape(20, 30), whole[600:].reshape(20, 20)
    assert products.matmul(a2, b, out=out2) is out2
    np.testing.assert_allclose(out2, a2 @ b, rtol=1e-5, atol=1e-4)

# -- the matrix-vector kernel: a product whose B is one column ---------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,inc", [(200, 200, 1), (13, 37, 1), (9, 5, 3), (1, 1, 1),
                                     (17, 100, 2), (8, 16, 1), (23, 0, 1)])
def test_matrix_vector_kernel_equals_the_product(dtype, m, k, inc):
    rng = np.random.default_rng(6)
    wide = rng.standard_normal((m, k + 3)).astype(dtype)  # rows wider than the matrix
    xs = rng.standard_normal(max(k * inc, 1)).astype(dtype)
    y = np.full(m, np.nan, dtype)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
                          ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)(
        stepgemm.gemv_address(dtype == np.float64))
    fn(m, k, wide.ctypes.data, k + 3, xs.ctypes.data, inc, y.ctypes.data)
    want = wide[:, :k].astype(np.float64) @ xs[:k * inc:inc].astype(np.float64)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, want, rtol=tol, atol=tol * np.sqrt(max(k, 1)))


def echo_state(W: Tensor, x: Tensor, T: int) -> Tensor:
    s = np.zeros((T, 40))
    for n in range(1, T):
        s[n, :] = np.tanh(np.dot(W, s[n - 1]) + x[n])
    return s


def test_a_native_loop_of_matrix_vector_products_uses_the_kernel(monkeypatch):
    rng = np.random.default_rng(7)
    W, x = rng.standard_normal((40, 40)) * 0.2, rng.standard_normal((30, 40))
    f = script(echo_state)
    got = f(W, x, 30)
    np.testing.assert_allclose(got, echo_state(W, x, 30), rtol=1e-12, atol=1e-12)
    spec = f.specialization(W, x, 30)
    (loop,) = [v for k, v in spec.fn.__globals__.items() if k.startswith("_loop")]
    assert loop.calls == 1 and loop.fns[5]  # ran natively, through the float64 gemv


def test_a_large_product_in_a_loop_that_stays_python_runs_the_kernel(monkeypatch):
    """A loop left to Python calls the kernel for its large products (BLAS's threads would
    spin for a busy core), with numpy's results."""
    monkeypatch.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")

    def f(x: Tensor, w: Tensor) -> Tensor:
        for _ in range(40):  # not unrolled
            x = np.tanh(x @ w)
        return x

    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 512)).astype(np.float32)
    w = (rng.standard_normal((512, 512)) * 0.05).astype(np.float32)
    compiled = script(f)
    code = compiled.code_for(x, w)
    loop = code[code.index("for "):]
    assert "_gemm" in loop and "np.dot" not in loop
    np.testing.assert_allclose(compiled(x, w), f(x, w), rtol=1e-5, atol=1e-5)


def test_data_address_is_the_arrays_data_pointer():
    from fuser.cpu.kernel import data_address

    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for a in (base, base[1:], base[:, 2:].T, base[::2, ::3], np.float64(2.0) * base,
              np.empty(0), np.ones(()), np.ma.masked_array(base)):
        assert data_address(a) == a.ctypes.data


# -- products with a transposed weight and a vector: run on the weight's own storage ----------
def column_steps(W: Tensor, U: Tensor, h: Tensor, x: Tensor) -> Tensor:
    for t in range(x.shape[0]):  # h: (H, 1); x[t]: (K, 1)
        h = np.tanh(np.dot(W.T, h) + np.dot(U.T, x[t]))
    return h


def row_steps(W: Tensor, U: Tensor, h: Tensor, x: Tensor) -> Tensor:
    for t in range(x.shape[0]):  # h: (1, H) or (H,); x[t]: (1, K) or (K,)
        h = np.tanh(h @ W.T + x[t] @ U.T)
    return h


def _transposed_case(fn, dtype, H, K, column, vector=False, seed=8):
    rng = np.random.default_rng(seed)
    W = (rng.standard_normal((H, H)) * 0.3).astype(dtype)
    U = (rng.standard_normal((K, H) if column else (H, K)) * 0.3).astype(dtype)
    if vector:
        h, x = rng.standard_normal(H).astype(dtype), rng.standard_normal((30, K)).astype(dtype)
    elif column:
        h, x = rng.standard_normal((H, 1)).astype(dtype), rng.standard_normal((30, K, 1))
    else:
        h, x = rng.standard_normal((1, H)).astype(dtype), rng.standard_normal((30, 1, K))
    return W, U, h, x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn,column,vector", [(column_steps, True, False),
                                              (column_steps, True, True),
                                              (row_steps, False, False),
                                              (row_steps, False, True)])
@pytest.mark.parametrize("H,K", [(40, 40), (13, 5), (1, 3), (33, 70)])
def test_a_transposed_weight_times_a_vector_runs_natively_without_a_copy(dtype, fn, column,
                                                                         vector, H, K):
    args = _transposed_case(fn, dtype, H, K, column, vector)
    f = script(fn)
    got = f(*args)
    want = fn(*(a.astype(np.float64) for a in args))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert "ops.contiguous(" not in f.code_for(*args)  # the view is multiplied as it is
    spec = f.specialization(*args)
    (loop,) = [v for k, v in spec.fn.__globals__.items() if k.startswith("_loop")]
    double = dtype == np.float64
    # a column or vector on the right: stepgemm's kernel on the weight's storage (fns[2/3]);
    # a row on the left: the matrix-vector kernel on it (fns[4/5]); a 1 x 1 weight is not
    # transposed at all (the matrix-vector kernel)
    assert loop.calls == 1 and loop.fns[(2 if column and H > 1 else 4) + double]


@pytest.mark.parametrize("fn,column", [(column_steps, True), (row_steps, False)])
def test_gradients_through_a_transposed_weight_times_a_vector(monkeypatch, fn, column):
    args = _transposed_case(fn, np.float64, 9, 4, column)
    _, backward = vjp(script(fn), *args)
    got = backward(np.ones_like(args[2]))
    monkeypatch.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
    _, python_backward = vjp(script(fn), *args)
    for g, w in zip(got, python_backward(np.ones_like(args[2]))):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    eps, k = 1e-6, (0, 1)  # one weight's finite difference
    W = args[0]
    up, down = W.copy(), W.copy()
    up[k] += eps
    down[k] -= eps
    fd = (fn(up, *args[1:]).sum() - fn(down, *args[1:]).sum()) / (2 * eps)
    np.testing.assert_allclose(got[0][k], fd, rtol=1e-6)


def test_a_native_loop_compiles_its_code_before_it_asks_for_the_kernels(monkeypatch):
    """A native loop's code calls the step kernels through a table, so its compile does not
    wait for theirs (which may be under way on another thread): their addresses are asked
    for once its code is compiled, and the loop gives numpy's values through them."""
    from fuser.cpu import jit
    compile_ir = jit.compile_ir
    events = []
    real_address = stepgemm.address

    def address(double):
        events.append("kernel")
        return real_address(double)

    def compiled(text, symbols, *args, **kwargs):
        if symbols[0].startswith("loop_"):
            events.append("code")
        return compile_ir(text, symbols, *args, **kwargs)
    monkeypatch.setattr(stepgemm, "address", address)
    monkeypatch.setattr(jit, "compile_ir", compiled)
    rng = np.random.default_rng(3)
    h = rng.standard_normal((7, 48)).astype(np.float32)
    w = (rng.standard_normal((48, 48)) * 0.2).astype(np.float32)

    def steps(h: Tensor, w: Tensor, n: int) -> Tensor:
        for _ in range(n):
            h = np.tanh(h @ w) + h * 0.5
        return h
    f = script(steps)
    want = h
    for _ in range(9):
        want = np.tanh(want @ w) + want * 0.5
    np.testing.assert_allclose(f(h, w, 9), want, rtol=1e-5, atol=1e-5)
    (loop,) = [v for k, v in f.specialization(h, w, 9).fn.__globals__.items()
               if k.startswith("_loop")]
    assert loop.calls == 1 and loop.fns[2]  # native, through the float32 kernel
    assert "kernel" in events and "code" in events[:events.index("kernel")]


def test_the_largest_products_are_numpys_into_the_given_array(monkeypatch):
    """A product of ``NUMPY_MIN_PRODUCT`` multiply-adds or more is numpy's, written to the
    array its site is given, at every call (its site never plans or binds it); one just below
    is the kernel's."""
    rng = np.random.default_rng(12)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((96, 200), (200, 300)))
    out = np.empty((96, 300), np.float32)
    monkeypatch.setattr(products, "NUMPY_MIN_PRODUCT", 96 * 200 * 300)
    site = products.Site(False)
    for _ in range(4):
        assert site(a, b, out=out) is out
        np.testing.assert_array_equal(out, np.matmul(a, b))
    assert site.seen is None and site.last is None
    np.testing.assert_array_equal(site(a, b), a @ b)
    monkeypatch.setattr(products, "NUMPY_MIN_PRODUCT", 96 * 200 * 300 + 1)
    site = products.Site(False)
    for _ in range(3):
        assert site(a, b, out=out) is out
        np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)
    assert site.seen is not None
