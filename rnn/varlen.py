"""Variable-length batches: pad a list of sequences into one array and record their lengths.

The layers take a padded ``(T, B, C)`` array plus ``lengths`` (``(B,)`` integers); lengths only
enter the compiled code as masks, so one compiled graph serves every set of lengths of a padded
shape. ``pad_sequence`` mirrors ``torch.nn.utils.rnn.pad_sequence``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def lengths_of(sequences: Sequence[Any] | Any, batch_first: bool = False) -> np.ndarray:
    """The lengths as an ``int64`` array of shape ``(B,)``.

    Accepts a list of sequences (their first axis), a list or array of ints (returned as an
    array), or a padded array whose padding is all zeros (``(T, B, C)``, or ``(B, T, C)`` with
    ``batch_first``): there a sequence ends after its last step with a non-zero feature.
    """
    if isinstance(sequences, np.ndarray) and sequences.ndim >= 2:
        return _lengths_of_padded(sequences, batch_first)
    items = list(sequences)
    if all(isinstance(item, (int, np.integer)) for item in items):
        return np.asarray(items, dtype=np.int64).reshape(len(items))
    return np.asarray([len(item) for item in items], dtype=np.int64)


def _lengths_of_padded(padded: np.ndarray, batch_first: bool) -> np.ndarray:
    steps_first = np.swapaxes(padded, 0, 1) if batch_first else padded
    nonzero = steps_first.reshape(steps_first.shape[0], steps_first.shape[1], -1).any(axis=2)
    steps = steps_first.shape[0]
    last = steps - np.argmax(nonzero[::-1], axis=0)  # one past the last non-zero step
    return np.where(nonzero.any(axis=0), last, 0).astype(np.int64)


def pad_sequence(sequences: Sequence[Any], batch_first: bool = False,
                 padding_value: float = 0.0) -> np.ndarray:
    """Stack sequences of shapes ``(L_b, *F)`` into ``(T, B, *F)`` (``(B, T, *F)`` with
    ``batch_first``), ``T = max L_b``, filling the tail of shorter ones with ``padding_value``."""
    arrays = [np.asarray(s) for s in sequences]
    if not arrays:
        raise ValueError("pad_sequence needs at least one sequence")
    features = arrays[0].shape[1:]
    if any(a.shape[1:] != features for a in arrays):
        raise ValueError("pad_sequence: sequences must agree in every axis but the first, got "
                         f"{[a.shape for a in arrays]}")
    dtype = np.result_type(*arrays)
    steps = max(a.shape[0] for a in arrays)
    out = np.full((steps, len(arrays), *features), padding_value, dtype=dtype)
    for b, a in enumerate(arrays):
        out[:a.shape[0], b] = a
    return np.swapaxes(out, 0, 1).copy() if batch_first else out


def unpad(padded: Any, lengths: Any, batch_first: bool = False) -> list[np.ndarray]:
    """The inverse of ``pad_sequence``: the list of ``(L_b, *F)`` sequences."""
    steps_first = np.swapaxes(np.asarray(padded), 0, 1) if batch_first else np.asarray(padded)
    return [steps_first[:int(n), b] for b, n in enumerate(lengths_of(lengths))]


__all__ = ["lengths_of", "pad_sequence", "unpad"]
