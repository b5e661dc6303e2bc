"""A helper that updates the items of a container in place (``d["a"] += x``), given a container a
comprehension or a loop of puts made, is refused; the refusal names the comprehension, not the
compiler's own ``$dcomp1``.

Accepting puts of new arrays gave wrong values: a put made once before the loop of puts (``z``,
one array under every key), a constant the passes fold (``np.zeros(3)``: one constant object
under every key) or merge (12 equal constants of an unrolled comprehension: the helper's write
went into the compiled function's constant) all left the other items holding the written array.
These stay refused until the puts are followed to the arrays they store."""

from typing import Dict, List

import numpy as np
import pytest

from script import ScriptError, Tensor, script


def _bump(d: Dict[str, Tensor], x: Tensor):
    d["a"] += x
    return d["b"].sum()


def _bump_first(items: List[Tensor], x: Tensor):
    items[0] += x
    return items[1].sum()


def zeros_per_key(p: Dict[str, Tensor], x: Tensor):
    d = {k: np.zeros(3) for k in p.keys()}
    return _bump(d, x)


def zeros_like_per_key(p: Dict[str, Tensor], x: Tensor):
    d = {k: np.zeros_like(v) for k, v in p.items()}
    return _bump(d, x)


def one_array_per_key(p: Dict[str, Tensor], x: Tensor):
    z = np.zeros(3)
    d = {k: z for k in p.keys()}
    return _bump(d, x)


def one_array_put_in_a_loop(p: Dict[str, Tensor], x: Tensor):
    z = np.zeros(3)
    d = {}
    for k in p.keys():
        d[k] = z
    return _bump(d, x)


def unrolled_list_of_zeros(p: Dict[str, Tensor], x: Tensor):
    items = [np.zeros(3) for i in range(12)]
    return _bump_first(items, x)


@pytest.mark.parametrize("fn", [zeros_per_key, zeros_like_per_key, one_array_per_key,
                                one_array_put_in_a_loop, unrolled_list_of_zeros])
def test_numpys_value_or_a_refusal(fn):
    p = {"a": np.ones(3), "b": np.ones(3)}
    want = fn(p, np.ones(3))
    try:
        compiled = script(fn)
        got = [compiled(p, np.ones(3)) for _ in range(2)]  # (a constant written would show)
    except ScriptError as e:
        assert "$" not in str(e).splitlines()[0]
        return
    for g in got:
        np.testing.assert_allclose(g, want)


def test_the_refusal_names_the_comprehension():
    with pytest.raises(ScriptError, match="writes into the dict the comprehension makes"):
        script(zeros_like_per_key)({"w": np.ones(3)}, np.arange(3.0))


def test_a_literal_of_new_arrays_compiles():
    def literal(x: Tensor):
        d = {"a": np.zeros(3), "b": np.zeros(3)}
        return _bump(d, x)

    assert script(literal)(np.ones(3)) == literal(np.ones(3)) == 0.0
