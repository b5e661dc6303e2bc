"""Reads of the caller's arrays around writes into them (``script.frontend.write_order``): a read
after ``self.m[i] += ...`` sees the write, a read before it does not, as in numpy; what the
compiled code cannot keep on its side of the write is refused at the read."""

from typing import Dict, List

import numpy as np
import pytest

from script import ScriptError, SignatureError, Tensor, script, vjp


class Layer:
    def __init__(self):
        self.params = [np.ones((2, 3)), np.full(3, 0.5)]
        self.grads = [np.zeros((2, 3)), np.zeros(3)]
        self.W = np.arange(3.0)


def name_of_the_array(self: Layer, x: Tensor) -> Tensor:
    g = self.grads[0]  # the same array: numpy shows the write through it
    self.grads[0][...] = x
    return g.sum()


def another_item(self: Layer, x: Tensor) -> Tensor:
    self.grads[0][...] = x
    return self.grads[1] + 1


def writes_what_it_read(self: Layer, x: Tensor) -> Tensor:
    self.grads[0][...] = self.grads[0] * 2 + x
    return x


def reads_back(self: Layer, x: Tensor) -> Tensor:
    before = self.W.sum()  # feeds the write below
    self.W -= before * x[0]
    self.W *= 2
    if x[0, 0] > 0:
        return self.W * 3 + before  # (a block inside the write's)
    return self.W


def dict_item(grads: Dict[str, Tensor], y: Tensor) -> Tensor:
    grads["W"][...] += y
    return grads["W"] * 2 + grads["b"]


def per_step(params: List[Tensor], grads: List[Tensor], state: List[Tensor]) -> Tensor:
    total = np.zeros(())
    for i in range(len(params)):
        state[i] *= 0.5
        state[i] += grads[i] ** 2
        params[i] -= grads[i] / (np.sqrt(state[i]) + 1.0)
        total = total + params[i].sum() + state[i].sum()
    return total


def _layer(x):
    return (Layer(), x)


def _lists(x):
    rng = np.random.default_rng(0)
    return ([rng.standard_normal((2, 3)), rng.standard_normal(3)],
            [rng.standard_normal((2, 3)), rng.standard_normal(3)],
            [np.ones((2, 3)), np.ones(3)])


@pytest.mark.parametrize("fn, make", [
    (name_of_the_array, _layer), (another_item, _layer), (writes_what_it_read, _layer),
    (reads_back, _layer), (per_step, _lists),
    (dict_item, lambda x: ({"W": np.ones((2, 3)), "b": np.ones(3)}, x)),
])
def test_reads_around_writes_are_numpy_s(fn, make):
    x = np.arange(6.0).reshape(2, 3) - 1
    plain, compiled = make(x), make(x)
    compiled_fn = script(fn)
    for _ in range(3):
        np.testing.assert_allclose(compiled_fn(*compiled), fn(*plain), rtol=1e-12)
        for got, want in zip(compiled, plain):
            if isinstance(want, Layer):
                got, want = [*got.params, *got.grads, got.W], [*want.params, *want.grads,
                                                               want.W]
            if isinstance(want, dict):
                got, want = list(got.values()), list(want.values())
            for g, w in zip(got if isinstance(got, list) else [got],
                            want if isinstance(want, list) else [want]):
                np.testing.assert_allclose(g, w, rtol=1e-12)


def read_before_kept(self: Layer, x: Tensor) -> Tensor:
    a = self.W * 2  # computed before the write, read after it
    self.W += x[0]
    return a


def read_after_a_branch(self: Layer, x: Tensor) -> Tensor:
    if x.sum() > 0:
        self.W += x[0]
    return self.W * 2


def read_in_a_loop(self: Layer, x: Tensor) -> Tensor:
    for _ in range(3):
        self.grads[1][...] += self.grads[1] * x[0] + 1  # each step reads the last step's
    return x


def other_index(self: Layer, x: Tensor, i: int) -> Tensor:
    self.grads[i][...] = 1.0
    return self.grads[0] * 2  # the same array when i is 0


@pytest.mark.parametrize("fn, args", [
    (read_before_kept, ()), (read_after_a_branch, ()), (read_in_a_loop, ()),
    (other_index, (1,)),
])
def test_a_read_the_compiled_code_cannot_order_is_refused(fn, args):
    layer = Layer()
    with pytest.raises(ScriptError, match=r"in place, and reading another one|cannot keep the "
                                          r"read on its side of the write") as info:
        script(fn)(layer, np.ones((2, 3)), *args)
    assert "line" in str(info.value)
    np.testing.assert_array_equal(layer.W, np.arange(3.0))  # nothing ran


def test_one_array_held_twice_where_the_function_reads_what_it_writes_is_refused():
    layer = Layer()
    layer.grads[1] = layer.grads[0][0]  # a view of the written array
    with pytest.raises(SignatureError, match="another array there"):
        script(another_item)(layer, np.ones((2, 3)))
    np.testing.assert_array_equal(layer.grads[0], np.zeros((2, 3)))
    g = np.ones(3)
    with pytest.raises(SignatureError, match="shares memory with 'grads'"):  # params is grads
        script(per_step)([g], [g], [np.ones(3)])
    params = [np.ones(3)]
    with pytest.raises(SignatureError, match="shares memory"):  # state is params
        script(per_step)(params, [np.ones(3)], params)


def test_a_gradient_through_a_read_after_a_write_is_refused():
    def f(self: Layer, x: Tensor) -> Tensor:
        self.W += x
        return (self.W * x).sum()

    with pytest.raises(ScriptError, match="gradient"):
        vjp(script(f), Layer(), np.ones(3))


# -- found by review: each a wrong result or a crash before its fix -----------------------------
def negative_index(p: List[Tensor]) -> Tensor:
    tot = np.zeros(())
    for _ in range(3):
        p[2] += 1.0
        tot = tot + p[-1].sum()  # p[-1] is p[2]
    return tot


def read_by_an_alias_twice(p: List[Tensor], x: Tensor) -> Tensor:
    a = p[0]
    p[0] += x
    return a * 2 + a  # the written array, read twice through the name


def test_a_negative_index_may_be_any_item():
    with pytest.raises(ScriptError, match="reading another one"):
        script(negative_index)([np.zeros(2), np.zeros(2), np.zeros(2)])


def test_a_name_of_the_written_array_reads_it_as_written():
    p = [np.ones(3)]
    np.testing.assert_array_equal(script(read_by_an_alias_twice)(p, np.ones(3)),
                                  read_by_an_alias_twice([np.ones(3)], np.ones(3)))


class State:
    def __init__(self):
        self.m = None
        self.k = None

    def appended_in_a_loop(self, g):
        self.m = []
        z = np.zeros(3)
        for _ in range(2):
            self.m.append(z)  # one array, twice: numpy's update shows in both items
        self.m[0] += g
        return self.m[1] * 1

    def a_branch_s_choice(self, x):
        a = np.zeros(3)
        self.k = [a]
        z = a if x.sum() > 0 else np.ones(3)
        self.m = []
        self.m.append(z)  # also self.k[0]
        self.m[0] += x
        return x * 1

    def method_call_in_the_loop(self, params, grads):
        if self.m is None:
            self.m = []
            for p in params:
                self.m.append(np.zeros_like(p))
        for i in range(len(params)):
            self.m[i] += grads[i].copy()
            params[i] -= 0.1 * self.m[i]


@pytest.mark.parametrize("method, args", [
    (State.appended_in_a_loop, (np.ones(3),)), (State.a_branch_s_choice, (np.ones(3),)),
    (State.method_call_in_the_loop, ([np.ones(3)], [np.ones(3)])),
])
def test_an_array_made_in_the_call_that_another_holder_may_hold_is_not_replaced(method, args):
    with pytest.raises(ScriptError, match="may be held elsewhere"):
        script(method)(State(), *args)


def _writes_and_reads(p: List[Tensor]) -> Tensor:
    tot = np.zeros(())
    for _ in range(3):
        p[0] *= 2.0
        tot = tot + p[1].sum()
    return tot


_writes_and_reads_compiled = script(_writes_and_reads)


def _calls_it(p: List[Tensor]) -> Tensor:
    return _writes_and_reads_compiled(p) * 1


def test_a_caller_of_a_function_reading_what_it_writes_checks_the_arrays_apart():
    W = np.ones(3)
    with pytest.raises(SignatureError, match="one array held twice"):
        script(_calls_it)([W, W])
    np.testing.assert_array_equal(W, np.ones(3))


class Linear:
    def __init__(self):
        self.W = np.array([[1.0, 2.0], [3.0, 4.0]])


def fused_step(self: Linear, x: Tensor) -> Tensor:
    h = x @ self.W
    self.W -= 0.5 * (x.T @ h)  # the backward of h would read the updated W
    return (h * h).sum()


def test_a_gradient_reading_an_array_written_later_is_refused():
    with pytest.raises(ScriptError, match="reads an array the function then writes into"):
        vjp(script(fused_step), Linear(), np.array([[1.0, -1.0]]))


# -- Deep Learning from Scratch's optimizers over dicts (oreilly-japan/deep-learning-from-scratch,
# common/optimizer.py, MIT License), as written ------------------------------------------------
class Momentum:

    """Momentum SGD"""

    def __init__(self, lr=0.01, momentum=0.9):
        self.lr = lr
        self.momentum = momentum
        self.v = None

    def update(self, params, grads):
        if self.v is None:
            self.v = {}
            for key, val in params.items():
                self.v[key] = np.zeros_like(val)

        for key in params.keys():
            self.v[key] = self.momentum*self.v[key] - self.lr*grads[key]
            params[key] += self.v[key]


class Nesterov:

    """Nesterov's Accelerated Gradient (http://arxiv.org/abs/1212.0901)"""

    def __init__(self, lr=0.01, momentum=0.9):
        self.lr = lr
        self.momentum = momentum
        self.v = None

    def update(self, params, grads):
        if self.v is None:
            self.v = {}
            for key, val in params.items():
                self.v[key] = np.zeros_like(val)

        for key in params.keys():
            params[key] += self.momentum * self.momentum * self.v[key]
            params[key] -= (1 + self.momentum) * self.lr * grads[key]
            self.v[key] *= self.momentum
            self.v[key] -= self.lr * grads[key]


class AdaGrad:

    """AdaGrad"""

    def __init__(self, lr=0.01):
        self.lr = lr
        self.h = None

    def update(self, params, grads):
        if self.h is None:
            self.h = {}
            for key, val in params.items():
                self.h[key] = np.zeros_like(val)

        for key in params.keys():
            self.h[key] += grads[key] * grads[key]
            params[key] -= self.lr * grads[key] / (np.sqrt(self.h[key]) + 1e-7)


class RMSprop:

    """RMSprop"""

    def __init__(self, lr=0.01, decay_rate = 0.99):
        self.lr = lr
        self.decay_rate = decay_rate
        self.h = None

    def update(self, params, grads):
        if self.h is None:
            self.h = {}
            for key, val in params.items():
                self.h[key] = np.zeros_like(val)

        for key in params.keys():
            self.h[key] *= self.decay_rate
            self.h[key] += (1 - self.decay_rate) * grads[key] * grads[key]
            params[key] -= self.lr * grads[key] / (np.sqrt(self.h[key]) + 1e-7)


class Adam:

    """Adam (http://arxiv.org/abs/1412.6980v8)"""

    def __init__(self, lr=0.001, beta1=0.9, beta2=0.999):
        self.lr = lr
        self.beta1 = beta1
        self.beta2 = beta2
        self.iter = 0
        self.m = None
        self.v = None

    def update(self, params, grads):
        if self.m is None:
            self.m, self.v = {}, {}
            for key, val in params.items():
                self.m[key] = np.zeros_like(val)
                self.v[key] = np.zeros_like(val)

        self.iter += 1
        lr_t  = self.lr * np.sqrt(1.0 - self.beta2**self.iter) / (1.0 - self.beta1**self.iter)

        for key in params.keys():
            #self.m[key] = self.beta1*self.m[key] + (1-self.beta1)*grads[key]
            #self.v[key] = self.beta2*self.v[key] + (1-self.beta2)*(grads[key]**2)
            self.m[key] += (1 - self.beta1) * (grads[key] - self.m[key])
            self.v[key] += (1 - self.beta2) * (grads[key]**2 - self.v[key])

            params[key] -= lr_t * self.m[key] / (np.sqrt(self.v[key]) + 1e-7)


@pytest.mark.parametrize("cls", [Momentum, Nesterov, AdaGrad, RMSprop, Adam])
def test_an_optimizer_over_dicts_updates_the_caller_s_arrays(cls):
    """The first call reads ``params.items()`` for the shapes of its state, the next ones update
    the state and the parameters in place and read them back."""
    rng = np.random.default_rng(5)
    params = {"W1": rng.standard_normal((4, 3)), "b1": rng.standard_normal(3)}
    grads = {"W1": rng.standard_normal((4, 3)), "b1": rng.standard_normal(3)}
    plain, compiled = cls(), cls()
    plain_params, held = {k: v.copy() for k, v in params.items()}, dict(params)
    update = script(compiled.update)
    for _ in range(3):
        cls.update(plain, plain_params, grads)
        update(params, grads)
        for key in params:
            assert params[key] is held[key]
            np.testing.assert_allclose(params[key], plain_params[key], rtol=1e-12)
            for name in ("v", "h", "m"):
                if getattr(plain, name, None) is not None:
                    np.testing.assert_allclose(getattr(compiled, name)[key],
                                               getattr(plain, name)[key], rtol=1e-12)


# -- Deep Learning from Scratch 2's clip_grads (common/util.py, MIT License), as written ----------
def clip_grads(grads, max_norm):
    total_norm = 0
    for grad in grads:
        total_norm += np.sum(grad ** 2)
    total_norm = np.sqrt(total_norm)

    rate = max_norm / (total_norm + 1e-6)
    if rate < 1:
        for grad in grads:
            grad *= rate


@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grads_scales_the_caller_s_gradients(max_norm):
    """A loop reading every gradient, then a loop scaling each through the loop's name: the
    reads feed the scale, so they come before the writes."""
    rng = np.random.default_rng(6)
    grads = [rng.standard_normal((4, 3)), rng.standard_normal(3).astype(np.float32)]
    plain, held = [g.copy() for g in grads], list(grads)
    clip_grads(plain, max_norm)
    script(clip_grads)(grads, max_norm)
    for got, want, same in zip(grads, plain, held):
        assert got is same and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def scales_then_reads(grads: List[Tensor], rate: float) -> Tensor:
    for grad in grads:
        grad *= rate
    return grads[0].sum()  # after the loop of the writes, at another index


def keeps_a_read(grads: List[Tensor], rate: float) -> Tensor:
    total = np.zeros(())
    for grad in grads:
        before = grad * 2
        grad *= rate
        total = total + before.sum()  # computed before the write, used after it
    return total


def scales_an_argument(grad: Tensor, rate: float) -> Tensor:
    grad *= rate
    return grad


@pytest.mark.parametrize("fn, match", [
    (scales_then_reads, "reading another one"), (keeps_a_read, "cannot keep the read"),
    (scales_an_argument, r"in-place update of the argument 'grad'"),
])
def test_updates_through_a_name_that_cannot_be_followed_are_refused(fn, match):
    grads = [np.ones(3), np.ones(2)]
    with pytest.raises(ScriptError, match=match):
        script(fn)(grads[0] if fn is scales_an_argument else grads, 0.5)
    assert all((g == 1).all() for g in grads)


# -- found by a second review: each a wrong result (or gradient) before its fix ------------------
def same_path_every_step(xs: List[Tensor]):
    for i in range(3):  # unrolled: np.sum(xs[0]) would be merged across the steps' writes
        xs[i] += np.sum(xs[0])


def projected_before_the_loop(xs: List[Tensor], W: Tensor):
    x = xs[0]
    for t in range(x.shape[0]):  # x[t] @ W would be computed once, before the loop
        xs[t] += (x[t] @ W).sum()


def read_around_another_key(params: List[Tensor], i: int, j: int):
    b = params[j]
    s = b.sum()
    params[i] *= s
    t = b.sum()  # after the write at i, which may be j
    params[j] *= t
    return t


def through_a_tuple(params: List[Tensor], i: int, j: int):
    t = (params[0], 1)
    params[0] += t[0].sum()
    return t[0].sum()  # the written array, read through the tuple


def unrolled_inner_loop(params: List[Tensor], i: int, j: int):
    for _ in range(3):
        for k in range(2):  # unrolled: params[0] and params[1] the same in every outer step
            params[k] *= np.sum(2.0 + params[k])


@pytest.mark.parametrize("fn, args", [
    (same_path_every_step, ()), (projected_before_the_loop, (np.ones((4, 2)),)),
    (read_around_another_key, (1, 1)), (through_a_tuple, (0, 0)), (unrolled_inner_loop, (0, 0)),
])
def test_reads_that_passes_could_move_across_a_write_are_refused(fn, args):
    xs = [np.full((3, 4), 0.5) for _ in range(3)]
    with pytest.raises(ScriptError, match="in place"):
        script(fn)(xs, *args)
    assert all((x == 0.5).all() for x in xs)


def scales_by_a_sum(params: List[Tensor], x: Tensor) -> Tensor:
    y = (params[0] * x * x).sum()
    params[0] *= y
    return y


def test_a_gradient_reading_a_list_item_written_later_is_refused():
    """By differentiation the list is a tuple: its item reads are found too."""
    with pytest.raises(ScriptError, match="reads an array the function then writes into"):
        vjp(script(scales_by_a_sum), [np.array([0.5, -1.0, 2.0])], np.array([1.0, 2.0, -0.5]))


def sgd_over_zip(params: List[Tensor], grads: List[Tensor], lr: float):
    for p, g in zip(params, grads):  # (the pair zip makes, unpacked at once, reads nothing)
        p -= lr * g


def momentum_over_zip(params: List[Tensor], grads: List[Tensor], vs: List[Tensor], lr: float):
    for p, g, v in zip(params, grads, vs):
        v *= 0.9
        v -= lr * g
        p += v


def sgd_over_enumerate(params: List[Tensor], grads: List[Tensor], lr: float):
    for k, p in enumerate(params):
        p -= lr * grads[k]


@pytest.mark.parametrize("fn", [sgd_over_zip, momentum_over_zip, sgd_over_enumerate])
def test_updates_through_the_names_a_loop_binds(fn):
    def make():
        rng = np.random.default_rng(7)
        lists = [[rng.standard_normal((2, 3)), rng.standard_normal(3)] for _ in range(3)]
        return (*lists[:fn.__code__.co_argcount - 1], 0.1)

    plain, compiled = make(), make()
    held = [a for lst in compiled[:-1] for a in lst]
    fn(*plain)
    script(fn)(*compiled)
    got = [a for lst in compiled[:-1] for a in lst]
    assert all(a is b for a, b in zip(got, held))
    for a, b in zip(got, [a for lst in plain[:-1] for a in lst]):
        np.testing.assert_array_equal(a, b)


def flips_the_negative(grads: List[Tensor]):
    for g in grads:
        if g.sum() > 0:  # read to decide whether the write runs: before it
            continue
        g *= -1


def test_a_read_deciding_whether_a_write_runs_comes_before_it():
    grads = [np.array([1.0, -3.0]), np.array([-1.0, -2.0])]
    plain, held = [g.copy() for g in grads], list(grads)
    flips_the_negative(plain)
    script(flips_the_negative)(grads)
    for got, want, same in zip(grads, plain, held):
        assert got is same
        np.testing.assert_array_equal(got, want)
