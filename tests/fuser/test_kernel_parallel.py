"""Fusion kernels whose calls run their slabs on more than one thread (``fuser.cpu.parallel``):
the same values, bit for bit, as the serial call, for every layout a plan can have."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from fuser.cpu import blas, compile_group, parallel, pool
from fuser.cpu.kernel import Kernel
from ir import Graph
from tests.fuser.reference import evaluate, groups, rand
from tests.fuser.test_horizontal import check_cat, gate_grads
from tests.helpers import T, assert_same, emit
from tests.programs.graphs import lstm_tail


def _openblas_threads() -> int:
    """The threads OpenBLAS's server has started, the caller's included (0: none known)."""
    g = blas.gemm()
    return ctypes.c_int.from_address(g.started).value if g is not None and g.started else 0


@pytest.fixture
def shared(monkeypatch):
    """Every plan parallel on two threads (on a machine of one CPU too), OpenBLAS's taken as
    awake; per job offered to them, whether they ran it."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(pool, "cpus", lambda: 2)
    monkeypatch.setattr(blas, "awake", lambda: True)
    monkeypatch.setattr(parallel, "threads", lambda: 2)
    monkeypatch.setitem(blas._lag, "skip", 0)  # no backoff left over from earlier lags
    monkeypatch.setitem(blas._lag, "backoff", 0)
    calls = []
    share = blas.share

    def counted(fn, arg, count, kind=None):
        ran = share(fn, arg, count, kind)
        calls.append(ran)
        return ran

    monkeypatch.setattr(blas, "share", counted)
    return calls


def _fresh(graph: Graph) -> Kernel:
    """The graph's kernel with no plans yet (the cached one keeps the plans of earlier tests,
    made under other settings)."""
    kernel = compile_group(graph)
    kernel.plans.clear()
    kernel._fast = None
    return kernel


def _unsplit(kernel: Kernel, args: list) -> tuple:
    """The kernel's outputs from a plan of these arguments that is not split, run serially."""
    arrays = [np.asarray(args[i], dtype) for i, dtype in kernel.array_slots]
    plan = kernel.make_plan([(a.shape, a.strides, a.itemsize) for a in arrays], split=False)
    assert not plan.parallel
    outs = [np.empty(s, d) for s, d in zip(plan.shapes, kernel.out_dtypes)]
    for p in plan.pointers:
        plan.fn((*arrays, *outs), p, kernel._scalars(tuple(args)))
    return tuple(outs)


def _same_both_ways(graph: Graph, args: list, rtol: float = 2e-6) -> Kernel:
    """The first call (the general path: the split plan's pieces in turn), the second and third
    (guarded: the pieces as a parallel job) give the bits of a plan that is not split, and
    numpy's values."""
    kernel = _fresh(graph)
    first = kernel(*args)
    plan = next(iter(kernel.plans.values()))
    assert plan.parallel and kernel._fast is not None, "a parallel plan with a guard"
    second = kernel(*args)
    third = kernel.into(tuple(None for _ in kernel.out_dtypes), *args)
    whole = _unsplit(kernel, args)
    with np.errstate(all="ignore"):
        want = evaluate(graph, *args)
    for got in (first, second, third):
        for g, u, w in zip(*(x if isinstance(x, tuple) else (x,) for x in (got, whole, want))):
            np.testing.assert_array_equal(g, u)
            assert_same(g, w, rtol, 1e-6)
    return kernel


def _ran_on_another_thread(shared: list) -> None:
    """A job was handed to OpenBLAS's threads (and taken) where it has started some."""
    assert shared, "a job was offered to another thread"
    if _openblas_threads() >= 2:
        assert True in shared


def _unary_binary(shape_a, shape_b, dtype="float32") -> Graph:
    g = Graph()
    a, b = g.add_input(T(dtype, *shape_a)), g.add_input(T(dtype, *shape_b))
    g.add_output(emit(g, "tensor::tanh", emit(g, "tensor::add", a, b)))
    return g


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape_a,shape_b", [
    ((64, 256), (256,)),      # rows split
    ((3, 70), (70,)),         # fewer rows than tasks
    ((1000,), (1000,)),       # one flat row, split along its columns (not multiples of 16)
    ((7, 9, 33), (9, 33)),    # flat after collapsing
    ((5, 4, 33), (4, 1)),     # slabs, rows split within each
    ((9, 3, 40), (3, 40)),    # more slabs than tasks
    ((17,), ()),              # too few columns to split
])
def test_split_layouts_match_the_serial_call(shared, dtype, shape_a, shape_b):
    rng = np.random.default_rng(len(shape_a) * 31 + shape_a[-1])
    g = _unary_binary(shape_a, shape_b, dtype)
    _same_both_ways(g, [rand(rng, shape_a, dtype), rand(rng, shape_b, dtype)],
                    rtol=2e-6 if dtype == "float32" else 1e-13)
    _ran_on_another_thread(shared)


def test_mixed_item_sizes(shared):
    """float32 and float64 inputs, a float64 and a bool output: each piece's offsets in bytes
    of each array's own item size."""
    rng = np.random.default_rng(7)
    g = Graph()
    a, b = g.add_input(T("float32", 40, 33)), g.add_input(T("float64", 33))
    s = emit(g, "tensor::add", a, b)
    g.add_output(emit(g, "tensor::tanh", s))
    g.add_output(emit(g, "tensor::gt", s, g.constant(0.5)))
    _same_both_ways(g, [rand(rng, (40, 33)), rand(rng, (33,), "float64")], rtol=1e-13)
    _same_both_ways(_unary_binary((1, 999), (999,), "float64"),
                    [rand(rng, (1, 999), "float64"), rand(rng, (999,), "float64")])
    _ran_on_another_thread(shared)


def test_strided_and_transposed_inputs(shared):
    rng = np.random.default_rng(1)
    g = lstm_tail("float32", 40, 24)
    args = [rand(rng, v.type.shape) for v in g.inputs]
    args[0] = np.asfortranarray(args[0])
    args[1] = rand(rng, (40, 192))[:, ::2]
    args[4] = rand(rng, (24, 40)).T
    _same_both_ways(g, args)


def test_scalar_and_zero_d_inputs(shared):
    rng = np.random.default_rng(2)
    g = Graph()
    x = g.add_input(T("float32", 33, 65))
    s, z = g.add_input(T("float32")), g.add_input(T("float32"))
    y = emit(g, "tensor::mul", emit(g, "tensor::add", x, s), g.constant(0.25))
    g.add_output(emit(g, "tensor::exp", emit(g, "tensor::sub", y, z)))
    _same_both_ways(g, [rand(rng, (33, 65)), np.float32(0.5), np.array(1.5, np.float32)])


@pytest.mark.parametrize("axis", [1, 0])
def test_cat_outputs(shared, axis):
    g = check_cat(gate_grads("float32", 37, 20, axis))
    (group,) = groups(g)
    rng = np.random.default_rng(3)
    _same_both_ways(group.subgraph, [rand(rng, v.type.shape) for v in group.subgraph.inputs])


def test_one_thread_runs_the_plan_serially(shared, monkeypatch):
    monkeypatch.setattr(parallel, "threads", lambda: 1)
    rng = np.random.default_rng(4)
    _same_both_ways(_unary_binary((64, 100), (100,)), [rand(rng, (64, 100)), rand(rng, (100,))])
    assert not shared


def test_a_job_openblas_does_not_take_runs_on_the_caller(shared, monkeypatch):
    offered = []
    monkeypatch.setattr(blas, "share", lambda *a: offered.append(a) and False)
    rng = np.random.default_rng(8)
    _same_both_ways(_unary_binary((64, 100), (100,)), [rand(rng, (64, 100)), rand(rng, (100,))])
    assert len(offered) == 2


def test_a_piece_that_finds_its_arguments_changed_sends_the_call_to_the_general_path(shared):
    rng = np.random.default_rng(9)
    kernel = _same_both_ways(_unary_binary((64, 100), (100,)),
                             [rand(rng, (64, 100)), rand(rng, (100,))])
    plan = next(iter(kernel.plans.values()))
    run = plan.fast[0]
    check, guards, _ = run.guards
    a, b = rand(rng, (64, 100)), rand(rng, (100,))
    out = np.full((64, 100), -7.0, np.float32)
    saved = guards[3].copy()
    try:
        guards[3][: len(check) - 1] = 0  # piece 3's header: it rejects the arguments
        assert run((a, b), (out,), plan.fast[1]) == 1
    finally:
        guards[3][:] = saved
    assert run((a, b), (out,), plan.fast[1]) == 0
    np.testing.assert_array_equal(out, _unsplit(kernel, [a, b])[0])


def test_a_mismatched_argument_takes_the_general_path(shared):
    rng = np.random.default_rng(5)
    kernel = _same_both_ways(_unary_binary((64, 100), (100,)),
                             [rand(rng, (64, 100)), rand(rng, (100,))])
    a, b = rand(rng, (32, 100)), rand(rng, (100,))
    np.testing.assert_allclose(kernel(a, b), np.tanh(a + b), rtol=2e-6)
    a64 = rand(rng, (64, 100), "float64")  # converted by the general path
    np.testing.assert_allclose(kernel(a64, b), np.tanh(a64.astype(np.float32) + b), rtol=2e-6)


def test_small_kernels_stay_serial(monkeypatch):
    monkeypatch.setattr(blas, "awake", lambda: True)
    monkeypatch.setattr(pool, "cpus", lambda: 2)
    kernel = _fresh(_unary_binary((8, 64), (64,)))
    rng = np.random.default_rng(6)
    args = [rand(rng, (8, 64)), rand(rng, (64,))]
    kernel(*args)
    assert not next(iter(kernel.plans.values())).parallel
    big = _fresh(_unary_binary((256, 1024), (1024,)))
    big(rand(rng, (256, 1024)), rand(rng, (1024,)))
    plan = next(iter(big.plans.values()))
    assert plan.parallel and len(plan.params) == parallel.TASKS


def test_work_counts_transcendentals_and_divisions():
    g = lstm_tail("float32", 4, 8)
    assert parallel.work_per_point(g) > 5 * 8
    assert parallel.work_per_point(_unary_binary((4,), (4,))) == 1 + 8
