"""Where an array's memory may come from: the alias analysis behind in-place writes
(``script.frontend.writes``).

An array written in place must be one the function made, and every name that may share its
memory must be rebound or refused. These functions follow a value back through views, writes,
branches, loops, containers and calls: ``array_origins`` to what no tensor op made (arguments,
constants, containers' items, loop parameters), ``memory_roots`` to what a loop step's value
may share memory with, ``distinct_new_arrays`` to tell two fresh arrays apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ir.alias import integer_scalar_read
from ir.core import PARAM, Node, Value
from ir.registry import lookup
from ir.types import TensorType
from ir.versions import shape_read

if TYPE_CHECKING:
    pass

_FOLLOWED = {"prim::unchecked_unwrap_optional"}
"""prim ops whose result is their input."""

def memory_roots(value: Value, loop: Node) -> set[Value]:
    """Where ``value``'s memory may come from at the end of a step of ``loop``: arrays made by
    ops, parameters of ``loop`` (and what they start as), and values read from outside."""
    roots: set[Value] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if v in roots:
            continue
        node = v.node
        if node.kind == PARAM and node.owner is loop.blocks[0] and v.index >= 1:
            roots.add(v)
            todo.append(loop.inputs[v.index + 1])
            continue
        sources = [] if node.kind == PARAM else value_sources(node, v)
        if sources:
            todo += sources
        else:
            roots.add(v)
    return roots


def made_outside(value: Value, loop: Node) -> bool:
    """Whether ``value`` was made before ``loop`` (not inside it, not one of its parameters)."""
    node = value.node
    if node.kind == PARAM:
        return node.owner is not loop.blocks[0] and not (
            node.owner is not None and node.owner.owner is not None
            and node.owner.owner.is_inside(loop))
    return not node.is_inside(loop)


def array_origins(value: Value, loop: Node | None = None) -> Iterator[Value]:
    """The values ``value``'s memory may come from, through views, writes, branches, loops and
    calls, that a tensor op did not make: arguments, constants, containers' items, and the
    parameters of ``loop`` (which the caller checks itself)."""
    seen: set[int] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        node = v.node
        if node.kind == PARAM:
            owner = node.owner.owner if node.owner is not None else None
            if owner is None or owner is loop:
                yield v  # a graph input, or a parameter of the loop being checked
            else:
                todo += carried_sources(v) or []
            continue
        followed: list[Value] | None = []
        if node.kind in _UNPACKS:
            followed = _unpacked_literal_item(node.inputs[0], v.index)
        elif node.kind == "prim::CallFunction" and "Subgraph" in node.attrs:
            followed = _call_result_sources(node, node.subgraph.outputs[v.index])
        if node.kind in _UNPACKS or node.kind == "prim::CallFunction":
            if followed is None:
                yield v
            todo += followed or []
            continue
        todo += value_sources(node, v)
        if not value_sources(node, v) and is_made(node):
            continue
        if not value_sources(node, v):
            yield v


def carried_sources(v: Value) -> list[Value] | None:
    """Of a value a loop carries (a parameter of its body): the value it starts as, and the one
    each step gives back once the body is compiled. None for any other parameter."""
    owner = v.node.owner.owner if v.node.owner is not None else None
    if owner is None or owner.kind != "prim::Loop" or v.index < 1:
        return None
    returns = v.node.owner.returns
    return [owner.inputs[v.index + 1], *returns[v.index:v.index + 1]]


def value_sources(node: Node, v: Value) -> list[Value]:
    """The values ``v`` (an output of ``node``) may be the memory of."""
    if node.kind == "prim::If":
        return [b.returns[v.index] for b in node.blocks]
    if node.kind == "prim::Loop":
        return [node.inputs[2 + v.index], node.blocks[0].returns[1 + v.index]]
    if node.kind in _FOLLOWED:
        return [node.inputs[0]]
    if node.kind == "prim::CallFunction" and "Subgraph" in node.attrs:
        return _call_result_sources(node, node.subgraph.outputs[v.index]) or []
    if integer_scalar_read(node):  # W[idx[0]]: numpy's view where idx[0] is its scalar
        return [node.inputs[0]]
    op = lookup(node.kind)
    if node.kind.startswith("tensor::") and op is not None and op.is_view:
        if node.kind == "tensor::select" and _scalar_item(v):
            return []  # an item of a 1-D array: numpy's scalar, a copy (maxv = tmp[i, j])
        return [x for x in node.inputs if isinstance(x.type, TensorType)]
    if node.kind.startswith("tensor::") and op is not None and node.kind.endswith("_put"):
        return [node.inputs[0]]
    return []


def _scalar_item(v: Value) -> bool:
    """Whether ``v`` is a 0-d result of selecting from a 1-D array (numpy gives a scalar; not
    after an ellipsis, ``x[i, ...]``, a 0-d view)."""
    t = v.type
    return isinstance(t, TensorType) and t.shape == () and not v.node.attrs.get("ellipsis")


_UNPACKS = {"prim::ListUnpack": "prim::ListConstruct", "prim::TupleUnpack": "prim::TupleConstruct"}
"""Unpacking ops and the literal whose items they give back."""


def _unpacked_literal_item(container: Value, index: int) -> list[Value] | None:
    """Where item ``index`` of an unpacked list or tuple may come from, when the container is a
    literal that nothing but this unpacking uses (``o, s = [o, s]``, also the ``return [o, s]``
    of a called function): nothing changed it, so the item is the array put into it. [] when
    that array is one the called function made; None (not followed) otherwise."""
    made = container.node
    if len(container.uses) != 1:
        return None
    if made.kind in _UNPACKS.values():
        return [made.inputs[index]]
    if made.kind != "prim::CallFunction" or "Subgraph" not in made.attrs:
        return None
    sub = made.subgraph
    literal = sub.outputs[container.index]
    if literal.node.kind not in _UNPACKS.values() or \
            [u.node.kind for u in literal.uses] != ["prim::Return"]:
        return None
    return _call_result_sources(made, literal.node.inputs[index])


def distinct_new_arrays(a: Value, b: Value) -> bool:
    """Whether ``a`` and ``b`` can only be memory made by different nodes of this function (or
    of a function it called): then they are different arrays, whatever the storage classes
    (which put the items of a list in one class) say."""
    roots_a, roots_b = new_array_roots(a), new_array_roots(b)
    return roots_a is not None and roots_b is not None and not roots_a & roots_b


def apart_from_made(value: Value, made: Value) -> bool:
    """Whether ``value`` cannot share memory with ``made``, an array this function made:
    ``value`` may only be arrays made by other nodes, arguments or constants (``prev = C[t - 1]
    if t > 0 else c0`` is a row of ``C`` or the argument ``c0``, never ``D``'s memory)."""
    roots_made, roots = new_array_roots(made), new_array_roots(value, outside=True)
    return roots_made is not None and roots is not None and not roots_made & roots


def new_array_roots(value: Value, inputs: dict[int, Value] | None = None,
                     outside: bool = False, where: dict[int, Any] | None = None,
                     call: Node | None = None, depth: int = 0) -> set[int] | None:
    """The nodes that made the arrays ``value`` may be the memory of, through views, writes,
    branches, loops, calls and unpacked literals; None when it may be other memory (an
    argument, a constant, an item read from a container). ``inputs`` maps a called function's
    inputs to the caller's values. ``outside``: arguments and constants, memory no op of this
    function made, count as roots of their own. ``where`` is given each root's place in this
    function: its node, its argument, or the ``call`` that made it."""
    if depth > 8:
        return None  # (a loop's step calling a function that gives back its argument)
    roots: set[int] = set()
    seen: set[int] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        node = v.node
        if inputs is not None and id(v) in inputs:
            found = new_array_roots(inputs[id(v)], where=where, depth=depth + 1)
            if found is None:
                return None
            roots |= found
            continue
        if node.kind == PARAM:
            loop = node.owner.owner if node.owner is not None else None
            if outside and inputs is None and node.owner is not None and loop is None:
                roots.add(id(v))  # an argument of the function
                if where is not None:
                    where[id(v)] = v
                continue
            if loop is None or loop.kind != "prim::Loop" or v.index < 1:
                return None
            todo.append(loop.inputs[v.index + 1])
            if len(node.owner.returns) > v.index:
                todo.append(node.owner.returns[v.index])
            continue
        if node.kind in _UNPACKS:
            found = _unpacked_roots(node.inputs[0], v.index, where, call, depth + 1)
            if found is None:
                return None
            roots |= found
            continue
        if node.kind == "prim::CallFunction" and "Subgraph" in node.attrs:
            found = new_array_roots(node.subgraph.outputs[v.index], call_inputs(node),
                                    where=where, call=call or node, depth=depth + 1)
            if found is None:
                return None
            roots |= found
            continue
        sources = value_sources(node, v)
        if sources:
            todo += sources
        elif is_made(node) or (outside and node.kind == "prim::Constant"):
            roots.add(id(node))
            if where is not None:
                where[id(node)] = call or node
        else:
            return None
    return roots


def apart_in_a_step(value: Value, made: Value) -> bool:
    """Whether ``value`` cannot share memory with ``made`` because ``made`` is memory made in
    this step of a loop around it and ``value`` is older memory: what the step got from the
    one before (its carried values), what was there before the loop, or memory made in this
    step by other nodes. ``outs = np.zeros(...)`` in each step of a loop over layers, written
    and then passed on as the next layer's input (``layers_in = outs``): the write changes this
    step's array, never the one ``layers_in`` holds from the step before, though the storage
    classes, which follow no order, join the two."""
    if not isinstance(value.type, TensorType) or not isinstance(made.type, TensorType):
        return False  # (a list from before the step may hold this step's array)
    for loop in made.node.enclosing("prim::Loop"):
        body = loop.blocks[0]
        mine = _step_roots(made, body, True)
        if mine is None:
            continue
        older = _step_roots(value, body, False)
        return older is not None and not mine & older
    return False


def _step_roots(value: Value, body: Any, made: bool) -> set[int] | None:
    """The nodes inside ``body`` (a loop's step) that made the memory ``value`` may be, in this
    step: ``made``, where ``value`` must be memory made in this step alone (None otherwise);
    else memory from before the step (a carried value, an argument, a value from outside the
    loop) is left out. None where the memory is not known."""
    roots: set[int] = set()
    seen: set[int] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        node = v.node
        if not _within(node, body) or node.kind == PARAM and node.owner is body:
            if made:
                return None
            continue  # (memory from before this step)
        if node.kind == PARAM:  # a value an inner loop carries
            loop = node.owner.owner
            if loop is None or loop.kind != "prim::Loop" or v.index < 1 or \
                    len(loop.inputs) <= v.index + 1 or len(node.owner.returns) <= v.index:
                return None  # (a loop still being built: its step unknown)
            todo += [loop.inputs[v.index + 1], node.owner.returns[v.index]]
            continue
        if node.kind == "prim::CallFunction" or node.kind in _UNPACKS:
            return None
        sources = value_sources(node, v)
        if sources:
            todo += sources
        elif is_made(node):
            roots.add(id(node))
        else:
            return None
    return roots


def _within(node: Node, body: Any) -> bool:
    """Whether ``node`` is in ``body`` or a block nested in it. (Not ``Node.is_inside`` of the
    loop: while the frontend emits a step, its block is not yet the loop's, and the check of an
    update in it runs then.)"""
    block = node.owner
    while block is not None:
        if block is body:
            return True
        block = block.owner.owner if block.owner is not None else None
    return False


def call_inputs(call: Node) -> dict[int, Value]:
    return {id(inner): outer for inner, outer in zip(call.subgraph.inputs, call.inputs)}


def _unpacked_roots(container: Value, index: int, where: dict[int, Any] | None = None,
                    call: Node | None = None, depth: int = 0) -> set[int] | None:
    """``new_array_roots`` of item ``index`` of an unpacked literal (see
    ``_unpacked_literal_item``)."""
    made = container.node
    if len(container.uses) != 1:
        return None
    if made.kind in _UNPACKS.values():
        return new_array_roots(made.inputs[index], where=where, call=call, depth=depth)
    if made.kind != "prim::CallFunction" or "Subgraph" not in made.attrs:
        return None
    literal = made.subgraph.outputs[container.index]
    if literal.node.kind not in _UNPACKS.values() or \
            [u.node.kind for u in literal.uses] != ["prim::Return"]:
        return None
    return new_array_roots(literal.node.inputs[index], call_inputs(made), where=where,
                           call=call or made, depth=depth)


def _call_result_sources(call: Node, result: Value) -> list[Value] | None:
    """The arguments of ``call`` that ``result`` (a value of its subgraph) may be the memory
    of; [] when it is an array the called function made; None when it may be memory the caller
    cannot follow (a global, a container's item)."""
    sub = call.subgraph
    leaves = list(array_origins(result))
    inner = {id(x): k for k, x in enumerate(sub.inputs)}
    if not all(id(x) in inner or foreign(sub, x) is None for x in leaves):
        return None
    return [call.inputs[inner[id(x)]] for x in leaves if id(x) in inner]


def is_made(node: Node) -> bool:
    """Whether ``node``'s tensor outputs are new arrays (a non-view tensor op)."""
    op = lookup(node.kind)
    return node.kind.startswith("tensor::") and op is not None and (
        not op.is_view or (node.kind == "tensor::select" and _scalar_item(node.output)))


_WRITES_INTO = ("tensor::write_into", "tensor::write_slot")
"""ops writing into an array they are given."""
PUTS = {"prim::ListAppend": 1, "prim::ListSetItem": 2, "prim::ListInsert": 2,
         "prim::DictSetItem": 2}
"""ops putting a value into the container that is their first input: kind -> the value's."""


def sole_made_item(item: Value) -> bool:
    """Whether ``item``, read from a list or dict, is an array of a container this function made
    whose every item is an array this function made and put there alone (no other container,
    name or attribute holds it; Adam's first call: ``self.m = []`` then ``self.m.append(
    np.zeros_like(p))``), read only by computations: storing a new array there instead of
    updating it in place changes nothing anyone can see. The container itself may be kept
    anywhere (the caller sees the new array through it)."""
    node = item.node
    if node.kind not in ("prim::ListIndex", "prim::DictGetItem") or \
            not isinstance(item.type, TensorType):
        return False
    names = _passed_through(node.inputs[0])
    if names is None:
        return False
    made = names[0].node
    if made.kind not in ("prim::ListConstruct", "prim::DictConstruct"):
        return False
    values = list(made.inputs[1::2] if made.kind == "prim::DictConstruct" else made.inputs)
    for use in (u for name in names for u in name.uses):
        user = use.node
        if use.index == 0 and user.kind in PUTS:
            values.append(user.inputs[PUTS[user.kind]])
        elif use.index == 0 and user.kind in ("prim::ListIndex", "prim::DictGetItem"):
            if not all(_computed_from(u) for u in user.output.uses):
                return False
        elif not (user.kind in ("prim::len", "prim::DictKeys") or
                  user.kind == "prim::SetAttr" and use.index == 1 or
                  user.kind == "prim::TupleConstruct" and not user.output.uses or
                  user.kind in ("prim::Loop", "prim::Return") and
                  any(o in names for o in _carried_as(user, use.index))):
            return False
    return all(_held_once(v) for v in values)


def _passed_through(value: Value) -> list[Value] | None:
    """``value`` and the names a loop gives it that it carries unchanged (a list appended to in
    a loop), the value first; None where a branch or a loop step may give another."""
    found = [value]
    while True:
        node = value.node
        if node.kind == "prim::Loop":
            k = value.index
            param = node.blocks[0].params[1 + k]
            returns = node.blocks[0].returns
            if len(returns) <= 1 + k or returns[1 + k] is not param:
                return None
            found.append(param)
            value = node.inputs[2 + k]
        elif node.kind == PARAM and node.owner is not None and node.owner.owner is not None:
            loop = node.owner.owner
            returns = node.owner.returns
            if loop.kind != "prim::Loop" or value.index < 1 or len(returns) <= value.index or \
                    returns[value.index] is not value:
                return None  # (a step still being compiled has no returns yet)
            found.append(loop.outputs[value.index - 1])
            value = loop.inputs[1 + value.index]
        else:
            return found if value is found[0] else [value, *found]


def _carried_as(user: Node, index: int) -> list[Value]:
    """What a loop's input ``index`` (its parameter and result), or a step's result, is."""
    if user.kind == "prim::Loop" and index >= 2:
        return [user.blocks[0].params[index - 1], user.outputs[index - 2]]
    block = user.owner
    loop = block.owner if block is not None else None
    if user.kind == "prim::Return" and loop is not None and loop.kind == "prim::Loop" and \
            index >= 1:
        return [block.params[index], loop.outputs[index - 1]]
    return []


def _computed_from(use: Any) -> bool:
    """A use reading an item into a new array (not keeping it, viewing it or writing it)."""
    node = use.node
    return is_made(node) and not node.kind.endswith("_put") and \
        node.kind not in _WRITES_INTO


def _held_once(value: Value) -> bool:
    """An array this function made (``_made_roots``) that one container holds (put there once,
    read nowhere else but for its shape)."""
    roots = _made_roots(value) if isinstance(value.type, TensorType) else None
    if roots is None:
        return False
    puts = [u for u in value.uses if u.node.kind in PUTS or
            u.node.kind in ("prim::ListConstruct", "prim::DictConstruct")]
    others = [u for u in value.uses if u not in puts]
    if len(puts) != 1 or not all(shape_read(u.node) for u in others):
        return False
    block = puts[0].node.owner  # put once: not in a loop an array it may be was made before
    while block is not None and block.owner is not None:
        if block.owner.kind == "prim::Loop" and \
                not all(r.defined_inside(block.owner) for r in roots):
            return False
        block = block.owner.owner
    return True


def _made_roots(value: Value, depth: int = 0) -> list[Value] | None:
    """The arrays a tensor op of this function made that ``value`` is: itself, a branch's
    choice of such arrays (``x *= 2`` keeping ``x``'s dtype) nothing else holds, or a view of
    one nothing else keeps; None for any other value."""
    node = value.node
    if depth > 8:
        return None
    if node.kind == "prim::If":  # each choice made here and held by nothing else
        found: list[Value] = []
        for b in node.blocks:
            r = b.returns[value.index]
            inner = _made_roots(r, depth + 1)
            if inner is None or not all(u.node is b.return_node or shape_read(u.node) or
                                        _computed_from(u) for u in r.uses):
                return None
            found += inner
        return found
    if not node.kind.startswith("tensor::") or node.kind.endswith("_put") or \
            node.kind in _WRITES_INTO:
        return None
    if is_made(node):
        return [value]
    found = []
    for b in (x for x in node.inputs if isinstance(x.type, TensorType)):
        inner = _made_roots(b, depth + 1)
        if inner is None or not all(u.node is node or shape_read(u.node) or _computed_from(u)
                                    for u in b.uses):
            return None
        found += inner
    return found


def foreign(graph: Any, leaf: Value, loop: Node | None = None,
            enclosing: tuple[str, ...] = ()) -> str | None:
    """What ``leaf`` is when its memory is not this function's to write, else None;
    ``enclosing``: the parameters of a nested function that are the enclosing one's names."""
    node = leaf.node
    if loop is not None and node.kind == PARAM and node.owner is loop.blocks[0]:
        return None
    if node.kind == PARAM and node.owner is not None and node.owner.owner is None:
        if leaf.name and leaf.name in enclosing:
            return f"'{leaf.name}' of the enclosing function (a nested function reads it)"
        return f"the argument '{leaf.name}'" if leaf.name else "an argument"
    if is_made(node):
        return None
    if node.kind == "prim::Constant":
        return "a constant or global array"
    if node.kind == "prim::CallFunction":
        return "an array a called function returns (it may be one of its arguments)"
    return "an array read from a container, object or module"
