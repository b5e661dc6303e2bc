"""A compiled function's workspace (``fuser.workspace``): the large arrays a call allocates are
reused by a later call only once no one holds them, so the outputs and gradients a caller kept,
and the saved values a pending backward reads, never change; repeated training calls fault no
memory in."""

import copy
import os
import subprocess
import sys

import numpy as np
import pytest

from benchmarks.fastrnns import cells
from script import script, vjp
from tests.helpers import ROOT

# float64 at T=24, B=8, H=64: the (T, B, H) buffers are 96 KiB, above fuser.workspace.MIN_BYTES
T, B, H = 24, 8, 64


def _layer_args(seed):
    rng = np.random.default_rng(seed)
    shapes = [(T, B, H), (B, H), (B, H), (4 * H, H), (4 * H, H), (4 * H,), (4 * H,)]
    return tuple(0.1 * rng.standard_normal(s) for s in shapes)


def _cotangents(seed):
    rng = np.random.default_rng(100 + seed)
    return (rng.standard_normal((T, B, H)), rng.standard_normal((B, H)),
            rng.standard_normal((B, H)))


@pytest.fixture(params=["native loops", "python loops"])
def layer(request, monkeypatch):
    """The LSTM layer compiled with its workspace, and a reference with none (every array
    new), both with native loops on or off."""
    if request.param == "python loops":
        monkeypatch.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
    f = script(cells.lstm_layer)
    with monkeypatch.context() as m:
        m.setenv("RNNSCRIPT_WORKSPACE", "0")
        reference = script(cells.lstm_layer)
        reference(*_layer_args(0))  # compiled now, without a workspace
    return f, reference


def _data(value):
    return value.__array_interface__["data"][0]


def test_outputs_of_a_call_are_unchanged_by_the_next_calls(layer):
    f, reference = layer
    first = f(*_layer_args(1))
    kept = copy.deepcopy(first)
    y_view = first[0][3:5]  # only a view of the first output is kept
    view_kept = y_view.copy()
    del first
    second = f(*_layer_args(2))
    third = f(*_layer_args(3))
    np.testing.assert_array_equal(y_view, view_kept)
    for got, want in zip(kept, reference(*_layer_args(1))):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(second, reference(*_layer_args(2))):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(third, reference(*_layer_args(3))):
        np.testing.assert_array_equal(got, want)


def test_a_dropped_output_is_reused(layer):
    f, _ = layer
    y = f(*_layer_args(1))[0]
    spec = f.specialization(*_layer_args(1))
    assert spec.fn.__rnnscript_workspace__.nbytes() >= y.nbytes
    address = _data(y)
    del y
    assert _data(f(*_layer_args(2))[0]) == address  # the same memory: nothing faulted in


def test_gradients_and_pending_backwards_are_unchanged_by_later_calls(layer):
    f, reference = layer
    # a training loop holds the previous call's backward while it runs the next forward
    out1, back1 = vjp(f, *_layer_args(1))
    out1_kept = copy.deepcopy(out1)
    out2, back2 = vjp(f, *_layer_args(2))
    grads2 = back2(_cotangents(2))
    grads2_kept = copy.deepcopy(grads2)
    out3, back3 = vjp(f, *_layer_args(3))
    grads1 = back1(_cotangents(1))  # its saved values were not overwritten by calls 2 and 3
    grads3 = back3(_cotangents(3))
    del back1, back2, back3
    vjp(f, *_layer_args(4))[1](_cotangents(4))  # another call reuses what is free now
    for seed, out, grads in ((1, out1_kept, grads1), (2, out2, grads2_kept), (3, out3, grads3)):
        want_out, want_back = vjp(reference, *_layer_args(seed))
        want_grads = want_back(_cotangents(seed))
        for got, want in zip(out, want_out):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(grads, want_grads):
            np.testing.assert_array_equal(got, want)
    for got, want in zip(out1, out1_kept):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(grads2, grads2_kept):
        np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
@pytest.mark.parametrize("loops", ["1", "0"], ids=["native loops", "python loops"])
def test_repeated_training_calls_fault_no_memory_in(loops):
    """With malloc left as glibc sets it, a training step of the LSTM layer at T=100, B=8, H=64
    would page-fault its activations in again on every call (250-770 faults a call with the
    mmap threshold fixed); the workspace reuses them (about 50 a call remain, from arrays no
    workspace site makes)."""
    code = (
        "import resource, numpy as np\n"
        "from script import script, vjp\n"
        "from benchmarks.fastrnns import cells\n"
        "rng = np.random.default_rng(0)\n"
        "shapes = [(100, 8, 64), (8, 64), (8, 64), (256, 64), (256, 64), (256,), (256,)]\n"
        "args = [(0.1 * rng.standard_normal(s)).astype(np.float32) for s in shapes]\n"
        "f = script(cells.lstm_layer)\n"
        "def step():\n"
        "    outs, back = vjp(f, *args)\n"
        "    back(tuple(np.ones_like(o) for o in outs))\n"
        "step(); step()\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for _ in range(20):\n"
        "    step()\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)\n")
    faults = {}
    for ws in ("1", "0"):
        # glibc's mmap threshold fixed at 128 KiB (by default it moves with the allocations
        # seen, so whether freed activations fault in again depended on what ran before):
        # every large array is then mapped fresh unless something keeps it
        env = {**os.environ, "RNNSCRIPT_MALLOC": "", "RNNSCRIPT_WORKSPACE": ws,
               "RNNSCRIPT_NATIVE_LOOPS": loops, "OPENBLAS_NUM_THREADS": "1",
               "PYTHONPATH": str(ROOT), "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=131072"}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, cwd=str(ROOT), env=env)
        faults[ws] = float(out.stdout)
    assert faults["0"] > 100, faults  # the measure sees the faults the workspace saves
    # what is left: arrays outside its sites (about 50 a call). Without the workspace the
    # generated code frees its temporaries after their last use, so 250-770 a call fault in
    # there (from about 950 when every temporary stayed alive), depending on the process
    # (200 in one run: the workspace then saves three quarters of them, not more)
    assert faults["1"] < 0.5 * faults["0"] and faults["1"] < 80, faults
