"""``super()`` in methods: ``super().name(...)`` and ``super(Class, self).name(...)`` call the
method found after the defining class in the MRO of the object's class, in ``@script`` classes,
methods of plain object arguments and modules. Compiled equals plain Python (float32 and
float64), gradients through fields a base ``__init__`` sets equal finite differences, a middle
class's ``super()`` reaches its own base, and other uses of ``super()`` are ScriptErrors at the
user's line."""

import numpy as np
import pytest

from script import Module, Parameter, ScriptError, Tensor, script
from tests.gradcheck import check_vjp
from tests.helpers import assert_same_at


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


# -- @script classes: a base __init__ sets the fields, a base method is extended --------------
@script
class CellBase:
    def __init__(self, W: Tensor, b: Tensor):
        self.W = W
        self.b = b

    def forward(self, h: Tensor) -> Tensor:
        return np.tanh(h @ self.W + self.b)


@script
class GatedCell(CellBase):
    def __init__(self, W: Tensor, b: Tensor, U: Tensor):
        super().__init__(W, b)
        self.U = U

    def forward(self, h: Tensor) -> Tensor:
        z = sigmoid(h @ self.U)
        return z * super().forward(h) + (1.0 - z) * h


@script
class ScaledCell(GatedCell):
    """A third level: its super() reaches GatedCell, whose super() must reach CellBase."""

    def __init__(self, W: Tensor, b: Tensor, U: Tensor, scale: Tensor):
        super(ScaledCell, self).__init__(W, b, U)  # noqa: UP008
        self.scale = scale

    def forward(self, h: Tensor) -> Tensor:
        return super(ScaledCell, self).forward(h) * self.scale  # noqa: UP008

    def base_only(self, h: Tensor) -> Tensor:
        return super(GatedCell, self).forward(h)  # CellBase.forward


@script
class InheritsAll(GatedCell):
    """No __init__ or forward of its own: GatedCell's are compiled for it."""

    def twice(self, h: Tensor) -> Tensor:
        return self.forward(self.forward(h))


def gated_steps(W: Tensor, b: Tensor, U: Tensor, h: Tensor) -> Tensor:
    cell = GatedCell(W, b, U)
    for _ in range(3):
        h = cell.forward(h)
    return h


def three_levels(W: Tensor, b: Tensor, U: Tensor, scale: Tensor, h: Tensor):
    cell = ScaledCell(W, b, U, scale)
    return cell.forward(h), cell.base_only(h), cell.U + cell.W


def inherited(W: Tensor, b: Tensor, U: Tensor, h: Tensor) -> Tensor:
    return InheritsAll(W, b, U).twice(h)


def _weights(dtype: str):
    r = np.random.default_rng(0)
    return (r.standard_normal((3, 3)).astype(dtype) * 0.5, r.standard_normal(3).astype(dtype),
            r.standard_normal((3, 3)).astype(dtype), r.standard_normal(3).astype(dtype),
            r.standard_normal((2, 3)).astype(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_script_class_super_calls_are_pythons(dtype):
    W, b, U, scale, h = _weights(dtype)
    assert_same_at(script(gated_steps)(W, b, U, h), gated_steps(W, b, U, h))
    assert_same_at(script(three_levels)(W, b, U, scale, h), three_levels(W, b, U, scale, h))
    assert_same_at(script(inherited)(W, b, U, h), inherited(W, b, U, h))


def test_script_class_super_gradients_match_finite_differences():
    W, b, U, scale, h = _weights("float64")
    check_vjp(script(gated_steps), (W, b, U, h))
    check_vjp(script(three_levels), (W, b, U, scale, h))
    check_vjp(script(inherited), (W, b, U, h))


# -- a diamond: super() follows the object's MRO, not the defining class's bases ---------------
@script
class Root:
    def __init__(self, W: Tensor):
        super().__init__()  # object.__init__: nothing to do
        self.W = W

    def f(self, x: Tensor) -> Tensor:
        return x @ self.W


@script
class Left(Root):
    def f(self, x: Tensor) -> Tensor:
        return super().f(x) + 1.0


@script
class Right(Root):
    def f(self, x: Tensor) -> Tensor:
        return super().f(x) * 3.0


@script
class Diamond(Left, Right):
    def f(self, x: Tensor) -> Tensor:
        return np.tanh(super().f(x))  # Left, then Right (not Root), then Root


def diamond(W: Tensor, x: Tensor) -> Tensor:
    return Diamond(W).f(x) + Left(W).f(x)


def test_super_follows_the_objects_mro():
    W, _, _, _, x = _weights("float64")
    assert_same_at(script(diamond)(W, x), diamond(W, x))
    check_vjp(script(diamond), (W, x))


# -- the real-world port: plain cell classes passed as arguments ---------------------------------
# The class hierarchy as from-scratch numpy RNN tutorials write it (a base cell that owns the input
# and recurrent weights and the affine step, subclasses that call super() for both the
# constructor and the step, in the `super(Class, self)` spelling older code uses), run over a
# sequence by a plain function that takes the cell as an argument.
class RNNCellBase:
    def __init__(self, Wx, Wh, b):
        self.Wx = Wx
        self.Wh = Wh
        self.b = b
        self.hidden_size = Wh.shape[0]

    def affine(self, x, h):
        return x @ self.Wx + h @ self.Wh + self.b

    def forward(self, x, h):
        return np.tanh(self.affine(x, h))


class GRULikeCell(RNNCellBase):
    def __init__(self, Wx, Wh, b, Wz, Uz):
        super(GRULikeCell, self).__init__(Wx, Wh, b)  # noqa: UP008
        self.Wz = Wz
        self.Uz = Uz

    def forward(self, x, h):
        z = sigmoid(x @ self.Wz + h @ self.Uz)
        candidate = super(GRULikeCell, self).forward(x, h)  # noqa: UP008
        return z * h + (1.0 - z) * candidate


class PeepholeCell(GRULikeCell):
    def __init__(self, Wx, Wh, b, Wz, Uz, p):
        super().__init__(Wx, Wh, b, Wz, Uz)
        self.p = p

    def forward(self, x, h):
        return super().forward(x, h) + self.p * h


def run_sequence(cell: RNNCellBase, xs: Tensor, h: Tensor) -> Tensor:
    for t in range(xs.shape[0]):
        h = cell.forward(xs[t], h)
    return h


def _cells(dtype: str):
    r = np.random.default_rng(1)
    n, d = 3, 2

    def m(*shape):
        return (r.standard_normal(shape) * 0.5).astype(dtype)

    gru = GRULikeCell(m(d, n), m(n, n), m(n), m(d, n), m(n, n))
    peep = PeepholeCell(m(d, n), m(n, n), m(n), m(d, n), m(n, n), m(n))
    return gru, peep, m(4, 2, d), m(2, n)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_plain_object_super_calls_are_pythons(dtype):
    gru, peep, xs, h = _cells(dtype)
    for cell in (gru, peep):
        assert_same_at(script(run_sequence)(cell, xs, h), run_sequence(cell, xs, h))


def test_plain_object_super_gradients_match_finite_differences():
    _, peep, xs, h = _cells("float64")  # through both base classes' methods
    check_vjp(script(run_sequence), (peep, xs[:2], h))


# -- modules ---------------------------------------------------------------------------------
class BaseModule(Module):
    def __init__(self):
        super().__init__()
        self.W = Parameter(np.random.default_rng(2).standard_normal((3, 3)) * 0.5)

    def forward(self, x: Tensor) -> Tensor:
        return np.tanh(x @ self.W)


class ResidualModule(BaseModule):
    def forward(self, x: Tensor) -> Tensor:
        return super().forward(x) + x


def test_module_super_calls_are_pythons():
    module = ResidualModule()
    x = np.random.default_rng(3).standard_normal((2, 3))
    assert_same_at(script(module)(x), module.forward(x))


# -- refusals --------------------------------------------------------------------------------
@script
class ReadsThroughSuper(CellBase):
    def forward(self, h: Tensor) -> Tensor:
        return h @ super().W


@script
class ReinitsOutsideInit(CellBase):
    def forward(self, h: Tensor) -> Tensor:
        super().__init__(self.W, self.b)
        return h


@script
class CallsMissing(CellBase):
    def forward(self, h: Tensor) -> Tensor:
        return super().backward(h)


def reads_through_super(W: Tensor, b: Tensor, h: Tensor) -> Tensor:
    return ReadsThroughSuper(W, b).forward(h)


def reinits(W: Tensor, b: Tensor, h: Tensor) -> Tensor:
    return ReinitsOutsideInit(W, b).forward(h)


def calls_missing(W: Tensor, b: Tensor, h: Tensor) -> Tensor:
    return CallsMissing(W, b).forward(h)


def super_in_a_function(W: Tensor, b: Tensor, h: Tensor) -> Tensor:
    return super().forward(h)


def super_of_an_array(W: Tensor, b: Tensor, h: Tensor) -> Tensor:
    return super(CellBase, h).forward(h)


@pytest.mark.parametrize("fn, match, line", [
    (reads_through_super, r"super\(\) other than to call a method of a base class",
     "return h @ super().W"),
    (reinits, r"super\(\).__init__\(...\) outside the __init__", "super().__init__(self.W"),
    (calls_missing, "defines a method 'backward'", "return super().backward(h)"),
    (super_in_a_function, r"super\(\) without arguments outside a method",
     "return super().forward(h)"),
    (super_of_an_array, r"super\(\) of a value that is not a script-class object",
     "return super(CellBase, h).forward(h)"),
])
def test_other_uses_of_super_are_refused_at_the_line(fn, match, line):
    W, b, _, _, h = _weights("float64")
    with pytest.raises(ScriptError, match=match) as info:
        script(fn)(W, b, h)
    assert line in str(info.value)
