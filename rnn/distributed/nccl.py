"""NCCL through CuPy's bindings (``cupy.cuda.nccl``): allreduce and broadcast of CuPy buffers.

The NCCL communicator is made from a unique id that rank 0 draws and MPI broadcasts; every rank
must already use its own GPU (``rnn.distributed.use_local_device(comm)``): NCCL refuses two ranks
on one device. Collectives run on CuPy's current stream, so they are ordered after the kernels
that produced the gradients and before the optimizer's.
"""

from __future__ import annotations

from typing import Any


def nccl_available() -> bool:
    """True when CuPy is installed with its NCCL bindings and the NCCL library."""
    try:
        from cupy.cuda import nccl
    except Exception:  # no CuPy, or a CuPy that cannot load its CUDA libraries
        return False
    return bool(getattr(nccl, "available", False))


def _nccl_dtypes(nccl: Any) -> dict[str, int]:
    """NCCL's data type codes by NumPy dtype name."""
    names = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
             "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
             "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64"}
    return {dtype: getattr(nccl, code) for dtype, code in names.items() if hasattr(nccl, code)}


class NcclChannel:
    """An NCCL communicator spanning the ranks of an MPI communicator ``comm``."""

    def __init__(self, comm: Any):
        import cupy
        from cupy.cuda import nccl

        self._cupy = cupy
        self._nccl = nccl
        self._dtypes = _nccl_dtypes(nccl)
        unique_id = nccl.get_unique_id() if comm.rank == 0 else None
        unique_id = comm.broadcast_object(unique_id)
        self.comm = nccl.NcclCommunicator(comm.size, unique_id, comm.rank)

    def _dtype(self, buffer: Any) -> int:
        code = self._dtypes.get(buffer.dtype.name)
        if code is None:
            raise TypeError(f"NCCL cannot reduce {buffer.dtype.name} arrays")
        if not buffer.flags.c_contiguous:
            raise ValueError("NCCL collectives need contiguous buffers")
        return code

    def allreduce_sum_(self, buffer: Any) -> Any:
        """Sum ``buffer`` over the ranks, in place."""
        stream = self._cupy.cuda.get_current_stream().ptr
        ptr = buffer.data.ptr
        self.comm.allReduce(ptr, ptr, buffer.size, self._dtype(buffer), self._nccl.NCCL_SUM,
                            stream)
        return buffer

    def broadcast_(self, buffer: Any, root: int = 0) -> Any:
        """Overwrite ``buffer`` with rank ``root``'s, in place."""
        stream = self._cupy.cuda.get_current_stream().ptr
        self.comm.bcast(buffer.data.ptr, buffer.size, self._dtype(buffer), root, stream)
        return buffer


def use_local_device(comm: Any) -> int:
    """Make GPU ``comm.local_rank % device count`` CuPy's current device; returns its index."""
    import cupy

    index = comm.local_rank % cupy.cuda.runtime.getDeviceCount()
    cupy.cuda.Device(index).use()
    return index


__all__ = ["NcclChannel", "nccl_available", "use_local_device"]
