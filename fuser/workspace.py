"""Memory a compiled function owns: the arrays it allocates on every call, kept for its next call.

A training call allocates the same large arrays every time: the native loop's per-step slot
buffers (``fuser.cpu.loop``), the stacked outputs, the input projection's product, the backward's
gradient buffers. Freed after each call, glibc returns most of them to the kernel (an array above
malloc's mmap threshold is unmapped by ``free``; free memory at the top of the heap is trimmed),
and the next call page-faults every page in again, zeroed by the kernel: on the fastrnns LSTM
layer (forward + backward, one thread) 368 minor faults a call at T=100, B=8, H=64 and 4,671 at
T=100, B=64, H=512 (how many depends on the order of the process's earlier allocations, which
moves malloc's dynamic thresholds: between none and 720 at the small size). With the sites,
none.

So each allocation site of a compiled function (a ``Site``: one ``tensor::empty`` or matmul of the
generated code, one buffer of a native loop) keeps the arrays it handed out, and hands one out
again when nothing but the site holds it any more. "Holds" is the array's reference count: every
view of an array keeps its base alive (``.base``, collapsed by numpy to the array that owns the
memory), and so does every buffer export (``memoryview``, ``torch.from_numpy``, DLPack), so an
output the caller kept, a view of one, or a saved activation a pending backward closure holds
keeps its array out of reuse: nothing anyone can reach is ever overwritten. An array only a
weak reference reaches is dropped instead of reused (the weak reference then dies, as it would
have without the site). An array whose shape, dtype, flags (writeable, C-contiguous) a caller
changed in place is not reused either.

Large arrays (``BORROW_MIN_BYTES``) move between sites of one size: a site with no free array
of its own takes a free one of the same dtype and byte size from any other site in the process
(under another shape, as a reshaped view of it), which then owns it. A forward's input
projection is free once the forward returns and its backward's gradient buffer of the same size
takes it, instead of a second array (50 MB less at T=100, B=64, H=512); in a training loop the
two calls hand one array back and forth.

A site keeps at most ``KEEP`` arrays (a training loop holds the previous call's saved values while
it calls the forward again: two sets in turn); an allocation that finds none free beyond that is a
plain ``np.empty``. The generated code makes no site for an array below ``MIN_BYTES`` (small arrays
come from malloc's heap, which does not fault); a native loop makes one per buffer.
``RNNSCRIPT_WORKSPACE=0`` in the environment turns sites off when compiling (every allocation is
``np.empty``); ``Workspace.clear`` lets a function's arrays go, ``clear_all`` those of every
workspace in the process (a memory measurement does, before it runs).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import weakref
from typing import Any

import numpy as np

KEEP = 2
"""arrays a site keeps at most."""

MIN_BYTES = 64 << 10
"""the smallest array (in bytes) a compiled function's code allocates through a site."""

BORROW_MIN_BYTES = 1 << 20
"""the smallest array a site takes from another site (smaller ones are cheap to keep twice,
and a loop compiled per run-time size has many sites of one small size to search)."""

_HELD_BY_SITE = 2
"""``sys.getrefcount(kept[i])`` of an array only the site's list holds (the list and the call's
argument); ``tests/fuser/test_workspace.py`` checks it on this interpreter."""


def enabled() -> bool:
    """Whether compiled functions allocate through sites: ``RNNSCRIPT_WORKSPACE`` (default on)."""
    return os.environ.get("RNNSCRIPT_WORKSPACE", "1").strip().lower() not in ("0", "false", "off")


class Site:
    """One allocation site: ``empty(shape, dtype)`` returns a kept array nothing else holds, one
    taken from another site, or a new one (kept while fewer than ``KEEP`` are)."""

    __slots__ = ("keep", "kept", "shapes", "lock", "__weakref__")

    def __init__(self, lock: Any, keep: int):
        self.kept: list[np.ndarray] = []
        self.shapes: list[tuple[int, ...]] = []
        """the shape each kept array was made with (one its holder changed is not reused)."""
        self.keep = keep
        self.lock = lock

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An uninitialized C-contiguous writeable array of ``shape`` and ``dtype`` no one else
        holds (``dtype`` a ``np.dtype``)."""
        with self.lock:
            kept = self.kept
            for i in range(len(kept)):  # the common case first: a free one made this shape
                if sys.getrefcount(kept[i]) == _HELD_BY_SITE:
                    a = kept[i]
                    if (a.shape == shape and a.dtype == dtype and self.shapes[i] == shape
                            and _reusable(a, shape)):
                        return a
                    del a  # (the general path below counts the site's references)
                    break
        nbytes = int(math.prod(shape)) * dtype.itemsize
        with self.lock:
            a = self._own(shape, dtype, nbytes)
            if a is None and self.keep and nbytes >= BORROW_MIN_BYTES:
                a = self._borrowed(dtype, nbytes)
            if a is None:
                a = np.empty(shape, dtype)
                if len(self.kept) < self.keep:
                    self._add(a)
                return a
            return a if a.shape == shape else a.reshape(shape)

    def _own(self, shape: tuple[int, ...], dtype: np.dtype, nbytes: int) -> np.ndarray | None:
        kept = self.kept
        i = 0
        while i < len(kept):
            if sys.getrefcount(kept[i]) != _HELD_BY_SITE:
                i += 1
                continue
            if not _reusable(kept[i], self.shapes[i]):
                self._drop(i)  # let go, as numpy would have
                continue
            a = kept[i]
            if a.dtype == dtype and a.nbytes == nbytes:
                return a
            del a
            if len(kept) >= self.keep:  # a free array unlike the one asked for: make room
                self._drop(i)
                continue
            i += 1
        return None

    def _borrowed(self, dtype: np.dtype, nbytes: int) -> np.ndarray | None:
        """A free array of this size from another site, now this site's (kept when there is
        room)."""
        for other in list(_by_size.get((nbytes, dtype.str), ())):
            if other is self:
                continue
            for i in range(len(other.kept)):
                if (sys.getrefcount(other.kept[i]) == _HELD_BY_SITE
                        and other.kept[i].dtype == dtype and other.kept[i].nbytes == nbytes
                        and _reusable(other.kept[i], other.shapes[i])):
                    a = other.kept[i]
                    other._drop(i)
                    if len(self.kept) < self.keep:
                        self._add(a)
                    return a
        return None

    def _add(self, a: np.ndarray) -> None:
        self.kept.append(a)
        self.shapes.append(a.shape)
        _by_size.setdefault((a.nbytes, a.dtype.str), weakref.WeakSet()).add(self)

    def _drop(self, i: int) -> None:
        del self.kept[i], self.shapes[i]

    def clear(self) -> None:
        self.kept.clear()
        self.shapes.clear()


def _reusable(a: np.ndarray, shape: tuple[int, ...]) -> bool:
    """Not reachable by a weak reference, and its shape and flags as made (a holder may have
    changed them in place)."""
    flags = a.flags
    return (not weakref.getweakrefcount(a) and a.shape == shape and flags.writeable
            and flags.c_contiguous)


_by_size: dict[tuple[int, str], weakref.WeakSet[Site]] = {}
"""(bytes, dtype) -> the sites that have kept an array of that size (``Site._borrowed``)."""

_LOCK = threading.Lock()
"""one lock for every site: an array may move from any site to any other."""


class Workspace:
    """The sites of one compiled function (a specialization's generated code, a native loop)."""

    def __init__(self, keep: int | None = None):
        self.keep = (KEEP if enabled() else 0) if keep is None else keep
        """arrays each site keeps at most (0: every allocation is ``np.empty``)."""
        self.sites: list[Site] = []
        self.lock = _LOCK
        _workspaces.add(self)

    def site(self) -> Site:
        """A new allocation site of this workspace."""
        s = Site(self.lock, self.keep)
        self.sites.append(s)
        return s

    def nbytes(self) -> int:
        """The bytes of the arrays the sites keep."""
        with self.lock:
            return sum(a.nbytes for s in self.sites for a in s.kept)

    def clear(self) -> None:
        """Let every kept array go (those in use stay with their holders)."""
        with self.lock:
            for s in self.sites:
                s.clear()


_workspaces: weakref.WeakSet[Workspace] = weakref.WeakSet()
"""every workspace alive in the process (``clear_all``)."""


def clear_all() -> None:
    """``Workspace.clear`` of every workspace alive in the process."""
    for w in list(_workspaces):
        w.clear()
