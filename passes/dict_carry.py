"""Dict items carried: in a loop that stores one item a step keyed by the step, a read of the
item the step before stored is a value the loop carries.

Code that keeps a loop's steps in a dict keyed by the step (``hs[-1] = h0``, then ``hs[t] =
np.tanh(... hs[t - 1] ...)`` in ``for t in range(n)``) reads back, each step, what the step
before stored. For a dict the graph keeps to itself (``dict_items.local_dicts``) and a loop whose
body stores into it exactly once, at the body's top level (every step), with the key ``i + c``
(``i`` the loop's counter, ``c`` an int constant), this pass replaces each read of the key ``i +
c - 1`` inside the loop by a value the loop carries: the stored value at the next step, and at
the first step the value a store of the key ``c - 1`` before the loop, in the loop's block with
no store that may hit that key between, gave. Then the loop no longer reads the dict at all.

At step ``i > 0`` the read gives the item step ``i - 1`` stored (no other store of the loop may
overwrite it); at step 0 the item stored before the loop; a read Python would raise ``KeyError``
on (no store of ``c - 1`` before the loop) is left alone, and so is any other key.
"""

from __future__ import annotations

from ir.core import Graph, Node, Value
from passes.dict_items import GET, SET, local_dicts

NAME = "carry-dict-items"


def step_offset(key: Value, counter: Value) -> int | None:
    """``c`` when ``key`` is ``counter + c`` (``counter``, ``counter + 2``, ``counter - 1``,
    ``1 + counter``) for an int constant ``c``; else None."""
    if key is counter:
        return 0
    node = key.node
    if node.kind not in ("tensor::add", "tensor::sub") or len(node.inputs) != 2:
        return None
    a, b = node.inputs
    if a is counter and _int_constant(b):
        return b.constant if node.kind == "tensor::add" else -b.constant
    if node.kind == "tensor::add" and b is counter and _int_constant(a):
        return a.constant
    return None


def _int_constant(v: Value) -> bool:
    return v.is_constant and type(v.constant) is int


def _stored_before(loop: Node, d: Value, key: int) -> Value | None:
    """The value a read of ``d[key]`` gives just before ``loop``: the one a store of that
    constant key earlier in the loop's block stored, with no store that may hit it (another
    key known only at run time, a store in a nested block) between; None when not known."""
    node = loop.prev
    while node is not None and node.kind != "prim::Param":
        if node.kind == SET and node.inputs[0] is d:
            k = node.inputs[1]
            if _int_constant(k) and k.constant == key:
                return node.inputs[2]
            if not (k.is_constant and type(k.constant) in (int, str)):
                return None
        elif node.blocks and any(n.kind == SET and n.inputs[0] is d for n in node.walk()):
            return None
        node = node.prev
    return None


def _carry(loop: Node, d: Value) -> bool:
    """Carry the previous step's item of ``d`` through ``loop`` (see the module docstring)."""
    (body,) = loop.blocks
    counter = body.params[0]
    stores = [u.node for u in d.uses if u.node.kind == SET and u.node.ancestor_in(body)]
    if len(stores) != 1 or stores[0].owner is not body:
        return False
    (store,) = stores
    c = step_offset(store.inputs[1], counter)
    if c is None:
        return False
    reads = [u.node for u in d.uses if u.node.kind == GET and u.node.ancestor_in(body)
             and step_offset(u.node.inputs[1], counter) == c - 1]
    if not reads:
        return False
    first = _stored_before(loop, d, c - 1)
    if first is None:
        return False
    t = reads[0].output.type
    loop.add_input(first)
    param = body.add_param(t, reads[0].output.name)
    body.add_return(store.inputs[2])
    loop.add_output(t)
    for read in reads:
        read.output.replace_all_uses_with(param)
        read.erase()
    return True


def run(graph: Graph) -> bool:
    """Carry, through each loop, the items of local dicts the step before stored."""
    dicts = local_dicts(graph)
    changed = False
    for loop in [n for n in graph.walk() if n.kind == "prim::Loop"]:
        for d in dicts:
            changed |= _carry(loop, d)
    return changed
