# ruff: noqa: E501, E741 -- the source's own lines and names, kept as written
#
# Licensed to the Apache Software Foundation (ASF) under one
# or more contributor license agreements.  See the NOTICE file
# distributed with this work for additional information
# regarding copyright ownership.  The ASF licenses this file
# to you under the Apache License, Version 2.0 (the
# "License"); you may not use this file except in compliance
# with the License.  You may obtain a copy of the License at
#
#   http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing,
# software distributed under the License is distributed on an
# "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
# KIND, either express or implied.  See the License for the
# specific language governing permissions and limitations
# under the License.
"""Apache TVM's LSTM reference implementation in numpy
(https://github.com/apache/tvm/blob/main/python/tvm/topi/testing/lstm_python.py, Apache
License 2.0), unchanged but for its docstring, shortened: ``np.array`` annotations with None
defaults, activations in a dict of a lambda and ``np.tanh`` chosen by name, the gates of each
step in lists built by comprehensions, peepholes, a projection, reverse order, a weight
layout given as a string, and ``np.stack(hs[1:])`` of the states after the initial one. Values
in float64 and float32, and gradients against finite differences."""

import numpy as np
import pytest

from script import script
from tests.gradcheck import check_vjp


def lstm_python(
    Xs: np.array,
    Wi: np.array,
    Wh: np.array,
    Bi: np.array = None,
    Bh: np.array = None,
    h_init: np.array = None,
    c_init: np.array = None,
    proj: np.array = None,
    p_i: np.array = None,
    p_f: np.array = None,
    p_o: np.array = None,
    f_act: str = "sigmoid",
    g_act: str = "tanh",
    h_act: str = "tanh",
    reverse: bool = False,
    weight_layout: str = "IFGO",
):
    """LSTM reference implementation using numpy
    (docstring shortened)
    """
    i_gate_idx = weight_layout.find("I")
    f_gate_idx = weight_layout.find("F")
    g_gate_idx = weight_layout.find("G")
    o_gate_idx = weight_layout.find("O")

    str2act = {"sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tanh": np.tanh}

    f_act = str2act[f_act]
    g_act = str2act[g_act]
    h_act = str2act[h_act]

    S, B, F = Xs.shape
    H = Wi.shape[0] // 4
    O = Wh.shape[1]

    # make life a bit easier
    Wi = np.reshape(Wi, (4, H, F))
    Wh = np.reshape(Wh, (4, H, O))
    if Bi is not None:
        Bi = np.reshape(Bi, (4, H))
    if Bh is not None:
        Bh = np.reshape(Bh, (4, H))

    h0 = h_init if h_init is not None else np.zeros((B, O), "float32")
    c0 = c_init if c_init is not None else np.zeros((B, H), "float32")

    hs = [h0]
    cs = [c0]

    for t in range(S):
        x = Xs[S - t - 1 if reverse else t]
        xh = [np.matmul(x, Wi[g].T) for g in range(4)]
        if Bi is not None:
            xh = [xh[g] + Bi[g] for g in range(4)]

        hh = [np.matmul(hs[t], Wh[g].T) for g in range(4)]
        if Bh is not None:
            hh = [hh[g] + Bh[g] for g in range(4)]

        sums = [xh[g] + hh[g] for g in range(4)]

        if p_i is not None and p_f is not None:
            i_gate = f_act(sums[i_gate_idx] + p_i * cs[t])
            f_gate = f_act(sums[f_gate_idx] + p_f * cs[t])
        else:
            i_gate = f_act(sums[i_gate_idx])
            f_gate = f_act(sums[f_gate_idx])

        g_gate = g_act(sums[g_gate_idx])

        next_c = f_gate * cs[t] + i_gate * g_gate

        if p_o is not None:
            o_gate = f_act(sums[o_gate_idx] + p_o * next_c)
        else:
            o_gate = f_act(sums[o_gate_idx])

        next_h = o_gate * h_act(next_c)

        if proj is not None:
            next_h = np.matmul(next_h, proj.T)

        hs.append(next_h)
        cs.append(next_c)

    return np.stack(hs[1:], axis=0), np.stack(cs[1:], axis=0)


def arguments(rng, S, B, F, H, P=None, dtype=np.float64):
    O = P or H
    made = dict(Xs=rng.standard_normal((S, B, F)), Wi=0.5 * rng.standard_normal((4 * H, F)),
                Wh=0.5 * rng.standard_normal((4 * H, O)), Bi=rng.standard_normal(4 * H),
                Bh=rng.standard_normal(4 * H), h_init=rng.standard_normal((B, O)),
                c_init=rng.standard_normal((B, H)),
                proj=0.5 * rng.standard_normal((P, H)) if P else None,
                p_i=rng.standard_normal((B, H)), p_f=rng.standard_normal((B, H)),
                p_o=rng.standard_normal((B, H)))
    return {k: None if v is None else v.astype(dtype) for k, v in made.items()}


ORDER = ["Xs", "Wi", "Wh", "Bi", "Bh", "h_init", "c_init", "proj", "p_i", "p_f", "p_o"]


def cases(dtype):
    rng = np.random.default_rng(0)
    full, plain = arguments(rng, 6, 3, 5, 4, P=3, dtype=dtype), arguments(rng, 6, 3, 5, 4, dtype=dtype)
    return {
        "minimal": ((plain["Xs"], plain["Wi"], plain["Wh"]), {}),
        "biases and initial state": ((plain["Xs"], plain["Wi"], plain["Wh"], plain["Bi"],
                                      plain["Bh"], plain["h_init"]), {}),
        "peepholes, projection, reverse, IOFG": (
            tuple(full[k] for k in ORDER) + ("sigmoid", "tanh", "tanh", True, "IOFG"), {}),
        "keywords": ((plain["Xs"], plain["Wi"], plain["Wh"]),
                     dict(Bi=plain["Bi"], reverse=True, h_act="sigmoid")),
        "projection only, tanh gates": ((full["Xs"], full["Wi"], full["Wh"]),
                                        dict(proj=full["proj"], f_act="tanh")),
    }


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_tvm_lstm_equals_numpy(dtype, tol):
    f = script(lstm_python)
    for name, (args, kwargs) in cases(dtype).items():
        want, got = lstm_python(*args, **kwargs), f(*args, **kwargs)
        for w, g in zip(want, got):
            assert g.dtype == w.dtype and g.shape == w.shape, name
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=name)


def test_tvm_lstm_gradients_equal_finite_differences():
    rng = np.random.default_rng(1)
    made = arguments(rng, 4, 2, 3, 4, P=3)
    f = script(lstm_python)

    def with_peepholes(Xs, Wi, Wh, Bi, Bh, h_init, c_init, proj, p_i, p_f, p_o):
        return f(Xs, Wi, Wh, Bi, Bh, h_init, c_init, proj, p_i, p_f, p_o, "sigmoid", "tanh",
                 "tanh", False, "IFGO")

    check_vjp(with_peepholes, tuple(made[k] for k in ORDER))
    check_vjp(f, (made["Xs"], made["Wi"][:, :], 0.5 * rng.standard_normal((16, 4))))
