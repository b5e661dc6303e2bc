"""The analysis of a loop for native code: ``LoopProgram.of(node)`` says what each node of the
body does in terms the machine code needs (values from outside, made values, lists and their
roles, the carried values' sources), or raises ``LoopRefused`` naming the node it cannot take;
``_row_split`` finds whether the steps are independent across batch rows."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from fuser.cpu import blas
from fuser.cpu.kernel import Kernel, compile_group, layouts_supported
from ir.core import Graph, Node, Value
from ir.ops.elementwise import IN_PLACE_ATTR
from ir.types import ListType, ScalarType, TensorType

NUMBER_OPS = {"tensor::add": ("add", "fadd"), "tensor::sub": ("sub", "fsub"),
              "tensor::mul": ("mul", "fmul"), "tensor::div": (None, "fdiv")}
"""Python number arithmetic in the body (a step index, a decay factor): LLVM's integer and IEEE
double operations give Python's results; an int result that leaves 64 bits, and ``/`` by zero,
return to Python, which computes the big int or raises."""
WRITES = ("tensor::write_slot", "tensor::select_put_")
REDUCTIONS = {"tensor::sum": "sum", "tensor::mean": "mean", "tensor::amax": "max",
              "tensor::amin": "min", "tensor::sum_to": "sum"}
"""reductions of a float array over constant axes (all, one or several; ``keepdims`` or not;
``sum_to`` a shape, the gradient of a broadcast), as native steps: the op each computes (``mean``
is a sum divided by the count)."""
VIEWS = ("tensor::broadcast_to", "tensor::expand_dims", "tensor::transpose")
"""views of known shapes the native code makes by strides (0 along a broadcast axis)."""
CONSTRUCTORS = {"tensor::zeros": ("zeros", None), "tensor::ones": ("ones", None),
                "tensor::full": ("full", 1), "tensor::empty": ("empty", None),
                "tensor::zeros_like": ("zeros", None), "tensor::ones_like": ("ones", None),
                "tensor::full_like": ("full", 1), "tensor::empty_like": ("empty", None)}
"""array constructors of a shape known when compiling: the fill and the position of its value
(``full``); the shape, dtype and ``*_like`` template inputs are not read by the native code."""
_STORED = ("float32", "float64", "bool")


class LoopRefused(ValueError):
    """The loop cannot run natively; the message says which node or value and why."""


def enabled() -> bool:
    """Whether loops are compiled natively (``RNNSCRIPT_NATIVE_LOOPS=0`` turns it off)."""
    return os.environ.get("RNNSCRIPT_NATIVE_LOOPS", "1").strip().lower() not in ("0", "false",
                                                                                "off")


def where(node: Node) -> str:
    src = getattr(node, "source_range", None)
    return f"{node.kind}" + (f" ({src})" if src else "")


def known_array(v: Value) -> TensorType | None:
    t = v.type
    if (isinstance(t, TensorType) and t.dtype in _STORED and t.shape is not None
            and None not in t.shape):
        return t
    return None


def write_parts(n: Node) -> tuple[Value, Value, Value, Value]:
    """(array, axis, index, value) of a slot write: ``write_slot(buf, axis, index, value)`` or
    ``select_put_(buf, value, axis, index)``."""
    if n.kind == "tensor::select_put_":
        buf, value, axis, idx = n.inputs
        return buf, axis, idx, value
    buf, axis, idx, value = n.inputs
    return buf, axis, idx, value


def is_list(v: Value) -> bool:
    return isinstance(v.type, ListType)


def _role(lst: Value, body: Any) -> str:
    """What the loop body does with list ``lst`` from outside: ``read`` items by index, ``pop``
    one item from the end per step, or ``append``; a mix (which would need the list's state
    between steps) is refused."""
    kinds = [u.node.kind for u in lst.uses if u.node.owner is body]
    if kinds and all(k == "prim::ListAppend" for k in kinds):
        return "append"
    if kinds == ["prim::ListPop"]:
        return "pop"
    if kinds and all(k == "prim::ListIndex" for k in kinds):
        return "read"
    raise LoopRefused(f"list %{lst.name} is used as {', '.join(sorted(set(kinds)))} in one loop")


def is_int(v: Value) -> bool:
    return isinstance(v.type, ScalarType) and v.type.name == "int"


def is_number(v: Value) -> bool:
    return isinstance(v.type, ScalarType) and v.type.name in ("int", "float")


def _true(v: Value) -> bool:
    return v.is_constant and v.constant is True


def unread(n: Node) -> set[int]:
    """Positions of ``n``'s inputs the native code does not read (a reduction's axes and
    keepdims, a constructor's shape, dtype and template): only their types matter."""
    if n.kind in REDUCTIONS or n.kind in VIEWS:
        return set(range(1, len(n.inputs)))
    if n.kind in CONSTRUCTORS:
        value = CONSTRUCTORS[n.kind][1]
        return set(range(len(n.inputs))) - ({value} if value is not None else set())
    return set()


def reduction(n: Node) -> tuple[tuple[int, ...], list[int | None]] | None:
    """The axes reduction ``n`` reduces (sorted, non-negative) and, per input axis, the output
    axis it is (None when dropped); None when the axes are not constants."""
    x = n.inputs[0]
    t, to = known_array(x), known_array(n.output)
    if t is None or to is None:
        return None
    shape, rank = tuple(t.shape), len(t.shape)  # type: ignore[arg-type]
    if n.kind == "tensor::sum_to":
        lead = rank - len(to.shape)  # type: ignore[arg-type]
        if lead < 0:
            return None
        axes = tuple(range(lead)) + tuple(
            a for a in range(lead, rank) if to.shape[a - lead] == 1 and shape[a] != 1)
        return axes, [None if a < lead else a - lead for a in range(rank)]
    _, axis, keep = n.inputs
    if not axis.is_constant or not keep.is_constant:
        return None
    a = axis.constant
    items = range(rank) if a is None else a if isinstance(a, (tuple, list)) else (a,)
    out = []
    for k in items:
        if isinstance(k, bool) or not isinstance(k, int) or not -rank <= k < max(rank, 1):
            return None
        out.append(k % rank if rank else 0)
    if len(set(out)) != len(out):
        return None
    kept = [a for a in range(rank) if a not in out]
    return tuple(sorted(out)), [a if keep.constant else (kept.index(a) if a in kept else None)
                                for a in range(rank)]


# -- the analysis ----------------------------------------------------------------------------------
@dataclass
class LoopProgram:
    """What one ``prim::Loop`` does, in the terms the native code needs."""

    node: Node
    free: list[Value] = field(default_factory=list)
    """the values from outside the loop the body reads, in first-use order."""
    free_arrays: list[Value] = field(default_factory=list)
    free_scalars: list[Value] = field(default_factory=list)
    params: list[Value] = field(default_factory=list)
    """the body's carried parameters (the counter excluded)."""
    results: list[Value] = field(default_factory=list)
    """what each step carries to the next (the condition excluded)."""
    produced: list[Value] = field(default_factory=list)
    """the arrays the body makes (matmul and fusion group outputs): two buffers each."""
    kernels: dict[Node, Kernel] = field(default_factory=dict)
    """the kernel of each fusion group, and of each elementwise op outside one."""
    kernel_inputs: dict[Node, list[Value]] = field(default_factory=dict)
    """the values a kernel's inputs are, in its subgraph's order."""
    write_targets: list[int] = field(default_factory=list)
    """positions in ``free_arrays`` of arrays the body writes into."""
    written_params: list[int] = field(default_factory=list)
    """carried slots whose array the body writes into (in place, as numpy does)."""
    sources: list[tuple[str, int]] = field(default_factory=list)
    """per carried result: ("made", index in ``produced``), ("same", its own slot) or
    ("free", index in ``free``)."""
    root: dict[Value, Value] = field(default_factory=dict)
    """the array an in-place write's result is (``select_put_`` returns its target)."""
    free_lists: list[Value] = field(default_factory=list)
    """lists from outside the body reads items of (``read``), pops one item from per step
    (``pop``) or appends to (``append``); see ``roles``."""
    roles: dict[Value, str] = field(default_factory=dict)
    appends: list[tuple[Value, Value]] = field(default_factory=list)
    """(list, value) of each append, in body order."""
    sequenced: set[Value] = field(default_factory=set)
    """made values every step of which must stay readable after the loop (appended, or carried
    into a value that is): they live in one (T, ...) buffer, a slot per step, instead of two."""
    tuples: dict[Value, list[Value]] = field(default_factory=dict)
    """tuples the body builds and unpacks again (their items)."""
    same: dict[Value, Value] = field(default_factory=dict)
    """values that are another value of the body (a tuple's item unpacked)."""
    constructed: dict[Value, list[Value]] = field(default_factory=dict)
    """lists the body builds for a ``cat`` (their items are copied into its output)."""
    item_types: dict[Value, TensorType] = field(default_factory=dict)
    """the type of the items the body reads from each ``read`` or ``pop`` list."""
    batch: int | None = None
    """B when the steps are independent across the rows of a batch (see ``_row_split``): the
    loop can then run as several loops over disjoint row ranges at once."""
    row_inputs: dict[Node, set[int]] = field(default_factory=dict)
    """per node, the positions of its inputs it reads by batch row (its own rows only)."""
    unbound: dict[Value, tuple[Value, int]] = field(default_factory=dict)
    """lists the body makes with ``unbind(x, axis)`` (an item is ``select(x, axis, i)``)."""
    products: dict[Node, tuple[Value, Value]] = field(default_factory=dict)
    """sums (and means) of a product ``a * b`` read by nothing else: the operands per reduction
    node, the product being summed as it is made (see ``fused``)."""
    fused: set[Node] = field(default_factory=set)
    """the multiplications ``products`` computes inside a reduction (no step of their own)."""

    @classmethod
    def of(cls, node: Node) -> LoopProgram:
        if node.kind != "prim::Loop":
            raise LoopRefused(f"{node.kind} is not a loop")
        if not layouts_supported():
            raise LoopRefused("the CPU fuser does not know this Python build's object layout")
        if blas.gemm() is None:
            raise LoopRefused("numpy's CBLAS GEMM was not found")
        trip, cond, *carried = node.inputs
        (body,) = node.blocks
        counter, *params = body.params
        body_cond, *results = body.returns
        if not (_true(cond) and _true(body_cond)):
            raise LoopRefused("a while loop (its condition may change)")
        prog = cls(node, params=list(params), results=list(results))
        for p in params:
            if known_array(p) is None:
                raise LoopRefused(f"carried value %{p.name} of type {p.type} is not an array of "
                                  "known dtype and shape")
        inside = set(params) | {counter}
        seen: set[Value] = set()

        def use(v: Value) -> None:
            if v in inside or v in seen:
                return
            if v.is_constant and known_array(v) is None and not is_list(v):
                return  # a number, bool or None: written into the code
            seen.add(v)
            prog.free.append(v)

        for n in body:  # the structure first: nothing else matters while a block is nested
            if n.blocks:
                what = "a nested loop" if n.kind == "prim::Loop" else "a nested block"
                raise LoopRefused(f"{where(n)}: {what}")
        for n in body:
            prog._check(n)
            skip = unread(n)
            for k, v in enumerate(n.inputs):
                if k not in skip:
                    use(v)
            inside.update(n.outputs)
        prog._fuse_products()
        for v in prog.free:
            if known_array(v) is not None:
                prog.free_arrays.append(v)
            elif is_number(v):
                prog.free_scalars.append(v)
            elif is_list(v):
                prog.free_lists.append(v)
            else:
                raise LoopRefused(f"value %{v.name} of type {v.type} from outside the loop")
        for lst in prog.free_lists:
            prog.roles[lst] = _role(lst, body)
            if prog.roles[lst] != "append":  # the items read must all be of one known type
                types = {u.node.output.type for u in lst.uses if u.node.owner is body}
                if len(types) != 1:
                    raise LoopRefused(f"items of list %{lst.name} read as {len(types)} types")
                prog.item_types[lst] = types.pop()
        made = {v: k for k, v in enumerate(prog.produced)}
        free_at = {v: k for k, v in enumerate(prog.free)}
        for j, r in enumerate(results):
            r = prog.resolve(r)
            if r in made:
                prog.sources.append(("made", made[r]))
            elif r is params[j]:
                prog.sources.append(("same", j))
            elif r in free_at:
                prog.sources.append(("free", free_at[r]))
            else:
                raise LoopRefused(f"carried value {j} is not made in the body, unchanged or a "
                                  "value from outside")
        free_pos = {v: k for k, v in enumerate(prog.free_arrays)}
        param_pos = {v: k for k, v in enumerate(params)}
        for n in body:
            if n.kind in WRITES:
                buf = prog.resolve(n.inputs[0])
                if buf in free_pos:
                    prog.write_targets.append(free_pos[buf])
                elif buf in param_pos:
                    prog.written_params.append(param_pos[buf])
                elif buf not in made:
                    raise LoopRefused(f"{where(n)}: writes into a view")
        for lst, v in prog.appends:
            r = prog.resolve(v)
            if r in made:
                prog.sequenced.add(r)
            elif r in param_pos:
                how, k = prog.sources[param_pos[r]]
                if how == "made":
                    prog.sequenced.add(prog.produced[k])
            elif r not in free_pos:
                raise LoopRefused(f"appends %{v.name}, a view or a list item, to %{lst.name}")
        numbers = {n.output for n in body if n.kind in REDUCTIONS and not n.output.type.shape}
        if numbers & prog.sequenced or any(how == "made" and prog.produced[k] in numbers
                                           for how, k in prog.sources):
            # numpy gives a number there, the native loop a 0-d array
            raise LoopRefused("a reduction to one number is kept beyond the step")
        prog.batch = _row_split(prog)
        return prog

    def resolve(self, v: Value) -> Value:
        """The value of the body ``v`` is: a tuple item unpacked is the item, an in-place
        write's result is the array written."""
        v = self.same.get(v, v)
        return self.root.get(v, v)

    def _check(self, n: Node) -> None:
        kind = n.kind
        if kind in ("prim::Constant", "prim::TupleConstruct") and n.output.uses and all(
                u.index in unread(u.node) for u in n.output.uses):
            return  # a shape, axis or dtype only its users' types depend on
        if kind == "prim::Constant" and known_array(n.output) is not None:
            self.produced.append(n.output)  # a fresh copy each step, as the Python loop makes
            return
        if kind == "prim::Constant":
            if not (is_number(n.output) or n.output.type == ScalarType("bool")):
                raise LoopRefused(f"{where(n)}: a constant of type {n.output.type}")
            return
        if kind in NUMBER_OPS and all(is_number(v) for v in (*n.inputs, *n.outputs)):
            if NUMBER_OPS[kind][0] is None and is_int(n.output):
                raise LoopRefused(f"{where(n)}: an int {kind}")
            return
        if kind == "prim::TupleConstruct":  # plumbing: a tuple the body unpacks again
            if any(u.node.kind not in ("prim::TupleUnpack", "prim::TupleIndex")
                   for u in n.output.uses):
                raise LoopRefused(f"{where(n)}: a tuple kept beyond the step")
            self.tuples[n.output] = list(n.inputs)
            return
        if kind in ("prim::TupleUnpack", "prim::TupleIndex"):
            items = self.tuples.get(n.inputs[0])
            if items is None or (kind == "prim::TupleIndex" and not n.inputs[1].is_constant):
                raise LoopRefused(f"{where(n)}: an item of a tuple from outside the loop")
            chosen = items if kind == "prim::TupleUnpack" else [items[int(n.inputs[1].constant)]]
            for out, item in zip(n.outputs, chosen):
                self.same[out] = self.same.get(item, item)
            return
        if kind == "tensor::slice":
            x, axis, *bounds = n.inputs
            if (known_array(x) is None or known_array(n.output) is None or not axis.is_constant
                    or not all(v.is_constant for v in bounds)):
                raise LoopRefused(f"{where(n)}: a slice with bounds known only at run time")
            return
        if kind == "tensor::reshape":
            x, _ = n.inputs
            if known_array(x) is None or known_array(n.output) is None:
                raise LoopRefused(f"{where(n)}: a reshape of unknown shapes")
            if known_array(x).shape == known_array(n.output).shape:  # type: ignore[union-attr]
                self.same[n.output] = self.same.get(x, x)  # the same array, another view
            return
        if kind == "prim::ListConstruct":
            if not all(known_array(v) for v in n.inputs) or any(
                    u.node.kind != "tensor::cat" for u in n.output.uses):
                raise LoopRefused(f"{where(n)}: a list built in the loop used other than by cat")
            self.constructed[n.output] = list(n.inputs)
            return
        if kind == "tensor::cat":
            lst, axis = n.inputs
            t = known_array(n.output)
            if lst not in self.constructed or not axis.is_constant or t is None or not all(
                    known_array(v).dtype == t.dtype for v in self.constructed[lst]):
                raise LoopRefused(f"{where(n)}: a cat of arrays built elsewhere")
            self.produced.append(n.output)
            return
        if kind == "tensor::unbind":
            x, axis = n.inputs
            if known_array(x) is None or not axis.is_constant:
                raise LoopRefused(f"{where(n)}: not an unbind of a known array")
            if any(u.node.kind != "prim::ListIndex" for u in n.output.uses):
                raise LoopRefused(f"{where(n)}: a list of slices used other than by index")
            self.unbound[n.output] = (x, int(axis.constant))
            return
        if kind in ("prim::ListIndex", "prim::ListPop"):
            lst, idx = n.inputs
            if lst not in self.unbound and (not is_list(lst) or lst.node.owner is n.owner):
                raise LoopRefused(f"{where(n)}: an item of a list of unknown arrays")
            if not is_int(idx) or known_array(n.output) is None:
                raise LoopRefused(f"{where(n)}: an item of unknown type")
            if kind == "prim::ListPop" and not (idx.is_constant and idx.constant == -1):
                raise LoopRefused(f"{where(n)}: a pop from elsewhere than the end")
            return
        if kind == "prim::ListAppend":
            lst, value = n.inputs
            if known_array(value) is None or lst.node.owner is n.owner:
                raise LoopRefused(f"{where(n)}: an append of an array of unknown shape")
            self.appends.append((lst, value))
            return
        if kind == "tensor::select":
            x, axis, idx = n.inputs
            if known_array(x) is None or not axis.is_constant or not is_int(idx):
                raise LoopRefused(f"{where(n)}: not a select of a known array by an int")
            return
        if kind == "tensor::matmul":
            a, b = n.inputs
            ta, tb, to = known_array(a), known_array(b), known_array(n.output)
            if (ta is None or tb is None or to is None
                    or (len(ta.shape), len(tb.shape)) not in ((2, 2), (2, 1), (1, 2))
                    or not ta.dtype == tb.dtype == to.dtype
                    or ta.dtype not in ("float32", "float64")):
                raise LoopRefused(f"{where(n)}: not a matmul of two float matrices (or a matrix "
                                  "and a vector) of one dtype")
            self.produced.append(n.output)
            return
        if kind == "prim::FusionGroup":
            try:
                kernel = compile_group(n.subgraph)
            except (ValueError, RuntimeError) as e:
                raise LoopRefused(f"{where(n)}: no CPU kernel ({e})") from None
            for v in n.outputs:
                if known_array(v) is None:
                    raise LoopRefused(f"{where(n)}: output %{v.name} of unknown shape")
            self._kernel(n, kernel, list(n.inputs))
            return
        if kind in REDUCTIONS:
            x = n.inputs[0]
            tx, to = known_array(x), known_array(n.output)
            found = reduction(n)
            if (tx is None or to is None or found is None or tx.dtype != to.dtype
                    or tx.dtype not in ("float32", "float64")):
                raise LoopRefused(f"{where(n)}: not a reduction of a float array over constant "
                                  "axes")
            if kind == "tensor::sum_to" and tx.shape == to.shape:
                self.same[n.output] = self.same.get(x, x)  # numpy returns the array itself
                return
            axes = found[0]
            if REDUCTIONS[kind] != "sum" and any(tx.shape[a] == 0 for a in axes):  # type: ignore
                raise LoopRefused(f"{where(n)}: a {REDUCTIONS[kind]} over no elements")
            self.produced.append(n.output)
            return
        if kind in VIEWS:
            tx, to = known_array(n.inputs[0]), known_array(n.output)
            if tx is None or to is None or (kind != "tensor::broadcast_to"
                                            and not n.inputs[1].is_constant):
                raise LoopRefused(f"{where(n)}: a view of unknown shapes")
            if tx.shape == to.shape and kind == "tensor::broadcast_to":
                self.same[n.output] = self.same.get(n.inputs[0], n.inputs[0])
            return
        if kind in CONSTRUCTORS:
            t = known_array(n.output)
            fill, at = CONSTRUCTORS[kind]
            if t is None or (fill in ("ones", "full") and t.dtype not in ("float32", "float64")):
                raise LoopRefused(f"{where(n)}: an array of a shape or dtype not known when "
                                  "compiling")
            if at is not None and not is_number(n.inputs[at]):
                raise LoopRefused(f"{where(n)}: a fill value that is not a number")
            self.produced.append(n.output)
            return
        if kind in WRITES:
            buf, axis, idx, value = write_parts(n)
            if kind == "tensor::select_put_":
                self.root[n.output] = self.resolve(buf)
            tb, tv = known_array(buf), known_array(value)
            ax = int(axis.constant) if axis.is_constant else None
            if (tb is None or tv is None or ax is None or not 0 <= ax < len(tb.shape)
                    or not is_int(idx) or tb.dtype != tv.dtype
                    or tuple(tb.shape[:ax]) + tuple(tb.shape[ax + 1:]) != tuple(tv.shape)):
                raise LoopRefused(f"{where(n)}: a slot write that is not a plain copy (no "
                                  "broadcast, no cast)")
            return
        if kind.startswith("tensor::") and all(known_array(v) for v in n.outputs):
            single = _single_op_group(n)  # an elementwise op no group took: a kernel of its own
            if single is not None:
                graph, inputs = single
                try:
                    kernel = compile_group(graph)
                except (ValueError, RuntimeError):
                    pass
                else:
                    self._kernel(n, kernel, inputs)
                    return
        raise LoopRefused(f"{where(n)}: no native code for {kind}")

    def _fuse_products(self) -> None:
        """Sum each ``a * b`` only a sum or mean reads as it is made: numpy rounds each product
        and adds them, and so does the reduction's row loop, without writing the product array
        (which at attention sizes is most of the step's memory traffic)."""
        (body,) = self.node.blocks
        for n in body:
            if REDUCTIONS.get(n.kind) not in ("sum", "mean") or n.output not in self.produced:
                continue
            x = n.inputs[0]
            m = x.node
            if m not in self.kernels or m.kind != "tensor::mul" or len(x.uses) != 1:
                continue
            inputs = self.kernel_inputs[m]
            t = known_array(x)
            if (len(inputs) != 2 or self.kernels[m].spec.scalar_inputs
                    or any(known_array(v) is None or known_array(v).dtype != t.dtype  # type: ignore
                           for v in inputs)):
                continue
            self.products[n] = (inputs[0], inputs[1])
            self.fused.add(m)
            del self.kernels[m], self.kernel_inputs[m]
            self.produced.remove(x)

    def _kernel(self, n: Node, kernel: Kernel, inputs: list[Value]) -> None:
        for i in kernel.spec.scalar_inputs:
            if not (is_number(inputs[i]) or inputs[i].type == ScalarType("bool")):
                raise LoopRefused(f"{where(n)}: scalar input {i} is not a number")
        self.kernels[n] = kernel
        self.kernel_inputs[n] = inputs
        self.produced.extend(n.outputs)


def _row_split(prog: LoopProgram) -> int | None:
    """The batch size B when every step is independent across batch rows, else None.

    Every carried array is (B, ...); every array a step makes is (B, ...) with row r computed
    from row r of the (B, ...) arrays it reads (fusion groups: a leaf of the output's rank and
    B rows; matmuls: the left operand, the right one read whole) and from arrays read whole
    that no step writes. Then k loops over disjoint row ranges compute what one loop computes,
    each writing only its rows (of the made values, and of the slots it stores into)."""
    params = prog.params
    if not params:
        return None
    first = known_array(params[0])
    if first is None or not first.shape:  # a 0-d carry (an accumulator) has no rows
        return None
    batch = first.shape[0]
    if batch is None or batch < 2:
        return None

    def rows(v: Value) -> bool:
        t = known_array(v)
        return t is not None and len(t.shape) >= 1 and t.shape[0] == batch

    if not all(rows(p) for p in params):
        return None
    split: set[Value] = set(params) | set(prog.produced)
    """values a row range's loop holds only its own rows of."""
    (body,) = prog.node.blocks
    for n in body:  # what the steps write rows of, wherever in the step they write it
        if n.kind in WRITES:
            split.add(prog.resolve(n.inputs[0]))
            if n.kind == "tensor::select_put_":
                split.add(n.output)
    for n in body:
        kind = n.kind
        uses: set[int] = set()
        if n in prog.kernels:
            inputs = prog.kernel_inputs[n]
            outs = [known_array(v) for v in n.outputs]
            rank = len(outs[0].shape)  # type: ignore[union-attr]
            if not all(rows(v) and len(t.shape) == rank for v, t in zip(n.outputs, outs)):
                return None
            for i in prog.kernels[n].spec.array_inputs:
                v = inputs[i]
                t = known_array(v)
                if t is not None and len(t.shape) == rank and t.shape[0] == batch:
                    uses.add(i)
                elif v in split:
                    return None  # a made value read whole (broadcast)
        elif kind == "tensor::matmul":
            a, w = n.inputs
            if not rows(a) or w in split or len(known_array(a).shape) != 2 or len(  # type: ignore
                    known_array(w).shape) != 2:  # type: ignore[union-attr]
                return None  # (a vector's rows are not batch rows)
            uses.add(0)
        elif kind in WRITES:
            buf, axis, _, value = write_parts(n)
            t = known_array(buf)
            ax = int(axis.constant)
            if not rows(value) or t is None or ax != 0 or len(t.shape) < 2 or t.shape[1] != batch:
                return None
        elif kind == "tensor::select" or kind == "tensor::unbind":
            if n.inputs[0] in split:
                return None  # a view of rows written by other row ranges
        elif kind in ("prim::ListIndex", "prim::ListPop", "prim::ListAppend",
                      "prim::Constant") or kind in NUMBER_OPS:
            pass
        else:
            return None
        prog.row_inputs[n] = uses
    return batch


def _single_op_group(n: Node) -> tuple[Graph, list[Value]] | None:
    """A fusion subgraph of the one elementwise node ``n`` and the values its inputs are; None
    when the CPU backend has no rule for it."""
    from fuser.cpu import BACKEND
    if not BACKEND.can_generate(n):
        return None
    graph = Graph(name="single")
    inputs, args = [], []
    for v in n.inputs:
        if v.is_constant and not isinstance(v.type, TensorType):
            # a number is written into the code; a constant array is read like any input
            args.append(graph.constant(v.constant, v.type))
        else:
            args.append(graph.add_input(v.type))
            inputs.append(v)
    attrs = {k: v for k, v in n.attrs.items() if k != IN_PLACE_ATTR}  # the kernel makes its own
    node = graph.insert(n.kind, args, [v.type for v in n.outputs], attrs)
    for out in node.outputs:
        graph.add_output(out)
    return graph, inputs
