"""Fusion kernels whose calls run their slabs on more than one thread (``fuser.cpu.parallel``):
the same values, bit for bit, as the serial call, for every layout a plan can have."""

from __future__ import annotations

import numpy as np
import pytest

from fuser.cpu import blas, compile_group, parallel
from fuser.cpu.kernel import Kernel
from ir import Graph
from tests.fuser.reference import evaluate, groups, rand
from tests.fuser.test_horizontal import check_cat, gate_grads
from tests.helpers import T, assert_same, emit
from tests.programs.graphs import lstm_tail


@pytest.fixture
def shared(monkeypatch):
    """Every plan parallel on two threads, OpenBLAS's taken as awake; per job offered to them,
    whether they ran it."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(blas, "awake", lambda: True)
    monkeypatch.setattr(parallel, "threads", lambda: 2)
    monkeypatch.setitem(blas._lag, "skip", 0)  # no backoff left over from earlier lags
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


def _same_both_ways(graph: Graph, args: list, rtol: float = 2e-6) -> Kernel:
    """The first (general, serial) call and the second (guarded, parallel) call give the same
    bits, and numpy's values."""
    kernel = _fresh(graph)
    first = kernel(*args)
    assert kernel._fast is not None, "the plan has a guard"
    second = kernel(*args)
    third = kernel.into(tuple(None for _ in kernel.out_dtypes), *args)
    with np.errstate(all="ignore"):
        want = evaluate(graph, *args)
    for got in (first, second, third):
        for g, f, w in zip(*(x if isinstance(x, tuple) else (x,)
                             for x in (got, first, want))):
            np.testing.assert_array_equal(g, f)
            assert_same(g, w, rtol, 1e-6)
    return kernel


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
    assert shared, "the job was offered to another thread"


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


def test_one_thread_runs_the_job_on_the_caller(shared, monkeypatch):
    monkeypatch.setattr(parallel, "threads", lambda: 1)
    rng = np.random.default_rng(4)
    _same_both_ways(_unary_binary((64, 100), (100,)), [rand(rng, (64, 100)), rand(rng, (100,))])
    assert not shared


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
