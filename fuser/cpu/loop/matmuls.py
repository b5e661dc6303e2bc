"""A native loop's matmuls, for ``builder.LoopBuilder``: ``stepgemm``'s kernels (its
matrix-vector kernel, a column times a transposed matrix, the register-blocked GEMM with B's
panels read in place or packed) or BLAS's ?gemm through the function table."""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from fuser.cpu import blas, stepgemm
from fuser.cpu.loop import coop
from fuser.cpu.loop.steps import I32, PTR, BuilderParts
from fuser.cpu.mathfns import F32, F64, I64
from ir.core import Node


class MatmulEmitters(BuilderParts):
    """Methods of ``LoopBuilder`` (also its GEMM function pointers and scratch)."""

    int_bits: int
    gemm_tasks: Any
    gemm_pack: Any
    step_gemm: list
    step_gemv: list
    sgemm: Any
    dgemm: Any
    _buffer: Any
    _rows: Any
    coop: list
    ptr: dict

    @staticmethod
    def _step_type(real: Any) -> ir.FunctionType:
        return stepgemm.function_type(real)

    def _matrix_product(self, double: bool, own: Any, m: Any, nn: Any, k: Any, ta: Any,
                        tb: Any, rows_a: Any, lda: Any, rows_b: Any, ldb: Any, out: Any,
                        ldc: Any) -> None:
        """``stepgemm``'s kernel (``own`` 1: B row-major, A row-major or transposed (``ta``), k
        in blocks of ``stepgemm.KC``, one task; 5: the same, B's panels packed) or BLAS's ?gemm."""
        b = self.b
        real = F64 if double else F32
        ptr = real.as_pointer()
        width = ir.IntType(self.int_bits)

        def size(x: Any) -> Any:
            return x if self.int_bits == 64 else b.trunc(x, width)

        packed = b.icmp_signed("==", own, ir.Constant(I64, 5))
        with b.if_else(b.or_(b.icmp_signed("==", own, ir.Constant(I64, 1)), packed)) as (
                kernel, call):
            with kernel:
                one_item = ir.Constant(I64, 1)
                b.store(ir.Constant(I64, 0), self.gemm_tasks)
                most = ir.Constant(I64, stepgemm.KC)  # k in blocks (``stepgemm.KC``)
                depth = b.select(b.icmp_signed(">", k, most), most, k)
                a_t = b.icmp_signed("==", ta, ir.Constant(ta.type, blas.CBLAS_TRANS))
                a_rs, a_cs = b.select(a_t, one_item, lda), b.select(a_t, lda, one_item)
                b.call(self.step_gemm[double],
                       [m, nn, k, b.bitcast(rows_a, ptr), a_rs, a_cs,
                        b.bitcast(rows_b, ptr), ldb, one_item, b.bitcast(out, ptr),
                        ldc, depth, b.select(packed, b.bitcast(self.gemm_pack, ptr),
                                         ir.Constant(ptr, None)), self.gemm_tasks, nn])
            with call:
                b.call(self.dgemm if double else self.sgemm,
                       [ir.Constant(I32, blas.CBLAS_ROW_MAJOR), b.trunc(ta, I32),
                        b.trunc(tb, I32), size(m), size(nn), size(k), ir.Constant(real, 1.0),
                        rows_a, size(lda), rows_b, size(ldb), ir.Constant(real, 0.0),
                        out, size(ldc)])

    def _gemm_type(self, real: Any) -> ir.FunctionType:
        n = ir.IntType(self.int_bits)
        return ir.FunctionType(ir.VoidType(), [I32, I32, I32, n, n, n, real, PTR, n, PTR, n,
                                               real, PTR, n])

    def _matmul(self, n: Node) -> None:
        """A matmul: ``stepgemm``'s kernels (matrix-vector, a column B times a transposed A, the
        register-blocked GEMM) or BLAS's ?gemm, as ``NativeLoop._step_gemm`` chose (``own``).
        Over a row range, A's rows are the range's; a range's own sum ``X^T @ G`` (its output
        private) reads the range's rows of both X and G, its k their count."""
        b = self.b
        a, bm = n.inputs
        self.ptr[n.output] = self._buffer(n.output)
        out = self._rows(n.output)
        m, nn, k, ta, tb, lda, ldb, ldc, own, incx = self.prepared[n]
        double = n.output.type.dtype == "float64"  # type: ignore[union-attr]
        if self.r0 is not None and n.output in self.prog.private:
            rows_a, rows_b = self._rows(a.node.inputs[0]), self._rows(bm)
        else:
            rows_a, rows_b = self._rows(a), self.ptr[bm]
        if n in self.coop:  # (``coop``: the ranges compute the product together)
            with b.if_else(b.icmp_signed("!=", self.int_slot(("coop", n)),
                                         ir.Constant(I64, 0))) as (shared, alone):
                with shared:
                    self._shared_product(n, double, own, k, ta, tb, lda, ldb, ldc)
                with alone:
                    self._own_product(n, double, own, m, nn, k, ta, tb, lda, ldb, ldc, incx,
                                      rows_a, rows_b, out)
            return
        self._own_product(n, double, own, m, nn, k, ta, tb, lda, ldb, ldc, incx, rows_a,
                          rows_b, out)

    def _shared_product(self, n: Node, double: bool, own: Any, k: Any, ta: Any, tb: Any,
                        lda: Any, ldb: Any, ldc: Any) -> None:
        """This range's columns of every row of ``n``'s product, between two barriers."""
        b = self.b
        item = 8 if double else 4
        coop.barrier(self)
        c0 = b.mul(self.int_slot(("coop c0", n)), ir.Constant(I64, item))
        a, bm = n.inputs
        self._matrix_product(double, own, self.int_slot(("coop m", n)),
                             self.int_slot(("coop n", n)), k, ta, tb, self.ptr[a], lda,
                             b.gep(self.ptr[bm], [c0], source_etype=ir.IntType(8)), ldb,
                             b.gep(self.ptr[n.output], [c0], source_etype=ir.IntType(8)), ldc)
        coop.barrier(self)

    def _own_product(self, n: Node, double: bool, own: Any, m: Any, nn: Any, k: Any, ta: Any,
                     tb: Any, lda: Any, ldb: Any, ldc: Any, incx: Any, rows_a: Any,
                     rows_b: Any, out: Any) -> None:
        b = self.b
        ptr = (F64 if double else F32).as_pointer()
        a_ptr, b_ptr, out = (b.bitcast(p, ptr) for p in (rows_a, rows_b, out))
        one = ir.Constant(I64, 1)

        def case(kind: int) -> Any:
            return b.icmp_signed("==", own, ir.Constant(I64, kind))

        with b.if_else(b.or_(case(2), case(4))) as (vector, other):
            with vector:  # stepgemm's matrix-vector kernel on A and the column B (2) or
                # on B's storage and the row A (4: A @ B = (B^T @ A^T)^T, B^T row-major)
                row = case(4)
                b.call(self.step_gemv[double], [
                    b.select(row, nn, m), k, b.select(row, b_ptr, a_ptr),
                    b.select(row, ldb, lda), b.select(row, a_ptr, b_ptr),
                    b.select(row, one, incx), out])
            with other, b.if_else(case(3)) as (transposed, matrix):
                with transposed:  # the column B times a transposed A: the row B^T times
                    # A's row-major storage, one row of stepgemm's kernel
                    b.store(ir.Constant(I64, 0), self.gemm_tasks)
                    b.call(self.step_gemm[double], [one, m, k, b_ptr, k, incx, a_ptr, lda,
                                                    one, out, m, k, ir.Constant(ptr, None),
                                                    self.gemm_tasks, m])
                with matrix:
                    self._matrix_product(double, own, m, nn, k, ta, tb, rows_a, lda, rows_b,
                                         ldb, b.bitcast(out, PTR), ldc)
