"""A register-blocked GEMM for the products of a recurrent step, compiled with LLVM for this CPU.

A recurrent step multiplies the batch's rows by a weight: ``hx @ w_hh.T`` is (8, 64) x (64, 256)
at B=8, H=64 and (64, 512) x (512, 2048) at B=64, H=512, once per step. numpy's bundled OpenBLAS
runs its kernels for the widest instruction set it was built for, which on a recent CPU may be
half the vector width the core has (AVX2 where the core has AVX-512), and for a product this
small the call, its argument checks and the packing of both operands cost as much as the
arithmetic. ``step_gemm`` is ``C = A @ B`` for row-major A (m, k) and B (k, n), beta 0, in the
host's widest vectors: ``MR`` rows of C times two vector registers of columns stay in registers
for the whole ``k`` loop (per item of k: two vector loads of B's row, one broadcast of A's item
per row, ``2 * MR`` fused multiply-adds); nothing is packed. The columns are swept panel by
panel, all rows of a chunk of A per panel, so a panel of B (k x two vectors) and the chunk of A
(at most ``CHUNK_BYTES``) stay in the core's cache. Rows left over go in blocks of 4, 2 and 1;
columns left over, one vector then one column at a time.

Measured on one core of a Zen 5 CPU (float32, min of repeated calls, OpenBLAS 0.3.31 using its
Haswell kernels): (8, 64) x (64, 256) 1.9 us against 4.8 us for ``cblas_sgemm``; (64, 512) x
(512, 2048) 0.73 ms (185 GFLOP/s) against 1.24 ms (108 GFLOP/s).

The native loop runtime (``fuser.cpu.loop``) calls it instead of BLAS for a matmul inside a
loop whose operands are row-major with unit column stride and whose sizes ``use(m, n, k,
itemsize)`` accepts; everything else goes to BLAS. It runs on the calling thread, so a product
never waits for a BLAS thread that has no core. ``RNNSCRIPT_STEP_GEMM=0`` in the environment
sends every product to BLAS.
"""

from __future__ import annotations

import functools
import os
import threading
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir

from fuser.cpu.jit import compile_ir

I64 = ir.IntType(64)
MR = 8
"""Rows of C per register block (``2 * MR`` accumulators plus two B vectors and a broadcast
fit in the 32 vector registers of AVX-512, and in 16 with 4-row blocks)."""

MAX_ROWS = 128
"""Products with more rows of C than this go to BLAS (large products: its threads and packing
pay for themselves there)."""

MAX_PANEL_BYTES = 256 << 10
"""Products whose panel of B (k rows of two vectors) is larger than this go to BLAS (the panel
must stay in the core's L2 cache while the rows of A sweep it)."""

CHUNK_BYTES = 256 << 10
"""The rows of A swept per panel: as many as fit in this many bytes (at least ``MR``)."""


def enabled() -> bool:
    """False when ``RNNSCRIPT_STEP_GEMM=0`` sends every product to BLAS."""
    return os.environ.get("RNNSCRIPT_STEP_GEMM", "1").strip().lower() not in ("0", "false",
                                                                              "off")


def use(m: int, n: int, k: int, itemsize: int) -> bool:
    """Whether a row-major (m, k) x (k, n) product goes to ``step_gemm`` rather than BLAS."""
    panel = k * 2 * lanes(itemsize) * itemsize
    return 0 < m <= MAX_ROWS and 0 < n and 0 < k and panel <= MAX_PANEL_BYTES


@functools.cache
def lanes(itemsize: int) -> int:
    """Items per vector register on this CPU (AVX-512: 64 bytes, AVX: 32, else 16)."""
    features = llvm.get_host_cpu_features()
    width = 64 if features.get("avx512f") else 32 if features.get("avx") else 16
    return width // itemsize


def ir_text(double: bool, width: int) -> str:
    """The LLVM module of ``rnnscript_step_{s,d}gemm(m, n, k, A, lda, B, ldb, C, ldc)`` (sizes and
    leading dimensions in items, int64) for vectors of ``width`` items."""
    real = ir.DoubleType() if double else ir.FloatType()
    module = ir.Module(name="step_gemm")
    ptr = real.as_pointer()
    fnty = ir.FunctionType(ir.VoidType(), [I64, I64, I64, ptr, I64, ptr, I64, ptr, I64])
    fn = ir.Function(module, fnty, name=symbol(double))
    _Kernel(module, fn, real, width).build()
    return str(module)


def symbol(double: bool) -> str:
    return "rnnscript_step_dgemm" if double else "rnnscript_step_sgemm"


class _Kernel:
    def __init__(self, module: ir.Module, fn: ir.Function, real: Any, width: int):
        self.fn, self.real, self.width = fn, real, width
        self.vec = ir.VectorType(real, width)
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        name = "f64" if isinstance(real, ir.DoubleType) else "f32"
        self.fma_vec = ir.Function(module, ir.FunctionType(self.vec, [self.vec] * 3),
                                   name=f"llvm.fma.v{width}{name}")
        self.fma_one = ir.Function(module, ir.FunctionType(real, [real] * 3),
                                   name=f"llvm.fma.{name}")
        m, n, k, a, lda, bm, ldb, c, ldc = fn.args
        self.m, self.n, self.k, self.a, self.lda = m, n, k, a, lda
        self.bm, self.ldb, self.c, self.ldc = bm, ldb, c, ldc
        for arg in (a, bm, c):
            arg.add_attribute("noalias")

    # -- structured control flow over allocas (mem2reg makes them registers)
    def _var(self, init: Any) -> Any:
        slot = self.b.alloca(I64)
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

    def build(self) -> None:
        b = self.b
        item = 8 if isinstance(self.real, ir.DoubleType) else 4
        # rows of A per chunk: CHUNK_BYTES // (k * item), a multiple of MR, at least MR
        per_chunk = b.sdiv(ir.Constant(I64, CHUNK_BYTES // item),
                           b.select(b.icmp_signed(">", self.k, ir.Constant(I64, 0)), self.k,
                                    ir.Constant(I64, 1)))
        per_chunk = b.mul(b.sdiv(per_chunk, ir.Constant(I64, MR)), ir.Constant(I64, MR))
        per_chunk = b.select(b.icmp_signed("<", per_chunk, ir.Constant(I64, MR)),
                             ir.Constant(I64, MR), per_chunk)
        first = self._var(ir.Constant(I64, 0))

        def chunk() -> None:
            start = b.load(first)
            end = b.add(start, per_chunk)
            end = b.select(b.icmp_signed("<", end, self.m), end, self.m)
            self._panels(start, end)
            b.store(end, first)

        self._while(lambda: b.icmp_signed("<", b.load(first), self.m), chunk)
        b.ret_void()

    def _panels(self, start: Any, end: Any) -> None:
        """Rows ``start:end`` of C, every column."""
        b = self.b
        j = self._var(ir.Constant(I64, 0))
        step = 2 * self.width

        def columns_left(at_least: int) -> Any:
            return b.icmp_signed(">=", b.sub(self.n, b.load(j)), ir.Constant(I64, at_least))

        def panel(vectors: int) -> Any:
            def body() -> None:
                self._rows(start, end, b.load(j), vectors)
                b.store(b.add(b.load(j), ir.Constant(I64, vectors * self.width if vectors
                                                     else 1)), j)
            return body

        self._while(lambda: columns_left(step), panel(2))
        self._if(columns_left(self.width), panel(1))
        self._while(lambda: columns_left(1), panel(0))

    def _rows(self, start: Any, end: Any, j0: Any, vectors: int) -> None:
        """Rows ``start:end`` of C in the columns ``j0 ..`` (``vectors`` vectors, 0: one
        column)."""
        b = self.b
        i = self._var(start)

        def rows_left(at_least: int) -> Any:
            return b.icmp_signed(">=", b.sub(end, b.load(i)), ir.Constant(I64, at_least))

        def block(rows: int) -> Any:
            def body() -> None:
                self._block(b.load(i), j0, rows, vectors)
                b.store(b.add(b.load(i), ir.Constant(I64, rows)), i)
            return body

        self._while(lambda: rows_left(MR), block(MR))
        for rows in (4, 2, 1):
            if rows < MR:
                self._if(rows_left(rows), block(rows))

    def _block(self, i0: Any, j0: Any, rows: int, vectors: int) -> None:
        """C[i0:i0+rows, j0:j0+vectors*width] (or one column) = A[i0:i0+rows, :] @ B[:, ...]."""
        b = self.b
        lanes_ty = self.vec if vectors else self.real
        zero = ir.Constant(lanes_ty, None)
        accs = [[b.alloca(lanes_ty) for _ in range(max(vectors, 1))] for _ in range(rows)]
        for row in accs:
            for acc in row:
                b.store(zero, acc)
        a_rows = [b.gep(self.a, [b.mul(b.add(i0, ir.Constant(I64, r)), self.lda)])
                  for r in range(rows)]
        kk = self._var(ir.Constant(I64, 0))

        def body() -> None:
            at = b.load(kk)
            b_row = b.gep(self.bm, [b.add(b.mul(at, self.ldb), j0)])
            if vectors:
                bvals = [b.load(b.bitcast(b.gep(b_row, [ir.Constant(I64, v * self.width)]),
                                          self.vec.as_pointer()), align=self.real_size)
                         for v in range(vectors)]
            else:
                bvals = [b.load(b_row)]
            for r in range(rows):
                a = b.load(b.gep(a_rows[r], [at]))
                if vectors:
                    a = b.shuffle_vector(
                        b.insert_element(ir.Constant(self.vec, ir.Undefined), a,
                                         ir.Constant(ir.IntType(32), 0)),
                        ir.Constant(self.vec, ir.Undefined),
                        ir.Constant(ir.VectorType(ir.IntType(32), self.width), [0] * self.width))
                for v, bv in enumerate(bvals):
                    fma = self.fma_vec if vectors else self.fma_one
                    b.store(b.call(fma, [a, bv, b.load(accs[r][v])]), accs[r][v])
            b.store(b.add(at, ir.Constant(I64, 1)), kk)

        self._while(lambda: b.icmp_signed("<", b.load(kk), self.k), body)
        for r in range(rows):
            c_row = b.gep(self.c, [b.add(b.mul(b.add(i0, ir.Constant(I64, r)), self.ldc), j0)])
            for v in range(max(vectors, 1)):
                if vectors:
                    dst = b.bitcast(b.gep(c_row, [ir.Constant(I64, v * self.width)]),
                                    self.vec.as_pointer())
                    b.store(b.load(accs[r][v]), dst, align=self.real_size)
                else:
                    b.store(b.load(accs[r][v]), c_row)

    @property
    def real_size(self) -> int:
        return 8 if isinstance(self.real, ir.DoubleType) else 4


_lock = threading.Lock()
_addresses: dict[bool, int] = {}


def address(double: bool) -> int:
    """The address of the compiled ``step_gemm`` for float64 (``double``) or float32."""
    with _lock:
        if double not in _addresses:
            text = ir_text(double, lanes(8 if double else 4))
            (_addresses[double],) = compile_ir(text, [symbol(double)])
        return _addresses[double]
