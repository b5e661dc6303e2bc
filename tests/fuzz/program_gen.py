"""A hypothesis strategy that writes random, well-typed scripted programs as Python source.

``programs()`` draws a ``Program``: the source of a module holding a few helper functions and one
entry function, with annotated tensor/int/float/bool parameters. The generator tracks the exact
shape of every tensor it names, so each expression it writes is well-typed by construction: operands
of ``+`` broadcast to the result, matmul inner sizes agree, reshapes keep the element count, slices
stay in bounds. The statements cover the language's control flow (``if``/``else``, counted ``for``,
``while``, ``break``/``continue``, early ``return``), tuples, lists appended in loops and calls of
other functions.

Values are kept in a numerically tame range (tanh/sigmoid squashing, denominators of the form
``1 + b * b``) so that compiled-versus-eager differences are rounding, not overflow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

DIMS = (1, 2, 3, 4)
"""Array sizes the generator uses (1 exercises broadcasting)."""

Shape = tuple[int, ...]


@dataclass(frozen=True)
class TensorT:
    """A tensor of a known shape (the program's dtype)."""

    shape: Shape


@dataclass(frozen=True)
class ScalarT:
    """A Python ``int``, ``float`` or ``bool``."""

    name: str


@dataclass(frozen=True)
class ListT:
    """A list of tensors of one shape; ``nonempty`` when built with an element."""

    elem: Shape
    nonempty: bool
    comprehension: bool = False
    """made by a list comprehension"""


@dataclass(frozen=True)
class TupleT:
    """A tuple of tensors (shapes) and lists (``ListT``)."""

    elems: tuple[Shape | ListT, ...]


@dataclass(frozen=True)
class DictT:
    """A dict of tensors with ``int`` or ``str`` keys; ``entries`` are the keys known to be set
    (in the scope holding this binding) and their values' shapes."""

    key: str
    entries: tuple[tuple[int | str, Shape], ...]
    argument: bool = False
    """a parameter: read only (writing a caller's dict would change the next call's input)"""

    def annotation(self) -> str:
        return f"Dict[{self.key}, Tensor]"


@dataclass(frozen=True)
class GlobalT(TensorT):
    """A module-level array the function reads (and never assigns)."""


@dataclass(frozen=True)
class ListR:
    """A ``List[Tensor]`` output whose items have shape ``elem``."""

    elem: Shape


INT, FLOAT, BOOL = ScalarT("int"), ScalarT("float"), ScalarT("bool")

FEATURES = frozenset({"same-value-if", "dict", "dict-argument", "list-output", "comprehension",
                      "conditional-append", "tuple-of-lists", "global-array",
                      "append-after-read", "append-to-comprehension"})
"""Constructs the generator can write beyond its core language, each one drawn only when named
in ``programs(features=...)``:

- ``same-value-if``: ``if c: t = v else: t = v`` (one value, or two outer values, no new one);
- ``dict``: ``d: Dict[int, Tensor] = {}`` / ``Dict[str, Tensor]``, ``d[0] = ...``, ``d[0]`` read;
- ``dict-argument``: a ``Dict[str, Tensor]`` parameter read as ``w["w0"]``;
- ``list-output``: ``-> List[Tensor]`` (a literal or a list built by appends), also in a tuple;
- ``comprehension``: ``a, b = [x[:, k] for k in range(2)]``, ``[np.tanh(v) for v in l]``;
- ``conditional-append``: ``if t >= 2: X.append(...)`` in a loop, then ``np.stack(X, axis=1)``;
- ``tuple-of-lists``: ``p = (l, [a])``, read back as ``p[0][-1]`` or unpacked;
- ``global-array``: module-level arrays the function reads, updated in place (``G1 += 0.25``,
  ``G1[0] = 1.5``) between two calls; each call is compared with Python;
- ``append-after-read``: ``l = [a]; t = ops.stack(l).mean(axis=0); l.append(b)`` (a list
  grows after it was read);
- ``append-to-comprehension``: ``l = [... for k in range(2)]; l.append(x)``.
"""

PENDING_VALUES: frozenset[str] = frozenset()
"""Features with which today's compiler computes wrong values (bugs being fixed): left out of
programs unless asked for by name, so CI stays green. docs/fuzzing.md has each one's
reproducer; remove a feature from here when its fix lands."""

PENDING_GRADIENTS: frozenset[str] = frozenset()
"""Features whose gradients today's autodiff gets wrong (bugs being fixed): left out of gradient
programs unless asked for by name."""


def default_features(differentiable: bool) -> frozenset[str]:
    """The features drawn when ``programs()`` is not told: every one not pending."""
    return FEATURES - (PENDING_GRADIENTS if differentiable else PENDING_VALUES)


KINKED = {"sqrt": "np.sqrt(1.0 + {0} * {0})", "np.abs": "np.abs({0} - 0.375)",
          "ops.relu": "ops.relu({0} - 0.375)"}
"""In gradient programs, functions without a derivative at 0 are moved off the values that
programs make exactly: zeros (``np.zeros``, ``0.0 * x``, a relu of negatives) are common, and
``sqrt(abs(0 * x))`` has a NaN gradient where finite differences see a constant."""


@dataclass(frozen=True)
class Param:
    """One parameter of the entry function and how to make an argument for it."""

    name: str
    type: TensorT | ScalarT

    def annotation(self) -> str:
        if isinstance(self.type, DictT):
            return self.type.annotation()
        return "Tensor" if isinstance(self.type, TensorT) else self.type.name


@dataclass(frozen=True)
class Helper:
    """A generated function the entry function (or a later helper) may call."""

    name: str
    params: tuple[Param, ...]
    returns: Shape


@dataclass(frozen=True)
class Program:
    """A generated module: its source, the entry function's name and parameters.

    ``resets`` put the module's global arrays back to their first values, in place; ``updates``
    change them in place between two calls (both are statements run in the module's namespace).
    """

    source: str
    entry: str
    params: tuple[Param, ...]
    dtype: str
    returns_only_tensors: bool
    resets: tuple[str, ...] = ()
    updates: tuple[str, ...] = ()

    def make_args(self, seed: int) -> tuple:
        """Random arguments for the entry function (ints stay small: they count loop trips)."""
        rng = np.random.default_rng(seed)
        args = []
        for p in self.params:
            t = p.type
            if isinstance(t, DictT):
                args.append({k: rng.standard_normal(shape).astype(self.dtype)
                             for k, shape in t.entries})
            elif isinstance(t, TensorT):
                args.append(rng.standard_normal(t.shape).astype(self.dtype))
            elif t == INT:
                args.append(int(rng.integers(0, 4)))
            elif t == FLOAT:
                args.append(float(np.round(rng.uniform(-2, 2), 3)))
            else:
                args.append(bool(rng.integers(0, 2)))
        return tuple(args)


def _shapes_in(t: object) -> list[Shape]:
    """The shapes of the tensors a value of type ``t`` holds that an expression can read."""
    if isinstance(t, TensorT):
        return [t.shape]
    if isinstance(t, ListT):
        return [t.elem] if t.nonempty else []
    if isinstance(t, TupleT):
        return [s for e in t.elems for s in ([e] if isinstance(e, tuple) else _shapes_in(e))]
    if isinstance(t, DictT):
        return [shape for _, shape in t.entries]
    return []


@dataclass
class Scope:
    """Names visible in one block, with their types."""

    names: dict[str, object] = field(default_factory=dict)


class FunctionWriter:
    """Writes one function's body, drawing every choice from hypothesis."""

    def __init__(self, draw, dtype: str, helpers: list[Helper], counter: list[int],
                 returns: tuple[Shape | ScalarT | ListR, ...], budget: int,
                 differentiable: bool = False, features: frozenset[str] = frozenset()):
        self.draw = draw
        self.features = features
        self.dtype = dtype
        self.helpers = helpers
        self.counter = counter
        self.returns = returns
        self.budget = budget  # statements left, so programs stay small
        # no dtype round trips (finite differences cannot see through float32) and no float() of
        # a tensor (a Python float carries no gradient, so finite differences would disagree)
        self.differentiable = differentiable
        self.scopes: list[Scope] = [Scope()]
        self.lines: list[str] = []
        self.indent = 1
        self.loop_depth = 0
        self.loop_counters: set[str] = set()
        self.inputs: set[str] = set()  # parameters and globals

    # -- names ---------------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counter[0] += 1
        return f"{prefix}{self.counter[0]}"

    def bind(self, name: str, t: object) -> None:
        self.scopes[-1].names[name] = t

    def visible(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for scope in self.scopes:
            out.update(scope.names)
        return out

    def of_type(self, pred) -> list[str]:
        return sorted(n for n, t in self.visible().items() if pred(t))

    def assignable(self, shape: Shape | None = None) -> list[str]:
        """Tensor names the function may assign (not globals), of ``shape`` if given."""
        return self.of_type(lambda t: isinstance(t, TensorT) and not isinstance(t, GlobalT)
                            and (shape is None or t.shape == shape))

    def loop_ints(self) -> list[str]:
        """The counters of the enclosing ``for`` loops."""
        return [n for scope in self.scopes for n in scope.names if n in self.loop_counters]

    def emit(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    # -- small draws ---------------------------------------------------------------------------
    def choice(self, options):
        return self.draw(st.sampled_from(options))

    def coin(self, p_true: float = 0.5) -> bool:
        return self.draw(st.integers(0, 99)) < int(p_true * 100)

    def shape(self, ndim: int | None = None) -> Shape:
        if ndim is None:
            ndim = self.draw(st.integers(1, 3))
        return tuple(self.draw(st.sampled_from(DIMS)) for _ in range(ndim))

    def known_shape(self) -> Shape:
        shapes = sorted({s for t in self.visible().values() for s in _shapes_in(t)})
        if shapes and self.coin(0.7):
            return self.choice(shapes)
        return self.shape()

    # -- scalar expressions ---------------------------------------------------------------------
    def int_expr(self, depth: int = 1) -> str:
        names = self.of_type(lambda t: t == INT)
        options = ["lit"] + (["name"] if names else []) + (["size"] if depth else [])
        options += ["arith", "minmax", "len"] if depth else []
        kind = self.choice(options)
        if kind == "name":
            return self.choice(names)
        if kind == "size":
            shape = self.known_shape()
            axis = self.draw(st.integers(0, len(shape) - 1))
            return f"{self.tensor_expr(shape, 0)}.shape[{axis}]"
        if kind == "arith":
            op = self.choice(["+", "-", "*", "//", "%"])
            right = self.int_expr(0) if op in "+-*" else str(self.draw(st.integers(1, 3)))
            return f"({self.int_expr(depth - 1)} {op} {right})"
        if kind == "minmax":
            return f"{self.choice(['min', 'max'])}({self.int_expr(0)}, {self.int_expr(0)})"
        if kind == "len":
            lists = self.of_type(lambda t: isinstance(t, ListT))
            if lists:
                return f"len({self.choice(lists)})"
        return str(self.draw(st.integers(-2, 4)))

    def float_expr(self, depth: int = 1) -> str:
        names = self.of_type(lambda t: t == FLOAT)
        options = ["lit"] + (["name"] if names else [])
        options += ["arith", "of_int"] if depth else []
        options += ["reduce"] if depth and not self.differentiable else []
        kind = self.choice(options)
        if kind == "name":
            return self.choice(names)
        if kind == "reduce":
            shape = self.known_shape()
            return f"float({self.tensor_expr(shape, depth - 1)}.{self.choice(['sum', 'mean'])}())"
        if kind == "arith":
            op = self.choice(["+", "-", "*"])
            return f"({self.float_expr(depth - 1)} {op} {self.float_expr(0)})"
        if kind == "of_int":
            return f"float({self.int_expr(0)})"
        return repr(self.choice([0.0, 0.5, -1.5, 2.0, 0.25, 3.0]))

    def bool_expr(self, depth: int = 1) -> str:
        names = self.of_type(lambda t: t == BOOL)
        options = ["cmp_int", "cmp_float"] + (["name"] if names else [])
        options += ["not", "andor"] if depth else []
        kind = self.choice(options)
        if kind == "name":
            return self.choice(names)
        if kind == "cmp_int":
            op = self.choice(["<", "<=", ">", "==", "!="])
            return f"{self.int_expr(0)} {op} {self.int_expr(0)}"
        if kind == "cmp_float":
            return f"{self.float_expr(1)} {self.choice(['<', '>'])} {self.float_expr(0)}"
        if kind == "not":
            return f"not ({self.bool_expr(depth - 1)})"
        return f"({self.bool_expr(0)} {self.choice(['and', 'or'])} {self.bool_expr(0)})"

    def scalar_expr(self, t: ScalarT) -> str:
        return {"int": self.int_expr, "float": self.float_expr, "bool": self.bool_expr}[t.name]()

    # -- tensor expressions ---------------------------------------------------------------------
    def tensor_expr(self, shape: Shape, depth: int) -> str:
        """An expression whose value is a tensor of exactly ``shape``."""
        if depth <= 0 or self.coin(0.25):
            return self.tensor_leaf(shape)
        makers = [self.binary, self.binary, self.with_scalar, self.unary, self.unary,
                  self.max_where, self.reduce, self.index, self.slice_, self.concat,
                  self.chunk, self.stack, self.reshape, self.conditional]
        if len(shape) == 2:
            makers += [self.matmul, self.matmul, self.transpose]
        return self.choice(makers)(shape, depth - 1)

    def tensor_leaf(self, shape: Shape) -> str:
        # names in definition order, so the most recent value is preferred (fewer dead stores)
        named = [(n, t) for scope in self.scopes for n, t in scope.names.items()]
        exact = [n for n, t in named if isinstance(t, TensorT) and t.shape == shape]
        if exact and self.coin(0.5):
            return exact[-1]
        tuples = [f"{n}[{k}]" for n, t in named
                  if isinstance(t, TupleT) for k, s in enumerate(t.elems) if s == shape]
        lists = [f"{n}[{self.choice([0, -1])}]" for n, t in named
                 if isinstance(t, ListT) and t.nonempty and t.elem == shape]
        lists += [f"{n}[{k}][{self.choice([0, -1])}]" for n, t in named
                  if isinstance(t, TupleT) for k, s in enumerate(t.elems)
                  if isinstance(s, ListT) and s.nonempty and s.elem == shape]
        dicts = [f"{n}[{key!r}]" for n, t in named
                 if isinstance(t, DictT) for key, s in t.entries if s == shape]
        pool = exact + tuples + lists + dicts
        if pool and self.coin(0.9):
            return self.choice(pool)
        same_size = [n for n, t in named
                     if isinstance(t, TensorT) and math.prod(t.shape) == math.prod(shape)]
        if same_size and self.coin(0.7):
            dims = ", ".join(map(str, shape))
            return f"{self.choice(same_size)}.reshape({dims})"
        others = [n for n, t in named if isinstance(t, TensorT)]
        ones = self.filled(shape, "ones")
        if others and self.coin(0.7):
            return f"({ones} * {self.choice(others)}.{self.choice(['mean', 'sum', 'max'])}())"
        return self.filled(shape, self.choice(["ones", "zeros", "full"]))

    def filled(self, shape: Shape, fill: str) -> str:
        dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
        if fill == "full":
            return f"np.full(({dims}), {self.float_expr(0)}, dtype=np.{self.dtype})"
        return f"np.{fill}(({dims}), dtype=np.{self.dtype})"

    def sub_shape(self, shape: Shape) -> Shape:
        """A shape that broadcasts to ``shape`` (a suffix, with some sizes set to 1)."""
        keep = self.draw(st.integers(0, len(shape)))
        tail = shape[len(shape) - keep:]
        return tuple(1 if self.coin(0.3) else d for d in tail)

    def operand(self, shape: Shape, depth: int) -> str:
        """An expression broadcasting to ``shape``: a tensor of a sub-shape or a float."""
        if self.coin(0.2):
            return self.float_expr(0)
        sub = self.sub_shape(shape) if self.coin(0.4) else shape
        return self.tensor_expr(sub, depth) if sub else self.float_expr(0)

    def binary(self, shape: Shape, depth: int) -> str:
        a, b = self.tensor_expr(shape, depth), self.operand(shape, depth)
        if self.coin(0.5):
            a, b = b, a
        op = self.choice(["+", "-", "*", "/"])
        if op == "/":
            return f"({a} / (1.0 + {b} * {b}))"
        return f"({a} {op} {b})"

    def with_scalar(self, shape: Shape, depth: int) -> str:
        a = self.tensor_expr(shape, depth)
        return f"({a} {self.choice(['+', '-', '*'])} {self.float_expr(1)})"

    def unary(self, shape: Shape, depth: int) -> str:
        a = self.tensor_expr(shape, depth)
        fns = ["np.tanh", "ops.sigmoid", "np.exp", "np.abs", "ops.relu", "-", "sqrt", "log",
               "np.square", "np.sin"]
        fn = self.choice(fns + ([] if self.differentiable else ["astype"]))
        if fn == "-":
            return f"(-{a})"
        if fn == "np.exp":
            return f"np.exp(np.tanh({a}))"  # bounded, so nothing overflows
        if self.differentiable and fn in KINKED:
            return KINKED[fn].format(a)
        if fn == "sqrt":
            return f"np.sqrt(np.abs({a}))"
        if fn == "log":
            return f"np.log(1.0 + {a} * {a})"
        if fn == "astype":
            other = "float32" if self.dtype == "float64" else "float64"
            return f"{a}.astype(np.{other}).astype(np.{self.dtype})"
        return f"{fn}({a})"

    def max_where(self, shape: Shape, depth: int) -> str:
        a, b = self.tensor_expr(shape, depth), self.operand(shape, depth)
        kind = self.choice(["np.maximum", "np.minimum", "where", "clip"])
        if kind == "where":
            c = self.operand(shape, 0)
            return f"np.where({a} > {c}, {a}, {b})"
        if kind == "clip":
            return f"np.clip({a}, -0.5, 0.75)"
        return f"{kind}({a}, {b})"

    def reduce(self, shape: Shape, depth: int) -> str:
        axis = self.draw(st.integers(0, len(shape)))
        size = self.draw(st.sampled_from(DIMS))
        method = self.choice(["sum", "mean", "max"])
        if axis < len(shape) and shape[axis] == 1 and self.coin(0.5):
            inner = shape[:axis] + (size,) + shape[axis + 1:]
            return f"{self.tensor_expr(inner, depth)}.{method}(axis={axis}, keepdims=True)"
        inner = shape[:axis] + (size,) + shape[axis:]
        if len(inner) > 4:
            return self.tensor_leaf(shape)
        return f"{self.tensor_expr(inner, depth)}.{method}(axis={axis})"

    def index(self, shape: Shape, depth: int) -> str:
        if len(shape) >= 3:
            return self.tensor_leaf(shape)
        size = self.draw(st.sampled_from(DIMS))
        k = self.draw(st.integers(-size, size - 1))
        if len(shape) == 1 and self.coin(0.5):
            inner = (shape[0], size)
            return f"{self.tensor_expr(inner, depth)}[:, {k}]"
        return f"{self.tensor_expr((size,) + shape, depth)}[{k}]"

    def slice_(self, shape: Shape, depth: int) -> str:
        n = shape[0]
        kind = self.choice(["range", "step", "last"])
        if kind == "step":
            inner = (2 * n - self.draw(st.integers(0, 1)),) + shape[1:]
            return f"{self.tensor_expr(inner, depth)}[::2]"
        extra = self.draw(st.integers(0, 2))
        start = self.draw(st.integers(0, extra))
        if kind == "last":
            inner = shape[:-1] + (shape[-1] + extra,)
            return f"{self.tensor_expr(inner, depth)}[..., {start}:{start + shape[-1]}]"
        inner = (n + extra,) + shape[1:]
        return f"{self.tensor_expr(inner, depth)}[{start}:{start + n}]"

    def concat(self, shape: Shape, depth: int) -> str:
        axis = self.draw(st.integers(0, len(shape) - 1))
        if shape[axis] < 2:
            return self.tensor_leaf(shape)
        cut = self.draw(st.integers(1, shape[axis] - 1))
        left = shape[:axis] + (cut,) + shape[axis + 1:]
        right = shape[:axis] + (shape[axis] - cut,) + shape[axis + 1:]
        a, b = self.tensor_expr(left, depth), self.tensor_expr(right, depth)
        return f"np.concatenate([{a}, {b}], axis={axis})"

    def chunk(self, shape: Shape, depth: int) -> str:
        axis = self.draw(st.integers(0, len(shape) - 1))
        chunks = self.draw(st.integers(1, 3))
        inner = shape[:axis] + (shape[axis] * chunks,) + shape[axis + 1:]
        k = self.draw(st.integers(0, chunks - 1))
        return f"ops.chunk({self.tensor_expr(inner, depth)}, {chunks}, {axis})[{k}]"

    def stack(self, shape: Shape, depth: int) -> str:
        if len(shape) < 2:
            return self.tensor_leaf(shape)
        axis = self.draw(st.integers(0, len(shape) - 1))
        rest = shape[:axis] + shape[axis + 1:]
        items = ", ".join(self.tensor_expr(rest, depth) for _ in range(shape[axis]))
        fn = self.choice(["ops.stack", "np.stack"])
        return f"{fn}([{items}], axis={axis})" if fn == "np.stack" else f"{fn}([{items}], {axis})"

    def reshape(self, shape: Shape, depth: int) -> str:
        size = math.prod(shape)
        src = self.choice([(size,), tuple(reversed(shape)), shape[:-2] + (shape[-2] * shape[-1],)
                           if len(shape) >= 2 else (size,)])
        dims = ", ".join(map(str, shape))
        if self.coin(0.5):
            return f"{self.tensor_expr(src, depth)}.reshape({dims})"
        return f"{self.tensor_expr(src, depth)}.reshape(({dims}{',' if len(shape) == 1 else ''}))"

    def transpose(self, shape: Shape, depth: int) -> str:
        inner = (shape[1], shape[0])
        if self.coin(0.5):
            return f"{self.tensor_expr(inner, depth)}.T"
        return f"np.transpose({self.tensor_expr(inner, depth)})"

    def matmul(self, shape: Shape, depth: int) -> str:
        k = self.draw(st.sampled_from(DIMS))
        a = self.tensor_expr((shape[0], k), depth)
        b = self.tensor_expr((k, shape[1]), depth)
        return f"({a} @ {b})" if self.coin(0.7) else f"np.matmul({a}, {b})"

    def conditional(self, shape: Shape, depth: int) -> str:
        return (f"({self.tensor_expr(shape, depth)} if {self.bool_expr(0)} "
                f"else {self.tensor_expr(shape, depth)})")

    # -- statements -----------------------------------------------------------------------------
    def block(self, max_statements: int) -> None:
        """Statements into the current block (at least one)."""
        count = self.draw(st.integers(1, max(1, max_statements)))
        start = len(self.lines)
        for _ in range(count):
            if self.budget <= 0:
                break
            self.budget -= 1
            self.statement()
        if len(self.lines) == start:
            self.emit("pass")

    def statement(self) -> None:
        nested = self.indent < 4
        makers = [self.assign_new, self.assign_new, self.reassign, self.reassign, self.scalar_new,
                  self.tuple_stmt, self.chunk_unpack, self.list_new, self.list_new]
        makers += [self.if_stmt, self.for_stmt, self.while_stmt] if nested else []
        makers += [self.append] if self.appendable() else []
        makers += [self.call_helper] if self.helpers else []
        makers += [self.break_continue, self.break_continue] if self.loop_depth else []
        makers += [self.early_return] if self.indent > 1 else []
        makers += self.feature_statements(nested)
        self.choice(makers)()

    def feature_statements(self, nested: bool) -> list:
        """The statements of the enabled ``FEATURES``."""
        f = self.features
        makers: list = []
        if "same-value-if" in f and nested:
            makers += [self.same_value_if]
        if "dict" in f:
            makers += [self.dict_new]
            makers += [self.dict_write] if self.of_type(
                lambda t: isinstance(t, DictT) and not t.argument) else []
        if "comprehension" in f:
            makers += [self.comprehension]
        if "conditional-append" in f and nested:
            makers += [self.recurrence]
        if "tuple-of-lists" in f:
            makers += [self.tuple_of_lists]
        return makers * 2  # each twice as likely as one core statement

    def assign_new(self) -> None:
        shape = self.known_shape()
        name = self.fresh("t")
        self.emit(f"{name} = {self.tensor_expr(shape, self.draw(st.integers(1, 3)))}")
        self.bind(name, TensorT(shape))

    def reassign(self) -> None:
        names = self.assignable()
        if not names:
            self.assign_new()
            return
        name = self.choice(names)
        shape = self.visible()[name].shape
        op = self.choice(["=", "=", "+", "*"])
        expr = self.tensor_expr(shape, self.draw(st.integers(1, 2)))
        # not `+=`: on a numpy array it writes in place (through every alias, the caller's
        # argument included), while the language's tensors are immutable
        if op == "=":
            self.emit(f"{name} = {expr}")
        elif op == "+":
            self.emit(f"{name} = {name} + {expr}")
        else:
            self.emit(f"{name} = {name} * np.tanh({expr})")  # bounded under repetition

    def scalar_new(self) -> None:
        t = self.choice([INT, FLOAT, BOOL])
        name = self.fresh({"int": "k", "float": "s", "bool": "b"}[t.name])
        self.emit(f"{name} = {self.scalar_expr(t)}")
        self.bind(name, t)

    def tuple_stmt(self) -> None:
        shapes = tuple(self.known_shape() for _ in range(self.draw(st.integers(1, 3))))
        name = self.fresh("p")
        items = ", ".join(self.tensor_expr(s, 1) for s in shapes)
        self.emit(f"{name} = ({items}{',' if len(shapes) == 1 else ''})")
        self.bind(name, TupleT(shapes))
        if self.coin(0.5):
            targets = [self.fresh("u") for _ in shapes]
            self.emit(f"{', '.join(targets)}{',' if len(targets) == 1 else ''} = {name}")
            for target, s in zip(targets, shapes):
                self.bind(target, TensorT(s))

    def chunk_unpack(self) -> None:
        shape = self.known_shape()
        axis = self.draw(st.integers(0, len(shape) - 1))
        chunks = self.draw(st.integers(2, 4))
        inner = shape[:axis] + (shape[axis] * chunks,) + shape[axis + 1:]
        targets = [self.fresh("g") for _ in range(chunks)]
        fn = self.choice(["chunk", "split"])
        call = (f"ops.chunk({self.tensor_expr(inner, 2)}, {chunks}, {axis})" if fn == "chunk"
                else f"np.split({self.tensor_expr(inner, 2)}, {chunks}, axis={axis})")
        self.emit(f"{', '.join(targets)} = {call}")
        for target in targets:
            self.bind(target, TensorT(shape))

    def list_new(self) -> None:
        shape = self.known_shape()
        name = self.fresh("l")
        if self.coin(0.7):
            self.emit(f"{name} = [{self.tensor_expr(shape, 1)}]")
            self.bind(name, ListT(shape, True))
        else:
            self.emit(f"{name}: List[Tensor] = []")
            self.bind(name, ListT(shape, False))
            return
        if self.coin(0.5):
            self.list_use(name)
            if "append-after-read" in self.features and self.coin(0.4):
                self.emit(f"{name}.append({self.tensor_expr(shape, 1)})")

    def appendable(self) -> list[str]:
        return self.of_type(lambda t: isinstance(t, ListT) and (
            not t.comprehension or "append-to-comprehension" in self.features))

    def append(self) -> None:
        name = self.choice(self.appendable())
        t = self.visible()[name]
        counters = self.loop_ints()
        conditional = "conditional-append" in self.features and counters and self.coin(0.5)
        if conditional:
            self.emit(f"if {self.choice(counters)} >= {self.draw(st.integers(1, 2))}:")
            self.indent += 1
            self.scopes.append(Scope())  # what the branch binds is not bound after it
        self.emit(f"{name}.append({self.tensor_expr(t.elem, 2)})")
        if self.coin(0.4):
            self.list_use(name)  # the list has an item here
        if conditional:
            self.scopes.pop()
            self.indent -= 1

    def list_use(self, name: str) -> None:
        """Reduce a list whose length is only known at run time to a tensor of known shape."""
        t = self.visible()[name]
        target = self.fresh("t")
        fn = self.choice(["ops.stack", "np.stack", "cat"])
        if fn == "cat":
            self.emit(f"{target} = np.concatenate({name}, axis=0).sum(axis=0)")
            self.bind(target, TensorT(t.elem[1:] or (1,)))
            if not t.elem[1:]:
                self.lines[-1] = self.lines[-1].replace(".sum(axis=0)", ".sum(axis=0, "
                                                        "keepdims=True)")
            return
        self.emit(f"{target} = {fn}({name}).{self.choice(['sum', 'mean'])}(axis=0)")
        self.bind(target, TensorT(t.elem))

    def call_helper(self) -> None:
        helper = self.choice(self.helpers)
        args = [self.tensor_expr(p.type.shape, 1) if isinstance(p.type, TensorT)
                else self.scalar_expr(p.type) for p in helper.params]
        name = self.fresh("t")
        self.emit(f"{name} = {helper.name}({', '.join(args)})")
        self.bind(name, TensorT(helper.returns))

    def nested(self, header: str, max_statements: int) -> None:
        self.emit(header)
        self.indent += 1
        self.scopes.append(Scope())
        self.budget -= 1
        self.block(max_statements)
        self.scopes.pop()
        self.indent -= 1

    def if_stmt(self) -> None:
        self.nested(f"if {self.bool_expr()}:", 3)
        if self.coin(0.3):
            self.nested(f"elif {self.bool_expr()}:", 2)
        if self.coin(0.6):
            self.nested("else:", 3)

    def for_stmt(self) -> None:
        i = self.fresh("i")
        kind = self.choice(["count", "count", "start", "down", "rows", "enumerate", "enumerate"])
        header, bind = self.loop_header(kind, i)
        self.emit(header)
        self.indent += 1
        self.scopes.append(Scope(dict(bind)))
        if i in bind:
            self.loop_counters.add(i)
        self.loop_depth += 1
        self.budget -= 1
        self.block(4)
        self.loop_depth -= 1
        self.scopes.pop()
        self.indent -= 1

    def loop_header(self, kind: str, i: str) -> tuple[str, dict[str, object]]:
        count = self.choice(["0", "1", "2", "3"] + self.of_type(lambda t: t == INT)[:2])
        if kind == "start":
            return f"for {i} in range(1, {count} + 1):", {i: INT}
        if kind == "down":
            return f"for {i} in range({count}, 0, -1):", {i: INT}
        if kind in ("rows", "enumerate"):
            shape = self.known_shape()
            if len(shape) >= 2:
                row = self.fresh("r")
                src = self.tensor_expr(shape, 1)
                if kind == "rows":
                    return f"for {row} in {src}:", {row: TensorT(shape[1:])}
                return (f"for {i}, {row} in enumerate(ops.unbind({src}, 0)):",
                        {i: INT, row: TensorT(shape[1:])})
        return f"for {i} in range({count}):", {i: INT}

    def while_stmt(self) -> None:
        w = self.fresh("w")
        self.emit(f"{w} = 0")
        self.bind(w, INT)
        bound = self.draw(st.integers(0, 3))
        cond = f"{w} < {bound}"
        if self.coin(0.5):
            cond += f" and {self.bool_expr(0)}"
        self.emit(f"while {cond}:")
        self.indent += 1
        self.scopes.append(Scope())
        self.emit(f"{w} += 1")  # first, so `continue` cannot skip it
        self.loop_depth += 1
        self.budget -= 1
        self.block(4)
        self.loop_depth -= 1
        self.scopes.pop()
        self.indent -= 1

    # -- feature statements (see FEATURES) --------------------------------------------------------
    def same_value_if(self) -> None:
        """Both arms assign existing values: the same one, or one each (no new computation)."""
        shape = self.known_shape()
        values = self.of_type(lambda t: isinstance(t, TensorT) and t.shape == shape)
        if not values:
            self.assign_new()
            return
        targets = self.assignable(shape)
        target = self.choice(targets) if targets and self.coin(0.7) else self.fresh("c")
        first = self.choice(values)
        others = [v for v in values if v != first]
        second = self.choice(others) if others and self.coin(0.5) else first
        self.emit(f"if {self.bool_expr()}:")
        self.emit(f"    {target} = {first}")
        self.emit("else:")
        self.emit(f"    {target} = {second}")
        self.budget -= 2
        self.bind(target, TensorT(shape))

    def dict_new(self) -> None:
        key = self.choice(["int", "str"])
        name = self.fresh("d")
        self.emit(f"{name}: Dict[{key}, Tensor] = {{}}")
        self.bind(name, DictT(key, ()))
        self.dict_write(name)

    def dict_write(self, name: str | None = None) -> None:
        """``d[key] = value``: a key already set keeps its shape; a new key is set only in this
        block (after an ``if`` it may be missing, so it is not read there)."""
        name = name or self.choice(self.of_type(lambda t: isinstance(t, DictT) and not t.argument))
        t = self.visible()[name]
        entries = dict(t.entries)
        if entries and self.coin(0.5):
            key = self.choice(sorted(entries, key=str))
        else:
            key = len(entries) if t.key == "int" else self.choice(["h", "c", "out", "w"])
        shape = entries.get(key) or self.known_shape()
        self.emit(f"{name}[{key!r}] = {self.tensor_expr(shape, 2)}")
        entries[key] = shape
        self.bind(name, DictT(t.key, tuple(entries.items())))

    def comprehension(self) -> None:
        lists = self.of_type(lambda t: isinstance(t, ListT) and t.nonempty)
        kind = self.choice(["columns", "rows", "scaled", "map"])
        if kind == "map":
            if lists:
                src = self.choice(lists)
                elem = self.visible()[src].elem
            else:
                elem = self.known_shape()
                src = f"[{self.tensor_expr(elem, 1)}, {self.tensor_expr(elem, 1)}]"
            v = self.fresh("v")
            self.scopes.append(Scope({v: TensorT(elem)}))
            expr = self.tensor_expr(elem, 1)
            self.scopes.pop()
            self.emit_list(f"[{expr} for {v} in {src}]", elem, None)
            return
        shape = self.known_shape()
        if kind == "scaled" or len(shape) < 2:
            n = self.draw(st.integers(1, 3))
            k = self.fresh("k")
            expr = f"{self.tensor_expr(shape, 1)} * float({k} + 1)"
            self.emit_list(f"[{expr} for {k} in range({n})]", shape, n)
            return
        k = self.fresh("k")
        src = self.tensor_expr(shape, 1)
        if kind == "columns":
            self.emit_list(f"[{src}[:, {k}] for {k} in range({shape[1]})]",
                           shape[:1] + shape[2:], shape[1])
        else:
            self.emit_list(f"[{src}[{k}] for {k} in range({shape[0]})]", shape[1:], shape[0])

    def emit_list(self, expr: str, elem: Shape, length: int | None) -> None:
        """Bind a list expression to a name, or unpack it when its length is known and small."""
        if length is not None and length <= 3 and self.coin(0.5):
            targets = [self.fresh("u") for _ in range(length)]
            self.emit(f"{', '.join(targets)}{',' if length == 1 else ''} = {expr}")
            for target in targets:
                self.bind(target, TensorT(elem))
            return
        name = self.fresh("l")
        self.emit(f"{name} = {expr}")
        self.bind(name, ListT(elem, length != 0, comprehension=True))

    def recurrence(self) -> None:
        """A leaky recurrence that keeps its later steps: a counted loop whose body updates a
        state and appends to a list when the step counter has passed a threshold; the list is
        stacked after the loop (it has ``steps - start`` items)."""
        states = self.assignable()
        if not states:
            self.assign_new()
            return
        state = self.choice(states)
        shape = self.visible()[state].shape
        steps, start = self.draw(st.integers(2, 4)), self.draw(st.integers(1, 2))
        start = min(start, steps - 1)
        name, t = self.fresh("l"), self.fresh("i")
        self.emit(f"{name}: List[Tensor] = []")
        self.emit(f"for {t} in range({steps}):")
        self.indent += 1
        self.scopes.append(Scope({t: INT}))
        self.emit(f"{state} = 0.7 * {state} + 0.3 * np.tanh({self.tensor_expr(shape, 2)})")
        self.emit(f"if {t} >= {start}:")
        item = f"{state}[:, 0]" if len(shape) >= 2 and self.coin(0.5) else state
        elem = shape[:1] + shape[2:] if item != state else shape
        self.emit(f"    {name}.append({item})")
        self.scopes.pop()
        self.indent -= 1
        self.budget -= 3
        self.bind(name, ListT(elem, True))
        axis = self.draw(st.integers(0, len(elem)))
        target = self.fresh("t")
        self.emit(f"{target} = np.stack({name}, axis={axis})")
        self.bind(target, TensorT(elem[:axis] + (steps - start,) + elem[axis:]))

    def tuple_of_lists(self) -> None:
        lists = self.of_type(lambda t: isinstance(t, ListT))
        shape = self.known_shape()
        if lists:
            first = self.choice(lists)
            first_t = self.visible()[first]
        else:
            first, first_t = f"[{self.tensor_expr(shape, 1)}]", ListT(shape, True)
        name = self.fresh("q")
        self.emit(f"{name} = ({first}, [{self.tensor_expr(shape, 1)}])")
        elems = (first_t, ListT(shape, True))
        if self.coin(0.5):
            targets = [self.fresh("l"), self.fresh("l")]
            self.emit(f"{targets[0]}, {targets[1]} = {name}")
            for target, t in zip(targets, elems):
                self.bind(target, t)
        else:
            self.bind(name, TupleT(elems))
            if self.coin(0.5):
                target = self.fresh("t")
                self.emit(f"{target} = {name}[1][{self.choice([0, -1])}]")
                self.bind(target, TensorT(shape))

    def break_continue(self) -> None:
        word = self.choice(["break", "continue"])
        self.emit(f"if {self.bool_expr(0)}:")
        self.emit(f"    {word}")

    def early_return(self) -> None:
        self.emit(f"if {self.bool_expr(0)}:")
        self.indent += 1
        self.write_return()
        self.indent -= 1

    def write_return(self) -> None:
        exprs = [self.tensor_output(r) if isinstance(r, tuple)
                 else self.list_expr(r) if isinstance(r, ListR) else self.scalar_expr(r)
                 for r in self.returns]
        if len(exprs) == 1:
            self.emit(f"return {exprs[0]}")
        else:
            self.emit(f"return {', '.join(exprs)}")


    def tensor_output(self, shape: Shape) -> str:
        """A tensor output of ``shape``, to which the latest values the body computed (tensors,
        lists' last items, dict entries) may be added as means: a value no output depends on is
        never checked, and most statements of a random program would otherwise be dead."""
        expr = self.tensor_expr(shape, 2)
        for value in self.latest_values()[-2:]:
            if self.coin(0.6):
                expr = f"({expr} + 0.5 * np.tanh({value}).mean())"
        return expr

    def latest_values(self) -> list[str]:
        """Expressions reading the values the body made, in the order it made them."""
        values = []
        for scope in self.scopes:
            for name, t in scope.names.items():
                if name in self.inputs:
                    continue
                if isinstance(t, TensorT):
                    values.append(name)
                elif isinstance(t, ListT) and t.nonempty and not self.differentiable:
                    # not in gradient programs: one more read of a list makes vjp refuse many
                    # of them ("its rank is unknown", "a list read by two differentiable ops"),
                    # and a refused program is not checked at all
                    values.append(f"{name}[{self.choice([0, -1])}]")
                elif isinstance(t, DictT) and t.entries and not t.argument:
                    values.append(f"{name}[{t.entries[-1][0]!r}]")
        return values

    def list_expr(self, r: ListR) -> str:
        """A list output: a list variable (any length, items of any shape) or a literal."""
        lists = self.of_type(lambda t: isinstance(t, ListT))  # items of any shape
        if lists and self.coin(0.8):
            return self.choice(lists)
        items = [self.tensor_expr(r.elem, 1) for _ in range(self.draw(st.integers(1, 3)))]
        return f"[{', '.join(items)}]"


def _annotation(returns: tuple[Shape | ScalarT | ListR, ...]) -> str:
    names = ["Tensor" if isinstance(r, tuple) else "List[Tensor]" if isinstance(r, ListR)
             else r.name for r in returns]
    return names[0] if len(names) == 1 else f"Tuple[{', '.join(names)}]"


def _write_function(draw, name: str, params: tuple[Param, ...], returns, dtype: str,
                    helpers: list[Helper], counter: list[int], budget: int,
                    differentiable: bool, features: frozenset[str],
                    global_arrays: dict[str, Shape] | None = None) -> list[str]:
    w = FunctionWriter(draw, dtype, helpers, counter, returns, budget, differentiable, features)
    for g, shape in (global_arrays or {}).items():
        w.bind(g, GlobalT(shape))
    for p in params:
        w.bind(p.name, p.type)
    w.inputs = set(w.visible())
    w.block(budget)
    w.write_return()
    signature = ", ".join(f"{p.name}: {p.annotation()}" for p in params)
    return [f"def {name}({signature}) -> {_annotation(returns)}:", *w.lines, ""]


def _draw_shape(draw) -> Shape:
    return tuple(draw(st.sampled_from(DIMS)) for _ in range(draw(st.integers(1, 3))))


def _draw_params(draw, prefix: str, scalars: bool, dicts: bool = False) -> tuple[Param, ...]:
    n_tensors = draw(st.integers(1, 3))
    params = [Param(f"{prefix}x{k}", TensorT(_draw_shape(draw))) for k in range(n_tensors)]
    if dicts and draw(st.integers(0, 2)) == 0:
        entries = tuple((f"w{k}", _draw_shape(draw)) for k in range(draw(st.integers(1, 2))))
        params.append(Param(f"{prefix}w", DictT("str", entries, argument=True)))
    if scalars:
        for t in draw(st.lists(st.sampled_from([INT, FLOAT, BOOL]), max_size=3, unique=True)):
            params.append(Param(f"{prefix}{t.name[0]}", t))
    return tuple(params)


def _draw_globals(draw, dtype: str) -> tuple[dict[str, Shape], list[str], list[str], list[str]]:
    """Module-level arrays: their shapes, definitions, in-place resets and in-place updates."""
    shapes, lines, resets, updates = {}, [], [], []
    for k in range(draw(st.integers(1, 2))):
        name, shape = f"G{k}", _draw_shape(draw)
        n = math.prod(shape)
        dims = ", ".join(map(str, shape))
        value = f"np.linspace(-1.0, 1.0, {n}).reshape({dims})"
        shapes[name] = shape
        lines.append(f"{name} = {value}.astype(np.{dtype})")
        resets.append(f"{name}[...] = {value}")
        updates.append(draw(st.sampled_from([f"{name} += 0.25", f"{name}[0] = 1.5",
                                             f"{name} *= -0.5"])))
    return shapes, lines, resets, updates


def _draw_returns(draw, params: tuple[Param, ...], differentiable: bool,
                  features: frozenset[str]) -> tuple[Shape | ScalarT | ListR, ...]:
    shapes = [p.type.shape for p in params if isinstance(p.type, TensorT)]

    def one():
        if draw(st.integers(0, 5)) == 0:
            return draw(st.sampled_from([INT, FLOAT, BOOL]))
        shape = (draw(st.sampled_from(shapes)) if draw(st.integers(0, 3)) > 0
                 else tuple(draw(st.sampled_from(DIMS)) for _ in range(draw(st.integers(1, 2)))))
        if "list-output" in features and draw(st.integers(0, 1)) == 0:
            return ListR(shape)
        return shape

    returns = tuple(one() for _ in range(draw(st.integers(1, 3))))
    if differentiable and not any(isinstance(r, (tuple, ListR)) for r in returns):
        returns = (shapes[0],) + returns[1:]  # something to differentiate
    return returns


@st.composite
def programs(draw, max_helpers: int = 2, max_statements: int = 10,
             differentiable: bool = False, features: frozenset[str] | None = None) -> Program:
    """A random module: helpers and an entry function ``main`` (see the module docstring).

    ``differentiable=True`` leaves out float32 round trips and ``float(tensor)``, through which
    finite differences and ``vjp`` rightly disagree. ``features`` names the ``FEATURES`` that
    may be drawn (default: those not pending, ``default_features``).
    """
    if features is None:
        features = default_features(differentiable)
    unknown = set(features) - FEATURES
    if unknown:
        raise ValueError(f"unknown fuzzing features {sorted(unknown)}")
    # gradients are checked in float64 only: float32 finite differences have too few digits
    dtype = "float64" if differentiable else draw(st.sampled_from(["float64", "float32"]))
    counter = [0]
    helpers: list[Helper] = []
    lines = ["from typing import Dict, List, Tuple", "", "import numpy as np", "",
             "from script import Tensor, ops", "", ""]
    global_arrays: dict[str, Shape] = {}
    resets: list[str] = []
    updates: list[str] = []
    if "global-array" in features and draw(st.integers(0, 2)) == 0:
        global_arrays, definitions, resets, updates = _draw_globals(draw, dtype)
        lines[-2:-2] = ["", *definitions]
    for k in range(draw(st.integers(0, max_helpers))):
        params = _draw_params(draw, "a", scalars=True)
        ret = draw(st.sampled_from([p.type.shape for p in params
                                    if isinstance(p.type, TensorT)]))
        name = f"helper{k}"
        lines += _write_function(draw, name, params, (ret,), dtype, list(helpers), counter, 4,
                                 differentiable, features)
        lines.append("")
        helpers.append(Helper(name, params, ret))
    params = _draw_params(draw, "", scalars=True, dicts="dict-argument" in features)
    returns = _draw_returns(draw, params, differentiable, features)
    lines += _write_function(draw, "main", params, returns, dtype, helpers, counter,
                             max_statements, differentiable, features, global_arrays)
    return Program("\n".join(lines), "main", params, dtype,
                   all(isinstance(r, tuple) for r in returns), tuple(resets), tuple(updates))
