"""Hypothesis strategies for random valid IR graphs.

``graphs()`` builds graphs with typed inputs, elementwise ops (output types from the registry's
rules), constants of every attribute kind, nested ``prim::If`` / ``prim::Loop`` with carried values,
tuples, lists and ``prim::FusionGroup`` nodes wrapping an elementwise subgraph. Other test modules
may import it (``from tests.ir.strategies import graphs``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from ir import (
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    TENSOR,
    AnyType,
    ClassType,
    DictType,
    Graph,
    ListType,
    OptionalType,
    ShapeError,
    SourceRange,
    TensorType,
    TupleType,
    Type,
    Value,
    all_ops,
    infer_types,
)
from ir.constants import constant_type
from ir.core import Block

HINTS = ["x", "h", "c", "gates", "x.1", "0", "3", "a b", "y.2.1", "", None, None, None]
"""Name hints, some repeated, numeric, dotted or with characters the printer must clean."""

SHAPES: list[tuple[int | None, ...] | None] = [None, (), (3,), (2, 3), (1, 3), (None, 3), (2, 1)]

scalar_types = st.sampled_from([INT, FLOAT, BOOL])
tensor_types = st.builds(
    TensorType, st.sampled_from([None, "float32", "float64", "int64", "bool"]),
    st.sampled_from(SHAPES), st.sampled_from([None, None, "cpu", "cuda"]))
value_types: st.SearchStrategy[Type] = st.recursive(
    st.one_of(tensor_types, scalar_types, st.sampled_from([STR, NONE, AnyType()]),
              st.just(ClassType("Cell"))),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda ts: TupleType(tuple(ts))),
        inner.map(ListType), inner.map(OptionalType),
        st.builds(DictType, st.sampled_from([STR, INT]), inner)),
    max_leaves=4)

_small_floats = st.floats(allow_nan=True, allow_infinity=True)
_scalars = st.one_of(st.integers(-2**70, 2**70), _small_floats, st.booleans(), st.none(),
                     st.text(max_size=8))
attribute_values: st.SearchStrategy[Any] = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.lists(inner, max_size=3).map(tuple)),
    max_leaves=6)


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    """Small arrays (printed inline) and, rarely, large ones (printed elided, read as zeros)."""
    dtype = draw(st.sampled_from(["float32", "float64", "float16", "int64", "int32", "bool"]))
    if draw(st.integers(0, 9)) == 0:
        return np.zeros((9, 8), dtype=dtype)
    shape = draw(st.sampled_from([(), (0,), (3,), (2, 2), (1, 2, 2)]))
    n = int(np.prod(shape))
    if dtype == "bool":
        items: list[Any] = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    elif dtype.startswith("int"):
        items = draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n))
    else:
        items = draw(st.lists(st.floats(width=16 if dtype == "float16" else 32),
                              min_size=n, max_size=n))
    return np.array(items, dtype=dtype).reshape(shape)


def elementwise_kinds() -> list[str]:
    """Registry ops that take only tensor-or-number operands (tensor::add, tensor::tanh, ...)."""
    return [op.kind for op in all_ops() if op.is_elementwise and not op.variadic
            and all(a.kind == "operand" for a in op.args)]


class _Maker:
    """Draws nodes into a graph; ``env`` lists the values visible at the insertion point."""

    def __init__(self, draw: st.DrawFn, graph: Graph, depth: int, fusion_depth: int):
        self.draw = draw
        self.graph = graph
        self.depth = depth
        self.fusion_depth = fusion_depth
        self.kinds = elementwise_kinds()

    def hint(self) -> str | None:
        return self.draw(st.sampled_from(HINTS))

    def source(self) -> SourceRange | None:
        if self.draw(st.booleans()):
            return None
        return SourceRange(self.draw(st.sampled_from(["cell.py", "my dir/lstm.py", "C:/a.py"])),
                           self.draw(st.integers(1, 500)), self.draw(st.integers(0, 80)))

    def add(self, block: Block, kind: str, inputs: list[Value], types: list[Type],
            **kw: Any) -> Any:
        node = self.graph.create(kind, inputs, types, source=self.source(),
                                 names=[self.hint() for _ in types], **kw)
        return block.append(node)

    def fill(self, block: Block, env: list[Value], max_nodes: int) -> None:
        actions = [self.elementwise, self.constant, self.tuple, self.list]
        if self.depth > 0:
            actions += [self.if_node, self.loop_node]
        if self.fusion_depth > 0:
            actions.append(self.fusion_group)
        for _ in range(self.draw(st.integers(0, max_nodes))):
            self.draw(st.sampled_from(actions))(block, env)

    def pick(self, env: list[Value], where: Any = None) -> Value | None:
        pool = [v for v in env if where is None or where(v.type)]
        return self.draw(st.sampled_from(pool)) if pool else None

    def elementwise(self, block: Block, env: list[Value]) -> None:
        kind = self.draw(st.sampled_from(self.kinds))
        operand = lambda t: isinstance(t, TensorType) or t in (INT, FLOAT, BOOL)
        from ir import op_def
        inputs = [self.pick(env, operand) for _ in op_def(kind).args]
        if any(v is None for v in inputs):
            return
        node = self.graph.create(kind, inputs, [], source=self.source())  # type: ignore[arg-type]
        try:
            types = infer_types(node)
        except ShapeError:
            node.remove_all_inputs()
            return
        for t in types:
            node.add_output(t, self.hint())
        block.append(node)
        env.extend(node.outputs)

    def constant(self, block: Block, env: list[Value]) -> None:
        value = self.draw(st.one_of(attribute_values, arrays()))
        node = self.add(block, "prim::Constant", [], [constant_type(value)],
                        attrs={"value": value})
        env.extend(node.outputs)

    def tuple(self, block: Block, env: list[Value]) -> None:
        items = self.draw(st.lists(st.sampled_from(env), max_size=3)) if env else []
        t = TupleType(tuple(v.type for v in items))
        node = self.add(block, "prim::TupleConstruct", items, [t])
        env.extend(node.outputs)
        if self.draw(st.booleans()):
            env.extend(self.add(block, "prim::TupleUnpack", node.outputs, list(t.elements)).outputs)

    def list(self, block: Block, env: list[Value]) -> None:
        first = self.pick(env)
        if first is None or self.draw(st.booleans()):
            env.extend(self.add(block, "prim::ListConstruct", [], [ListType(TENSOR)]).outputs)
            return
        same = [v for v in env if v.type == first.type]
        items = self.draw(st.lists(st.sampled_from(same), min_size=1, max_size=3))
        env.extend(self.add(block, "prim::ListConstruct", items, [ListType(first.type)]).outputs)

    def condition(self, block: Block, env: list[Value]) -> Value:
        cond = self.pick(env, lambda t: t == BOOL)
        if cond is None:
            cond = self.add(block, "prim::Constant", [], [BOOL], attrs={"value": True}).output
            env.append(cond)
        return cond

    def nested(self, block: Block, env: list[Value]) -> list[Value]:
        inner_env = list(env)
        self.depth -= 1
        self.fill(block, inner_env, 4)
        self.depth += 1
        return inner_env

    def if_node(self, block: Block, env: list[Value]) -> None:
        cond = self.condition(block, env)
        outs = self.draw(st.lists(st.sampled_from(env), max_size=2))
        types = [v.type for v in outs]
        node = self.add(block, "prim::If", [cond], types, nblocks=2)
        for branch in node.blocks:
            inner_env = self.nested(branch, env)
            branch.set_returns([self.pick(inner_env, lambda t, ty=ty: t == ty) for ty in types])
        env.extend(node.outputs)

    def loop_node(self, block: Block, env: list[Value]) -> None:
        trips = self.add(block, "prim::Constant", [], [INT],
                         attrs={"value": self.draw(st.integers(0, 5))}).output
        cond = self.condition(block, env)
        carried = self.draw(st.lists(st.sampled_from(env), max_size=2))
        types = [v.type for v in carried]
        node = self.add(block, "prim::Loop", [trips, cond, *carried], types, nblocks=1)
        body = node.blocks[0]
        params = [body.add_param(INT, "i")] + [body.add_param(t, self.hint()) for t in types]
        inner_env = self.nested(body, env + params)
        next_cond = self.condition(body, inner_env)
        body.set_returns([next_cond] + [self.pick(inner_env, lambda t, ty=ty: t == ty)
                                        for ty in types])  # type: ignore[list-item]
        env.extend(node.outputs)

    def fusion_group(self, block: Block, env: list[Value]) -> None:
        inputs = self.draw(st.lists(st.sampled_from(env), min_size=1, max_size=3)) if env else []
        sub = Graph()
        sub_env = [sub.add_input(v.type, self.hint()) for v in inputs]
        maker = _Maker(self.draw, sub, 0, self.fusion_depth - 1)
        maker.fill(sub.block, sub_env, 5)
        results = self.draw(st.lists(st.sampled_from(sub_env), max_size=2)) if sub_env else []
        sub.set_outputs(results)
        kind = self.draw(st.sampled_from(["prim::FusionGroup", "prim::DifferentiableGraph"]))
        attrs: dict[str, Any] = {"Subgraph": sub}
        if self.draw(st.booleans()):
            attrs["note"] = self.draw(attribute_values)
        node = self.add(block, kind, inputs, [v.type for v in results], attrs=attrs)
        env.extend(node.outputs)


@st.composite
def graphs(draw: st.DrawFn, max_nodes: int = 10, depth: int = 2, fusion_depth: int = 2) -> Graph:
    """A random valid graph (every value defined before use, block arities right)."""
    g = Graph()
    maker = _Maker(draw, g, depth, fusion_depth)
    env = [g.add_input(draw(value_types), maker.hint()) for _ in range(draw(st.integers(0, 4)))]
    maker.fill(g.block, env, max_nodes)
    g.set_outputs(draw(st.lists(st.sampled_from(env), max_size=3)) if env else [])
    return g
