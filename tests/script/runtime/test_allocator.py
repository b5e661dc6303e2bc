"""script.runtime.allocator: malloc is left alone unless ``RNNSCRIPT_MALLOC=tune`` asks for the
process-wide tuning; tuned, freed array memory stays in the process, so repeated training calls
do not page-fault their activations in again even without the workspace."""

import os
import resource
import subprocess
import sys

import numpy as np
import pytest

from script import script, vjp
from script.runtime import allocator
from tests.helpers import ROOT
from tests.programs import cells

pytestmark = pytest.mark.skipif(allocator._libc() is None, reason="needs glibc (mallopt)")


def _layer_args(seed=0, T=40, B=8, H=64):
    rng = np.random.default_rng(seed)
    shapes = [(T, B, H), (B, H), (B, H), (4 * H, H), (4 * H, H), (4 * H,), (4 * H,)]
    return tuple((0.1 * rng.standard_normal(s)).astype(np.float32) for s in shapes)


def _faults_per_call(fn, calls=20):
    fn()
    fn()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def test_import_leaves_malloc_alone(tmp_path):
    """Importing rnnscript changes no process-wide setting, and neither does compiling: malloc is
    tuned by the first compilation only when RNNSCRIPT_MALLOC=tune."""
    (tmp_path / "cell.py").write_text("import numpy as np\n\n\n"
                                      "def f(x):\n    return np.tanh(x)\n")
    code = ("import numpy as np, script.runtime.allocator as a, script, cell\n"
            "print(a.tuned)\n"
            "script.script(cell.f)(np.ones(3))\n"
            "print(a.tuned)")
    root = str(ROOT)
    for malloc, after in (("", "False"), ("default", "False"), ("tune", "True")):
        env = {**os.environ, "RNNSCRIPT_MALLOC": malloc,
               "PYTHONPATH": os.pathsep.join([root, str(tmp_path)])}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, cwd=root, env=env)
        assert out.stdout.split() == ["False", after], out.stderr


@pytest.fixture
def tuned():
    assert allocator.tune(force=True)


def test_tuned_training_calls_reuse_memory_instead_of_faulting_it_in(tuned, monkeypatch):
    monkeypatch.setenv("RNNSCRIPT_WORKSPACE", "0")  # malloc alone keeps the memory here
    monkeypatch.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")
    f = script(cells.lstm_layer)
    args = _layer_args()

    def train_step():
        outs, back = vjp(f, *args)
        back(tuple(np.ones_like(o) for o in outs))

    # with glibc's defaults this step frees ~1 MB of activations to the kernel and faults them
    # back in on the next call (hundreds of faults a call); kept memory is reused instead
    assert _faults_per_call(train_step) < 25


def _rss_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def test_freed_memory_is_kept_until_release_returns_it(tuned):
    allocator.release()
    big = np.ones(48 << 20, np.uint8)  # 48 MB, under the mmap threshold: from the heap
    del big
    kept = _rss_mb()
    assert allocator.release()
    assert kept - _rss_mb() > 32  # the freed array stayed resident until release()
    f = script(cells.lstm_layer)
    args = _layer_args(1)
    np.testing.assert_allclose(f(*args)[0], f.python_fn(*args)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("malloc", ["", "default"])
def test_malloc_is_left_alone_unless_asked(malloc):
    env = dict(os.environ, RNNSCRIPT_MALLOC=malloc)
    code = "import script.runtime.allocator as a; print(a.tune(), a.tuned)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=str(ROOT))
    assert out.stdout.strip() == "False False"
