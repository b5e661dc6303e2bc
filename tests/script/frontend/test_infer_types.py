"""Types from example inputs: ``script(fn, example_inputs=...)`` and ``infer_annotations``."""

import re

import numpy as np
import pytest

from script import ScriptError, Tensor, ops, script
from script.frontend.infer_types import infer_annotations
from tests.programs import cells
from tests.programs import unannotated_cells as bare

B, IN, H, T = 3, 4, 6, 5


def _arrays(*shapes, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(s).astype(dtype) for s in shapes)


def _lstm_weights(gates=4):
    return _arrays((gates * H, IN), (gates * H, H), (gates * H,), (gates * H,), seed=1)


def _cell_examples():
    x, hx, cx = _arrays((B, IN), (B, H), (B, H))
    w_ih, w_hh, b_ih, b_hh = _lstm_weights()
    g_ih, g_hh, gb_ih, gb_hh = _lstm_weights(3)
    r_ih, r_hh, rb_ih, rb_hh = _lstm_weights(1)
    (igates,) = _arrays((B, 4 * H), seed=2)
    alpha, beta_i, beta_h, bias = _arrays((4 * H,), (4 * H,), (4 * H,), (4 * H,), seed=3)
    (seq,) = _arrays((T, B, IN), seed=4)
    params = [w_ih, w_hh, b_ih, b_hh, *_lstm_weights()[:1], w_hh, b_ih, b_hh]
    params[4] = _arrays((4 * H, H), seed=5)[0]  # layer 2 reads layer 1's hidden state
    return {
        "lstm_cell": (x, (hx, cx), w_ih, w_hh, b_ih, b_hh),
        "flat_lstm_cell": (x, hx, cx, w_ih, w_hh, b_ih, b_hh),
        "premul_lstm_cell": (igates, (hx, cx), w_hh, b_ih, b_hh),
        "premul_lstm_cell_no_bias": (igates, (hx, cx), w_hh, b_hh),
        "milstm_cell": (x, hx, cx, w_ih, w_hh, alpha, beta_i, beta_h, bias),
        "gru_cell": (x, hx, g_ih, g_hh, gb_ih, gb_hh),
        "rnn_tanh_cell": (x, hx, r_ih, r_hh, rb_ih, rb_hh),
        "rnn_relu_cell": (x, hx, r_ih, r_hh, rb_ih, rb_hh),
        "lstm_layer": (seq, hx, cx, w_ih, w_hh, b_ih, b_hh),
        "lstm_layer_indexed": (seq, hx, cx, w_ih, w_hh, b_ih, b_hh),
        "lstm_multilayer": (seq, np.stack([hx, hx]), np.stack([cx, cx]), params),
    }


def _without_positions(graph) -> str:
    # the two versions live in different files: only their source positions may differ
    return re.sub(r" # \S+:\d+:\d+", "", str(graph))


@pytest.mark.parametrize("name", sorted(_cell_examples()))
def test_example_typed_cells_compile_like_annotated(name):
    args = _cell_examples()[name]
    annotated = script(getattr(cells, name))
    inferred = script(getattr(bare, name), example_inputs=[args])
    assert _without_positions(inferred.graph_for(*args)) == \
        _without_positions(annotated.graph_for(*args))
    got, want = _flat(inferred(*args)), _flat(getattr(cells, name)(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _flat(item)]
    return [value]


def test_several_examples_give_the_same_graph():
    args = _cell_examples()["gru_cell"]
    other = tuple(np.ascontiguousarray(a[:2] if a.ndim == 2 and a.shape[0] == B else a)
                  for a in args)
    inferred = script(bare.gru_cell, example_inputs=[args, other])
    annotated = script(cells.gru_cell)
    assert _without_positions(inferred.graph_for(*other)) == \
        _without_positions(annotated.graph_for(*other))


def test_infer_annotations_text_for_the_lstm_cell():
    args = _cell_examples()["lstm_cell"]
    assert infer_annotations(bare.lstm_cell, [args]) == (
        "def lstm_cell(x: Tensor, hidden: Tuple[Tensor, Tensor], w_ih: Tensor, w_hh: Tensor, "
        "b_ih: Tensor, b_hh: Tensor) -> Tuple[Tensor, Tensor]:")
    assert script.infer_annotations is infer_annotations


def scaled(x, n, scale, names, table, maybe=None):
    out = x * scale + float(n)
    if maybe is not None:
        out = out + maybe
    return out + table[names[0]]


def test_scalars_containers_and_optional():
    (x, y) = _arrays((2, 3), (2, 3))
    examples = [(x, 1, 2, ["a"], {"a": y}, None), (x, 2, 0.5, ["a", "b"], {"a": y}, y)]
    assert infer_annotations(scaled, examples) == (
        "def scaled(x: Tensor, n: int, scale: float, names: List[str], "
        "table: Dict[str, Tensor], maybe: Optional[Tensor] = None) -> Tensor:")
    f = script(scaled, example_inputs=examples)
    assert [str(v.type) for v in f.graph.inputs] == [
        "Tensor", "int", "float", "str[]", "Dict(str, Tensor)", "Tensor?"]
    np.testing.assert_allclose(f(x, 3, 1.5, ["a"], {"a": y}),
                               scaled(x, 3, 1.5, ["a"], {"a": y}), rtol=1e-6)
    np.testing.assert_allclose(f(x, 3, 1.5, ["a"], {"a": y}, y),
                               scaled(x, 3, 1.5, ["a"], {"a": y}, y), rtol=1e-6)


def test_the_examples_dtype_does_not_pin_the_parameter():
    """An array parameter the examples type is a ``Tensor``, as the annotation written for it
    says: another dtype specializes again; a parameter every example leaves at its None
    default is Optional, so a later call may pass an array."""
    (x,) = _arrays((2, 3), dtype=np.float64)
    f = script(scaled_only, example_inputs=[(x, 2.0)])
    assert str(f.graph.inputs[0].type) == "Tensor"
    np.testing.assert_allclose(f(x.astype(np.float32), 2.0), x.astype(np.float32) * 2.0)
    assert f(x.astype(np.float32), 2.0).dtype == np.float32
    g = script(step_with_state, example_inputs=[(x,)])
    np.testing.assert_allclose(g(x), step_with_state(x))
    np.testing.assert_allclose(g(x, x), step_with_state(x, x))
    mixed = script(scaled_only, example_inputs=[(x, 2.0), (x.astype(np.float32), 1.0)])
    assert str(mixed.graph.inputs[0].type) == "Tensor"
    np.testing.assert_allclose(mixed(x.astype(np.float32), 3.0), x.astype(np.float32) * 3.0)


def scaled_only(x, factor):
    return x * factor


def step_with_state(x, h=None):
    if h is None:
        h = np.zeros_like(x)
    return np.tanh(x + h)


def test_conflicting_examples_name_the_parameter():
    (x,) = _arrays((2, 3))
    with pytest.raises(ScriptError, match="parameter 'factor'.*int in one example and a "
                                          "float32 tensor in another"):
        script(scaled_only, example_inputs=[(x, 2), (x, x)]).graph_for(x, 2.0)


def pick(flag, x):
    if flag:
        return x
    return 1.0


def test_conflicting_returns_are_reported():
    (x,) = _arrays((2,))
    with pytest.raises(ScriptError, match="the return value"):
        infer_annotations(pick, [(True, x), (False, x)])


def partly_annotated(x: Tensor, pair, n: int = 2) -> Tensor:
    a, b = pair
    return x * a + b * float(n)


def test_annotations_in_the_source_are_kept():
    x, a, b = _arrays((2,), (2,), (2,))
    text = infer_annotations(partly_annotated, [(x, (a, b))])
    assert text == ("def partly_annotated(x: Tensor, pair: Tuple[Tensor, Tensor], "
                    "n: int = 2) -> Tensor:")
    f = script(partly_annotated, example_inputs=[(x, (a, b))])
    np.testing.assert_allclose(f(x, (a, b)), partly_annotated(x, (a, b)), rtol=1e-6)


def stack_all(xs):
    return ops.stack(xs, 0)


def test_empty_lists_default_to_tensor_elements():
    (x,) = _arrays((2,))
    assert infer_annotations(stack_all, [([x, x],)]) == \
        "def stack_all(xs: List[Tensor]) -> Tensor:"
    assert "List[Tensor]" in infer_annotations(len_of, [([],)])


def len_of(xs):
    return len(xs)


def test_bad_example_lists_are_rejected():
    (x,) = _arrays((2,))
    with pytest.raises(ScriptError, match="list of argument tuples"):
        script(scaled_only, example_inputs=(x, 2.0))(x, 2.0)
    with pytest.raises(ScriptError, match="example 0 cannot be passed"):
        script(scaled_only, example_inputs=[(x,)])(x, 2.0)
