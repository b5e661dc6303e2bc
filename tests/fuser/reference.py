"""What the fuser tests share: numpy's eager version of each op, a reference evaluator for
hand-built graphs, kernel checks against it (CPU and the CUDA emulation), the fusion-group queries
and a hypothesis strategy of random elementwise graphs."""

import numpy as np
from hypothesis import strategies as st

from fuser.cpu import compile_group
from fuser.cuda import emulate, nvrtc
from fuser.group import fuse_elementwise
from ir import FLOAT, Graph, TensorType
from tests import helpers
from tests.helpers import T, assert_same, emit, flat

FUSION = "prim::FusionGroup"


def rand(rng, shape, dtype="float32", scale=2.0):
    """The fuser tests' inputs: float32 standard normals times two unless told otherwise."""
    return helpers.rand(rng, shape, dtype, scale)


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


NUMPY["cat"] = lambda items, axis: np.concatenate(items, axis)
NUMPY.update({name: getattr(np, name) for name in (
    "exp2", "log2", "log10", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
    "arccosh", "arctanh")})

STRUCTURAL = {
    "prim::Constant": lambda node, inputs: node.attrs["value"],
    "prim::FusionGroup": lambda node, inputs: compile_group(node.subgraph)(*inputs),
    "prim::TupleConstruct": lambda node, inputs: tuple(inputs),
    "prim::ListConstruct": lambda node, inputs: list(inputs),
    "prim::Print": lambda node, inputs: None,
}
"""How ``evaluate`` runs the nodes that are not numpy functions (fusion groups through their
compiled CPU kernel)."""


def _run_node(node, inputs):
    if node.kind in STRUCTURAL:
        return STRUCTURAL[node.kind](node, inputs)
    with np.errstate(all="ignore"):
        return NUMPY[node.kind.split("::")[1]](*inputs)


def evaluate(graph: Graph, *args):
    """Run ``graph``'s top-level nodes eagerly with numpy; its output, or a tuple of them."""
    env = dict(zip(graph.inputs, args))
    for node in graph.nodes():
        result = _run_node(node, [env[v] for v in node.inputs])
        env.update(zip(node.outputs, result if len(node.outputs) > 1 else [result]))
    outs = [env[v] for v in graph.outputs]
    return outs[0] if len(outs) == 1 else tuple(outs)


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


def groups(graph: Graph) -> list:
    """The fusion groups of ``graph``, nested blocks included."""
    return [n for n in graph.walk() if n.kind == FUSION]


def kinds(graph: Graph) -> list[str]:
    """The kinds of ``graph``'s top-level nodes, constants left out."""
    return [n.kind for n in graph.nodes() if n.kind != "prim::Constant"]


def fuse(graph: Graph) -> bool:
    """Run ``fuse_elementwise`` on ``graph`` and verify the result; whether it changed."""
    changed = fuse_elementwise(graph)
    graph.verify()
    return changed


def random_args(graph: Graph, seed: int = 0) -> list:
    """Standard normal arguments of the shapes and dtypes of ``graph``'s inputs."""
    rng = np.random.default_rng(seed)
    return [rand(rng, v.type.shape, v.type.dtype, scale=1.0) for v in graph.inputs]


def check_fused_equals_eager(make, args=None, rtol=1e-5) -> Graph:
    """The graph from ``make()`` computes the same values after ``fuse`` as before, on ``args``
    (random ones by default); returns the fused graph."""
    if args is None:
        args = random_args(make())
    want = evaluate(make(), *args)
    g = make()
    fuse(g)
    got = evaluate(g, *args)
    assert len(flat(got)) == len(flat(want))
    for x, y in zip(flat(got), flat(want)):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-6)
    return g


_ptx_checked: set[str] = set()


def check_ptx(kernel):
    """Every source ``kernel`` has generated compiles to PTX for sm_80 and sm_90."""
    if nvrtc.unavailable_reason() is not None:
        return
    for src in list(kernel.sources.values()):
        if src.digest in _ptx_checked:
            continue
        for arch, ptx in nvrtc.compile_for(src.text).items():
            assert nvrtc.entry_points(ptx) == [src.name], arch
            assert f".target {arch}" in ptx
        _ptx_checked.add(src.digest)


def check_emulated(graph, *args, rtol=2e-6, atol=1e-6, backend=None):
    """Emulate ``graph``'s CUDA kernel on ``args`` and compare with numpy; the kernel's sources
    must compile with NVRTC. Returns the kernel."""
    kernel = emulate.compile_group(graph, backend)
    got = kernel(*args)
    with np.errstate(all="ignore"):
        want = evaluate(graph, *args)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol)
    else:
        assert_same(got, want, rtol, atol)
    check_ptx(kernel)
    return kernel


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
    elif op == "square":
        x = emit(g, "tensor::tanh", x)
    elif op == "floor":  # in (-0.5, 0.5): a saturated tanh (1.0 in float32 from x > 9, which
        # one correctly rounded tanh reaches and another 1 ulp below does not) stays off 1
        x = emit(g, "tensor::mul", emit(g, "tensor::tanh", x), g.constant(0.5))
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
