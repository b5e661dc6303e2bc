"""numpy functions and methods in scripted code compute what numpy computes (values, dtypes and
shapes, float32 and float64), their type rules agree with their eager functions, and what stays
unsupported is a ScriptError at the user's line."""

from typing import List, Tuple

import numpy as np
import pytest

from script import ScriptError, Tensor, ops, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same, infer


def creation(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    return (np.copy(x) * 2.0, x.copy(), np.array([1.0, 2.0, 3.0]) * x[0, :3],
            np.array([[1, 2], [3, 4]]), np.array(2.5, dtype=np.float32))


def arrays_of_arrays(x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    rows: List[Tensor] = [x[0], x[1]]
    return np.array(x), np.array(rows), np.array((x[0], x[1] * 2.0), dtype=np.float32)


def repeats(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    return np.tile(x, 2), np.tile(x, (2, 1, 2)), x.repeat(2), np.repeat(x, 3, axis=1), \
        x.repeat(2, axis=-2)


def flat(x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    return x.flatten(), x.ravel() + 1.0, np.ravel(x.T)


def joins(x: Tensor, v: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    return (np.vstack((x, x)), np.vstack([v, v]), np.row_stack((v, v)), np.hstack((x, x)),
            np.hstack([v, v, v]))


def joins_of_numbers(data: Tensor, x: Tensor, v: Tensor):
    u = data[0]  # a 0-d value: Mantas Lukosevicius' minimal ESN stacks np.vstack((1, u))
    return (np.vstack((1, u)), np.vstack((1, u, x)), np.hstack((1.5, v)), np.hstack((v, 3)),
            np.stack((1.0, u)), np.concatenate((v, np.ones(1), v)))


def joins_of_numbers_cost(u: Tensor, v: Tensor):
    return (np.sum(np.vstack((1.0, u, u[0])) ** 2) + np.sum(np.hstack((1.0, v, 2.0)) ** 2) +
            np.sum(np.stack((1.0, v[0])) ** 2) + np.sum(np.column_stack((1.0, v[1])) ** 2))


def test_gradients_through_joins_of_numbers():
    """A number among the arrays of a join is a 0-d array, made 1-D or 2-D as numpy makes it
    (an echo state network's np.vstack((1, u)) differentiates)."""
    rng = np.random.default_rng(3)
    check_vjp(script(joins_of_numbers_cost), (rng.standard_normal((1, 1)),
                                              rng.standard_normal(3)))


def joins_of_lists(x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    rows: List[Tensor] = []
    for i in range(3):
        rows.append(np.tanh(x[i]))
    return np.vstack(rows), np.hstack(rows), np.column_stack(rows)


def column_stacks(x: Tensor, v: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return (np.column_stack((v, v * 2.0)), np.column_stack([x.T, x.T]),
            np.column_stack((v, x.T, v)), np.column_stack((v[0], v[1])))


def depth_stacks(x: Tensor, v: Tensor):
    steps = []
    for t in range(3):
        steps.append(np.tanh(x * float(t)))
    return (np.dstack(steps), np.dstack((v, v * 2.0)), np.dstack([x[None], x[None]]),
            np.dstack((v[0], v[1])))


def products(a: Tensor, v: Tensor, c: Tensor, r: Tensor):
    return (np.dot(a, v), v.dot(v), np.dot(c, r), a.dot(a.T), np.dot(v, a.T), np.dot(2.0, v),
            np.outer(v, v), np.outer(a, v))


def indices(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return np.argmax(x), np.argmin(x, axis=0), x.argmax(axis=1), x.argmin()


def elementwise(x: Tensor, m: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return (np.clip(x, -0.5, 0.5), np.where(m, x, 0.0), np.log1p(np.abs(x)),
            np.expm1(x) * np.where(m * 1.5, 1.0, -1.0))


def gathers(w: Tensor, idx: Tensor, y: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    picked = w[np.arange(3), y]
    return w[idx], picked, w[:, y[0]], w[1, 2] + w[0], w[np.arange(3), 1]


def range_indices(p: Tensor, y: List[int]) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    m = p.shape[0]
    d = p.copy()
    d[range(m), y] -= 1.0
    return p[range(m), y], p[range(1, m), 0], p[range(0, m, 2)], d


def new_axes(x: Tensor, v: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    return v[:, np.newaxis] * v[np.newaxis, :], x[np.newaxis][0][:, None] + x[:, np.newaxis], \
        x[..., None] * x[..., None, :], x[..., 0, None] + x[None, ..., 1], x[0, ..., None, 1:]


def flips_and_swaps(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    return (np.flip(x, 0) * 2.0, np.flip(x, axis=(0, -1)) + 1.0, np.swapaxes(x, 0, 2),
            x.swapaxes(-1, 1) * x.swapaxes(1, 2), np.flip(x) * np.flip(x, axis=None)[0])


def lists_as_arrays(x: Tensor, v: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """numpy takes a list or tuple of arrays as their stack (hipsternet's regularization)."""
    ws: List[Tensor] = [x, x * 2.0]
    return (np.sum([np.sum(w * w) for w in ws]), np.mean((v, v * 3.0), axis=0),
            np.max([x.sum(), v.max()]))


def _r(rng, dtype, *shape):
    return rng.standard_normal(shape).astype(dtype)


def triangles(x: Tensor, v: Tensor):
    causal = (1 - np.tri(x.shape[-2], dtype=x.dtype)) * -1e10
    return (np.tri(3), np.tri(3, 4, 1, dtype=np.int32), np.tri(2, k=-1, dtype=bool), causal,
            np.tril(x), np.triu(x), np.tril(x, 1), np.triu(x, k=-1), np.tril(v), np.triu(v, 1),
            np.tril(x > 0.0))


def masked_attention(x: Tensor) -> Tensor:
    scores = np.tril(x @ x.T) + (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10
    return np.sum(np.tanh(scores)) + np.sum(np.triu(x, 1) ** 2)


def rolls_and_norms(x: Tensor, v: Tensor):
    return (np.roll(x, 1), np.roll(x, -2, axis=0), np.roll(x, 5, axis=-1), np.roll(v, -1),
            np.linalg.norm(x), np.linalg.norm(v), np.linalg.norm(x, axis=1),
            np.linalg.norm(x, axis=0, keepdims=True))


def lorenz96(x: Tensor):
    """DAPPER's Lorenz96 ``dxdt`` (MIT): the shifts of a periodic state."""
    return (np.roll(x, -1) - np.roll(x, 2)) * np.roll(x, 1) - x + 8.0


def unpacked(state: Tensor, m: Tensor):
    x, y, z = state  # as numpy iterates: the rows
    a, b = m
    return np.stack([10.0 * (y - x), x * (28.0 - z) - y, x * y - 8.0 / 3 * z]), a * b


def test_unpacking_an_array_and_norms_and_shifts_have_gradients():
    r = np.random.default_rng(4)
    check_vjp(lorenz96, (r.standard_normal(7),))
    check_vjp(unpacked, (r.standard_normal(3), r.standard_normal((2, 3))))
    check_vjp(rolls_and_norms, (r.standard_normal((3, 4)), r.standard_normal(5)))
    with pytest.raises(ValueError, match="too many values to unpack"):
        script(unpacked)(np.ones(4), np.ones((2, 3)))


def zipped_heads(heads: List[List[Tensor]]) -> Tensor:
    total = np.zeros(2)
    for q, k, v in zip(*heads):
        total = total + q * k - v
    return total


@pytest.mark.parametrize("heads", [[[np.ones(2), np.full(2, 2.0)]] * 3, [], [[], [], []],
                                   [[], []], [[np.ones(2)], [np.ones(2)]]])
def test_zip_of_a_spread_list_runs_or_raises_as_python(heads):
    try:
        want = zipped_heads(heads)
    except ValueError:
        with pytest.raises(ValueError, match="cannot unpack into 3 names"):
            script(zipped_heads)(heads)
        return
    assert_same(script(zipped_heads)(heads), want)


def split_by_count(x: Tensor, n: int) -> Tuple[List[Tensor], Tensor]:
    return np.split(x, n, axis=-1), np.vstack(np.split(x, n))


def test_np_split_by_an_int_argument_gives_numpys_list():
    x = np.arange(24.0).reshape(4, 6)
    for n in (1, 2):
        got, want = script(split_by_count)(x, n), split_by_count(x, n)
        assert type(got[0]) is list and len(got[0]) == n
        assert_same(got, want)
    with pytest.raises(ValueError):  # numpy's: the axis does not divide
        script(split_by_count)(x, 4)


def mapped(x: Tensor, xs: List[Tensor]) -> Tuple[List[Tensor], List[Tensor], List[Tensor]]:
    halves = list(map(lambda t: np.split(t, 2, axis=-1), np.split(x, 3, axis=-1)))
    return list(map(np.tanh, xs)), [h[1] for h in halves], list(map(lambda a, b: a * b, xs, xs))


def sorts_and_scans(x: Tensor) -> tuple:
    """Top-k indices as greedy and sampling decoders pick them, running sums, rounding."""
    top = np.argsort(x[0])[-2:][::-1]
    return (np.sort(x, axis=1), np.sort(x, axis=None), top, x.argsort(axis=0),
            np.cumsum(x, axis=1), np.cumsum(x), x.cumsum(0), np.round(x, 1), x.round(),
            np.around(x * 10), np.round(2.567, 2), x[0][top])


PROGRAMS = {
    "sorts_and_scans": (sorts_and_scans, lambda r, d: (_r(r, d, 3, 4),)),
    "rolls_and_norms": (rolls_and_norms, lambda r, d: (_r(r, d, 3, 4), _r(r, d, 5))),
    "unpacked": (unpacked, lambda r, d: (_r(r, d, 3), _r(r, d, 2, 3))),
    "triangles": (triangles, lambda r, d: (_r(r, d, 2, 3, 4), _r(r, d, 3))),
    "mapped": (mapped, lambda r, d: (_r(r, d, 2, 12), [_r(r, d, 3), _r(r, d, 2)])),
    "creation": (creation, lambda r, d: (_r(r, d, 2, 4),)),
    "arrays_of_arrays": (arrays_of_arrays, lambda r, d: (_r(r, d, 2, 3),)),
    "repeats": (repeats, lambda r, d: (_r(r, d, 2, 3),)),
    "flat": (flat, lambda r, d: (_r(r, d, 2, 3),)),
    "joins": (joins, lambda r, d: (_r(r, d, 2, 3), _r(r, d, 3))),
    "joins_of_numbers": (joins_of_numbers, lambda r, d: (_r(r, d, 2), _r(r, d, 3, 1),
                                                         _r(r, d, 3))),
    "column_stacks": (column_stacks, lambda r, d: (_r(r, d, 2, 3), _r(r, d, 3))),
    "joins_of_lists": (joins_of_lists, lambda r, d: (_r(r, d, 3, 2),)),
    "depth_stacks": (depth_stacks, lambda r, d: (_r(r, d, 2, 3), _r(r, d, 3))),
    "products": (products, lambda r, d: (_r(r, d, 3, 3), _r(r, d, 3), _r(r, d, 5, 1),
                                         _r(r, d, 1, 4))),
    "indices": (indices, lambda r, d: (np.array([[1, 5, 5], [7, 0, 7]], dtype=d),)),
    "gathers": (gathers, lambda r, d: (_r(r, d, 4, 5), np.array([[0, 3], [3, -1]]),
                                       np.array([4, 0, 2]))),
    "flips_and_swaps": (flips_and_swaps, lambda r, d: (_r(r, d, 2, 3, 3),)),
    "lists_as_arrays": (lists_as_arrays, lambda r, d: (_r(r, d, 2, 3), _r(r, d, 3))),
    "new_axes": (new_axes, lambda r, d: (_r(r, d, 2, 3), _r(r, d, 3))),
    "range_indices": (range_indices, lambda r, d: (_r(r, d, 4, 3), [2, 0, 1, 2])),
    "elementwise": (elementwise, lambda r, d: (_r(r, d, 3, 4),
                                               r.integers(0, 2, (3, 4)) * 3)),
}


@pytest.mark.filterwarnings("ignore:`row_stack` alias is deprecated")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_equals_numpy(name, dtype):
    fn, make_args = PROGRAMS[name]
    args = make_args(np.random.default_rng(0), dtype)
    assert_same(script(fn)(*args), fn(*args))


def too_many_after_an_ellipsis(x: Tensor):
    return x[:, ..., None, -1]


def too_many_full_slices(x: Tensor):
    return x[:, :]


@pytest.mark.parametrize("fn", [too_many_after_an_ellipsis, too_many_full_slices],
                         ids=lambda f: f.__name__)
def test_more_indices_than_axes_is_numpys_index_error(fn):
    with pytest.raises(IndexError):
        fn(np.ones(3))
    with pytest.raises(IndexError, match="too many indices"):
        script(fn)(np.ones(3))


def test_argmax_is_first_of_ties_and_int64():
    x = np.array([[3.0, 3.0, 1.0], [0.0, 2.0, 2.0]])
    got = script(indices)(x)
    assert [np.asarray(g).dtype for g in got] == [np.int64] * 4
    assert got[0] == 0 and got[2].tolist() == [0, 1]


def test_empty_and_empty_like_have_numpy_shape_and_dtype():
    def f(x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        return np.empty((2, 3)), np.empty_like(x), np.empty_like(x, dtype=np.int64)

    x = np.ones((4, 1), np.float32)
    for got, want in zip(script(f)(x), f(x)):
        assert got.shape == want.shape and got.dtype == want.dtype


def test_outer_product_through_dot_is_numpys_dot():
    """numpy's ``@`` of an (n, 1) column by a (1, m) row is ~4x slower than ``np.dot``."""
    def f(c: Tensor, r: Tensor) -> Tensor:
        return np.dot(c, r)

    c, r = np.ones((50, 1)), np.ones((1, 60))
    code = script(f).code_for(c, r)
    assert "np.dot(" in code and "@" not in code


TYPE_CASES = [
    ("argmax", (np.ones((2, 3)), None)), ("argmax", (np.ones((2, 3)), -1)),
    ("argmin", (np.ones((4,)), 0)), ("tile", (np.ones((2, 3), np.float32), (2, 1, 3))),
    ("tile", (np.ones((2, 3)), 2)), ("repeat", (np.ones((2, 3)), 2, None)),
    ("repeat", (np.ones((2, 3), np.int64), 3, 0)), ("flatten", (np.ones((2, 3)),)),
    ("ravel", (np.ones((2, 3, 1)),)), ("empty_like", (np.ones((2,)), "float32")),
    ("array", ([[1, 2], [3, 4]], None)), ("array", ([1.0, 2], "float32")),
    ("array", (True, None)), ("dot", (np.ones((2, 3)), np.ones((4, 3, 5)))),
    ("dot", (np.ones(3), np.ones(3))), ("vstack", ([np.ones(3), np.ones(3)],)),
    ("hstack", ([np.ones((2, 1)), np.ones((2, 3))],)),
    ("column_stack", ([np.ones(3), np.ones((3, 2), np.float32)],)),
    ("column_stack", ((np.ones(()), np.ones(()), np.ones(())),)),
    ("column_stack", ([np.ones((3, 2, 4)), np.ones((3, 1, 4))],)),
    ("take", (np.ones((4, 3), np.float32), np.array([[0, 1]]), 1)),
    ("take", (np.ones((4, 3)), 2, 0)), ("index_pairs", (np.ones((4, 3, 2)), np.arange(4), 1)),
    ("take_backward", (np.ones((2, 3)), (5, 3), np.array([0, 0]), 0)),
    ("sort", (np.ones((2, 3), np.float32), 0)), ("sort", (np.ones((2, 3)), None)),
    ("argsort", (np.ones((2, 3), np.float32), -1)), ("argsort", (np.ones((2, 3)), None)),
    ("cumsum", (np.ones((2, 3), np.float32), 1)), ("cumsum", (np.ones((2, 3), bool), None)),
    ("cumsum", (np.ones((2, 3), np.uint8), 0)), ("round", (np.ones((2, 3), np.float32), 1)),
    ("round", (np.ones((2, 3), np.int32), -1)),
]


@pytest.mark.parametrize("name, args", TYPE_CASES)
def test_type_rule_agrees_with_the_eager_op(name, args):
    (t,) = infer(name, *args)
    want = np.asarray(getattr(ops, name)(*args))
    assert (t.dtype, t.shape) == (want.dtype.name, want.shape)


REFUSED = [
    ("def f(x: Tensor) -> Tensor:\n    return np.flip(x, int(x[0]))\n",
     r"np.flip\(\) needs its axis .* as a constant here: np.flip\(x, axis=0\) is x\[::-1\]"),
    ("def f(x: Tensor) -> Tensor:\n    return np.array('ab')\n", r"np.array\(\) of a str"),
    ("def f(x: Tensor) -> Tensor:\n    return np.outer(2.0, x)\n", r"np.outer\(\) of a float"),
    ("def f(x: Tensor) -> Tensor:\n    return np.array(x, copy=False)\n",
     "copy, order and ndmin are not supported"),
    ("def f(x: Tensor) -> Tensor:\n    return np.where(x > 0.0)\n",
     r"np.where\(cond\) with one argument .* is not supported"),
    ("def f(x: Tensor) -> Tensor:\n    return np.take(x, 1.5)\n",
     "an index must be an int or an integer array"),
    ("def f(x: Tensor) -> Tensor:\n    return np.column_stack(x, x)\n",
     r"np.column_stack\(\) takes at most 1 positional arguments, got 2"),
    ("def f(x: Tensor) -> Tensor:\n    return np.tanh(x[range(0.5 * 4)])\n",
     "range\\(\\) arguments must be ints, not float"),
    ("def f(x: Tensor) -> Tensor:\n    return np.arange(np.max(x))\n",
     r"must be a number, not Tensor(\(\))?: .* is int\(x\) or float\(x\), np.arange\(int\(n\)\)"),
    ("def f(x: Tensor) -> Tensor:\n    rows = [[x, x], [x, x]]\n    return np.asarray(rows)\n",
     r"np.array\(\) of a Tensor\[\]\[\] .* stack the inner lists first"),
]


def test_boolean_mask_index_is_a_script_error_at_the_line():
    def f(x: Tensor) -> Tensor:
        return x[x > 0.0] * 2.0

    with pytest.raises(ScriptError, match="boolean mask indexing is not supported") as info:
        script(f)(np.ones(3))
    assert "return x[x > 0.0] * 2.0" in str(info.value)


@pytest.mark.parametrize("source, message", REFUSED)
def test_unsupported_forms_are_script_errors(tmp_path, source, message):
    import importlib.util
    path = tmp_path / "refused_numpy.py"
    path.write_text("import numpy as np\nfrom script import Tensor\n\n" + source)
    spec = importlib.util.spec_from_file_location("refused_numpy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ScriptError, match=message) as info:
        script(module.f)(np.ones(3))
    assert "return np." in str(info.value)


def test_gradients_of_flips_and_swaps_and_lists_as_arrays():
    r = np.random.default_rng(1)
    check_vjp(masked_attention, (r.standard_normal((4, 3)),))
    check_vjp(flips_and_swaps, (r.standard_normal((2, 3, 3)),), argnums=(0,))
    check_vjp(lists_as_arrays, (r.standard_normal((2, 3)), r.standard_normal(3)),
              argnums=(0, 1))


def list_as_an_operand(x: Tensor, W: List[Tensor]) -> Tuple[Tensor, Tensor]:
    """rushter/MLAlgorithms' LSTM: ``np.dot(x, W)`` with ``W`` a list of weight matrices."""
    return np.dot(x, W), np.maximum([x[0], x[1]], 0.0)


def test_a_list_of_arrays_as_an_operand_is_their_stack():
    r = np.random.default_rng(13)
    x, W = r.standard_normal((2, 3)), [r.standard_normal((3, 4)), r.standard_normal((3, 4))]
    got, want = script(list_as_an_operand)(x, W), list_as_an_operand(x, W)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12)
    check_vjp(rows_clipped, (x,))  # (np.dot of a 3-D stack has no gradient: refused)


def rows_clipped(x: Tensor) -> Tensor:
    return np.maximum([x[0], x[1] * 2.0], 0.1)


def sizes_of(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    n = np.prod(x.shape[1:])  # a 0-d int64 array, as numpy's np.int64
    return (x.reshape(-1, n), np.sqrt(2.0 / np.prod(x.shape)) * x, np.sum(x.shape),
            np.zeros((n, 2), dtype=x.dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_reductions_of_a_shape_read_it_as_an_int_array(dtype):
    x = np.arange(24, dtype=dtype).reshape(2, 3, 4)
    got, want = script(sizes_of)(x), sizes_of(x)
    for g, w in zip(got, want):  # values, dtypes (float64 beside np.int64) and shapes
        assert_same(g, w)


def products_over(x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    return np.prod(x, axis=0), x.prod(keepdims=True), np.prod(x > 0, axis=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_prod_computes_numpys_product_and_type(dtype):
    x = np.array([[1, -2, 3], [4, 0, 2]], dtype=dtype)
    for g, w in zip(script(products_over)(x), products_over(x)):
        assert_same(g, w)


def dot_of_numbers(x: Tensor):
    return x + np.dot(1, 0), x * np.dot(2.0, 0.5)  # filterpy's predict: dot(B, u), B=1, u=0


def test_dot_of_python_numbers_is_numpys_scalar():
    """``np.dot`` of two Python numbers is a numpy scalar (int64, float64), which promotes a
    float32 array to float64 as numpy does (the compiled code kept float32)."""
    x = np.ones(3, np.float32)
    for got, want in zip(script(dot_of_numbers)(x), dot_of_numbers(x)):
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_array_equal(got, want)
