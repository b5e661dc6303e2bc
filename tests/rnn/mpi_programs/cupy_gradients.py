"""Gradients of CuPy parameters averaged over ranks, run under ``mpiexec -n N`` on a GPU machine.

Each rank uses GPU ``local_rank % device count``; CuPy buffers travel through NCCL when every rank
has a GPU of its own and CuPy has NCCL, else through host memory and MPI. Rank R sets every
gradient to ``R + 1`` (``k``-th parameter: ``(k + 1) * (R + 1)``), parameters to ``R``; after
``broadcast_parameters`` and ``allreduce_gradients`` each rank writes what it holds to
``OUT/rank<R>.npz`` and the path it took to ``OUT/rank<R>.txt``.

    mpiexec -n 2 python tests/rnn/mpi_programs/cupy_gradients.py OUT
"""

from __future__ import annotations

import sys
from pathlib import Path

import cupy
import numpy as np

from rnn import distributed as dist
from script import Parameter


def main() -> None:
    out = Path(sys.argv[1])
    comm = dist.init()
    own_devices = cupy.cuda.runtime.getDeviceCount() >= comm.size
    comm.use_nccl = own_devices and dist.nccl_available()
    if own_devices:
        dist.use_local_device(comm)
    shapes = [((6, 5), "float32"), ((7,), "float32"), ((3, 2), "float64"), ((1000,), "float32")]
    params = [Parameter(cupy.full(shape, comm.rank, dtype)) for shape, dtype in shapes]
    for k, p in enumerate(params):
        p.grad = cupy.full(p.shape, (k + 1) * (comm.rank + 1), p.dtype)
    dist.broadcast_parameters(params, comm, bucket_bytes=256)
    dist.allreduce_gradients(params, comm, bucket_bytes=256)
    assert all(isinstance(p.grad, cupy.ndarray) for p in params)
    arrays = {f"data{k}": cupy.asnumpy(p.data) for k, p in enumerate(params)}
    arrays.update({f"grad{k}": cupy.asnumpy(p.grad) for k, p in enumerate(params)})
    np.savez(out / f"rank{comm.rank}.npz", **arrays)
    path = "nccl" if comm.use_nccl else "host"
    (out / f"rank{comm.rank}.txt").write_text(path)


if __name__ == "__main__":
    main()
