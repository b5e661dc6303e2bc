"""Building LLVM kernels by hand with llvmlite's IR builder: ``Emitter`` keeps a function's
locals as allocas in its entry block (mem2reg makes them registers) and gives structured
control flow over them (``_while``, ``_if``), for the products of ``fuser.cpu.stepgemm`` and the
matrix-vector kernel of ``fuser.cpu.gemv``."""

from __future__ import annotations

from typing import Any

from llvmlite import ir

I64 = ir.IntType(64)


def const(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def intrinsic(module: ir.Module, name: str, ty: Any) -> ir.Function:
    """``name(ty, ty, ty) -> ty``, declared once per module."""
    found = module.globals.get(name)
    return found if found is not None else ir.Function(module, ir.FunctionType(ty, [ty] * 3),
                                                       name=name)


class Emitter:
    """One kernel function being built: its entry block holds the allocas (mem2reg turns them
    into registers), structured control flow over them, fused multiply-adds."""

    def __init__(self, module: ir.Module, fn: ir.Function, real: Any, width: int):
        self.fn, self.real, self.width = fn, real, width
        self.item = 8 if isinstance(real, ir.DoubleType) else 4
        self.vec = ir.VectorType(real, width)
        self.allocas = ir.IRBuilder(fn.append_basic_block("entry"))
        self.b = ir.IRBuilder(fn.append_basic_block("start"))
        name = "f64" if isinstance(real, ir.DoubleType) else "f32"
        self.fma_vec = intrinsic(module, f"llvm.fma.v{width}{name}", self.vec)
        self.fma_one = intrinsic(module, f"llvm.fma.{name}", real)

    # -- structured control flow over allocas (mem2reg makes them registers)
    def _slot(self, ty: Any) -> Any:
        return self.allocas.alloca(ty)

    def _var(self, init: Any) -> Any:
        slot = self._slot(I64)
        self.b.store(init, slot)
        return slot

    def _while(self, cond: Any, body: Any) -> None:
        """``while cond(): body()``; ``cond`` and ``body`` emit code at the builder."""
        b = self.b
        head = b.append_basic_block("head")
        loop = b.append_basic_block("body")
        done = b.append_basic_block("done")
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(cond(), loop, done)
        b.position_at_end(loop)
        body()
        b.branch(head)
        b.position_at_end(done)

    def _if(self, cond: Any, body: Any) -> None:
        with self.b.if_then(cond):
            body()

    def _min(self, x: Any, y: Any) -> Any:
        return self.b.select(self.b.icmp_signed("<", x, y), x, y)
