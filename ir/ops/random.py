"""Draws from numpy's global random generator: ``prim::random(fn, args...)`` is
``np.random.<fn>(args...)`` with the arguments in numpy's positional order (``RANDOM_PARAMS``),
run as numpy runs it, so a seeded program draws the same numbers compiled as plain. A draw
changes the generator's state: it is never dropped, merged or moved (``SIDE_EFFECTS``), and no
derivative flows through it (a gradient path into one is refused by the soundness check).
"""

from __future__ import annotations

from ir.core import Node, Value
from ir.ops.rules import broadcast_shapes
from ir.ops.shape import int_items
from ir.registry import SIDE_EFFECTS, ShapeError, defop
from ir.types import BOOL, FLOAT, INT, NONE, ListType, TensorType, Type

RANDOM_PARAMS: dict[str, tuple[tuple[str, object], ...]] = {
    "random": (("size", None),),
    "random_sample": (("size", None),),
    "standard_normal": (("size", None),),
    "uniform": (("low", 0.0), ("high", 1.0), ("size", None)),
    "normal": (("loc", 0.0), ("scale", 1.0), ("size", None)),
    "randint": (("low", ...), ("high", None), ("size", None)),
    "binomial": (("n", ...), ("p", ...), ("size", None)),
    "choice": (("a", ...), ("size", None), ("replace", True), ("p", None)),
    "seed": (("seed", None),),
}
"""numpy's legacy functions by their positional parameters and defaults (``...``: required);
``rand`` and ``randn`` take the dimensions themselves (``np.random.rand(3, 4)``)."""

DIMS_FUNCTIONS = ("rand", "randn")
INT_FUNCTIONS = ("randint", "binomial")
"""The functions whose draws are int64 (the others' are float64, ``choice``'s its items')."""


def _size_shape(size: Value) -> tuple | None:
    items = int_items(size)
    return None if items is None else tuple(items)


def _choice_dtype(a: Value) -> str | None:
    t = a.type
    if t in (INT, BOOL) or isinstance(t, ListType) and t.element in (INT, BOOL):
        return "int64"
    if isinstance(t, ListType) and t.element == FLOAT:
        return "float64"
    if isinstance(t, TensorType):
        return t.dtype
    raise ShapeError(f"prim::random: choice() of a {t}: an int, a 1-D array or a list of "
                     "numbers")


def _random(node: Node) -> list[Type]:
    fn, *args = node.inputs
    name = fn.constant if fn.is_constant else None
    if name not in RANDOM_PARAMS and name not in DIMS_FUNCTIONS:
        raise ShapeError(f"prim::random: unknown function {name!r}")
    if name == "seed":
        return [NONE]
    if name in DIMS_FUNCTIONS:
        if not all(a.type in (INT, BOOL) for a in args):
            raise ShapeError(f"prim::random: {name}() takes int dimensions")
        if not args:
            return [FLOAT]
        return [TensorType("float64", tuple(_size_shape(a)[0] for a in args))]  # type: ignore
    size = args[[p for p, _ in RANDOM_PARAMS[name]].index("size")]
    dtype = ("int64" if name in INT_FUNCTIONS else _choice_dtype(args[0]) if name == "choice"
             else "float64")
    if not (size.is_constant and size.constant is None):
        return [TensorType(dtype, _size_shape(size))]
    if name == "choice":  # choice(n) is a Python int, of items numpy's scalar of their dtype
        return [INT if args[0].type in (INT, BOOL) else TensorType(dtype, ())]
    params = args[:2] if name != "randint" else []
    tensors = [a.type for a in params if isinstance(a.type, TensorType)]
    if tensors:  # np.random.normal(mu, sigma) of arrays: their broadcast shape
        return [TensorType(dtype, broadcast_shapes([t.shape for t in tensors]))]
    return [INT if dtype == "int64" else FLOAT]


defop("prim::random(fn: str, *args: any) -> any", _random, (SIDE_EFFECTS,),
      ("np.random",), "a draw from numpy's global random generator: np.random.<fn>(args) "
      "(rand, randn, random, random_sample, standard_normal, uniform, normal, randint, "
      "binomial, choice, seed)")
