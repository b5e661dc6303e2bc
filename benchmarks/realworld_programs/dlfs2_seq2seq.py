"""The seq2seq model of "Deep Learning from Scratch 2" (https://github.com/oreilly-japan/
deep-learning-from-scratch-2, ``ch07/seq2seq.py``: ``Encoder.forward``, ``Decoder.generate``,
with ``TimeEmbedding.forward`` of ``common/time_layers.py`` and ``Embedding.forward`` of
``common/layers.py``; MIT License). The encoder embeds the tokens step by step
(``out[:, t, :] = W[xs[:, t]]``), runs the LSTM and returns the last state ``hs[:, -1, :]``;
``generate`` decodes greedily: one token at a time through ``np.array(sample_id).reshape((1,
1))``, the embedding, the stateful LSTM and the affine layer, then ``sample_id =
np.argmax(score.flatten())`` and ``sampled.append(int(sample_id))``.

Changes: annotations; each method is a function taking what it read from ``self`` (the
weights, the LSTM's state) and returning what it stored there; ``self.embed.forward(x)``,
``self.lstm.forward(out)`` and ``self.affine.forward(out)`` call the layers' forward functions
(``dlfs2_layers``, ``dlfs2_time_rnn``) with their weights; ``self.lstm.set_state(h)`` passes
``h`` (and ``c = None``) to the stateful LSTM.
"""

from typing import List

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from benchmarks.realworld_programs.dlfs2_layers import time_affine_forward
from benchmarks.realworld_programs.dlfs2_time_rnn import time_lstm_forward
from script import Tensor


def embedding_forward(W: Tensor, idx: Tensor) -> Tensor:
    out = W[idx]
    return out


def time_embedding_forward(xs: Tensor, W: Tensor) -> Tensor:
    N, T = xs.shape
    V, D = W.shape

    out = np.empty((N, T, D), dtype='f')

    for t in range(T):
        out[:, t, :] = embedding_forward(W, xs[:, t])

    return out


def encoder_forward(xs: Tensor, embed_W: Tensor, lstm_Wx: Tensor, lstm_Wh: Tensor,
                    lstm_b: Tensor) -> Tensor:
    xs = time_embedding_forward(xs, embed_W)
    hs, _, _ = time_lstm_forward(xs, [lstm_Wx, lstm_Wh, lstm_b], None, None, False)
    return hs[:, -1, :]


def decoder_generate(h: Tensor, start_id: int, sample_size: int, embed_W: Tensor,
                     lstm_Wx: Tensor, lstm_Wh: Tensor, lstm_b: Tensor, affine_W: Tensor,
                     affine_b: Tensor) -> List[int]:
    sampled = []
    sample_id = start_id
    c = None

    for _ in range(sample_size):
        x = np.array(sample_id).reshape((1, 1))
        out = time_embedding_forward(x, embed_W)
        out, h, c = time_lstm_forward(out, [lstm_Wx, lstm_Wh, lstm_b], h, c, True)
        score = time_affine_forward(out, affine_W, affine_b)

        sample_id = np.argmax(score.flatten())
        sampled.append(int(sample_id))

    return sampled


SIZES = {"test": (2, 5, 4, 6, 7, 4), "bench": (32, 20, 64, 128, 500, 20)}  # N, T, D, H, V, len


def weights(dtype: str, size: str, seed: int) -> tuple:
    _, _, D, H, V, _ = SIZES[size]
    return arrays(dtype, seed, (V, D), (D, 4 * H), (H, 4 * H), (4 * H,), scale=1.0)


def encoder_args(dtype: str, size: str) -> tuple:
    N, T, _, _, V, _ = SIZES[size]
    xs = np.random.default_rng(23).integers(0, V, (N, T))
    return (xs, *weights(dtype, size, 24))


def generate_args(dtype: str, size: str) -> tuple:
    _, _, _, H, V, length = SIZES[size]
    (h,) = arrays(dtype, 25, (1, H))
    affine_W, affine_b = arrays(dtype, 26, (H, V), (V,), scale=2.0)
    return (h, 1, length, *weights(dtype, size, 27), affine_W, affine_b)


CASES = {
    "encoder_forward": Case(encoder_forward, encoder_args, grad=True, fd=(1e-3, 2e-3, 1e-4)),
    "decoder_generate": Case(decoder_generate, generate_args),
}
BENCH = "decoder_generate"
BENCH_DTYPE = "float32"  # the book's weights are astype('f')
