"""``Embedding``: ``torch.nn.Embedding`` over the scripted gather.

    emb = Embedding(num_embeddings, embedding_dim, padding_idx=None)
    vectors = emb(tokens)          # int array (...,) -> (..., embedding_dim)

``forward`` reads ``self.weight[tokens]`` (``tensor::take``), whose gradient adds each output
row's cotangent into the weight row it came from (``take_backward``: a scatter-add, repeated
tokens add up), so ``vjp``/training update only the rows the batch used. The weight starts as
torch's ``N(0, 1)``; the ``padding_idx`` row starts at zeros and gets no gradient, as in torch
(it reads as what it holds: a loaded table's row). Token arrays are checked at the call:
integers in ``[0, num_embeddings)`` (an ``IndexError`` otherwise, where numpy would wrap a
negative index).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rnn.compiled import CompiledModule
from rnn.init import DEFAULT_DTYPE, as_generator, from_torch
from script import Parameter, Tensor, ops
from script.module import is_array


def embedding(input: Tensor, weight: Tensor) -> Tensor:
    """The rows of ``weight`` at the integer array ``input`` (``F.embedding``): shape
    ``input.shape + (embedding_dim,)``; its gradient scatter-adds into ``weight``."""
    return ops.take(weight, input, 0)


class Embedding(CompiledModule):
    """A lookup table of ``num_embeddings`` vectors of ``embedding_dim`` (``torch.nn.Embedding``;
    see the module docstring)."""

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 padding_idx: Optional[int] = None, *,
                 rng: np.random.Generator | int | None = None, dtype: Any = DEFAULT_DTYPE):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"padding_idx must be within num_embeddings "
                                 f"({num_embeddings}), got {padding_idx}")
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        weight = as_generator(rng).standard_normal((num_embeddings, embedding_dim))
        if padding_idx is not None:
            weight[padding_idx] = 0.0
        self.weight = Parameter(weight.astype(dtype))

    @classmethod
    def from_pretrained(cls, embeddings: Any, freeze: bool = True,
                        padding_idx: Optional[int] = None) -> Embedding:
        """An embedding holding a copy of the 2-D table ``embeddings`` (a numpy array, or a
        CPU torch tensor), as ``torch.nn.Embedding.from_pretrained``: with ``freeze`` (the
        default) its Parameter has ``requires_grad`` False, so it gets no ``.grad`` and
        optimizers leave it as it is (set it True to train the table)."""
        table = np.array(from_torch(embeddings), copy=True)
        if table.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: embeddings must be 2-D, got shape "
                             f"{table.shape}")
        emb = cls(table.shape[0], table.shape[1], padding_idx, rng=0, dtype=table.dtype)
        emb.weight = Parameter(table, requires_grad=not freeze)
        return emb

    def prepare_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                     ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Integer token arrays (lists become int64 arrays), each in ``[0, num_embeddings)``."""
        if len(args) + len(kwargs) != 1 or (kwargs and "input" not in kwargs):
            raise TypeError("Embedding() takes one argument, the token array 'input'")
        tokens = args[0] if args else kwargs["input"]
        if not is_array(tokens):
            tokens = np.asarray(tokens)
        if tokens.dtype.kind not in "iu":
            raise TypeError(f"Embedding: input must be an integer array, got {tokens.dtype}")
        return (tokens,), {}  # forward checks the range (also when a scripted model calls it)

    def forward(self, input: Tensor) -> Tensor:
        # prepare_call's check again: a scripted model calling this one does not run it (numpy
        # would read a negative token as a row from the end)
        if input.size > 0 and (np.min(input) < 0 or np.max(input) >= self.num_embeddings):
            raise IndexError("Embedding: a token is out of range for the embeddings (below 0 "
                             "or at least num_embeddings)")
        vectors = embedding(input, self.weight)
        if self.padding_idx is not None:  # static: the padding row's vectors get no gradient
            vectors = np.where(ops.expand_dims(input != self.padding_idx, -1), vectors,
                               ops.detach(vectors))
        return vectors

    def __repr__(self) -> str:
        pad = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"Embedding({self.num_embeddings}, {self.embedding_dim}{pad})"


__all__ = ["Embedding", "embedding"]
