"""A program calling ``scipy.special`` (imported by the test that uses it: scipy is optional)."""

from typing import Tuple

from scipy.special import expit, logsumexp

from script import Tensor


def special_functions(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return (expit(x), logsumexp(x), logsumexp(x, axis=1) * 2.0,
            logsumexp(x, axis=0, keepdims=True))
