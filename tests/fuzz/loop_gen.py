"""A hypothesis strategy for recurrent layers over a batch: programs whose one loop the compiler
cannot unroll (its trip count is an int argument, or a constant of 9 or 12 steps) and runs
natively, often over ranges of batch rows at once (the ``row-ranges`` configuration).

``recurrent_programs()`` draws an entry function ``main(x, h0, w, u, bias, n)``: a (B, H) state
``h`` (B >= 2), sometimes a second state ``c``, carried through ``for t in range(n)`` (or a
constant trip count: its saved values are stacks, its kept steps written into slots). Each step
computes ``x @ w + h @ u (+ bias)`` and one of the cells the corpus has (tanh, a gated update, an
LSTM-like pair, a normalized row, a softmax over the row), sometimes plus a random term from the
program generator (which may read the whole batch: a loop that then runs over every row at
once). Steps are kept by appends, by writes ``buf[t] = h`` into a buffer the function made, by
appends of a value only the list keeps (constant trip counts: ``ys.append(np.tanh(h) * 0.5 +
pre * 0.25)``, stacked after the loop), or not at all; a number or a per-unit sum is carried
(``loss += np.sum(h * h)``, ``acc += h.mean(axis=0)``). The returned values are the states, the
kept steps and the sums.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tests.fuzz.program_gen import FunctionWriter
from tests.fuzz.program_types import INT, Param, Program, Scope, TensorT

CELLS = ("tanh", "gated", "lstm", "norm", "softmax")


@st.composite
def recurrent_programs(draw, differentiable: bool = False) -> Program:
    """A module with one recurrent ``main`` (see the module docstring)."""
    dtype = "float64" if differentiable else draw(st.sampled_from(["float64", "float32"]))
    b, h, i = draw(st.integers(2, 6)), draw(st.integers(1, 5)), draw(st.integers(1, 4))
    params = (Param("x", TensorT((b, i))), Param("h0", TensorT((b, h))),
              Param("w", TensorT((i, h))), Param("u", TensorT((h, h))),
              Param("bias", TensorT((h,))), Param("n", INT))
    writer = FunctionWriter(draw, dtype, [], [0], (), 0, differentiable, frozenset())
    for p in params:
        writer.bind(p.name, p.type)
    writer.inputs = set(writer.visible())
    cell = draw(st.sampled_from(CELLS))
    keep = draw(st.sampled_from(["list", "buffer", "none", "made"]))
    # a constant trip count (a counted loop) where the steps are kept in a list or not at all
    # (a buffer of a constant length is carried through the loop: no row ranges)
    trips = "n" if keep == "buffer" else draw(st.sampled_from(
        ["9", "12"] if keep == "made" else ["n", "n", "9"]))
    carry = draw(st.sampled_from(["number", "rows", "none"]))
    lines = ["    h = 0.5 * h0", "    c = 0.25 * h0"]
    if keep == "list":
        lines.append("    hs = [h]")
    elif keep == "buffer":
        lines.append(f"    buf = np.zeros((n, {b}, {h}), dtype=np.{dtype})")
    elif keep == "made":
        lines.append("    ys: List[Tensor] = []")
    if carry == "number":
        lines.append("    loss = 0.0" if dtype == "float64" else
                     f"    loss = np.zeros((), dtype=np.{dtype})")
    elif carry == "rows":
        lines.append(f"    acc = np.zeros(({h},), dtype=np.{dtype})")
    lines.append(f"    for t in range({trips}):")
    product = draw(st.sampled_from(["x @ w + h @ u", "np.dot(h, u) + np.dot(x, w)",
                                    "h @ u + x @ w"]))
    pre = product + (" + bias" if draw(st.booleans()) else "")
    if draw(st.integers(0, 2)) == 0:  # a random term, which may read every row
        writer.scopes.append(Scope({"h": TensorT((b, h)), "t": INT}))
        pre += f" + 0.25 * np.tanh({writer.tensor_expr((b, h), 2)})"
        writer.scopes.pop()
    step = {
        "tanh": ["h = np.tanh(pre)"],
        "gated": ["g = ops.sigmoid(pre)", "h = g * h + (1.0 - g) * np.tanh(x @ w - pre)"],
        "lstm": ["c = ops.sigmoid(pre) * c + 0.5 * np.tanh(pre)", "h = np.tanh(c)"],
        "norm": ["a = pre - pre.mean(axis=1, keepdims=True)",
                 "h = np.tanh(a / np.sqrt((a * a).mean(axis=1, keepdims=True) + 1.0))"],
        "softmax": ["e = np.exp(pre - pre.max(axis=1, keepdims=True))",
                    "h = e / e.sum(axis=1, keepdims=True)"],
    }[cell]
    lines += [f"        pre = {pre}", *(f"        {s}" for s in step)]
    if keep == "list":
        lines.append("        hs.append(h)")
    elif keep == "buffer":
        lines.append("        buf[t] = h")
    elif keep == "made":  # a value only the list keeps: stacked into slots the step writes
        lines.append("        ys.append(np.tanh(h) * 0.5 + pre * 0.25)")
    if carry == "number":
        lines.append(draw(st.sampled_from(["        loss += np.sum(h * h)",
                                           "        loss -= h.mean()",
                                           "        loss = loss + h.sum()"])))
    elif carry == "rows":
        lines.append("        acc += h.mean(axis=0)")
    outs = ["h", "c"]
    if keep == "list":
        outs.append("np.stack(hs).sum(axis=0)")
    elif keep == "buffer":
        outs.append("buf.sum(axis=0)")
    elif keep == "made":
        outs.append("np.stack(ys).sum(axis=0)")
    if carry == "number":
        outs.append("h * 0.5 + 0.25 * loss")
    elif carry == "rows":
        outs.append("h * 0.5 + 0.25 * acc")
    types = ", ".join(["Tensor"] * len(outs))
    source = "\n".join([
        "from typing import List, Tuple", "", "import numpy as np", "",
        "from script import Tensor, ops", "", "",
        "def main(x: Tensor, h0: Tensor, w: Tensor, u: Tensor, bias: Tensor, n: int) "
        f"-> Tuple[{types}]:", *lines, f"    return {', '.join(outs)}", ""])
    return Program(source, "main", params, dtype, True)
