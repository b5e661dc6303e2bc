"""Tests of the rnn package: cells, layers, optimizers, variable-length batches."""
