"""``rnn.LSTM`` / ``GRU`` / ``RNN`` as a torch user calls them: compiled on the first call, every
layer and direction fused (with ``hx`` None or given, with or without ``lengths``, forward and
backward), the same values and gradients as ``torch.nn`` with copied weights (when torch is
installed), unbatched inputs, and torch's input checks raised at the call."""

from __future__ import annotations

import re

import numpy as np
import pytest

import rnn
from rnn.checks import RNNInputError
from script import SignatureError, script, vjp

SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 6
LENGTHS = np.array([5, 2, 4])
VARIANTS = [(False, False, False), (True, True, True), (False, True, False), (True, False, True)]
"""(batch_first, hx given, lengths given), cycled through the configurations below."""
CONFIGS = [(mode, layers, bidir, *VARIANTS[k % len(VARIANTS)])
           for k, (mode, layers, bidir) in enumerate(
               (mode, layers, bidir) for mode in ("LSTM", "GRU", "RNN") for layers in (1, 2)
               for bidir in (False, True))]
ELEMENTWISE = ("tanh", "sigmoid", "mul", "sub", "add", "where", "relu", "neg")


def make(mode, layers, bidir, batch_first, seed=0):
    return getattr(rnn, mode)(INPUT, HIDDEN, num_layers=layers, bidirectional=bidir,
                              batch_first=batch_first, rng=seed)


def inputs(mode, layers, bidir, batch_first, hx_given, lengths_given, seed=1, steps=SEQ):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, steps, INPUT) if batch_first else (steps, BATCH, INPUT))
    rows = layers * (2 if bidir else 1)
    h0 = 0.5 * rng.standard_normal((rows, BATCH, HIDDEN))
    c0 = 0.5 * rng.standard_normal((rows, BATCH, HIDDEN))
    hx = None
    if hx_given:
        hx = (h0.astype("float32"), c0.astype("float32")) if mode == "LSTM" else \
            h0.astype("float32")
    return x.astype("float32"), hx, (LENGTHS if lengths_given else None)


def unfused_in_loops(graph):
    """Elementwise tensor ops inside loops of the top-level graph, outside fusion groups."""
    top = str(graph).split("\nwith prim::FusionGroup")[0]
    found = []
    for line in top.splitlines():
        op = re.search(r"= tensor::(\w+)\(", line)
        nested = len(line) - len(line.lstrip()) > 2
        if op and op.group(1) in ELEMENTWISE and nested and ": int =" not in line:
            found.append(line.strip())
    return found, top.count("= prim::FusionGroup")


# -- compiled on the first call -------------------------------------------------------------------
def test_a_call_compiles_and_disable_keeps_it_eager(monkeypatch):
    m = rnn.LSTM(INPUT, HIDDEN, num_layers=2, rng=0)
    x, _, _ = inputs("LSTM", 2, False, False, False, False)
    out, (h, c) = m(x)
    assert "_compiled" in m.__dict__  # no script() needed
    eager_out, (eager_h, _) = m.forward(x)
    np.testing.assert_allclose(out, eager_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, eager_h, rtol=1e-5, atol=1e-6)
    again = rnn.LSTM(INPUT, HIDDEN, num_layers=2, rng=0)
    monkeypatch.setenv("RNNSCRIPT_DISABLE", "1")
    disabled_out, _ = again(x)
    assert "_compiled" not in again.__dict__
    np.testing.assert_allclose(disabled_out, out, rtol=1e-5, atol=1e-6)
    # script(module) still works and agrees
    monkeypatch.delenv("RNNSCRIPT_DISABLE")
    np.testing.assert_allclose(script(again)(x)[0], out, rtol=1e-5, atol=1e-6)


def test_vjp_of_a_module_reuses_its_compiled_gradient():
    m = rnn.GRU(INPUT, HIDDEN, rng=0)
    x, _, _ = inputs("GRU", 1, False, False, False, False)
    vjp(m, x)
    compiled = m.__dict__["_compiled"]
    vjp(m, x)
    assert m.__dict__["_compiled"] is compiled
    assert len(compiled.forward.current().__dict__.get("_gradient_cache", {})) == 1


def test_hx_none_specializes_to_a_fused_graph():
    """An Optional passed None is NoneType in the specialization: the zeros state has a dtype
    and shape and the cell fuses (it did not with hx=None before)."""
    m = rnn.LSTM(INPUT, HIDDEN, rng=0)
    x, _, _ = inputs("LSTM", 1, False, False, False, False)
    unfused, groups = unfused_in_loops(script(m).graph_for(x))
    assert groups >= 1 and not unfused


# -- every layer and direction fuses -------------------------------------------------------------
@pytest.mark.parametrize("mode,layers,bidir,batch_first,hx_given,lengths_given", CONFIGS)
def test_every_layer_and_direction_fuses_forward_and_backward(mode, layers, bidir, batch_first,
                                                               hx_given, lengths_given):
    m = make(mode, layers, bidir, batch_first)
    steps = 20  # a loop that long stays a loop (a shorter one may be unrolled)
    x, hx, lengths = inputs(mode, layers, bidir, batch_first, hx_given, lengths_given,
                            steps=steps)
    method = m.compiled().forward.current()
    loops = layers * (2 if bidir else 1)
    unfused, groups = unfused_in_loops(method.graph_for(x, hx, lengths))
    assert not unfused and groups >= loops
    unfused, groups = unfused_in_loops(method.backward_graph_for(x, hx, lengths))
    # the one op a backward step may leave out: the add of the recurrent matmul's gradient
    assert all("tensor::add" in line for line in unfused) and len(unfused) <= loops
    assert groups >= loops
    # every layer's and direction's input projection: one matmul over all steps, before its loop
    explained = method.explain(x, hx, lengths)
    projections = re.findall(rf"Float\({steps * BATCH}, \d+\) @ .*; outside loops", explained)
    assert len(projections) == loops


# -- torch parity -------------------------------------------------------------------------------
def torch_twin(torch, mode, layers, bidir, batch_first, ours):
    t = getattr(torch.nn, mode)(INPUT, HIDDEN, num_layers=layers, bidirectional=bidir,
                                batch_first=batch_first)
    ours.load_state_dict({k: v.detach().numpy().copy() for k, v in t.state_dict().items()})
    return t


def torch_run(torch, t, mode, x, hx, lengths, batch_first):
    """torch's (output, h_n, c_n or None) for our arguments; with lengths, through a packed
    sequence (padded outputs are zeros, as ours)."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    tx = torch.tensor(x, requires_grad=True)
    thx = None if hx is None else tuple(torch.tensor(h, requires_grad=True) for h in hx) \
        if mode == "LSTM" else torch.tensor(hx, requires_grad=True)
    seq = tx
    if lengths is not None:
        seq = pack_padded_sequence(tx, torch.tensor(lengths), batch_first=batch_first,
                                   enforce_sorted=False)
    out, state = t(seq, thx)
    if lengths is not None:
        out, _ = pad_packed_sequence(out, batch_first=batch_first, total_length=SEQ)
    h_n, c_n = state if mode == "LSTM" else (state, None)
    return tx, thx, out, h_n, c_n


@pytest.mark.parametrize("mode,layers,bidir,batch_first,hx_given,lengths_given", CONFIGS)
def test_values_and_gradients_match_torch(mode, layers, bidir, batch_first, hx_given,
                                          lengths_given):
    torch = pytest.importorskip("torch")
    m = make(mode, layers, bidir, batch_first)
    t = torch_twin(torch, mode, layers, bidir, batch_first, m)
    x, hx, lengths = inputs(mode, layers, bidir, batch_first, hx_given, lengths_given)
    tx, thx, t_out, t_h, t_c = torch_run(torch, t, mode, x, hx, lengths, batch_first)
    out, back = vjp(m, x, hx, lengths)
    got_out, state = out
    got_h, got_c = state if mode == "LSTM" else (state, None)
    close = dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_out, t_out.detach().numpy(), **close)
    np.testing.assert_allclose(got_h, t_h.detach().numpy(), **close)
    rng = np.random.default_rng(4)
    d_out = rng.standard_normal(got_out.shape).astype("float32")
    d_h = rng.standard_normal(got_h.shape).astype("float32")
    loss = (t_out * torch.tensor(d_out)).sum() + (t_h * torch.tensor(d_h)).sum()
    if mode == "LSTM":
        np.testing.assert_allclose(got_c, t_c.detach().numpy(), **close)
        d_c = rng.standard_normal(got_c.shape).astype("float32")
        loss = loss + (t_c * torch.tensor(d_c)).sum()
        grads = back((d_out, (d_h, d_c)))
    else:
        grads = back((d_out, d_h))
    loss.backward()
    np.testing.assert_allclose(grads[0], tx.grad.numpy(), **close)
    for name, param in t.named_parameters():
        np.testing.assert_allclose(m.get_parameter(name).grad, param.grad.numpy(), **close,
                                   err_msg=name)
    if hx is not None:
        pairs = zip(grads[1], thx) if mode == "LSTM" else [(grads[1], thx)]
        for g, th in pairs:
            np.testing.assert_allclose(g, th.grad.numpy(), **close)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_unbatched_input_and_states_match_torch(mode):
    torch = pytest.importorskip("torch")
    m = make(mode, 2, True, False)
    t = torch_twin(torch, mode, 2, True, False, m)
    x = np.random.default_rng(2).standard_normal((SEQ, INPUT)).astype("float32")
    h0 = np.random.default_rng(3).standard_normal((4, HIDDEN)).astype("float32")
    hx = (h0, -h0) if mode == "LSTM" else h0
    thx = tuple(map(torch.tensor, hx)) if mode == "LSTM" else torch.tensor(h0)
    for ours, theirs in ((m(x), t(torch.tensor(x))), (m(x, hx), t(torch.tensor(x), thx))):
        np.testing.assert_allclose(ours[0], theirs[0].detach().numpy(), rtol=1e-4, atol=1e-5)
        assert ours[0].shape == (SEQ, 2 * HIDDEN)
        ours_h = ours[1][0] if mode == "LSTM" else ours[1]
        theirs_h = theirs[1][0] if mode == "LSTM" else theirs[1]
        assert ours_h.shape == (4, HIDDEN)
        np.testing.assert_allclose(ours_h, theirs_h.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_unbatched_input_is_a_batch_of_one():
    m = rnn.LSTM(INPUT, HIDDEN, num_layers=2, batch_first=True, rng=0)
    x, hx, _ = inputs("LSTM", 2, False, True, True, False)
    out, (h, c) = m(x[:1], (hx[0][:, :1], hx[1][:, :1]))
    one, (h1, c1) = m(x[0], (hx[0][:, 0], hx[1][:, 0]))
    assert one.shape == (SEQ, HIDDEN) and h1.shape == (2, HIDDEN)
    np.testing.assert_allclose(one, out[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c1, c[:, 0], rtol=1e-5, atol=1e-6)
    (grad_out, _), back = vjp(m, x[0])
    assert back((np.ones_like(grad_out), None))[0].shape == (SEQ, INPUT)


# -- input checks ---------------------------------------------------------------------------------
LSTM2 = dict(mode="LSTM", layers=2)
BAD_CALLS = [
    ("input rank", lambda m, x, h: m(x[None]), "expected input to be 2-D .* got 4-D"),
    ("input features", lambda m, x, h: m(x[..., :3]), r"input_size: expected 4, got 3"),
    ("input dtype", lambda m, x, h: m(x.astype("float64")),
     r"input dtype \(float64\) does not match the parameters' dtype \(float32\)"),
    ("input type", lambda m, x, h: m(x.tolist()), "input must be an array, got list"),
    ("h0 layers", lambda m, x, h: m(x, (h[0][:1], h[1])),
     r"h0 \(hx\[0\]\) has shape \(1, 3, 6\); expected \(2, 3, 6\)"),
    ("c0 batch", lambda m, x, h: m(x, (h[0], h[1][:, :2])),
     r"c0 \(hx\[1\]\) has shape \(2, 2, 6\); expected \(2, 3, 6\)"),
    ("hx not a pair", lambda m, x, h: m(x, h[0]), r"hx must be a tuple \(h0, c0\)"),
    ("hx dtype", lambda m, x, h: m(x, (h[0].astype("float64"), h[1])),
     r"h0 \(hx\[0\]\) dtype \(float64\) does not match"),
    ("unbatched with 3-D h0", lambda m, x, h: m(x[:, 0], h),
     r"expected \(2, 6\) = \(num_layers \* num_directions, hidden_size\)"),
    ("length zero", lambda m, x, h: m(x, None, [5, 0, 3]), "between 1 and the sequence length 5"),
    ("length over T", lambda m, x, h: m(x, None, np.array([6, 1, 3])), "between 1 and"),
    ("lengths count", lambda m, x, h: m(x, None, [5, 3]), r"expected shape \(3,\), got \(2,\)"),
    ("float lengths", lambda m, x, h: m(x, None, np.array([5.0, 4.0, 3.0])),
     "lengths must be integers, got dtype float64"),
    ("float in a list", lambda m, x, h: m(x, None, [5, 4.0, 3]), "lengths must be integers"),
    ("extra keyword", lambda m, x, h: m(x, h0=h), "unexpected keyword argument 'h0'"),
    ("vjp checks too", lambda m, x, h: vjp(m, x[..., :3]), "expected 4, got 3"),
]


@pytest.mark.parametrize("what,call,message", BAD_CALLS, ids=[b[0] for b in BAD_CALLS])
def test_bad_input_is_refused_at_the_call(what, call, message):
    m = make("LSTM", 2, False, False)
    x, hx, _ = inputs("LSTM", 2, False, False, True, False)
    with pytest.raises(RNNInputError, match=message) as caught:
        call(m, x, hx)
    assert isinstance(caught.value, SignatureError) and isinstance(caught.value, ValueError)
    assert "_compiled" not in m.__dict__  # refused before anything compiled


def test_batch_first_checks_the_batch_axis():
    m = rnn.GRU(INPUT, HIDDEN, batch_first=True, rng=0)
    x = np.zeros((BATCH, SEQ, INPUT), "float32")
    m(x, np.zeros((1, BATCH, HIDDEN), "float32"), [5, 1, 2])
    with pytest.raises(RNNInputError, match=r"expected \(1, 3, 6\)"):
        m(x, np.zeros((1, SEQ, HIDDEN), "float32"))
    with pytest.raises(RNNInputError, match=r"expected shape \(3,\)"):
        m(x, None, [5, 1, 2, 3, 4])


def test_lengths_as_a_list_equal_lengths_as_an_array():
    m = rnn.RNN(INPUT, HIDDEN, bidirectional=True, rng=0)
    x, _, _ = inputs("RNN", 1, True, False, False, False)
    listed, h_listed = m(x, None, [5, 2, 4])
    arrayed, h_arrayed = m(x, None, LENGTHS)
    np.testing.assert_array_equal(listed, arrayed)
    np.testing.assert_array_equal(h_listed, h_arrayed)
    assert not listed[2:, 1].any()  # padded steps output zeros


def test_dropout_stack_fuses_in_training_and_in_eval():
    m = rnn.LSTM(INPUT, HIDDEN, num_layers=2, dropout=0.5, rng=0)
    x, hx, _ = inputs("LSTM", 2, False, False, True, False, steps=20)
    for mode in ("train", "eval"):
        getattr(m, mode)()
        method = m.compiled().forward.current()
        for graph in (method.graph_for(x, hx), method.backward_graph_for(x, hx)):
            unfused, groups = unfused_in_loops(graph)
            assert groups >= 2 and all("tensor::add" in line for line in unfused), mode
    trained, _ = m.train()(x, hx)
    evaluated, _ = m.eval()(x, hx)
    assert np.abs(trained - evaluated).max() > 1e-3  # dropout acts only while training


# -- strict mode and copies ------------------------------------------------------------------------
@pytest.mark.parametrize("mode,layers,bidir", [("LSTM", 1, False), ("LSTM", 2, False),
                                               ("LSTM", 2, True), ("RNN", 2, True),
                                               ("GRU", 1, False), ("GRU", 2, True)])
def test_strict_mode_accepts_the_front_end(mode, layers, bidir):
    """Every elementwise op of a stack fuses: no per-layer cast of the stacked output, no final
    state placed row by row after each layer's loop (both were refused in strict mode)."""
    x, hx, _ = inputs(mode, layers, bidir, False, True, False)
    m = make(mode, layers, bidir, False)
    out, _ = script(make(mode, layers, bidir, False), strict=True)(x)
    np.testing.assert_allclose(out, m.forward(x)[0], rtol=1e-5, atol=1e-6)
    out, h_n = script(make(mode, layers, bidir, False), strict=True)(x, hx)
    eager_out, eager_h = m.forward(x, hx)
    np.testing.assert_allclose(out, eager_out, rtol=1e-5, atol=1e-6)
    for got, want in zip(h_n if mode == "LSTM" else (h_n,), eager_h if mode == "LSTM" else
                         (eager_h,)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def sequence_copies(graph, steps):
    """``astype`` and ``copy`` nodes of ``graph`` whose result is a whole (T, B, ...) sequence."""
    found = re.findall(rf": Float\({steps}, {BATCH}, [\d, ]*\) = tensor::(astype|copy)\(",
                       str(graph))
    return found


@pytest.mark.parametrize("mode,layers,bidir", [(mode, layers, bidir) for mode in ("LSTM", "GRU")
                                               for layers in (1, 2) for bidir in (False, True)])
def test_no_sequence_is_copied_forward_or_backward(mode, layers, bidir):
    """The stacked output of a layer is cast to the parameters' dtype, which it already has:
    the cast is no copy of the (T, B, H) output, forward or backward."""
    steps = 20
    x, hx, _ = inputs(mode, layers, bidir, False, True, False, steps=steps)
    method = make(mode, layers, bidir, False).compiled().forward.current()
    forward, backward = method.vjp_graphs_for(x, hx, None)
    for graph in (method.graph_for(x, hx, None), forward, backward):
        assert sequence_copies(graph, steps) == []
    assert "astype" not in method.code_for(x, hx, None)


def test_a_second_call_leaves_the_first_output_alone():
    """The layer's output is its stacked buffer itself now (no cast copy): a later call must not
    write into what an earlier call returned."""
    m = rnn.LSTM(INPUT, HIDDEN, num_layers=2, bidirectional=True, rng=0)
    x, _, _ = inputs("LSTM", 2, True, False, False, False)
    out, (h, c) = m(x)
    kept = [a.copy() for a in (out, h, c)]
    m(2.0 * x)
    out2, backward = vjp(m, x)
    backward((np.ones_like(out2[0]), (np.ones_like(out2[1][0]), np.ones_like(out2[1][1]))))
    vjp(m, 3.0 * x)
    for a, k in zip((out, h, c), kept):
        np.testing.assert_array_equal(a, k)
    np.testing.assert_allclose(out2[0], kept[0], rtol=1e-6)


def test_profiled_calls_and_gradients_are_named_by_the_module_class():
    import script as rnnscript
    m = rnn.GRU(INPUT, HIDDEN, rng=0)
    x, _, _ = inputs("GRU", 1, False, False, False, False)
    with rnnscript.profile() as prof:
        m(x)
        out, backward = vjp(m, x)
        backward((np.ones_like(out[0]), np.ones_like(out[1])))
    calls = {k: s.calls for k, s in prof.stats.items() if s.category == "call"}
    assert calls == {"call GRU.forward": 1, "call GRU.forward (forward)": 1,
                     "call GRU.forward (backward)": 1}


def test_a_scripted_model_calling_the_front_end_keeps_its_checks():
    """``script(model)`` inlines the front end's ``forward``, skipping the call's checks: the
    forward checks shapes, dtypes and lengths itself (folded away where they hold)."""
    from script import Module

    class Wrap(Module):
        def __init__(self):
            super().__init__()
            self.gru = rnn.GRU(INPUT, HIDDEN, num_layers=2, rng=0, dtype="float64")

        def forward(self, x, h0):
            return self.gru(x, h0)[0].sum()

    x = np.random.default_rng(0).standard_normal((SEQ, BATCH, INPUT))
    wrapped, direct = script(Wrap()), script(rnn.GRU(INPUT, HIDDEN, num_layers=2, rng=0,
                                                     dtype="float64"))
    good = np.zeros((2, BATCH, HIDDEN))
    np.testing.assert_allclose(wrapped(x, good), direct(x, good)[0].sum())
    for shape in [(3, BATCH, HIDDEN), (2, HIDDEN, BATCH), (2, 1, BATCH * HIDDEN)]:
        for f in (wrapped, direct):
            with pytest.raises(ValueError, match="h0 must have shape"):
                f(x, np.zeros(shape))
    with pytest.raises(ValueError, match="dtype"):
        wrapped(x.astype(np.float32), good)
    with pytest.raises(ValueError, match="between 0 and the sequence length"):
        direct(x, None, np.array([1, 6, 2]))  # longer than the sequence


def test_a_parameter_assigned_to_the_front_end_is_the_one_computed_with():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    t = torch.nn.GRU(INPUT, HIDDEN).double()
    m = rnn.GRU(INPUT, HIDDEN, dtype=np.float64)
    m.load_state_dict({k: v.numpy().copy() for k, v in t.state_dict().items()})
    x = rng.standard_normal((SEQ, BATCH, INPUT))
    m(x)  # compiled before the assignment
    new = rng.standard_normal((3 * HIDDEN, INPUT))
    t.weight_ih_l0 = torch.nn.Parameter(torch.tensor(new))
    from script import Parameter
    m.weight_ih_l0 = Parameter(new.copy())
    assert np.array_equal(m.state_dict()["weight_ih_l0"], new)
    np.testing.assert_allclose(m(x)[0], t(torch.tensor(x))[0].detach().numpy(), rtol=1e-10)


@pytest.mark.parametrize("cell", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cells_check_the_state_batch_and_the_dtype(cell):
    c = getattr(rnn, cell)(INPUT, HIDDEN, rng=0)
    x = np.ones((2, INPUT), np.float32)

    def state(h):
        return (h, h) if cell == "LSTMCell" else h
    c(x, state(np.zeros((2, HIDDEN), np.float32)))
    with pytest.raises(ValueError, match="batch"):
        c(x, state(np.zeros((1, HIDDEN), np.float32)))  # numpy would broadcast it
    with pytest.raises(ValueError, match="dtype"):
        c(x.astype(np.float64), state(np.zeros((2, HIDDEN))))  # numpy would promote


@pytest.mark.parametrize("shape,message", [((0, BATCH, INPUT), "larger than 0"),
                                           ((SEQ, 0, INPUT), "batch of 0")])
def test_empty_sequences_and_zero_sizes_are_refused_clearly(shape, message):
    with pytest.raises(RNNInputError, match=message):
        rnn.LSTM(INPUT, HIDDEN)(np.zeros(shape, np.float32))
    for mode in ("LSTM", "GRU", "RNN"):
        with pytest.raises(ValueError, match="hidden_size must be"):
            getattr(rnn, mode)(INPUT, 0)


def test_the_loss_functions_refuse_targets_out_of_bounds():
    logits = np.random.default_rng(0).standard_normal((3, 4))
    for f in (rnn.cross_entropy, rnn.nll_loss, script(rnn.cross_entropy)):
        with pytest.raises(IndexError, match="out of bounds"):
            f(logits, np.array([0, -1, 2]))  # numpy would read the last class
        with pytest.raises(IndexError, match="out of bounds"):
            f(logits, np.array([0, 4, 2]))
    assert np.isfinite(rnn.cross_entropy(logits, np.array([0, -100, 2])))


def test_a_called_model_deep_copies_and_pickles():
    """``copy.deepcopy(model)`` (keeping the best model) and pickle, after the model has run:
    the copy leaves the compiled code out and has arrays of its own."""
    import copy
    import pickle
    m = rnn.LSTM(INPUT, HIDDEN, rng=0)
    x = np.random.default_rng(1).standard_normal((SEQ, BATCH, INPUT)).astype(np.float32)
    out = m(x)[0]
    for twin in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        np.testing.assert_array_equal(twin(x)[0], out)
        twin.get_parameter("weight_ih_l0").data[...] = 0.0
        assert not np.allclose(twin(x)[0], out)
        np.testing.assert_array_equal(m(x)[0], out)
