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

from hypothesis import strategies as st

from tests.fuzz.expr_gen import ExprWriter
from tests.fuzz.feature_gen import FeatureWriter
from tests.fuzz.program_types import (
    BOOL,
    DIMS,
    FEATURES,
    FLOAT,
    INT,
    DictT,
    GlobalT,
    Helper,
    ListR,
    ListT,
    Param,
    Program,
    ScalarT,
    Scope,
    Shape,
    TensorT,
    TupleT,
    _shapes_in,
    default_features,
)


class FunctionWriter(FeatureWriter, ExprWriter):
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
        if "in-place-write" in f:
            makers += [self.in_place_write]
        if "fancy-index" in f:
            makers += [self.fancy_index]
        if "number-accumulator" in f and nested and (
                self.dtype == "float64" or "float32-accumulator" in f):
            makers += [self.number_accumulator]
        if "tensor-containers" in f and nested:
            makers += [self.tensor_containers]
        if "batched-recurrence" in f and nested:
            makers += [self.batched_recurrence]
        if "augmented-alias" in f:
            makers += [self.augmented_alias]
        if "item-update" in f:
            makers += [self.item_update]
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
