"""rnn.distributed in one process: buckets, broadcast, gradient averaging and the helpers.

Ranks are threads here, joined by a small in-process communicator with the collectives' meaning
(sum in rank order, copy from the root); the tests that launch real MPI jobs are in
test_distributed_mpi.py.
"""

from __future__ import annotations

import re
import runpy
import sys
import threading

import numpy as np
import pytest

import rnn
from rnn import distributed as dist
from script import Module, Parameter
from tests.helpers import ROOT


class ThreadComm:
    """Rank ``rank`` of ``size`` threads sharing ``slots`` and a barrier."""

    def __init__(self, rank: int, size: int, slots: list, barrier: threading.Barrier):
        self.rank, self.size, self.local_rank = rank, size, rank
        self.slots, self._barrier = slots, barrier

    def _exchange(self, obj):
        self.slots[self.rank] = obj
        self._barrier.wait()
        everything = list(self.slots)
        self._barrier.wait()
        return everything

    def allreduce_sum_(self, buffer):
        parts = self._exchange(buffer.copy())
        total = parts[0].copy()
        for part in parts[1:]:
            total += part
        buffer[...] = total
        return buffer

    def broadcast_(self, buffer, root=0):
        buffer[...] = self._exchange(buffer.copy())[root]
        return buffer

    def allgather_object(self, obj):
        return self._exchange(obj)

    def broadcast_object(self, obj, root=0):
        return self._exchange(obj)[root]

    def barrier(self):
        self._barrier.wait()


def run_ranks(size: int, fn):
    """``fn(comm)`` on ``size`` threads; the results in rank order (a rank's exception, raised)."""
    slots, barrier = [None] * size, threading.Barrier(size, timeout=10)
    results, errors = [None] * size, [None] * size

    def body(rank):
        try:
            results[rank] = fn(ThreadComm(rank, size, slots, barrier))
        except BaseException as e:  # reported to the test below
            errors[rank] = e

    threads = [threading.Thread(target=body, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors


class Head(Module):
    def __init__(self, seed: int, hidden: int = 4):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.lstm = rnn.LSTM(3, hidden, num_layers=2, rng=rng)
        self.weight = Parameter(rng.standard_normal((2, hidden)).astype("float32"))
        self.scale = Parameter(np.ones(2, "float64"))


# -- broadcast ----------------------------------------------------------------------------------
def test_broadcast_parameters_gives_every_rank_rank0s_values_in_place():
    def rank_body(comm):
        model = Head(seed=10 + comm.rank)
        arrays = [p.data for p in model.parameters()]
        dist.broadcast_parameters(model, comm, bucket_bytes=64)
        assert all(p.data is a for p, a in zip(model.parameters(), arrays))
        return model.state_dict()

    (first, second), errors = run_ranks(2, rank_body)
    assert errors == [None, None]
    want = Head(seed=10).state_dict()
    for name, value in want.items():
        np.testing.assert_array_equal(first[name], value)
        np.testing.assert_array_equal(second[name], value)


def test_broadcast_parameters_names_a_mismatched_shape_on_every_rank():
    _, errors = run_ranks(2, lambda comm: dist.broadcast_parameters(
        Head(seed=0, hidden=4 + 2 * comm.rank), comm))
    for error in errors:
        assert isinstance(error, ValueError)
        assert "'weight' is float32[2, 6] on rank 1 but float32[2, 4] on rank 0" in str(error)


def test_broadcast_parameters_names_a_missing_parameter():
    def rank_body(comm):
        params = list(Head(seed=0).parameters())
        dist.broadcast_parameters(params[:len(params) - comm.rank], comm)

    _, errors = run_ranks(2, rank_body)
    assert all("rank 1 has 9 parameters but rank 0 has 10" in str(e) for e in errors)


# -- gradients ----------------------------------------------------------------------------------
@pytest.mark.parametrize("bucket_bytes", [32, dist.DEFAULT_BUCKET_BYTES])
def test_allreduce_gradients_averages_and_keeps_unreached_parameters_none(bucket_bytes):
    def rank_body(comm):
        model = Head(seed=0)
        params = list(model.parameters())
        for k, p in enumerate(params):
            p.grad = np.full(p.shape, (k + 1) * (comm.rank + 1), p.dtype)
        params[0].grad = None                      # no rank has a gradient
        if comm.rank == 0:
            params[1].grad = None                  # only rank 1 has one
        dist.allreduce_gradients(model, comm, bucket_bytes=bucket_bytes)
        return [p.grad for p in params]

    (first, second), errors = run_ranks(2, rank_body)
    assert errors == [None, None]
    params = list(Head(seed=0).parameters())
    for k, (a, b, p) in enumerate(zip(first, second, params)):
        if k == 0:
            assert a is None and b is None
            continue
        want = (k + 1) * 2 / 2 if k == 1 else (k + 1) * 3 / 2
        assert a.dtype == p.dtype and a.shape == p.shape
        np.testing.assert_array_equal(a, np.full(p.shape, want, p.dtype))
        np.testing.assert_array_equal(b, a)


def test_allreduce_gradients_sums_without_average():
    def rank_body(comm):
        p = Parameter(np.zeros(3, "float32"))
        p.grad = np.full(3, comm.rank + 1.0, "float32")
        dist.allreduce_gradients([p], comm, average=False)
        return p.grad

    results, errors = run_ranks(3, rank_body)
    assert errors == [None] * 3
    for grad in results:
        np.testing.assert_array_equal(grad, [6.0, 6.0, 6.0])


def test_one_process_is_left_unchanged():
    comm = dist.LocalCommunicator()
    model = Head(seed=1)
    grads = []
    for p in model.parameters():
        p.grad = np.ones_like(p.data)
        grads.append(p.grad)
    before = {name: value.copy() for name, value in model.state_dict().items()}
    dist.broadcast_parameters(model, comm)
    dist.allreduce_gradients(model, comm)
    assert all(p.grad is g and (g == 1).all() for p, g in zip(model.parameters(), grads))
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name])


def test_buckets_split_by_dtype_and_size_in_registration_order():
    params = [Parameter(np.zeros(n, dtype)) for n, dtype in
              [(4, "float32"), (4, "float32"), (100, "float32"), (2, "float64"), (4, "float32")]]
    buckets = dist.plan_buckets(params, bucket_bytes=32)
    layout = [([params.index(p) for p in b.params], b.dtype.name) for b in buckets]
    assert layout == [([0, 1], "float32"), ([2], "float32"), ([4], "float32"), ([3], "float64")]
    with pytest.raises(ValueError, match="bucket_bytes must be positive"):
        dist.plan_buckets(params, bucket_bytes=0)


# -- init, shards, seeds, logging, checkpoints ----------------------------------------------------
def test_init_without_mpi4py_is_one_local_process(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    comm = dist.init()
    assert isinstance(comm, dist.LocalCommunicator) and (comm.rank, comm.size) == (0, 1)
    monkeypatch.setenv("PMI_SIZE", "4")
    with pytest.raises(ImportError, match="started by an MPI launcher with 4 ranks but mpi4py"):
        dist.init()


def test_shards_cover_the_items_in_rank_order():
    class Rank:
        def __init__(self, rank, size):
            self.rank, self.size = rank, size

    pieces = [dist.shard(10, Rank(r, 4)) for r in range(4)]
    assert [len(p) for p in pieces] == [3, 3, 2, 2]
    np.testing.assert_array_equal(np.concatenate(pieces), np.arange(10))
    even = [dist.shard(10, Rank(r, 4), drop_last=True) for r in range(4)]
    np.testing.assert_array_equal(np.concatenate(even), np.arange(8))
    assert {len(p) for p in even} == {2}


def test_rank_seeds_differ_between_ranks_and_repeat_between_runs():
    comms = [ThreadComm(r, 3, [], None) for r in range(3)]
    seeds = [dist.rank_seed(5, c) for c in comms]
    assert len(set(seeds)) == 3 and seeds == [dist.rank_seed(5, c) for c in comms]
    draws = [dist.rank_rng(5, c).standard_normal() for c in comms]
    assert len(set(draws)) == 3


def test_log_prints_on_rank_zero_only(capsys):
    dist.log(ThreadComm(1, 2, [], None), "hidden")
    dist.log(ThreadComm(0, 2, [], None), "shown", 3)
    assert capsys.readouterr().out == "shown 3\n"


def test_checkpoint_round_trip_restores_parameters_and_adam_state(tmp_path):
    comm = dist.LocalCommunicator()
    model, other = Head(seed=1), Head(seed=2)
    opt, other_opt = rnn.Adam(model.parameters()), rnn.Adam(other.parameters())
    for p in model.parameters():
        p.grad = np.ones_like(p.data)
    opt.step()
    dist.save_checkpoint(tmp_path / "ckpt.npz", model, comm, opt, step=7)
    extra = dist.load_checkpoint(tmp_path / "ckpt.npz", other, comm, other_opt)
    assert int(extra["step"]) == 7
    for (name, value), (_, got) in zip(model.state_dict().items(), other.state_dict().items()):
        np.testing.assert_array_equal(got, value, err_msg=name)
    for p, q in zip(model.parameters(), other.parameters()):
        state, restored = opt.state[id(p)], other_opt.state[id(q)]
        assert restored["step"] == state["step"] == 1
        np.testing.assert_array_equal(restored["exp_avg"], state["exp_avg"])


def test_mean_over_ranks_is_the_whole_batch_mean():
    results, _ = run_ranks(2, lambda comm: dist.mean_over_ranks([1.0 + comm.rank, 4.0], comm))
    np.testing.assert_array_equal(results[0], [1.5, 4.0])


def test_the_docs_example_runs_as_one_process(tmp_path, capsys):
    doc = ROOT / "docs" / "distributed.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
    program = tmp_path / "distributed_example.py"  # scripted code needs a source file
    program.write_text("\n\n".join(blocks), encoding="utf-8")
    runpy.run_path(str(program), run_name="example")
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in printed] == ["step 0", "step 1", "step 2"]


def test_checkpoint_written_by_rank_zero_is_loaded_on_every_rank(tmp_path):
    path = tmp_path / "ckpt.npz"

    def rank_body(comm):
        model = Head(seed=20 + comm.rank)
        dist.save_checkpoint(path, model, comm)     # rank 0 writes, rank 1 waits for it
        assert path.exists()
        other = Head(seed=30 + comm.rank)
        dist.load_checkpoint(path, other, comm)
        return other.state_dict()

    results, errors = run_ranks(2, rank_body)
    assert errors == [None, None]
    for name, value in Head(seed=20).state_dict().items():
        for state in results:
            np.testing.assert_array_equal(state[name], value, err_msg=name)
