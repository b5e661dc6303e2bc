"""Compiled CPU fusion kernels equal numpy eager: dtypes, broadcasting, chunks, strides, special
values, accuracy of the polynomial math functions, and random graphs (hypothesis)."""

import os
import subprocess
import sys
import threading
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuser
from fuser.cpu import compile_group
from fuser.cpu.kernel import cache_size
from ir import FLOAT, Graph, TensorType, infer_types


@pytest.fixture(autouse=True, scope="module")
def _private_disk_cache(tmp_path_factory):
    """Compiled kernels go to a temporary cache directory, not the user's."""
    saved = os.environ.get("RNNSCRIPT_CACHE_DIR")
    os.environ["RNNSCRIPT_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernel-cache"))
    yield
    if saved is None:
        del os.environ["RNNSCRIPT_CACHE_DIR"]
    else:
        os.environ["RNNSCRIPT_CACHE_DIR"] = saved


# -- building graphs and a numpy reference ---------------------------------------------------------
def emit(g: Graph, kind: str, *inputs, name=None):
    """Insert ``kind(*inputs)`` with the output types its rule gives; the output value(s)."""
    node = g.insert(kind, inputs)
    for t in infer_types(node):
        node.add_output(t, name)
    return node.outputs[0] if len(node.outputs) == 1 else node.outputs


def T(dtype, *shape):
    return TensorType(dtype, tuple(shape))


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


NUMPY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "minimum": np.minimum, "maximum": np.maximum, "neg": np.negative, "abs": np.abs,
    "square": np.square, "reciprocal": np.reciprocal, "relu": lambda x: np.maximum(x, 0),
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "floor": np.floor, "ceil": np.ceil,
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "tanh": np.tanh, "sigmoid": _sigmoid,
    "softplus": lambda x: np.logaddexp(0, x), "sign": np.sign, "pow": np.power,
    "clip": np.clip, "where": np.where, "astype": lambda x, d: x.astype(d),
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_not": np.logical_not,
    "chunk": lambda x, n, axis: tuple(np.split(x, n, axis)),
    "split": lambda x, n, axis: tuple(np.split(x, n, axis)),
    "matmul": np.matmul, "transpose": lambda x, axes: np.transpose(x, axes),
}
"""numpy's eager version of each op the tests use, by op name."""


def evaluate(graph: Graph, *args):
    """Run ``graph`` eagerly with numpy (FusionGroups through their compiled kernel)."""
    env = dict(zip(graph.inputs, args))
    for node in graph.nodes():
        inputs = [env[v] for v in node.inputs]
        if node.kind == "prim::Constant":
            result = node.attrs["value"]
        elif node.kind == "prim::FusionGroup":
            result = compile_group(node.subgraph)(*inputs)
        elif node.kind == "prim::TupleConstruct":
            result = tuple(inputs)
        else:
            with np.errstate(all="ignore"):
                result = NUMPY[node.kind.split("::")[1]](*inputs)
        env.update(zip(node.outputs, result if len(node.outputs) > 1 else [result]))
    outs = [env[v] for v in graph.outputs]
    return outs[0] if len(outs) == 1 else tuple(outs)


def assert_same(got, want, rtol, atol=0.0):
    """Same shape and dtype; inf/nan in the same places; finite values close."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    if got.dtype == bool:
        np.testing.assert_array_equal(got, want)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=atol)


def check(graph, *args, rtol=2e-6, atol=1e-6):
    """Compile ``graph`` and compare with numpy on ``args``; returns the kernel."""
    kernel = compile_group(graph)
    got = kernel(*args)
    with np.errstate(all="ignore"):
        want = evaluate(graph, *args)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol)
    else:
        assert_same(got, want, rtol, atol)
    return kernel


def lstm_tail(dtype="float32", B=4, H=8) -> Graph:
    """The LSTM cell's elementwise part after the matmuls (the chunk included)."""
    g = Graph("lstm_tail")
    mm1, mm2 = g.add_input(T(dtype, B, 4 * H), "mm1"), g.add_input(T(dtype, B, 4 * H), "mm2")
    b_ih, b_hh = g.add_input(T(dtype, 4 * H), "b_ih"), g.add_input(T(dtype, 4 * H), "b_hh")
    cx = g.add_input(T(dtype, B, H), "cx")
    gates = emit(g, "tensor::add", emit(g, "tensor::add", emit(g, "tensor::add", mm1, b_ih), mm2),
                 b_hh)
    i, f, c, o = emit(g, "tensor::chunk", gates, g.constant(4), g.constant(1))
    i, f, o = (emit(g, "tensor::sigmoid", v) for v in (i, f, o))
    c = emit(g, "tensor::tanh", c)
    cy = emit(g, "tensor::add", emit(g, "tensor::mul", f, cx), emit(g, "tensor::mul", i, c))
    hy = emit(g, "tensor::mul", o, emit(g, "tensor::tanh", cy))
    g.add_output(hy)
    g.add_output(cy)
    return g


def rand(rng, shape, dtype="float32", scale=2.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# -- fixed cases -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("B,H", [(4, 8), (1, 1), (1, 64), (64, 1), (3, 17)])
def test_lstm_tail_matches_numpy(dtype, B, H):
    rng = np.random.default_rng(B * 100 + H)
    g = lstm_tail(dtype, B, H)
    args = [rand(rng, v.type.shape, dtype) for v in g.inputs]
    tol = 2e-6 if dtype == "float32" else 1e-13
    check(g, *args, rtol=tol, atol=tol)


def test_kernel_is_reused_across_sizes():
    rng = np.random.default_rng(0)
    first = compile_group(lstm_tail("float32", 4, 8))
    before = cache_size()
    second = compile_group(lstm_tail("float32", 16, 32))
    assert second is first and cache_size() == before
    g = lstm_tail("float32", 16, 32)
    check(g, *[rand(rng, v.type.shape) for v in g.inputs])


def test_chunk_of_an_input_reads_offsets_of_noncontiguous_arrays():
    rng = np.random.default_rng(1)
    g = lstm_tail("float32", 5, 6)
    args = [rand(rng, v.type.shape) for v in g.inputs]
    # the same values laid out transposed, sliced and reversed: strides, not copies
    args[0] = np.asfortranarray(args[0])
    args[1] = rand(rng, (5, 48))[:, ::2]
    args[2] = args[2][::-1].copy()[::-1]
    args[4] = rand(rng, (6, 5)).T
    check(g, *args)


def test_non_element_strides_are_handled():
    rng = np.random.default_rng(2)
    g = Graph()
    a, b = g.add_input(T("float64", 3, 4)), g.add_input(T("float64", 3, 4))
    g.add_output(emit(g, "tensor::mul", emit(g, "tensor::exp", a), b))
    raw = np.zeros(3 * 4 * 8 + 1, np.uint8)[1:].view(np.float64).reshape(3, 4)  # unaligned
    raw[...] = rand(rng, (3, 4), "float64")
    check(g, raw, rand(rng, (3, 4), "float64"), rtol=1e-13)


@pytest.mark.parametrize("shapes", [
    [(6, 5), (5,)], [(6, 5), (6, 1)], [(6, 5), ()], [(1, 5), (6, 1)],
    [(2, 3, 4), (3, 1)], [(2, 3, 4), (2, 1, 4)], [(4, 3, 2, 5), (3, 1, 5)], [(7,), (1,)],
])
def test_broadcasting(shapes):
    rng = np.random.default_rng(3)
    g = Graph()
    a, b = (g.add_input(T("float32", *s)) for s in shapes)
    g.add_output(emit(g, "tensor::add", emit(g, "tensor::tanh", a), emit(g, "tensor::mul", b, a)))
    check(g, *[rand(rng, s) for s in shapes])


def test_scalars_inputs_and_constants():
    rng = np.random.default_rng(4)
    g = Graph()
    x = g.add_input(T("float32", 3, 4))
    s = g.add_input(FLOAT, "s")
    y = emit(g, "tensor::mul", emit(g, "tensor::add", x, s), g.constant(0.25))
    g.add_output(emit(g, "tensor::sub", y, g.constant(3)))
    kernel = check(g, rand(rng, (3, 4)), 1.5)
    x0 = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(kernel(x0, -1.0), np.full((3, 4), -3.0, np.float32))
    assert kernel(x0, 2.0).dtype == np.float32  # weak Python scalars keep float32


def test_zero_size_and_zero_dim():
    g = Graph()
    a, b = g.add_input(T("float32", 0, 4)), g.add_input(T("float32", 4))
    g.add_output(emit(g, "tensor::exp", emit(g, "tensor::add", a, b)))
    out = compile_group(g)(np.empty((0, 4), np.float32), np.ones(4, np.float32))
    assert out.shape == (0, 4) and out.dtype == np.float32
    g0 = Graph()
    a, b = g0.add_input(T("float64")), g0.add_input(T("float64"))
    g0.add_output(emit(g0, "tensor::tanh", emit(g0, "tensor::add", a, b)))
    check(g0, np.array(0.25), np.array(0.5), rtol=1e-14)


def test_dtype_mixing_casts_comparisons_and_where():
    rng = np.random.default_rng(5)
    g = Graph()
    a, b = g.add_input(T("float32", 4, 6)), g.add_input(T("float64", 6))
    mixed = emit(g, "tensor::add", a, b)                     # float64 by promotion
    back = emit(g, "tensor::astype", mixed, g.constant("float32"))
    mask = emit(g, "tensor::gt", a, g.constant(0.0))
    picked = emit(g, "tensor::where", mask, back, emit(g, "tensor::neg", a))
    both = emit(g, "tensor::logical_and", mask, emit(g, "tensor::lt", b, g.constant(1.0)))
    g.add_output(picked)
    g.add_output(both)
    g.add_output(mixed)
    check(g, rand(rng, (4, 6)), rand(rng, (6,), "float64"), rtol=1e-6)


def test_bool_inputs_and_outputs():
    g = Graph()
    m, x = g.add_input(T("bool", 5)), g.add_input(T("float32", 5))
    g.add_output(emit(g, "tensor::logical_not", emit(g, "tensor::logical_or", m,
                                                     emit(g, "tensor::ge", x, g.constant(0.5)))))
    check(g, np.array([1, 0, 0, 1, 0], bool), np.array([0, 1, 0.2, 0, 0.7], np.float32))


UNARY = ["neg", "abs", "square", "reciprocal", "relu", "sqrt", "rsqrt", "floor", "ceil", "exp",
         "log", "log1p", "tanh", "sigmoid", "softplus", "sign"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", UNARY)
def test_unary_ops_with_special_values(op, dtype):
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e30, -1e30, 0.5, -0.5, 3.0,
                -3.0, 80.0, -80.0, 1e-45, -1, 1]
    x = np.array(specials, dtype)
    g = Graph()
    a = g.add_input(T(dtype, len(specials)))
    g.add_output(emit(g, "tensor::" + op, a))
    check(g, x, rtol=3e-6 if dtype == "float32" else 1e-14, atol=1e-30)


@pytest.mark.parametrize("op", ["minimum", "maximum", "add", "div", "pow"])
def test_binary_ops_with_nan_and_inf(op):
    vals = np.array([0.0, -1.5, 2.0, np.inf, -np.inf, np.nan], np.float64)
    a, b = np.meshgrid(vals, vals)
    g = Graph()
    x, y = g.add_input(T("float64", 6, 6)), g.add_input(T("float64", 6, 6))
    rhs = g.constant(2) if op == "pow" else y
    g.add_output(emit(g, "tensor::" + op, emit(g, "tensor::neg", x), rhs))
    check(g, a, b, rtol=1e-15)


def test_clip_with_open_side():
    g = Graph()
    x = g.add_input(T("float32", 7))
    lo = emit(g, "tensor::clip", x, g.constant(-1.0), g.constant(None))
    g.add_output(emit(g, "tensor::clip", emit(g, "tensor::exp", lo), g.constant(0.5),
                      g.constant(2.0)))
    check(g, np.array([-3, -1, 0, 0.2, 1, np.nan, np.inf], np.float32))


def test_outputs_are_fresh_and_inputs_untouched():
    rng = np.random.default_rng(6)
    g = lstm_tail()
    args = [rand(rng, v.type.shape) for v in g.inputs]
    saved = [a.copy() for a in args]
    kernel = compile_group(g)
    h1, c1 = kernel(*args)
    h2, _ = kernel(*args)
    assert h1 is not h2 and not np.shares_memory(h1, h2)
    for a, s in zip(args, saved):
        np.testing.assert_array_equal(a, s)


def test_concurrent_first_calls_compile_once():
    g = Graph()
    a = g.add_input(T("float64", 9))
    g.add_output(emit(g, "tensor::mul", emit(g, "tensor::sigmoid", a), g.constant(7.25)))
    kernels, errors = [], []

    def work():
        try:
            kernels.append(compile_group(g))
        except Exception as e:  # surfaced below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and all(k is kernels[0] for k in kernels)
    assert len(kernels[0].variants) == 1


def test_kernel_is_vectorized_and_calls_no_libm():
    asm = compile_group(lstm_tail()).assembly()
    assert "zmm" in asm or "ymm" in asm
    assert "expf" not in asm and "tanhf" not in asm


def test_switch_turns_fusion_off(monkeypatch):
    assert fuser.is_enabled()
    with fuser.disabled():
        assert not fuser.is_enabled()
    assert fuser.is_enabled()
    monkeypatch.setenv("RNNSCRIPT_FUSION", "0")
    assert not fuser.is_enabled()
    fuser.set_enabled(True)
    try:
        assert fuser.is_enabled()
    finally:
        fuser._enabled = None


# -- the guarded fast call path -------------------------------------------------------------------
def test_repeated_calls_with_changing_layouts_stay_correct():
    """After the first call, calls go through a native guard for that call's layout; every other
    layout, dtype, type or argument count must still take the general path."""
    rng = np.random.default_rng(11)
    g = lstm_tail("float32", 4, 8)
    kernel = compile_group(g)
    base = [rand(rng, v.type.shape) for v in g.inputs]

    def variants():
        yield base
        yield base  # same layout again: the guarded path
        yield [np.asfortranarray(base[0]), *base[1:]]  # same shape, other strides
        yield [rand(rng, (9, 32)), rand(rng, (9, 32)), base[2], base[3], rand(rng, (9, 8))]
        yield base
        yield [a.astype(np.float64) for a in base]  # converted to float32 by the general path
        yield [base[0].tolist(), *base[1:]]  # not an array
        yield [base[0].view(np.recarray).view(type("Sub", (np.ndarray,), {})), *base[1:]]
        yield [base[0].astype(">f4"), *base[1:]]  # equal dtype, other byte order
        yield [*base[:4], base[4][None]]  # another rank (broadcast against the others)
        yield base

    for args in variants():
        got = kernel(*args)
        want = evaluate(g, *[np.asarray(a, np.float32) for a in args])  # the kernel's dtype
        for gv, wv in zip(got, want):
            assert_same(gv, wv, 2e-6, 2e-6)


def test_guard_accepts_only_the_layout_it_was_made_for():
    rng = np.random.default_rng(12)
    g = lstm_tail("float32", 4, 8)
    kernel = compile_group(g)
    args = tuple(rand(rng, v.type.shape) for v in g.inputs)
    kernel(*args)
    guarded, guard, shape, dtypes, _ = kernel._fast
    outs = tuple(np.empty(shape, d) for d in dtypes)
    assert guarded(args, outs, guard) == 0
    want_hy, want_cy = evaluate(g, *args)
    assert_same(outs[0], want_hy, 2e-6, 2e-6)
    assert_same(outs[1], want_cy, 2e-6, 2e-6)
    others = [args[:4], (*args, args[0]), (args[0].T.copy().T, *args[1:]),
              (args[0].astype(np.float64), *args[1:]), (args[0][:2], *args[1:]),
              (list(args[0]), *args[1:]), (args[0], args[1], 1.0, args[3], args[4])]
    for bad in others:
        before = [o.copy() for o in outs]
        assert guarded(bad, outs, guard) == 1
        for o, b in zip(outs, before):
            np.testing.assert_array_equal(o, b)  # rejected without writing anything


def test_scalar_arguments_of_any_number_type():
    g = Graph()
    x = g.add_input(T("float32", 3, 4))
    s = g.add_input(FLOAT, "s")
    g.add_output(emit(g, "tensor::mul", x, s))
    kernel = compile_group(g)
    x0 = np.arange(12, dtype=np.float32).reshape(3, 4)
    for scale in (1.5, 2, -0.25, True, np.float64(3.0), np.float32(0.5), 1.5):
        got = kernel(x0, scale)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, x0 * np.float32(float(scale)))


def test_repeated_layout_takes_the_guarded_native_path(monkeypatch):
    """The point of the guard: a call with the last call's layout skips the Python-side planning
    (speed is measured in benchmarks/fuser_cell.py, not here)."""
    rng = np.random.default_rng(13)
    g = lstm_tail("float32", 8, 64)
    kernel = compile_group(g)
    args = tuple(rand(rng, v.type.shape) for v in g.inputs)
    want = kernel(*args)

    def planned(*a, **k):
        raise AssertionError("the general path ran for a layout the guard accepts")

    monkeypatch.setattr(kernel, "_call_planned", planned)
    for got, expected in zip(kernel(*args), want):
        np.testing.assert_array_equal(got, expected)


# -- the disk cache --------------------------------------------------------------------------------
_CHILD = """
import sys, numpy as np
from fuser.cpu import compile_group, jit
from ir import Graph, TensorType, infer_types
g = Graph()
x = g.add_input(TensorType("float32", (5,)))
node = g.insert("tensor::exp", [x])
node.add_output(infer_types(node)[0])
g.add_output(node.outputs[0])
got = compile_group(g)(np.linspace(-2, 2, 5, dtype=np.float32))
assert np.allclose(got, np.exp(np.linspace(-2, 2, 5)), rtol=2e-6)
print(jit.STATS.kernels, jit.STATS.disk_hits)
"""


def _child(cache: Path, disk: str = "1") -> tuple[int, int]:
    """Compile a small kernel in a new process; (kernels compiled, kernels loaded from disk)."""
    env = dict(os.environ, RNNSCRIPT_CACHE_DIR=str(cache), RNNSCRIPT_DISK_CACHE=disk)
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, cwd=root, check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1])


def test_disk_cache_is_reused_by_a_new_process(tmp_path):
    assert _child(tmp_path) == (1, 0)
    entries = list((tmp_path / "cpu-kernels").glob("*.o"))
    assert len(entries) == 1
    assert _child(tmp_path) == (0, 1)
    assert not [p for p in entries[0].parent.iterdir() if p.name.startswith(".tmp")]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip", "empty"])
def test_corrupt_disk_cache_entries_are_rebuilt(tmp_path, damage):
    _child(tmp_path)
    (entry,) = (tmp_path / "cpu-kernels").glob("*.o")
    data = entry.read_bytes()
    damaged = {"truncate": data[: len(data) // 2], "garbage": os.urandom(len(data)),
               "flip": data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:], "empty": b""}
    entry.write_bytes(damaged[damage])
    assert _child(tmp_path) == (1, 0)  # compiled again (and correct: the child checks)
    assert entry.read_bytes() == data  # and the entry rewritten
    assert _child(tmp_path) == (0, 1)


def test_disk_cache_can_be_turned_off(tmp_path):
    assert _child(tmp_path, disk="0") == (1, 0)
    assert not (tmp_path / "cpu-kernels").exists()


def test_unwritable_cache_directory_only_means_no_caching(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert _child(blocker) == (1, 0)
    assert _child(blocker) == (1, 0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_saturating_functions_reach_their_limits_exactly(dtype):
    """numpy's tanh is exactly +-1 far out, sigmoid exactly 0 / 1."""
    x = np.array([20.0, -20.0, 40.0, -40.0, 1e30, -1e30, np.inf, -np.inf], dtype)
    g = Graph()
    a = g.add_input(T(dtype, len(x)))
    g.add_output(emit(g, "tensor::tanh", a))
    g.add_output(emit(g, "tensor::sigmoid", a))
    th, sig = compile_group(g)(x)
    np.testing.assert_array_equal(th, np.sign(x))
    np.testing.assert_array_equal(sig[2::2], np.ones(3, dtype))
    np.testing.assert_array_equal(sig[5::2], np.zeros(2, dtype))
    np.testing.assert_array_equal(th, np.tanh(x))


def test_float32_exp_scales_with_one_vector_instruction():
    """exp's 2**n scaling is llvm.ldexp: vscalefps on AVX-512 hosts, never a libm call."""
    g = Graph()
    g.add_output(emit(g, "tensor::exp", g.add_input(T("float32", 64))))
    asm = compile_group(g).assembly()
    assert "call" not in asm.split("_guarded:")[0].split("_body:")[-1]
    if "+avx512f" in llvm.get_host_cpu_features().flatten():
        assert "vscalefps" in asm and "zmm" in asm


# -- accuracy sweep --------------------------------------------------------------------------------
def _sweep() -> np.ndarray:
    tiny = np.geomspace(1e-45, 1e-3, 20000)
    huge = np.geomspace(1e-3, 3e38, 40000)
    dense = np.linspace(-100, 100, 400001)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 88.72, 88.73, -103.9, -104.0]
    return np.concatenate([tiny, -tiny, huge, -huge, dense, specials]).astype(np.float32)


REFERENCE64 = {"exp": np.exp, "log": np.log, "tanh": np.tanh,
               "sigmoid": lambda x: 1 / (1 + np.exp(-x))}


@pytest.mark.parametrize("op", sorted(REFERENCE64))
def test_float32_accuracy_sweep(op):
    x = _sweep()
    g = Graph()
    g.add_output(emit(g, "tensor::" + op, g.add_input(T("float32", len(x)))))
    got = compile_group(g)(x).astype(np.float64)
    with np.errstate(all="ignore"):
        want = REFERENCE64[op](x.astype(np.float64))
        want32 = want.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want32))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want32))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want32))
    fin = np.isfinite(want32)
    err = np.abs(got[fin] - want[fin])
    ok = (err <= 2e-6 * np.abs(want[fin])) | (err <= 1e-7)
    bad = x[fin][~ok][:5]
    assert ok.all(), f"{op} off at x={bad}: got {got[fin][~ok][:5]}, want {want[fin][~ok][:5]}"


@pytest.mark.parametrize("op", sorted(REFERENCE64))
def test_float64_accuracy_sweep(op):
    x = np.concatenate([np.linspace(-750, 750, 300001), np.geomspace(1e-300, 1e300, 20000),
                        -np.geomspace(1e-300, 1e300, 20000)])
    g = Graph()
    g.add_output(emit(g, "tensor::" + op, g.add_input(T("float64", len(x)))))
    got = compile_group(g)(x)
    with np.errstate(all="ignore"):
        want = REFERENCE64[op](x)
    assert_same(got, want, rtol=4e-15, atol=1e-300)


# -- random graphs (differential testing) ----------------------------------------------------------
SHAPES = [(3, 5), (1, 5), (5,), (3, 1), (), (2, 3, 5), (1,)]
BINARY = ["add", "sub", "mul", "minimum", "maximum", "div", "where"]
SAFE_UNARY = ["neg", "abs", "relu", "tanh", "sigmoid", "exp", "log", "sqrt", "square", "floor"]


def _apply_unary(g, op, x):
    """Unary ops wrapped to stay well-conditioned: the comparison tests the kernel, not
    cancellation."""
    if op == "exp":
        x = emit(g, "tensor::mul", emit(g, "tensor::tanh", x), g.constant(4.0))
    elif op == "log":
        x = emit(g, "tensor::sigmoid", x)
    elif op == "sqrt":
        x = emit(g, "tensor::add", emit(g, "tensor::abs", x), g.constant(1.0))
    elif op in ("square", "floor"):
        x = emit(g, "tensor::tanh", x)
    return emit(g, "tensor::" + op, x)


def _apply_binary(g, op, x, y):
    if op == "div":
        return emit(g, "tensor::div", x, emit(g, "tensor::add", emit(g, "tensor::abs", y),
                                              g.constant(1.0)))
    if op == "where":
        return emit(g, "tensor::where", emit(g, "tensor::gt", x, y), x, y)
    if op == "mul":
        return emit(g, "tensor::mul", x, emit(g, "tensor::tanh", y))
    return emit(g, "tensor::" + op, x, y)


@st.composite
def random_graphs(draw):
    """A random elementwise graph: inputs of broadcastable shapes and dtypes, a chunked input or
    none, Python-scalar inputs and constants, several outputs; with its arguments."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    g = Graph("random")
    dtypes = draw(st.sampled_from([("float32",), ("float64",), ("float32", "float64")]))
    values, args = [], []
    for k in range(draw(st.integers(1, 4))):
        shape, dtype = SHAPES[draw(st.integers(0, len(SHAPES) - 1))], dtypes[k % len(dtypes)]
        values.append(g.add_input(T(dtype, *shape)))
        args.append(rand(rng, shape, dtype))
    if draw(st.booleans()):  # an input chunked along its last axis
        pieces = draw(st.sampled_from([2, 3]))
        whole = g.add_input(T(dtypes[0], 3, 5 * pieces))
        args.append(rand(rng, (3, 5 * pieces), dtypes[0]))
        values.extend(emit(g, "tensor::chunk", whole, g.constant(pieces), g.constant(-1)))
    if draw(st.booleans()):
        values.append(g.add_input(FLOAT))
        args.append(float(rng.standard_normal()))
    tensors = [v for v in values if isinstance(v.type, TensorType)]
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            x = tensors[draw(st.integers(0, len(tensors) - 1))]
            tensors.append(_apply_unary(g, draw(st.sampled_from(SAFE_UNARY)), x))
        else:
            x = values[draw(st.integers(0, len(values) - 1))]
            y = tensors[draw(st.integers(0, len(tensors) - 1))]
            op = draw(st.sampled_from(BINARY))
            if op == "where" and not isinstance(x.type, TensorType):
                op = "add"
            tensors.append(_apply_binary(g, op, x, y))
        values.append(tensors[-1])
    made = tensors[len(tensors) - 1:]
    shape = made[0].type.shape
    extra = [v for v in tensors if v.type.shape == shape and not v.is_param
             and v is not made[0]]
    for v in made + extra[:draw(st.integers(0, 2))]:
        g.add_output(v)
    if not all(v.type.shape == shape for v in g.outputs) or all(v.is_param for v in g.outputs):
        return draw(random_graphs())
    return g, args


def _check_random(case, layout_seed):
    g, args = case
    rng = np.random.default_rng(layout_seed)
    laid_out = []
    for a in args:  # some inputs arrive as non-contiguous views with the same values
        if isinstance(a, np.ndarray) and a.ndim >= 2 and rng.random() < 0.3:
            a = np.asfortranarray(a)
        laid_out.append(a)
    single = any(getattr(v.type, "dtype", None) == "float32" for v in g.inputs)
    tol = 1e-4 if single else 1e-11
    check(g, *laid_out, rtol=tol, atol=tol)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(), st.integers(0, 1000))
def test_random_graphs_match_numpy(case, layout_seed):
    _check_random(case, layout_seed)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graphs(), st.integers(0, 1000))
def test_random_graphs_match_numpy_many(case, layout_seed):
    _check_random(case, layout_seed)
