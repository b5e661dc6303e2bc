"""The word-level layers of Stanford's CS231n assignment 3 image captioning
(``cs231n/rnn_layers.py``; the assignments are distributed from
https://github.com/cs231n/cs231n.github.io, MIT License): ``temporal_affine_forward`` and
``temporal_softmax_loss`` as provided by the course, and ``word_embedding_forward`` (left to the
student) as commonly completed: ``out = W[x]``.

``temporal_softmax_loss`` returns the loss and its hand-written gradient: a gather
``probs[np.arange(N * T), y_flat]``, an in-place scatter ``dx_flat[np.arange(N * T), y_flat] -=
1``, ``/=`` and ``*=`` with ``mask_flat[:, None]``, and an ``if verbose: print(...)``.

Changes: annotations; ``captioning_loss`` is an added composition (embedding, affine, loss) for
the gradient check and the benchmark, as ``CaptioningRNN.loss`` composes them.
"""

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from script import Tensor


def word_embedding_forward(x: Tensor, W: Tensor):
    out = W[x]
    cache = (x, W)
    return out, cache


def temporal_affine_forward(x: Tensor, w: Tensor, b: Tensor):
    N, T, D = x.shape
    M = b.shape[0]
    out = x.reshape(N * T, D).dot(w).reshape(N, T, M) + b
    cache = x, w, b, out
    return out, cache


def temporal_softmax_loss(x: Tensor, y: Tensor, mask: Tensor, verbose: bool = False):
    N, T, V = x.shape

    x_flat = x.reshape(N * T, V)
    y_flat = y.reshape(N * T)
    mask_flat = mask.reshape(N * T)

    probs = np.exp(x_flat - np.max(x_flat, axis=1, keepdims=True))
    probs /= np.sum(probs, axis=1, keepdims=True)
    loss = -np.sum(mask_flat * np.log(probs[np.arange(N * T), y_flat])) / N
    dx_flat = probs.copy()
    dx_flat[np.arange(N * T), y_flat] -= 1
    dx_flat /= N
    dx_flat *= mask_flat[:, None]

    if verbose:
        print('dx_flat: ', dx_flat.shape)

    dx = dx_flat.reshape(N, T, V)

    return loss, dx


def captioning_loss(captions: Tensor, mask: Tensor, W_embed: Tensor, W_vocab: Tensor,
                    b_vocab: Tensor) -> Tensor:
    x, _ = word_embedding_forward(captions, W_embed)
    scores, _ = temporal_affine_forward(x, W_vocab, b_vocab)
    loss, _ = temporal_softmax_loss(scores, captions, mask)
    return loss


SIZES = {"test": (3, 4, 5, 7), "bench": (64, 16, 256, 1000)}  # N, T, D, V


def _words(size: str) -> tuple:
    N, T, _, V = SIZES[size]
    rng = np.random.default_rng(5)
    captions = rng.integers(0, V, (N, T))
    mask = rng.random((N, T)) > 0.2
    return captions, mask


def embedding_args(dtype: str, size: str) -> tuple:
    _, _, D, V = SIZES[size]
    return (_words(size)[0], *arrays(dtype, 6, (V, D)))


def affine_args(dtype: str, size: str) -> tuple:
    N, T, D, V = SIZES[size]
    return arrays(dtype, 7, (N, T, D), (D, V), (V,))


def loss_args(dtype: str, size: str) -> tuple:
    N, T, _, V = SIZES[size]
    captions, mask = _words(size)
    return (*arrays(dtype, 8, (N, T, V)), captions, mask)


def composed_args(dtype: str, size: str) -> tuple:
    _, _, D, V = SIZES[size]
    return (*_words(size), *arrays(dtype, 9, (V, D), (D, V), (V,)))


CASES = {
    "word_embedding_forward": Case(word_embedding_forward, embedding_args, grad=True),
    "temporal_affine_forward": Case(temporal_affine_forward, affine_args, grad=True),
    "temporal_softmax_loss": Case(temporal_softmax_loss, loss_args, grad=True),
    "captioning_loss": Case(captioning_loss, composed_args, grad=True),
}
BENCH = "captioning_loss"
