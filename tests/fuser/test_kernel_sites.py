"""Each fusion-group call site keeps its own fast path, so two groups of one structure and
different sizes called in turn (a weight's and a bias's gradient sums in a reverse loop) both
stay on it instead of replacing each other's plan on every call."""

import numpy as np

from script import Tensor, script


def two_sizes(a: Tensor, b: Tensor, c: Tensor, d: Tensor, n: int) -> Tensor:
    acc_w = a * 0.0
    acc_b = c * 0.0
    for _ in range(n):
        acc_w = acc_w + a * b + 1.0
        acc_b = acc_b + c * d + 1.0
    return acc_w.sum() + acc_b.sum()


def test_same_structure_groups_of_two_sizes_keep_separate_fast_paths(monkeypatch):
    monkeypatch.setenv("RNNSCRIPT_NATIVE_LOOPS", "0")  # the sites of the loop run as Python
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 256)), rng.standard_normal((2, 256))
    c, d = rng.standard_normal((2, 64)), rng.standard_normal((2, 64))
    f = script(two_sizes)
    got = f(a, b, c, d, 5)
    np.testing.assert_allclose(got, two_sizes(a, b, c, d, 5), rtol=1e-12)
    spec = f.specialization(a, b, c, d, 5)
    kernels = [v for k, v in spec.fn.__globals__.items() if k.startswith("_kernel")]
    assert len(kernels) == 2
    assert kernels[0].key == kernels[1].key  # one compiled kernel ...
    assert kernels[0].variants is kernels[1].variants
    shapes = sorted(k._fast[2] for k in kernels)  # ... and each site's own last plan
    assert shapes == [(2, 64), (2, 256)]
