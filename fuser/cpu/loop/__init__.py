"""Native recurrent loops: a ``prim::Loop`` compiled to one LLVM function, no Python per step.

The loop of a recurrent layer is a handful of nodes run T times: a row of the input projection
(``select``), the recurrent matmul, the fused cell (a fusion group) and the store of the new
state into the output (``write_slot``). Run as generated Python, each step costs a few
microseconds of interpreter and call overhead per node, which at small sizes (B=8, H=64) is
about as much as the arithmetic. ``compile_loop(node)`` analyzes such a loop once
(``LoopProgram``: which values come from outside, what each node does, where each value lives);
calling the result runs every step in native code:

- the loop counter and the integer arithmetic on it are LLVM integers; a ``select`` and a
  ``write_slot`` index wraps like Python's and is bounds-checked (an index out of range returns
  to Python, which reruns the loop and raises numpy's ``IndexError``);
- a ``matmul`` of two 2-D arrays is a call of numpy's own CBLAS GEMM through a function pointer
  (``fuser.cpu.blas``): the same library, threads and sums as numpy's ``@``;
- a fusion group calls the element loop of the group's kernel, compiled into the same module
  (the same ``noinline`` function the kernel's own entries call, so a step gives the kernel's
  bits), with the plan the kernel makes for these layouts (``Kernel.make_plan``);
- a reduction (``sum``, ``mean``, ``amax``, ``amin`` over constant axes, ``sum_to``) is a loop
  nest over its input with vectorized row loops (``reduce``); a ``sum`` or ``mean`` of a product
  nothing else reads multiplies as it sums, never writing the product; an array constructor
  (``zeros``, ``ones``, ``full``, ``empty``, their ``_like`` forms, a constant array) fills the
  step's buffer; a transpose, ``expand_dims`` or ``broadcast_to`` is a view (other strides);
- a ``write_slot`` (and an in-place ``x[t] = v``) is a ``memmove`` of the value into its slot
  (element by element when the value is strided), or nothing where the kernel that made the
  value wrote it in the slot itself (``slots``: an array made empty before the loop that only
  the write sees, a slot per step); the pieces of a ``split`` or ``chunk`` are
  views at offsets;
- a value made in the body lives in one of two buffers by step parity: the state carried into a
  step was made by the previous step in the other buffer, so nothing a step reads is
  overwritten while it runs; a value appended to a list (or carried into one that is) gets a
  slot per step in one (T, ...) buffer instead, and the list gets views of the slots after the
  loop. A tuple appended (a step's cache: made arrays, carried states, arrays from outside,
  selects of them, numbers of the step index) becomes, after the loop, the tuple the Python
  loop builds: one view object per slot, shared by every tuple that holds that step's array,
  the caller's own objects where it holds values from outside. The buffers come from the
  loop's workspace (``fuser.workspace``: reused by a later call once nothing holds them); the
  carried results the caller receives are the buffers of the last step;
- lists from outside the loop are read by index or popped from the end (the backward's saved
  values and cotangents: their items are checked once, before the first step), or appended to;
  dicts from outside with int keys are read by key (a call whose dict's keys are consecutive
  ints passes its items in key order and the lowest key; a key not there returns to Python,
  which raises ``KeyError``) or stored into (each step's items are kept like appended ones and
  stored after the loop, in the Python loop's order); a write into a copy (``x = zeros; x[i] =
  1``, ``dy = p.copy(); dy[k] -= 1``) copies the old array into the step's buffer first;
  a list of ints (a sentence's word indices) is read from an int64 copy the call makes, and an
  int array's item taken by ``int()`` (``for t in np.arange(T)``) is an LLVM integer;
- a loop whose arrays have sizes known only at run time (``Double(*, 400)``: ``T = len(x)``)
  is compiled when reached, for the shapes its arrays have then (``shapes.RunTimeShapes``: a
  typed copy of the loop per set of shapes, sharing machine code across them).

What the native code may assume is checked for each call before it runs (otherwise the caller
runs the loop as Python, ``None`` being returned): every array is an ``ndarray`` of its static
dtype and shape, the carried initial values are C-contiguous, every written array is writeable,
each kernel's plan for these layouts is one slab. The machine code depends only on the loop's
structure and on each kernel's column-stride classes: sizes, strides and addresses are run-time
arguments, so the object is shared across sizes and kept in ``fuser.cpu.jit``'s disk cache like
a kernel's.

When the steps are independent across batch rows and their products are large enough to pay
for it, the loop runs over several row ranges at once, one per BLAS thread
(``ranges.range_count``; ``RNNSCRIPT_LOOP_THREADS=N`` sets the count). Where a step's
product has a weight larger than a core's cache share, the ranges may compute it together
instead, each its columns of every row between two barriers (``coop``; a chooser keeps the way
that ran faster lately: beside a busy neighbour the barriers wait). A loop with anything
else in its body (ifs, nested loops, other ops, a ``while``, a list both read and appended to,
a dict both read and stored into)
stays Python: ``compile_loop`` raises ``LoopRefused`` saying which node, and ``explain``
reports it. ``RNNSCRIPT_NATIVE_LOOPS=0``
keeps every loop Python.

The modules: ``body`` (what the body's nodes are: op tables, value predicates), ``program``
(the analysis), ``rows`` (whether steps are independent across batch rows), ``layouts``,
``builder`` (the LLVM IR) and ``steps`` (its steps that are loops of their own), ``reduce``
(reductions, fills and element copies), ``runtime`` (``NativeLoop``: checks, variants, the
call), ``slots`` (values kernels write into their slots), ``appends`` (the appended lists
it hands back), ``ranges`` (row ranges on helper
threads), ``coop`` (products the ranges share), ``shapes`` (loops sized at run time) and
``shared_code`` (what their copies share).
"""

from __future__ import annotations

from fuser.cpu.loop.body import LoopRefused, enabled
from fuser.cpu.loop.program import LoopProgram
from fuser.cpu.loop.rows import row_split
from fuser.cpu.loop.runtime import NativeLoop, Variant
from fuser.cpu.loop.shapes import RunTimeShapes, outside_values, run_time_shaped
from ir.core import Node


def compile_loop(node: Node) -> NativeLoop | RunTimeShapes:
    """The native form of the loop ``node``; ``LoopRefused`` (a ValueError) says why not.

    A loop refused only because its arrays' sizes are known at run time compiles when it is
    reached, for those sizes (``RunTimeShapes``)."""
    try:
        return NativeLoop(analysed(node))
    except LoopRefused:
        if any(n.blocks for n in node.blocks[0]) or not any(
                run_time_shaped(v.type) for v in (*node.inputs, *outside_values(node))):
            raise
    try:
        return RunTimeShapes(node)
    except LoopRefused as e:
        raise LoopRefused(f"{e} (with the sizes its arrays have when it is reached)") from None


def analysed(node: Node) -> LoopProgram:
    """``LoopProgram.of(node)`` with its batch rows found (``rows.row_split``)."""
    prog = LoopProgram.of(node)
    prog.batch = row_split(prog)
    return prog


__all__ = ["LoopProgram", "LoopRefused", "NativeLoop", "RunTimeShapes", "Variant", "compile_loop",
           "enabled"]
