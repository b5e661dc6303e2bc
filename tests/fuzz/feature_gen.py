"""Statements for the generator's features (same-value ifs, dicts, comprehensions, recurrences,
tuples of lists): a mixin of ``FunctionWriter``, which holds the names in scope."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.fuzz.program_types import (
    DIMS,
    INT,
    DictT,
    ListT,
    Scope,
    Shape,
    TensorT,
    TupleT,
)


class FeatureWriter:
    """Writes the feature statements; ``FunctionWriter`` supplies ``draw`` and the scopes."""

    # -- feature statements (see FEATURES) --------------------------------------------------------
    def same_value_if(self) -> None:
        """Both arms assign existing values: the same one, or one each (no new computation)."""
        shape = self.known_shape()
        values = self.of_type(lambda t: isinstance(t, TensorT) and t.shape == shape)
        if not values:
            self.assign_new()
            return
        targets = self.assignable(shape)
        target = self.choice(targets) if targets and self.coin(0.7) else self.fresh("c")
        first = self.choice(values)
        others = [v for v in values if v != first]
        second = self.choice(others) if others and self.coin(0.5) else first
        self.emit(f"if {self.bool_expr()}:")
        self.emit(f"    {target} = {first}")
        self.emit("else:")
        self.emit(f"    {target} = {second}")
        self.budget -= 2
        self.bind(target, TensorT(shape))

    def dict_new(self) -> None:
        key = self.choice(["int", "str"])
        name = self.fresh("d")
        self.emit(f"{name}: Dict[{key}, Tensor] = {{}}")
        self.bind(name, DictT(key, ()))
        self.dict_write(name)

    def dict_write(self, name: str | None = None) -> None:
        """``d[key] = value``: a key already set keeps its shape; a new key is set only in this
        block (after an ``if`` it may be missing, so it is not read there)."""
        name = name or self.choice(self.of_type(lambda t: isinstance(t, DictT) and not t.argument))
        t = self.visible()[name]
        entries = dict(t.entries)
        if entries and self.coin(0.5):
            key = self.choice(sorted(entries, key=str))
        else:
            key = len(entries) if t.key == "int" else self.choice(["h", "c", "out", "w"])
        shape = entries.get(key) or self.known_shape()
        self.emit(f"{name}[{key!r}] = {self.tensor_expr(shape, 2)}")
        entries[key] = shape
        self.bind(name, DictT(t.key, tuple(entries.items())))

    def comprehension(self) -> None:
        lists = self.of_type(lambda t: isinstance(t, ListT) and t.nonempty)
        kind = self.choice(["columns", "rows", "scaled", "map"])
        if kind == "map":
            if lists:
                src = self.choice(lists)
                elem = self.visible()[src].elem
            else:
                elem = self.known_shape()
                src = f"[{self.tensor_expr(elem, 1)}, {self.tensor_expr(elem, 1)}]"
            v = self.fresh("v")
            self.scopes.append(Scope({v: TensorT(elem)}))
            expr = self.tensor_expr(elem, 1)
            self.scopes.pop()
            self.emit_list(f"[{expr} for {v} in {src}]", elem, None)
            return
        shape = self.known_shape()
        if kind == "scaled" or len(shape) < 2:
            n = self.draw(st.integers(1, 3))
            k = self.fresh("k")
            expr = f"{self.tensor_expr(shape, 1)} * float({k} + 1)"
            self.emit_list(f"[{expr} for {k} in range({n})]", shape, n)
            return
        k = self.fresh("k")
        src = self.tensor_expr(shape, 1)
        if kind == "columns":
            self.emit_list(f"[{src}[:, {k}] for {k} in range({shape[1]})]",
                           shape[:1] + shape[2:], shape[1])
        else:
            self.emit_list(f"[{src}[{k}] for {k} in range({shape[0]})]", shape[1:], shape[0])

    def emit_list(self, expr: str, elem: Shape, length: int | None) -> None:
        """Bind a list expression to a name, or unpack it when its length is known and small."""
        if length is not None and length <= 3 and self.coin(0.5):
            targets = [self.fresh("u") for _ in range(length)]
            self.emit(f"{', '.join(targets)}{',' if length == 1 else ''} = {expr}")
            for target in targets:
                self.bind(target, TensorT(elem))
            return
        name = self.fresh("l")
        self.emit(f"{name} = {expr}")
        self.bind(name, ListT(elem, length != 0, comprehension=True))

    def recurrence(self) -> None:
        """A leaky recurrence that keeps its later steps: a counted loop whose body updates a
        state and appends to a list when the step counter has passed a threshold; the list is
        stacked after the loop (it has ``steps - start`` items)."""
        states = self.assignable()
        if not states:
            self.assign_new()
            return
        state = self.choice(states)
        shape = self.visible()[state].shape
        steps, start = self.draw(st.integers(2, 4)), self.draw(st.integers(1, 2))
        start = min(start, steps - 1)
        name, t = self.fresh("l"), self.fresh("i")
        self.emit(f"{name}: List[Tensor] = []")
        self.emit(f"for {t} in range({steps}):")
        self.indent += 1
        self.scopes.append(Scope({t: INT}))
        self.emit(f"{state} = 0.7 * {state} + 0.3 * np.tanh({self.tensor_expr(shape, 2)})")
        self.emit(f"if {t} >= {start}:")
        item = f"{state}[:, 0]" if len(shape) >= 2 and self.coin(0.5) else state
        elem = shape[:1] + shape[2:] if item != state else shape
        self.emit(f"    {name}.append({item})")
        self.scopes.pop()
        self.indent -= 1
        self.budget -= 3
        self.bind(name, ListT(elem, True))
        axis = self.draw(st.integers(0, len(elem)))
        target = self.fresh("t")
        self.emit(f"{target} = np.stack({name}, axis={axis})")
        self.bind(target, TensorT(elem[:axis] + (steps - start,) + elem[axis:]))

    def tuple_of_lists(self) -> None:
        lists = self.of_type(lambda t: isinstance(t, ListT))
        shape = self.known_shape()
        if lists:
            first = self.choice(lists)
            first_t = self.visible()[first]
        else:
            first, first_t = f"[{self.tensor_expr(shape, 1)}]", ListT(shape, True)
        name = self.fresh("q")
        self.emit(f"{name} = ({first}, [{self.tensor_expr(shape, 1)}])")
        elems = (first_t, ListT(shape, True))
        if self.coin(0.5):
            targets = [self.fresh("l"), self.fresh("l")]
            self.emit(f"{targets[0]}, {targets[1]} = {name}")
            for target, t in zip(targets, elems):
                self.bind(target, t)
        else:
            self.bind(name, TupleT(elems))
            if self.coin(0.5):
                target = self.fresh("t")
                self.emit(f"{target} = {name}[1][{self.choice([0, -1])}]")
                self.bind(target, TensorT(shape))

    # -- in-place writes, fancy indexing, accumulators, containers of tensors ---------------------
    def loop_count(self) -> str:
        """A trip count: a literal, or an int parameter or name (may be 0 or negative)."""
        ints = self.of_type(lambda t: t == INT)[:2]
        return self.choice(["1", "2", "3"] + ints)

    def made_array(self, shape: Shape) -> str:
        """An expression for a new array of ``shape`` the function owns (never an argument's
        memory: writing into an argument is refused by design)."""
        kind = self.choice(["zeros", "ones", "full", "copy", "np.copy", "zeros_like"])
        if kind in ("zeros", "ones", "full"):
            return self.filled(shape, kind)
        expr = self.tensor_expr(shape, 1)
        if kind == "copy":
            return f"({expr}).copy()"
        if kind == "zeros_like":
            return f"np.zeros_like({expr})"
        return f"np.copy({expr})"

    def in_place_write(self) -> None:
        """Writes into an array the function made, in one self-contained group of statements
        (no other name may share its memory while it is written); the array is bound as an
        ordinary tensor afterwards and never written again."""
        kind = self.choice(["buffer", "buffer", "parts", "slices", "row", "augmented", "fill"])
        shape = self.known_shape()
        if kind == "parts" and shape and shape[-1] >= 2:
            self.slot_parts(shape)
            return
        if kind == "slices" and (len(shape) < 2 or shape[-1] < 2):
            shape = shape[:2] if len(shape) >= 2 else shape + (1,)
            shape = shape[:-1] + (self.draw(st.integers(2, 4)),)
        name = self.fresh("a")
        if kind == "buffer":
            # h = np.zeros((T, *shape)); for t in range(T): h[t] = f(h[t - 1], ...)
            steps = self.draw(st.integers(1, 4))
            t = self.fresh("i")
            self.emit(f"{name} = {self.filled((steps,) + shape, 'zeros')}")
            self.emit(f"for {t} in range({steps}):")
            self.scopes.append(Scope({t: INT}))
            expr = self.tensor_expr(shape, 2)
            self.scopes.pop()
            prev = f"{name}[{t} - 1]"
            if self.coin(0.8):  # a recurrence through the buffer (h[-1] at t = 0: zeros)
                expr = f"np.tanh({expr} + 0.5 * {prev})"
            op = self.choice(["=", "=", "+="])
            self.emit(f"    {name}[{t}] {op} {expr}")
            self.budget -= 2
            self.bind(name, TensorT((steps,) + shape))
            if self.coin(0.5):
                target = self.fresh("t")
                self.emit(f"{target} = {name}[{self.draw(st.integers(-steps, steps - 1))}]")
                self.bind(target, TensorT(shape))
            return
        if kind == "fill" and self.coin(0.5):  # np.empty is all written by the fill
            self.emit(f"{name} = {self.filled(shape, 'zeros').replace('np.zeros(', 'np.empty(')}")
        else:
            self.emit(f"{name} = {self.made_array(shape)}")
        if kind == "slices":
            k = self.draw(st.integers(1, shape[-1] - 1))
            left, right = shape[:-1] + (k,), shape[:-1] + (shape[-1] - k,)
            lead = ":, " * (len(shape) - 1) if self.coin(0.5) else "..., "
            self.emit(f"{name}[{lead}:{k}] = {self.operand(left, 1)}")
            if self.coin(0.6):
                self.emit(f"{name}[{lead}{k}:] {self.choice(['=', '+=', '-='])} "
                          f"{self.operand(right, 1)}")
        elif kind == "row":
            k = self.draw(st.integers(-shape[0], shape[0] - 1))
            value = self.operand(shape[1:], 1) if len(shape) > 1 else self.float_expr(0)
            self.emit(f"{name}[{k}] {self.choice(['=', '=', '+='])} {value}")
        elif kind == "fill":
            self.emit(f"{name}.fill({self.float_expr(0)})")
            if len(shape) >= 2 and self.coin(0.5):
                self.emit(f"{name}[0] = {self.tensor_expr(shape[1:], 1)}")
        for _ in range(self.draw(st.integers(1 if kind == "augmented" else 0, 2))):
            op = self.choice(["+=", "-=", "*="])
            value = self.operand(shape, 1)
            if op == "*=":
                value = f"np.tanh({value})"  # bounded under repetition
            self.emit(f"{name} {op} {value}")
        self.budget -= 1
        self.bind(name, TensorT(shape))

    def slot_parts(self, shape: Shape) -> None:
        """A buffer of steps whose slot is written in parts, in place (Karpathy's LSTM:
        ``h[t, :, :k] = f(h[t - 1, :, :k])``, ``h[t, :, k:] = g``, ``h[t, ..., 0] = 1.0``)."""
        name, t = self.fresh("a"), self.fresh("i")
        steps = self.draw(st.integers(1, 4))
        k = self.draw(st.integers(1, shape[-1] - 1))
        lead = ":, " * (len(shape) - 1)
        self.emit(f"{name} = {self.filled((steps,) + shape, 'zeros')}")
        self.emit(f"for {t} in range({steps}):")
        self.scopes.append(Scope({t: INT}))
        left = self.tensor_expr(shape[:-1] + (k,), 2)
        right = self.tensor_expr(shape[:-1] + (shape[-1] - k,), 1)
        self.scopes.pop()
        if self.coin(0.7):  # a recurrence through the part the step before wrote
            prev = f"{name}[{t} - 1, {lead}:{k}]"
            left = f"np.tanh({left} + 0.5 * {prev})" if self.coin(0.5) else \
                f"np.tanh({left}) + 0.5 * {prev} if {t} > 0 else {left}"
        self.emit(f"    {name}[{t}, {lead}:{k}] = {left}")
        if self.coin(0.7):
            self.emit(f"    {name}[{t}, {lead}{k}:] {self.choice(['=', '+='])} {right}")
        if len(shape) >= 2 and self.coin(0.5):
            self.emit(f"    {name}[{t}, ..., 0] = {self.float_expr(0)}")
        self.budget -= 2
        self.bind(name, TensorT((steps,) + shape))

    def fancy_index(self) -> None:
        """Integer-array indexing: a gather ``W[idx]`` (indices in range, repeats allowed), a
        column gather ``U[:, idx]``, pairs ``o[np.arange(n), y]``, and a scatter into a made
        array with distinct indices (``a[idx] += v``, ``a[np.arange(n), y] -= 1.0``)."""
        kind = self.choice(["gather", "columns", "pairs", "scatter", "scatter-pairs"])
        target = self.fresh("t")
        shape = self.known_shape()
        if kind == "gather":
            n = self.draw(st.sampled_from(DIMS))
            src = self.tensor_expr((n,) + shape[1:], 1)
            idx = self.int_array(shape[0], n, distinct=False)
            self.emit(f"{target} = {src}[{idx}]")
        elif kind == "columns":
            if len(shape) < 2:
                shape = shape + (self.draw(st.sampled_from(DIMS)),)
            n = self.draw(st.sampled_from(DIMS))
            src = self.tensor_expr((shape[0], n) + shape[2:], 1)
            self.emit(f"{target} = {src}[:, {self.int_array(shape[1], n, distinct=False)}]")
        elif kind in ("pairs", "scatter-pairs"):
            shape = shape[:1]
            m = self.draw(st.sampled_from(DIMS))
            y = self.int_array(shape[0], m, distinct=False)
            rows = self.choice([f"np.arange({shape[0]})", self.int_array(shape[0], shape[0],
                                                                         distinct=True)])
            if kind == "pairs":
                src = self.tensor_expr((shape[0], m), 1)
                self.emit(f"{target} = {src}[{rows}, {y}]")
            else:
                name = self.fresh("a")
                self.emit(f"{name} = {self.made_array((shape[0], m))}")
                value = self.choice([self.float_expr(0), self.tensor_expr(shape, 1)])
                self.emit(f"{name}[{rows}, {y}] {self.choice(['-=', '+=', '='])} {value}")
                self.bind(name, TensorT((shape[0], m)))
                self.emit(f"{target} = {name}.sum(axis=1)")
        else:
            n = self.draw(st.sampled_from(DIMS))
            k = self.draw(st.integers(1, n))
            name = self.fresh("a")
            self.emit(f"{name} = {self.made_array((n,) + shape[1:])}")
            value = self.operand((k,) + shape[1:], 1)
            self.emit(f"{name}[{self.int_array(k, n, distinct=True)}] "
                      f"{self.choice(['+=', '-=', '='])} {value}")
            self.bind(name, TensorT((n,) + shape[1:]))
            self.emit(f"{target} = {name}[{self.int_array(shape[0], n, distinct=False)}]")
        self.bind(target, TensorT(shape))

    def int_array(self, length: int, size: int, distinct: bool) -> str:
        """``np.array([...])`` of ``length`` ints indexing an axis of ``size`` (negative ones
        too), all different when ``distinct``; or ``np.arange(length)`` where that fits."""
        if length <= size and self.coin(0.3):
            return f"np.arange({length})"
        if distinct:
            picks = self.draw(st.permutations(range(size)))[:length]
        else:
            picks = [self.draw(st.integers(0, size - 1)) for _ in range(length)]
        picks = [p - size if self.coin(0.2) else p for p in picks]
        return f"np.array([{', '.join(map(str, picks))}])"

    def number_accumulator(self) -> None:
        """``acc = 0.0`` (or ``0``) summed into in a loop (it becomes an array as in numpy), or
        a list of number accumulators ``accs = [0.0, 0.0]`` with ``accs[k] += ...``; read after
        the loop into a tensor of known shape."""
        in_list = self.coin(0.4)
        shape = self.known_shape()
        i = self.fresh("i")
        header = f"for {i} in range({self.loop_count()}):"
        target = self.fresh("t")
        if not in_list:
            acc = self.fresh("acc")
            self.emit(f"{acc} = {self.choice(['0', '0.0'])}")
            self.emit(header)
            self.scopes.append(Scope({i: INT}))
            kind = self.choice(["sum", "mean", "tensor", "plus"])
            if kind == "tensor":
                self.emit(f"    {acc} += {self.tensor_expr(shape, 2)}")
            elif kind == "plus":
                self.emit(f"    {acc} = {acc} + {self.tensor_expr(shape, 2)}")
            elif kind == "sum":
                self.emit(f"    {acc} += np.sum({self.tensor_expr(self.known_shape(), 2)})")
            else:
                self.emit(f"    {acc} += {self.tensor_expr(self.known_shape(), 2)}.mean()")
            self.scopes.pop()
            read = acc
        else:
            acc = self.fresh("accs")
            n = self.draw(st.integers(1, 3))
            self.emit(f"{acc} = [{', '.join([self.choice(['0', '0.0'])] * n)}]")
            self.emit(header)
            self.scopes.append(Scope({i: INT}))
            for k in range(n):
                self.emit(f"    {acc}[{k}] += np.sum({self.tensor_expr(self.known_shape(), 1)})")
            self.scopes.pop()
            read = " + ".join(f"{acc}[{k}]" for k in range(n))
        self.emit(f"{target} = {self.tensor_expr(shape, 1)} * 0.5 + 0.25 * ({read})")
        self.budget -= 2
        self.bind(target, TensorT(shape))

    def augmented_alias(self) -> None:
        """A value bound to two names, one then updated in place (``vb = va; vb *= 0.5``):
        numpy's scalar (a reduction over every axis: ``va`` keeps it), an array (a sum over
        an axis: ``va`` changes too) or a 0-d array (``np.zeros(())``: ``va`` changes too);
        both read after into a tensor of known shape."""
        shape = self.known_shape()
        va, vb, target = self.fresh("va"), self.fresh("vb"), self.fresh("t")
        src = self.tensor_expr(self.known_shape(), 1)
        self.emit(f"{va} = " + self.choice([f"np.sum({src})", f"{src}.mean()",
                                             f"np.sum({src}, axis=0)", "np.zeros(())"]))
        self.emit(f"{vb} = {va}")
        value = self.choice(["0.5", f"np.sum({self.tensor_expr(self.known_shape(), 1)})"])
        self.emit(f"{vb} {self.choice(['+=', '-=', '*='])} {value}")
        self.emit(f"{target} = {self.tensor_expr(shape, 1)} * 0.5 + 0.25 * np.tanh(np.sum({va}))"
                  f" - 0.125 * np.tanh(np.sum({vb}))")  # (bounded: no cancellation of sums)
        self.budget -= 2
        self.bind(target, TensorT(shape))

    def item_update(self) -> None:
        """``ls[k] op= v`` on a list or dict of arrays the function made, each held at one
        place (a literal of new arrays, an item's copy or product appended), once or at every
        step of a loop; every item read after: numpy updates the item's array, and the other
        places keep theirs."""
        shape = self.known_shape()
        ls, target = self.fresh("ls"), self.fresh("t")
        n = self.draw(st.integers(1, 3))
        items = [f"{self.tensor_expr(shape, 1)} * 1.0" for _ in range(n)]
        if self.coin(0.3):
            self.emit(f"{ls} = {{{', '.join(f'{k}: {e}' for k, e in enumerate(items))}}}")
        else:
            self.emit(f"{ls} = [{', '.join(items)}]")
            if self.coin(0.5):
                k = self.draw(st.integers(0, n - 1))
                self.emit(f"{ls}.append({self.choice([f'{ls}[{k}].copy()', f'{ls}[{k}] * 0.5'])})")
                n += 1
        k = self.draw(st.integers(0, n - 1))
        op = self.choice(["+=", "-=", "*="])
        value = "0.5" if op == "*=" else self.tensor_expr(shape, 1)
        if self.coin(0.5):
            i = self.fresh("i")
            self.emit(f"for {i} in range({self.loop_count()}):")
            self.emit(f"    {ls}[{k}] {op} {value}")
        else:
            self.emit(f"{ls}[{k}] {op} {value}")
        read = " + ".join(f"{ls}[{j}]" for j in range(n))
        self.emit(f"{target} = 0.5 * np.tanh({read})")
        self.budget -= 2
        self.bind(target, TensorT(shape))

    def batched_recurrence(self) -> None:
        """A recurrent layer over a batch: a state ``h`` of (B, H) rows, B >= 2, carried through
        a loop whose trip count is an int parameter where there is one (a loop the compiler
        cannot unroll: a native loop), each step ``h = np.tanh(h @ W + x)``, with steps kept by
        appends and a carried sum over the step's rows (``acc += np.sum(h * h)``, ``acc +=
        h.mean(axis=0)``, from a number in float64 programs, else a 0-d array): the loops whose
        steps are independent across rows, which the
        ``row-ranges`` configuration runs over ranges of rows."""
        rows, width = self.draw(st.integers(2, 4)), self.draw(st.sampled_from((1, 2, 3, 4)))
        shape = (rows, width)
        h, w, i = self.fresh("h"), self.fresh("w"), self.fresh("i")
        ints = self.of_type(lambda t: t == INT)[:2]
        count = self.choice(ints) if ints and self.coin(0.8) else str(self.draw(st.integers(0, 6)))
        self.emit(f"{h} = {self.tensor_expr(shape, 1)}")
        self.emit(f"{w} = 0.5 * np.tanh({self.tensor_expr((width, width), 1)})")
        kept = self.fresh("hs") if self.coin(0.5) else None
        acc = self.fresh("loss") if self.coin(0.5) else None
        by_row = acc is not None and self.coin(0.5)
        if kept:
            self.emit(f"{kept} = [{h}]")
        if acc:
            start = "0.0" if self.dtype == "float64" else self.filled((), "zeros")
            self.emit(f"{acc} = {self.filled((width,), 'zeros') if by_row else start}")
        self.emit(f"for {i} in range({count}):")
        self.scopes.append(Scope({i: INT}))
        step = f"{h} @ {w}" if self.coin(0.7) else f"np.dot({h}, {w})"
        extra = self.tensor_expr(shape, 1)
        self.scopes.pop()
        self.emit(f"    {h} = np.tanh({step} + {extra})")
        if kept:
            self.emit(f"    {kept}.append({h})")
        if acc:
            self.emit(f"    {acc} += {h}.mean(axis=0)" if by_row else
                      f"    {acc} += np.sum({h} * {h})")
        self.bind(h, TensorT(shape))
        if kept:
            target = self.fresh("t")
            self.emit(f"{target} = np.stack({kept}).sum(axis=0)")
            self.bind(target, TensorT(shape))
        if acc:
            target = self.fresh("t")
            self.emit(f"{target} = {h} * 0.5 + 0.25 * {acc}")
            self.bind(target, TensorT(shape))
        self.budget -= 3

    def tensor_containers(self) -> None:
        """Containers of tensors carried through loops: a list appended and read back by the
        step (``hs[t]``, ``hs[-1]``) then stacked, a dict with int keys ``hs[t] = f(hs[t - 1])``
        started at ``hs[-1]``, and a tuple state unpacked each step."""
        kind = self.choice(["list", "dict", "tuple", "caches"])
        shape = self.known_shape()
        steps = self.draw(st.integers(1, 3))
        i = self.fresh("i")
        name = self.fresh({"list": "hs", "dict": "hd", "tuple": "st", "caches": "cs"}[kind])
        if kind == "caches":  # a forward saving (h, next h) per step, a reverse loop reading them
            h, g, a, b = self.fresh("h"), self.fresh("g"), self.fresh("u"), self.fresh("u")
            self.emit(f"{name} = []")
            self.emit(f"{h} = {self.tensor_expr(shape, 1)}")
            self.emit(f"for {i} in range({steps}):")
            self.scopes.append(Scope({i: INT}))
            nh = f"np.tanh({self.tensor_expr(shape, 2)} + 0.5 * {h})"
            self.scopes.pop()
            self.emit(f"    {name}.append(({h}, {nh}))")
            self.emit(f"    {h} = {name}[-1][1]")
            self.emit(f"{g} = {self.tensor_expr(shape, 1)}")
            order = self.choice([f"reversed(range(len({name})))", f"range(len({name}))"])
            self.emit(f"for {i} in {order}:")
            self.emit(f"    {a}, {b} = {name}[{i}]")
            self.emit(f"    {g} = {g} * (1.0 - {b} * {b}) + 0.5 * {name}[{i}][0] * {a}")
            self.bind(g, TensorT(shape))
            self.bind(h, TensorT(shape))
            self.budget -= 2
            return
        if kind == "list":
            self.emit(f"{name} = [{self.tensor_expr(shape, 1)}]")
            self.emit(f"for {i} in range({steps}):")
            self.scopes.append(Scope({i: INT}))
            prev = self.choice([f"{name}[{i}]", f"{name}[-1]", f"{name}[len({name}) - 1]"])
            self.emit(f"    {name}.append(np.tanh({self.tensor_expr(shape, 2)} + {prev}))")
            self.scopes.pop()
            self.bind(name, ListT(shape, True))
            target = self.fresh("t")
            axis = self.draw(st.integers(0, len(shape)))
            self.emit(f"{target} = np.stack({name}, axis={axis})")
            self.bind(target, TensorT(shape[:axis] + (steps + 1,) + shape[axis:]))
        elif kind == "dict":
            self.emit(f"{name} = {{}}")
            self.emit(f"{name}[-1] = {self.tensor_expr(shape, 1)}")
            self.emit(f"for {i} in range({steps}):")
            self.scopes.append(Scope({i: INT}))
            self.emit(f"    {name}[{i}] = np.tanh({self.tensor_expr(shape, 2)} + "
                      f"{name}[{i} - 1])")
            self.scopes.pop()
            entries = ((-1, shape),) + tuple((k, shape) for k in range(steps))
            self.bind(name, DictT("int", entries))
        else:
            other = self.known_shape()
            a, b = self.fresh("u"), self.fresh("u")
            self.emit(f"{name} = ({self.tensor_expr(shape, 1)}, {self.tensor_expr(other, 1)})")
            self.emit(f"for {i} in range({self.loop_count()}):")
            self.scopes.append(Scope({i: INT}))
            self.emit(f"    {a}, {b} = {name}")
            self.scopes.append(Scope({a: TensorT(shape), b: TensorT(other)}))
            self.emit(f"    {name} = (np.tanh({self.tensor_expr(shape, 2)}), "
                      f"{b} * ops.sigmoid({self.tensor_expr(other, 1)}))")
            self.scopes.pop()
            self.scopes.pop()
            self.emit(f"{a}, {b} = {name}")
            self.bind(name, TupleT((shape, other)))
            self.bind(a, TensorT(shape))
            self.bind(b, TensorT(other))
        self.budget -= 2
