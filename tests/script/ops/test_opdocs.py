"""The generated op reference stays in sync with the registry, and every tensor op has an eager
``script.ops`` function with the schema's argument names and defaults."""

from __future__ import annotations

import inspect

import pytest

from ir.registry import NO_DEFAULT, all_ops
from script import ops
from script.ops.opdocs import DOC_PATH, generate_op_reference

TENSOR_OPS = [op for op in all_ops() if op.kind.startswith("tensor::")]


def test_docs_ops_md_is_the_generated_reference():
    assert DOC_PATH.exists(), "run `python -m script.ops.opdocs --write`"
    assert DOC_PATH.read_text(encoding="utf-8") == generate_op_reference(), (
        "docs/ops.md is stale: run `python -m script.ops.opdocs --write`")


def test_reference_lists_every_op_once():
    text = generate_op_reference()
    for op in all_ops():
        assert text.count(f"| `{op.kind}` | `{op.kind}(") == 1, op.kind
    matmul_row = next(line for line in text.splitlines() if line.startswith("| `tensor::matmul`"))
    assert "`@`" in matmul_row and "`pure`" in matmul_row


@pytest.mark.parametrize("op", TENSOR_OPS, ids=lambda op: op.name)
def test_every_tensor_op_has_an_eager_function_with_the_schema_arguments(op):
    fn = getattr(ops, op.name, None)
    assert callable(fn), f"script.ops has no {op.name}"
    params = list(inspect.signature(fn).parameters.values())
    assert [p.name for p in params] == [a.name for a in op.args]
    for k, (param, arg) in enumerate(zip(params, op.args)):
        expected = inspect.Parameter.empty if arg.default is NO_DEFAULT else arg.default
        assert param.default == expected, f"{op.name}({arg.name}=...)"
        repeats = op.variadic and k == len(op.args) - 1  # ``*operands``
        assert param.kind is (inspect.Parameter.VAR_POSITIONAL if repeats
                              else inspect.Parameter.POSITIONAL_OR_KEYWORD)


def test_mm_is_documented_as_matmul():
    assert ops.mm is ops.matmul
    assert "ops.mm" in generate_op_reference()
