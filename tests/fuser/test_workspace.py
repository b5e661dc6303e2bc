"""fuser.workspace: an allocation site hands an array out again only when nothing but the site
holds it (no reference, no view, no buffer export), never one a caller can still reach."""

import threading
import weakref

import numpy as np
import pytest

from fuser import workspace
from fuser.workspace import Workspace

F32 = np.dtype("float32")


def site(keep=workspace.KEEP):
    return Workspace(keep).site()


def test_an_array_only_the_site_holds_is_handed_out_again():
    s = site()
    a = s.empty((4, 5), F32)
    first = id(a)
    del a
    b = s.empty((4, 5), F32)
    assert id(b) == first and b.shape == (4, 5) and b.dtype == F32
    assert b.flags.writeable and b.flags.c_contiguous


def test_an_array_the_caller_holds_is_never_handed_out():
    s = site()
    a = s.empty((4, 5), F32)
    a[...] = 1.0
    b = s.empty((4, 5), F32)
    b[...] = 2.0
    c = s.empty((4, 5), F32)  # both kept arrays are held: a plain new array
    c[...] = 3.0
    assert b is not a and c is not a and c is not b
    assert (a == 1.0).all() and (b == 2.0).all()
    assert len(s.kept) == workspace.KEEP  # no more than KEEP kept, however many are held


@pytest.mark.parametrize("view", [
    lambda a: a[1:],
    lambda a: a.T,
    lambda a: a.reshape(20)[::2].reshape(2, 5),  # a view of a view: its base is still ``a``
    lambda a: a[2],
    lambda a: memoryview(a),
    lambda a: np.frombuffer(memoryview(a), np.float32),
    lambda a: list(a),  # the rows, as the native loop hands a list its slots
], ids=["slice", "transpose", "view of view", "row", "memoryview", "frombuffer", "rows"])
def test_a_view_keeps_its_base_from_being_handed_out(view):
    s = site()
    a = s.empty((4, 5), F32)
    a[...] = 7.0
    kept = view(a)
    del a
    b = s.empty((4, 5), F32)
    b[...] = 0.0
    assert all((np.asarray(k) == 7.0).all() for k in (kept if isinstance(kept, list) else [kept]))
    del kept, b
    assert len(s.kept) == 2
    s.empty((4, 5), F32)  # with the view gone, the array is free again: no third one
    assert len(s.kept) == 2


def test_an_array_only_a_weak_reference_reaches_is_let_go_not_reused():
    s = site()
    a = s.empty((4, 5), F32)
    a[...] = 5.0
    ref = weakref.ref(a)
    del a
    b = s.empty((4, 5), F32)
    b[...] = 0.0
    assert ref() is None  # it died, as it would have with no workspace: never seen changed


def test_an_array_changed_in_place_by_its_holder_is_not_handed_out_as_another_shape():
    s = site(keep=1)
    a = s.empty((4, 5), F32)
    a.shape = (5, 4)
    del a
    b = s.empty((4, 5), F32)
    assert b.shape == (4, 5)
    b.flags.writeable = False
    del b
    c = s.empty((4, 5), F32)
    assert c.flags.writeable


def test_a_free_array_of_another_shape_makes_room_when_the_site_is_full():
    s = site(keep=1)
    a = s.empty((3,), F32)
    del a
    b = s.empty((30,), F32)
    assert [k.shape for k in s.kept] == [(30,)] and s.kept[0] is b


def test_no_keep_means_plain_arrays(monkeypatch):
    monkeypatch.setenv("RNNSCRIPT_WORKSPACE", "0")
    w = Workspace()
    s = w.site()
    a = s.empty((4,), F32)
    del a
    s.empty((4,), F32)
    assert w.keep == 0 and not s.kept and w.nbytes() == 0


def test_clear_lets_the_arrays_go():
    w = Workspace()
    s = w.site()
    a = s.empty((8,), F32)
    ref = weakref.ref(a)
    del a
    assert w.nbytes() == 32
    w.clear()
    assert ref() is None and w.nbytes() == 0


def test_clear_all_lets_every_workspaces_arrays_go():
    workspaces = [Workspace() for _ in range(3)]
    refs = []
    for s in [w.site() for w in workspaces]:
        a = s.empty((8,), F32)
        refs.append(weakref.ref(a))
        del a
    assert all(r() is not None for r in refs)
    workspace.clear_all()
    assert all(r() is None for r in refs)


def test_threads_never_share_an_array():
    s = site()
    errors = []
    start = threading.Barrier(4)

    def work(k):
        start.wait()
        for _ in range(2000):
            a = s.empty((16,), F32)
            a[...] = k
            if not (a == k).all():
                errors.append(k)
            del a

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_a_free_array_moves_to_another_site_of_the_same_size(monkeypatch):
    """A forward's free projection becomes its backward's gradient buffer: one array, not two."""
    monkeypatch.setattr(workspace, "BORROW_MIN_BYTES", 0)
    first, second = Workspace().site(), Workspace().site()
    a = first.empty((8, 4), F32)
    base = id(a)
    del a
    b = second.empty((2, 16), F32)  # same bytes and dtype, another shape: a view of it
    assert b.shape == (2, 16) and b.flags.c_contiguous and b.flags.writeable
    assert id(b.base) == base and first.kept == [] and [id(k) for k in second.kept] == [base]
    del b
    c = first.empty((8, 4), F32)  # and back again once free
    assert id(c) == base and second.kept == []


def test_an_array_another_site_holds_or_of_another_kind_is_never_taken(monkeypatch):
    monkeypatch.setattr(workspace, "BORROW_MIN_BYTES", 0)
    first, second = Workspace().site(), Workspace().site()
    held = first.empty((8, 4), F32)
    held[...] = 1.0
    b = second.empty((32,), F32)
    b[...] = 2.0
    assert (held == 1.0).all() and b.base is None  # a new array: the other one is held
    other = first.empty((4, 4), np.dtype("float64"))  # 128 bytes as well, float64
    del other, b
    c = Workspace().site().empty((32,), F32)
    assert c.dtype == F32 and (c.base is None or c.base.dtype == F32)


def test_small_arrays_stay_with_their_site():
    first, second = Workspace().site(), Workspace().site()
    a = first.empty((8, 4), F32)
    del a
    b = second.empty((32,), F32)
    assert b.base is None and len(first.kept) == 1
