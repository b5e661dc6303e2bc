"""Variable-length batches: pad a list of sequences into one array and record their lengths.

The layers take a padded ``(T, B, C)`` array plus ``lengths`` (``(B,)`` integers); lengths only
enter the compiled code as masks, so one compiled graph serves every set of lengths of a padded
shape. ``pad_sequence`` mirrors ``torch.nn.utils.rnn.pad_sequence``; ``pack_padded_sequence``,
``pack_sequence`` and ``pad_packed_sequence`` make and read torch's ``PackedSequence`` (the
steps of the sequences, longest first, packed one after another), which ``LSTM``/``GRU``/``RNN``
take and return as torch's do (running them padded, with the lengths).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from rnn.init import from_torch


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
                 padding_value: float = 0.0, padding_side: str = "right") -> np.ndarray:
    """Stack sequences of shapes ``(L_b, *F)`` into ``(T, B, *F)`` (``(B, T, *F)`` with
    ``batch_first``), ``T = max L_b``, filling the tail of shorter ones with ``padding_value``
    (their head with ``padding_side="left"``)."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
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
        if padding_side == "left":
            out[steps - a.shape[0]:, b] = a
        else:
            out[:a.shape[0], b] = a
    return np.swapaxes(out, 0, 1).copy() if batch_first else out


def unpad(padded: Any, lengths: Any, batch_first: bool = False) -> list[np.ndarray]:
    """The inverse of ``pad_sequence``: the list of ``(L_b, *F)`` sequences."""
    steps_first = np.swapaxes(np.asarray(padded), 0, 1) if batch_first else np.asarray(padded)
    return [steps_first[:int(n), b] for b, n in enumerate(lengths_of(lengths))]


class PackedSequence(NamedTuple):
    """torch's ``PackedSequence``: ``data`` holds step 0 of every sequence, then step 1 of those
    longer than 1, ...: ``batch_sizes[t]`` rows for step ``t``, the sequences in the order
    ``sorted_indices`` (longest first; None when they were given sorted)."""

    data: np.ndarray
    batch_sizes: np.ndarray
    sorted_indices: np.ndarray | None = None
    unsorted_indices: np.ndarray | None = None


def _to_numpy(x: Any) -> np.ndarray:
    return np.asarray(from_torch(x))


def pack_padded_sequence(input: Any, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded ``(T, B, *F)`` (``(B, T, *F)`` with ``batch_first``) batch of sequences
    of ``lengths``; with ``enforce_sorted`` the lengths must be in decreasing order."""
    x = _to_numpy(input)
    if batch_first:
        x = np.swapaxes(x, 0, 1)
    n = _to_numpy(lengths).astype(np.int64).reshape(-1)
    if n.shape != (x.shape[1],):
        raise ValueError(f"pack_padded_sequence: expected {x.shape[1]} lengths, got {n.shape[0]}")
    if n.size and (n.min() < 1 or n.max() > x.shape[0]):
        raise ValueError("pack_padded_sequence: every length must be between 1 and the "
                         f"sequence length {x.shape[0]}")
    if enforce_sorted:
        if np.any(np.diff(n) > 0):
            raise ValueError("pack_padded_sequence: `lengths` must be sorted in decreasing "
                             "order when `enforce_sorted` is True (pass enforce_sorted=False)")
        order, unsorted = None, None
    else:
        order = np.argsort(-n, kind="stable")
        unsorted = np.argsort(order, kind="stable")
    return _pack(x, n, order, unsorted)


def _pack(x: np.ndarray, n: np.ndarray, order: np.ndarray | None,
          unsorted: np.ndarray | None) -> PackedSequence:
    cols = np.arange(len(n)) if order is None else order
    steps = int(n.max()) if n.size else 0
    sizes = np.array([(n > t).sum() for t in range(steps)], dtype=np.int64)
    data = np.concatenate([x[t, cols[:sizes[t]]] for t in range(steps)]) if steps else \
        x[:0, 0]
    return PackedSequence(data, sizes, order, unsorted)


def pack_sequence(sequences: Sequence[Any], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of ``(L_b, *F)`` sequences (``pad_sequence`` then ``pack_padded_sequence``)."""
    arrays = [_to_numpy(s) for s in sequences]
    return pack_padded_sequence(pad_sequence(arrays), [len(a) for a in arrays],
                                enforce_sorted=enforce_sorted)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """The padded batch and the lengths (in the original order) of a ``PackedSequence``."""
    data, sizes = _to_numpy(sequence.data), _to_numpy(sequence.batch_sizes)
    steps = len(sizes)
    batch = int(sizes[0]) if steps else 0
    if total_length is not None and total_length < steps:
        raise ValueError(f"pad_packed_sequence: total_length {total_length} is less than the "
                         f"longest sequence ({steps})")
    out = np.full((total_length or steps, batch, *data.shape[1:]), padding_value,
                  dtype=data.dtype)
    offset = 0
    for t, k in enumerate(sizes):
        out[t, :k] = data[offset:offset + k]
        offset += int(k)
    n = np.array([(sizes > b).sum() for b in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        back = _to_numpy(sequence.unsorted_indices)
        out, n = out[:, back], n[back]
    return (np.swapaxes(out, 0, 1).copy() if batch_first else out), n


def repack(output: Any, like: PackedSequence, lengths: np.ndarray,
           batch_first: bool) -> PackedSequence:
    """A layer's padded ``output`` packed as the input ``like`` was (its sorting kept)."""
    x = np.swapaxes(output, 0, 1) if batch_first else output
    order = None if like.sorted_indices is None else _to_numpy(like.sorted_indices)
    unsorted = None if like.unsorted_indices is None else _to_numpy(like.unsorted_indices)
    return _pack(np.asarray(x), lengths, order, unsorted)


__all__ = ["PackedSequence", "lengths_of", "pack_padded_sequence", "pack_sequence",
           "pad_packed_sequence", "pad_sequence", "repack", "unpad"]
