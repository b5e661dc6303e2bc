"""Programs that exercise the language: each must compute what plain Python computes.

Each program is listed in PROGRAMS with a function making example arguments from a numpy Generator.
"""

from typing import List, Optional, Tuple

import numpy as np

from script import Tensor, ops

SCALE = 0.5
OFFSETS = (1, 2, 3)


def arith(x: Tensor, y: Tensor) -> Tensor:
    z = x * 2.0 + y / 3.0 - x ** 2
    z = -z + abs(y)
    return z % 1.5 + x // 2.0


def compare_where(x: Tensor, y: Tensor) -> Tensor:
    m = x > y
    return np.where(m, x, y) + np.maximum(x, 0.0) - np.minimum(y, 1.0) + np.clip(x, -0.5, 0.5)


def reductions(x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    return x.sum(axis=1), x.mean(axis=0, keepdims=True), np.sum(x * x)


def shapes(x: Tensor) -> Tensor:
    b = x.shape[0]
    h = x.shape[1]
    y = x.reshape(h, b)
    return y.T + x


def slicing(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return x[0], x[-1], x[1:3], x[::2]


def branches(x: Tensor, flag: bool, k: int) -> Tensor:
    if flag:
        y = x + 1.0
    elif k > 2:
        y = x * float(k)
    else:
        y = x - 1.0
    if k == 0:
        y = y * 0.0
    return y


def counted_loop(x: Tensor, n: int) -> Tensor:
    acc = np.zeros_like(x)
    for i in range(n):
        acc = acc + x * float(i)
    return acc


def range_forms(n: int) -> Tuple[int, int, int]:
    a = 0
    for i in range(2, n):
        a += i
    b = 0
    for i in range(n, 0, -2):
        b += i
    c = 0
    for i in range(0, n, 3):
        c = c * 2 + i
    return a, b, c


def while_loop(x: Tensor, limit: float) -> Tuple[Tensor, int]:
    steps = 0
    while float(np.sum(np.abs(x))) < limit and steps < 100:
        x = x * 2.0
        steps += 1
    return x, steps


def break_continue(n: int) -> int:
    total = 0
    for i in range(n):
        if i % 2 == 0:
            continue
        if i > 7:
            break
        total += i
    return total


def early_return(x: Tensor, k: int) -> Tensor:
    if k < 0:
        return x * 0.0
    for i in range(k):
        if i == 3:
            return x + float(i)
        x = x * 1.5
    return x


def list_ops(x: Tensor, n: int) -> Tensor:
    items: List[Tensor] = []
    for i in range(n):
        items.append(x * float(i))
    items += [x]
    first = items[0]
    last = items[-1]
    return ops.stack(items, 0).sum(axis=0) + first - last + float(len(items))


def tuple_ops(x: Tensor) -> Tuple[Tensor, Tuple[Tensor, int]]:
    pair = (x, 3)
    a, b = pair
    nested = ((a, b), a * 2.0)
    (c, d), e = nested
    return e + c * float(d), (pair[0], pair[1])


def optional_arg(x: Tensor, bias: Optional[Tensor]) -> Tensor:
    if bias is not None:
        return x + bias
    return x


def loop_over_list(xs: List[Tensor]) -> Tensor:
    total = xs[0] * 0.0
    for x in xs:
        total = total + x
    return total


def enumerate_zip(xs: List[Tensor], ys: List[Tensor]) -> Tensor:
    total = xs[0] * 0.0
    for i, x in enumerate(xs):
        total = total + x * float(i)
    for a, b in zip(xs, ys):
        total = total + a * b
    return total


def globals_and_asserts(x: Tensor) -> Tensor:
    assert x.shape[0] > 0, "empty input"
    y = x * SCALE
    for k in OFFSETS:
        y = y + float(k)
    return y


def bool_logic(a: int, b: int) -> bool:
    return (a > 0 and b > 0) or not (a < b)


def ternary(x: Tensor, k: int) -> Tensor:
    return x * 2.0 if k > 0 else x - 2.0


def unbind_loop(x: Tensor) -> Tensor:
    outs: List[Tensor] = []
    h = x[0] * 0.0
    for x_t in ops.unbind(x, 0):
        h = np.tanh(x_t + h)
        outs.append(h)
    return ops.stack(outs)


def cat_split(x: Tensor, y: Tensor) -> Tuple[Tensor, Tensor]:
    z = np.concatenate([x, y], axis=1)
    a, b = np.split(z, 2, axis=1)
    return a * b, ops.cat((x, y), 0)


def astype_ops(x: Tensor) -> Tensor:
    y = x.astype(np.float64)
    return (y * 2.0).astype(np.float32)


def float32_weak_scalars(x: Tensor) -> Tensor:
    return x * 2.0 + 1 - x / 3


def _xy(rng, dtype=np.float64):
    return (rng.standard_normal((3, 4)).astype(dtype), rng.standard_normal((3, 4)).astype(dtype))


PROGRAMS = {
    "arith": (arith, lambda r: _xy(r)),
    "arith_f32": (arith, lambda r: _xy(r, np.float32)),
    "compare_where": (compare_where, lambda r: _xy(r)),
    "reductions": (reductions, lambda r: (r.standard_normal((3, 4)),)),
    "shapes": (shapes, lambda r: (r.standard_normal((3, 3)),)),
    "slicing": (slicing, lambda r: (r.standard_normal((5, 2)),)),
    "branches_true": (branches, lambda r: (r.standard_normal(3), True, 1)),
    "branches_elif": (branches, lambda r: (r.standard_normal(3), False, 3)),
    "branches_else": (branches, lambda r: (r.standard_normal(3), False, 0)),
    "counted_loop": (counted_loop, lambda r: (r.standard_normal(3), 5)),
    "counted_loop_zero": (counted_loop, lambda r: (r.standard_normal(3), 0)),
    "range_forms": (range_forms, lambda r: (11,)),
    "range_forms_small": (range_forms, lambda r: (1,)),
    "while_loop": (while_loop, lambda r: (r.standard_normal(3), 50.0)),
    "break_continue": (break_continue, lambda r: (12,)),
    "early_return_neg": (early_return, lambda r: (r.standard_normal(3), -1)),
    "early_return_loop": (early_return, lambda r: (r.standard_normal(3), 6)),
    "early_return_short": (early_return, lambda r: (r.standard_normal(3), 2)),
    "list_ops": (list_ops, lambda r: (r.standard_normal((2, 3)), 4)),
    "tuple_ops": (tuple_ops, lambda r: (r.standard_normal(3),)),
    "optional_some": (optional_arg, lambda r: (r.standard_normal(3), r.standard_normal(3))),
    "optional_none": (optional_arg, lambda r: (r.standard_normal(3), None)),
    "loop_over_list": (loop_over_list, lambda r: ([r.standard_normal(3) for _ in range(4)],)),
    "enumerate_zip": (enumerate_zip, lambda r: ([r.standard_normal(3) for _ in range(3)],
                                                [r.standard_normal(3) for _ in range(3)])),
    "globals_and_asserts": (globals_and_asserts, lambda r: (r.standard_normal(3),)),
    "bool_logic": (bool_logic, lambda r: (1, -2)),
    "ternary_pos": (ternary, lambda r: (r.standard_normal(3), 1)),
    "ternary_neg": (ternary, lambda r: (r.standard_normal(3), -1)),
    "unbind_loop": (unbind_loop, lambda r: (r.standard_normal((4, 2, 3)),)),
    "cat_split": (cat_split, lambda r: _xy(r)),
    "astype_ops": (astype_ops, lambda r: (r.standard_normal((2, 2)).astype(np.float32),)),
    "float32_weak_scalars": (float32_weak_scalars,
                             lambda r: (r.standard_normal(4).astype(np.float32),)),
}
