"""The op reference: a Markdown table of every op in the registry, generated from the registry.

``python -m script.ops.opdocs`` prints it; ``python -m script.ops.opdocs --write`` writes
``docs/ops.md``.
A test fails when ``docs/ops.md`` differs from what this generates.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

from ir.registry import OpDef, all_ops

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "ops.md"
"""Where ``--write`` puts the reference."""

_SECTION_TITLES = {
    "prim": "Structure (`prim::`)",
    "elementwise": "Elementwise (`tensor::`, fusible)",
    "linalg": "Linear algebra (`tensor::`)",
    "reductions": "Reductions and normalisations (`tensor::`)",
    "shape": "Shapes, indexing, splitting and joining (`tensor::`)",
    "nn": "Neural-network ops (`tensor::`)",
    "creation": "Creation (`tensor::`)",
    "numpy_ops": "numpy functions (`tensor::`)",
    "indexing": "Integer-array indexing (`tensor::`)",
}

_HEADER = """\
# Op reference

Generated from the op registry by `python -m script.ops.opdocs --write`; do not edit by hand.

Every `tensor::NAME` op is also the eager function `script.ops.NAME`, taking the arguments below
in the same order with the same names and defaults; it runs on numpy and CuPy arrays (and on
Python numbers where the kind is `operand`). `ops.mm` is an alias of `ops.matmul`, and
`ops.manual_seed(seed)` makes `ops.dropout` repeatable.

Argument kinds: `Tensor` an array; `operand` an array or a Python number; `ints` an int or a
tuple/list of ints; `Tensor[]` a list or tuple of arrays; a trailing `?` also accepts None.
Traits: `pure` (no effects: may be merged or dropped), `elementwise` (fusible), `commutative`,
`side_effects` (kept in order), `fresh` (a new mutable object: may be dropped, never merged),
`zero_derivative` (no derivative flows through it: comparisons, rounding, shape queries),
`shape_only` (reads only its arrays' shapes and dtypes, not their elements),
`view` (the result may share memory with an input; other `tensor::` ops make new arrays),
`array_result` / `scalar_result` (a 0-d result is an array / numpy's scalar; an elementwise op's
is numpy's scalar unless `array_result`).
"""


def section_of(op: OpDef) -> str:
    """The section an op is listed under: the ``ir.ops`` module that declared it.

    An op records its type rule; the rule's module names the declaring module, except for the
    shared rules in ``ir.ops.rules``, which only elementwise ops use directly.
    """
    namespace = op.kind.split("::", 1)[0]
    if namespace != "tensor":
        return namespace
    module = getattr(op.infer, "__module__", "") or ""
    name = module.rsplit(".", 1)[-1]
    return "elementwise" if name == "rules" else name


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _code_list(items: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{_cell(i)}`" for i in items)


def _row(op: OpDef) -> str:
    cells = [f"`{op.kind}`", f"`{_cell(op.signature)}`", _code_list(op.spellings),
             _code_list(sorted(op.traits)), _cell(op.doc)]
    return "| " + " | ".join(cells) + " |"


def generate_op_reference() -> str:
    """The Markdown op reference: one table per section, ops sorted by kind."""
    sections: dict[str, list[OpDef]] = defaultdict(list)
    for op in all_ops():
        sections[section_of(op)].append(op)
    order = [s for s in _SECTION_TITLES if s in sections]
    order += sorted(s for s in sections if s not in _SECTION_TITLES)
    lines = [_HEADER]
    for section in order:
        title = _SECTION_TITLES.get(section, f"`{section}` (`tensor::`)")
        lines.append(f"## {title}\n")
        lines.append("| kind | signature | Python spellings | traits | description |")
        lines.append("|---|---|---|---|---|")
        lines.extend(_row(op) for op in sections[section])
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = generate_op_reference()
    if "--write" in argv:
        DOC_PATH.parent.mkdir(parents=True, exist_ok=True)
        DOC_PATH.write_text(text, encoding="utf-8")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
