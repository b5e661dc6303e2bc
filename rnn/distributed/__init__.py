"""Data-parallel training over MPI (mpi4py), with NCCL (CuPy) for CuPy parameters.

Every rank holds the whole model, trains on its shard of each batch, and averages the gradients
before the optimizer step, so all ranks take the same steps as one process on the whole batch::

    from rnn import distributed as dist

    comm = dist.init()                       # MPI COMM_WORLD: comm.rank, comm.size
    model = Model(seed=dist.rank_seed(0, comm))   # any start: rank 0's is broadcast
    dist.broadcast_parameters(model, comm)   # every rank starts from rank 0's parameters
    opt = rnn.Adam(model.parameters())
    for x, y in batches:
        mine = dist.shard(len(x), comm)      # this rank's rows of the batch
        loss, backward = vjp(scripted, x[mine], y[mine])
        opt.zero_grad()
        backward(1.0)
        dist.allreduce_gradients(model, comm)    # the mean of .grad over ranks, in place
        opt.step()
        dist.log(comm, "loss", dist.mean_over_ranks(float(loss), comm))

Run it with ``mpiexec -n 4 python train.py``; without mpiexec (or without mpi4py) it is one
process and every collective is a no-op. An uncaught exception on one rank prints that rank's
traceback and aborts the job. ``docs/distributed.md`` has the cost model and measurements.
"""

from rnn.distributed.buckets import (
    DEFAULT_BUCKET_BYTES,
    allreduce_gradients,
    broadcast_parameters,
    check_same_parameters,
    plan_buckets,
)
from rnn.distributed.comm import LocalCommunicator, MPICommunicator, init, install_abort_hook
from rnn.distributed.helpers import (
    is_main,
    load_checkpoint,
    log,
    mean_over_ranks,
    rank_rng,
    rank_seed,
    save_checkpoint,
    shard,
    shard_bounds,
)
from rnn.distributed.nccl import nccl_available, use_local_device

__all__ = ["DEFAULT_BUCKET_BYTES", "LocalCommunicator", "MPICommunicator", "allreduce_gradients",
           "broadcast_parameters", "check_same_parameters", "init", "install_abort_hook",
           "is_main", "load_checkpoint", "log", "mean_over_ranks", "nccl_available",
           "plan_buckets", "rank_rng", "rank_seed", "save_checkpoint", "shard", "shard_bounds",
           "use_local_device"]
