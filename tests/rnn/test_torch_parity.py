"""torch.nn features a PyTorch user reaches for, against torch itself: packed sequences, the
cross-entropy options, optimizer options, cells without a state or batch, pretrained
embeddings, torch dtypes and optimizer state dicts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import rnn
from rnn.compiled import CompiledModule
from script import Parameter, vjp

torch = pytest.importorskip("torch")


def _copy(module, twin):
    module.load_state_dict({k: v.detach().numpy().copy() for k, v in twin.state_dict().items()})


@pytest.mark.parametrize("mode,batch_first,enforce_sorted",
                         [("LSTM", False, True), ("GRU", True, False), ("RNN", False, False)])
def test_packed_sequences_equal_torchs(mode, batch_first, enforce_sorted):
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    rng = np.random.default_rng(0)
    t = getattr(torch.nn, mode)(4, 5, batch_first=batch_first, bidirectional=True).double()
    m = getattr(rnn, mode)(4, 5, batch_first=batch_first, bidirectional=True, dtype=np.float64)
    _copy(m, t)
    lengths = np.array([6, 4, 4, 2]) if enforce_sorted else np.array([2, 6, 3, 5])
    x = rng.standard_normal((4, 6, 4) if batch_first else (6, 4, 4))
    tp = pack_padded_sequence(torch.tensor(x), torch.tensor(lengths), batch_first=batch_first,
                              enforce_sorted=enforce_sorted)
    p = rnn.pack_padded_sequence(x, lengths, batch_first, enforce_sorted)
    np.testing.assert_array_equal(p.data, tp.data.numpy())
    np.testing.assert_array_equal(p.batch_sizes, tp.batch_sizes.numpy())
    (to, ts), (o, s) = t(tp), m(p)
    np.testing.assert_allclose(o.data, to.data.detach().numpy(), rtol=1e-10)
    ts, s = (ts[0], s[0]) if mode == "LSTM" else (ts, s)
    np.testing.assert_allclose(s, ts.detach().numpy(), rtol=1e-10)
    padded, n = rnn.pad_packed_sequence(o, batch_first)
    tpadded, tn = pad_packed_sequence(to, batch_first)
    np.testing.assert_allclose(padded, tpadded.detach().numpy(), rtol=1e-10)
    np.testing.assert_array_equal(n, tn.numpy())
    with pytest.raises(ValueError, match="decreasing"):
        rnn.pack_padded_sequence(x, np.array([2, 6, 3, 5]), batch_first)


CE_CASES = list(itertools.product([(5, 4), (3, 4, 6)], ["none", "mean", "sum"], [0.0, 0.2],
                                  [False, True]))


@pytest.mark.parametrize("shape,reduction,smoothing,weighted", CE_CASES)
def test_cross_entropy_options_equal_torchs(shape, reduction, smoothing, weighted):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    target = rng.integers(0, shape[1], size=shape[:1] + shape[2:])
    target.flat[1] = -100
    w = rng.random(shape[1]) + 0.5 if weighted else None
    t = torch.nn.CrossEntropyLoss(weight=None if w is None else torch.tensor(w),
                                  reduction=reduction, label_smoothing=smoothing)
    xt = torch.tensor(x, requires_grad=True)
    want = t(xt, torch.tensor(target))
    ct = rng.standard_normal(want.shape)
    (want * torch.tensor(ct)).sum().backward()
    m = rnn.CrossEntropyLoss(weight=w, reduction=reduction, label_smoothing=smoothing)
    np.testing.assert_allclose(m(x, target), want.detach().numpy(), rtol=1e-10)
    _, back = vjp(m, x, target)
    np.testing.assert_allclose(back(ct)[0], xt.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_optimizer_options_equal_torchs():
    rng = np.random.default_rng(0)
    w0, grads = rng.standard_normal((3, 2)), [rng.standard_normal((3, 2)) for _ in range(4)]
    for make, make_t in [
            (lambda p: rnn.Adam(p, lr=0.1, amsgrad=True),
             lambda p: torch.optim.Adam(p, lr=0.1, amsgrad=True)),
            (lambda p: rnn.AdamW(p, lr=0.1, amsgrad=True, maximize=True),
             lambda p: torch.optim.AdamW(p, lr=0.1, amsgrad=True, maximize=True)),
            (lambda p: rnn.SGD(p, lr=0.1, momentum=0.9, maximize=True),
             lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, maximize=True))]:
        p, tp = Parameter(w0.copy()), torch.nn.Parameter(torch.tensor(w0))
        opt, topt = make([p]), make_t([tp])
        for g in grads:
            p.grad, tp.grad = g.copy(), torch.tensor(g)
            opt.step()
            topt.step()
        np.testing.assert_allclose(p.data, tp.detach().numpy(), rtol=1e-12)
    tp = torch.nn.Parameter(torch.tensor(w0))
    topt = torch.optim.Adam([tp], lr=0.1)
    tp.grad = torch.tensor(grads[0])
    topt.step()
    p = Parameter(w0.copy())
    resumed = rnn.Adam([p], lr=0.1)
    resumed.load_state_dict(topt.state_dict())  # torch's tensors and step count
    p.data[...] = tp.detach().numpy()
    p.grad, tp.grad = grads[1].copy(), torch.tensor(grads[1])
    resumed.step()
    topt.step()
    np.testing.assert_allclose(p.data, tp.detach().numpy(), rtol=1e-12)


def test_clip_norms_and_zero_grad_equal_torchs():
    rng = np.random.default_rng(1)
    gs = [rng.standard_normal((3, 2)), rng.standard_normal(4)]
    for norm_type in (2.0, 1.0, float("inf")):
        ps = [Parameter(np.zeros_like(g)) for g in gs]
        tps = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in gs]
        for p, tp, g in zip(ps, tps, gs):
            p.grad, tp.grad = g.copy(), torch.tensor(g)
        total = rnn.clip_grad_norm_(ps, 0.5, norm_type=norm_type)
        ttotal = torch.nn.utils.clip_grad_norm_(tps, 0.5, norm_type=norm_type)
        assert total == pytest.approx(float(ttotal), rel=1e-12)
        for p, tp in zip(ps, tps):
            np.testing.assert_allclose(p.grad, tp.grad.numpy(), rtol=1e-12)
    m = rnn.LSTM(2, 3)
    for p in m.parameters():
        p.grad = np.ones_like(p.data)
    m.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in m.parameters())
    rnn.SGD(m.parameters(), lr=0.1).zero_grad()
    assert all(p.grad is None for p in m.parameters())


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cells_without_a_state_or_a_batch_equal_torchs(name):
    rng = np.random.default_rng(2)
    t, c = getattr(torch.nn, name)(4, 5).double(), getattr(rnn, name)(4, 5, dtype=torch.float64)
    _copy(c, t)
    for x in (rng.standard_normal((3, 4)), rng.standard_normal(4)):
        want, got = t(torch.tensor(x)), c(x)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for g, w in zip(got, want):
            assert g.shape == tuple(w.shape)
            np.testing.assert_allclose(g, w.detach().numpy(), rtol=1e-10)


def test_pretrained_embeddings_padding_left_and_torch_dtypes():
    table = np.arange(12.0).reshape(4, 3)
    frozen = rnn.Embedding.from_pretrained(torch.tensor(table), padding_idx=0)
    tokens = np.array([0, 2, 2])
    out, back = vjp(frozen, tokens)
    np.testing.assert_array_equal(out, table[tokens])
    back(np.ones_like(out))
    assert frozen.get_parameter("weight").grad is None  # frozen: no gradient
    tuned = rnn.Embedding.from_pretrained(table, freeze=False)
    out, back = vjp(tuned, tokens)
    back(np.ones_like(out))
    assert tuned.get_parameter("weight").grad[2].tolist() == [2.0, 2.0, 2.0]
    seqs = [np.ones(2), np.ones(3)]
    want = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], padding_side="left")
    np.testing.assert_array_equal(rnn.pad_sequence(seqs, padding_side="left"), want.numpy())
    lstm = rnn.LSTM(4, 5, dtype=torch.float64, device="cpu")
    lstm.flatten_parameters()
    assert lstm.weight_ih_l0.dtype == np.float64


class _TiedLM(CompiledModule):
    def __init__(self, tie_by_array: bool):
        super().__init__()
        self.emb = rnn.Embedding(6, 4, rng=0, dtype=np.float64)
        self.dec = torch_free_linear(4, 6)
        if tie_by_array:
            self.dec.weight = self.emb.weight  # torch's idiom: reads as the array here
        else:
            self.dec.weight = self.emb.get_parameter("weight")

    def forward(self, tokens, targets):
        h = np.tanh(self.emb(tokens))
        return rnn.cross_entropy(h @ self.dec.weight.T + self.dec.bias, targets)


def torch_free_linear(i, o):
    from script import Module

    class Linear(Module):
        def __init__(self):
            super().__init__()
            self.weight = Parameter(np.random.default_rng(1).standard_normal((o, i)))
            self.bias = Parameter(np.zeros(o))
    return Linear()


@pytest.mark.parametrize("tie_by_array", [True, False])
def test_tied_weights_take_both_gradients_and_both_names(tie_by_array):
    """``decoder.weight = encoder.weight`` ties the two (the array a parameter's attribute reads
    as is its Parameter's): the table's gradient has both uses, as torch's, and the state dict
    lists it under both names, as torch's."""
    m = _TiedLM(tie_by_array)
    tokens, targets = np.array([1, 2, 3]), np.array([2, 3, 4])
    _, back = vjp(m, tokens, targets)
    back(1.0)
    got = m.emb.get_parameter("weight").grad
    t_emb = torch.nn.Embedding(6, 4).double()
    with torch.no_grad():
        t_emb.weight.copy_(torch.tensor(m.emb.weight))
    h = torch.tanh(t_emb(torch.tensor(tokens)))
    loss = torch.nn.functional.cross_entropy(h @ t_emb.weight.T, torch.tensor(targets))
    loss.backward()
    np.testing.assert_allclose(got, t_emb.weight.grad.numpy(), rtol=1e-10)
    assert {"emb.weight", "dec.weight", "dec.bias"} == set(m.state_dict())
    m.load_state_dict({"emb.weight": np.ones((6, 4)), "dec.bias": np.zeros(6)})
    assert (m.dec.weight == 1.0).all()


def test_scripted_models_deep_copy_and_attributes_set_later_are_read():
    import copy
    import pickle

    from script import script
    m = rnn.LSTM(3, 4, num_layers=2, rng=0)
    s = script(m)
    x = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)
    out = s(x)[0]
    for twin in (copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        np.testing.assert_array_equal(twin(x)[0], out)
        assert twin.python_module is not m
    m.dropout = 0.9  # read at each call, as torch's
    m.train()
    assert not np.allclose(m(x)[0], out)
    crit = rnn.CrossEntropyLoss()
    logits, targets = np.ones((3, 4)), np.array([0, 1, 2])
    mean = crit(logits, targets)
    crit.reduction = "sum"
    assert crit(logits, targets) == pytest.approx(3 * mean)


def test_clip_by_value_step_with_a_closure_and_the_norm_as_torchs():
    rng = np.random.default_rng(3)
    g = rng.standard_normal((3, 2))
    p, tp = Parameter(np.zeros((3, 2))), torch.nn.Parameter(torch.zeros(3, 2, dtype=torch.float64))
    p.grad, tp.grad = g.copy(), torch.tensor(g)
    rnn.clip_grad_value_([p], 0.5)
    torch.nn.utils.clip_grad_value_([tp], 0.5)
    np.testing.assert_array_equal(p.grad, tp.grad.numpy())
    assert rnn.clip_grad_norm_([p], 10.0).item() == pytest.approx(
        torch.nn.utils.clip_grad_norm_([tp], 10.0).item(), rel=1e-12)
    opt = rnn.SGD([p], lr=0.1)
    assert opt.step(lambda: 1.5) == 1.5


def test_unfreezing_ties_after_copies_and_the_former_loss_signature():
    import copy
    emb = rnn.Embedding.from_pretrained(np.arange(12.0).reshape(4, 3))
    emb.get_parameter("weight").requires_grad = True  # unfrozen after a warm-up
    out, back = vjp(emb, np.array([1, 1]))
    back(np.ones_like(out))
    assert emb.get_parameter("weight").grad[1].tolist() == [2.0, 2.0, 2.0]
    m = _TiedLM(tie_by_array=False)
    twin = copy.deepcopy(m)
    twin.dec.weight = twin.emb.weight  # tying in a copy: its parameters are known too
    assert twin.dec.get_parameter("weight") is twin.emb.get_parameter("weight")
    crit = rnn.CrossEntropyLoss("sum", 0)  # (reduction, ignore_index), the former signature
    assert crit.reduction == "sum" and crit.ignore_index == 0


def test_linear_dropout_sequential_and_mse_equal_torchs():
    rng = np.random.default_rng(4)
    t = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Dropout(0.3),
                            torch.nn.Linear(5, 2)).double().eval()
    from script import Module, script

    class Tanh(Module):
        def forward(self, x):
            return np.tanh(x)

    m = rnn.Sequential(rnn.Linear(4, 5, dtype=np.float64), Tanh(), rnn.Dropout(0.3),
                       rnn.Linear(5, 2, dtype=np.float64)).eval()
    m.load_state_dict({k.replace("0.", "layers.0.").replace("3.", "layers.3."): v.detach().numpy()
                       for k, v in t.state_dict().items()})
    x, y = rng.standard_normal((6, 4)), rng.standard_normal((6, 2))
    xt = torch.tensor(x, requires_grad=True)
    for reduction in ("mean", "sum", "none"):
        want = torch.nn.MSELoss(reduction=reduction)(t(xt), torch.tensor(y))
        got = rnn.MSELoss(reduction)(script(m)(x), y)
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-12)
    want = torch.nn.MSELoss()(t(xt), torch.tensor(y))
    want.backward()
    loss = rnn.MSELoss()

    class Model(Module):
        def __init__(self):
            super().__init__()
            self.net = m
            self.loss = loss

        def forward(self, x, y):
            return self.loss(self.net(x), y)

    model = Model()
    _, back = vjp(model, x, y)
    gx = back(1.0)[0]
    np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(m[0].get_parameter("weight").grad, t[0].weight.grad.numpy(),
                               rtol=1e-10)
    drop = rnn.Dropout(0.5)
    assert (drop(np.ones((100, 10))) == 0).any()
    assert (drop.eval()(np.ones(3)) == 1).all()
