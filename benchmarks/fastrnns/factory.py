"""Creators: sizes and inputs in, a ``ModelDef`` (what ``bench`` times) out.

As in PyTorch's ``fastrnns/factory.py``, every variant is a creator ``(inputs) -> ModelDef``.
A ``ModelDef`` holds a ``forward()`` that runs the model as training needs it (keeping what its
backward uses) and a ``backward(saved, cotangents)`` that returns the gradients of every input
and parameter. Outputs and gradients have one layout for the whole LSTM family, so any variant
can be checked against ``py``:

- outputs: ``(y (T, B, H), h_n (L, B, H), c_n (L, B, H))``; an entry is ``None`` where the variant
  does not compute it (``script_simple`` has no ``y``);
- gradients: ``(dx, dh_0, dc_0, dw_ih_0, dw_hh_0, db_ih_0, db_hh_0, dw_ih_1, ...)``. Training
  differentiates the initial states and the weights, not the input sequence: ``dx`` is None in
  the scripted and torch rows (``vjp(..., argnums=...)``, inputs that do not require grad), so
  no row pays for the input's gradient GEMM; ``py`` (the reference) still computes it.

Single-layer variants are stacked to ``numLayers`` layers in Python (``stacked``), so every LSTM
row does the same work as ``torch_lstm``; ``script_multilayer`` and ``script_dropout`` loop over
the layers inside the script, as upstream.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.fastrnns import cells
from benchmarks.fastrnns.eager import numpy_backward, numpy_forward
from fuser.cpu.loop.body import python_loops
from script import script, vjp
from script.runtime.autodiff import compile_gradient, run_vjp
from script.runtime.function import ScriptFunction

LayerVJP = Callable[..., tuple[tuple[Any, ...], Callable[[tuple[Any, ...]], tuple[Any, ...]]]]
"""``layer_vjp(x, *states, *weights, argnums=None) -> ((y, *states_out), backward)``;
``backward((dy, *dstates_out)) -> (dx, *dstates, *dweights)``; ``argnums`` as ``vjp``'s (the
first layer's names every argument but ``x``, whose gradient no one needs)."""


@dataclass(frozen=True)
class Sizes:
    """The benchmark configuration (upstream's flag names in comments)."""

    seq_length: int = 100  # --seqLength
    num_layers: int = 1  # --numLayers
    input_size: int = 512  # --inputSize
    hidden_size: int = 512  # --hiddenSize
    mini_batch: int = 64  # --miniBatch
    dtype: str = "float32"
    seed: int = 17


@dataclass
class RNNInputs:
    """Arrays shared by every variant of one run (on the benchmark's device)."""

    x: Any
    """(T, B, I)"""
    hx: Any
    """(L, B, H)"""
    cx: Any
    """(L, B, H)"""
    weights: list[list[Any]]
    """per layer ``[w_ih (4H, I or H), w_hh (4H, H), b_ih (4H), b_hh (4H)]``"""
    sizes: Sizes
    xp: Any = np
    """the array module: numpy, or cupy on a GPU"""
    lengths: list[int] = field(default_factory=list)
    """variable-length runs: the length of each batch element's sequence"""
    sequences: list[Any] = field(default_factory=list)
    """variable-length runs: ``(T_b, 1, I)`` per batch element"""

    def flat_weights(self) -> list[Any]:
        return [w for layer in self.weights for w in layer]


@dataclass
class ModelDef:
    """One variant, ready to time: ``saved = forward()[1]``, then ``backward(saved, ct)``."""

    forward: Callable[[], tuple[Any, Any]]
    """runs the model; returns ``(outputs, saved)``"""
    backward: Callable[[Any, Any], tuple[Any, ...]] | None = None
    """``(saved, cotangents) -> gradients``; None when the variant has no backward"""
    reference: str | Callable[[Any], tuple[Any, Any]] | None = "py"
    """checked against: a variant name, a function ``cotangents -> (outputs, gradients)``, or None
    (not checked)"""
    check_forward: Callable[[], Any] | None = None
    """outputs to check instead of ``forward()``'s (e.g. dropout in eval mode)"""
    check_gradients: bool = True
    """False when the gradients cannot match the reference (dropout's random masks)"""
    prepare_cotangent: Callable[[Any], Any] = lambda ct: ct
    """converts the harness's numpy/cupy cotangents to the variant's own arrays, untimed"""
    notes: list[str] = field(default_factory=list)
    """said under the table (why there is no backward, what the check covers)"""
    infer: Callable[[], Any] | None = None
    """a plain forward call, as a user's first ``f(*args)`` (no gradient compiled or saved);
    None where the row has no separate one (its first-call forward is then ``forward()``)"""


# -- inputs ----------------------------------------------------------------------------------
def rnn_inputs(sizes: Sizes, xp: Any = np, gates: int = 4) -> RNNInputs:
    """Random inputs and weights, initialised like ``torch.nn.LSTM`` (uniform +-1/sqrt(H))."""
    rng = np.random.default_rng(sizes.seed)
    t, b, i, h, layers = (sizes.seq_length, sizes.mini_batch, sizes.input_size,
                          sizes.hidden_size, sizes.num_layers)
    bound = 1.0 / np.sqrt(h)

    def u(*shape: int) -> Any:
        return xp.asarray(rng.uniform(-bound, bound, shape).astype(sizes.dtype))

    def n(*shape: int) -> Any:
        return xp.asarray(rng.standard_normal(shape).astype(sizes.dtype))

    weights = [[u(gates * h, i if k == 0 else h), u(gates * h, h), u(gates * h), u(gates * h)]
               for k in range(layers)]
    return RNNInputs(n(t, b, i), n(layers, b, h), n(layers, b, h), weights, sizes, xp)


def varlen_inputs(sizes: Sizes, xp: Any = np) -> RNNInputs:
    """Upstream's variable-length inputs: lengths ``randint(30, 100)`` per batch element, scaled
    to ``seqLength`` (``randint(0.3 T, T)``); one ``(T_b, 1, I)`` sequence per element."""
    inputs = rnn_inputs(sizes, xp)
    rng = np.random.default_rng(sizes.seed + 1)
    low = max(1, 3 * sizes.seq_length // 10)
    high = max(low + 1, sizes.seq_length)
    inputs.lengths = [int(n) for n in rng.integers(low, high, sizes.mini_batch)]
    inputs.sequences = [xp.asarray(rng.standard_normal((n, 1, sizes.input_size))
                                   .astype(sizes.dtype)) for n in inputs.lengths]
    return inputs


@functools.cache
def scripted(fn: Any) -> ScriptFunction:
    """``script(fn)``, once per process: later runs reuse the compiled specializations."""
    return script(fn)


# -- stacking single layers ---------------------------------------------------------------------
def stacked(layer_vjp: LayerVJP, x: Any, states: Sequence[Any], weights: list[list[Any]],
            xp: Any = np, layer_fn: Callable[..., Any] | None = None,
            input_gradient: bool = False) -> ModelDef:
    """A model of ``len(weights)`` layers from a one-layer vjp; ``states`` are ``(L, B, H)``
    arrays (``(hx, cx)`` for an LSTM, ``(hx,)`` for a GRU). ``layer_fn(x, *states, *weights)``,
    the layer's plain call, gives the model its ``infer``. ``input_gradient`` also
    differentiates the input sequence (training does not)."""
    def forward() -> tuple[Any, Any]:
        y, finals, backs = x, [], []
        for k, w in enumerate(weights):
            # the first layer's input is data: no gradient; a later one's is the layer below's
            first = k == 0 and not input_gradient
            argnums = tuple(range(1, 1 + len(states) + len(w))) if first else None
            (y, *state), back = layer_vjp(y, *[s[k] for s in states], *w, argnums=argnums)
            finals.append(state)
            backs.append(back)
        return (y, *[xp.stack(list(s)) for s in zip(*finals)]), backs

    def backward(backs: list[Any], ct: tuple[Any, ...]) -> tuple[Any, ...]:
        dy, dstates = ct[0], ct[1:len(states) + 1]
        dstate0, dweights = [], []
        for k in reversed(range(len(weights))):
            cts = (dy, *[None if d is None else d[k] for d in dstates])
            dy, *rest = backs[k](cts)
            dstate0.append(rest[:len(states)])
            dweights.append(rest[len(states):])
        dstate0.reverse()
        dweights.reverse()
        grads = [xp.stack(list(d)) for d in zip(*dstate0)]
        return (dy, *grads, *[g for layer in dweights for g in layer])

    def infer() -> Any:
        y = x
        for k, w in enumerate(weights):
            y = layer_fn(y, *[s[k] for s in states], *w)[0]  # type: ignore[misc]
        return y

    return ModelDef(forward, backward, infer=None if layer_fn is None else infer)


def numpy_layer_vjp(x: Any, h: Any, c: Any, *w: Any, argnums: Any = None
                    ) -> tuple[tuple[Any, ...], Callable]:
    """``py``'s layer: numpy eager forward with a tape, hand-written backward (of every input:
    ``argnums`` is accepted and ignored)."""
    (y, (h_n, c_n)), tape = numpy_forward(x, h, c, *w)

    def backward(ct: tuple[Any, ...]) -> tuple[Any, ...]:
        dy, dh, dc = (np.zeros_like(o) if d is None else d for d, o in zip(ct, (y, h_n, c_n)))
        return numpy_backward(tape, (x, h, c, *w), dy, dh, dc)

    return (y, h_n, c_n), backward


def scripted_layer_vjp(fn: Any, optimize: bool = True) -> LayerVJP:
    """A one-layer vjp of a function (scripted here); ``optimize=False`` compiles it with no
    passes and no fusion, each op as written, its loops as Python loops (the reference for
    variants that have no ``py``: the same whatever the thread policy of native loops)."""
    f = scripted(fn)

    def layer_vjp(*args: Any, argnums: tuple[int, ...] | None = None
                  ) -> tuple[tuple[Any, ...], Callable]:
        if optimize:
            return vjp(f, *args, argnums=argnums)
        wrt = None if argnums is None else frozenset(argnums)
        with python_loops():
            return run_vjp(compile_gradient(f, args, optimize=False, wrt=wrt), args)

    return layer_vjp



# -- creators -----------------------------------------------------------------------------------
def py_creator(inp: RNNInputs) -> ModelDef:
    """``py``: numpy eager with the hand-written backward (the reference of the LSTM rows)."""
    model = stacked(numpy_layer_vjp, inp.x, (inp.hx, inp.cx), inp.weights, inp.xp)
    model.reference = None
    return model


def lstm_creator(fn: Any, input_gradient: bool = False) -> Callable[[RNNInputs], ModelDef]:
    """A scripted one-layer LSTM function, stacked to ``numLayers``; ``input_gradient`` also
    differentiates the input sequence (what the training rows skip, to measure the saving)."""
    def create(inp: RNNInputs) -> ModelDef:
        model = stacked(scripted_layer_vjp(fn), inp.x, (inp.hx, inp.cx), inp.weights, inp.xp,
                        layer_fn=scripted(fn), input_gradient=input_gradient)
        if input_gradient:
            model.notes.append("also differentiates the input sequence (vjp with no argnums)")
        return model
    return create


def simple_creator(inp: RNNInputs) -> ModelDef:
    """``script_simple``: returns only the last state, so it cannot feed a next layer."""
    if inp.sizes.num_layers != 1:
        raise Unsupported("script_simple returns only the last state: it needs --numLayers 1")
    f = scripted(cells.lstm_layer_simple)
    args = (inp.x, inp.hx[0], inp.cx[0], *inp.weights[0])

    def forward() -> tuple[Any, Any]:
        (h, c), back = vjp(f, *args, argnums=tuple(range(1, len(args))))
        return (None, h[None], c[None]), back

    def backward(back: Callable, ct: tuple[Any, ...]) -> tuple[Any, ...]:
        dx, dh, dc, *dw = back((ct[1][0], ct[2][0]))
        return (dx, dh[None], dc[None], *dw)  # dx: None (argnums)

    return ModelDef(forward, backward, infer=lambda: f(*args))


STATES_AND_WEIGHTS = frozenset({1, 2, 3})
"""What a whole-stack function ``fn(x, hx, cx, params, ...)`` is differentiated with respect to."""


def whole_stack_creator(fn: Any, extra: tuple[Any, ...] = (),
                        check_extra: tuple[Any, ...] | None = None
                        ) -> Callable[[RNNInputs], ModelDef]:
    """A scripted function that loops over the layers itself:
    ``fn(x, hx, cx, [w_ih_0, w_hh_0, b_ih_0, b_hh_0, w_ih_1, ...], *extra)``. When the function
    cannot be differentiated yet, the variant is timed forward only and says why."""
    def create(inp: RNNInputs) -> ModelDef:
        f = scripted(fn)
        args = (inp.x, inp.hx, inp.cx, inp.flat_weights(), *extra)
        check = None
        if check_extra is not None:
            check_args = args[:4] + check_extra
            check = lambda: f(*check_args)
        try:
            compile_gradient(f, args, wrt=STATES_AND_WEIGHTS)
        except Exception as e:  # noqa: BLE001 - any compile failure means "no backward yet"
            model = ModelDef(lambda: (f(*args), None), None, check_forward=check)
            model.notes.append(f"no backward: {_first_line(e)}")
            return model

        def forward() -> tuple[Any, Any]:
            return vjp(f, *args, argnums=tuple(STATES_AND_WEIGHTS))

        def backward(back: Callable, ct: tuple[Any, ...]) -> tuple[Any, ...]:
            dx, dhx, dcx, dparams, *_ = back(ct)
            return (dx, dhx, dcx, *dparams)

        model = ModelDef(forward, backward, check_forward=check, infer=lambda: f(*args))
        if check is not None and inp.sizes.num_layers > 1:
            model.check_gradients = False
            model.notes.append("outputs checked with dropout off; gradients not checked")
        return model
    return create


def self_checked_creator(fn: Any, weights_of: Callable[[RNNInputs], list[list[Any]]],
                         states: int = 2) -> Callable[[RNNInputs], ModelDef]:
    """A cell with no numpy counterpart (layer norm, GRU): checked against the same function
    compiled with no optimization (outputs and gradients)."""
    def create(inp: RNNInputs) -> ModelDef:
        weights = weights_of(inp)
        state_arrays = (inp.hx, inp.cx)[:states]
        model = stacked(scripted_layer_vjp(fn), inp.x, state_arrays, weights, inp.xp,
                        layer_fn=scripted(fn))
        model.reference = unoptimized_reference(fn, weights_of, states)(inp)
        model.notes.append("checked against itself compiled without optimization passes")
        return model
    return create


def unoptimized_reference(fn: Any, weights_of: Callable[[RNNInputs], list[list[Any]]],
                          states: int = 2) -> Callable[[RNNInputs], Callable[[Any], Any]]:
    """The check of a self-checked cell, for its own row and for peers of the same cell:
    ``cotangents -> (outputs, gradients)`` of ``fn`` compiled without optimization, stacked."""
    def create(inp: RNNInputs) -> Callable[[Any], Any]:
        state_arrays = (inp.hx, inp.cx)[:states]
        reference = stacked(scripted_layer_vjp(fn, optimize=False), inp.x, state_arrays,
                            weights_of(inp), inp.xp)

        def reference_run(ct: Any) -> tuple[Any, Any]:
            outputs, saved = reference.forward()
            return outputs, reference.backward(saved, ct)
        return reference_run
    return create


def layernorm_weights(inp: RNNInputs) -> list[list[Any]]:
    """Per layer ``w_ih, w_hh`` and three layer norms' (gain, bias); no LSTM biases."""
    h, xp, dtype = inp.sizes.hidden_size, inp.xp, inp.sizes.dtype
    rng = np.random.default_rng(inp.sizes.seed + 2)

    def around(center: float, n: int) -> Any:
        return xp.asarray((center + 0.1 * rng.standard_normal(n)).astype(dtype))

    return [[w[0], w[1], around(1, 4 * h), around(0, 4 * h), around(1, 4 * h), around(0, 4 * h),
             around(1, h), around(0, h)] for w in inp.weights]


def gru_weights(inp: RNNInputs) -> list[list[Any]]:
    """Per layer the first 3H rows of the LSTM weights (gates r, z, n)."""
    rows = 3 * inp.sizes.hidden_size
    return [[w[0][:rows], w[1][:rows], w[2][:rows], w[3][:rows]] for w in inp.weights]


def floor_creator(inp: RNNInputs) -> ModelDef:
    """``floor``: the GEMMs of an LSTM's forward and backward alone, per layer: forward one input
    projection over the sequence and T recurrent matmuls; backward T recurrent matmuls for the
    hidden-state gradient and one GEMM each for dW_ih and dW_hh over the whole sequence, and one
    for the layer input's gradient above the first layer (the input sequence gets none, as in
    the training rows). On the CPU the products go where compiled code sends them
    (``fuser.cpu.products``: the host-vector kernel for a step's product and for large ones,
    BLAS for the rest), so the floor is what the scripted rows' GEMMs cost."""
    xp, (t, b, h) = inp.xp, (inp.sizes.seq_length, inp.sizes.mini_batch, inp.sizes.hidden_size)
    wt = [(xp.ascontiguousarray(w[0].T), xp.ascontiguousarray(w[1].T), w[0], w[1])
          for w in inp.weights]
    if xp is np:  # the GEMMs compiled code runs: the host-vector kernel where it takes them
        from fuser.cpu import products
        whole, step_mm = products.matmul, products.step
    else:
        whole, step_mm = xp.matmul, xp.matmul
    gates = xp.zeros((t * b, 4 * h), inp.x.dtype)
    hidden = xp.zeros((t * b, h), inp.x.dtype)
    step = xp.empty((b, 4 * h), inp.x.dtype)
    dh = xp.empty((b, h), inp.x.dtype)

    def forward() -> tuple[Any, Any]:
        x = inp.x.reshape(t * b, -1)
        for w_ih_t, w_hh_t, _, _ in wt:
            whole(x, w_ih_t, out=gates)
            for k in range(t):
                step_mm(hidden[k * b:(k + 1) * b], w_hh_t, out=step)
            x = hidden
        return None, None

    def backward(_: Any, __: Any) -> tuple[Any, ...]:
        x = inp.x.reshape(t * b, -1)
        grads: list[Any] = []
        for layer in reversed(range(len(wt))):
            _, _, w_ih, w_hh = wt[layer]
            for k in range(t):
                step_mm(gates[k * b:(k + 1) * b], w_hh, out=dh)
            layer_input = x if layer == 0 else hidden
            grads += [whole(gates.T, hidden), whole(gates.T, layer_input)]
            if layer > 0:
                grads.append(whole(gates, w_ih))
        return tuple(grads)

    model = ModelDef(forward, backward, reference=None)
    model.notes.append("only the GEMMs: nothing to check")
    return model


# -- variable lengths -------------------------------------------------------------------------
def vl_py_creator(inp: RNNInputs) -> ModelDef:
    """``vl_py``: one sequence at a time through the numpy layer (layer 0's weights)."""
    def forward() -> tuple[Any, Any]:
        outputs, hs, cs, backs = [], [], [], []
        for k, seq in enumerate(inp.sequences):
            (y, h, c), back = numpy_layer_vjp(seq, inp.hx[0, k:k + 1], inp.cx[0, k:k + 1],
                                              *inp.weights[0])
            outputs.append(y)
            hs.append(h)
            cs.append(c)
            backs.append(back)
        return (outputs, inp.xp.concatenate(hs), inp.xp.concatenate(cs)), backs

    def backward(backs: list[Callable], ct: tuple[Any, ...]) -> tuple[Any, ...]:
        dys, dh, dc = ct
        dxs, dhs, dcs, dw = [], [], [], None
        for k, back in enumerate(backs):
            dx, dh0, dc0, *dwk = back((dys[k], dh[k:k + 1], dc[k:k + 1]))
            dxs.append(dx)
            dhs.append(dh0)
            dcs.append(dc0)
            dw = dwk if dw is None else [a + g for a, g in zip(dw, dwk)]
        return (dxs, inp.xp.concatenate(dhs), inp.xp.concatenate(dcs), *dw)

    return ModelDef(forward, backward, reference=None)


def vl_script_creator(inp: RNNInputs) -> ModelDef:
    """``vl_script``: the whole per-sequence loop in one scripted function."""
    f = scripted(cells.varlen_lstm)
    args = (inp.sequences, inp.hx[0], inp.cx[0], *inp.weights[0])
    try:
        compile_gradient(f, args)
    except Exception as e:  # noqa: BLE001 - any compile failure means "no backward yet"
        model = ModelDef(lambda: (f(*args), None), None, reference="vl_py")
        model.notes.append(f"no backward: {_first_line(e)}")
        return model
    return ModelDef(lambda: vjp(f, *args), lambda back, ct: back(ct), reference="vl_py")


class Unsupported(Exception):
    """The variant cannot run with these settings (the message says why); it is skipped."""


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"
