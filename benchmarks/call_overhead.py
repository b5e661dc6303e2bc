"""Call overhead of a scripted one-op function on a cache hit, next to the plain function.

    python -m benchmarks.call_overhead
"""

from __future__ import annotations

import timeit

import numpy as np

from script import Tensor, script


def one_op(x: Tensor) -> Tensor:
    return np.tanh(x)


def main() -> None:
    x = np.ones(1, dtype=np.float32)
    scripted = script(one_op)
    scripted(x)
    number = 20000
    for name, fn in (("python", one_op), ("script", scripted)):
        best = min(timeit.repeat(lambda f=fn: f(x), number=number, repeat=7)) / number
        print(f"{name:>8}: {best * 1e6:7.2f} us per call")
    py = min(timeit.repeat(lambda: one_op(x), number=number, repeat=7)) / number
    sc = min(timeit.repeat(lambda: scripted(x), number=number, repeat=7)) / number
    print(f"overhead of script over python: {(sc - py) * 1e6:.2f} us per call")


if __name__ == "__main__":
    main()
