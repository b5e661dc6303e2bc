"""Allreduce cost on this machine, for the cost model in docs/distributed.md.

    mpiexec -n 2 python -m benchmarks.allreduce [--repeat 20]
    python -m benchmarks.allreduce --predict     # the cost model's tables, no MPI needed

Prints, on rank 0, three tables (medians over ``--repeat`` runs, after a warm-up):

1. ``MPI_Allreduce`` of one float32 message per size: time and algorithm bandwidth
   (bytes / time), and the latency ``alpha`` and per-byte cost ``beta`` of
   ``t = alpha + bytes * beta`` (see ``fit_alpha_beta``).
2. The seed LSTM's gradients (one layer, I=H=512: 2.1 M float32, 8.4 MB) reduced as buckets of
   each size (one ``MPI_Allreduce`` per bucket), and ``allreduce_gradients`` on the real model
   with the default buckets (packing and unpacking included).
3. Overlap: a stand-in for the rest of the backward (two GEMMs, about 60 ms) with a
   non-blocking allreduce of the 8.4 MB started before it, against the two one after the other:
   does the transfer progress while the rank computes?
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import rnn
from rnn import distributed as dist

SIZES = [2 ** k for k in range(10, 26, 2)]  # bytes: 1 KiB .. 32 MiB
BUCKETS = [64 << 10, 256 << 10, 1 << 20, 4 << 20, 25 << 20]


def _median_time(comm, fn, repeat: int) -> float:
    """The median over ranks' maximum of one call's wall time, in seconds."""
    fn()
    times = []
    for _ in range(repeat):
        comm.barrier()
        start = time.perf_counter()
        fn()
        elapsed = np.array([time.perf_counter() - start])
        comm.comm.Allreduce(_in_place(), elapsed, op=_max_op())
        times.append(float(elapsed[0]))
    return statistics.median(times)


def _max_op():
    from mpi4py import MPI
    return MPI.MAX


def _in_place():
    from mpi4py import MPI
    return MPI.IN_PLACE


def message_sizes(comm, repeat: int) -> list[tuple[int, float]]:
    rows = []
    for size in SIZES:
        buffer = np.ones(size // 4, np.float32)
        rows.append((size, _median_time(comm, lambda b=buffer: comm.allreduce_sum_(b), repeat)))
    return rows


def fit_alpha_beta(rows: list[tuple[int, float]]) -> tuple[float, float]:
    """``t = alpha + bytes * beta``: ``alpha`` the mean time of the two smallest messages,
    ``beta`` the slope between the two largest (small messages stay in cache and travel faster
    than large ones, so one straight line through all of them fits neither end)."""
    (_, t0), (_, t1) = rows[:2]
    (s2, t2), (s3, t3) = rows[-2:]
    return (t0 + t1) / 2, (t3 - t2) / (s3 - s2)


SEED_PARAMETERS = 4 * 512 * (512 + 512) + 2 * 4 * 512
"""The seed LSTM's parameter count (one layer, I=H=512): 2,101,248 float32, 8.4 MB."""


def bucket_sizes(comm, repeat: int) -> list[tuple[int, int, float]]:
    """(bucket bytes, buckets, seconds) to allreduce the seed LSTM's 8.4 MB as consecutive
    buckets of one flat float32 buffer, one MPI_Allreduce each."""
    flat = np.ones(SEED_PARAMETERS, np.float32)
    rows = []
    for bucket_bytes in BUCKETS:
        step = bucket_bytes // 4
        pieces = [flat[k:k + step] for k in range(0, flat.size, step)]

        def reduce_all(pieces=pieces):
            for piece in pieces:
                comm.allreduce_sum_(piece)

        rows.append((bucket_bytes, len(pieces), _median_time(comm, reduce_all, repeat)))
    return rows


def seed_lstm_gradients(comm, repeat: int) -> float:
    """Seconds of ``allreduce_gradients`` on the seed LSTM with the default buckets."""
    model = rnn.LSTM(512, 512, rng=0)
    for p in model.parameters():
        p.grad = np.ones_like(p.data)
    return _median_time(comm, lambda: dist.allreduce_gradients(model, comm), repeat)


def overlap(comm, repeat: int) -> tuple[float, float, float, float]:
    """(compute alone, allreduce alone, one after the other, overlapped) seconds."""
    from mpi4py import MPI
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 2048)).astype(np.float32)
    b = rng.standard_normal((2048, 512)).astype(np.float32)
    grads = np.ones(2_101_248, np.float32)

    def compute():
        for _ in range(2):
            a @ b

    def reduce():
        comm.comm.Allreduce(MPI.IN_PLACE, grads)

    def overlapped():
        request = comm.comm.Iallreduce(MPI.IN_PLACE, grads)
        compute()
        request.Wait()

    def serial():
        compute()
        reduce()

    return tuple(_median_time(comm, fn, repeat) for fn in (compute, reduce, serial, overlapped))


# -- the cost model ------------------------------------------------------------------------------
SEED_BYTES = SEED_PARAMETERS * 4
SEED_STEP_S = 0.3208 + 0.5578
"""The seed LSTM's forward + backward on one core (T=100, B=64; benchmarks/RESULTS.md)."""
NETWORKS = {25: 20e-6, 100: 5e-6, 400: 2e-6}
"""Link rate in Gb/s -> per-message latency alpha assumed for it (TCP over 25 GbE; RoCE or
InfiniBand EDR/HDR; InfiniBand NDR)."""
RANKS = (8, 64, 512)


def ring_allreduce_s(ranks: int, nbytes: float, gbps: float, alpha: float,
                     buckets: int = 1) -> float:
    """Ring allreduce: ``2 (N-1)`` latency steps per bucket and ``2 (N-1)/N`` of the bytes
    over each link."""
    bandwidth = gbps * 1e9 / 8
    return buckets * 2 * (ranks - 1) * alpha + 2 * (ranks - 1) / ranks * nbytes / bandwidth


def predict(step_s: float = SEED_STEP_S, nbytes: float = SEED_BYTES, buckets: int = 1) -> str:
    """A markdown table: allreduce time, step time and efficiency (compute / step) per network
    and rank count, with no overlap of the allreduce and the backward (weak scaling: every rank
    keeps its batch)."""
    lines = ["| network | ranks | allreduce | step | efficiency |", "|---|---:|---:|---:|---:|"]
    for gbps, alpha in NETWORKS.items():
        for ranks in RANKS:
            comm = ring_allreduce_s(ranks, nbytes, gbps, alpha, buckets)
            step = step_s + comm
            lines.append(f"| {gbps} Gb/s, alpha {alpha * 1e6:g} us | {ranks} | "
                         f"{comm * 1e3:.2f} ms | {step * 1e3:.1f} ms | {step_s / step:.1%} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--predict", action="store_true", help="print the cost model's tables")
    args = parser.parse_args()
    if args.predict:
        print(f"seed LSTM step {SEED_STEP_S * 1e3:.0f} ms, one bucket:\n{predict()}")
        print(f"\na 10 ms step (GPU-class compute, assumed), one bucket:\n{predict(0.010)}")
        print(f"\na 10 ms step, 8 buckets of 1 MiB:\n{predict(0.010, buckets=8)}")
        return
    comm = dist.init()
    if not isinstance(comm, dist.MPICommunicator):
        raise SystemExit("run under mpiexec -n 2 with mpi4py installed")
    sizes = message_sizes(comm, args.repeat)
    buckets = bucket_sizes(comm, args.repeat)
    gradients = seed_lstm_gradients(comm, args.repeat)
    times = overlap(comm, args.repeat)
    dist.log(comm, f"{comm.size} ranks; MPI: {_library()}")
    dist.log(comm, "\n| message | allreduce | algorithm bandwidth |\n|---:|---:|---:|")
    for size, t in sizes:
        dist.log(comm, f"| {_bytes(size)} | {t * 1e6:.1f} us | {size / t / 1e9:.2f} GB/s |")
    alpha, beta = fit_alpha_beta(sizes)
    dist.log(comm, f"\nfit: alpha = {alpha * 1e6:.1f} us, 1/beta = {1 / beta / 1e9:.2f} GB/s")
    dist.log(comm, "\n| bucket size | buckets | 8.4 MB in buckets |\n|---:|---:|---:|")
    for bucket_bytes, n, t in buckets:
        dist.log(comm, f"| {_bytes(bucket_bytes)} | {n} | {t * 1e3:.2f} ms |")
    dist.log(comm, f"\nallreduce_gradients of the seed LSTM (default buckets, packing included): "
             f"{gradients * 1e3:.2f} ms")
    compute, reduce, serial, overlapped = times
    dist.log(comm, f"\noverlap: compute {compute * 1e3:.1f} ms, allreduce {reduce * 1e3:.1f} ms, "
             f"one after the other {serial * 1e3:.1f} ms, overlapped {overlapped * 1e3:.1f} ms")


def _library() -> str:
    from mpi4py import MPI
    return MPI.Get_library_version().splitlines()[0].strip()


def _bytes(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


if __name__ == "__main__":
    main()
