"""A compiled function never hands the caller an array that something else holds.

Plain Python evaluates ``np.zeros(3)`` or ``x * 2.0`` afresh each time: a caller may mutate what
it got without changing anything else. The compiled code did not keep to that:

- constants (``np.zeros(3)``, ``np.ones(3) * 2.0`` folded at compile time, a frozen module's
  weights, a backward graph's zero gradient) were bound once and returned by reference, so
  ``a = f(x); a += 1`` changed what every later call returned;
- CSE merged ``return x * 2.0, x * 2.0`` (and LICM hoisted ``out.append(x * 2.0)`` out of its
  loop) into one array returned twice or appended N times;
- ``x * 1.0``, ``x + 0.0`` and ``-(-x)`` were rewritten to ``x``, so the caller got its own
  argument back and mutating the result changed the argument.

Now values the caller can reach (``ir.alias``) are never merged, hoisted or forwarded, and a
constant that can reach the caller is copied each time it is evaluated. What Python returns as
one object (an argument returned as is, one value returned twice, a global array) stays one.
"""

from typing import Dict, List, Tuple

import numpy as np

from script import Module, Parameter, Tensor, freeze, ops, script, vjp

G = np.arange(3.0)


@script
def zeros(x: Tensor) -> Tensor:
    return np.zeros(3)


@script
def folded(x: Tensor) -> Tensor:
    return np.ones(3) * 2.0


@script
def two_zeros(x: Tensor) -> Tuple[Tensor, Tensor]:
    return np.zeros(3), np.zeros(3)


@script
def one_zeros_twice(x: Tensor) -> Tuple[Tensor, Tensor]:
    y = np.zeros(3)
    return y, y


@script
def twice(x: Tensor) -> Tuple[Tensor, Tensor]:
    return x * 2.0, x * 2.0


@script
def same_value_twice(x: Tensor) -> Tuple[Tensor, Tensor]:
    y = x * 2.0
    return y, y


@script
def identity(x: Tensor) -> Tensor:
    return x


@script
def times_one(x: Tensor) -> Tensor:
    return x * 1.0


@script
def plus_zeros(x: Tensor) -> Tensor:
    return x + np.zeros(3)


@script
def negated_twice(x: Tensor) -> Tensor:
    return -(-x)  # noqa: B002  (a double negation, as written)


@script
def cast_to_its_dtype(x: Tensor) -> Tensor:
    return x.astype(np.float64)


@script
def copied(x: Tensor) -> Tensor:
    return x.copy()


@script
def new_array_and_its_copy(x: Tensor) -> Tuple[Tensor, Tensor]:
    y = np.tanh(x)
    return y, y.copy()


@script
def new_array_copied_twice(x: Tensor) -> Tuple[Tensor, Tensor]:
    y = np.tanh(x)
    return y.copy(), y.astype(np.float64)


@script
def appended_in_loop(x: Tensor) -> List[Tensor]:
    out: List[Tensor] = []
    for _ in range(3):
        out.append(x * 2.0)
    return out


@script
def zeros_appended_in_loop(x: Tensor, n: int) -> List[Tensor]:
    out: List[Tensor] = []
    for _ in range(n):
        out.append(np.zeros(3))
    return out


@script
def into_argument(x: Tensor, out: List[Tensor]) -> Tensor:
    out.append(np.zeros(3))
    out.append(x * 1.0)
    return x


@script
def in_a_dict(x: Tensor) -> Dict[str, Tensor]:
    d: Dict[str, Tensor] = {}
    d["a"] = np.zeros(3)
    return d


@script
def row_of_constant(x: Tensor) -> Tensor:
    return np.ones((2, 3))[0]


@script
def global_array(x: Tensor) -> Tensor:
    return G


@script
def constant_or_new(x: Tensor, k: float) -> Tensor:
    if k > 0.0:
        y = np.zeros(3)
    else:
        y = x * 2.0
    return y


def _mutated_then_called_again(f, *args):
    """``f(*args)`` again after adding 1 to every array the first call returned."""
    first = f(*args)
    for a in _arrays(first):
        a += 1.0
    return f(*args)


def _arrays(tree):
    if isinstance(tree, np.ndarray):
        return [tree]
    if isinstance(tree, dict):
        tree = list(tree.values())
    return [a for item in tree for a in _arrays(item)]


def test_a_returned_constant_is_a_new_array_each_call():
    x = np.ones(3)
    for f in (zeros, folded, row_of_constant):
        expected = f.python_fn(x)
        np.testing.assert_array_equal(_mutated_then_called_again(f, x), expected)
        assert f(x) is not f(x)
    np.testing.assert_array_equal(_mutated_then_called_again(in_a_dict, x)["a"], np.zeros(3))
    for k in (1.0, -1.0):
        np.testing.assert_array_equal(_mutated_then_called_again(constant_or_new, x, k),
                                      constant_or_new.python_fn(x, k))


def test_two_arrays_python_makes_stay_two():
    x = np.ones(3)
    for f in (two_zeros, twice, new_array_and_its_copy, new_array_copied_twice):
        a, b = f(x)
        assert a is not b
        a += 1.0
        np.testing.assert_array_equal(b, f.python_fn(x)[1])


def test_one_object_python_returns_twice_stays_one():
    x = np.ones(3)
    for f in (one_zeros_twice, same_value_twice):
        a, b = f(x)
        assert a is b
    a, _ = one_zeros_twice(x)
    a += 1.0
    np.testing.assert_array_equal(one_zeros_twice(x)[0], np.zeros(3))


def test_an_argument_comes_back_as_python_returns_it():
    x = np.ones(3)
    assert identity(x) is x
    for f in (times_one, plus_zeros, negated_twice, cast_to_its_dtype, copied):
        y = f(x)
        assert y is not x and not np.shares_memory(y, x)
        y += 1.0
        np.testing.assert_array_equal(x, np.ones(3))


def test_a_global_array_is_the_global_itself():
    assert global_array(np.ones(3)) is G


def test_arrays_appended_in_a_loop_are_distinct():
    x = np.ones(3)
    for f, args in ((appended_in_loop, (x,)), (zeros_appended_in_loop, (x, 3))):
        out = f(*args)
        assert len({id(a) for a in out}) == 3
        out[0] += 1.0
        np.testing.assert_array_equal(out[1], f.python_fn(*args)[1])
        np.testing.assert_array_equal(f(*args)[0], f.python_fn(*args)[0])


def ones_appended_and_used_outside(x: Tensor) -> List[Tensor]:
    # the appended constant equals one the arithmetic uses before the loop: the passes merge the
    # two, so the loop's appends read a constant made outside it
    sources = [x.sum(axis=0, keepdims=True), np.ones((1,)) * x.max()]
    items = [np.ones((2,))[..., 0:1] for v in sources]
    return items


def test_a_constant_merged_out_of_a_loop_is_a_new_array_at_each_append():
    f = script(ones_appended_and_used_outside)
    out = f(np.ones(3))
    assert not np.shares_memory(out[0], out[1])
    out[0] += 1.0
    np.testing.assert_array_equal(out[1], np.ones(1))


def test_arrays_stored_into_an_argument_are_new():
    x = np.ones(3)
    out: List[np.ndarray] = []
    into_argument(x, out)
    into_argument(x, out)
    assert out[0] is not out[2] and out[1] is not x
    out[0] += 1.0
    out[1] += 1.0
    np.testing.assert_array_equal(out[2], np.zeros(3))
    np.testing.assert_array_equal(x, np.ones(3))


class Bias(Module):
    def __init__(self):
        super().__init__()
        self.b = Parameter(np.arange(3.0))

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        return x + self.b, self.b


def test_a_frozen_weight_the_caller_receives_is_a_copy():
    frozen = freeze(script(Bias()))
    x = np.ones(3)
    _, b = frozen(x)
    b += 100.0
    y, b2 = frozen(x)
    np.testing.assert_array_equal(b2, np.arange(3.0))
    np.testing.assert_array_equal(y, x + np.arange(3.0))


@script
def with_unused(x: Tensor, y: Tensor) -> Tuple[Tensor, Tensor]:
    return np.tanh(x), np.zeros(3)


def test_vjp_outputs_and_gradients_are_new_each_call():
    x, y = np.ones(3), np.ones(3)
    out, backward = vjp(with_unused, x, y)
    out[1][:] = 5.0
    out2, backward2 = vjp(with_unused, x, y)
    np.testing.assert_array_equal(out2[1], np.zeros(3))
    cotangents = (np.ones(3), np.ones(3))
    gx, gy = backward(cotangents)
    gy += 7.0
    gx += 7.0
    gx2, gy2 = backward2(cotangents)
    np.testing.assert_array_equal(gy2, np.zeros(3))
    np.testing.assert_allclose(gx2, 1.0 - np.tanh(1.0) ** 2)


@script
def passes_on(x: Tensor, acc0: Tensor, n: int) -> Tuple[Tensor, Tensor]:
    acc = acc0
    for t in range(n):
        acc = acc + np.tanh(x).mean(axis=0)
    return np.tanh(x), acc + 0.0


def test_a_gradient_that_is_the_cotangent_is_a_copy_of_it():
    """The gradient of an input the output passes on as it is equals the cotangent: the caller
    gets a copy, so scaling it in place (``g *= -lr``) leaves the cotangent it reuses alone;
    a second backward with the same cotangent gives the same gradients."""
    x, acc0 = np.linspace(-1.0, 1.0, 6).reshape(2, 3), np.zeros(3)
    for f, args in ((passes_on, (x, acc0, 3)), (with_unused, (np.ones(3), np.ones(3)))):
        out, backward = vjp(f, *args)
        cotangents = tuple(np.full_like(o, 2.0) for o in out)
        first = [g for g in backward(cotangents) if g is not None]
        for g in _arrays(first):
            assert not any(np.shares_memory(g, c) for c in cotangents)
            if g.flags.writeable:
                g *= -0.5
        for c in cotangents:
            np.testing.assert_array_equal(c, 2.0)
        again = [g for g in backward(cotangents) if g is not None]
        for got, want in zip(_arrays(again), _arrays(first)):
            np.testing.assert_allclose(got, want / -0.5 if want.flags.writeable else want)


@script
def tanh_of(x: Tensor) -> Tensor:
    return np.tanh(x)


@script
def tanh_steps(x: Tensor, h: Tensor) -> Tuple[Tensor, Tensor]:
    outs: List[Tensor] = []
    for t in range(3):
        h = np.tanh(x[t] + h)
        outs.append(h)
    return np.stack(outs), h


def test_mutating_a_vjp_output_does_not_change_the_gradient():
    # the backward of tanh reads tanh(x) itself: the caller's output must not be that array
    rng = np.random.default_rng(0)
    for f, args in ((tanh_of, (np.linspace(-1.0, 1.0, 3),)),
                    (tanh_steps, (rng.standard_normal((3, 2)), rng.standard_normal(2)))):
        out, backward = vjp(f, *args)
        ones = tuple(np.ones_like(o) for o in out) if isinstance(out, tuple) else np.ones_like(out)
        expected = backward(ones)
        for a in _arrays(out):
            a += 100.0
        for got, want in zip(backward(ones), expected):
            np.testing.assert_allclose(got, want)


@script
def gates(x: Tensor, w: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    i, f, g, o = ops.chunk(x @ w, 4, 1)
    return ops.sigmoid(i), f, np.tanh(g), o


def _twice_with_other_inputs(f, first_args, second_args):
    """The first call's results (copied right after it) and what they hold after a second call
    on other inputs: nothing the executor reuses across calls may be returned."""
    first = f(*first_args)
    kept = [a.copy() for a in _arrays(first)]
    f(*second_args)
    return kept, _arrays(first)


def test_a_second_call_leaves_the_first_results_alone():
    from benchmarks.fastrnns import cells
    from benchmarks.fastrnns.factory import Sizes, rnn_inputs
    rng = np.random.default_rng(3)
    inp = rnn_inputs(Sizes(seq_length=40, input_size=8, hidden_size=6, mini_batch=3))
    layer = script(cells.lstm_layer)  # stack-to-slots buffer, fusion kernels, a loop
    args = (inp.x, inp.hx[0], inp.cx[0], *inp.weights[0])
    other = (inp.x * 2.0, *args[1:])
    cases = [(layer, args, other),
             (gates, (rng.standard_normal((3, 5)), rng.standard_normal((5, 8))),
              (rng.standard_normal((3, 5)), rng.standard_normal((5, 8)))),
             (tanh_steps, (rng.standard_normal((3, 2)), rng.standard_normal(2)),
              (rng.standard_normal((3, 2)), rng.standard_normal(2)))]
    for f, first_args, second_args in cases:
        kept, now = _twice_with_other_inputs(f, first_args, second_args)
        for k, n in zip(kept, now):
            np.testing.assert_array_equal(n, k)


def test_a_second_vjp_or_backward_leaves_the_first_results_alone():
    from benchmarks.fastrnns import cells
    from benchmarks.fastrnns.factory import Sizes, rnn_inputs
    inp = rnn_inputs(Sizes(seq_length=6, input_size=4, hidden_size=3, mini_batch=2))
    layer = script(cells.lstm_layer)  # the backward computes gate gradients in their slots
    args = (inp.x, inp.hx[0], inp.cx[0], *inp.weights[0])
    out, backward = vjp(layer, *args)
    ones = tuple(np.ones_like(o) for o in out)
    grads = backward(ones)
    kept_out, kept_grads = [a.copy() for a in _arrays(out)], [g.copy() for g in grads]
    backward(tuple(2.0 * o for o in ones))
    out2, backward2 = vjp(layer, inp.x * 2.0, *args[1:])
    backward2(ones)
    for k, n in zip(kept_out + kept_grads, _arrays(out) + list(grads)):
        np.testing.assert_array_equal(n, k)
