"""The analysis of a loop for native code: ``LoopProgram.of(node)`` says what each node of the
body does in terms the machine code needs (values from outside, made values, lists and their
roles, the carried values' sources), or raises ``LoopRefused`` naming the node it cannot take;
``rows.row_split`` then finds whether the steps are independent across batch rows."""

from __future__ import annotations

from dataclasses import dataclass, field

from fuser.cpu import blas
from fuser.cpu.kernel import Kernel, compile_group, layouts_supported
from fuser.cpu.loop.body import (
    CONSTRUCTORS,
    DEVIATIONS_MAX_BYTES,
    LAYER_NORMS,
    NUMBER_OPS,
    PIECES,
    PURE_WRITE,
    REDUCTIONS,
    VIEWS,
    WRITES,
    LoopRefused,
    int_array,
    int_list,
    is_dict,
    is_int,
    is_list,
    is_number,
    is_true,
    known_array,
    numbers,
    reduction,
    role,
    split_pieces,
    unread,
    what_it_is,
    where,
    write_parts,
)
from fuser.cpu.loop.regions import SLICE_WRITE, SLICE_WRITES, slice_range
from ir.core import Graph, Node, Value
from ir.ops.elementwise import IN_PLACE_ATTR
from ir.types import ScalarType, TensorType

_VIEWS_OF = ("tensor::select", "tensor::slice", "tensor::transpose", *PIECES)
"""views a write stores through into the array they view."""


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
    stores: list[tuple[Value, Value, Value]] = field(default_factory=list)
    """(dict, key, value) of each ``d[key] = value`` into a dict from outside, in body order:
    kept like appends, stored after the loop in step order."""
    tuples: dict[Value, list[Value]] = field(default_factory=dict)
    """tuples the body builds (their items): unpacked again, or appended to a list."""
    kept: dict[Value, tuple] = field(default_factory=dict)
    """how each step's value of what a step appends (an array, a tuple and its items) is found
    after the loop: ``("made", k)`` the step's slot of ``produced[k]``'s (T, ...) buffer,
    ``("carried", j)`` carried value j as the step received it, ``("free", k)`` ``free[k]``,
    ``("constant", c)``, ``("counter",)`` the step index, ``("op", kind, a, b)`` a number
    computed from such numbers, ``("select", x, axis, index)`` a select of such an array (a
    view, as numpy's), ``("tuple", items)``: the values named are keys of ``kept`` too."""
    counter: Value | None = None
    """the body's step index (0, 1, ...)."""
    same: dict[Value, Value] = field(default_factory=dict)
    """values that are another value of the body (a tuple's item unpacked)."""
    constructed: dict[Value, list[Value]] = field(default_factory=dict)
    """lists the body builds for a ``cat`` (their items are copied into its output)."""
    item_types: dict[Value, TensorType] = field(default_factory=dict)
    """the type of the items the body reads from each ``read`` or ``pop`` list."""
    batch: int | None = None
    """B when the steps are independent across the rows of a batch (``rows.row_split``): the
    loop can then run as several loops over disjoint row ranges at once."""
    partials: dict[Value, Node] = field(default_factory=dict)
    """carried accumulators of row sums and each one's add (``rows.partial_sums``)."""
    private: set[Value] = field(default_factory=set)
    """values each row range has its own of (``("private", v)`` bytes into their buffers)."""
    whole_why: str = ""
    """why the steps are not independent across batch rows (``batch`` None), for ``explain``."""
    row_inputs: dict[Node, set[int]] = field(default_factory=dict)
    """per node, the positions of its inputs it reads by batch row (its own rows only)."""
    unbound: dict[Value, tuple[Value, int]] = field(default_factory=dict)
    """lists the body makes with ``unbind(x, axis)`` (an item is ``select(x, axis, i)``)."""
    products: dict[Node, tuple[Value, Value]] = field(default_factory=dict)
    """sums (and means) of a product ``a * b`` read by nothing else: the operands per reduction
    node, the product being summed as it is made (see ``fused``)."""
    fused: set[Node] = field(default_factory=set)
    """the multiplications ``products`` computes inside a reduction (no step of their own)."""
    into_slots: dict[Value, Node] = field(default_factory=dict)  # see ``slots.candidates``
    int_items: set[Value] = field(default_factory=set)
    """0-d selects of an int array from outside that only ``prim::Int`` reads: one int each."""

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
        if not (is_true(cond) and is_true(body_cond)):
            raise LoopRefused("a while loop (its condition may change)")
        prog = cls(node, params=list(params), results=list(results), counter=counter)
        for p in params:
            if known_array(p) is None:
                raise LoopRefused(f"carried value %{p.name} of type {p.type} is not an array of "
                                  "known dtype and shape")
        inside = set(params) | {counter}
        seen: set[Value] = set()

        def use(v: Value) -> None:
            if v in inside or v in seen:
                return
            if v.is_constant and known_array(v) is None and not int_array(v) \
                    and not (is_list(v) or is_dict(v)):
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
            if known_array(v) is not None or int_array(v):
                prog.free_arrays.append(v)
            elif is_number(v):
                prog.free_scalars.append(v)
            elif is_list(v) or is_dict(v):
                prog.free_lists.append(v)
            else:
                raise LoopRefused(f"value %{v.name} of type {v.type} from outside the loop")
        for lst in prog.free_lists:
            prog.roles[lst] = role(lst, body)
            if prog.roles[lst] not in ("append", "store"):  # items read: of one known type
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
            if n.kind in WRITES or n.kind == SLICE_WRITE:
                buf = prog.base(n.inputs[0])
                if buf in free_pos:
                    prog.write_targets.append(free_pos[buf])
                elif buf in param_pos:
                    prog.written_params.append(param_pos[buf])
                elif buf not in made:
                    raise LoopRefused(f"{where(n)}: writes into a view")
        for lst, v in prog.appends:
            prog._keep(v, lst, made, free_at, param_pos)
        for d, key, v in prog.stores:
            prog._keep(key, d, made, free_at, param_pos)
            prog._keep(v, d, made, free_at, param_pos)
        if numbers(prog.produced) & prog.sequenced:
            # numpy's arithmetic, reductions and item reads give a number there (a numpy
            # scalar), the native loop a slot of a 0-d array (a carried one is handed back as
            # a number: ``runtime``)
            raise LoopRefused("a reduction to one number is kept beyond the step" if any(
                v.node.kind in REDUCTIONS for v in numbers(prog.produced) & prog.sequenced)
                else "a number (a 0-d result) is kept beyond the step")
        return prog

    def _keep(self, v: Value, lst: Value, made: dict[Value, int], free_at: dict[Value, int],
              param_pos: dict[Value, int]) -> None:
        """How each step's ``v`` (appended to ``lst``) is found after the loop (``kept``); a made
        array it is gets a slot per step (``sequenced``)."""
        if v in self.kept:
            return
        r = self.resolve(v)
        (body,) = self.node.blocks
        n = r.node
        if r in made:
            self.sequenced.add(r)
            how: tuple = ("made", made[r])
        elif r in param_pos:
            j = param_pos[r]
            source, k = self.sources[j]
            if source == "made":
                self.sequenced.add(self.produced[k])
            how = ("carried", j)
        elif r in free_at:
            how = ("free", free_at[r])
        elif r is self.counter:
            how = ("counter",)
        elif r.is_constant and known_array(r) is None and (
                r.constant is None or isinstance(r.constant, (bool, int, float, str))):
            how = ("constant", r.constant)
        elif r in self.tuples:
            how = ("tuple", self.tuples[r])
        elif n.owner is body and n.kind in NUMBER_OPS and is_number(r):
            how = ("op", n.kind, *n.inputs)
        elif n.owner is body and n.kind == "tensor::select" and n.inputs[1].is_constant:
            x, axis, idx = n.inputs
            how = ("select", x, int(axis.constant), idx)
        else:
            raise LoopRefused(f"appends %{v.name} to %{lst.name}: {what_it_is(r)}")
        self.kept[v] = how
        for w in how[1:]:
            for u in (w if isinstance(w, list) else [w]):
                if isinstance(u, Value):
                    self._keep(u, lst, made, free_at, param_pos)

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
        if kind == "prim::TupleConstruct":  # plumbing: a tuple unpacked again, or appended
            if any(u.node.kind not in ("prim::TupleUnpack", "prim::TupleIndex",
                                       "prim::TupleConstruct", "prim::ListAppend")
                   or u.node.owner is not n.owner for u in n.output.uses):
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
        if kind in PIECES:
            x, count, axis = n.inputs
            if (known_array(x) is None or not count.is_constant or not axis.is_constant
                    or split_pieces(n) is None):
                raise LoopRefused(f"{where(n)}: pieces of unknown shapes")
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
        if kind == "prim::ListIndex" and int_list(n.inputs[0]) and is_int(n.inputs[1]):
            if n.inputs[0].node.owner is n.owner:
                raise LoopRefused(f"{where(n)}: an item of a list the loop builds")
            return  # read from an int64 copy of the list the call makes
        if kind == "prim::Int":
            if n.inputs[0] not in self.int_items:
                raise LoopRefused(f"{where(n)}: an int of a value other than an int array's item")
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
        if kind in ("prim::DictGetItem", "prim::DictSetItem"):
            d, key = n.inputs[:2]
            item = n.output if kind == "prim::DictGetItem" else n.inputs[2]
            if d.node.owner is n.owner or not is_dict(d) or not is_int(key) or (
                    known_array(item) is None):
                raise LoopRefused(f"{where(n)}: an item of unknown type, or of a dict the loop "
                                  "builds")
            if kind == "prim::DictSetItem":
                self.stores.append((d, key, item))
            return
        if kind == "prim::ListAppend":
            lst, value = n.inputs
            if lst.node.owner is n.owner or (known_array(value) is None
                                             and self.resolve(value) not in self.tuples):
                raise LoopRefused(f"{where(n)}: an append of an array of unknown shape")
            self.appends.append((lst, value))
            return
        if kind == "tensor::select" and int_array(n.inputs[0]):
            x, axis, idx = n.inputs
            if (not axis.is_constant or not is_int(idx) or not n.output.uses
                    or any(u.node.kind != "prim::Int" for u in n.output.uses)):
                raise LoopRefused(f"{where(n)}: an item of an int array used other than by int()")
            self.int_items.add(n.output)
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
                    or (len(ta.shape), len(tb.shape)) not in ((2, 2), (2, 1), (1, 2), (1, 1))
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
            if REDUCTIONS[kind] in ("var", "std"):
                ddof, count, size = n.inputs[2], 1, 4 if tx.dtype == "float32" else 8
                for a in axes:
                    count *= tx.shape[a]  # type: ignore[operator]
                for d in to.shape:  # type: ignore[union-attr]
                    size *= d  # type: ignore[operator]
                if (not ddof.is_constant or type(ddof.constant) is not int
                        or count - ddof.constant <= 0 or size > DEVIATIONS_MAX_BYTES):
                    raise LoopRefused(f"{where(n)}: a {REDUCTIONS[kind]} whose ddof is not a "
                                      "constant below the count, or of a large result")
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
        if kind in LAYER_NORMS:
            self._check_layer_norm(n)
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
        if kind in SLICE_WRITES:
            self._check_slice_write(n)
            return
        if kind in WRITES or kind == PURE_WRITE:
            buf, axis, idx, value = write_parts(n)
            if kind == "tensor::select_put_":
                self.root[n.output] = self.resolve(buf)
            tb, tv = known_array(buf), known_array(value)
            ax = int(axis.constant) if axis.is_constant else None
            # a number filling a row of a copy (``x[i] = 1``) or a slot of an array in place
            # (``x[:, 0] = 1``), cast as numpy casts it
            filled = (kind in (PURE_WRITE, "tensor::select_put_") and is_number(value)
                      and tb is not None and tb.dtype in ("float32", "float64")
                      and (ax == 0 if kind == PURE_WRITE else len(tb.shape) >= 2))
            if (tb is None or (tv is None and not filled) or ax is None
                    or not 0 <= ax < len(tb.shape) or not is_int(idx)
                    or (kind == PURE_WRITE and known_array(n.output) != tb)
                    or (not filled and (tb.dtype != tv.dtype or tuple(tb.shape[:ax])
                                        + tuple(tb.shape[ax + 1:]) != tuple(tv.shape)))):
                raise LoopRefused(f"{where(n)}: a slot write that is not a plain copy (no "
                                  "broadcast, no cast)")
            if kind == PURE_WRITE:
                self.produced.append(n.output)
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

    def _check_slice_write(self, n: Node) -> None:
        """A slice of an array written in place (``x[:, a:b] = v``) or into a copy of it,
        with a value of the slice's dtype and shape, or a number (cast as numpy casts it)."""
        buf, value, axis, *bounds = n.inputs
        tb, tv = known_array(buf), known_array(value)
        if n.kind == SLICE_WRITE:
            self.root[n.output] = self.resolve(buf)
        elif known_array(n.output) != tb or tb is None:
            raise LoopRefused(f"{where(n)}: a slice write into a copy of another type")
        else:
            self.produced.append(n.output)
        ok = (tb is not None and axis.is_constant and type(axis.constant) is int
              and -len(tb.shape) <= axis.constant < len(tb.shape)
              and all(b.is_constant and (b.constant is None or type(b.constant) is int)
                      for b in bounds) and bounds[2].constant != 0)
        if ok:
            shape = list(tb.shape)  # type: ignore[union-attr]
            ax = axis.constant % len(shape)  # type: ignore[operator]
            shape[ax] = len(slice_range(shape[ax], [b.constant for b in bounds]))
            ok = (tv.dtype == tb.dtype and tuple(tv.shape) == tuple(shape) if tv is not None
                  else is_number(value) and tb.dtype in ("float32", "float64"))
        if not ok:
            raise LoopRefused(f"{where(n)}: a slice write that is not a plain copy (no "
                              "broadcast, no cast) or a number, at constant bounds")

    def base(self, v: Value) -> Value:
        """The array view ``v`` of the body is a view of (``v`` itself when not a view)."""
        v = self.resolve(v)
        (body,) = self.node.blocks
        while v.node.owner is body and v.node.kind in _VIEWS_OF:
            v = self.resolve(v.node.inputs[0])
        return v

    def _check_layer_norm(self, n: Node) -> None:
        """A layer norm (or its gradient) over the last axis of rows the step made, read from
        a list or selected (C-contiguous: ``planning`` checks), a weight and bias of one row or
        None, a constant eps: the row kernels of ``fuser.cpu.rowkernels``, row by row."""
        rows = n.inputs[:2] if n.kind == "tensor::layer_norm_backward" else n.inputs[:1]
        optional = n.inputs[2:3] if n.kind == "tensor::layer_norm_backward" else n.inputs[1:3]
        eps = n.inputs[-1]
        t = known_array(rows[-1])
        contiguous = [self.resolve(v) in self.produced
                      or v.node.kind in ("prim::ListIndex", "prim::ListPop", "tensor::select")
                      for v in rows]
        if (t is None or t.dtype not in ("float32", "float64") or not t.shape
                or not t.shape[-1] or not all(contiguous) or not eps.is_constant
                or not is_number(eps)
                or any(known_array(v) != t for v in (*rows, n.outputs[0]))
                or any(not (v.is_constant and v.constant is None)
                       and known_array(v) != TensorType(t.dtype, t.shape[-1:])
                       for v in optional)
                or any(known_array(v) != TensorType(t.dtype, t.shape[-1:])
                       for v in n.outputs[1:])):
            raise LoopRefused(f"{where(n)}: not a layer norm of contiguous rows the step makes, "
                              "reads from a list or selects, with a constant eps")
        self.produced.extend(n.outputs)

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
