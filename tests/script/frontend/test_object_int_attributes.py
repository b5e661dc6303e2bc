"""Int, bool and str attributes of plain object arguments are compiled in as constants, checked
per call: ``range(self.num_layers)`` has a constant count, so ``self.rnns[i]`` in it is unrolled;
``if self.bidirectional:`` and ``self.nonlinearity == "relu"`` are decided when compiling; a
call that finds another value compiles again and gives the new result; an attribute that takes
more than ``MAX_CONSTANT_VALUES`` values (a step counter) is read per call from then on, with a
warning, unless the code needs it constant. ``ModuleList``s are indexed by a loop's variable as
lists of objects are. Compiled equals plain Python in float32 and float64; gradients equal finite
differences; a run-time index stays a ScriptError at the user's line."""

import warnings

import numpy as np
import pytest

from script import Module, ModuleList, Parameter, ScriptError, Tensor, script, vjp
from script.runtime.function import MAX_CONSTANT_VALUES, ScriptFunction
from tests.gradcheck import check_vjp
from tests.helpers import assert_same_at


# -- a stacked RNN: a port to numpy of Dive into Deep Learning (d2l.ai), section 10.3 "Deep
# Recurrent Neural Networks": RNNScratch and StackedRNNScratch, whose hidden size and layer count
# are int attributes set in __init__ and whose forward loops over range(self.num_layers) indexing
# self.rnns[i] -------------------------------------------------------------------------------------
class RNNScratch:
    def __init__(self, rng, num_inputs, num_hiddens, dtype, sigma=0.5):
        self.num_inputs, self.num_hiddens = num_inputs, num_hiddens
        self.W_xh = (rng.standard_normal((num_inputs, num_hiddens)) * sigma).astype(dtype)
        self.W_hh = (rng.standard_normal((num_hiddens, num_hiddens)) * sigma).astype(dtype)
        self.b_h = (rng.standard_normal(num_hiddens) * 0.1).astype(dtype)

    def forward(self, inputs, state):
        outputs = []
        for X in inputs:  # inputs: (num_steps, batch_size, num_inputs)
            state = np.tanh(X @ self.W_xh + state @ self.W_hh + self.b_h)
            outputs.append(state)
        return outputs, state


class StackedRNNScratch:
    def __init__(self, rng, num_inputs, num_hiddens, num_layers, dtype="float64"):
        self.num_inputs, self.num_hiddens, self.num_layers = num_inputs, num_hiddens, num_layers
        self.rnns = [RNNScratch(rng, num_inputs if i == 0 else num_hiddens, num_hiddens, dtype)
                     for i in range(num_layers)]

    def forward(self, inputs):
        outputs, Hs = inputs, []
        for i in range(self.num_layers):
            state = np.zeros((inputs.shape[1], self.num_hiddens), dtype=inputs.dtype)
            outputs, H = self.rnns[i].forward(outputs, state)
            outputs = np.stack(outputs, 0)
            Hs.append(H)
        return outputs, Hs


def stacked_loss(model: StackedRNNScratch, xs: Tensor, target: Tensor) -> Tensor:
    outputs, Hs = model.forward(xs)
    return ((outputs[-1] - target) ** 2).sum() + (Hs[0] * Hs[0]).sum()


def stacked_forward(model: StackedRNNScratch, xs: Tensor):
    return model.forward(xs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stacked_rnn_scratch_compiles_like_python(dtype):
    rng = np.random.default_rng(0)
    model = StackedRNNScratch(rng, 3, 4, 3, dtype)
    xs = rng.standard_normal((5, 2, 3)).astype(dtype)
    target = rng.standard_normal((2, 4)).astype(dtype)
    assert_same_at(script(stacked_loss)(model, xs, target), stacked_loss(model, xs, target))
    assert_same_at(script(stacked_forward)(model, xs), stacked_forward(model, xs))


def test_stacked_rnn_scratch_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    model = StackedRNNScratch(rng, 3, 4, 3)
    check_vjp(script(stacked_loss), (model, rng.standard_normal((4, 2, 3)),
                                     rng.standard_normal((2, 4))))


def test_changing_the_layer_count_compiles_again_with_the_new_result():
    rng = np.random.default_rng(2)
    model = StackedRNNScratch(rng, 3, 3, 3)
    xs, target = rng.standard_normal((4, 2, 3)), rng.standard_normal((2, 3))
    f = script(stacked_loss)
    results = {}
    for n in (3, 1, 2, 3, 1):  # fewer layers than the list holds: the first n run
        model.num_layers = n
        results[n] = f(model, xs, target)
        assert_same_at(results[n], stacked_loss(model, xs, target))
    assert len({float(r) for r in results.values()}) == 3
    model.num_hiddens = 5  # another hidden size with weights to match: compiled again too
    model.rnns = [RNNScratch(rng, 3 if i == 0 else 5, 5, "float64") for i in range(2)]
    model.num_layers = 2
    target = rng.standard_normal((2, 5))
    assert_same_at(f(model, xs, target), stacked_loss(model, xs, target))


# -- bool and str attributes, nested objects, objects in lists ------------------------------------
class Encoder:
    def __init__(self, rng, n, bidirectional, nonlinearity, dtype="float64"):
        self.W = (rng.standard_normal((n, n)) * 0.5).astype(dtype)
        self.U = (rng.standard_normal((n, n)) * 0.5).astype(dtype)
        self.bidirectional, self.nonlinearity = bidirectional, nonlinearity

    def act(self, a):
        if self.nonlinearity == "relu":
            return np.maximum(a, 0.0)
        return np.tanh(a)


def encode(enc: Encoder, xs: Tensor) -> Tensor:
    h = xs[0] * 0.0
    for t in range(xs.shape[0]):
        h = enc.act(xs[t] @ enc.W + h @ enc.U)
    if enc.bidirectional:
        g = xs[0] * 0.0
        for t in range(xs.shape[0] - 1, -1, -1):
            g = enc.act(xs[t] @ enc.W + g @ enc.U)
        h = h + g
    return h


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bool_and_str_attributes_decide_branches_when_compiling(dtype):
    rng = np.random.default_rng(3)
    enc = Encoder(rng, 3, True, "relu", dtype)
    xs = rng.standard_normal((4, 2, 3)).astype(dtype)
    f = script(encode)
    for bidirectional, nonlinearity in [(True, "relu"), (False, "relu"), (True, "tanh"),
                                        (False, "tanh")]:
        enc.bidirectional, enc.nonlinearity = bidirectional, nonlinearity
        assert_same_at(f(enc, xs), encode(enc, xs))
        assert "prim::If" not in str(f.graph)  # both conditions folded


def test_an_int_attribute_as_a_condition_is_decided_when_compiling():
    """ONNX's GRU reference: ``h = h_linear if self.linear_before_reset else h_default`` with
    an int attribute (0 or 1)."""
    rng = np.random.default_rng(5)
    enc = Encoder(rng, 3, 1, "tanh")
    xs = rng.standard_normal((4, 2, 3))
    f = script(encode)
    for flag in (1, 0, 2):
        enc.bidirectional = flag
        assert_same_at(f(enc, xs), encode(enc, xs))
        assert "prim::If" not in str(f.graph_for(enc, xs))


def test_bool_and_str_attribute_gradients_match_finite_differences():
    rng = np.random.default_rng(4)
    xs = rng.standard_normal((3, 2, 3))
    for bidirectional, nonlinearity in [(True, "tanh"), (False, "tanh")]:
        check_vjp(script(encode), (Encoder(rng, 3, bidirectional, nonlinearity), xs))


class Config:
    def __init__(self, depth, repeats):
        self.depth, self.repeats = depth, repeats


class Dense:
    def __init__(self, rng, n, repeats):
        self.W = rng.standard_normal((n, n)) * 0.5
        self.repeats = repeats

    def step(self, x):
        return np.tanh(x @ self.W)


class Net:
    def __init__(self, rng, n, depth, repeats):
        self.cfg = Config(depth, repeats)
        self.layers = [Dense(rng, n, k + 1) for k in range(depth)]


def deep(net: Net, x: Tensor) -> Tensor:
    for i in range(net.cfg.depth):  # an int of a nested object
        for _ in range(net.layers[i].repeats):  # an int of an object in a list
            x = net.layers[i].step(x)
    for r in range(net.cfg.repeats):
        x = x + net.layers[r % len(net.layers)].W.sum()
    return x


def test_ints_of_nested_objects_and_of_objects_in_lists_are_constants():
    rng = np.random.default_rng(5)
    net, x = Net(rng, 3, 3, 4), rng.standard_normal((2, 3))
    f = script(deep)
    assert_same_at(f(net, x), deep(net, x))
    net.cfg.depth, net.layers[0].repeats, net.cfg.repeats = 2, 3, 1
    assert_same_at(f(net, x), deep(net, x))
    check_vjp(f, (net, x))


# -- attributes that change at every call ---------------------------------------------------------
class Adam:  # the bias correction of Adam: the step count t is incremented between calls
    def __init__(self, shape):
        self.m, self.v, self.t = np.full(shape, 0.1), np.full(shape, 0.2), 0


def corrected_step(opt: Adam, g: Tensor) -> Tensor:
    m_hat = opt.m / (1.0 - 0.9 ** opt.t)
    v_hat = opt.v / (1.0 - 0.999 ** opt.t)
    return g * m_hat / (np.sqrt(v_hat) + 1e-8)


def _counting_compiles(monkeypatch):
    compiles = []
    original = ScriptFunction._compile_definition

    def counted(self):
        compiles.append(1)
        return original(self)
    monkeypatch.setattr(ScriptFunction, "_compile_definition", counted)
    return compiles


def test_a_step_counter_is_read_per_call_after_a_few_values(monkeypatch):
    compiles = _counting_compiles(monkeypatch)
    opt, g = Adam(3), np.linspace(-1.0, 1.0, 3)
    f = script(corrected_step)
    with pytest.warns(RuntimeWarning, match="attribute 't' of Adam objects .* read per call"):
        for t in range(1, 12):
            opt.t = t
            assert_same_at(f(opt, g), corrected_step(opt, g))
    assert len(compiles) == MAX_CONSTANT_VALUES + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for t in (2, 50):  # earlier values too: the per-call definition serves them all
            opt.t = t
            assert_same_at(f(opt, g), corrected_step(opt, g))
    assert len(compiles) == MAX_CONSTANT_VALUES + 1


def test_a_count_the_code_needs_constant_stays_constant_at_every_value(monkeypatch):
    compiles = _counting_compiles(monkeypatch)
    rng = np.random.default_rng(6)
    model = StackedRNNScratch(rng, 2, 2, 7)
    xs, target = rng.standard_normal((2, 1, 2)), rng.standard_normal((1, 2))
    f = script(stacked_loss)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in range(1, 8):
            model.num_layers = n
            assert_same_at(f(model, xs, target), stacked_loss(model, xs, target))
    # one per value, and one try at reading the count per call (it indexes self.rnns)
    assert len(compiles) == 8


# -- ModuleList indexed by a loop's variable ------------------------------------------------------
class Cell(Module):
    def __init__(self, rng, n_in, n):
        super().__init__()
        self.W = Parameter(rng.standard_normal((n_in, n)) * 0.5)
        self.b = Parameter(rng.standard_normal(n) * 0.1)

    def forward(self, h: Tensor) -> Tensor:
        return np.tanh(h @ self.W + self.b)


class Stack(Module):
    def __init__(self, rng, sizes):
        super().__init__()
        self.cells = ModuleList([Cell(rng, a, b) for a, b in zip(sizes, sizes[1:])])
        self.num_layers = len(sizes) - 1

    def forward(self, h: Tensor) -> Tensor:
        for i in range(len(self.cells)):
            h = self.cells[i](h)
        for i in range(self.num_layers - 1, 0, -1):
            h = h + self.cells[i].b.sum()
        return h


def test_module_list_indexed_by_a_loop_variable_compiles_like_python():
    rng = np.random.default_rng(7)
    for dtype in ("float32", "float64"):
        stack = Stack(rng, (3, 4, 4, 2))
        if dtype == "float32":
            stack.float()
        h = rng.standard_normal((2, 3)).astype(dtype)
        assert_same_at(script(stack)(h), stack.forward(h))


def test_module_list_indexed_by_a_loop_variable_input_gradient_matches_finite_differences():
    rng = np.random.default_rng(8)
    stack, h = Stack(rng, (3, 4, 2)), rng.standard_normal((2, 3))
    out, backward = vjp(script(stack), h)
    ct = rng.standard_normal(out.shape)
    (gh,) = backward(ct)
    eps, numeric = 1e-6, np.zeros_like(h)
    for k in np.ndindex(h.shape):
        d = np.zeros_like(h)
        d[k] = eps
        numeric[k] = ((stack.forward(h + d) - stack.forward(h - d)) * ct).sum() / (2 * eps)
    np.testing.assert_allclose(gh, numeric, rtol=1e-6, atol=1e-8)


class IndexedByArgument(Module):
    def __init__(self, rng):
        super().__init__()
        self.cells = ModuleList([Cell(rng, 2, 2), Cell(rng, 2, 2)])

    def forward(self, h: Tensor, n: int) -> Tensor:
        for i in range(n):
            h = self.cells[i](h)
        return h


def test_module_list_indexed_at_run_time_is_refused_at_the_line():
    module = IndexedByArgument(np.random.default_rng(9))
    with pytest.raises(ScriptError, match=r"'self.cells' \(a module list\) is indexed with 'i', "
                       "an int known only when the function runs") as info:
        script(module)(np.ones((1, 2)), 2)
    assert "h = self.cells[i](h)" in str(info.value)
