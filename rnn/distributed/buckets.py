"""Parameters and gradients in flat buckets: ``broadcast_parameters`` and ``allreduce_gradients``.

A bucket is a run of parameters of one array kind (NumPy or CuPy) and one dtype, in registration
order, packed into one contiguous array of at most ``bucket_bytes`` (a parameter larger than that
is a bucket of its own). One collective moves a whole bucket, so a model costs a few large
messages instead of one small one per parameter. Sums stay in the parameters' dtype; for a fixed
rank count and bucket layout MPI and NCCL reduce in a fixed order, so float32 results are the same
from run to run and on every rank.

A gradient bucket carries one extra element per parameter, 1 where the rank has a ``.grad`` and 0
where it has None: after the sum a parameter that no rank reached keeps ``grad = None``, and one
that some rank reached gets the average on every rank (the ranks that skipped it count as zero).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from script import Module, Parameter

DEFAULT_BUCKET_BYTES = 25 << 20
"""The gradient bucket size, 25 MiB (PyTorch DDP's): without overlap with the backward, fewer
buckets only save latency (docs/distributed.md has the measurements)."""


@dataclass(eq=False)
class Bucket:
    """Parameters reduced together by one collective."""

    params: list[Parameter]
    """the parameters, in registration order."""
    xp: Any
    """the array module of their data (numpy or cupy)."""
    dtype: Any
    """their common dtype."""

    @property
    def size(self) -> int:
        return sum(int(p.data.size) for p in self.params)


def parameters_of(model: Module | Iterable[Parameter]) -> list[Parameter]:
    """A model's parameters (each once), or the given list of Parameters."""
    params = list(model.parameters()) if isinstance(model, Module) else list(model)
    if not all(isinstance(p, Parameter) for p in params):
        raise TypeError("rnn.distributed takes a Module or Parameters (module.parameters())")
    return params


def _named(model: Module | Iterable[Parameter]) -> list[tuple[str, Parameter]]:
    if isinstance(model, Module):
        return list(model.named_parameters())
    return [(f"parameter {k}", p) for k, p in enumerate(parameters_of(model))]


def _array_module(array: Any) -> Any:
    if isinstance(array, np.ndarray):
        return np
    import cupy
    return cupy


def plan_buckets(params: list[Parameter], bucket_bytes: int = DEFAULT_BUCKET_BYTES
                 ) -> list[Bucket]:
    """Split ``params`` into buckets of one array module and dtype, each at most
    ``bucket_bytes`` unless one parameter alone is larger."""
    if bucket_bytes <= 0:
        raise ValueError(f"bucket_bytes must be positive, got {bucket_bytes}")
    open_buckets: dict[tuple[Any, str], Bucket] = {}
    done: list[Bucket] = []
    for p in params:
        xp, dtype = _array_module(p.data), np.dtype(p.data.dtype)
        key = (xp, dtype.str)
        bucket = open_buckets.get(key)
        if bucket is not None and (bucket.size + p.data.size) * dtype.itemsize > bucket_bytes:
            done.append(bucket)
            bucket = None
        if bucket is None:
            bucket = open_buckets[key] = Bucket([], xp, dtype)
        bucket.params.append(p)
    return done + [b for b in open_buckets.values() if b.params]


# -- parameters ------------------------------------------------------------------------------------
def _signature(model: Module | Iterable[Parameter]) -> list[tuple[str, tuple[int, ...], str]]:
    return [(name, tuple(p.shape), np.dtype(p.dtype).name) for name, p in _named(model)]


def _first_difference(mine: list[tuple], root: list[tuple], rank: int, root_rank: int
                      ) -> str | None:
    """What differs between a rank's parameter list and the root's, in words; None when equal."""
    if len(mine) != len(root):
        return (f"rank {rank} has {len(mine)} parameters but rank {root_rank} has {len(root)}")
    for (name, shape, dtype), (root_name, root_shape, root_dtype) in zip(mine, root):
        if name != root_name:
            return f"rank {rank} has parameter '{name}' where rank {root_rank} has '{root_name}'"
        if shape != root_shape or dtype != root_dtype:
            return (f"'{name}' is {dtype}{list(shape)} on rank {rank} but "
                    f"{root_dtype}{list(root_shape)} on rank {root_rank}")
    return None


def check_same_parameters(model: Module | Iterable[Parameter], comm: Any, root: int = 0) -> None:
    """Raise ValueError on every rank when any rank's parameter names, shapes or dtypes differ
    from rank ``root``'s (one allgather of the names and shapes)."""
    signatures = comm.allgather_object(_signature(model))
    problems = [_first_difference(sig, signatures[root], rank, root)
                for rank, sig in enumerate(signatures)]
    problems = [text for text in problems if text is not None]
    if problems:
        raise ValueError("broadcast_parameters: the ranks' models differ: "
                         + "; ".join(problems))


def broadcast_parameters(model: Module | Iterable[Parameter], comm: Any, root: int = 0,
                         bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> None:
    """Copy rank ``root``'s parameter values into every rank's parameters, in place.

    Checks first that every rank has the same parameter names, shapes and dtypes (a ValueError
    naming the first difference, raised on every rank, instead of a hang or garbage).
    """
    check_same_parameters(model, comm, root)
    if comm.size == 1:
        return
    for bucket in plan_buckets(parameters_of(model), bucket_bytes):
        flat = bucket.xp.concatenate([p.data.reshape(-1) for p in bucket.params])
        comm.broadcast_(flat, root)
        _scatter(flat, bucket.params, lambda k, p, part: p.data.__setitem__(..., part))


def _scatter(flat: Any, params: list[Parameter], store: Any) -> None:
    """Call ``store(k, p, piece)`` with each parameter's piece of ``flat``, shaped like it."""
    start = 0
    for k, p in enumerate(params):
        stop = start + int(p.data.size)
        store(k, p, flat[start:stop].reshape(p.data.shape))
        start = stop


# -- gradients -------------------------------------------------------------------------------------
def _pack_gradients(bucket: Bucket) -> Any:
    """The bucket's gradients then one has-gradient flag per parameter, in one flat array."""
    n = bucket.size
    flat = bucket.xp.empty(n + len(bucket.params), bucket.dtype)
    start = 0
    for k, p in enumerate(bucket.params):
        stop = start + int(p.data.size)
        flat[start:stop] = 0 if p.grad is None else p.grad.reshape(-1)
        flat[n + k] = 0 if p.grad is None else 1
        start = stop
    return flat


def _unpack_gradients(flat: Any, bucket: Bucket, divisor: int) -> None:
    """Store the summed gradients divided by ``divisor``: into the existing ``.grad`` where it
    fits, else as a view of ``flat``; None where no rank had a gradient."""
    n = bucket.size
    reached = flat[n:] if bucket.xp is np else flat[n:].get()
    values = flat[:n]
    if divisor != 1:
        values /= bucket.dtype.type(divisor)

    def store(k: int, p: Parameter, piece: Any) -> None:
        if reached[k] == 0:
            p.grad = None
        elif _fits(p.grad, piece):
            p.grad[...] = piece
        else:
            p.grad = piece

    _scatter(values, bucket.params, store)


def _fits(grad: Any, piece: Any) -> bool:
    return (grad is not None and type(grad) is type(piece) and grad.shape == piece.shape
            and grad.dtype == piece.dtype and getattr(grad.flags, "writeable", True))


def allreduce_gradients(model: Module | Iterable[Parameter], comm: Any, average: bool = True,
                        bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> None:
    """Replace every parameter's ``.grad`` by its mean over the ranks (the sum with
    ``average=False``), in place, one collective per bucket of ``bucket_bytes``.

    Call it after the backward and before ``opt.step()`` (and before gradient clipping, so every
    rank clips the same averaged gradient). With one rank it does nothing.
    """
    if comm.size == 1:
        return
    for bucket in plan_buckets(parameters_of(model), bucket_bytes):
        flat = comm.allreduce_sum_(_pack_gradients(bucket))
        _unpack_gradients(flat, bucket, comm.size if average else 1)


__all__ = ["DEFAULT_BUCKET_BYTES", "Bucket", "allreduce_gradients", "broadcast_parameters",
           "check_same_parameters", "parameters_of", "plan_buckets"]
