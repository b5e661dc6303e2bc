"""Lists passed at many lengths: keyed and compiled for any length.

A list argument is part of a call's key item by item (``signature.key_of``), and its
specialization knows each item's type and the list's length (``shape_prop.specialize``'s item
types: a cell written over a weight list fuses as one written over separate arrays). A function
called with a list that grows from call to call (a cell keeping each step's activations in
``self.A`` and called once per step, as numpy-ml's cells do) then compiled again at every call:
1.5 ms a call at 50 steps, 11.5 ms at 1600, against 5 us in plain Python.

So once the calls that compile pass a list input at more than ``MAX_LENGTHS`` lengths
(``note``), that input is keyed by its items' one key, whatever its length
(``signature.length_free_key``), and compiled with its element type alone, no item types
(``items_for``): one specialization serves every length. A list whose items have different keys,
or are lists, dicts or tuples (whose arrays a specialization may take one by one:
``script.runtime.nested_args``), is keyed and compiled item by item as before.
"""

from __future__ import annotations

from typing import Any

from script.frontend.signature import ANY_LENGTH, length_free_key

MAX_LENGTHS = 4
"""The lengths a list input may be compiled for one by one."""


def note(d: Any, inputs: tuple[Any, ...]) -> bool:
    """Record the length of each list among the graph inputs of a call that compiles (the
    ``FunctionDef`` ``d``'s ``list_lengths``); True when an input became keyed by any length
    (``d.any_length``), which changes the call's key."""
    changed = False
    for k, a in enumerate(inputs):
        if type(a) is not list or k in d.any_length:
            continue
        seen = d.list_lengths.setdefault(k, set())
        seen.add(len(a))
        if len(seen) > MAX_LENGTHS:
            d.any_length = d.any_length | {k}
            changed = True
    return changed


def items_for(d: Any, inputs: tuple[Any, ...], items: list[Any]) -> list[Any]:
    """``items`` (per graph input, its items' types, ``input_items``) without those of the lists
    keyed by any length: the specialization knows their element type only."""
    if not d.any_length:
        return items
    return [None if k in d.any_length and _length_free(inputs[k]) else found
            for k, found in enumerate(items)]


def _length_free(value: Any) -> bool:
    key = length_free_key(value)
    return type(key) is tuple and len(key) >= 2 and key[1] == ANY_LENGTH
