"""``maxv = tmp[i, j]`` (every axis indexed by an int) is numpy's scalar, a copy: a later write to
``tmp`` does not reach it. The loop that writes ``tmp`` was refused ("'maxv' may share memory
with 'tmp'"); ssm's ``_compute_stationary_expected_joints`` keeps a running maximum so."""

import numpy as np
import pytest

from script import script


def running_max(a):
    K = a.shape[0]
    tmp = np.zeros((K, K))
    maxv = -np.inf
    for i in range(K):
        for j in range(K):
            tmp[i, j] = a[i] + a[j]
            if tmp[i, j] > maxv:
                maxv = tmp[i, j]
            tmp[i, j] = -tmp[i, j]  # a write after the read: maxv keeps what it read
    return tmp, maxv


@pytest.mark.parametrize("K", [3, 40])
def test_a_scalar_item_kept_across_writes(K):
    a = np.random.default_rng(K).standard_normal(K)
    (tmp, best), (want_tmp, want_best) = script(running_max)(a), running_max(a)
    assert best == want_best
    np.testing.assert_array_equal(tmp, want_tmp)


def kept_through_an_ellipsis(a):
    K = a.shape[0]
    tmp = np.zeros((K, K))
    keep = tmp[0, 0, ...]
    for i in range(K):
        for j in range(K):
            tmp[i, j] = a[i] + a[j]
            if tmp[i, j] > 1.0:
                keep = tmp[i, j, ...]  # numpy: a 0-d view, which the next write changes
            tmp[i, j] = -1.0
    return keep


def test_an_item_after_an_ellipsis_is_a_view_and_stays_refused():
    from script import ScriptError
    with pytest.raises(ScriptError, match="may share memory|would also change"):
        script(kept_through_an_ellipsis)(np.array([0.3, -1.0, 2.0]))
