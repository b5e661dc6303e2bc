"""The products of generated code's call sites (``fuser.cpu.products.Site``): a call with the
layout of the site's last call binds its addresses natively (``fuser.cpu.sites``); any other
call, and any operand or output the kernel must not take, goes the checked way."""

from __future__ import annotations

import numpy as np
import pytest

from fuser.cpu import products


def _rand(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@pytest.fixture
def counted(monkeypatch):
    """The calls that took the checked path (``products._run``)."""
    calls = []
    run = products._run

    def counting(*args, **kwargs):
        calls.append(args[0])
        return run(*args, **kwargs)

    monkeypatch.setattr(products, "_run", counting)
    return calls


def _want(operands):
    return sum(a.astype(np.float64) @ b.astype(np.float64)
               for a, b in zip(operands[::2], operands[1::2]))


@pytest.mark.parametrize("summed", [False, True])
def test_repeated_calls_bind_natively_and_equal_the_checked_path(counted, summed):
    rng = np.random.default_rng(0)
    ops = (_rand(rng, (64, 256)), _rand(rng, (256, 320)))
    if summed:
        ops += (_rand(rng, (64, 128)), _rand(rng, (128, 320)))
    site = products.Site(summed)
    first = site(*ops)
    assert site.last is None, "a function called once binds nothing (compiles no bind)"
    again = [site(*ops) for _ in range(3)]
    assert len(counted) == 2, "from the third call of one layout on, calls bind natively"
    for x in again:
        np.testing.assert_array_equal(x, first)
    np.testing.assert_allclose(first, _want(ops), rtol=1e-4, atol=1e-3)
    out = np.empty_like(first)
    assert site(*ops, out=out) is out and len(counted) == 2
    np.testing.assert_array_equal(out, first)


def test_other_layouts_take_the_checked_path(counted):
    rng = np.random.default_rng(1)
    a, b = _rand(rng, (64, 256)), _rand(rng, (256, 320))
    site = products.Site(False)
    site(a, b)
    site(a, b)  # the layout a later call binds
    cases = [
        (a[:32], b),                                   # another shape
        (a, np.asfortranarray(b)),                     # other strides
        (a, _rand(rng, (320, 256)).T),                 # a transposed B
        (a[::-1], b),                                  # negative strides
        (a, _rand(rng, (256, 640))[:, :320]),          # another row stride
        (a, np.lib.stride_tricks.as_strided(           # another column stride alone
            _rand(rng, (2 * 256 * 320,)), (256, 320), (1280, 8))),
        (a.astype(np.float64), b.astype(np.float64)),  # another dtype
        (a.tolist(), b),                               # not an ndarray
        (a.view(np.ndarray).view(type("Sub", (np.ndarray,), {})), b),  # a subclass
    ]
    for x, y in cases:
        before = len(counted)
        got = site(x, y)
        assert len(counted) == before + 1
        np.testing.assert_allclose(got, np.asarray(x, np.float64) @ np.asarray(y, np.float64),
                                   rtol=1e-4, atol=1e-3)
        site(a, b)  # back to the first layout: the site's last again


def test_outputs_the_kernel_must_not_write_are_left_to_numpy(counted):
    rng = np.random.default_rng(2)
    a, b = _rand(rng, (64, 64)), _rand(rng, (64, 64))
    site = products.Site(False)
    site(a, b, out=np.empty((64, 64), np.float32))
    want = a @ b
    shared = a.copy()
    np.testing.assert_allclose(site(shared, b, out=shared), want, rtol=1e-4, atol=1e-4)
    fortran = np.asfortranarray(np.empty((64, 64), np.float32))
    np.testing.assert_allclose(site(a, b, out=fortran), want, rtol=1e-4, atol=1e-4)
    readonly = np.empty((64, 64), np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError):
        site(a, b, out=readonly)
    wide = np.empty((64, 128), np.float32)[:, ::2]
    np.testing.assert_allclose(site(a, b, out=wide), want, rtol=1e-4, atol=1e-4)
    assert len(counted) == 5


def test_an_output_overlapping_only_its_own_bytes_is_written_in_place(counted):
    rng = np.random.default_rng(3)
    buf = np.zeros((3, 64, 64), np.float32)
    a, b = _rand(rng, (64, 64)), _rand(rng, (64, 64))
    buf[0] = a
    site = products.Site(False)
    site(buf[0], b, out=buf[1])
    site(buf[0], b, out=buf[2])
    buf[2] = 0
    site(buf[0], b, out=buf[2])  # bound natively, beside its operand
    assert len(counted) == 2
    np.testing.assert_allclose(buf[2], a @ b, rtol=1e-4, atol=1e-4)
    site(buf[1], b, out=buf[1])  # its operand's own bytes: numpy's, checked
    assert len(counted) == 3
    np.testing.assert_allclose(buf[1], (a @ b) @ b, rtol=1e-3, atol=1e-3)
