"""A register-blocked GEMM for the products of a recurrent step, compiled with LLVM for this CPU.

A recurrent step multiplies the batch's rows by a weight: ``hx @ w_hh.T`` is (8, 64) x (64, 256)
at B=8, H=64 and (64, 512) x (512, 2048) at B=64, H=512, once per step. numpy's bundled OpenBLAS
runs its kernels for the widest instruction set it was built for, which on a recent CPU may be
half the vector width the core has (AVX2 where the core has AVX-512), and for a product this
small the call, its argument checks and the packing of both operands cost as much as the
arithmetic. ``step_gemm`` is ``C = A @ B`` for row-major A (m, k) and B (k, n), beta 0, in the
host's widest vectors: ``MR`` rows of C times two vector registers of columns stay in registers
for the whole ``k`` loop (per item of k: two vector loads of B's row, one broadcast of A's item
per row, ``2 * MR`` fused multiply-adds); A is never packed. The columns are swept panel by
panel, all rows of a chunk of A per panel, so a panel of B (k x two vectors) and the chunk of A
(at most ``CHUNK_BYTES``) stay in the core's cache. A panel is read in place, or, where B's
rows lie a multiple of 4 KB apart and enough rows of A read it (``packs``), copied first to a
pack of its own (k rows of two vectors, one after another): in place, such rows all fall in the
same sets of the L1 cache and each on a page of its own. Rows left over go in blocks of 4, 2 and 1
(``ROW_SCHEDULE``);
columns left over, one vector, then the last few as one masked vector (loads and stores of
those lanes only: a (10, 512) x (512, 61) float32 product took 31.8 us with its last 13 columns
one at a time, 14.7 us masked, numpy 17.6 us).

The module is compiled without LLVM's loop unrolling (``compile_ir(unroll=False)``): the blocks
are unrolled by hand already, and unrolling their k loops again doubled the machine code (19 KB
against 10 KB for float32) and the compile (560-580 ms against 300-360 ms, the larger part of a
first call), at the same speed within noise ((8, 64) x (64, 256), (64, 256) x (256, 256), (64,
512) x (512, 2048) and (10, 512) x (512, 61), one core). It is optimized at O1 (``speed=1``):
compiled at O3, O2 and O1 and timed alternately in one process on a Zen 3 core, the float32
kernels took 6.2 / 6.0 / 6.0 us ((8, 64) x (64, 256)), 1796 / 1712 / 1706 us ((64, 512) x (512,
2048)) and 143 / 143 / 141 us ((64, 384) x (384, 256)), float64 alike, and the compile 303 /
241 / 224 ms.

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

import ctypes
import functools
import os
from typing import Any

from llvmlite import ir

from fuser.cpu.emitter import I64, Emitter, const
from fuser.cpu.gemv import Gemv, gemv_symbol, gemv_type
from fuser.cpu.jit import compile_ir, host_features, in_background


def block_rows(width: int, itemsize: int) -> int:
    """Rows of C per register block (``MR``) for vectors of ``width`` items: the ``2 * MR``
    accumulators, two vectors of B and a broadcast of A must fit in the vector registers: 8
    rows in AVX-512's 32, 6 in the 16 of AVX2 and SSE (8 rows there spill accumulators to the
    stack in the k loop: on a Zen 1 core, (64, 512) x (512, 2048) float32 ran at 20 GFLOP/s
    with 8 rows, 24.7 with 6, numpy's OpenBLAS 23.6; (64, 256) x (256, 1024) 1.61 -> 1.27 ms)."""
    return 8 if width * itemsize >= 64 else 6

ROW_SCHEDULE = "the last 8 or 9 rows as 4 + 4 (+ 1)"
"""With ``MR`` = 6 (AVX2), the last 8 (or 9) rows run as two blocks of 4 rather than 6 and 2 (and
a row of 1): a block of 2 rows keeps 4 accumulators, fewer than the fused multiply-adds in
flight the core can hold (two pipes, 4 cycles each), and took as long as a block of 4. Each
item of C is still one accumulator summed over k in order, so the values do not depend on the
blocks. A batch of 8, (8, 64) x (64, 256), float32, one Zen 3 core, through ctypes (2.3 us of
it the call): 5.98 -> 5.68 us; (6, ...) 4.59, (4, ...) 3.98."""

MAX_ROWS = 128
"""Products with more rows of C than this go to BLAS (large products: its threads and packing
pay for themselves there)."""

MAX_PANEL_BYTES = 64 << 10
"""Products whose panel of B (k rows of two vectors) is larger than this go to BLAS: the panel
must stay in the core's cache while the rows of A sweep it, and a deep one does not (an LSTM
backward's (64, 2048) x (2048, 512) float32 on one Zen 1 core, a 128 KB panel: 7.0 ms here,
OpenBLAS 5.7; (32, 2048) x (2048, 512) 3.7 ms against 2.4; at k = 1024, 64 KB, the two are
equal)."""

KC = 256
"""A block of k (``SIGNATURE``'s ``kc``), outside loops and in a native loop's step: a panel of B
(kc x two vectors: 32 KB in either dtype) stays in the L1 cache while a chunk of A's rows sweeps
it. float64 blocks of 128 ran (64, 512) x (512, 2048) at 2.8 ms against 1.7 with 256 (numpy 1.9;
Zen 4, two threads). A step once took k in one block, which a 48 KB L1 does not hold at k = 512:
one Sapphire Rapids core, B packed, one block against 256: (64, 512) x (512, 2048) float32 1143
against 989 us (numpy 1013), float64 2606 against 2248 (numpy 2124); (32, 512) x (512, 1024)
float32 340 against 274 (numpy 318), float64 777 against 620 (numpy 604)."""

CHUNK_BYTES = 256 << 10
"""The rows of A swept per panel: as many as fit in this many bytes (at least ``MR``)."""


def packs(m: int, row_bytes: int, depth: int = 0) -> bool:
    """Whether a product of ``m`` rows and ``depth`` k whose B rows lie ``row_bytes`` apart
    copies each panel of B to a pack before its rows sweep it (``SIGNATURE``'s ``pack``). Read
    in place, the rows of a panel at a multiple of 4 KB apart all fall in the same sets of the L1
    cache and each on its own page, so a block rereads them from L2 through the TLB; 1 KB apart,
    a deep panel's rows fall in 4 of its 64 sets; the copy costs one pass over the panel, paid
    back when enough blocks of rows read it. Measured on one Zen 1 core, float32, in place
    against packed: (64, 256) x (256, 1024) 1418 against 1042 us, (64, 512) x (512, 2048) 6234
    against 4598, (32, 512) x (512, 1024) 1519 against 1278, (128, 512) x (512, 512) 2263
    against 1950, (64, 256) x (256, 256) 120 against 105, (64, 1024) x (1024, 256) 480 against
    410; but (16, 128) x (128, 1024) 184 against 184, (64, 128) x (128, 768) 357 against 382,
    (8, 256) x (256, 256) 48 against 77. On two threads (columns shared): (64, 384) x (384, 256)
    94 against 85 us (numpy 81), (64, 128) x (128, 256) 43 against 46, (32, 384) x (384, 256)
    61 against 69."""
    return ((m >= 32 and row_bytes % 4096 == 0) or (m >= 64 and row_bytes >= 2048)
            or (m >= 64 and row_bytes >= 1024 and depth >= 256))


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
    features = host_features()
    width = 64 if features.get("avx512f") else 32 if features.get("avx") else 16
    return width // itemsize


def ir_text(double: bool, width: int) -> str:
    """The LLVM module of the kernel for vectors of ``width`` items (see ``SIGNATURE``) and of
    its matrix-vector form (``GEMV_SIGNATURE``)."""
    real = ir.DoubleType() if double else ir.FloatType()
    module = ir.Module(name="step_gemm")
    fn = ir.Function(module, function_type(real), name=symbol(double))
    _Kernel(module, fn, real, width).build()
    gemv = ir.Function(module, gemv_type(real), name=gemv_symbol(double))
    Gemv(module, gemv, real, width).build()
    _job(module, fn, real, job_symbol(double))
    _sum_job(module, fn, real, sum_job_symbol(double))
    return str(module)


JOB_SLOTS = 18
"""The int64 arguments of a pool job (``job_symbol``): the kernel's first 12 (``SIGNATURE``,
pointers as ints), then the first thread's ``pack`` and the bytes between two threads' packs,
``task_cols``, how many threads may join, and two counters the job updates: threads joined
(slot 16; a thread's position picks its pack) and tasks taken (slot 17, the kernel's
``next``)."""


def job_symbol(double: bool) -> str:
    return "rnnscript_step_dgemm_job" if double else "rnnscript_step_sgemm_job"


def _job(module: ir.Module, kernel: ir.Function, real: Any, name: str) -> None:
    """``name(args)``: one thread's share of a product for ``fuser.cpu.pool`` (``JOB_SLOTS``);
    a thread beyond the limit returns at once."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer()]), name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args = b.bitcast(fn.args[0], I64.as_pointer())

    def slot(k: int) -> Any:
        return b.gep(args, [const(k)])

    joined = b.atomic_rmw("add", slot(16), const(1), "seq_cst")
    with b.if_then(b.icmp_signed("<", joined, b.load(slot(15)))):
        ptr = real.as_pointer()
        values = [b.load(slot(k)) for k in range(12)]
        for k in (3, 6, 9):
            values[k] = b.inttoptr(values[k], ptr)
        pack = b.add(b.load(slot(12)), b.mul(joined, b.load(slot(13))))
        b.call(kernel, [*values, b.inttoptr(pack, ptr), slot(17), b.load(slot(14))])
    b.ret_void()


SUM_SLOTS = 19
"""The int64 arguments of a sum job (``sum_job_symbol``): the number of products P, m, n, C,
ldc, kc, the first thread's ``pack`` and the bytes between two threads' packs, ``task_cols``,
how many threads may join, threads joined and tasks taken (the job's counters); the epilogue
(``EPILOGUE``: 5 slots, all 0 for none); the parts (``PARTS``: 1 and n for none); then per
product 7 slots: k, A, a_rs, a_cs, B, b_rs, b_cs (``SIGNATURE``'s, pointers as ints)."""

EPILOGUE = 12
"""The sum job's epilogue slots: the address of a fusion kernel's guarded entry (0: no
epilogue; ``fuser.cpu.kernel``: ``entry(args, outs, guard) -> 0, or 1 when the guard rejects
the arguments``), the addresses of its argument and output tuples, of a table with one guard
per task (the kernel over that task's columns of C alone: ``fuser.cpu.epilogue``), and a word
the job ors each call's result into. A task calls the entry right after its columns of C are
summed, while they are in the core's cache."""

PARTS = 17
"""The sum job's two slots of parts: how many parts the columns of C are cut into and the
columns of each (``parts * span == n``). A task takes the same ``task_cols`` columns of every
part (columns ``p * span + j0 ...`` for each part ``p``), so an epilogue that reads C in
``parts`` column blocks (an LSTM's four gates of ``span`` units each) finds every column its
task's units read summed by the task itself."""

PAIR_SLOTS = 7


def sum_job_symbol(double: bool) -> str:
    return "rnnscript_step_dgemm_sum_job" if double else "rnnscript_step_sgemm_sum_job"


def _sum_job(module: ir.Module, kernel: ir.Function, real: Any, name: str) -> None:
    """``name(args)``: one thread's share of ``C = A1 @ B1 + A2 @ B2 + ...`` (``SUM_SLOTS``):
    task by task of ``task_cols`` columns, the first product into the task's columns of C, each
    further one added to them (the kernel with a negative ``kc``), so a task's columns are
    written by one thread, product after product, while another thread takes the next task;
    with an epilogue (``EPILOGUE``) the task then computes it over those columns."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer()]), name)
    e = Emitter(module, fn, real, 1)
    b = e.b
    args = b.bitcast(fn.args[0], I64.as_pointer())

    def slot(k: Any) -> Any:
        return b.gep(args, [k if isinstance(k, ir.Value) else const(k)])

    ptr = real.as_pointer()
    joined = b.atomic_rmw("add", slot(10), const(1), "seq_cst")
    count, m, n, c, ldc, kc = (b.load(slot(k)) for k in range(6))
    pack = b.inttoptr(b.add(b.load(slot(6)), b.mul(joined, b.load(slot(7)))), ptr)
    task_cols, parts, span = b.load(slot(8)), b.load(slot(PARTS)), b.load(slot(PARTS + 1))
    tasks = b.sdiv(b.add(span, b.sub(task_cols, const(1))), task_cols)
    task, pair, local = e._var(const(0)), e._var(const(0)), e._var(const(0))
    part = e._var(const(0))

    def take() -> Any:
        b.store(b.atomic_rmw("add", slot(11), const(1), "monotonic"), task)
        return b.icmp_signed("<", b.load(task), tasks)

    def run() -> None:
        j0 = b.mul(b.load(task), task_cols)
        width = e._min(task_cols, b.sub(span, j0))
        b.store(const(0), part)
        e._while(lambda: b.icmp_signed("<", b.load(part), parts), lambda: columns_of(j0, width))
        epilogue()

    def columns_of(j0: Any, width: Any) -> None:  # the task's columns of one part
        c0 = b.add(b.mul(b.load(part), span), j0)
        b.store(const(0), pair)

        def product() -> None:
            p = b.load(pair)
            base = b.add(const(SUM_SLOTS), b.mul(p, const(PAIR_SLOTS)))
            k, a, a_rs, a_cs, bm, b_rs, b_cs = (b.load(slot(b.add(base, const(i))))
                                                 for i in range(PAIR_SLOTS))
            columns = b.gep(b.inttoptr(bm, ptr), [b.mul(c0, b_cs)])
            block = b.select(b.icmp_signed("==", p, const(0)), kc, b.neg(kc))
            b.store(const(0), local)
            b.call(kernel, [m, width, k, b.inttoptr(a, ptr), a_rs, a_cs, columns, b_rs, b_cs,
                            b.gep(b.inttoptr(c, ptr), [c0]), ldc, block, pack, local, width])
            b.store(b.add(p, const(1)), pair)

        e._while(lambda: b.icmp_signed("<", b.load(pair), count), product)
        b.store(b.add(b.load(part), const(1)), part)

    def epilogue() -> None:
        entry = b.load(slot(EPILOGUE))
        with b.if_then(b.icmp_signed("!=", entry, const(0))):
            i8p = ir.IntType(8).as_pointer()
            fn_type = ir.FunctionType(ir.IntType(32), [i8p, i8p, i8p])
            arrays, outs, table = (b.inttoptr(b.load(slot(EPILOGUE + k)), i8p) for k in (1, 2, 3))
            guards = b.bitcast(table, I64.as_pointer())
            guard = b.inttoptr(b.load(b.gep(guards, [b.load(task)])), i8p)
            rejected = b.call(b.inttoptr(entry, fn_type.as_pointer()), [arrays, outs, guard])
            b.atomic_rmw("or", slot(EPILOGUE + 4), b.zext(rejected, I64), "monotonic")

    with b.if_then(b.icmp_signed("<", joined, b.load(slot(9)))):  # beyond the limit: none
        e._while(take, run)
    b.ret_void()
    e.allocas.branch(fn.blocks[1])


SIGNATURE = "(m, n, k, A, a_rs, a_cs, B, b_rs, b_cs, C, ldc, kc, pack, next, task_cols)"
"""The kernel's arguments: C (m, n; row stride ldc) = A (m, k) @ B (k, n), item (i, j) of A at
``A[i * a_rs + j * a_cs]`` and of B at ``B[i * b_rs + j * b_cs]`` (strides in items, any for
A and B; with a ``pack`` (room for ``kc`` rows of two vectors), each panel of B is copied
there before the rows of A sweep it (``packs``); without one (null), B is read in place and
``b_cs`` must be 1); ``k`` is taken ``kc`` at a time (C
accumulates from the second block on; a negative ``kc`` takes ``-kc`` at a time and
accumulates from the first: C += A @ B). The columns of C are split into tasks of ``task_cols``
columns; the kernel takes task after task from the counter ``*next`` (an atomic add) until none
is left, so threads that call it with the same counter share one product without waiting for
each other. Sizes are int64."""


def function_type(real: Any) -> ir.FunctionType:
    ptr = real.as_pointer()
    return ir.FunctionType(ir.VoidType(), [I64, I64, I64, ptr, I64, I64, ptr, I64, I64, ptr,
                                           I64, I64, ptr, I64.as_pointer(), I64])


def symbol(double: bool) -> str:
    return "rnnscript_step_dgemm" if double else "rnnscript_step_sgemm"


class _Kernel(Emitter):
    """The blocked product (``SIGNATURE``)."""

    def __init__(self, module: ir.Module, fn: ir.Function, real: Any, width: int):
        super().__init__(module, fn, real, width)
        (self.m, self.n, self.k, self.a, self.a_rs, self.a_cs, self.bm, self.b_rs, self.b_cs,
         self.c, self.ldc, self.kc, self.pack, self.next, self.task_cols) = fn.args
        self.mr = block_rows(width, self.item)
        for arg in (self.a, self.bm, self.c, self.pack):
            arg.add_attribute("noalias")
        name = f"v{width}{'f64' if self.item == 8 else 'f32'}.p0"
        mask = ir.VectorType(ir.IntType(1), width)
        ptr, i32 = self.vec.as_pointer(), ir.IntType(32)
        self.masked_load = ir.Function(module, ir.FunctionType(self.vec, [ptr, i32, mask,
                                                                          self.vec]),
                                       name=f"llvm.masked.load.{name}")
        self.masked_store = ir.Function(module, ir.FunctionType(ir.VoidType(), [self.vec, ptr,
                                                                                i32, mask]),
                                        name=f"llvm.masked.store.{name}")

    def build(self) -> None:
        b = self.b
        tasks = b.sdiv(b.add(self.n, b.sub(self.task_cols, const(1))), self.task_cols)
        self.accumulate = b.icmp_signed("<", self.kc, const(0))  # C += A @ B
        kc = b.select(self.accumulate, b.neg(self.kc), self.kc)
        kc = b.select(b.icmp_signed(">", kc, const(0)), kc, const(1))
        # rows of A per chunk: CHUNK_BYTES // (kc * item), a multiple of MR, at least MR
        mr = const(self.mr)
        per_chunk = b.sdiv(const(CHUNK_BYTES // self.item), kc)
        per_chunk = b.mul(b.sdiv(per_chunk, mr), mr)
        self.per_chunk = b.select(b.icmp_signed("<", per_chunk, mr), mr, per_chunk)
        packed = b.icmp_signed("!=", b.ptrtoint(self.pack, I64), const(0))
        task = self._var(const(0))

        def take() -> Any:
            b.store(b.atomic_rmw("add", self.next, const(1), "monotonic"), task)
            return b.icmp_signed("<", b.load(task), tasks)

        def run() -> None:
            c0 = b.mul(b.load(task), self.task_cols)
            c1 = self._min(b.add(c0, self.task_cols), self.n)
            self._task(c0, c1, kc, packed)

        self._while(take, run)
        b.ret_void()
        self.allocas.branch(self.fn.blocks[1])

    def _task(self, c0: Any, c1: Any, kc: Any, packed: Any) -> None:
        """Columns ``c0:c1`` of C: block by block of k, chunk by chunk of rows."""
        b = self.b
        k0 = self._var(const(0))

        def k_block() -> None:
            start = b.load(k0)
            depth = self._min(kc, b.sub(self.k, start))
            a = b.gep(self.a, [b.mul(start, self.a_cs)])
            bsrc = b.gep(self.bm, [b.mul(start, self.b_rs)])
            first = b.and_(b.icmp_signed("==", start, const(0)), b.not_(self.accumulate))
            self._chunks(a, (packed, bsrc, depth), c0, c1, first)
            b.store(b.add(start, depth), k0)

        self._while(lambda: b.icmp_signed("<", b.load(k0), self.k), k_block)

    def _pack(self, source: Any, j0: Any, cols: Any) -> None:
        """Copy B's columns ``j0:j0+cols`` of the k block (at most a panel: two vectors) to
        ``pack``, row r at ``pack[r * 2 * width]``: the rows the blocks of the panel read one
        after another. A whole panel of a B with unit column stride is copied two vectors a
        row, anything else item by item."""
        b = self.b
        _, bsrc, depth = source
        step = 2 * self.width
        vptr = self.vec.as_pointer()
        r = self._var(const(0))
        whole = b.and_(b.icmp_signed("==", self.b_cs, const(1)),
                       b.icmp_signed("==", cols, const(step)))

        def row() -> None:
            at = b.load(r)
            src_row = b.gep(bsrc, [b.add(b.mul(at, self.b_rs), b.mul(j0, self.b_cs))])
            dst_row = b.gep(self.pack, [b.mul(at, const(step))])
            with b.if_else(whole) as (vectors, items):
                with vectors:
                    for v in range(2):
                        at_v = const(v * self.width)
                        value = b.load(b.bitcast(b.gep(src_row, [at_v]), vptr), align=self.item)
                        b.store(value, b.bitcast(b.gep(dst_row, [at_v]), vptr), align=self.item)
                with items:
                    col = self._var(const(0))

                    def item() -> None:
                        j = b.load(col)
                        b.store(b.load(b.gep(src_row, [b.mul(j, self.b_cs)])),
                                b.gep(dst_row, [j]))
                        b.store(b.add(j, const(1)), col)

                    self._while(lambda: b.icmp_signed("<", b.load(col), cols), item)
            b.store(b.add(at, const(1)), r)

        self._while(lambda: b.icmp_signed("<", b.load(r), depth), row)

    def _chunks(self, a: Any, source: Any, c0: Any, c1: Any, first: Any) -> None:
        b = self.b
        i = self._var(const(0))

        def chunk() -> None:
            start = b.load(i)
            end = self._min(b.add(start, self.per_chunk), self.m)
            self._panels(a, source, start, end, c0, c1, first)
            b.store(end, i)

        self._while(lambda: b.icmp_signed("<", b.load(i), self.m), chunk)

    def _panel_rows(self, source: Any, j0: Any, cols: Any) -> tuple[Any, Any]:
        """Where the rows of B's columns ``j0:j0+cols`` (at most a panel) start, and the items
        between two: in the pack, copied there now (``_pack``), or in B itself."""
        b = self.b
        packed, bsrc, _ = source
        with b.if_then(packed):
            self._pack(source, j0, cols)
        base = b.select(packed, self.pack, b.gep(bsrc, [j0]))
        return base, b.select(packed, const(2 * self.width), self.b_rs)

    def _panels(self, a: Any, source: Any, start: Any, end: Any, c0: Any, c1: Any,
                first: Any) -> None:
        """Rows ``start:end`` of C, columns ``c0:c1``."""
        b = self.b
        j = self._var(c0)
        step = 2 * self.width

        def columns_left(at_least: int) -> Any:
            return b.icmp_signed(">=", b.sub(c1, b.load(j)), const(at_least))

        def panel(vectors: int) -> Any:
            def body() -> None:
                self._rows(a, source, start, end, b.load(j), c1, vectors, first)
                b.store(b.add(b.load(j), const(vectors * self.width)), j)
            return body

        def tail() -> None:  # the last columns, fewer than a vector: one masked vector
            lanes = ir.Constant(ir.VectorType(I64, self.width), list(range(self.width)))
            left = b.sub(c1, b.load(j))
            splat = b.shuffle_vector(
                b.insert_element(ir.Constant(ir.VectorType(I64, self.width), ir.Undefined),
                                 left, ir.Constant(ir.IntType(32), 0)),
                ir.Constant(ir.VectorType(I64, self.width), ir.Undefined),
                ir.Constant(ir.VectorType(ir.IntType(32), self.width), [0] * self.width))
            mask = b.icmp_signed("<", lanes, splat)
            self._rows(a, source, start, end, b.load(j), c1, 1, first, mask)

        self._while(lambda: columns_left(step), panel(2))
        self._if(columns_left(self.width), panel(1))
        self._if(columns_left(1), tail)

    def _rows(self, a: Any, source: Any, start: Any, end: Any, j0: Any, c1: Any,
              vectors: int, first: Any, mask: Any = None) -> None:
        b = self.b
        i = self._var(start)
        bbase, brs = self._panel_rows(source, j0, self._min(b.sub(c1, j0),
                                                            const(vectors * self.width)))
        depth = source[2]

        def rows_left(at_least: int) -> Any:
            return b.icmp_signed(">=", b.sub(end, b.load(i)), const(at_least))

        def block(rows: int) -> Any:
            def body() -> None:
                self._block(a, bbase, brs, depth, b.load(i), j0, rows, vectors, first, mask)
                b.store(b.add(b.load(i), const(rows)), i)
            return body

        if self.mr == 6:  # the last 8 or 9 rows as 4 + 4 (+ 1) (``ROW_SCHEDULE``)
            self._while(lambda: b.and_(rows_left(self.mr), b.icmp_unsigned(
                ">", b.sub(b.sub(end, b.load(i)), const(8)), const(1))), block(self.mr))
            self._if(rows_left(4), block(4))
        else:
            self._while(lambda: rows_left(self.mr), block(self.mr))
        for rows in (4, 2, 1):
            if rows < self.mr:
                self._if(rows_left(rows), block(rows))

    def _block(self, a: Any, bbase: Any, brs: Any, depth: Any, i0: Any, j0: Any, rows: int,
               vectors: int, first: Any, mask: Any = None) -> None:
        """C[i0:i0+rows, j0:j0+vectors*width] (+)= A[rows, block] @ B[block, ..]; with a
        ``mask`` (one vector), only the columns whose lanes it sets are read and written."""
        b = self.b
        accs = [[self._slot(self.vec) for _ in range(vectors)] for _ in range(rows)]
        c_rows = [b.gep(self.c, [b.add(b.mul(b.add(i0, const(r)), self.ldc), j0)])
                  for r in range(rows)]

        def c_at(r: int, v: int) -> Any:
            return b.bitcast(b.gep(c_rows[r], [const(v * self.width)]), self.vec.as_pointer())

        with b.if_else(first) as (zero, accumulate):
            with zero:
                for row in accs:
                    for acc in row:
                        b.store(ir.Constant(self.vec, None), acc)
            with accumulate:
                for r, row in enumerate(accs):
                    for v, acc in enumerate(row):
                        b.store(self._load(c_at(r, v), mask), acc)
        a_rows = [b.gep(a, [b.mul(b.add(i0, const(r)), self.a_rs)]) for r in range(rows)]
        kk = self._var(const(0))
        splat = ir.Constant(ir.VectorType(ir.IntType(32), self.width), [0] * self.width)

        def body() -> None:
            at = b.load(kk)
            b_row = b.gep(bbase, [b.mul(at, brs)])
            bvals = [self._load(b.bitcast(b.gep(b_row, [const(v * self.width)]),
                                          self.vec.as_pointer()), mask)
                     for v in range(vectors)]
            step = b.mul(at, self.a_cs)
            for r in range(rows):
                x = b.shuffle_vector(
                    b.insert_element(ir.Constant(self.vec, ir.Undefined),
                                     b.load(b.gep(a_rows[r], [step])),
                                     ir.Constant(ir.IntType(32), 0)),
                    ir.Constant(self.vec, ir.Undefined), splat)
                for v, bv in enumerate(bvals):
                    b.store(b.call(self.fma_vec, [x, bv, b.load(accs[r][v])]), accs[r][v])
            b.store(b.add(at, const(1)), kk)

        self._while(lambda: b.icmp_signed("<", b.load(kk), depth), body)
        for r, row in enumerate(accs):
            for v, acc in enumerate(row):
                self._store(b.load(acc), c_at(r, v), mask)

    def _load(self, at: Any, mask: Any) -> Any:
        """The vector at ``at``, only the lanes ``mask`` sets (None: all) read, others 0."""
        if mask is None:
            return self.b.load(at, align=self.item)
        return self.b.call(self.masked_load, [at, ir.Constant(ir.IntType(32), self.item), mask,
                                              ir.Constant(self.vec, None)])

    def _store(self, value: Any, at: Any, mask: Any) -> None:
        if mask is None:
            self.b.store(value, at, align=self.item)
        else:
            self.b.call(self.masked_store, [value, at, ir.Constant(ir.IntType(32), self.item),
                                            mask])


_addresses: dict[bool, tuple[int, ...]] = {}
_functions: dict[bool, Any] = {}


def address(double: bool) -> int:
    """The address of the compiled kernel for float64 (``double``) or float32."""
    return _compiled(double)[0]


def gemv_address(double: bool) -> int:
    """The address of the compiled matrix-vector kernel for float64 (``double``) or float32."""
    return _compiled(double)[1]


def _compiled(double: bool) -> tuple[int, ...]:
    found = _addresses.get(double)
    if found is None:  # compile_ir compiles a text once, however many threads ask
        text = ir_text(double, lanes(8 if double else 4))
        found = _addresses[double] = tuple(compile_ir(
            text, [symbol(double), gemv_symbol(double), job_symbol(double),
                   sum_job_symbol(double)], unroll=False, speed=1))
    return found


def prefetch(double: bool) -> None:
    """Start compiling the float64 (``double``) or float32 kernels on a thread of their own
    (``jit.in_background``), for a function whose products will call them: the compile (about
    0.3 s, the larger part of a first call) then runs while the compiler optimizes the
    function."""
    if double not in _addresses and enabled():
        in_background(("stepgemm", double), lambda: _compiled(double))


def job_address(double: bool) -> int:
    """The address of the pool job of the kernel (``JOB_SLOTS``)."""
    return _compiled(double)[2]


def sum_job_address(double: bool) -> int:
    """The address of the pool job of a sum of products (``SUM_SLOTS``)."""
    return _compiled(double)[3]


_I, _P = ctypes.c_int64, ctypes.c_void_p
_PROTOTYPE = ctypes.CFUNCTYPE(None, _I, _I, _I, _P, _I, _I, _P, _I, _I, _P, _I, _I, _P, _P, _I)


def kernel(double: bool) -> Any:
    """The kernel (``SIGNATURE``) as a ctypes function (it releases the GIL)."""
    fn = _functions.get(double)
    if fn is None:
        fn = _functions[double] = _PROTOTYPE(address(double))
    return fn
