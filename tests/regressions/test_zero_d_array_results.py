"""A function returning numpy's 0-d array (``np.zeros(())`` updated with ``+=``, an argument's
copy updated in place, ``np.asarray`` of a sum) gave back numpy's scalar: the generated code
computes the update as an operation (``0.0 + s``), which numpy gives as a scalar. A call now
gives back the array where numpy's result is one, and numpy's scalar where it is one."""

import numpy as np
import pytest

from script import Module, Parameter, Tensor, script


def zeros_0d(x: Tensor):
    return np.zeros(())


def updated_copy(x: Tensor):
    z = x.copy()
    z *= 3.0
    return z


def array_literal(x: Tensor):
    return np.array(2.0)


def sum_of(x: Tensor):
    return np.sum(x)


def accumulated_0d_array(x: Tensor):
    z = np.zeros(())
    z += np.sum(x)
    return z


def argument_copy(x: Tensor):
    return x.copy()


def scaled(x: Tensor):
    return x * 2.0


def argument(x: Tensor):
    return x


def asarray_of_sum(x: Tensor):
    return np.asarray(np.sum(x))


def pair(x: Tensor):
    z = np.zeros(())
    for i in range(3):
        z += x[i]
    return z, np.sum(x), x.copy()


def item_of_an_updated_0d_array(x: Tensor):
    z = np.zeros(())
    z += np.sum(x)
    return z[()]


def loss_from_a_number(p: Tensor):
    loss = 0
    h = p * 1.0
    for t in range(p.shape[0]):
        loss += -np.log(p[t])
    return loss, h


@pytest.mark.parametrize("fn", [item_of_an_updated_0d_array, zeros_0d, updated_copy,
                                array_literal, sum_of,
                                accumulated_0d_array, argument_copy, scaled, argument,
                                asarray_of_sum], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(), (3,)])
def test_array_or_scalar_as_numpy_gives(fn, shape):
    x = np.linspace(1.0, 2.0, int(np.prod(shape))).reshape(shape)
    want, got = fn(x.copy()), script(fn)(x.copy())
    assert type(got) is type(want)
    np.testing.assert_array_equal(got, want)


def test_items_of_a_returned_tuple():
    x = np.arange(3.0)
    want, got = pair(x.copy()), script(pair)(x.copy())
    assert [type(g) for g in got] == [type(w) for w in want] == [np.ndarray, np.float64,
                                                                  np.ndarray]
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_a_loss_summed_from_a_number_is_numpys_scalar():
    p = np.linspace(0.2, 0.8, 4)
    want, got = loss_from_a_number(p), script(loss_from_a_number)(p)
    assert [type(g) for g in got] == [type(w) for w in want] == [np.float64, np.ndarray]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)


# -- through helpers, early returns and nested results -------------------------------------------
def _accumulated(x: Tensor):
    z = np.zeros(())
    z += np.sum(x)
    return z


def from_a_helper(x: Tensor):
    return _accumulated(x)


def item_from_a_helper(x: Tensor):
    a = _accumulated(x)
    return a, x * 2.0


def early_return_in_a_loop(x: Tensor, n: int):
    z = np.zeros(())
    for i in range(n):
        z += np.sum(x)
        if i == 1:
            return z
    return z


def in_a_list(x: Tensor):
    z = np.zeros(())
    z += np.sum(x)
    return [z, z + 1.0]


def in_a_list_appended_to(x: Tensor):
    z = np.zeros(())
    z += np.sum(x)
    l = [z]
    l.append(np.sum(x))
    return l


def list_from_a_helper(x: Tensor):
    return in_a_list(x)


def in_an_inner_tuple(x: Tensor):
    z = np.zeros(())
    z += np.sum(x)
    return x * 2.0, (z, 1)


def in_a_dict(x: Tensor):
    z = np.zeros(())
    z += np.sum(x)
    return {"z": z, "s": np.sum(x)}


def _types(v):
    if isinstance(v, dict):
        return {k: _types(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_types(x) for x in v)
    return type(v)


@pytest.mark.parametrize("fn", [from_a_helper, item_from_a_helper, in_a_list,
                                in_a_list_appended_to, list_from_a_helper, in_an_inner_tuple,
                                in_a_dict], ids=lambda f: f.__name__)
def test_nested_and_called_results_as_numpy_gives(fn):
    x = np.arange(3.0)
    want, got = fn(x.copy()), script(fn)(x.copy())
    assert _types(got) == _types(want)
    assert "ndarray" in str(_types(want))  # (each holds numpy's 0-d array somewhere)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_an_early_return_in_a_loop_as_numpy_gives(n):
    x = np.arange(3.0)
    want, got = early_return_in_a_loop(x.copy(), n), script(early_return_in_a_loop)(x.copy(), n)
    assert type(got) is type(want) is np.ndarray
    np.testing.assert_array_equal(got, want)


def test_vjp_and_value_and_grad_give_the_primal_as_a_call_does():
    from script import value_and_grad, vjp

    def check(fn, x):
        want = fn(x.copy())
        out, backward = vjp(script(fn), x.copy())
        assert _types(out) == _types(want)
        value, grad = value_and_grad(script(fn))(x.copy()) if not isinstance(want, tuple) \
            else (out, None)
        assert type(value) is type(want)
        return out, backward

    x = np.arange(3.0)
    out, backward = check(accumulated_0d_array, x)
    np.testing.assert_allclose(backward(np.ones(()))[0], np.ones(3))
    out, backward = check(item_from_a_helper, x)
    np.testing.assert_allclose(backward((np.ones(()), np.ones(3)))[0], np.full(3, 3.0))
    check(sum_of, x)


# -- numpy's scalars stay scalars (a review found each given back as a 0-d array) ---------------
def _same(a):
    return a


def _copied_and_updated(a):
    b = a.copy()
    b += 1.0
    return b


def helper_given_a_scalar(x: Tensor):
    return _same(np.sum(x)), _copied_and_updated(x[0])


def item_stored_through_an_outer_list(x: Tensor):
    z = np.zeros(())
    l = [z, np.sum(x)]
    t = [l]
    u = [t]
    u[0][0][0] = np.sum(x) * 2.0
    return l


def a_key_given_twice(x: Tensor):
    z = np.zeros(())
    return {"a": z, "a": np.sum(x)}  # noqa: F601  (numpy keeps the last)


@pytest.mark.parametrize("fn", [helper_given_a_scalar, item_stored_through_an_outer_list,
                                a_key_given_twice], ids=lambda f: f.__name__)
def test_numpys_scalars_stay_scalars(fn):
    x = np.arange(3.0)
    want, got = fn(x.copy()), script(fn)(x.copy())
    assert _types(got) == _types(want)
    assert "ndarray" not in str(_types(want))


class _Accumulating(Module):
    def __init__(self):
        super().__init__()
        self.w = Parameter(np.linspace(0.5, 1.5, 3))

    def forward(self, x: Tensor):
        z = np.zeros(())
        z += np.sum(x * self.w)
        return z, np.sum(x)


def test_a_modules_results_as_numpy_gives_compiled_frozen_and_loaded(tmp_path):
    import script as rs
    module = _Accumulating()
    x = np.arange(3.0)
    want = module.forward(x)
    compiled = rs.script(module)
    path = str(tmp_path / "accumulating.rns")
    rs.save(compiled, path)
    for model in (compiled, rs.freeze(compiled), rs.load(path)):
        got = model(x)
        assert _types(got) == _types(want) == (np.ndarray, np.float64)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
