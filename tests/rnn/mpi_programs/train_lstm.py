"""Data-parallel Adam on a 2-layer LSTM with a linear head, run under ``mpiexec -n N``.

Every rank builds its model from a different seed, broadcasts rank 0's parameters, then takes
``--steps`` Adam steps on its shard of each batch with averaged gradients. Rank 0 also trains a
copy of its starting model on the whole batch in one process. Each rank writes its parameters
to ``OUT/rank<R>.npz``; rank 0 writes the one-process result to ``OUT/reference.npz``.

    mpiexec -n 2 python tests/rnn/mpi_programs/train_lstm.py OUT [--steps 5] [--bucket-bytes N]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import rnn
from rnn import distributed as dist
from script import Module, Parameter, Tensor, script, vjp

T, BATCH, INPUT, HIDDEN, OUTPUT = 5, 8, 3, 8, 2


class Regressor(Module):
    """A 2-layer LSTM and a linear head; the forward is the mean squared error."""

    def __init__(self, seed: int):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.lstm = rnn.LSTM(INPUT, HIDDEN, num_layers=2, rng=rng)
        self.weight = Parameter(rng.uniform(-0.3, 0.3, (OUTPUT, HIDDEN)).astype("float32"))
        self.bias = Parameter(np.zeros(OUTPUT, "float32"))

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        output, _ = self.lstm(x)
        error = output @ self.weight.T + self.bias - y
        return (error * error).mean()


def batch(step: int) -> tuple[np.ndarray, np.ndarray]:
    """The whole batch of a step, the same on every rank."""
    rng = np.random.default_rng(1000 + step)
    x = rng.standard_normal((T, BATCH, INPUT)).astype("float32")
    y = rng.standard_normal((T, BATCH, OUTPUT)).astype("float32")
    return x, y


def train(model: Regressor, steps: int, rows: np.ndarray, comm, bucket_bytes: int) -> None:
    scripted = script(model)
    opt = rnn.Adam(model.parameters(), lr=0.01)
    for step in range(steps):
        x, y = batch(step)
        _, backward = vjp(scripted, x[:, rows], y[:, rows])
        opt.zero_grad()
        backward(np.float32(1.0))
        dist.allreduce_gradients(model, comm, bucket_bytes=bucket_bytes)
        opt.step()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--bucket-bytes", type=int, default=dist.DEFAULT_BUCKET_BYTES)
    args = parser.parse_args()
    comm = dist.init()
    model = Regressor(seed=dist.rank_seed(7, comm))
    dist.broadcast_parameters(model, comm)
    start = {name: value.copy() for name, value in model.state_dict().items()}
    train(model, args.steps, dist.shard(BATCH, comm), comm, args.bucket_bytes)
    np.savez(args.out / f"rank{comm.rank}.npz", **model.state_dict())
    if comm.rank == 0:
        reference = Regressor(seed=0)
        reference.load_state_dict(start)
        train(reference, args.steps, np.arange(BATCH), dist.LocalCommunicator(),
              args.bucket_bytes)
        np.savez(args.out / "reference.npz", **reference.state_dict())
        np.savez(args.out / "start.npz", **start)


if __name__ == "__main__":
    main()
