"""Fusion kernels that write an output straight into the preallocated slot a ``write_slot``
stores it in (the per-step gate gradients of recurrent layers' backward)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import fuser
import ir
from benchmarks.fastrnns import cells
from benchmarks.fastrnns.factory import Sizes, rnn_inputs
from script import script
from script.runtime.autodiff import compile_gradient, run_vjp
from script.runtime.codegen import generate
from script.runtime.slot_writes import slot_writes
from tests.gradcheck import check_vjp

GROUP = """
with prim::FusionGroup_0 = graph(%a : Float(4, 5), %b : Float(4, 5)):
  %r : Float(4, 5) = tensor::mul(%a, %b)
  %s : Float(4, 5) = tensor::tanh(%r)
  return (%s)
"""


def loop_graph(body: str, buf_shape: str = "3, 4, 5") -> ir.Graph:
    """A 3-step loop over ``x``'s rows whose body runs the fusion group ``o = tanh(x[i] * c)``
    and then ``body`` (which writes ``buf`` and returns the carried ``c``)."""
    text = f"""graph(%x : Float(3, 4, 5), %y : Float(4, 5)):
  %shape : int[] = prim::Constant[value=[{buf_shape}]]()
  %dt : str = prim::Constant[value="float32"]()
  %buf : Float({buf_shape}) = tensor::empty(%shape, %dt)
  %n : int = prim::Constant[value=3]()
  %t : bool = prim::Constant[value=True]()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %h : Float(4, 5) = prim::Loop(%n, %t, %y)
    block0(%i : int, %c : Float(4, 5)):
      %xi : Float(4, 5) = tensor::select(%x, %zero, %i)
      %o : Float(4, 5) = prim::FusionGroup_0(%xi, %c)
{body}
  return (%buf, %h)
""" + GROUP
    return ir.parse(text)


def reference(x: np.ndarray, y: np.ndarray, second_write: bool = False,
              carried: str = "sum", axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    buf = np.zeros((3, 4, 5) if axis == 0 else (4, 3, 5), np.float32)
    c = y
    for i in range(3):
        o = np.tanh(x[i] * c)
        if axis == 0:
            buf[i] = o
        else:
            buf[:, i] = o
        if second_write:
            buf[i] = x[i]
        c = o + c if carried == "sum" else o
    return buf, c


def run(graph: ir.Graph, *args: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], str]:
    fn, source = generate(graph)
    results = [fn(*args) for _ in range(3)]  # later calls take the kernel's guarded path
    for r in results[1:]:
        np.testing.assert_array_equal(r[0], results[0][0])
    return results[-1], source


@pytest.fixture
def xy() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (rng.standard_normal((3, 4, 5)).astype(np.float32),
            rng.standard_normal((4, 5)).astype(np.float32))


def loop_lines(source: str) -> list[str]:
    """The lines of the generated source's (first) loop body."""
    lines = source.splitlines()
    start = next(k for k, line in enumerate(lines) if line.lstrip().startswith("for "))
    depth = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start + 1:]:
        if len(line) - len(line.lstrip()) <= depth:
            break
        body.append(line)
    return body


def slot_copies(source: str) -> list[str]:
    """``buf[i] = value`` statements in the loop body."""
    return [line for line in loop_lines(source) if re.fullmatch(r"\s*\w+\[\w+\] = \w+", line)]


def test_qualifying_output_is_computed_in_its_slot(xy):
    graph = loop_graph("""       = tensor::write_slot(%buf, %zero, %i, %o)
      %c2 : Float(4, 5) = tensor::add(%o, %c)
      -> (%t, %c2)""")
    (buf, h), source = run(graph, *xy)
    assert ".into((" in source and not slot_copies(source)
    want_buf, want_h = reference(*xy)
    np.testing.assert_allclose(buf, want_buf, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)


def test_carried_output_keeps_the_copy(xy):
    graph = loop_graph("""       = tensor::write_slot(%buf, %zero, %i, %o)
      -> (%t, %o)""")
    (buf, h), source = run(graph, *xy)
    assert ".into(" not in source and len(slot_copies(source)) == 1
    want_buf, want_h = reference(*xy, carried="o")
    np.testing.assert_allclose(buf, want_buf, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)


def test_second_write_to_the_buffer_keeps_the_copy(xy):
    # o is read after the buffer's slot is overwritten: it must keep its own values
    graph = loop_graph("""       = tensor::write_slot(%buf, %zero, %i, %o)
       = tensor::write_slot(%buf, %zero, %i, %xi)
      %c2 : Float(4, 5) = tensor::add(%o, %c)
      -> (%t, %c2)""")
    (buf, h), source = run(graph, *xy)
    assert ".into(" not in source and len(slot_copies(source)) == 2
    want_buf, want_h = reference(*xy, second_write=True)
    np.testing.assert_allclose(buf, want_buf, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)


def test_output_written_into_later_keeps_the_copy(xy):
    # o is changed in place after its slot is written: the slot must keep o's values from before
    graph = loop_graph("""       = tensor::write_slot(%buf, %zero, %i, %o)
      %row : Float(5) = tensor::select(%xi, %zero, %zero)
       = tensor::write_slot(%o, %zero, %zero, %row)
      %c2 : Float(4, 5) = tensor::add(%o, %c)
      -> (%t, %c2)""")
    (buf, h), source = run(graph, *xy)
    assert ".into(" not in source
    x, c = xy
    want_buf = np.zeros((3, 4, 5), np.float32)
    for i in range(3):
        o = np.tanh(x[i] * c)
        want_buf[i] = o
        o[0] = x[i][0]
        c = o + c
    np.testing.assert_allclose(buf, want_buf, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, c, rtol=1e-5, atol=1e-6)


def test_view_of_output_carried_keeps_the_copy(xy):
    graph = loop_graph("""       = tensor::write_slot(%buf, %zero, %i, %o)
      %none : NoneType = prim::Constant()
      %ot : Float(5, 4) = tensor::transpose(%o, %none)
      %oo : Float(4, 5) = tensor::transpose(%ot, %none)
      -> (%t, %oo)""")
    (buf, h), source = run(graph, *xy)
    assert ".into(" not in source
    want_buf, want_h = reference(*xy, carried="o")
    np.testing.assert_allclose(buf, want_buf, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)


def test_slot_that_is_not_contiguous_gets_a_copy(xy):
    # a buffer written along axis 1: the slot buf[:, i] is strided, the kernel result is copied
    graph = loop_graph("""       = tensor::write_slot(%buf, %one, %i, %o)
      %c2 : Float(4, 5) = tensor::add(%o, %c)
      -> (%t, %c2)""", buf_shape="4, 3, 5")
    (buf, h), source = run(graph, *xy)
    assert ".into((" in source and "[:, " in source
    want_buf, want_h = reference(*xy, axis=1)
    np.testing.assert_allclose(buf, want_buf, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)


def test_into_copies_into_outs_it_cannot_write_through():
    graph = ir.parse("""graph(%a : Float(4, 5), %b : Float(4, 5)):
  %o : Float(4, 5) = prim::FusionGroup_0(%a, %b)
  return (%o)
""" + GROUP)
    group = next(n for n in graph.nodes() if n.kind == "prim::FusionGroup")
    kernel = fuser.cpu.compile_group(group.subgraph).site()
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((4, 5)).astype(np.float32) for _ in range(2))
    want = np.tanh(a * b)
    for call in range(3):  # the general path (a copy), then the guarded one (in place)
        direct = np.zeros((4, 5), np.float32)
        assert (kernel.into((direct,), a, b) is direct) == (call > 0)
        np.testing.assert_allclose(direct, want, rtol=1e-5, atol=1e-6)
        strided = np.zeros((5, 4), np.float32).T
        got = kernel.into((strided,), a, b)
        np.testing.assert_allclose(strided, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        wrong_dtype = np.zeros((4, 5), np.float64)
        kernel.into((wrong_dtype,), a, b)
        np.testing.assert_allclose(wrong_dtype, want, rtol=1e-5, atol=1e-6)


LAYERS = {
    "lstm_layer": (4, lambda inp: (inp.x, inp.hx[0], inp.cx[0], *inp.weights[0])),
    "gru_layer": (3, lambda inp: (inp.x, inp.hx[0], *inp.weights[0])),
}


def layer_args(name: str, dtype: str, sizes: Sizes) -> tuple[np.ndarray, ...]:
    gates, pick = LAYERS[name]
    args = pick(rnn_inputs(sizes, gates=gates))
    return tuple(np.asarray(a, dtype=dtype) for a in args)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_backward_has_no_per_step_gate_copy(name):
    args = layer_args(name, "float32", Sizes(seq_length=5, input_size=8, hidden_size=6,
                                             mini_batch=3))
    cg = compile_gradient(script(getattr(cells, name)), args)
    source = generate(cg.gradient.backward, name="bwd")[1]
    body = "\n".join(loop_lines(source))
    assert ".into((" in body
    # no value is copied into a slot per step: every gate gradient is computed in its slot, and
    # the weight gradient reads the forward's stack of hidden states
    assert not slot_copies(source), source


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_gradients_match_unfused_and_finite_differences(name):
    sizes = Sizes(seq_length=5, input_size=3, hidden_size=2, mini_batch=2)  # a loop, not unrolled
    args = layer_args(name, "float64", sizes)
    fn = getattr(cells, name)
    sf = script(fn)
    cg = compile_gradient(sf, args)
    assert ".into((" in generate(cg.gradient.backward)[1]
    out, backward = run_vjp(cg, args)
    rng = np.random.default_rng(2)
    ct = tuple(rng.standard_normal(np.shape(o)) for o in out)
    fused = [backward(ct) for _ in range(3)]  # later calls take the kernels' guarded path
    with fuser.disabled():
        plain_fn = script(fn)
        _, plain_backward = run_vjp(compile_gradient(plain_fn, args), args)
        plain = plain_backward(ct)
    for grads in fused:
        for got, want in zip(grads, plain):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    check_vjp(sf, args)


def test_slot_writes_rejects_a_group_without_a_write():
    graph = ir.parse("""graph(%a : Float(4, 5), %b : Float(4, 5)):
  %o : Float(4, 5) = prim::FusionGroup_0(%a, %b)
  return (%o)
""" + GROUP)
    group = next(n for n in graph.nodes() if n.kind == "prim::FusionGroup")
    assert slot_writes(group) == {}
