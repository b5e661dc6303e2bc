"""The char_lm example's short training run under ``mpiexec -n N`` (``train(comm=dist.init())``);
rank 0 writes the per-step losses (means over the ranks) to ``OUT/losses.npy``.

    mpiexec -n 2 python tests/rnn/mpi_programs/char_lm_curve.py OUT
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from rnn import distributed as dist

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "char_lm.py"
SHORT_RUN = dict(steps=6, seed=0, seq_len=16, batch=16, hidden=32, embed=16, lr=0.02, show=False)
"""The run the test repeats in one process."""


def load_example():
    spec = importlib.util.spec_from_file_location("char_lm", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    comm = dist.init()
    losses = load_example().train(**SHORT_RUN, comm=comm)
    if dist.is_main(comm):
        np.save(Path(sys.argv[1]) / "losses.npy", np.array(losses))


if __name__ == "__main__":
    main()
