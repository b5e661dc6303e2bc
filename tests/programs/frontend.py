"""Programs the frontend must compile: the fastrnns cells and one program per language feature.

They live in a real source file so the frontend can read their source.
"""

import math
from typing import Dict, List, Optional, Tuple

import numpy as np

from script import Tensor, ops

SCALE = 0.5
OFFSETS = (1, 2, 3)
TABLE = np.arange(6.0).reshape(2, 3)


# -- the fastrnns cells -------------------------------------------------------------------------
def lstm_cell(x: Tensor, hidden: Tuple[Tensor, Tensor], w_ih: Tensor, w_hh: Tensor,
              b_ih: Tensor, b_hh: Tensor) -> Tuple[Tensor, Tensor]:
    hx, cx = hidden
    gates = x @ w_ih.T + hx @ w_hh.T + b_ih + b_hh
    ingate, forgetgate, cellgate, outgate = ops.chunk(gates, 4, 1)
    ingate = ops.sigmoid(ingate)
    forgetgate = ops.sigmoid(forgetgate)
    cellgate = np.tanh(cellgate)
    outgate = ops.sigmoid(outgate)
    cy = forgetgate * cx + ingate * cellgate
    hy = outgate * np.tanh(cy)
    return hy, cy


def flat_lstm_cell(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    # type: (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) -> Tuple[Tensor, Tensor]
    gates = np.matmul(x, w_ih.T) + np.matmul(hx, w_hh.T) + b_ih + b_hh
    i, f, g, o = ops.chunk(gates, 4, axis=1)
    cy = ops.sigmoid(f) * cx + ops.sigmoid(i) * np.tanh(g)
    return ops.sigmoid(o) * np.tanh(cy), cy


def gru_cell(x: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
             b_hh: Tensor) -> Tensor:
    gi = x @ w_ih.T + b_ih
    gh = hx @ w_hh.T + b_hh
    i_r, i_i, i_n = ops.chunk(gi, 3, 1)
    h_r, h_i, h_n = ops.chunk(gh, 3, 1)
    resetgate = ops.sigmoid(i_r + h_r)
    inputgate = ops.sigmoid(i_i + h_i)
    newgate = np.tanh(i_n + resetgate * h_n)
    return newgate + inputgate * (hx - newgate)


def rnn_tanh_cell(x: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
                  b_hh: Tensor) -> Tensor:
    return np.tanh(x @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)


def rnn_relu_cell(x: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
                  b_hh: Tensor) -> Tensor:
    return ops.relu(x @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)


def milstm_cell(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor, alpha: Tensor,
                beta_i: Tensor, beta_h: Tensor, bias: Tensor) -> Tuple[Tensor, Tensor]:
    wx = x @ w_ih.T
    uz = hx @ w_hh.T
    gates = alpha * wx * uz + beta_i * wx + beta_h * uz + bias
    ingate, forgetgate, cellgate, outgate = ops.chunk(gates, 4, 1)
    cy = ops.sigmoid(forgetgate) * cx + ops.sigmoid(ingate) * np.tanh(cellgate)
    hy = ops.sigmoid(outgate) * np.tanh(cy)
    return hy, cy


def lstm_layer(xs: Tensor, state: Tuple[Tensor, Tensor], w_ih: Tensor, w_hh: Tensor,
               b_ih: Tensor, b_hh: Tensor) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
    outputs: List[Tensor] = []
    for x in ops.unbind(xs, 0):
        hy, cy = lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh)
        state = (hy, cy)
        outputs += [hy]
    return ops.stack(outputs), state


def stacked_lstm(xs: Tensor, states: List[Tuple[Tensor, Tensor]],
                 weights: List[Tuple[Tensor, Tensor, Tensor, Tensor]]) -> Tensor:
    out = xs
    for layer, (w_ih, w_hh, b_ih, b_hh) in enumerate(weights):
        state = states[layer]
        steps = []
        for t in range(out.shape[0]):
            state = lstm_cell(out[t], state, w_ih, w_hh, b_ih, b_hh)
            steps.append(state[0])
        out = np.stack(steps)
    return out


# -- one program per feature ------------------------------------------------------------------
def arithmetic(x: Tensor, y: Tensor, k: int) -> Tensor:
    z = x * 2.0 + y / 3.0 - x ** 2 + k
    z = -z + abs(y) + (+x)
    z -= 1.0
    return z % 1.5 + x // 2.0


def comparisons(a: int, b: int, c: int) -> Tuple[bool, bool, bool, bool]:
    return a < b < c, a == b or b == c, not a > c, a != b and b <= c


def conditional_expression(x: Tensor, flag: bool) -> Tensor:
    return x * 2.0 if flag else x - 1.0


def branches(x: Tensor, k: int) -> Tensor:
    if k > 2:
        y = x + 1.0
    elif k < 0:
        y = x * float(k)
    else:
        y = x - 1.0
    if k == 0:
        y = y * 0.0
    return y


def while_loop(x: Tensor, n: int) -> Tensor:
    i = 0
    while i < n:
        x = x * 0.5 + 1.0
        i += 1
    return x


def range_forms(n: int) -> Tuple[int, int, int, int]:
    a = 0
    for i in range(n):
        a += i
    b = 0
    for i in range(2, n):
        b += i
    c = 0
    for i in range(n, 0, -2):
        c += i
    d = 0
    for i in range(1, n, 3):
        d = d * 2 + i
    return a, b, c, d


def break_continue(n: int) -> Tuple[int, int]:
    total = 0
    last = -1
    for i in range(n):
        if i % 2 == 0:
            continue
        if i > 7:
            break
        total += i
        last = i
    return total, last


def while_break(x: Tensor) -> Tuple[Tensor, int]:
    steps = 0
    while True:
        x = x * 0.5
        steps += 1
        if steps >= 4:
            break
    return x, steps


def early_return(x: Tensor, n: int) -> Tensor:
    if n < 0:
        return -x
    for i in range(n):
        x = x + 1.0
        if i == 3:
            return x * 10.0
    return x


def return_in_both_branches(x: Tensor, flag: bool) -> Tensor:
    if flag:
        return x + 1.0
    else:
        return x - 1.0


def optional_arg(x: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    if bias is not None:
        x = x + bias
    return x


def optional_early_exit(x: Tensor, bias: Optional[Tensor]) -> Tensor:
    if bias is None:
        return x
    return x + bias


def tuple_loop(x: Tensor) -> Tensor:
    for k in OFFSETS:
        x = x + float(k)
    for item in (1, 2.5, x):
        x = x * item
    return x


def list_ops(x: Tensor) -> Tuple[Tensor, int, Tensor]:
    items = [x, x * 2.0]
    items.append(x * 3.0)
    items.insert(0, x - 1.0)
    items.extend([x + 5.0])
    last = items.pop()
    items[1] = last
    total = np.zeros_like(x)
    for item in items:
        total = total + item
    return total, len(items), items[-1] + ops.stack(items[1:3]).sum(axis=0)


def enumerate_zip(xs: List[Tensor], ys: List[Tensor]) -> Tensor:
    acc = xs[0] * 0.0
    for i, x in enumerate(xs):
        acc = acc + x * float(i)
    for a, b in zip(xs, ys):
        acc = acc + a * b
    return acc


def indexing(x: Tensor, i: int) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    return x[i], x[-1], x[1:3], x[::2], x[:, 0], x[..., 1:]


def shapes(x: Tensor) -> Tensor:
    rows, cols = x.shape
    y = x.reshape(cols, rows)
    return y.T + x * float(x.shape[-1] + x.ndim)


def tuples(t: Tuple[Tensor, int, float]) -> Tuple[Tensor, float, int]:
    a, *rest = t  # the starred target is a tuple (a list in Python)
    first, (second, third) = t[0], t[1:]
    return a * float(len(t)) + first, third + float(second), rest[0]


def globals_and_asserts(x: Tensor, k: int) -> Tensor:
    assert k >= 0, "k must be non-negative"
    assert x.ndim == 2
    return x * SCALE + math.pi + TABLE.sum() + OFFSETS[1]


def dtypes(x: Tensor) -> Tensor:
    y = x.astype(np.float32)
    z = np.zeros((2, 3), dtype=np.float64)
    return y.astype("float64") + z.sum() + x.sum(axis=(0, 1), keepdims=True)


def builtins_on_scalars(a: int, b: float) -> Tuple[int, float, bool, int, float]:
    return int(b), float(a), bool(a), min(a, 3), max(b, 2.0)


def annotated_locals(x: Tensor, n: int) -> Tensor:
    acc: Optional[Tensor] = None
    for _ in range(n):
        if acc is None:
            acc = x
        else:
            acc = acc + x
    if acc is None:
        return x
    return acc


def string_annotations(x: "Tensor", n: "int") -> "Tuple[Tensor, int]":
    return x + 1.0, n + 1


def dict_lookup(d: Dict[str, Tensor], x: Tensor) -> Tensor:
    return d["a"] + x


def helper(x: Tensor, scale: float = 2.0) -> Tensor:
    return x * scale


def calls_helper(x: Tensor) -> Tensor:
    return helper(x) + helper(x, scale=3.0)


def method_spellings(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return x.transpose(1, 0), x.reshape(-1), x.mean(axis=0), x.max(axis=1)


def implicit_none(x: Tensor, items: List[Tensor]):
    items.append(x)


def nested_loops(n: int, m: int) -> int:
    total = 0
    for i in range(n):
        for j in range(m):
            if j > i:
                break
            total += i * j
    return total


def make_closure(scale: float):
    def scaled(x: Tensor) -> Tensor:
        return x * scale
    return scaled


closure_fn = make_closure(4.0)


def rows_and_raise(x: Tensor, limit: float) -> Tuple[Tensor, bool, float]:
    total = x[0] * 0.0
    for row in x:
        total = total + row
    a = b = float(total.sum())
    if abs(a) > limit:
        raise ValueError("too large")
    found = 2 in [1, 2, 3]
    return total, found and isinstance(b, float), b


def optional_else(x: Tensor, b: Optional[Tensor]) -> Tensor:
    if b is None:
        y = x
    else:
        y = x * b
    return y


# -- exits in nested and unrolled loops, widening loop-carried types ----------------------------
def w_continue(n: int) -> int:
    i = 0
    s = 0
    while i < n:
        i += 1
        if i % 3 == 0:
            continue
        s += i
    return s


def nested_ret(n: int) -> int:
    for i in range(n):
        for j in range(n):
            if i * j > 6:
                return i * 100 + j
            if j > i:
                break
    return -1


def unrolled_break(x: Tensor) -> Tensor:
    for k in (1.0, 2.0, 3.0, 4.0):
        if k > 2.5:
            break
        x = x * k
    return x


def unrolled_continue_ret(x: Tensor, n: int) -> Tensor:
    for k in (1, 2, 3):
        if k == n:
            continue
        if k * n > 4:
            return x * float(k)
        x = x + float(k)
    return x


def widen(xs: List[Tensor]) -> Optional[Tensor]:
    h = None
    for x in xs:
        h = x
    return h


def no_parameters() -> float:
    return 1.5


def loop_index_after(n: int) -> int:
    i = -5
    for i in range(n):  # noqa: B007 (the last index is read after the loop)
        pass
    return i


def while_ret(x: Tensor, n: int) -> Tensor:
    while n > 0:
        n -= 1
        if n == 2:
            return x * 2.0
        x = x + 1.0
    return x


def continue_keeps_values(n: int) -> int:
    x = 0
    for i in range(n):
        if i % 2 == 0:
            x = x + 1
        else:
            continue
        x = x + 10
    return x


def break_keeps_values(n: int) -> int:
    x = 0
    for i in range(n):
        if i < 3:
            x = x + i
        else:
            break
    return x


def return_in_nested_branch(a: bool, b: bool) -> int:
    if a:
        if b:
            return 1
        y = 2
    else:
        y = 3
    return y
