"""Every constant folder against the semantics of the code it replaces.

A fold must give exactly what the compiled program computes without it: Python's scalar
arithmetic where the generated code spells an op with a Python operator (``a % b`` is floor-mod
with the sign of ``b``, ``a // b`` floors, ``-7 // 2 == -4``), numpy's ufunc where it calls one
(``np.minimum`` propagates nan). Each folder is checked on negative, zero, nan and float
operands, both against that reference and against the run-time spelling the code generator
emits. The list of folders comes from the folder tables: a folder added without a reference
here fails ``test_every_folder_has_a_reference``.
"""

from __future__ import annotations

import itertools
import math
import operator

import numpy as np
import pytest

import ir
from ir.registry import infer_types
from ir.types import TENSOR, TensorType
from passes import constant_prop
from script import ops, script
from script.frontend.exprs import _SCALAR_FOLDS, fold_scalars
from script.runtime import codegen, pipelines
from script.runtime.spellings import PRIM_CODE

INTS = [-7, -3, -1, 0, 1, 2, 5]
FLOATS = [-2.5, -1.0, -0.0, 0.0, 0.5, 3.0, math.inf, -math.inf, math.nan]
BOOLS = [False, True]
SCALARS = INTS + FLOATS + BOOLS


def _logical_and(a, b):
    return bool(a) and bool(b)


def _logical_or(a, b):
    return bool(a) or bool(b)


def _one_type(fn, a, b):
    """Python's min/max, which gives back one of its arguments as it is: of two numbers of
    different types, not the result type's (``min(1, 2.5)`` is the int 1), so not folded."""
    if type(a) is not type(b):
        raise ValueError("numbers of two types")
    return fn(a, b)


SCALAR_REFERENCES = {
    # kind: (reference semantics, arity). Python operators for what codegen spells with one;
    # numpy's ufunc (on Python scalars) for np.minimum / np.maximum / np.abs.
    "tensor::add": (operator.add, 2),
    "tensor::sub": (operator.sub, 2),
    "tensor::mul": (operator.mul, 2),
    "tensor::div": (operator.truediv, 2),
    "tensor::floordiv": (operator.floordiv, 2),
    "tensor::mod": (operator.mod, 2),
    "tensor::pow": (operator.pow, 2),
    "tensor::minimum": (lambda a, b: np.minimum(a, b).item(), 2),
    "tensor::maximum": (lambda a, b: np.maximum(a, b).item(), 2),
    "tensor::eq": (operator.eq, 2),
    "tensor::ne": (operator.ne, 2),
    "tensor::lt": (operator.lt, 2),
    "tensor::le": (operator.le, 2),
    "tensor::gt": (operator.gt, 2),
    "tensor::ge": (operator.ge, 2),
    "tensor::logical_and": (_logical_and, 2),
    "tensor::logical_or": (_logical_or, 2),
    "tensor::logical_not": (operator.not_, 1),
    "tensor::neg": (operator.neg, 1),
    "tensor::abs": (lambda a: np.abs(a).item(), 1),
    "prim::min": (lambda a, b: _one_type(min, a, b), 2),
    "prim::max": (lambda a, b: _one_type(max, a, b), 2),
    "prim::Bool": (bool, 1),
    "prim::Int": (int, 1),
    "prim::Float": (float, 1),
}
"""Scalar folders: the value the unfolded program computes."""

STRUCTURE_FOLDERS = {"prim::TupleConstruct", "prim::TupleIndex", "prim::TupleUnpack",
                     "prim::TupleSlice", "prim::len", "prim::str_eq", "prim::str_op",
                     "prim::str_slice", "prim::math"}
"""Folders of tuples, lengths, strings and the math module: checked by the tests of the same
name below."""

TYPE_FOLDERS = {"tensor::ndim", "tensor::size", "tensor::numel", "prim::IsNone",
                "prim::DictContains"}


def test_every_folder_has_a_reference():
    assert set(constant_prop.FOLDERS) == set(SCALAR_REFERENCES) | STRUCTURE_FOLDERS
    assert set(constant_prop.TYPE_FOLDERS) == TYPE_FOLDERS
    assert set(_SCALAR_FOLDS) <= set(FRONTEND_SYMBOLS)


# -- scalar folders -------------------------------------------------------------------------------
def fold(kind: str, args: tuple) -> tuple[bool, object, ir.Type]:
    """(whether it folded, the folded value, the node's declared type) for ``kind(*args)``."""
    g = ir.Graph()
    node = g.insert(kind, [g.constant(a) for a in args], [TENSOR])
    (declared,) = infer_types(node)
    node.outputs[0].type = declared
    g.add_output(node.outputs[0])
    constant_prop.run(g)
    out = g.outputs[0]
    return out.is_constant, (out.constant if out.is_constant else None), declared


def runtime(kind: str, args: tuple) -> object:
    """What the generated code computes for ``kind(*args)`` when nothing is folded."""
    names = [f"a{k}" for k in range(len(args))]
    rule = codegen.NUMPY_CODE.get(kind) or PRIM_CODE.get(kind)
    expr = rule(*names) if rule is not None else f"ops.{kind.split('::')[1]}({', '.join(names)})"
    return eval(expr, {"np": np, "ops": ops}, dict(zip(names, args)))  # noqa: S307


def same(got: object, want: object) -> bool:
    """Equal values, nan equal to nan, and the sign of a zero counts."""
    if isinstance(want, float) or isinstance(got, float):
        got, want = float(got), float(want)  # type: ignore[arg-type]
        if math.isnan(want):
            return math.isnan(got)
        return got == want and math.copysign(1, got) == math.copysign(1, want)
    return got == want and type(got) is type(want)


def expected(fn, args, declared):
    """The reference result converted to the declared type, or None when the program raises
    or gives a value of another type (then the fold must not happen)."""
    try:
        with np.errstate(all="ignore"):
            want = fn(*args)
    except (ArithmeticError, ValueError):
        return None
    if declared == ir.FLOAT and isinstance(want, (int, float)) and not isinstance(want, complex):
        return float(want)
    if declared == ir.INT and type(want) is int:
        return want
    if declared == ir.BOOL and type(want) is bool:
        return want
    return None


@pytest.mark.parametrize("kind", sorted(SCALAR_REFERENCES))
def test_scalar_folder_matches_python_and_runtime(kind):
    fn, arity = SCALAR_REFERENCES[kind]
    failures = []
    for args in itertools.product(SCALARS, repeat=arity):
        folded, value, declared = fold(kind, args)
        want = expected(fn, args, declared)
        if want is None:
            if folded:
                failures.append(f"{args}: folded to {value!r}, but the program raises or "
                                f"gives another type")
            continue
        if not folded:
            failures.append(f"{args}: not folded, want {want!r}")
        elif not same(value, want):
            failures.append(f"{args}: folded to {value!r}, want {want!r}")
        with np.errstate(all="ignore"):
            ran = runtime(kind, args)
        if not same(type(want)(ran), want):
            failures.append(f"{args}: the generated code computes {ran!r}, want {want!r}")
    assert not failures, f"{kind}:\n" + "\n".join(failures[:20])


@pytest.mark.parametrize("a,b,want", [(-7, 2, 1), (7, -2, -1), (-7, -2, -1), (-7.5, 2.0, 0.5),
                                      (7.5, -2.0, -0.5), (-0.0, 3.0, 0.0), (-1e-20, 1.0, 1.0)])
def test_mod_folds_to_the_sign_of_the_divisor(a, b, want):
    folded, value, _ = fold("tensor::mod", (a, b))
    assert folded and same(value, want) and value == np.mod(a, b)


@pytest.mark.parametrize("a,b,want", [(-7, 2, -4), (7, -2, -4), (-7.0, 2.0, -4.0),
                                      (-0.5, 1.0, -1.0), (-7, -2, 3)])
def test_floordiv_folds_rounding_down(a, b, want):
    folded, value, _ = fold("tensor::floordiv", (a, b))
    assert folded and same(value, want) and value == np.floor_divide(a, b)


def test_tensor_operands_fold_as_numpy():
    """Array operands go through the eager op library: numpy's semantics, with their dtype."""
    pipelines.register()  # the runtime's evaluator, as when it runs a pipeline
    a = np.array([-7, -1, 0, 5], np.int64)
    b = np.array([2, -3, 4, -2], np.int64)
    for kind, want in (("tensor::mod", np.mod(a, b)), ("tensor::floordiv", a // b),
                       ("tensor::minimum", np.minimum(a, b)), ("tensor::abs", np.abs(a))):
        args = (a, b) if kind != "tensor::abs" else (a,)
        g = ir.Graph()
        node = g.insert(kind, [g.constant(x) for x in args], [TENSOR])
        node.outputs[0].type = infer_types(node)[0]
        g.add_output(node.outputs[0])
        constant_prop.run(g)
        assert g.outputs[0].is_constant, kind
        got = g.outputs[0].constant
        assert got.dtype == want.dtype and np.array_equal(got, want), kind


# -- structure and type folders -------------------------------------------------------------------
def _fold_graph(build):
    g = ir.Graph()
    for v in build(g):
        g.add_output(v)
    constant_prop.run(g)
    return g


@pytest.mark.parametrize("index", [-3, -2, -1, 0, 1, 2])
def test_tuple_index_unpack_and_construct_fold_as_python(index):
    items = (4, -2.5, True)

    def build(g):
        t = g.insert("prim::TupleConstruct", [g.constant(x) for x in items], [TENSOR]).output
        t.type = infer_types(t.node)[0]
        node = g.insert("prim::TupleIndex", [t, g.constant(index)], [TENSOR])
        node.outputs[0].type = infer_types(node)[0]
        unpack = g.insert("prim::TupleUnpack", [t], [ir.INT, ir.FLOAT, ir.BOOL])
        return [t, node.output, *unpack.outputs]

    g = _fold_graph(build)
    assert all(v.is_constant for v in g.outputs)
    got = [v.constant for v in g.outputs]
    assert got[0] == items and got[1] == items[index] and tuple(got[2:]) == items


@pytest.mark.parametrize("bounds", [(None, None, None), (1, None, None), (-2, None, None),
                                    (None, -1, None), (None, None, -1), (3, 0, -1),
                                    (-1, -4, -2), (0, 10, 2), (5, 1, None)])
def test_tuple_slice_folds_as_python(bounds):
    items = (1, 2, 3, 4, 5)

    def build(g):
        t = g.constant(items)
        node = g.insert("prim::TupleSlice", [t, *(g.constant(b) for b in bounds)], [TENSOR])
        node.outputs[0].type = infer_types(node)[0]
        return [node.output, g.insert("prim::len", [node.output], [ir.INT]).output]

    g = _fold_graph(build)
    want = items[slice(*bounds)]
    assert [v.constant for v in g.outputs] == [want, len(want)]


def test_len_folds_tuples_and_strings_only():
    def build(g):
        lst = g.add_input(ir.ListType(ir.INT), "lst")
        return [g.insert("prim::len", [g.constant("abc")], [ir.INT]).output,
                g.insert("prim::len", [g.constant(())], [ir.INT]).output,
                g.insert("prim::len", [lst], [ir.INT]).output]

    g = _fold_graph(build)
    assert [v.constant if v.is_constant else None for v in g.outputs] == [3, 0, None]


@pytest.mark.parametrize("dim", [-3, -2, -1, 0, 1, 2])
def test_size_and_ndim_fold_as_numpy(dim):
    shape = (4, 3)
    array = np.zeros(shape)

    def build(g):
        x = g.add_input(TensorType("float64", shape), "x")
        size = g.insert("tensor::size", [x, g.constant(dim)], [ir.INT]).output
        return [size, g.insert("tensor::ndim", [x], [ir.INT]).output]

    g = _fold_graph(build)
    size, ndim = g.outputs
    assert ndim.is_constant and ndim.constant == array.ndim
    if -2 <= dim < 2:
        assert size.is_constant and size.constant == array.shape[dim]
    else:
        assert not size.is_constant  # out of range: the program raises, as numpy does


def test_numel_folds_only_from_a_fully_known_shape():
    def build(g):
        return [g.insert("tensor::numel", [g.add_input(TensorType("float64", shape))],
                         [ir.INT]).output for shape in ((4, 3), (0, 2), (None, 2))]

    g = _fold_graph(build)
    assert [v.constant if v.is_constant else "?" for v in g.outputs] == [12, 0, "?"]


def test_is_none_folds_from_the_type():
    def build(g):
        known = g.add_input(TensorType("float64", (2,)), "x")
        maybe = g.add_input(ir.OptionalType(TENSOR), "y")
        return [g.insert("prim::IsNone", [v], [ir.BOOL]).output
                for v in (known, maybe, g.constant(None))]

    g = _fold_graph(build)
    assert [v.constant if v.is_constant else "?" for v in g.outputs] == [False, "?", True]


# -- the frontend's folds ------------------------------------------------------------------------
FRONTEND_SYMBOLS = {"+": operator.add, "-": operator.sub, "*": operator.mul,
                    "//": operator.floordiv, "%": operator.mod, "==": operator.eq,
                    "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
                    ">=": operator.ge}


@pytest.mark.parametrize("symbol", sorted(_SCALAR_FOLDS))
def test_frontend_folds_int_arithmetic_as_python(symbol):
    g = ir.Graph()
    for a, b in itertools.product(INTS + BOOLS, repeat=2):
        got = fold_scalars(symbol, g.constant(a), g.constant(b))
        try:
            want = FRONTEND_SYMBOLS[symbol](a, b)
        except ZeroDivisionError:
            assert got is constant_prop.NOT_CONSTANT, (a, symbol, b)
            continue
        assert got == want and type(got) is type(want), (a, symbol, b)


def test_compiled_constant_arithmetic_equals_python():
    """End to end: folded ints, floats and casts in a compiled function equal plain Python."""

    @script
    def f(x: float) -> float:
        n = 7
        m = -2
        a = (-n) % 3 + n % m + (-n) // 2 + n // m + (-n) ** 2 + abs(m) + min(m, -n) + max(m, 0)
        b = (-7.5) % 2.0 + 7.5 % (-2.0) + (-7.5) // 2.0 + (-0.5) ** 2 + abs(-2.5)
        c = int(-2.7) + int(2.7) + float(m) + float(int(-0.5)) + (1 if -1 < 0 else 2)
        d = (not (n > 0)) + ((m < 0) and (n >= 7)) + ((m == -2) or (n != 7))
        return x + a + b + c + d

    assert f(0.25) == f.python_fn(0.25)


@pytest.mark.parametrize("a, b", [("train", "train"), ("train", "eval"), ("", "")])
def test_string_equality_folds_to_pythons(a, b):
    g = ir.Graph()
    node = g.insert("prim::str_eq", [g.constant(a), g.constant(b)], [ir.BOOL])
    g.add_output(node.output)
    constant_prop.run(g)
    out = g.outputs[0]
    assert out.is_constant and out.constant is (a == b)


@pytest.mark.parametrize("name, text, args, want", [
    ("lower", "LSTM", (), "lstm"), ("startswith", "lstm_2l", ("lstm",), True),
    ("find", "abc", ("c",), 2), ("__getitem__", "abc", (-1,), "c"), ("__add__", "a", ("b",), "ab"),
    ("__mul__", "ab", (2,), "abab"), ("__contains__", "gru", ("r",), True),
    ("replace", "a-b", ("-", "_"), "a_b"),
])
def test_string_ops_fold_to_pythons(name, text, args, want):
    out = _string_op_folded(name, text, args)
    assert out.is_constant and out.constant == want and type(out.constant) is type(want)


def _string_op_folded(name: str, text: str, args: tuple) -> ir.Value:
    """The output of ``prim::str_op(name, text, *args)`` of constants after constant_prop."""
    g = ir.Graph()
    node = g.create("prim::str_op", [g.constant(name), g.constant(text),
                                     *(g.constant(a) for a in args)])
    for out_type in infer_types(node):
        node.add_output(out_type)
    node.insert_before(g.block.return_node)
    g.add_output(node.output)
    constant_prop.run(g)
    return g.outputs[0]


@pytest.mark.parametrize("name, text, args", [
    ("__getitem__", "abc", (5,)),  # IndexError when it runs: left to run
    ("index", "abc", ("z",)),  # ValueError
    ("split", "a,b", (",",)),  # a list is not a constant
])
def test_string_ops_that_raise_or_make_lists_are_not_folded(name, text, args):
    assert _string_op_folded(name, text, args).node.kind == "prim::str_op"


def test_string_slice_folds_to_pythons():
    g = ir.Graph()
    node = g.create("prim::str_slice", [g.constant("abcdef"), g.constant(1), g.constant(None),
                                        g.constant(2)], [ir.STR])
    node.insert_before(g.block.return_node)
    g.add_output(node.output)
    constant_prop.run(g)
    assert g.outputs[0].constant == "bdf"


# -- the math module ------------------------------------------------------------------------------
@pytest.mark.parametrize("name, args", [
    ("sqrt", (2.0,)), ("sqrt", (9,)), ("log", (8.0, 2)), ("floor", (-2.5,)), ("ceil", (2.1,)),
    ("isnan", (float("nan"),)), ("factorial", (5,)), ("gcd", (12, 18)), ("hypot", (3, 4.0, 12)),
    ("atan2", (1.0, -1.0)), ("copysign", (0.0, -1.0)), ("perm", (5,)), ("trunc", (True,)),
])
def test_math_folds_to_what_the_runtime_computes(name, args):
    g = ir.Graph()
    node = g.insert("prim::math", [g.constant(name)] + [g.constant(a) for a in args], [TENSOR])
    (declared,) = infer_types(node)
    node.outputs[0].type = declared
    g.add_output(node.outputs[0])
    constant_prop.run(g)
    out = g.outputs[0]
    names = [f"a{k}" for k in range(len(args))]
    expr = PRIM_CODE["prim::math"](repr(name), *names)
    want = eval(expr, {"math": math}, dict(zip(names, args)))  # noqa: S307
    assert out.is_constant and type(out.constant) is type(want) and same(out.constant, want)


@pytest.mark.parametrize("name, args", [("sqrt", (-1.0,)), ("log", (0.0,)), ("exp", (1e6,)),
                                        ("factorial", (-1,)), ("log", (2.0, 1.0))])
def test_math_that_raises_is_left_to_run_time(name, args):
    g = ir.Graph()
    node = g.insert("prim::math", [g.constant(name)] + [g.constant(a) for a in args], [TENSOR])
    (node.outputs[0].type,) = infer_types(node)
    g.add_output(node.outputs[0])
    constant_prop.run(g)
    assert not g.outputs[0].is_constant


WRITTEN = """
graph(%g : Float(2)):
  %shape : (int, int) = prim::Constant[value=(3, 2)]()
  %dtype : str = prim::Constant[value="float32"]()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %buf : Float(3, 2) = tensor::zeros(%shape, %dtype)
   = tensor::write_slot(%buf, %zero, %one, %g)
  %base : Float(3, 2) = tensor::zeros(%shape, %dtype)
  %row : Float(2) = tensor::select(%base, %zero, %one)
  %row2 : Float(2) = tensor::select_put_(%row, %g, %zero, %one)
  %kept : Float(3, 2) = tensor::zeros(%shape, %dtype)
  %out : (Float(3, 2), Float(3, 2), Float(3, 2)) = prim::TupleConstruct(%buf, %base, %kept)
  return (%out)
"""


def test_an_array_written_in_place_is_not_folded():
    # folded, the writes went into the constant (shared by every run) and what read the array
    # read zeros: a reverse loop's slot-gradient buffer gave a zero gradient
    pipelines.register()
    g = ir.parse(WRITTEN)
    constant_prop.run(g)
    kinds = {v.name: v.node.kind for v in g.nodes()[-1].inputs}
    assert kinds == {"buf": "tensor::zeros", "base": "tensor::zeros", "kept": "prim::Constant"}
