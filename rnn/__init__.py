"""Recurrent models written in the scripting language: cells, layers, ``torch.nn``-style front
ends, variable-length helpers and optimizers.

    lstm = rnn.LSTM(input_size, hidden_size, num_layers=2, bidirectional=True)
    output, (h_n, c_n) = lstm(x, None, lengths)   # compiled on the first call

Every module here compiles on its first call (``rnn.compiled``; ``RNNSCRIPT_DISABLE=1`` runs them
as Python) and the front ends check their arguments as ``torch.nn`` does (``rnn.checks``).
"""

from rnn import lr_scheduler
from rnn.basic import Dropout, Linear, Sequential
from rnn.cells import GRUCell, LayerNorm, LayerNormGRUCell, LayerNormLSTMCell, LSTMCell, RNNCell
from rnn.embedding import Embedding, embedding
from rnn.layers import Bidirectional, Recurrent, StackedRNN, bidirectional, layer
from rnn.losses import (
    CrossEntropyLoss,
    MSELoss,
    cross_entropy,
    cross_entropy_losses,
    nll_loss,
    nll_losses,
)
from rnn.modules import GRU, LSTM, RNN, RNNBase
from rnn.optim import SGD, Adam, AdamW, clip_grad_norm_, clip_grad_value_, zero_grad
from rnn.varlen import (
    PackedSequence,
    lengths_of,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpad,
)

__all__ = ["Dropout", "Linear", "MSELoss", "Sequential",
           "GRU", "LSTM", "RNN", "SGD", "Adam", "AdamW", "Bidirectional", "CrossEntropyLoss",
           "Embedding", "GRUCell", "LSTMCell", "LayerNorm", "LayerNormGRUCell",
           "LayerNormLSTMCell", "RNNBase", "RNNCell", "Recurrent", "StackedRNN", "bidirectional",
           "clip_grad_norm_", "clip_grad_value_", "cross_entropy", "cross_entropy_losses",
           "embedding", "layer",
           "lengths_of", "lr_scheduler", "nll_loss", "nll_losses", "PackedSequence",
           "pack_padded_sequence", "pack_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad", "zero_grad"]
