"""The fuser's backend interface: group formation, the kernels and ``explain`` ask the backend of
the device a graph's tensors live on, so a CUDA graph is fused and explained by CUDA rules (float16
storage, any constant exponent) and a CPU graph by CPU rules. CUDA kernels are checked without a
GPU: NVRTC for sm_80 and sm_90, and the same source run on the CPU through the emulation."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fuser.cpu
import fuser.cuda
import passes
from fuser.backend import REGISTRY, Kernel, backend_for, backend_of
from fuser.cuda import emulate
from ir import Graph
from script.tools import explain
from tests.fuser.reference import check_ptx
from tests.helpers import T, emit

fuser.register_passes()  # the fuse-elementwise pass these tests run

needs_gxx = pytest.mark.skipif(emulate.unavailable_reason() is not None,
                               reason=emulate.unavailable_reason() or "")

FUSION_GROUP = "prim::FusionGroup"


def mul_tanh_add(dtype, device, exponent=None):
    """``tanh(x * w) + b`` (times ``x ** exponent`` when given) on ``device``."""
    g = Graph("mul_tanh_add")
    x, w = g.add_input(T(dtype, 4, 8, device=device), "x"), g.add_input(T(dtype, 8, device=device))
    b = g.add_input(T(dtype, 4, 8, device=device), "b")
    y = emit(g, "tensor::add", emit(g, "tensor::tanh", emit(g, "tensor::mul", x, w)), b)
    if exponent is not None:
        y = emit(g, "tensor::mul", y, emit(g, "tensor::pow", x, g.constant(exponent)))
    g.add_output(y)
    return g


def fused(graph):
    passes.run_pipeline(graph, "fuse-elementwise")
    return graph


def kinds(graph):
    return [n.kind for n in graph.nodes() if n.kind != "prim::Constant"]


def the_group(graph):
    group, = [n for n in graph.nodes() if n.kind == FUSION_GROUP]
    return group


# -- the registry ----------------------------------------------------------------------------------
def test_each_device_has_the_backend_that_says_it_serves_it():
    assert backend_for(None) is backend_for("cpu") is fuser.cpu.BACKEND
    assert backend_for("cuda") is fuser.cuda.BACKEND
    assert backend_for("tpu") is None
    for device in REGISTRY:
        assert device in backend_for(device).devices
    assert "float16" in fuser.cuda.BACKEND.storage and "float16" not in fuser.cpu.BACKEND.storage


# -- group formation by the device's rules -------------------------------------------------------
@needs_gxx
def test_float16_cuda_graph_of_mul_tanh_add_forms_one_group():
    g = fused(mul_tanh_add("float16", "cuda"))
    assert kinds(g) == [FUSION_GROUP]
    group = the_group(g)
    assert backend_of(group) is fuser.cuda.BACKEND
    kernel = emulate.compile_group(group.subgraph)
    assert isinstance(kernel, Kernel)
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(v.type.shape).astype(np.float16) for v in g.inputs)
    got = kernel(x, w, b)
    assert got.dtype == np.float16
    # float16 storage, float32 math: one rounding at the end
    want = np.tanh(x.astype(np.float32) * w.astype(np.float32)) + b.astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-3, atol=1e-3)
    check_ptx(kernel)


def test_the_same_graph_on_the_cpu_is_judged_by_cpu_rules():
    g = fused(mul_tanh_add("float32", None))
    assert kinds(g) == [FUSION_GROUP]
    assert isinstance(backend_of(the_group(g)).compile_group(the_group(g).subgraph), Kernel)
    # the CPU backend stores no float16: the ops stay numpy calls
    assert FUSION_GROUP not in kinds(fused(mul_tanh_add("float16", None)))


@needs_gxx
def test_an_exponent_only_cuda_computes_fuses_on_cuda_only():
    cpu = fused(mul_tanh_add("float32", None, exponent=1.5))
    assert "tensor::pow" in kinds(cpu)  # the CPU backend computes table exponents only
    g = fused(mul_tanh_add("float32", "cuda", exponent=1.5))
    assert kinds(g) == [FUSION_GROUP]
    kernel = emulate.compile_group(the_group(g).subgraph)
    rng = np.random.default_rng(1)
    x, w, b = (np.abs(rng.standard_normal(v.type.shape)).astype(np.float32) for v in g.inputs)
    want = (np.tanh(x * w) + b) * x ** np.float32(1.5)
    np.testing.assert_allclose(kernel(x, w, b), want, rtol=1e-5, atol=1e-6)
    check_ptx(kernel)


def test_groups_never_mix_backends():
    # two independent chains of one shape would merge sideways into one kernel, were they on
    # one device; a group's kernel runs on one backend
    g = Graph()
    chains = []
    for device in (None, "cuda"):
        a, b = g.add_input(T("float32", 4, 8, device=device)), g.add_input(T("float32", 8,
                                                                               device=device))
        chains.append(emit(g, "tensor::tanh", emit(g, "tensor::add", a, b)))
    for v in chains:
        g.add_output(v)
    groups = [n for n in fused(g).nodes() if n.kind == FUSION_GROUP]
    assert [backend_of(n).name for n in groups] == ["CPU", "CUDA"]


def test_the_cuda_backend_needs_no_llvmlite():
    code = textwrap.dedent("""
        import sys
        sys.modules["llvmlite"] = None  # importing it now raises ImportError
        import fuser.cuda, passes
        fuser.register_passes()
        from fuser.cuda.codegen import FLAT, Variant
        from ir import Graph, TensorType
        from ir.registry import infer_types
        g = Graph()
        x = g.add_input(TensorType("float16", (4, 8), "cuda"))
        for kind in ("tensor::tanh", "tensor::exp"):
            node = g.insert(kind, (x,))
            x = node.add_output(*infer_types(node))
        g.add_output(x)
        passes.run_pipeline(g, "fuse-elementwise")
        group, = [n for n in g.nodes() if n.kind == "prim::FusionGroup"]
        spec = fuser.cuda.analyze(group.subgraph)
        assert "tanhf" in fuser.cuda.generate(spec, Variant(1, (FLAT,), 32)).text
        assert "llvmlite.ir" not in sys.modules
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# -- explain by the device's rules -----------------------------------------------------------------
def test_explain_judges_a_cuda_graph_by_cuda_rules(monkeypatch):
    # the emulation stands in for CuPy when explain checks that the group compiles
    monkeypatch.setattr(fuser.cuda.BACKEND, "compile_group", emulate.compile_group)
    g = mul_tanh_add("float16", "cuda")
    y = g.outputs[0]
    erf = emit(g, "tensor::erf", y)  # no backend has code for erf
    alone = emit(g, "tensor::exp", g.add_input(T("float16", 3, device="cuda")))
    g.set_outputs([erf, alone])
    found = explain.analyze(fused(g))
    assert [(grp.backend, grp.fallback) for grp in found.groups] == [("CUDA", None)]
    reasons = {x.node.kind: x.reason for x in found.left_out}
    assert reasons == {
        "tensor::erf": "the CUDA fuser has no code for tensor::erf",
        "tensor::exp": ("a single op with no fusible neighbour: a group needs 2 ops to pay for "
                        "a kernel call"),
    }


@pytest.mark.parametrize("device, dtype, stored", [
    (None, "float16", "float32, float64 or bool"),
    ("cuda", "int32", "float32, float64, float16 or bool"),
])
def test_explain_names_the_dtypes_of_the_backend_that_judged(device, dtype, stored):
    g = Graph()
    x = g.add_input(T(dtype, 3, device=device), "x")
    g.add_output(emit(g, "tensor::exp", emit(g, "tensor::tanh", x)))
    reasons = [x.reason for x in explain.analyze(fused(g)).left_out]
    assert reasons[0] == (f"the shape or dtype of %x ({x.type}) is unknown at compile time (the "
                          f"fuser needs both, and {stored})")
