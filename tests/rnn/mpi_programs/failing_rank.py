"""One rank raises while the others wait in a collective: the job must end, printing its error.

    mpiexec -n 2 python tests/rnn/mpi_programs/failing_rank.py [mismatch | exit]

Without an argument rank 1 raises a RuntimeError while rank 0 waits in ``allreduce_gradients``;
with ``exit`` it calls ``sys.exit(3)`` instead. With ``mismatch`` rank 1 builds a model of
another width: ``broadcast_parameters`` must say so.
"""

from __future__ import annotations

import sys

import numpy as np

import rnn
from rnn import distributed as dist


def main() -> None:
    comm = dist.init()
    mode = sys.argv[1] if len(sys.argv) > 1 else "raise"
    mismatch = mode == "mismatch"
    hidden = 6 if mismatch and comm.rank == 1 else 4
    model = rnn.LSTM(3, hidden, num_layers=2, rng=comm.rank)
    dist.broadcast_parameters(model, comm)
    if comm.rank == 1 and mode == "exit":
        sys.exit(3)
    if comm.rank == 1:
        raise RuntimeError("rank 1 failed on purpose")
    for p in model.parameters():
        p.grad = np.ones_like(p.data)
    dist.allreduce_gradients(model, comm)  # rank 1 never comes: without the abort, a hang
    print("rank 0 finished the allreduce", flush=True)


if __name__ == "__main__":
    main()
