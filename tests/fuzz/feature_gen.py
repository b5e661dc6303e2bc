"""Statements for the generator's features (same-value ifs, dicts, comprehensions, recurrences,
tuples of lists): a mixin of ``FunctionWriter``, which holds the names in scope."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.fuzz.program_types import (
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
