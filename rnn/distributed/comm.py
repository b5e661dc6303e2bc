"""Communicators: the process group a data-parallel run reduces over.

``init()`` returns an ``MPICommunicator`` over ``MPI.COMM_WORLD`` when mpi4py is installed, and a
``LocalCommunicator`` (``rank 0``, ``size 1``, every collective a no-op) when it is not, so a
single process runs unchanged without MPI. mpi4py is imported here, on the first ``init()``, never
at ``import rnn``.

Both kinds offer the same collectives on flat arrays (``allreduce_sum_``, ``broadcast_``), on
picklable objects (``allgather_object``, ``broadcast_object``), ``barrier`` and ``abort``. NumPy
arrays travel through MPI; CuPy arrays through NCCL (``cupy.cuda.nccl``) when CuPy has it, else
staged through host memory and MPI.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Any

from script.module import is_cupy_array

_LAUNCHER_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")
"""Environment variables through which MPI launchers (MPICH/Hydra and Intel MPI, Open MPI) tell
a process the size of its job."""


def _is_cupy(array: Any) -> bool:
    return is_cupy_array(array)


class LocalCommunicator:
    """One process, no MPI: ``rank == 0``, ``size == 1``; collectives leave their data as is."""

    rank = 0
    size = 1
    local_rank = 0
    backend = "local"

    @property
    def is_main(self) -> bool:
        """True on rank 0 (always, here)."""
        return True

    def allreduce_sum_(self, buffer: Any) -> Any:
        """Sum ``buffer`` over ranks in place: the identity for one rank."""
        return buffer

    def broadcast_(self, buffer: Any, root: int = 0) -> Any:
        """Overwrite ``buffer`` with rank ``root``'s: the identity for one rank."""
        return buffer

    def allgather_object(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order."""
        return [obj]

    def broadcast_object(self, obj: Any, root: int = 0) -> Any:
        """Rank ``root``'s ``obj`` on every rank."""
        return obj

    def barrier(self) -> None:
        """Wait for every rank."""

    def abort(self, code: int = 1) -> None:
        """End the job with exit status ``code``."""
        os._exit(code)

    def __repr__(self) -> str:
        return "LocalCommunicator(rank=0, size=1)"


class MPICommunicator(LocalCommunicator):
    """A group of MPI processes (an ``mpi4py`` communicator, ``MPI.COMM_WORLD`` by default).

    ``local_rank`` is the rank among the processes on this machine (to pick a GPU).
    ``use_nccl`` chooses how CuPy buffers travel: None (NCCL when CuPy has it), True, False
    (through host memory and MPI).
    """

    backend = "mpi"

    def __init__(self, mpi_comm: Any, use_nccl: bool | None = None):
        from mpi4py import MPI

        self._MPI = MPI
        self.comm = mpi_comm
        self.rank = mpi_comm.Get_rank()
        self.size = mpi_comm.Get_size()
        node = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        self.local_rank = node.Get_rank()
        node.Free()
        self.use_nccl = use_nccl
        self._nccl: Any = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def _device_channel(self) -> Any:
        """The NCCL communicator for CuPy buffers, made on first use; None to stage through
        the host."""
        if self._nccl is None and self.use_nccl is not False:
            from rnn.distributed.nccl import NcclChannel, nccl_available
            if nccl_available():
                self._nccl = NcclChannel(self)
            elif self.use_nccl:
                raise RuntimeError("use_nccl=True but CuPy has no NCCL (pip install "
                                   "nvidia-nccl-cu13)")
        return self._nccl

    def allreduce_sum_(self, buffer: Any) -> Any:
        if _is_cupy(buffer):
            channel = self._device_channel()
            if channel is not None:
                return channel.allreduce_sum_(buffer)
            host = buffer.get()
            self.comm.Allreduce(self._MPI.IN_PLACE, host, op=self._MPI.SUM)
            buffer.set(host)
            return buffer
        self.comm.Allreduce(self._MPI.IN_PLACE, buffer, op=self._MPI.SUM)
        return buffer

    def broadcast_(self, buffer: Any, root: int = 0) -> Any:
        if _is_cupy(buffer):
            channel = self._device_channel()
            if channel is not None:
                return channel.broadcast_(buffer, root)
            host = buffer.get()
            self.comm.Bcast(host, root=root)
            buffer.set(host)
            return buffer
        self.comm.Bcast(buffer, root=root)
        return buffer

    def allgather_object(self, obj: Any) -> list[Any]:
        return self.comm.allgather(obj)

    def broadcast_object(self, obj: Any, root: int = 0) -> Any:
        return self.comm.bcast(obj, root=root)

    def barrier(self) -> None:
        self.comm.Barrier()

    def abort(self, code: int = 1) -> None:
        self.comm.Abort(code)

    def __repr__(self) -> str:
        return f"MPICommunicator(rank={self.rank}, size={self.size})"


def launched_size() -> int:
    """The job size an MPI launcher announced in the environment (1 when none did)."""
    for name in _LAUNCHER_SIZE_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return 1


_world: MPICommunicator | None = None
"""The communicator ``init()`` made: later calls return it."""


def init(use_nccl: bool | None = None, abort_on_error: bool = True) -> LocalCommunicator:
    """The communicator of this job: MPI's ``COMM_WORLD`` when mpi4py is installed, else one
    local process. Later calls return the same communicator.

    Under ``mpiexec -n N`` with ``N > 1`` mpi4py is required (an ImportError says how to get it).
    With ``abort_on_error`` an uncaught exception or a ``sys.exit`` with a failure status on any
    rank prints that rank's error and aborts the whole job (``MPI_Abort``), so the other ranks
    do not wait for it forever (see ``install_abort_hook``).
    """
    global _world
    try:
        from mpi4py import MPI
    except ImportError:
        if launched_size() > 1:
            raise ImportError("rnn.distributed: this process was started by an MPI launcher "
                              f"with {launched_size()} ranks but mpi4py is not installed "
                              "(pip install 'rnnscript[distributed]')") from None
        return LocalCommunicator()
    if _world is None:
        _world = MPICommunicator(MPI.COMM_WORLD, use_nccl)
        if abort_on_error and _world.size > 1:
            install_abort_hook(_world)
    elif use_nccl is not None:
        _world.use_nccl = use_nccl
    return _world


def install_abort_hook(comm: LocalCommunicator) -> None:
    """Abort the job when this rank fails: an uncaught exception (``sys.excepthook``) prints
    ``rank R of N failed`` and the traceback, and ``sys.exit`` with a failure status (argparse's
    errors included) prints the status, before ``comm.abort``.

    A rank that ends while the others wait in a collective would otherwise leave them waiting:
    MPI has no other way to tell them. ``raise SystemExit(status)`` written out is not seen
    here; ``python -m mpi4py program.py`` catches that too.
    """
    previous_hook, previous_exit = sys.excepthook, sys.exit

    def abort(message: str, status: int, detail: str = "") -> None:
        sys.stdout.flush()
        sys.stderr.write(f"rnn.distributed: rank {comm.rank} of {comm.size} {message}; "
                         f"aborting the job\n{detail}")
        sys.stderr.flush()
        _wait_forwarded(sys.stdout, sys.stderr)
        comm.abort(status)
        os._exit(status)  # MPI_Abort may return before the launcher ends this process

    def abort_on_exception(kind: type, error: BaseException, tb: Any) -> None:
        if issubclass(kind, KeyboardInterrupt):
            previous_hook(kind, error, tb)
            comm.abort(1)
            os._exit(1)
        abort("failed", 1, "".join(traceback.format_exception(kind, error, tb)))

    def exit_or_abort(status: Any = None) -> None:
        if status is None or status == 0:
            previous_exit(status)
        code = status if isinstance(status, int) else 1
        abort(f"exited with status {status!r}", code)

    sys.excepthook = abort_on_exception
    sys.exit = exit_or_abort


def _wait_forwarded(*streams: Any, limit: float = 2.0) -> None:
    """Wait (``limit`` seconds at most) until the launcher has read what this rank wrote to
    ``streams``: a rank's output reaches the terminal through a pipe the launcher reads, and
    ``MPI_Abort`` ends the job at once, so on a busy machine the last message (the error
    itself) could be left unread in the pipe. Streams that are not pipes return at once."""
    import array
    import fcntl
    import termios
    fds = []
    for stream in streams:
        try:
            fds.append(stream.fileno())
        except (AttributeError, OSError, ValueError):
            continue
    end = time.monotonic() + limit
    waiting = array.array("i", [0])
    for fd in fds:
        while True:
            try:
                fcntl.ioctl(fd, termios.FIONREAD, waiting)
            except OSError:
                break
            if waiting[0] == 0 or time.monotonic() > end:
                break
            time.sleep(0.005)
    time.sleep(0.05)  # and a moment for the launcher to pass it on


__all__ = ["LocalCommunicator", "MPICommunicator", "init", "install_abort_hook",
           "launched_size"]
