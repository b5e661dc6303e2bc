"""Argument checks of the ``LSTM`` / ``GRU`` / ``RNN`` front ends, with ``torch.nn``'s meaning.

They run in Python at the user's call, before anything compiles or runs, and raise
``RNNInputError`` (a ``SignatureError``, so also a ``TypeError``, and a ``ValueError``) with a
message that names the argument and, for a shape, the expected one:

- ``input``: an array of 2 (unbatched ``(T, I)``) or 3 dimensions (``(T, B, I)``, or ``(B, T, I)``
  with ``batch_first``) whose last axis is ``input_size`` and whose dtype is the parameters'
  (no silent promotion: torch refuses a float64 input into a float32 model too);
- ``hx``: for an LSTM a pair ``(h0, c0)``, otherwise one array; each ``(D * L, B, H)``, or
  ``(D * L, H)`` for an unbatched input, of the parameters' dtype;
- ``lengths``: integers, one per batch row, each ``1 <= length <= T``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from script import SignatureError
from script.module import is_array


class RNNInputError(SignatureError, ValueError):
    """An argument a recurrent front end cannot take (a ``SignatureError`` and a ValueError)."""


ARGUMENTS = ("input", "hx", "lengths")
"""The parameters of the front ends' ``forward``, in order (all but ``input`` default to None)."""


def bind(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The call's ``(input, hx, lengths)``, bound as Python would bind them."""
    if not kwargs and 1 <= len(args) <= len(ARGUMENTS):  # the usual positional call
        return (*args, *(None,) * (len(ARGUMENTS) - len(args)))  # type: ignore[return-value]
    if len(args) > len(ARGUMENTS):
        raise RNNInputError(f"{name}() takes at most {len(ARGUMENTS)} arguments (input, hx, "
                            f"lengths) but {len(args)} were given")
    bound: dict[str, Any] = dict(zip(ARGUMENTS, args))
    for key, value in kwargs.items():
        if key not in ARGUMENTS:
            raise RNNInputError(f"{name}() got an unexpected keyword argument '{key}'")
        if key in bound:
            raise RNNInputError(f"{name}() got multiple values for argument '{key}'")
        bound[key] = value
    if "input" not in bound:
        raise RNNInputError(f"{name}() missing required argument 'input'")
    return bound["input"], bound.get("hx"), bound.get("lengths")


def check_input(name: str, x: Any, input_size: int, dtype: np.dtype) -> None:
    """``input``: an array of rank 2 or 3, ``input_size`` features, the parameters' dtype."""
    if not is_array(x):
        raise RNNInputError(f"{name}: input must be an array, got {type(x).__name__}")
    if x.ndim not in (2, 3):
        raise RNNInputError(f"{name}: expected input to be 2-D (unbatched) or 3-D, got "
                            f"{x.ndim}-D of shape {tuple(x.shape)}")
    if x.dtype != dtype:
        raise RNNInputError(f"{name}: input dtype ({x.dtype}) does not match the parameters' "
                            f"dtype ({dtype}); convert the input (x.astype('{dtype}')) or the "
                            "model's parameters")
    if x.shape[-1] != input_size:
        raise RNNInputError(f"{name}: input.shape[-1] must equal input_size: expected "
                            f"{input_size}, got {x.shape[-1]}")


def check_state(name: str, what: str, state: Any, expected: tuple[int, ...],
                dtype: np.dtype) -> None:
    """One initial state (``hx`` or ``hx[0]``...): an array of shape ``expected`` and the
    parameters' dtype."""
    if not is_array(state):
        raise RNNInputError(f"{name}: {what} must be an array of shape {expected}, got "
                            f"{type(state).__name__}")
    if tuple(state.shape) != expected:
        layout = "(num_layers * num_directions, batch, hidden_size)" if len(expected) == 3 \
            else "(num_layers * num_directions, hidden_size) for an unbatched input"
        raise RNNInputError(f"{name}: {what} has shape {tuple(state.shape)}; expected "
                            f"{expected} = {layout}")
    if state.dtype != dtype:
        raise RNNInputError(f"{name}: {what} dtype ({state.dtype}) does not match the "
                            f"parameters' dtype ({dtype})")


def check_states(name: str, hx: Any, pair: bool, expected: tuple[int, ...],
                 dtype: np.dtype, cell_expected: tuple[int, ...] | None = None) -> None:
    """``hx``: a pair ``(h0, c0)`` for an LSTM (``pair``), one array otherwise; ``c0`` has
    shape ``cell_expected`` when it differs from ``h0``'s (an LSTM with ``proj_size``)."""
    if not pair:
        check_state(name, "hx", hx, expected, dtype)
        return
    cell_expected = cell_expected or expected
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        shapes = f"shape {expected}" if cell_expected == expected else \
            f"shapes {expected} and {cell_expected}"
        raise RNNInputError(f"{name}: hx must be a tuple (h0, c0) of two arrays of {shapes}, "
                            f"got {_describe(hx)}")
    check_state(name, "h0 (hx[0])", hx[0], expected, dtype)
    check_state(name, "c0 (hx[1])", hx[1], cell_expected, dtype)


def check_lengths(name: str, lengths: Any, batch: int, steps: int) -> Any:
    """``lengths``: ``batch`` integers in ``[1, steps]``; returned as an int64 array when given
    as a list or tuple of ints (what the compiled code takes)."""
    if isinstance(lengths, (list, tuple)):
        if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool)
                   for n in lengths):
            raise RNNInputError(f"{name}: lengths must be integers, got {_describe(lengths)}")
        lengths = np.asarray(lengths, dtype=np.int64).reshape(len(lengths))
    if not is_array(lengths):
        raise RNNInputError(f"{name}: lengths must be an integer array or a list of ints, got "
                            f"{type(lengths).__name__}")
    if lengths.dtype.kind not in "iu":
        raise RNNInputError(f"{name}: lengths must be integers, got dtype {lengths.dtype}")
    if tuple(lengths.shape) != (batch,):
        raise RNNInputError(f"{name}: lengths must hold one length per batch row: expected "
                            f"shape ({batch},), got {tuple(lengths.shape)}")
    low, high = int(lengths.min()), int(lengths.max())
    if low < 1 or high > steps:
        raise RNNInputError(f"{name}: every length must be between 1 and the sequence length "
                            f"{steps}, got lengths from {low} to {high}")
    return lengths


def _describe(value: Any) -> str:
    if is_array(value):
        return f"an array of shape {tuple(value.shape)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} item(s)"
    return type(value).__name__


__all__ = ["RNNInputError", "bind", "check_input", "check_lengths", "check_state",
           "check_states"]
