"""Per-rank data, seeds, logging and checkpoints for data-parallel runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rnn.distributed.buckets import broadcast_parameters
from script import Module


def shard_bounds(n_items: int, rank: int, size: int) -> tuple[int, int]:
    """``[start, stop)`` of rank ``rank``'s contiguous block of ``n_items``: blocks differ in
    length by at most one, the first ``n_items % size`` ranks holding the longer ones."""
    base, extra = divmod(n_items, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def shard(n_items: int, comm: Any, drop_last: bool = False) -> np.ndarray:
    """This rank's indices into ``n_items`` items: a contiguous block, the blocks of ranks
    0, 1, ... in order cover ``range(n_items)``.

    With ``drop_last`` the last ``n_items % size`` items are dropped so every rank holds the
    same number, which is what makes the mean of the ranks' mean losses the mean over the whole
    batch (equal shards are needed for the same loss curve as one process).
    """
    if n_items < 0:
        raise ValueError(f"n_items must be non-negative, got {n_items}")
    if drop_last:
        n_items -= n_items % comm.size
    start, stop = shard_bounds(n_items, comm.rank, comm.size)
    return np.arange(start, stop)


def rank_seed(seed: int, comm: Any) -> int:
    """A seed for this rank derived from ``seed``: different on every rank, the same from run to
    run (NumPy's ``SeedSequence`` spawned per rank)."""
    return int(np.random.SeedSequence(seed, spawn_key=(comm.rank,)).generate_state(1)[0])


def rank_rng(seed: int, comm: Any) -> np.random.Generator:
    """A NumPy generator for this rank, independent of the other ranks' (for dropout, data
    order); use the plain ``seed`` for what must agree across ranks."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(comm.rank,)))


def is_main(comm: Any) -> bool:
    """True on rank 0: the rank that logs and writes checkpoints."""
    return comm.rank == 0


def log(comm: Any, *values: Any, file: Any = None, **print_kwargs: Any) -> None:
    """``print`` on rank 0 only (to stdout, or ``file``), flushed."""
    if comm.rank == 0:
        print(*values, file=file or sys.stdout, flush=True, **print_kwargs)


def save_checkpoint(path: str | os.PathLike[str], model: Module, comm: Any,
                    optimizer: Any = None, **extra: Any) -> None:
    """Rank 0 writes ``model``'s state dict (and ``optimizer``'s per-parameter state, and any
    ``extra`` arrays or numbers) to one ``.npz`` file; every rank waits until it is written."""
    if comm.rank == 0:
        arrays = {f"model/{name}": _host(value) for name, value in model.state_dict().items()}
        if optimizer is not None:
            arrays.update(_optimizer_arrays(model, optimizer))
        arrays.update({f"extra/{name}": np.asarray(value) for name, value in extra.items()})
        tmp = Path(f"{os.fspath(path)}.tmp")
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    comm.barrier()


def load_checkpoint(path: str | os.PathLike[str], model: Module, comm: Any,
                    optimizer: Any = None) -> dict[str, Any]:
    """Rank 0 reads a ``save_checkpoint`` file into ``model`` (and ``optimizer``); then every
    rank gets rank 0's parameters and optimizer state. Returns the ``extra`` values."""
    arrays = None
    if comm.rank == 0:
        with np.load(path) as archive:
            arrays = {name: archive[name] for name in archive.files}
    arrays = comm.broadcast_object(arrays)
    model.load_state_dict({name[6:]: value for name, value in arrays.items()
                           if name.startswith("model/")})
    if optimizer is not None:
        _load_optimizer_arrays(model, optimizer, arrays)
    broadcast_parameters(model, comm)
    return {name[6:]: value for name, value in arrays.items() if name.startswith("extra/")}


def _host(value: Any) -> np.ndarray:
    return value.get() if hasattr(value, "get") and not isinstance(value, np.ndarray) \
        else np.asarray(value)


def _optimizer_arrays(model: Module, optimizer: Any) -> dict[str, np.ndarray]:
    """``optim/<parameter name>/<state key>`` for the optimizer's per-parameter state."""
    arrays = {}
    for name, p in model.named_parameters():
        for key, value in optimizer.state.get(id(p), {}).items():
            arrays[f"optim/{name}/{key}"] = _host(value)
    return arrays


def _load_optimizer_arrays(model: Module, optimizer: Any, arrays: dict[str, Any]) -> None:
    for name, p in model.named_parameters():
        prefix = f"optim/{name}/"
        state = {key[len(prefix):]: value for key, value in arrays.items()
                 if key.startswith(prefix)}
        if state:
            optimizer.state[id(p)] = {key: _restore(value, p.data)
                                      for key, value in state.items()}


def _restore(value: np.ndarray, like: Any) -> Any:
    """A saved state entry as the optimizer keeps it: a Python int for a 0-d integer, else an
    array of ``like``'s kind."""
    if value.ndim == 0 and value.dtype.kind in "iu":
        return int(value)
    if isinstance(like, np.ndarray):
        return value.copy()
    import cupy
    return cupy.asarray(value)


def mean_over_ranks(values: Any, comm: Any) -> np.ndarray:
    """The mean over the ranks of a number or array of numbers (float64, one allreduce): the
    loss of the whole batch from each rank's loss on its shard."""
    local = np.array(values, np.float64)
    comm.allreduce_sum_(local)
    return local / comm.size


__all__ = ["is_main", "load_checkpoint", "log", "mean_over_ranks", "rank_rng", "rank_seed",
           "save_checkpoint", "shard", "shard_bounds"]
