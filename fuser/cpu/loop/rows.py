"""Whether a loop's steps are independent across batch rows (``row_split``): then the loop can
run as several loops over disjoint row ranges at once (``ranges``)."""

from __future__ import annotations

from fuser.cpu.loop.body import (
    CONSTRUCTORS,
    NUMBER_OPS,
    PIECES,
    REDUCTIONS,
    VIEWS,
    WRITES,
    known_array,
    reduction,
    split_pieces,
    write_parts,
)
from fuser.cpu.loop.program import LoopProgram
from fuser.cpu.loop.regions import is_region_write
from ir.core import Node, Value


def _keeps_rows(n: Node) -> bool:
    """Whether view ``n`` keeps its input's first axis as its own first axis (its row stride
    the input's): a broadcast to later axes, new axes after the first, a transpose of the
    others."""
    x, out = known_array(n.inputs[0]), known_array(n.output)
    if x is None or out is None:
        return False
    if n.kind == "tensor::broadcast_to":
        return len(x.shape) == len(out.shape)
    arg = n.inputs[1]
    if not arg.is_constant:
        return False
    given = arg.constant
    if n.kind == "tensor::expand_dims":
        axes = given if isinstance(given, (tuple, list)) else (given,)
        return all(int(a) % len(out.shape) != 0 for a in axes)
    if n.kind == "tensor::transpose":  # (None reverses every axis)
        return given is not None and int(given[0]) == 0
    return False  # a view not known to keep the rows


def partial_sums(prog: LoopProgram) -> dict[Value, Node]:
    """The carried accumulators of row sums, by parameter: ``p`` read in the steps by one node
    only, ``a = p + s`` or ``p - s`` (a kernel) that the step carries on as ``p``'s next value
    and nothing else reads, ``s`` a sum over the step's rows (``_row_sum``: a layer norm
    gradient's weight or bias sum, ``loss += np.sum(...)``) read by ``a`` alone. Loops over row
    ranges give each range an accumulator of its own (``private``: zero at the start but the
    first range's), summed after the ranges."""
    (body,) = prog.node.blocks
    ret = body.return_node
    found: dict[Value, Node] = {}
    for p, r in zip(prog.params, prog.results):
        a = r.node
        if (a.kind not in ("tensor::add", "tensor::sub") or a not in prog.kernels
                or a.owner is not body or (a.kind == "tensor::sub" and a.inputs[0] is not p)
                or len(p.uses) != 1 or p.users != [a] or len(r.uses) != 1
                or r.users != [ret] or prog.results.count(r) != 1):
            continue
        (s,) = [v for v in a.inputs if v is not p] or [None]
        if (s is None or not _row_sum(s) or len(s.uses) != 1 or known_array(s) is None
                or known_array(p) is None
                or known_array(s).shape != known_array(p).shape):  # type: ignore[union-attr]
            continue
        found[p] = a
    return found


def _row_sum(s: Value) -> bool:
    """Whether ``s`` sums over the first axis (the rows, ``row_split`` checks): a layer norm
    gradient's weight or bias sum, a product ``X^T @ G`` (``contracted_rows``: a weight's
    gradient), or a sum or mean over axes that include the first (a mean divides by every
    row's count, so the ranges' means add up to it)."""
    n = s.node
    if n.kind == "tensor::layer_norm_backward":
        return s.index > 0
    if n.kind == "tensor::matmul":
        return contracted_rows(n) is not None
    found = reduction(n) if REDUCTIONS.get(n.kind) in ("sum", "mean") else None
    return found is not None and 0 in found[0]


def contracted_rows(n: Node) -> tuple[Value, Value] | None:
    """``(X, G)`` when the matmul ``n`` is ``transpose(X) @ G`` of 2-D ``X`` and ``G``: a sum
    over their first axis of the rows' outer products (a row range's share: its rows of both)."""
    a, g = n.inputs
    view = a.node  # (made in the step, as ``n``: the range reads X's rows)
    axes = view.inputs[1] if view.kind == "tensor::transpose" else None
    if (axes is None or view.owner is not n.owner or not axes.is_constant
            or axes.constant not in (None, (1, 0), [1, 0])):
        return None
    x = view.inputs[0]
    tx, tg = known_array(x), known_array(g)
    if tx is None or tg is None or len(tx.shape) != 2 or len(tg.shape) != 2:
        return None
    return x, g


def _refused(prog: LoopProgram, why: str, n: Node | None = None) -> None:
    """Note why the loop runs over every row at once (``LoopProgram.whole_why``)."""
    if n is not None:
        at = f" at {n.source}" if n.source is not None else ""
        why = f"{n.kind}{at}: {why}"
    prog.whole_why = why


def row_split(prog: LoopProgram) -> int | None:
    """The batch size B when every step is independent across batch rows, else None.

    Every carried array is (B, ...); every array a step makes is (B, ...) with row r computed
    from row r of the (B, ...) arrays it reads (fusion groups: a leaf of the output's rank and
    B rows; matmuls: the left operand, the right one read whole) and from arrays read whole
    that no step writes. Then k loops over disjoint row ranges compute what one loop computes,
    each writing only its rows (of the made values, and of the slots it stores into)."""
    prog.partials, prog.private, prog.whole_why = {}, set(), ""
    partials = partial_sums(prog)
    params = [p for p in prog.params if p not in partials]
    if not params:
        return _refused(prog, "it carries no array")
    first = known_array(params[0])
    if first is None or not first.shape:  # a 0-d carry (an accumulator) has no rows
        return _refused(prog, f"carried %{params[0].name} has no batch axis (a number?)")
    batch = first.shape[0]
    if batch is None or batch < 2:
        return _refused(prog, "its batch has fewer than 2 rows")

    def rows(v: Value) -> bool:
        t = known_array(v)
        return t is not None and len(t.shape) >= 1 and t.shape[0] == batch

    if not all(rows(p) for p in params):
        odd = next(p.name or "?" for p in params if not rows(p))
        return _refused(prog, f"carried %{odd} is not (B, ...) as the first is")
    private = {v for p, a in partials.items() for v in (p, *a.inputs, a.output)}
    """the accumulators of row sums and the sums: each row range has its own."""
    split: set[Value] = (set(params) | set(prog.produced)) - private
    """values a row range's loop holds only its own rows of."""
    (body,) = prog.node.blocks
    for n in body:
        if is_region_write(n) or (n.kind in WRITES
                                  and prog.base(n.inputs[0]) is not prog.resolve(n.inputs[0])):
            return _refused(prog, "a write into a slice or a view of an array", n)
    time_major: set[Value] = set()
    """slot buffers written ``buf[t] = v``: (T, B, ...), the rows on their second axis."""
    for n in body:  # what the steps write rows of, wherever in the step they write it
        if n.kind in WRITES:
            written = {prog.resolve(n.inputs[0])}
            if n.kind == "tensor::select_put_":
                written.add(n.output)
            split.update(written)
            if int(write_parts(n)[1].constant) == 0:
                time_major.update(written)
    for n in body:
        kind = n.kind
        if kind not in WRITES and any(prog.resolve(v) in time_major for v in n.inputs):
            # (its first axis is the steps': a shape (B, ...) when T == B is not the rows)
            return _refused(prog, "it reads a (T, B, ...) buffer the steps write", n)
        uses: set[int] = set()
        if n in partials.values():
            pass  # an accumulator of this range's sums plus this step's: both its own
        elif n in prog.kernels:
            inputs = prog.kernel_inputs[n]
            outs = [known_array(v) for v in n.outputs]
            rank = len(outs[0].shape)  # type: ignore[union-attr]
            if not all(rows(v) and len(t.shape) == rank for v, t in zip(n.outputs, outs)):
                return _refused(prog, "its outputs are not all (B, ...)", n)
            for i in prog.kernels[n].spec.array_inputs:
                v = inputs[i]
                t = known_array(v)
                if t is not None and len(t.shape) == rank and t.shape[0] == batch:
                    uses.add(i)
                elif v in split:
                    return _refused(prog, "it reads an array the step makes whole (a broadcast)", n)
        elif kind == "tensor::matmul" and n.output in private:  # X^T @ G: a range's rows
            x, g = contracted_rows(n)  # type: ignore[misc]
            if not (rows(x) and rows(g)):
                return _refused(prog, "it sums over operands that are not the batch's rows", n)
        elif kind == "tensor::matmul":
            a, w = n.inputs
            if not rows(a) or w in split or len(known_array(a).shape) != 2 or len(  # type: ignore
                    known_array(w).shape) != 2:  # type: ignore[union-attr]
                return _refused(prog, "its left operand is not the batch's rows (B, k), or the "
                                "step makes its right operand", n)
            uses.add(0)
        elif kind in WRITES:
            buf, axis, _, value = write_parts(n)
            t = known_array(buf)
            ax = int(axis.constant)
            # the slot's rows are the buffer's axis after the slot's (T, B, ...) or, for a slot
            # along axis 1, its first (B, T, ...: ``hs[:, t, :] = h``)
            if not rows(value) or t is None or len(t.shape) < 2 or not (
                    (ax == 0 and t.shape[1] == batch) or (ax == 1 and t.shape[0] == batch)):
                return _refused(prog, "the value written is not the batch's rows of the slot", n)
        elif kind == "tensor::layer_norm":  # over the last axis: row r of x alone
            x, weight, bias = n.inputs[:3]
            if not rows(x) or len(known_array(x).shape) < 2 or weight in split \
                    or bias in split:  # type: ignore[union-attr]
                return _refused(prog, "not of the batch's rows, or the step makes its weight", n)
            uses.add(0)
        elif kind == "tensor::layer_norm_backward":  # row r of the input's gradient from
            # row r of the output's and of the input; the weight and bias sums of these rows
            g, x, weight = n.inputs[:3]
            if (not rows(g) or not rows(x) or len(known_array(x).shape) < 2  # type: ignore
                    or weight in split or not all(v in private for v in n.outputs[1:])):
                return _refused(prog, "not of the batch's rows, or the step reads its weight's "
                                "and bias's sums", n)
            uses.update((0, 1))
        elif kind == "tensor::cat":  # pieces joined along a later axis: row r of each
            pieces = prog.constructed.get(n.inputs[0], [])
            axis, out = n.inputs[1], known_array(n.output)
            ax = int(axis.constant) if axis.is_constant else 0
            ax = ax + len(out.shape) if out is not None and ax < 0 else ax
            if not (ax >= 1 and rows(n.output) and pieces and all(rows(v) for v in pieces)):
                return _refused(prog, "it joins along the batch axis", n)
            uses.add(0)
        elif kind == "prim::ListConstruct" and n.output in prog.constructed:
            pass  # a cat's pieces
        elif kind == "tensor::select" or kind == "tensor::unbind":
            if n.inputs[0] in split:
                # along a later axis (``out[:, t - 1]`` of a (B, T, ...) buffer the steps
                # write): this range's rows of it, which its own steps wrote
                t = known_array(n.inputs[0])
                ax = int(n.inputs[1].constant) if (
                    kind == "tensor::select" and n.inputs[1].is_constant) else 0
                ax = ax + len(t.shape) if t is not None and ax < 0 else ax
                if ax < 1 or not rows(n.inputs[0]) or not rows(n.output):
                    return _refused(prog, "it selects from rows the step makes (other ranges' "
                                    "too)", n)
                split.add(n.output)
        elif kind in PIECES or kind == "tensor::slice":  # views at an offset along an axis
            if n.inputs[0] in split:  # of this range's rows: along a later axis, the same rows
                found = split_pieces(n) if kind in PIECES else None
                ax = found[0] if found is not None else (
                    int(n.inputs[1].constant) if kind == "tensor::slice" else 0)
                t = known_array(n.inputs[0])
                ax = ax + len(t.shape) if t is not None and ax < 0 else ax
                if ax < 1 or not all(rows(v) for v in n.outputs):
                    return _refused(prog, "pieces along the batch axis", n)
                split.update(n.outputs)
        elif n in prog.fused:
            pass  # a product its sum makes as it sums (operands checked there)
        elif kind in REDUCTIONS:  # over later axes: row r of the result from row r
            x, found = n.inputs[0], reduction(n)
            if n.output in prog.same:  # over axes of length 1: x itself
                if x in split:
                    split.add(n.output)
            elif (not rows(x) if n.output in private  # a range's sum of its rows
                    else found is None or 0 in found[0] or found[1][0] != 0
                    or not rows(n.output)):
                return _refused(prog, "a reduction over the batch axis, not a carried sum", n)
            else:  # each operand at its rows (one broadcast along them, whole)
                rank = len(known_array(x).shape)  # type: ignore[union-attr]
                for v in prog.products.get(n, (x,)):
                    t = known_array(v)
                    if v in split and (t is None or len(t.shape) != rank):
                        return _refused(prog, "an operand of another rank", n)
        elif kind in CONSTRUCTORS:  # a range fills its rows
            if not rows(n.output):
                return _refused(prog, "the array it makes is not (B, ...)", n)
        elif kind == "tensor::reshape":  # C-ordered, the first axis kept: row r is row r
            x, out = n.inputs[0], n.output
            if x in split:
                if not (rows(x) and rows(out)):
                    return _refused(prog, "it moves the batch axis", n)
                split.add(out)
        elif kind in VIEWS:
            x, out = n.inputs[0], n.output
            if x in split and out.uses and all(
                    u.node.kind == "tensor::matmul" and u.index == 0 and u.node.output in private
                    for u in out.uses):
                pass  # X^T of a range's sum X^T @ G: the sum reads X's rows of the range
            elif x in split:
                if not (rows(x) and rows(out) and _keeps_rows(n)):
                    return _refused(prog, "it moves the batch axis", n)
                split.add(out)
        elif kind in ("prim::ListIndex", "prim::ListPop", "prim::ListAppend",
                      "prim::Constant", "prim::Int") or kind in NUMBER_OPS or (
                kind == "prim::TupleConstruct" and n.output in prog.kept):
            # (a tuple kept for after the loop: nothing reads it in the steps)
            pass
        else:
            return _refused(prog, "not row-wise", n)
        prog.row_inputs[n] = uses
    prog.partials = partials
    prog.private = private - set(prog.params)
    return batch
