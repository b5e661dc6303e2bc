"""The matrix-vector kernel beside ``fuser.cpu.stepgemm``'s products (``GEMV_SIGNATURE``),
compiled into the same LLVM module (``stepgemm.ir_text``)."""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from fuser.cpu.emitter import I64, Emitter, const

GEMV_SIGNATURE = "(m, k, A, lda, x, incx, y)"
"""``y (m) = A (m, k; row stride lda, unit column stride) @ x (k; stride incx)``: a matrix times
a vector (a product whose B is one column), each row a dot product in vectors, 8 rows at a
time. BLAS's ?gemm with one column is several times slower than numpy's ``np.dot``; this
takes a step's matrix-vector product from about 23 us to about 1 us at 200 x 200."""


def gemv_type(real: Any) -> ir.FunctionType:
    ptr = real.as_pointer()
    return ir.FunctionType(ir.VoidType(), [I64, I64, ptr, I64, ptr, I64, ptr])


def gemv_symbol(double: bool) -> str:
    return "rnnscript_step_dgemv" if double else "rnnscript_step_sgemv"


class Gemv(Emitter):
    """The matrix-vector kernel (``GEMV_SIGNATURE``)."""

    ROWS = 8

    def __init__(self, module: ir.Module, fn: ir.Function, real: Any, width: int):
        super().__init__(module, fn, real, width)
        self.m, self.k, self.a, self.lda, self.x, self.incx, self.y = fn.args
        for arg in (self.a, self.x, self.y):
            arg.add_attribute("noalias")

    def build(self) -> None:
        b = self.b
        i = self._var(const(0))
        rows = self.ROWS

        def rows_left(at_least: int) -> Any:
            return b.icmp_signed(">=", b.sub(self.m, b.load(i)), const(at_least))

        def block(count: int) -> Any:
            def body() -> None:
                self._rows(b.load(i), count)
                b.store(b.add(b.load(i), const(count)), i)
            return body

        self._while(lambda: rows_left(rows), block(rows))
        self._while(lambda: rows_left(1), block(1))
        b.ret_void()
        self.allocas.branch(self.fn.blocks[1])

    def _rows(self, i0: Any, count: int) -> None:
        b = self.b
        width, vec, real = self.width, self.vec, self.real
        accs = [self._slot(vec) for _ in range(count)]
        sums = [self._slot(real) for _ in range(count)]
        for acc in accs:
            b.store(ir.Constant(vec, None), acc)
        rows = [b.gep(self.a, [b.mul(b.add(i0, const(r)), self.lda)]) for r in range(count)]
        kk = self._var(const(0))
        contiguous = b.icmp_signed("==", self.incx, const(1))

        def vectors_left() -> Any:
            return b.and_(contiguous, b.icmp_signed("<=", b.add(b.load(kk), const(width)), self.k))

        def step() -> None:
            at = b.load(kk)
            xv = b.load(b.bitcast(b.gep(self.x, [at]), vec.as_pointer()), align=self.item)
            for r in range(count):
                av = b.load(b.bitcast(b.gep(rows[r], [at]), vec.as_pointer()), align=self.item)
                b.store(b.call(self.fma_vec, [av, xv, b.load(accs[r])]), accs[r])
            b.store(b.add(at, const(width)), kk)

        self._while(vectors_left, step)
        for r in range(count):  # the lanes' sum
            acc = b.load(accs[r])
            total = b.extract_element(acc, ir.Constant(ir.IntType(32), 0))
            for lane in range(1, width):
                total = b.fadd(total, b.extract_element(acc, ir.Constant(ir.IntType(32), lane)))
            b.store(total, sums[r])

        def scalar() -> None:
            at = b.load(kk)
            xs = b.load(b.gep(self.x, [b.mul(at, self.incx)]))
            for r in range(count):
                b.store(b.call(self.fma_one, [b.load(b.gep(rows[r], [at])), xs,
                                            b.load(sums[r])]), sums[r])
            b.store(b.add(at, const(1)), kk)

        self._while(lambda: b.icmp_signed("<", b.load(kk), self.k), scalar)
        for r in range(count):
            b.store(b.load(sums[r]), b.gep(self.y, [b.add(i0, const(r))]))
