"""The GPU tests without a GPU: the ``gpu``-marked tests run in a process of their own against
``tests.gpu.strict_cupy`` (CuPy's refusals, the generated CUDA C run by the emulation), so a
numpy array where a CuPy array belongs fails here, on every machine, and not only on a GPU."""

import os
import subprocess
import sys

import pytest

from fuser.cuda import emulate
from tests.gpu.device import gpu_reason
from tests.helpers import ROOT

GPU_TESTS = ["tests/gpu/test_cupy_end_to_end.py", "tests/gpu/test_corpus_on_cupy.py",
             "tests/gpu/test_fuzz_on_cupy.py", "tests/fuser/test_cuda.py"]


@pytest.mark.skipif(emulate.unavailable_reason() is not None,
                    reason=emulate.unavailable_reason() or "")
@pytest.mark.parametrize("path", GPU_TESTS)
def test_gpu_tests_pass_on_the_strict_cupy_stand_in(path):
    if gpu_reason() is None:
        pytest.skip("a GPU is here: the gpu-marked tests run on it")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.gpu.strict_cupy",
                           "-m", "gpu", "-p", "no:cacheprovider", "-x", path],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout.splitlines()[-1], \
        done.stdout[-2000:]


def test_the_stand_in_refuses_what_cupy_refuses():
    """The checks the stand-in exists for: numpy arrays do not mix with its arrays."""
    code = (
        "import numpy as np, tests.gpu.strict_cupy as s; s.install(); import cupy\n"
        "a = cupy.asarray(np.ones(3, 'float32'))\n"
        "for bad in (lambda: a + np.ones(3), lambda: np.dot(a, np.ones(3)),\n"
        "            lambda: np.asarray(a), lambda: np.tanh(a, out=np.ones(3))):\n"
        "    try: bad()\n"
        "    except TypeError: pass\n"
        "    else: raise SystemExit('mixed')\n"
        "b = a + 1.0\n"
        "assert type(b) is cupy.ndarray and type(b.sum()) is cupy.ndarray\n"
        "assert type(cupy.asnumpy(b)) is np.ndarray and float(b.sum()) == 6.0\n"
        "assert type(np.tanh(a)) is cupy.ndarray and type(cupy.zeros(2)) is cupy.ndarray\n"
        "a[0] = np.float32(2.0); a[1:] = np.ones(2)  # copied to the device, as CuPy does\n"
        "assert float(a.sum()) == 4.0\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
