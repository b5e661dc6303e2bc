"""Strings in scripted code compute what Python computes: methods, indexing, slicing, ``in``,
``+`` and ``*``, and ``x in (a, b)`` of a tuple; a str argument deciding an ``if`` through them
is compiled in (so a loop holding the ``if`` runs natively), strings that are not run as
Python; bad uses are ScriptErrors at the user's line."""

from typing import Dict, List, Tuple

import numpy as np
import pytest

from script import ScriptError, Tensor, script
from tests.helpers import assert_same


def picks_a_cell(cell: str, x: Tensor) -> Tensor:
    if cell.lower().startswith("lstm") or "gru" in cell:
        return np.tanh(x)
    if cell[0] == "r" and cell[1:3] == "nn" and cell in ("rnn", "rnn_relu"):
        return np.maximum(x, 0.0)
    return x * 2.0


def string_values(name: str, words: List[str]) -> Tuple[str, int, List[str], str, bool, str]:
    first = words[0]
    return (first.upper() + "-" * 2, name.find("_"), name.split("_"), ",".join(words),
            first.endswith("b") and not first.isdigit(), first[::-1].strip("a"))


def numbers_in_a_tuple(x: Tensor, n: int, v: float) -> Tensor:
    if n in (1, 2, 3) and v not in (0.5, 1.5):
        return x * 2.0
    return x


def steps(cell: str, x: Tensor, n: int) -> Tensor:
    for _ in range(n):
        if cell.endswith("tanh"):
            x = np.tanh(x)
        else:
            x = x * 0.5
    return x


def formatted(t: int, loss: float, name: str) -> Tuple[str, str, str]:
    return f"h{t}", f"{loss:.3f}|{t:03d}|{name!r}|{t * 2}", "%s: %d steps" % (name, t)  # noqa: UP031 -- the form tested


def checked_log_sum_exp(x: Tensor, axis: int) -> Tensor:
    """A library's checks (a chain CRF's logsumexp): messages computed when raising."""
    if axis > 1:
        raise ValueError(f"axis {axis} is out of range")
    if x.ndim > 2:
        raise ValueError("logsumexp got %d dims" % (x.ndim,))  # noqa: UP031
    if axis == -2:
        raise ValueError(axis)  # a number: its str
    if axis < -2:
        raise ValueError("x" + "%r" * 2)
    return np.log(np.sum(np.exp(x), axis=axis))


@pytest.mark.parametrize("t, loss", [(7, 3.14159), (123, -0.5)])
def test_f_strings_and_percent_formatting_are_pythons(t, loss):
    assert script(formatted)(t, loss, "ab") == formatted(t, loss, "ab")


@pytest.mark.parametrize("args", [(np.ones((2, 2)), 3), (np.ones((1, 2, 2)), 0),
                                  (np.ones((2, 2)), -2)])
def test_exception_messages_computed_when_raising_are_pythons(args):
    with pytest.raises(ValueError) as want:
        checked_log_sum_exp(*args)
    with pytest.raises(ValueError) as got:
        script(checked_log_sum_exp)(*args)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("cell", ["LSTM", "lstm_2l", "a_gru", "rnn", "rnn_relu", "rnnx", "x"])
def test_string_methods_decide_as_python(cell):
    x = np.linspace(-1, 1, 5)
    assert_same(script(picks_a_cell)(cell, x), picks_a_cell(cell, x))


@pytest.mark.parametrize("name, words", [("a_b_c", ["ab", "c"]), ("abc", ["9b", "x"]),
                                         ("", ["aba"])])
def test_strings_computed_when_the_code_runs(name, words):
    assert script(string_values)(name, words) == string_values(name, words)


@pytest.mark.parametrize("n, v", [(1, 0.0), (2, 0.5), (4, 0.0)])
def test_membership_in_a_tuple_of_numbers(n, v):
    x = np.ones(2)
    assert_same(script(numbers_in_a_tuple)(x, n, v), numbers_in_a_tuple(x, n, v))


def test_a_str_argument_deciding_an_if_is_compiled_in():
    f = script(steps)
    x = np.linspace(-1, 1, 4)
    for cell in ("rnn_tanh", "rnn_relu", "rnn_tanh"):
        assert_same(f(cell, x, 3), steps(cell, x, 3))
    assert "runs natively" in f.explain("rnn_tanh", x, 3)


def bad_method(s: str) -> str:
    return s.casefold()


def bad_argument(s: str) -> bool:
    return s.startswith(3)


def bad_arity(s: str) -> str:
    return s.lower("x")


def bad_contains(s: str, n: int) -> bool:
    return n in s


def bad_tuple(x: Tensor) -> bool:
    return x in (1, 2)


@pytest.mark.parametrize("fn, args, match, line", [
    (bad_method, ("a",), r"'str' has no attribute 'casefold' \(the string methods supported: ",
     "s.casefold()"),
    (bad_argument, ("a",), r"str.startswith\(\): an argument must be a str, not int",
     "s.startswith(3)"),
    (bad_arity, ("a",), r"str.lower\(\) takes 0 arguments, not 1", 's.lower("x")'),
    (bad_contains, ("a", 1), r"'in <string>' requires a str on the left, not int", "n in s"),
    (bad_tuple, (np.ones(1),), r"'in' of a tuple compares strings or numbers", "x in (1, 2)"),
])
def test_bad_string_uses_are_script_errors(fn, args, match, line):
    with pytest.raises(ScriptError, match=match) as info:
        script(fn)(*args)
    assert line in str(info.value)


def encode_chars(text: str, vocab: Dict[str, int], E: Tensor) -> Tensor:
    ids: List[int] = []
    for ch in text:  # a string iterates its characters
        ids.append(vocab[ch])
    n = 0
    for c in "ab":
        n += len(c)
    return E[np.array(ids)].sum(axis=0) * n


def vowel_positions(text: str) -> int:
    k = 0
    for i, c in enumerate(text):
        if c in "aeiou":
            k += i
    return k


def test_iterating_a_string():
    E, vocab = np.arange(12.).reshape(4, 3), {"a": 0, "b": 1, "c": 2, "d": 3}
    for text in ("abcab", "d", "dcba"):
        assert_same(script(encode_chars)(text, vocab, E), encode_chars(text, vocab, E))
    for text in ("hello world", "", "aeiou"):
        assert script(vowel_positions)(text) == vowel_positions(text)
