"""C-style chained index writes (``alpha[t][j] = v``, ``beta[t][i] += v``) and the index
expressions of an assignment target evaluated once, as Python evaluates them (a
``FunctionCompiler`` mixin)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ir.core import Value
from ir.types import INT, TensorType
from script.errors import ScriptError
from script.frontend.env import end_of

if TYPE_CHECKING:
    from script.frontend.compiler import FunctionCompiler


class IndexChainMixin:
    """Writes through chained indices and frozen assignment targets."""

    def frozen_target(self: FunctionCompiler, target: ast.Subscript
                      ) -> tuple[ast.Subscript, list[str]]:
        """``target`` with its index expressions evaluated once, in Python's order, each now
        read from a compiler variable (whose names come back, to drop after the assignment):
        every index of a chain before its last (``a[s.pop()][1] = v`` reads ``a[...]`` and
        then writes through the same index), and the parts of the last that call something
        (``a[f()] += v`` reads and writes ``a[f()]``). A part that means something only as an
        index (``d[range(m), y]``) stays as written."""
        names: list[str] = []

        def freeze(e: Any, every: bool) -> Any:
            if e is None or isinstance(e, (ast.Constant, ast.Name)):
                return e
            if isinstance(e, ast.Slice):
                return ast.copy_location(ast.Slice(freeze(e.lower, every),
                                                   freeze(e.upper, every),
                                                   freeze(e.step, every)), e)
            if isinstance(e, ast.Tuple):
                return ast.copy_location(ast.Tuple([freeze(p, every) for p in e.elts],
                                                   ast.Load()), e)
            if not every and not any(isinstance(n, ast.Call) for n in ast.walk(e)):
                return e
            try:
                value = self.expr(e)
            except ScriptError:
                return e  # compiled where it stands, as an index
            names.append(self.new_flag("index"))
            self.frame.set(names[-1], value)
            return ast.copy_location(ast.Name(names[-1], ast.Load()), e)

        def frozen(t: ast.Subscript, last: bool) -> ast.Subscript:
            base = frozen(t.value, False) if isinstance(t.value, ast.Subscript) else t.value
            return ast.copy_location(ast.Subscript(base, freeze(t.slice, not last), t.ctx), t)

        return frozen(target, True), names

    def write_index_chain(self: FunctionCompiler, target: ast.Subscript, value: Any) -> None:
        """``a[i][j] = v`` (C-style, HMM and CTC code's ``alpha[t][j] = ...``): ``a[i]`` with an
        int ``i`` is a view of ``a``, so numpy's write lands in ``a``, as ``a[i, j] = v`` does;
        the chain is written as that one index. An index before the last that is not ints (a
        slice, an array: ``a[1:3][0]`` is not ``a[1:3, 0]``) is refused as before."""
        chain, root = [], target
        while isinstance(root, ast.Subscript):
            chain.append(root.slice)
            root = root.value
        chain.reverse()
        names: list[str] = []
        parts: list[ast.expr] = []
        held = self.frame.find(root.id) if isinstance(root, ast.Name) else None
        if isinstance(held, Value) and isinstance(held.type, TensorType):
            for index in chain[:-1]:
                for part in index.elts if isinstance(index, ast.Tuple) else [index]:
                    v = None if isinstance(part, ast.Slice) else self.expr(part)
                    if not isinstance(v, Value) or v.type != INT:
                        parts = []
                        break
                    names.append(self.new_flag("chain"))
                    self.frame.set(names[-1], v)
                    parts.append(ast.copy_location(ast.Name(names[-1], ast.Load()), part))
                else:
                    continue
                break
        if not parts:
            self.write_array_item(target, value)  # refused there, with the reason
            return
        # numpy: a[i] that takes every axis is a numpy scalar, which refuses item assignment
        deeper = self.binary(">", self.emit_value("tensor::ndim", [held]),
                             self.const(len(parts)), target)
        self.emit_if(deeper, lambda: None, lambda: self.raise_exception(
            f"{ast.unparse(target.value)} is a numpy scalar (its index takes every axis of "
            f"'{root.id}'), which does not support item assignment", "TypeError"),
            end_of(target), target)
        last = chain[-1]
        parts += last.elts if isinstance(last, ast.Tuple) else [last]
        flat = ast.copy_location(ast.Subscript(ast.copy_location(ast.Name(root.id, ast.Load()),
                                                                 root),
                                               ast.copy_location(ast.Tuple(parts, ast.Load()),
                                                                 target.slice),
                                               ast.Store()), target)
        try:
            self.write_array_item(flat, value)
        finally:
            for name in names:
                self.frame.vars.pop(name, None)
