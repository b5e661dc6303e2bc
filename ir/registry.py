"""The op registry: every op kind declared once, with its schema, type rule and traits.

Passes ask the registry about an op (``op_def(node.kind).is_pure``, ``effects_on_input(node, i)``);
they never hold lists of op names. Each transformation (constant folding, VJP, code generation)
keeps its own table keyed by kind next to itself.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ir.errors import IRError
from ir.types import (
    BOOL,
    INT,
    NONE,
    STR,
    DictType,
    ListType,
    OptionalType,
    TensorType,
    TupleType,
    Type,
    is_number,
)

if TYPE_CHECKING:
    from ir.core import Node

# -- traits --------------------------------------------------------------------------------------
PURE = "pure"
"""No side effects, result depends only on the inputs: CSE may merge, DCE may drop."""
ELEMENTWISE = "elementwise"
"""Each output element depends on the same-index (broadcast) input elements: fusible."""
COMMUTATIVE = "commutative"
"""The first two inputs can be swapped."""
SIDE_EFFECTS = "side_effects"
"""Mutates state or raises: never dropped, merged or moved across another side effect."""
FRESH = "fresh"
"""Allocates a new mutable object (a list, a dict): DCE may drop it, CSE must not merge it."""
ZERO_DERIVATIVE = "zero_derivative"
"""Outputs carry no derivative of the inputs: comparisons, integer and bool results, rounding,
shape queries, values made from a shape alone. Differentiation stops there, and the gradient
soundness check accepts that a cotangent ends there."""
VIEW = "view"
"""A tensor op whose outputs may share memory with its inputs: a view (``a.T``, ``a[i]``) or an
input itself (dropout in eval mode). Other ``tensor::`` ops return new arrays; ``ir.alias``
relies on that to tell which values can reach the caller."""
ALWAYS_VIEW = "always_view"
"""A ``VIEW`` op numpy always answers with a view of its input, never a copy (``reshape`` and
``ascontiguousarray`` copy an array they cannot view): made before a loop or in each step, it is
the same memory (LICM hoists it even where the array reaches the caller)."""
ARRAY_RESULT = "array_result"
"""A 0-d result is an array, as numpy's ``np.where`` and ``np.copy`` give one; a 0-d result of
the other elementwise ops is a numpy scalar, as a ufunc's (``runtime.codegen``'s kernels)."""
SCALAR_RESULT = "scalar_result"
"""A 0-d result is a numpy scalar, as a reduction's, ``v @ v``'s or ``np.round``'s, where the op is
not elementwise (whose 0-d results are numpy scalars unless ``ARRAY_RESULT``): an in-place
update of one (``s += v``) makes a new scalar for that name alone."""
SHAPE_ONLY = "shape_only"
"""Reads only the shape, dtype and device of its tensor operands, never their elements
(``np.zeros_like(a)``, ``a.shape``): an in-place write into one changes nothing it computes."""
TRAITS = frozenset({PURE, ELEMENTWISE, COMMUTATIVE, SIDE_EFFECTS, FRESH, ZERO_DERIVATIVE,
                    VIEW, ALWAYS_VIEW, ARRAY_RESULT, SCALAR_RESULT, SHAPE_ONLY})

# -- effects on operands ---------------------------------------------------------------------------
READS = "reads"
"""What the op computes, or whether it raises, depends on the operand's contents (a container's
items, length or keys; a tensor's elements or shape)."""
WRITES = "writes"
"""The op changes the operand's contents in place (appends to a list, sets a dict entry or an
object's field, stores into a tensor's slice)."""
ALIASES = "aliases"
"""After the op, the operand (or its items) can be reached through an output or another operand:
it is put into a container, returned as it is, or viewed (a ``VIEW`` op's tensor operands)."""
EFFECTS = frozenset({READS, WRITES, ALIASES})
"""Every effect: what an op of unknown kind may do to each of its inputs."""
ONLY_READS = frozenset({READS})
"""The default: an operand the declaration says nothing about is only read."""
_TENSOR_ARGS = ("Tensor", "Tensor[]", "operand")


class ShapeError(IRError):
    """Input types an op cannot accept (shapes that do not broadcast, a tuple for a tensor)."""


NO_DEFAULT: Any = type("NoDefault", (), {"__repr__": lambda self: "<required>"})()
NOT_CONSTANT: Any = type("NotConstant", (), {"__repr__": lambda self: "<not constant>"})()


def _is_tensor_list(t: Type) -> bool:
    if isinstance(t, ListType):
        return isinstance(t.element, TensorType)
    return isinstance(t, TupleType) and all(isinstance(e, TensorType) for e in t.elements)


def _is_int_seq(t: Type) -> bool:
    if isinstance(t, ListType):
        return t.element == INT
    return isinstance(t, TupleType) and all(e == INT for e in t.elements)


def _optional(pred: Callable[[Type], bool]) -> Callable[[Type], bool]:
    return lambda t: t == NONE or pred(t) or (isinstance(t, OptionalType) and pred(t.element))


ARG_KINDS: dict[str, Callable[[Type], bool]] = {
    "Tensor": lambda t: isinstance(t, TensorType),
    "number": is_number,
    "operand": lambda t: isinstance(t, TensorType) or is_number(t),
    "int": lambda t: t in (INT, BOOL),
    "float": lambda t: is_number(t),
    "bool": lambda t: t in (BOOL, INT),
    "str": lambda t: t == STR,
    "ints": lambda t: t == INT or _is_int_seq(t),
    "Tensor[]": _is_tensor_list,
    "list": lambda t: isinstance(t, ListType),
    "tuple": lambda t: isinstance(t, TupleType),
    "dict": lambda t: isinstance(t, DictType),
    "any": lambda t: True,
}
"""Schema argument kinds and the types each accepts; ``kind?`` also accepts None."""


def accepts(kind: str, t: Type) -> bool:
    """Does an argument of schema kind ``kind`` accept a value of type ``t``?"""
    return _predicate(kind)(t)


def _predicate(kind: str) -> Callable[[Type], bool]:
    """The check of schema kind ``kind`` (``kind?`` also accepts None)."""
    if kind.endswith("?"):
        return _optional(ARG_KINDS[kind[:-1]])
    return ARG_KINDS[kind]


@dataclass(frozen=True, slots=True)
class Arg:
    """One schema argument."""

    name: str
    """the keyword name (as ``ops.<fn>`` spells it)."""
    kind: str
    """a key of ARG_KINDS, optionally suffixed ``?``."""
    default: Any = NO_DEFAULT
    """the default value, or NO_DEFAULT when required."""

    def __str__(self) -> str:
        text = f"{self.name}: {self.kind}"
        return text if self.default is NO_DEFAULT else f"{text} = {self.default!r}"


TypeRule = Callable[["Node"], Sequence[Type]]


@dataclass(frozen=True, slots=True)
class OpDef:
    """Everything the compiler knows about one op kind."""

    kind: str
    """``namespace::name``."""
    args: tuple[Arg, ...]
    """the schema's arguments, in order."""
    variadic: bool
    """the last argument repeats (``*values``)."""
    results: str
    """the result kinds, as documented (``Tensor``, ``(Tensor, ...)``)."""
    infer: TypeRule
    """the shape/dtype rule: output types from the node's input types (and constant inputs)."""
    traits: frozenset[str]
    """a subset of TRAITS."""
    spellings: tuple[str, ...] = ()
    """how Python spells it: ``np.tanh``, ``.sum`` (a method), ``+`` (an operator)."""
    doc: str = ""
    """one line for the language reference."""
    blocks: int = 0
    """how many nested blocks a node of this kind has."""
    extra: dict[str, Any] = field(default_factory=dict)
    """facts specific to one op family (e.g. the numpy ufunc name; ``sizes``: the names of the
    int arguments that give the result's shape, which ``passes.static_ints`` traces)."""
    effects: tuple[frozenset[str], ...] = ()
    """for each argument (the last repeats when variadic), the subset of EFFECTS the op has on
    it."""

    @property
    def name(self) -> str:
        return self.kind.split("::", 1)[1]

    @property
    def is_pure(self) -> bool:
        return PURE in self.traits

    @property
    def is_elementwise(self) -> bool:
        return ELEMENTWISE in self.traits

    @property
    def is_commutative(self) -> bool:
        return COMMUTATIVE in self.traits

    @property
    def has_side_effects(self) -> bool:
        return SIDE_EFFECTS in self.traits

    @property
    def has_zero_derivative(self) -> bool:
        return ZERO_DERIVATIVE in self.traits

    @property
    def reads_shape_only(self) -> bool:
        return SHAPE_ONLY in self.traits

    @property
    def is_view(self) -> bool:
        return VIEW in self.traits

    def effects_on(self, index: int) -> frozenset[str]:
        """What the op does to its input ``index``: a subset of EFFECTS."""
        if not self.effects:
            return EFFECTS
        return self.effects[min(index, len(self.effects) - 1)]

    @property
    def signature(self) -> str:
        args = [str(a) for a in self.args]
        if self.variadic and args:
            args[-1] = "*" + args[-1]
        return f"{self.kind}({', '.join(args)}) -> {self.results}"

    def bind(self, n_positional: int, keywords: Sequence[str]) -> list[int | str]:
        """Map a call's positional count and keyword names to schema slots; raises ShapeError."""
        return bind_args(self, n_positional, keywords)


REGISTRY: dict[str, OpDef] = {}
"""kind -> OpDef, for every op the compiler knows."""


def defop(signature: str, infer: TypeRule, traits: Sequence[str] = (),
          spellings: Sequence[str] = (), doc: str = "", blocks: int = 0,
          effects: Mapping[str, Sequence[str]] | None = None, **extra: Any) -> OpDef:
    """Declare an op from a signature ``"ns::name(a: Tensor, b: int = 1) -> Tensor"``.

    ``effects`` maps argument names to what the op does to them (READS, WRITES, ALIASES); an
    argument it does not name is only read, and also aliased when the op is a VIEW and the
    argument a tensor."""
    kind, args, variadic, results = parse_signature(signature)
    if kind in REGISTRY:
        raise IRError(f"op {kind} declared twice")
    unknown = set(traits) - TRAITS
    if unknown:
        raise IRError(f"{kind}: unknown traits {sorted(unknown)}")
    op = OpDef(kind, args, variadic, results, infer, frozenset(traits), tuple(spellings), doc,
               blocks, dict(extra), _operand_effects(kind, args, traits, effects or {}))
    REGISTRY[kind] = op
    return op


def _operand_effects(kind: str, args: Sequence[Arg], traits: Sequence[str],
                     declared: Mapping[str, Sequence[str]]) -> tuple[frozenset[str], ...]:
    names = {a.name for a in args}
    if set(declared) - names:
        raise IRError(f"{kind}: effects on unknown arguments {sorted(set(declared) - names)}")
    if any(set(e) - EFFECTS for e in declared.values()):
        raise IRError(f"{kind}: unknown effects in {declared}")
    found = []
    for a in args:
        default = ONLY_READS
        if VIEW in traits and a.kind.removesuffix("?") in _TENSOR_ARGS:
            default = frozenset({READS, ALIASES})
        found.append(frozenset(declared[a.name]) if a.name in declared else default)
    return tuple(found)


def effects_on_input(node: Node, index: int) -> frozenset[str]:
    """What ``node`` does to its input ``index`` (READS, WRITES, ALIASES); every effect when its
    kind is not a declared op."""
    op = lookup(node.kind)
    return EFFECTS if op is None else op.effects_on(index)


def only_writes_into(node: Node, index: int) -> bool:
    """Is writing into input ``index`` all ``node`` does (nothing read from it or kept of it, no
    other input written)? A container only such nodes use is never read."""
    op = lookup(node.kind)
    if op is None or op.effects_on(index) != frozenset({WRITES}):
        return False
    return not any(WRITES in op.effects_on(i) for i in range(len(node.inputs)) if i != index)


def op_def(kind: str) -> OpDef:
    """The declaration of ``kind``; IRError when unknown."""
    _load_ops()
    op = REGISTRY.get(kind)
    if op is None:
        raise IRError(f"unknown op kind {kind!r}")
    return op


def lookup(kind: str) -> OpDef | None:
    """The declaration of ``kind``, or None."""
    _load_ops()
    return REGISTRY.get(kind)


def spelling(kind: str) -> str:
    """How a user writes op ``kind``, for messages about their code: its first Python spelling
    (``np.concatenate``), else ``ops.NAME`` for a tensor op, else the kind."""
    op = lookup(kind)
    if op is not None and op.spellings:
        return op.spellings[0]
    namespace, _, name = kind.partition("::")
    return f"ops.{name}" if namespace == "tensor" else kind


def all_ops() -> list[OpDef]:
    _load_ops()
    return sorted(REGISTRY.values(), key=lambda o: o.kind)


_spelled: dict[str, OpDef] = {}


def spelled(text: str) -> OpDef | None:
    """The op a Python spelling means (an operator, ``"+"``, ``"@"``, ``"-x"``, or a name,
    ``"np.add"``): the first op, by kind, that lists it; None for none."""
    if not _spelled:
        for op in all_ops():
            for s in op.spellings:
                _spelled.setdefault(s, op)
    return _spelled.get(text)


def infer_types(node: Node) -> list[Type]:
    """Output types of ``node`` from its inputs, by its op's rule (ShapeError when invalid)."""
    op = op_def(node.kind)
    inputs = node.inputs
    found = _checks.get(op.kind)
    if found is None or found[0] is not op:
        found = _checks[op.kind] = (op, *_argument_checks(op))
    _, low, high, preds = found
    n = len(inputs)
    if not low <= n <= high:
        check_arity(op, n)  # raises
    last = len(preds) - 1
    for i, v in enumerate(inputs):
        if last >= 0 and not preds[min(i, last)](v.type):
            arg = op.args[min(i, last)]
            raise ShapeError(f"{op.kind}: argument '{arg.name}' expects {arg.kind}, got {v.type}")
    return list(op.infer(node))


_checks: dict[str, tuple[OpDef, int, float, tuple[Callable[[Type], bool], ...]]] = {}
"""per op kind: its declaration, the fewest and most inputs it takes and each argument's type
check (``infer_types`` runs once per node per propagation: the schema is read once)."""


def _argument_checks(op: OpDef) -> tuple[int, float, tuple[Callable[[Type], bool], ...]]:
    return (*_arity(op), tuple(_predicate(a.kind) for a in op.args))


def _arity(op: OpDef) -> tuple[int, float]:
    """The fewest and most inputs ``op`` takes."""
    if op.variadic:
        return len(op.args) - 1, math.inf
    return sum(1 for a in op.args if a.default is NO_DEFAULT), len(op.args)


def check_arity(op: OpDef, n: int) -> None:
    low, high = _arity(op)
    if op.variadic and n < low:
        raise ShapeError(f"{op.kind} takes at least {low} inputs, got {n}")
    if not low <= n <= high:
        raise ShapeError(f"{op.kind} takes {len(op.args)} inputs, got {n}")


def bind_args(op: OpDef, n_positional: int, keywords: Sequence[str]) -> list[int | str]:
    """For each schema slot, where its value comes from: a positional index, a keyword, or
    ``"=default"`` meaning the schema default. Raises ShapeError for bad calls."""
    names = [a.name for a in op.args]
    if op.variadic:
        if keywords:
            raise ShapeError(f"{op.kind} takes no keyword arguments")
        return list(range(n_positional))
    if n_positional > len(names):
        raise ShapeError(f"{op.name}() takes at most {len(names)} arguments, got {n_positional}")
    slots: list[int | str] = []
    for i, arg in enumerate(op.args):
        if i < n_positional:
            if arg.name in keywords:
                raise ShapeError(f"{op.name}() got multiple values for argument '{arg.name}'")
            slots.append(i)
        elif arg.name in keywords:
            slots.append(arg.name)
        elif arg.default is not NO_DEFAULT:
            slots.append("=default")
        else:
            raise ShapeError(f"{op.name}() missing required argument '{arg.name}'")
    extra = [k for k in keywords if k not in names]
    if extra:
        raise ShapeError(f"{op.name}() got an unexpected keyword argument '{extra[0]}'")
    return slots


def const(node: Node, index: int, default: Any = NOT_CONSTANT) -> Any:
    """The constant value of input ``index`` (following tuple/list constructs of constants),
    ``default`` when the input is absent, NOT_CONSTANT when it is not known at compile time."""
    if index >= len(node.inputs):
        return default
    return constant_of(node.inputs[index])


def constant_of(value: Any) -> Any:
    """The compile-time value of an IR value, or NOT_CONSTANT."""
    producer = value.node
    if producer.kind == "prim::Constant":
        return producer.attrs.get("value")
    if producer.kind == "prim::TupleConstruct":
        items = [constant_of(v) for v in producer.inputs]
        return NOT_CONSTANT if any(i is NOT_CONSTANT for i in items) else tuple(items)
    return NOT_CONSTANT


def parse_signature(sig: str) -> tuple[str, tuple[Arg, ...], bool, str]:
    """``"ns::name(a: Tensor, *b: Tensor, c: int = 1) -> R"`` -> (kind, args, variadic, results)."""
    head, _, results = sig.partition("->")
    kind, _, rest = head.strip().partition("(")
    body = rest.rstrip().removesuffix(")")
    args: list[Arg] = []
    variadic = False
    for part in _split_top(body):
        name, _, spec = part.partition(":")
        kind_text, _, default_text = spec.partition("=")
        name = name.strip()
        if name.startswith("*"):
            name, variadic = name[1:], True
        default = ast.literal_eval(default_text.strip()) if default_text.strip() else NO_DEFAULT
        if kind_text.strip().removesuffix("?") not in ARG_KINDS:
            raise IRError(f"{kind}: unknown argument kind {kind_text.strip()!r}")
        args.append(Arg(name, kind_text.strip(), default))
    return kind.strip(), tuple(args), variadic, results.strip()


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


_loaded = False


def _load_ops() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import ir.ops  # noqa: F401  (declares every op)

