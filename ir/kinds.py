"""Names for the op kinds the compiler's own code builds or matches on.

Code that tests ``node.kind == LOOP`` imports the name from here instead of spelling the string
again. Every name but the two block sentinels is a kind declared in ``ir.registry`` (a test checks
it, and that every ``"ns::name"`` literal in the source is a declared kind).
"""

from __future__ import annotations

# -- block sentinels (not ops: they hold a block's parameters and results) ------------------------
PARAM = "prim::Param"
RETURN = "prim::Return"
SENTINELS = frozenset({PARAM, RETURN})
"""The kinds of the nodes every block starts and ends with; not in the registry."""

# -- structure -----------------------------------------------------------------------------------
CONSTANT = "prim::Constant"
IF = "prim::If"
LOOP = "prim::Loop"
CALL = "prim::CallFunction"
FUSION_GROUP = "prim::FusionGroup"
DIFFERENTIABLE_GRAPH = "prim::DifferentiableGraph"
UNINITIALIZED = "prim::Uninitialized"

# -- containers ----------------------------------------------------------------------------------
TUPLE_CONSTRUCT = "prim::TupleConstruct"
LIST_CONSTRUCT = "prim::ListConstruct"
LIST_APPEND = "prim::ListAppend"
LIST_EXTEND = "prim::ListExtend"
LIST_INDEX = "prim::ListIndex"
LIST_POP = "prim::ListPop"
LIST_UNPACK = "prim::ListUnpack"
LIST_LEN = "prim::len"
TUPLE_INDEX = "prim::TupleIndex"
TUPLE_UNPACK = "prim::TupleUnpack"
RAISE = "prim::RaiseException"

# -- tensor ops passes rewrite --------------------------------------------------------------------
ADD = "tensor::add"
SUB = "tensor::sub"
MATMUL = "tensor::matmul"
CAT = "tensor::cat"
STACK = "tensor::stack"
RESHAPE = "tensor::reshape"
SELECT = "tensor::select"
UNBIND = "tensor::unbind"
SELECT_PUT = "tensor::select_put"
SELECT_BACKWARD = "tensor::select_backward"
ZEROS = "tensor::zeros"
SIZE = "tensor::size"
TRANSPOSE = "tensor::transpose"
CONTIGUOUS = "tensor::contiguous"
COPY = "tensor::copy"
EMPTY = "tensor::empty"
WRITE_SLOT = "tensor::write_slot"
LAYER_NORM = "tensor::layer_norm"
