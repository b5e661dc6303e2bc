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


@dataclass(frozen=True)
class TupleT:
    """A tuple of tensors."""

    elems: tuple[Shape, ...]


INT, FLOAT, BOOL = ScalarT("int"), ScalarT("float"), ScalarT("bool")

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
        return "Tensor" if isinstance(self.type, TensorT) else self.type.name


@dataclass(frozen=True)
class Helper:
    """A generated function the entry function (or a later helper) may call."""

    name: str
    params: tuple[Param, ...]
    returns: Shape


@dataclass(frozen=True)
class Program:
    """A generated module: its source, the entry function's name and parameters."""

    source: str
    entry: str
    params: tuple[Param, ...]
    dtype: str
    returns_only_tensors: bool

    def make_args(self, seed: int) -> tuple:
        """Random arguments for the entry function (ints stay small: they count loop trips)."""
        rng = np.random.default_rng(seed)
        args = []
        for p in self.params:
            t = p.type
            if isinstance(t, TensorT):
                args.append(rng.standard_normal(t.shape).astype(self.dtype))
            elif t == INT:
                args.append(int(rng.integers(0, 4)))
            elif t == FLOAT:
                args.append(float(np.round(rng.uniform(-2, 2), 3)))
            else:
                args.append(bool(rng.integers(0, 2)))
        return tuple(args)


@dataclass
class Scope:
    """Names visible in one block, with their types."""

    names: dict[str, object] = field(default_factory=dict)


class FunctionWriter:
    """Writes one function's body, drawing every choice from hypothesis."""

    def __init__(self, draw, dtype: str, helpers: list[Helper], counter: list[int],
                 returns: tuple[Shape | ScalarT, ...], budget: int, differentiable: bool = False):
        self.draw = draw
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
        shapes = sorted({t.shape for t in self.visible().values() if isinstance(t, TensorT)})
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
        pool = exact + tuples + lists
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
                  self.tuple_stmt, self.chunk_unpack, self.list_new]
        makers += [self.if_stmt, self.for_stmt, self.while_stmt] if nested else []
        makers += [self.append] if self.of_type(lambda t: isinstance(t, ListT)) else []
        makers += [self.call_helper] if self.helpers else []
        makers += [self.break_continue, self.break_continue] if self.loop_depth else []
        makers += [self.early_return] if self.indent > 1 else []
        self.choice(makers)()

    def assign_new(self) -> None:
        shape = self.known_shape()
        name = self.fresh("t")
        self.emit(f"{name} = {self.tensor_expr(shape, self.draw(st.integers(1, 3)))}")
        self.bind(name, TensorT(shape))

    def reassign(self) -> None:
        names = self.of_type(lambda t: isinstance(t, TensorT))
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

    def append(self) -> None:
        name = self.choice(self.of_type(lambda t: isinstance(t, ListT)))
        t = self.visible()[name]
        self.emit(f"{name}.append({self.tensor_expr(t.elem, 2)})")
        if self.coin(0.4):
            self.list_use(name)

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
        kind = self.choice(["count", "count", "start", "down", "rows", "enumerate"])
        header, bind = self.loop_header(kind, i)
        self.emit(header)
        self.indent += 1
        self.scopes.append(Scope(dict(bind)))
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
        exprs = [self.tensor_expr(r, 2) if isinstance(r, tuple) else self.scalar_expr(r)
                 for r in self.returns]
        if len(exprs) == 1:
            self.emit(f"return {exprs[0]}")
        else:
            self.emit(f"return {', '.join(exprs)}")


def _annotation(returns: tuple[Shape | ScalarT, ...]) -> str:
    names = ["Tensor" if isinstance(r, tuple) else r.name for r in returns]
    return names[0] if len(names) == 1 else f"Tuple[{', '.join(names)}]"


def _write_function(draw, name: str, params: tuple[Param, ...], returns, dtype: str,
                    helpers: list[Helper], counter: list[int], budget: int,
                    differentiable: bool) -> list[str]:
    w = FunctionWriter(draw, dtype, helpers, counter, returns, budget, differentiable)
    for p in params:
        w.bind(p.name, p.type)
    w.block(budget)
    w.write_return()
    signature = ", ".join(f"{p.name}: {p.annotation()}" for p in params)
    return [f"def {name}({signature}) -> {_annotation(returns)}:", *w.lines, ""]


def _draw_params(draw, prefix: str, scalars: bool) -> tuple[Param, ...]:
    n_tensors = draw(st.integers(1, 3))
    params = [Param(f"{prefix}x{k}", TensorT(tuple(draw(st.sampled_from(DIMS))
                                                   for _ in range(draw(st.integers(1, 3))))))
              for k in range(n_tensors)]
    if scalars:
        for t in draw(st.lists(st.sampled_from([INT, FLOAT, BOOL]), max_size=3, unique=True)):
            params.append(Param(f"{prefix}{t.name[0]}", t))
    return tuple(params)


@st.composite
def programs(draw, max_helpers: int = 2, max_statements: int = 10,
             differentiable: bool = False) -> Program:
    """A random module: helpers and an entry function ``main`` (see the module docstring).

    ``differentiable=True`` leaves out float32 round trips and ``float(tensor)``, through which
    finite differences and ``vjp`` rightly disagree.
    """
    # gradients are checked in float64 only: float32 finite differences have too few digits
    dtype = "float64" if differentiable else draw(st.sampled_from(["float64", "float32"]))
    counter = [0]
    helpers: list[Helper] = []
    lines = ["from typing import List, Tuple", "", "import numpy as np", "",
             "from script import Tensor, ops", "", ""]
    for k in range(draw(st.integers(0, max_helpers))):
        params = _draw_params(draw, "a", scalars=True)
        ret = draw(st.sampled_from([p.type.shape for p in params
                                    if isinstance(p.type, TensorT)]))
        name = f"helper{k}"
        lines += _write_function(draw, name, params, (ret,), dtype, list(helpers), counter, 4,
                                 differentiable)
        lines.append("")
        helpers.append(Helper(name, params, ret))
    params = _draw_params(draw, "", scalars=True)
    n_returns = draw(st.integers(1, 3))
    shapes = [p.type.shape for p in params if isinstance(p.type, TensorT)]
    returns = tuple(draw(st.sampled_from([INT, FLOAT, BOOL])) if draw(st.integers(0, 5)) == 0
                    else draw(st.sampled_from(shapes)) if draw(st.integers(0, 3)) > 0
                    else tuple(draw(st.sampled_from(DIMS)) for _ in range(draw(st.integers(1, 2))))
                    for _ in range(n_returns))
    if differentiable and not any(isinstance(r, tuple) for r in returns):
        returns = (shapes[0],) + returns[1:]  # something to differentiate
    lines += _write_function(draw, "main", params, returns, dtype, helpers, counter,
                             max_statements, differentiable)
    return Program("\n".join(lines), "main", params, dtype,
                   all(isinstance(r, tuple) for r in returns))
