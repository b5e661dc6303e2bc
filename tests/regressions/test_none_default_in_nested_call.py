"""A None default passed down to a callee whose `is None` branch uses the value as a tensor.

The branch for the other case is dead once the argument's type is known; specialization used to
type-check it anyway and reject the call.
"""

from typing import Optional, Tuple

import numpy as np

from script import Tensor, script


def _step(x: Tensor, state: Optional[Tuple[Tensor, Tensor]] = None) -> Tensor:
    if state is None:
        return x * 2.0
    h, c = state
    return x + h * c


def caller(x: Tensor) -> Tensor:
    return _step(x) + _step(x, (x, x))


def test_dead_branch_of_a_none_default_is_not_type_checked():
    x = np.arange(6.0).reshape(2, 3)
    f = script(caller)
    np.testing.assert_allclose(f(x), caller(x))
    assert "prim::If" not in str(f.graph_for(x))
