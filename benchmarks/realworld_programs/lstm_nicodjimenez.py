"""Nico Jimenez's "Simple LSTM" (https://github.com/nicodjimenez/lstm, ``lstm.py`` and the
``ToyLossLayer`` of ``test.py``; License: MIT as the repository is commonly cited, but the copy
examined (README, lstm.py, test.py) carries no license file, so verify before redistributing
this port): an LSTM over vectors (no batch) with four gate
matrices applied to ``xc = np.hstack((x, h_prev))``; ``LstmNetwork.x_list_add`` runs one node
per input, ``y_list_is`` walks the nodes backwards summing the toy loss and calling each node's
hand-written ``top_diff_is``, which accumulates ``np.outer`` products into the parameter diffs
and ``dxc += np.dot(...)`` into a zero array.

Changes: annotations; the objects are unpacked: each method is a function taking the arrays it
read from ``self.param`` / ``self.state`` and returning what it stored there (a node's state is
the tuple ``(g, i, f, o, s, h, xc, s_prev, h_prev)``, the parameter diffs a list); the network's
``lstm_node_list`` is a list of those tuples, built by ``x_list_add`` over ``x_list``;
``s_prev == None`` is ``s_prev is None`` (with numpy arrays ``== None`` compares elementwise, and
``if`` on the result raises, so the original runs only for the first node).
"""

from typing import List, Optional, Tuple

import numpy as np

from benchmarks.realworld_programs import Case, arrays
from script import Tensor

NodeState = Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]


def sigmoid(x: Tensor) -> Tensor:
    return 1. / (1 + np.exp(-x))


def bottom_data_is(x: Tensor, s_prev: Optional[Tensor], h_prev: Optional[Tensor],
                   state_s: Tensor, state_h: Tensor, params: List[Tensor]) -> NodeState:
    wg, wi, wf, wo, bg, bi, bf, bo = params
    # if this is the first lstm node in the network
    if s_prev is None: s_prev = np.zeros_like(state_s)  # noqa: E701
    if h_prev is None: h_prev = np.zeros_like(state_h)  # noqa: E701

    # concatenate x(t) and h(t-1)
    xc = np.hstack((x,  h_prev))
    g = np.tanh(np.dot(wg, xc) + bg)
    i = sigmoid(np.dot(wi, xc) + bi)
    f = sigmoid(np.dot(wf, xc) + bf)
    o = sigmoid(np.dot(wo, xc) + bo)
    s = g * i + s_prev * f
    h = s * o
    return g, i, f, o, s, h, xc, s_prev, h_prev


def top_diff_is(top_diff_h: Tensor, top_diff_s: Tensor, state: NodeState, params: List[Tensor],
                diffs: List[Tensor], x_dim: int) -> Tuple[Tensor, Tensor, Tensor]:
    g, i, f, o, s, h, xc, s_prev, h_prev = state
    wg, wi, wf, wo, bg, bi, bf, bo = params
    # notice that top_diff_s is carried along the constant error carousel
    ds = o * top_diff_h + top_diff_s
    do = s * top_diff_h
    di = g * ds
    dg = i * ds
    df = s_prev * ds

    # diffs w.r.t. vector inside sigma / tanh function
    di_input = (1. - i) * i * di
    df_input = (1. - f) * f * df
    do_input = (1. - o) * o * do
    dg_input = (1. - g ** 2) * dg

    # diffs w.r.t. inputs
    diffs[1] += np.outer(di_input, xc)
    diffs[2] += np.outer(df_input, xc)
    diffs[3] += np.outer(do_input, xc)
    diffs[0] += np.outer(dg_input, xc)
    diffs[5] += di_input
    diffs[6] += df_input
    diffs[7] += do_input
    diffs[4] += dg_input

    # compute bottom diff
    dxc = np.zeros_like(xc)
    dxc += np.dot(wi.T, di_input)
    dxc += np.dot(wf.T, df_input)
    dxc += np.dot(wo.T, do_input)
    dxc += np.dot(wg.T, dg_input)

    # save bottom diffs
    bottom_diff_s = ds * f
    bottom_diff_x = dxc[:x_dim]
    bottom_diff_h = dxc[x_dim:]
    return bottom_diff_s, bottom_diff_x, bottom_diff_h


def toy_loss(pred: Tensor, label: float) -> Tensor:
    return (pred[0] - label) ** 2


def toy_bottom_diff(pred: Tensor, label: float) -> Tensor:
    diff = np.zeros_like(pred)
    diff[0] = 2 * (pred[0] - label)
    return diff


def x_list_add(x_list: List[Tensor], params: List[Tensor], mem_cell_ct: int) -> List[NodeState]:
    lstm_node_list: List[NodeState] = []
    for x in x_list:
        # a new node's state memory
        state_s = np.zeros(mem_cell_ct)
        state_h = np.zeros(mem_cell_ct)
        # get index of most recent x input
        idx = len(lstm_node_list)
        if idx == 0:
            # no recurrent inputs yet
            node = bottom_data_is(x, None, None, state_s, state_h, params)
        else:
            s_prev = lstm_node_list[idx - 1][4]
            h_prev = lstm_node_list[idx - 1][5]
            node = bottom_data_is(x, s_prev, h_prev, state_s, state_h, params)
        lstm_node_list.append(node)
    return lstm_node_list


def y_list_is(x_list: List[Tensor], y_list: List[float], params: List[Tensor],
              mem_cell_ct: int, x_dim: int) -> Tuple[Tensor, List[Tensor]]:
    lstm_node_list = x_list_add(x_list, params, mem_cell_ct)
    diffs = [np.zeros_like(p) for p in params]
    assert len(y_list) == len(x_list)
    idx = len(x_list) - 1
    # first node only gets diffs from label ...
    loss = toy_loss(lstm_node_list[idx][5], y_list[idx])
    diff_h = toy_bottom_diff(lstm_node_list[idx][5], y_list[idx])
    # here s is not affecting loss due to h(t+1), hence we set equal to zero
    diff_s = np.zeros(mem_cell_ct)
    bottom_diff_s, _, bottom_diff_h = top_diff_is(diff_h, diff_s, lstm_node_list[idx], params,
                                                  diffs, x_dim)
    idx -= 1

    # ... following nodes also get diffs from next nodes, hence we add diffs to diff_h
    # we also propagate error along constant error carousel using diff_s
    while idx >= 0:
        loss += toy_loss(lstm_node_list[idx][5], y_list[idx])
        diff_h = toy_bottom_diff(lstm_node_list[idx][5], y_list[idx])
        diff_h += bottom_diff_h
        diff_s = bottom_diff_s
        bottom_diff_s, _, bottom_diff_h = top_diff_is(diff_h, diff_s, lstm_node_list[idx],
                                                      params, diffs, x_dim)
        idx -= 1

    return loss, diffs


def network_loss(x_list: List[Tensor], y_list: List[float], params: List[Tensor],
                 mem_cell_ct: int) -> Tensor:
    """The loss ``y_list_is`` sums, without the hand-written backward (for the gradient check)."""
    lstm_node_list = x_list_add(x_list, params, mem_cell_ct)
    idx = len(x_list) - 1
    loss = toy_loss(lstm_node_list[idx][5], y_list[idx])
    idx -= 1
    while idx >= 0:
        loss += toy_loss(lstm_node_list[idx][5], y_list[idx])
        idx -= 1
    return loss


SIZES = {"test": (5, 4, 4), "bench": (100, 50, 30)}  # mem_cell_ct, x_dim, inputs


def make_params(dtype: str, size: str) -> List[Tensor]:
    mem_cell_ct, x_dim, _ = SIZES[size]
    concat_len = x_dim + mem_cell_ct
    return list(arrays(dtype, 31, *[(mem_cell_ct, concat_len)] * 4, *[(mem_cell_ct,)] * 4,
                       scale=0.3))


def _data(dtype: str, size: str) -> tuple:
    mem_cell_ct, x_dim, n = SIZES[size]
    x_list = list(arrays(dtype, 32, *[(x_dim,)] * n, scale=1.0))
    y_list = [float(v) for v in np.random.default_rng(33).uniform(-0.5, 0.5, n)]
    return x_list, y_list


def y_list_args(dtype: str, size: str) -> tuple:
    mem_cell_ct, x_dim, _ = SIZES[size]
    return (*_data(dtype, size), make_params(dtype, size), mem_cell_ct, x_dim)


def loss_args(dtype: str, size: str) -> tuple:
    return y_list_args(dtype, size)[:4]


CASES = {
    "y_list_is": Case(y_list_is, y_list_args),
    "network_loss": Case(network_loss, loss_args, grad=True, grad_xfail=(
        "cannot differentiate reading a list of (Tensor, ..., Tensor) that is changed or read "
        "at a run-time index: keep only tensors in lists that are appended to "
        "(lstm_node_list[idx][5])")),
}
BENCH = "y_list_is"
