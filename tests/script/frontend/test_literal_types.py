"""Empty (and number) literals typed from their later use: ``out = []`` then
``out.append(i * 2)``, ``hs = {}`` then ``hs[-1] = h``, ``grads = [0, 0]`` then
``grads[i] += g``; no annotation needed, results equal plain Python/numpy."""

from typing import Dict, List, Optional

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.gradcheck import check_vjp


def doubled(n: int):
    out = []
    for i in range(n):
        out.append(i * 2)
    return out


def names(n: int):
    seen = []
    for i in range(n):
        seen.append("a" if i % 2 else "b")
    return seen


def counts(xs: List[int]):
    hist = {}
    for x in xs:
        hist[x] = hist.get(x, 0) + 1
    return hist


def weights_by_name(x: Tensor):
    d = {}
    d["w"] = x * 2.0
    d["b"] = x + 1.0
    return d["w"] + d["b"]


def gradient_list(a: Tensor, b: Tensor):
    grads = [0, 0]
    for i in range(3):
        grads[0] += a * i
        grads[1] += b * b
    return grads[0] + grads[1]


def min_char_rnn_forward(inputs: List[int], targets: List[int], hprev, Wxh, Whh, Why, bh, by):
    # the forward pass of lossFun in min-char-rnn.py (Andrej Karpathy, BSD licence); the one-hot
    # `xs[t] = np.zeros((vocab_size, 1)); xs[t][inputs[t]] = 1` is written as a comparison
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    vocab_size = Wxh.shape[1]
    for t in range(len(inputs)):
        xs[t] = (np.arange(vocab_size) == inputs[t]).astype(float).reshape(vocab_size, 1)
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys[t] = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
        loss += -np.log(ps[t][targets[t], 0])
    return loss, hs[len(inputs) - 1]


def rnn_args(dtype):
    r = np.random.default_rng(0)
    hidden, vocab = 4, 5
    weights = [r.standard_normal(s).astype(dtype) * 0.3
               for s in [(hidden, vocab), (hidden, hidden), (vocab, hidden), (hidden, 1),
                         (vocab, 1)]]
    return ([1, 2, 0, 4], [2, 0, 4, 3], r.random((hidden, 1)).astype(dtype), *weights)


@pytest.mark.parametrize("fn,args", [(doubled, (4,)), (doubled, (0,)), (names, (3,)),
                                     (counts, ([3, 1, 3, 2, 3],))])
def test_python_values_equal(fn, args):
    got, want = script(fn)(*args), fn(*args)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tensor_values_equal(dtype):
    x = np.random.default_rng(2).random((2, 3)).astype(dtype)
    for fn, args in [(weights_by_name, (x,)), (gradient_list, (x[0], x[1]))]:
        np.testing.assert_allclose(script(fn)(*args), fn(*args), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_min_char_rnn_forward(dtype):
    args = rnn_args(dtype)
    got, want = script(min_char_rnn_forward)(*args), min_char_rnn_forward(*args)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=1e-5)


def test_gradients_equal_finite_differences():
    x = np.random.default_rng(3).random((2, 3))
    check_vjp(script(weights_by_name), (x,))
    check_vjp(script(min_char_rnn_forward), rnn_args(np.float64))


def test_a_store_no_literal_type_fits_is_still_an_error():
    def conflicting(x: Tensor):
        out = []
        out.append(1)
        out.append(x)  # ERROR
        return out

    with pytest.raises(ScriptError, match="cannot add a int to a list of Tensor") as info:
        script(conflicting)(np.ones(2))
    assert "out.append(1)" in str(info.value)


def test_an_annotated_literal_keeps_its_type():
    def annotated(n: int):
        out: List[float] = []
        out.append("a")
        return out

    with pytest.raises(ScriptError, match="cannot add a str to a list of float"):
        script(annotated)(1)


# -- an empty literal given to an Optional container: cs231n's optimizers ---------------------
def sgd(w: Tensor, dw: Tensor, config: Optional[Dict[str, float]] = None):
    """cs231n's ``optim.sgd`` (assignment 2, MIT), its update written ``w = w - ...``: an
    in-place update of an argument is refused."""
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    w = w - config["learning_rate"] * dw
    return w, config


def collected(x: Tensor, hs: Optional[List[Tensor]] = None) -> List[Tensor]:
    if hs is None:
        hs = []
    hs.append(np.tanh(x))
    return hs


@pytest.mark.parametrize("config", [None, {"learning_rate": 0.5}, {"momentum": 0.9}])
def test_an_empty_dict_takes_the_optional_parameters_type(config):
    rng = np.random.default_rng(0)
    w, dw = rng.standard_normal(4), rng.standard_normal(4)
    mine = None if config is None else dict(config)
    theirs = None if config is None else dict(config)
    got_w, got_config = script(sgd)(w, dw, mine)
    want_w, want_config = sgd(w, dw, theirs)
    np.testing.assert_array_equal(got_w, want_w)
    assert got_config == want_config and mine == theirs  # the caller's dict updated alike


def test_an_empty_list_takes_the_optional_parameters_type():
    x = np.linspace(-1, 1, 5)
    got = script(collected)(x)
    assert len(got) == 1 and np.array_equal(got[0], np.tanh(x))
    got = script(collected)(x, [x])
    assert len(got) == 2 and np.array_equal(got[0], x) and np.array_equal(got[1], np.tanh(x))


def setdefaults(d: Dict[str, float], k: str) -> float:
    first = d.setdefault(k, 2.5)
    second = d.setdefault(k, 7.0)  # already there: the stored value, nothing stored
    return first + second


def test_dict_setdefault():
    for start in ({}, {"a": 1.0}, {"b": 3.0}):
        mine, theirs = dict(start), dict(start)
        assert script(setdefaults)(mine, "a") == setdefaults(theirs, "a")
        assert mine == theirs


def unannotated_config(x: Tensor, opt=None):
    if opt is None:
        opt = {}
    return x * opt.get("lr", 0.1)


def test_an_unannotated_parameter_made_a_dict_is_none_where_the_call_leaves_it():
    """Read as None where the call leaves it (``script.runtime.call_types.none_arguments``);
    a call passing a dict then widens it to an Optional dict."""
    f, x = script(unannotated_config), np.ones(3)
    np.testing.assert_array_equal(f(x), unannotated_config(x))
    np.testing.assert_array_equal(f(x, {"lr": 0.5}), unannotated_config(x, {"lr": 0.5}))
    np.testing.assert_array_equal(f(x), unannotated_config(x))


def unannotated_history(x: Tensor, hs=None):
    if hs is None:
        hs = []
    hs.append(x)
    return hs


def test_an_unannotated_parameter_made_a_list_is_none_where_the_call_leaves_it():
    f, x = script(unannotated_history), np.ones(3)
    got, want = f(x), unannotated_history(x)
    assert type(got) is list and len(got) == len(want) == 1
    np.testing.assert_array_equal(got[0], want[0])
