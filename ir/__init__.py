"""rnnscript's SSA IR: types, graphs, the op registry, text printing and parsing, verification."""

from typing import Any

from ir.core import (
    CONSTANT,
    SUBGRAPH,
    Block,
    Graph,
    Node,
    SourceRange,
    Use,
    Value,
    clone_block_into,
    clone_node,
)
from ir.errors import IRError, ParseError, VerifyError
from ir.registry import (
    ALIASES,
    NOT_CONSTANT,
    READS,
    REGISTRY,
    WRITES,
    OpDef,
    ShapeError,
    all_ops,
    const,
    constant_of,
    effects_on_input,
    infer_types,
    lookup,
    op_def,
)
from ir.types import (
    ANY,
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    TENSOR,
    AnyType,
    ClassType,
    DictType,
    ListType,
    OptionalType,
    ScalarType,
    TensorType,
    TupleType,
    Type,
    holds_mutable,
    is_mutable,
    is_subtype,
    strip_optional,
    unify,
)


def parse(text: str, constants: Any = None) -> Graph:
    """Read a graph from the text ``str(graph)`` prints (subgraph sections included);
    ``constants`` resolves ``array(..., ref="name")`` references (``ir.parser.parse``)."""
    from ir.parser import parse as _parse
    return _parse(text, constants)


__all__ = [
    "ALIASES", "ANY", "BOOL", "CONSTANT", "FLOAT", "INT", "NONE", "NOT_CONSTANT", "READS",
    "REGISTRY", "STR", "SUBGRAPH", "TENSOR", "WRITES", "AnyType", "Block", "ClassType",
    "DictType", "Graph", "IRError", "ListType", "Node", "OpDef", "OptionalType", "ParseError",
    "ScalarType", "ShapeError", "SourceRange", "TensorType", "TupleType", "Type", "Use", "Value",
    "VerifyError", "all_ops", "clone_block_into", "clone_node", "const", "constant_of",
    "effects_on_input", "holds_mutable", "infer_types", "is_mutable", "is_subtype", "lookup",
    "op_def", "parse", "strip_optional", "unify",
]
