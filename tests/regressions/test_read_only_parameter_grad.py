"""A parameter's ``.grad`` is an array the module owns and can update in place.

The gradient of ``self.b.sum()`` is the cotangent broadcast to ``b``'s shape: a read-only view.
``vjp`` stored it as ``b.grad`` as it was, and ``clip_grad_norm_`` (which scales every ``.grad``
in place) raised ``ValueError: output array is read-only``. A read-only gradient is now copied
when it becomes a ``.grad``.
"""

import numpy as np

from rnn.optim import SGD, clip_grad_norm_
from script import Module, Parameter, Tensor, value_and_grad


class SummedBias(Module):
    def __init__(self):
        super().__init__()
        self.b = Parameter(np.ones(3))

    def forward(self, x: Tensor) -> Tensor:
        return (x * 2.0).sum() + self.b.sum()


def test_clip_grad_norm_scales_a_broadcast_gradient():
    m = SummedBias()
    value_and_grad(m)(np.ones(3))
    (b,) = [p for _, p in m.named_parameters()]
    assert b.grad.flags.writeable
    total = clip_grad_norm_(m.parameters(), 0.1)
    np.testing.assert_allclose(total, np.sqrt(3.0), rtol=1e-6)
    np.testing.assert_allclose(b.grad, np.full(3, 0.1 / np.sqrt(3.0)), rtol=1e-5)
    SGD(m.parameters(), lr=1.0).step()
    np.testing.assert_allclose(b.data, 1.0 - b.grad, rtol=1e-6)
