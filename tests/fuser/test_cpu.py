"""Compiled CPU fusion kernels equal numpy eager: dtypes, broadcasting, chunks, strides, special
values, accuracy of the polynomial math functions, and random graphs (hypothesis)."""

import ctypes
import os
import re
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
from fuser.cpu.codegen import FIXED_STRIDE
from fuser.cpu.kernel import cache_size
from ir import FLOAT, Graph
from tests.fuser.reference import check, evaluate, rand, random_graphs
from tests.helpers import ROOT, T, assert_same, emit
from tests.programs.graphs import lstm_tail


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


def test_large_inputs_read_at_a_run_time_stride_are_gathered_first():
    # an input read at a stride the kernel has no variant for (more than MAX_FIXED_STRIDE
    # items): copied to C order before the call (loads at a run-time stride do not vectorize)
    rng = np.random.default_rng(3)
    g = lstm_tail("float32", 32, 128)
    args = [rand(rng, v.type.shape) for v in g.inputs]
    args[0] = rand(rng, (32, 512, 10))[:, :, 1]  # (32, 512), column stride 10
    args[4] = rand(rng, (32, 128, 12))[:, :, 0]
    kernel = compile_group(g).site()
    check(g, *args)
    for _ in range(2):  # the plan, then the plan cached for the layout
        got = kernel(*args)
        want = kernel(*[np.ascontiguousarray(a) for a in args])
        for x, y in zip(got, want):
            np.testing.assert_array_equal(x, y)
    (plan,) = [p for key, p in kernel.plans.items() if key[0][1] == args[0].strides]
    assert plan.gather == (0, 4)
    contiguous = [np.ascontiguousarray(a) for a in args]
    kernel(*contiguous)
    (plan,) = [p for key, p in kernel.plans.items() if key[0][1] == contiguous[0].strides]
    assert plan.gather == ()  # (nothing to copy)


@pytest.mark.parametrize("stride", [2, 3, 4, 8])
def test_inputs_read_at_a_small_stride_compile_it_in(stride):
    # a gate of a packed layout, x.reshape(B, H, 4)[:, :, k]: a variant with the stride
    # compiled in (an interleaved group the vectorizer reads whole), the values as numpy's
    rng = np.random.default_rng(stride)
    g = lstm_tail("float64", 5, 24)
    args = [rand(rng, v.type.shape, "float64") for v in g.inputs]
    args[0] = rand(rng, (5, 96, stride), "float64")[:, :, stride - 1]
    args[4] = rand(rng, (5, 24, stride), "float64")[:, :, 0]
    kernel = compile_group(g).site()
    check(g, *args, rtol=1e-13, atol=1e-13)
    kernel(*args)
    (plan,) = [p for key, p in kernel.plans.items() if key[0][1] == args[0].strides]
    assert FIXED_STRIDE + stride in plan.classes and plan.gather == ()


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


def test_loops_are_predicated_only_where_masks_are_cheap():
    """The loop remainder is folded into masked iterations only with AVX-512; on AVX2 hosts a
    masked load or store is microcode, so kernels run plain vector loops with an epilogue."""
    from fuser.cpu import jit
    asm = compile_group(lstm_tail()).assembly()
    if llvm.get_host_cpu_features().get("avx512f"):
        assert jit._llvm_options()
    else:
        assert jit._llvm_options() == ()
        assert "vmaskmov" not in asm and "vpmaskmov" not in asm


def _vector_widths(asm: str) -> set[str]:
    """The registers (zmm, ymm) of the vector arithmetic in ``asm``."""
    arithmetic = re.compile(r"\tv(add|sub|mul|div|fn?madd\d+)p[sd]\t[^\n]*%(zmm|ymm)")
    return {m.group(2) for m in arithmetic.finditer(asm)}


def test_native_loops_use_the_widest_vectors_and_kernels_called_from_python_not(monkeypatch):
    """On an AVX-512 core a native loop (a whole recurrence in one call) is vectorized in
    512-bit vectors; a kernel called between Python statements in LLVM's choice for the core,
    256 bits on most Intel cores (512-bit arithmetic lowers the clock for what runs after it)."""
    from fuser.cpu import jit
    from script import Tensor, script

    calls = []
    real = jit.compile_ir

    def spy(text, symbols, *args, **kwargs):
        calls.append((symbols[0], kwargs.get("wide", False)))
        return real(text, symbols, *args, **kwargs)

    monkeypatch.setattr(jit, "compile_ir", spy)

    def layer(x: Tensor, h: Tensor, w: Tensor) -> Tensor:
        for t in range(x.shape[0]):
            h = np.tanh(h @ w + x[t] * 0.371 + 0.193)
        return np.tanh(h) * 0.617

    rng = np.random.default_rng(5)
    args = (rng.standard_normal((30, 4, 24)), rng.standard_normal((4, 24)),
            rng.standard_normal((24, 24)) * 0.2)
    np.testing.assert_allclose(script(layer)(*args), layer(*args), rtol=1e-12)
    loops = [wide for name, wide in calls if name.startswith("loop_")]
    kernels = [wide for name, wide in calls if name.startswith("fused_")]
    assert loops and all(loops) and kernels and not any(kernels)
    text = compile_group(lstm_tail()).llvm_ir()
    features = llvm.get_host_cpu_features()
    if features.get("avx512f"):
        assert _vector_widths(jit.assembly(text)) == {"ymm"}
        assert _vector_widths(jit.assembly(text, wide=True)) == {"zmm"}
    elif features.get("avx2"):
        assert _vector_widths(jit.assembly(text)) == _vector_widths(
            jit.assembly(text, wide=True)) == {"ymm"}


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
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, cwd=ROOT, check=True,
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


# -- compiling beside the compiler ---------------------------------------------------------------
_PREFETCH_CHILD = """
import os, sys, threading, numpy as np
from fuser.cpu import jit, stepgemm
from script import Tensor, script
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "fuser"))
from test_step_gemm import weight_gradient
started = []
real = jit.in_background
jit.in_background = stepgemm.in_background = lambda key, fn: (started.append(key), real(key, fn))
T, B, H, I = 17, 3, 4, 5
rng = np.random.default_rng(0)
g, x = rng.standard_normal((T, B, H)).astype(np.float32), rng.standard_normal((T, B, I))
w = rng.standard_normal((T, I)).astype(np.float32)
got = script(weight_gradient)(g, x.astype(np.float32), w)
want = weight_gradient(g.astype(float), x, w.astype(float))
assert np.allclose(got, want, rtol=1e-4, atol=1e-4)
pid = os.fork()  # a fork after (or during) a compile on a thread: the child still compiles
if pid == 0:
    ok = np.allclose(script(weight_gradient)(g.astype(float), x, w.astype(float)), want)
    os._exit(0 if ok else 1)
assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
print(started)
"""


def _run_child(code: str, tmp_path) -> subprocess.CompletedProcess:
    """``code`` run by a new Python with an empty kernel cache of its own."""
    env = dict(os.environ, RNNSCRIPT_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out


def test_a_function_with_products_compiles_their_kernel_on_a_thread(tmp_path):
    out = _run_child(_PREFETCH_CHILD, tmp_path)
    assert "('stepgemm', False)" in out.stdout  # float32: started before the passes ran


def test_a_background_compile_runs_once_per_key_and_its_errors_are_left_to_the_caller():
    from fuser.cpu import jit
    calls = []
    done = threading.Event()

    def fails():
        calls.append(1)
        done.set()
        raise RuntimeError("reported where the kernel is needed")

    key = ("test", object())
    jit.in_background(key, fails)
    assert done.wait(30)
    jit.in_background(key, fails)  # already started: nothing runs
    assert calls == [1]


def test_a_text_compiled_without_unrolling_is_kept_apart():
    import hashlib

    from fuser.cpu import jit
    text = ("define i64 @rnnscript_test_sum(i64 %n) {\nentry:\n  br label %loop\nloop:\n"
            "  %i = phi i64 [0, %entry], [%j, %loop]\n  %s = phi i64 [0, %entry], [%t, %loop]\n"
            "  %t = add i64 %s, %i\n  %j = add i64 %i, 1\n  %c = icmp slt i64 %j, %n\n"
            "  br i1 %c, label %loop, label %done\ndone:\n  ret i64 %t\n}\n")
    (address,) = jit.compile_ir(text, ["rnnscript_test_sum"], unroll=False)
    assert ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(address)(10) == 45
    assert jit.compile_ir(text, ["rnnscript_test_sum"], unroll=False) == [address]
    loaded = jit._jit().loaded
    assert hashlib.sha256((text + jit.NO_UNROLL).encode()).hexdigest() in loaded
    assert hashlib.sha256(text.encode()).hexdigest() not in loaded  # an unrolled build's key


def _sum_text(name: str, scale: int) -> str:
    """A loop summing ``scale * i`` for i below n (its own text per name and scale)."""
    return (f"define i64 @{name}(i64 %n) {{\nentry:\n  br label %loop\nloop:\n"
            "  %i = phi i64 [0, %entry], [%j, %loop]\n  %s = phi i64 [0, %entry], [%t, %loop]\n"
            f"  %u = mul i64 %i, {scale}\n  %t = add i64 %s, %u\n  %j = add i64 %i, 1\n"
            "  %c = icmp slt i64 %j, %n\n  br i1 %c, label %loop, label %done\ndone:\n"
            "  ret i64 %t\n}\n")


def test_texts_compile_at_once_on_several_threads(tmp_path, monkeypatch):
    """Each thread compiles its own texts (their optimizer and code generator run outside
    llvmlite's lock, at once) and a text every thread asks for: each gets working code, the
    shared text is compiled once."""
    from fuser.cpu import jit, stepgemm
    monkeypatch.setenv("RNNSCRIPT_CACHE_DIR", str(tmp_path))
    tag = os.urandom(6).hex()
    big = stepgemm.ir_text(False, stepgemm.lanes(4)) + f"; {tag}\n"  # a long compile beside
    shared = _sum_text(f"rnnscript_test_shared_{tag}", 3)
    results, errors = {}, []
    before = jit.STATS.kernels

    def work(k: int) -> None:
        try:
            if k == 0:
                jit.compile_ir(big, [stepgemm.symbol(False)], unroll=False)
            for r in range(3):
                name = f"rnnscript_test_t{k}_{r}_{tag}"
                (address,) = jit.compile_ir(_sum_text(name, k + r + 1), [name])
                results[k, r] = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(address)(10)
            (address,) = jit.compile_ir(shared, [f"rnnscript_test_shared_{tag}"])
            results[k, "shared"] = address
        except Exception as e:  # surfaced below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k in range(6):
        for r in range(3):
            assert results[k, r] == 45 * (k + r + 1)
    assert len({results[k, "shared"] for k in range(6)}) == 1
    assert jit.STATS.kernels - before == 1 + 6 * 3 + 1


def test_a_compile_leaves_llvm_to_other_threads_while_it_optimizes(tmp_path, monkeypatch):
    """While one thread's optimizer runs, another thread's LLVM call goes through (llvmlite
    holds one lock around every call; the optimizer runs outside it)."""
    from fuser.cpu import jit, stepgemm
    monkeypatch.setenv("RNNSCRIPT_CACHE_DIR", str(tmp_path))
    started, finished = threading.Event(), threading.Event()
    real = jit._unlocked

    def watched(name):
        fn = real(name)
        if name != "LLVMPY_RunNewModulePassManager":
            return fn

        def run(*args):
            started.set()
            try:
                return fn(*args)
            finally:
                finished.set()
        return run
    monkeypatch.setattr(jit, "_unlocked", watched)
    text = stepgemm.ir_text(False, stepgemm.lanes(4)) + f"; {os.urandom(6).hex()}\n"
    t = threading.Thread(target=jit.compile_ir, args=(text, [stepgemm.symbol(False)]),
                         kwargs=dict(unroll=False, speed=3))
    t.start()
    assert started.wait(60)
    llvm.get_host_cpu_name()  # a locked llvmlite call
    done_first = not finished.is_set()
    t.join()
    assert finished.is_set() and done_first


_FORK_WHILE_COMPILING = """
import os, threading, ctypes
from fuser.cpu import jit, stepgemm
import time
import llvmlite.binding as llvm
text = stepgemm.ir_text(False, stepgemm.lanes(4))
jit._jit()
t = threading.Thread(target=jit.compile_ir, args=(text, [stepgemm.symbol(False)]),
                     kwargs=dict(unroll=False))
t.start()
while not jit._compiling:  # the compile is under way
    time.sleep(0.001)
held = threading.Event()
def hold():  # another thread inside an LLVM call (as one disposing of its target machine)
    with llvm.ffi.lib._lock:
        held.set()
        time.sleep(0.3)
holder = threading.Thread(target=hold)
holder.start()
held.wait()
pid = os.fork()  # waits for both: the child must inherit neither
if pid == 0:
    jit.compile_ir(text, [stepgemm.symbol(False)], unroll=False)
    name = "rnnscript_test_child"
    text2 = ("define i64 @" + name + "(i64 %n) {\\n  %m = mul i64 %n, 2\\n  ret i64 %m\\n}\\n")
    (address,) = jit.compile_ir(text2, [name])
    os._exit(0 if ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(address)(21) == 42 else 1)
t.join()
holder.join()
assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
print("ok")
"""


def test_a_process_forked_during_a_compile_compiles(tmp_path):
    assert _run_child(_FORK_WHILE_COMPILING, tmp_path).stdout.strip() == "ok"


_INVALID_IR = """
import gc
from fuser.cpu import jit
bad = ("define i32 @rnnscript_test_bad(i32 %a) {\\nentry:\\n  br label %b\\nb:\\n  ret i32 %x\\n"
       "c:\\n  %x = add i32 %a, 1\\n  br label %b\\n}\\n")
try:
    jit.compile_ir(bad, ["rnnscript_test_bad"])
except RuntimeError as e:
    err = e
del err
gc.collect()  # the module of the failed compile, disposed of once
good = "define i32 @rnnscript_test_ok%d(i32 %%a) {\\n  %%r = add i32 %%a, %d\\n  ret i32 %%r\\n}\\n"
for i in range(20):
    jit.compile_ir(good % (i, i), ["rnnscript_test_ok%d" % i])
print("ok")
"""


def test_text_that_fails_verification_raises_and_compiling_goes_on(tmp_path):
    assert _run_child(_INVALID_IR, tmp_path).stdout.strip() == "ok"
