"""Programs whose gradient the compiler refuses (or, once a construct is supported, computes).

Each ``refused_*`` function marks the line a refusal must point at with ``# REFUSED: <regex>``;
``ARGS`` gives its arguments. ``vjp`` of it must either raise a ``ScriptError`` matching the regex
at that line (file:line:col, the line quoted, a caret) or give the gradient finite differences
of the plain function give. Never a zero or wrong gradient, never another exception type.
"""
# ruff: noqa

from typing import Dict, List, NamedTuple, Tuple

import numpy as np

from script import Tensor, ops, script


# -- values the backward used to drop without a word -------------------------------------------
def refused_dict_value(h: Tensor) -> Tensor:
    hs: Dict[int, Tensor] = {}
    hs[0] = h * 3.0  # REFUSED: cannot differentiate.*silently be zero
    return hs[0].sum()


def refused_dict_literal(h: Tensor) -> Tensor:
    hs = {"a": np.tanh(h), "b": h}  # REFUSED: cannot differentiate.*silently be zero
    return hs["a"] * 2.0


def refused_dict_in_loop(x: Tensor) -> Tensor:
    hs: Dict[int, Tensor] = {}
    for t in range(3):
        hs[t] = x * float(t + 1)  # REFUSED: cannot differentiate.*silently be zero
    return hs[0] + hs[2]


def refused_dict_beside_a_direct_use(h: Tensor) -> Tensor:
    g = np.tanh(h)
    hs: Dict[int, Tensor] = {}
    hs[0] = g  # REFUSED: cannot differentiate.*silently be zero
    return g.sum() + (hs[0] * 3.0).sum()


def refused_comprehension_unpacked(x: Tensor) -> Tensor:
    a, i = [x[:, k] for k in range(2)]  # REFUSED: cannot differentiate.*silently be zero
    return np.tanh(a) * i


def refused_list_output(x: Tensor) -> List[Tensor]:
    return [np.tanh(x), x * 2.0]  # REFUSED: cannot differentiate.*silently be zero


def refused_appended_list_output(x: Tensor) -> List[Tensor]:
    out: List[Tensor] = []
    for t in range(2):
        out.append(x * float(t + 1))  # REFUSED: cannot differentiate.*silently be zero
    return out


def refused_list_item_replaced(x: Tensor) -> Tensor:
    l = [x, x * 2.0]
    l[0] = np.sin(x)  # REFUSED: cannot differentiate.*silently be zero
    return l[0] + l[1]


def refused_conditional_append_in_a_recurrence(W: Tensor, data: Tensor) -> Tensor:
    X: List[Tensor] = []
    x = np.zeros((4, 1))
    for t in range(6):
        x = 0.7 * x + 0.3 * np.tanh(np.dot(W, x) + data[t])
        if t >= 2:
            X.append(x[:, 0])  # REFUSED: cannot differentiate.*silently be zero
    return np.stack(X, axis=1)


class State(NamedTuple):
    h: Tensor
    c: Tensor


def refused_named_tuple_fields(x: Tensor) -> Tensor:
    s = State(np.tanh(x), x * 2.0)  # REFUSED: cannot differentiate.*silently be zero
    return s.h * s.c


@script
class Accumulator:
    def __init__(self, v: Tensor):
        self.v = v


def refused_object_field(x: Tensor) -> Tensor:
    a = Accumulator(np.ones(3))
    a.v = a.v + np.sin(x)  # REFUSED: cannot differentiate.*silently be zero
    return a.v * 2.0


def refused_list_inside_a_tuple_output(x: Tensor) -> Tuple[Tensor, List[Tensor]]:
    return x * 2.0, [np.tanh(x)]  # REFUSED: cannot differentiate.*silently be zero


# -- constructs the backward refuses by name -----------------------------------------------------
def refused_list_read_at_a_variable_index(x: Tensor, k: int) -> Tensor:
    l = [x * 2.0, np.tanh(x)]
    return l[k] * 3.0  # REFUSED: cannot differentiate reading a list at a non-constant index


def refused_appended_item_read_back(x: Tensor) -> Tensor:
    outs = [x]
    outs.append(np.tanh(x))
    return outs[1] * 2.0  # REFUSED: cannot differentiate reading item 1 of a list


def refused_list_pop(x: Tensor) -> Tensor:
    l = [x * 2.0, np.tanh(x)]
    y = l.pop()  # REFUSED: cannot differentiate `?\.pop
    return y + l[0]


def refused_list_chosen_by_if(x: Tensor, c: bool) -> Tensor:
    if c:
        l = [x * 2.0]
    else:
        l = [x * 3.0]
    return np.stack(l, axis=0)  # REFUSED: cannot differentiate (np.stack of a list|an `if`)


def refused_tuple_carried_by_loop(x: Tensor) -> Tensor:
    t = (x, x * 2.0)
    for _ in range(3):  # REFUSED: cannot differentiate a loop that reassigns
        t = (t[1] * x, t[0])
    return t[0] + t[1]


def refused_extend_by_a_built_list(x: Tensor) -> Tensor:
    a = [x * 2.0]
    b = [np.tanh(x)]
    b.extend(a)  # REFUSED: cannot differentiate extending a list
    return np.stack(b, axis=0)


def refused_float_of_an_array(x: Tensor) -> Tensor:
    scale = float(x.sum())  # REFUSED: cannot differentiate a Python float made from an array
    return x * scale


def refused_min_of_floats_of_arrays(x: Tensor) -> Tensor:
    s = min(float(x.max()), 2.0)  # REFUSED: cannot differentiate a Python float
    return np.tanh(x) * s


ARGS = {
    "refused_dict_value": lambda r: (r.standard_normal(2),),
    "refused_dict_literal": lambda r: (r.standard_normal(3),),
    "refused_dict_in_loop": lambda r: (r.standard_normal(3),),
    "refused_dict_beside_a_direct_use": lambda r: (r.standard_normal(3),),
    "refused_comprehension_unpacked": lambda r: (r.standard_normal((3, 2)),),
    "refused_list_output": lambda r: (r.standard_normal(2),),
    "refused_appended_list_output": lambda r: (r.standard_normal(2),),
    "refused_list_item_replaced": lambda r: (r.standard_normal(3),),
    "refused_conditional_append_in_a_recurrence": lambda r: (r.standard_normal((4, 4)),
                                                             r.standard_normal((6, 4, 1))),
    "refused_named_tuple_fields": lambda r: (r.standard_normal(3),),
    "refused_object_field": lambda r: (r.standard_normal(3),),
    "refused_list_inside_a_tuple_output": lambda r: (r.standard_normal(3),),
    "refused_list_read_at_a_variable_index": lambda r: (r.standard_normal(2), 1),
    "refused_appended_item_read_back": lambda r: (r.standard_normal(2),),
    "refused_list_pop": lambda r: (r.standard_normal(2),),
    "refused_list_chosen_by_if": lambda r: (r.standard_normal(2), True),
    "refused_tuple_carried_by_loop": lambda r: (r.standard_normal(2),),
    "refused_extend_by_a_built_list": lambda r: (r.standard_normal(2),),
    "refused_float_of_an_array": lambda r: (r.standard_normal(3),),
    "refused_min_of_floats_of_arrays": lambda r: (r.standard_normal(3),),
}
"""name -> a function of a ``numpy.random.Generator`` giving the arguments."""
