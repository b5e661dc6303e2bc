"""``W[i]`` with ``i`` numpy's integer scalar (``idx[0]`` of an int array, ``np.argmax(s)``) is
basic indexing in numpy: a view of ``W``, so ``v = W[idx[0]]; v *= 2.0`` changes ``W``. The
compiled read made a copy, and the write did not reach ``W`` (a wrong value, and an argument
left alone that numpy changes). Such a read now counts as a view of ``W``, as ``W[1]`` does: the
write is refused (or, where nothing else reads ``W``, compiled as numpy runs it)."""

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def row_of_a_local(x: Tensor, idx: Tensor):
    W = x * 1.0
    v = W[idx[0]]
    v *= 2.0
    return W


def row_of_an_argument(W: Tensor, s: Tensor):
    v = W[np.argmax(s)]
    v += 1.0
    return W.sum()


def pair_of_a_local(x: Tensor, rows: Tensor, cols: Tensor):
    W = x * 1.0
    v = W[rows[0], cols[0]]
    v -= 1.0
    return W


def int_beside_a_scalar(x: Tensor, idx: Tensor):
    W = x.reshape(2, 3, 4) * 1.0
    v = W[1, idx[0]]  # numpy: a view of W, an int beside its integer scalar
    v *= 2.0
    return W


def scalar_beside_an_int(W: Tensor, idx: Tensor):
    v = W[idx[0], 1]
    v += 1.0
    return v


def read_only(W: Tensor, idx: Tensor, s: Tensor):
    return W[idx[0]] * 2.0 + W[np.argmax(s)]


def embedding_scaled(E: Tensor, tokens: Tensor):
    h = E[tokens] * 1.0
    h *= 2.0
    return h


@pytest.mark.parametrize("fn,args", [
    (row_of_a_local, (np.arange(6.0).reshape(3, 2), np.array([1]))),
    (row_of_an_argument, (np.zeros((3, 2)), np.array([0.0, 1.0, 0.0]))),
    (pair_of_a_local, (np.arange(24.0).reshape(3, 2, 4), np.array([2]), np.array([1]))),
    (int_beside_a_scalar, (np.arange(24.0), np.array([1]))),
    (scalar_beside_an_int, (np.zeros((2, 3, 4)), np.array([1]))),
])
def test_a_write_through_the_read_is_numpys_or_refused(fn, args):
    want_args = [a.copy() for a in args]
    want = fn(*want_args)
    got_args = [a.copy() for a in args]
    try:
        got = script(fn)(*got_args)
    except ScriptError:
        return
    np.testing.assert_array_equal(got, want)
    for g, w in zip(got_args, want_args):
        np.testing.assert_array_equal(g, w)


def test_reads_alone_compile():
    W = np.arange(6.0).reshape(3, 2)
    args = (W, np.array([2]), np.array([0.0, 1.0, 0.0]))
    np.testing.assert_array_equal(script(read_only)(*args), read_only(*args))


def test_an_embedding_copied_then_updated_compiles():
    E = np.arange(12.0).reshape(4, 3)
    tokens = np.array([0, 3, 3])
    np.testing.assert_array_equal(script(embedding_scaled)(E, tokens), embedding_scaled(E, tokens))
