"""Expressions of the program generator: well-typed scalar and tensor expressions of a known
shape, drawn from hypothesis (a mixin of ``FunctionWriter``, which holds the names in scope)."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from tests.fuzz.program_types import (
    BOOL,
    DIMS,
    FLOAT,
    INT,
    KINKED,
    DictT,
    ListT,
    ScalarT,
    Shape,
    TensorT,
    TupleT,
)


class ExprWriter:
    """Writes expressions; ``FunctionWriter`` supplies ``draw``, the scopes and the choices."""

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
