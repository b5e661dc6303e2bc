"""rnn.distributed under ``mpiexec -n 2``: data-parallel Adam equals one process on the whole
batch, a failing rank ends the job with its error, mismatched models are named; on a GPU, CuPy
gradients are averaged (NCCL where every rank has a device). Skipped without mpi4py and mpiexec
(``pip install -e '.[distributed]'``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.gpu.device import gpu

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "mpi_programs"


def _mpiexec() -> str | None:
    beside = Path(sys.executable).with_name("mpiexec")
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _mpi_reason() -> str | None:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install -e '.[distributed]')"
    return None if _mpiexec() else "no mpiexec on PATH (pip install mpich)"


needs_mpi = pytest.mark.skipif(_mpi_reason() is not None, reason=_mpi_reason() or "")


def mpirun(ranks: int, program: str, *args: str, timeout: float = 120.0
           ) -> subprocess.CompletedProcess:
    """``mpiexec -n ranks python program args`` with this checkout first on the import path and
    one BLAS thread per rank."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    command = [_mpiexec(), "-n", str(ranks), sys.executable, str(PROGRAMS / program), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


@needs_mpi
def test_two_ranks_take_the_same_adam_steps_as_one_process_on_the_whole_batch(tmp_path):
    done = mpirun(2, "train_lstm.py", str(tmp_path), "--steps", "5", "--bucket-bytes", "1024")
    assert done.returncode == 0, done.stderr
    ranks = [np.load(tmp_path / f"rank{r}.npz") for r in range(2)]
    reference, start = np.load(tmp_path / "reference.npz"), np.load(tmp_path / "start.npz")
    assert sorted(reference.files) == sorted(ranks[0].files) and len(reference.files) == 10
    for name in reference.files:
        assert np.abs(ranks[0][name] - start[name]).max() > 1e-3, name  # it trained
        np.testing.assert_array_equal(ranks[1][name], ranks[0][name], err_msg=name)
        assert np.abs(ranks[0][name] - reference[name]).max() <= 1e-5, name


@needs_mpi
def test_a_failing_rank_ends_the_job_within_seconds_with_its_error():
    start = time.monotonic()
    done = mpirun(2, "failing_rank.py", timeout=60)
    elapsed = time.monotonic() - start
    assert done.returncode != 0
    assert elapsed < 20, f"the job took {elapsed:.1f} s to end"
    assert "rank 1 of 2 failed" in done.stderr
    assert "RuntimeError: rank 1 failed on purpose" in done.stderr
    assert "rank 0 finished" not in done.stdout


@needs_mpi
def test_a_rank_exiting_with_a_failure_status_ends_the_job():
    start = time.monotonic()
    done = mpirun(2, "failing_rank.py", "exit", timeout=60)
    assert time.monotonic() - start < 20
    assert done.returncode != 0
    assert "rnn.distributed: rank 1 of 2 exited with status 3; aborting the job" in done.stderr
    assert "rank 1 failed on purpose" not in done.stderr  # the rank ended at the exit


@needs_mpi
def test_mismatched_models_are_named_at_broadcast_parameters():
    done = mpirun(2, "failing_rank.py", "mismatch", timeout=60)
    assert done.returncode != 0
    assert ("ValueError: broadcast_parameters: the ranks' models differ: 'weight_ih_l0' is "
            "float32[24, 3] on rank 1 but float32[16, 3] on rank 0") in done.stderr


@needs_mpi
def test_char_lm_example_on_two_ranks_follows_the_one_process_loss_curve(tmp_path):
    done = mpirun(2, "char_lm_curve.py", str(tmp_path))
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(PROGRAMS))
    try:
        import char_lm_curve
    finally:
        sys.path.remove(str(PROGRAMS))
    one_process = char_lm_curve.load_example().train(**char_lm_curve.SHORT_RUN)
    two_ranks = np.load(tmp_path / "losses.npy")
    assert two_ranks[-1] < two_ranks[0] - 0.1  # it learns
    np.testing.assert_allclose(two_ranks, one_process, rtol=0, atol=1e-5)


# -- on a GPU ------------------------------------------------------------------------------------
@gpu
@needs_mpi
def test_gpu_cupy_gradients_are_averaged_over_two_ranks(tmp_path):
    done = mpirun(2, "cupy_gradients.py", str(tmp_path))
    assert done.returncode == 0, done.stderr
    for rank in range(2):
        got = np.load(tmp_path / f"rank{rank}.npz")
        for k in range(4):
            assert (got[f"data{k}"] == 0).all()             # rank 0's parameters
            assert (got[f"grad{k}"] == (k + 1) * 1.5).all()  # the mean of (k+1)*1 and (k+1)*2
    paths = {(tmp_path / f"rank{r}.txt").read_text() for r in range(2)}
    assert len(paths) == 1


@gpu
@needs_mpi
def test_gpu_nccl_channel_reduces_and_broadcasts_cupy_buffers():
    import cupy
    from mpi4py import MPI

    from rnn import distributed as dist
    if not dist.nccl_available():
        pytest.skip("CuPy has no NCCL (pip install nvidia-nccl-cu13)")
    comm = dist.MPICommunicator(MPI.COMM_SELF, use_nccl=True)
    for dtype in ("float32", "float64", "float16"):
        buffer = cupy.arange(10, dtype=dtype)
        comm.allreduce_sum_(buffer)
        comm.broadcast_(buffer, 0)
        np.testing.assert_array_equal(cupy.asnumpy(buffer), np.arange(10, dtype=dtype))
    assert comm._nccl is not None
    with pytest.raises(TypeError, match="NCCL cannot reduce complex64"):
        comm.allreduce_sum_(cupy.zeros(3, "complex64"))
