"""load() on damaged or hostile files: it either loads a model that computes exactly what the saved
one computed, or raises LoadError. Never another exception, never code from the file."""

import hashlib
import json
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from script import LoadError, freeze, load, save, script
from tests.programs.custom_lstms import random_states, script_lstm

SEED = 20240611


class PlantedPayload:
    """Unpickling this creates a directory at ``marker``: proof that the pickle ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _flat(tree):
    if isinstance(tree, (tuple, list)):
        return [a for item in tree for a in _flat(item)]
    return [tree]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Saved files (a frozen and an unfrozen model), their inputs and expected outputs."""
    root = tmp_path_factory.mktemp("saved")
    module = script(script_lstm(6, 8, 1)).eval()
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((3, 2, 6)), random_states(1, 2, 8, rng))
    expected = [a.copy() for a in _flat(module(*args))]
    files = {}
    for tag, model in (("frozen", freeze(module)), ("unfrozen", module)):
        files[tag] = root / f"{tag}.rsm"
        save(model, files[tag])
    return files, args, expected


def _check_load(path, args, expected, marker=None):
    """Load ``path``: a LoadError, or a model giving exactly ``expected``. Returns which."""
    try:
        model = load(path)
    except LoadError as e:
        assert str(e), "a LoadError says why"
        outcome = "refused"
    else:
        got = _flat(model(*args))
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b)
        outcome = "loaded"
    if marker is not None:
        assert not Path(marker).exists(), "code from the file ran"
    return outcome


def _members(path):
    with zipfile.ZipFile(path) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


def _write(path, members, duplicate=None):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if duplicate is not None:
            zf.writestr(duplicate, members[duplicate])


def _manifest(members):
    return json.loads(members["manifest.json"])


def _set_manifest(members, manifest):
    """Replace the manifest, with a matching digest (as a deliberate editor would)."""
    text = json.dumps(manifest).encode()
    members["manifest.json"] = text
    members["manifest.sha256"] = (hashlib.sha256(text).hexdigest() + "\n").encode()


def _fix_checksums(members):
    """Make the manifest agree with the members' bytes (as a deliberate editor would)."""
    manifest = _manifest(members)
    for name, data in members.items():
        if not name.startswith("manifest."):
            manifest["members"][name] = {"sha256": hashlib.sha256(data).hexdigest(),
                                         "size": len(data)}
    _set_manifest(members, manifest)


def _graph_member(members):
    return _manifest(members)["methods"]["forward"]["graph"]


def _first_array(members, role="constants"):
    manifest = _manifest(members)
    return next(iter(manifest[role].values()))["member"]


# -- random damage ---------------------------------------------------------------------------------
@pytest.mark.parametrize("tag", ["frozen", "unfrozen"])
def test_truncated_files(saved, tag, tmp_path):
    files, args, expected = saved
    data = files[tag].read_bytes()
    rng = np.random.default_rng(SEED)
    cuts = sorted(set(rng.integers(0, len(data), 80).tolist()) | {0, 1, 4, len(data) - 1})
    for cut in cuts:
        (tmp_path / "cut.rsm").write_bytes(data[:cut])
        assert _check_load(tmp_path / "cut.rsm", args, expected) == "refused", cut


@pytest.mark.parametrize("tag", ["frozen", "unfrozen"])
def test_random_byte_flips(saved, tag, tmp_path):
    files, args, expected = saved
    data = files[tag].read_bytes()
    rng = np.random.default_rng(SEED + 1)
    outcomes = []
    for _ in range(150):
        damaged = bytearray(data)
        for pos in rng.integers(0, len(data), rng.integers(1, 4)):
            damaged[pos] ^= int(rng.integers(1, 256))
        (tmp_path / "flip.rsm").write_bytes(bytes(damaged))
        outcomes.append(_check_load(tmp_path / "flip.rsm", args, expected))
    assert "refused" in outcomes


@pytest.mark.parametrize("tag", ["frozen", "unfrozen"])
def test_random_damage_inside_members(saved, tag, tmp_path):
    """Damage below the zip layer, with the archive rebuilt around it (valid CRCs): the
    checksums in the manifest must catch it, or the manifest's own checks must."""
    files, args, expected = saved
    good = _members(files[tag])
    rng = np.random.default_rng(SEED + 2)
    names = sorted(good)
    for _ in range(120):
        members = dict(good)
        name = names[int(rng.integers(len(names)))]
        damaged = bytearray(members[name])
        for pos in rng.integers(0, len(damaged), rng.integers(1, 4)):
            damaged[pos] ^= int(rng.integers(1, 256))
        members[name] = bytes(damaged)
        _write(tmp_path / "inner.rsm", members)
        _check_load(tmp_path / "inner.rsm", args, expected)


def test_the_undamaged_files_load(saved):
    files, args, expected = saved
    for path in files.values():
        assert _check_load(path, args, expected) == "loaded"


# -- edited manifests ------------------------------------------------------------------------------
def _edit(field_path, value):
    def edit(manifest):
        target = manifest
        for key in field_path[:-1]:
            target = target[key]
        target[field_path[-1]] = value
    return edit


def _delete(*field_path):
    def edit(manifest):
        target = manifest
        for key in field_path[:-1]:
            target = target[key]
        del target[field_path[-1]]
    return edit


def _first_member_entry(manifest):
    return next(iter(manifest["members"]))


MANIFEST_EDITS = {
    "future version": _edit(["format_version"], 2),
    "version as text": _edit(["format_version"], "1"),
    "version as bool": _edit(["format_version"], True),
    "no version": _delete("format_version"),
    "other format": _edit(["format"], "something.else"),
    "frozen as text": _edit(["frozen"], "yes"),
    "methods as list": _edit(["methods"], []),
    "members as list": _edit(["members"], ["graphs/forward.ir"]),
    "argument type": _edit(["methods", "forward", "arg_types", 0], "int"),
    "argument type garbage": _edit(["methods", "forward", "arg_types", 0], "Tensor):\n  %y"),
    "return type": _edit(["methods", "forward", "return_type"], "Tensor"),
    "fewer argument names": _edit(["methods", "forward", "arg_names"], ["input"]),
    "argument name": _edit(["methods", "forward", "arg_names", 0], "in put"),
    "default for nothing": _edit(["methods", "forward", "defaults"], {"zzz": 1}),
    "default of odd type": _edit(["methods", "forward", "defaults"], {"input": {"set": [1]}}),
    "graph member missing": _edit(["methods", "forward", "graph"], "graphs/other.ir"),
    "class missing": _edit(["classes"], {}),
    "class field type": _edit(["classes", "LSTMState", "fields", 0, 1], "int"),
    "class field name": _edit(["classes", "LSTMState", "fields", 0, 0], "__class__"),
    "class fields shape": _edit(["classes", "LSTMState", "fields"], [["hx"]]),
    "method name": lambda m: m["methods"].update({"os.system": m["methods"].pop("forward")}),
}


def _checksum_edit(manifest):
    entry = manifest["members"][_first_member_entry(manifest)]
    entry["sha256"] = "0" * 64


def _size_edit(manifest):
    manifest["members"][_first_member_entry(manifest)]["size"] += 1


def _dtype_edit(manifest):
    next(iter(manifest["constants"].values()))["dtype"] = "float32"


def _shape_edit(manifest):
    next(iter(manifest["constants"].values()))["shape"] = [1, 2, 3]


def _unknown_member(manifest):
    manifest["members"]["extra.bin"] = {"sha256": "0" * 64, "size": 0}


MANIFEST_EDITS.update({"checksum": _checksum_edit, "size": _size_edit, "dtype": _dtype_edit,
                       "shape": _shape_edit, "listed member absent": _unknown_member})


@pytest.mark.parametrize("name", sorted(MANIFEST_EDITS))
def test_edited_manifest_is_refused(saved, name, tmp_path):
    files, args, expected = saved
    members = _members(files["frozen"])
    manifest = _manifest(members)
    MANIFEST_EDITS[name](manifest)
    _set_manifest(members, manifest)
    _write(tmp_path / "edited.rsm", members)
    with pytest.raises(LoadError):
        load(tmp_path / "edited.rsm")


@pytest.mark.parametrize("text", [b"", b"{", b"[]", b"\xff\xfe", b"[" * 100000 + b"]" * 100000,
                                  b'{"format": "rnnscript.module"}'])
def test_manifest_that_is_not_a_manifest(saved, text, tmp_path):
    members = _members(saved[0]["frozen"])
    members["manifest.json"] = text
    members["manifest.sha256"] = (hashlib.sha256(text).hexdigest() + "\n").encode()
    _write(tmp_path / "bad.rsm", members)
    with pytest.raises(LoadError):
        load(tmp_path / "bad.rsm")


def test_manifest_edited_without_its_digest_is_refused(saved, tmp_path):
    files, args, expected = saved
    members = _members(files["frozen"])
    members["manifest.json"] = members["manifest.json"].replace(b'"forward"', b'"forwaxd"')
    _write(tmp_path / "edited.rsm", members)
    with pytest.raises(LoadError, match="checksum mismatch for manifest.json"):
        load(tmp_path / "edited.rsm")


def test_version_error_names_the_versions(saved, tmp_path):
    members = _members(saved[0]["frozen"])
    manifest = _manifest(members)
    manifest["format_version"] = 7
    _set_manifest(members, manifest)
    _write(tmp_path / "v7.rsm", members)
    with pytest.raises(LoadError, match="format version 7 is not supported"):
        load(tmp_path / "v7.rsm")


# -- edited graphs (checksums fixed up, as a deliberate editor would) -----------------------------
def _replace(old, new, count=1):
    def edit(text):
        assert old in text, old
        return text.replace(old, new, count)
    return edit


IR_EDITS = {
    "unknown op kind": _replace("tensor::matmul", "tensor::run_shell"),
    "unknown namespace": _replace("tensor::matmul", "os::system"),
    "broken syntax": _replace("return (", "return ((", 1),
    "truncated text": lambda text: text[: len(text) // 2],
    "argument type": _replace("%input : Tensor", "%input : int"),
    "constant type": _replace('ref="c0"', 'ref="c0", ref="c1"'),
    "constant shape": lambda text: text.replace("Double(6, 32)", "Double(7, 32)", 1),
    "missing constant": _replace('ref="c0"', 'ref="c99"'),
    "undefined value": _replace("tensor::matmul(%", "tensor::matmul(%nowhere, %"),
    "field name injection": _replace('name="hx"', 'name="hx; import os; os.system(\\"x\\")"'),
    "dunder field": _replace('name="hx"', 'name="__class__"'),
    "not utf-8": lambda text: "\udcff" + text,
    "block mismatch": _replace("-> (", "-> (%input, "),
}


@pytest.mark.parametrize("name", sorted(IR_EDITS))
def test_edited_graph_is_refused(saved, name, tmp_path):
    files, args, expected = saved
    members = _members(files["frozen"])
    member = _graph_member(members)
    text = IR_EDITS[name](members[member].decode())
    members[member] = text.encode("utf-8", "surrogateescape")
    _fix_checksums(members)
    _write(tmp_path / "edited.rsm", members)
    with pytest.raises(LoadError):
        load(tmp_path / "edited.rsm")


def test_unknown_op_kind_error_names_it(saved, tmp_path):
    members = _members(saved[0]["frozen"])
    member = _graph_member(members)
    members[member] = members[member].replace(b"tensor::matmul", b"tensor::run_shell", 1)
    _fix_checksums(members)
    _write(tmp_path / "op.rsm", members)
    with pytest.raises(LoadError, match="unknown op kind tensor::run_shell"):
        load(tmp_path / "op.rsm")


# -- planted pickles and wrong members -------------------------------------------------------------
def _object_npy(marker, path):
    array = np.empty(1, dtype=object)
    array[0] = PlantedPayload(marker)
    np.save(path, array, allow_pickle=True)
    return Path(path).read_bytes()


@pytest.mark.parametrize("tag", ["frozen", "unfrozen"])
def test_pickle_planted_in_an_array_is_never_run(saved, tag, tmp_path):
    files, args, expected = saved
    marker = tmp_path / "marker"
    members = _members(files[tag])
    role = "constants" if tag == "frozen" else "parameters"
    target = _first_array(members, role)
    members[target] = _object_npy(marker, tmp_path / "evil.npy")
    _fix_checksums(members)
    _write(tmp_path / "planted.rsm", members)
    with pytest.raises(LoadError, match="pickled objects never are"):
        load(tmp_path / "planted.rsm")
    assert not marker.exists()


def test_pickle_disguised_as_numeric_array_is_never_run(saved, tmp_path):
    """A float64 header followed by a pickle: read as bytes of floats (or refused), not run."""
    files, args, expected = saved
    marker = tmp_path / "marker"
    members = _members(files["frozen"])
    target = _first_array(members)
    header_end = members[target].index(b"\n") + 1
    payload = pickle.dumps(PlantedPayload(marker))
    members[target] = members[target][:header_end] + payload
    _fix_checksums(members)
    _write(tmp_path / "disguised.rsm", members)
    assert _check_load(tmp_path / "disguised.rsm", args, expected, marker) == "refused"


@pytest.mark.parametrize("listed", [False, True])
def test_extra_pickle_member_is_refused(saved, listed, tmp_path):
    files, args, expected = saved
    marker = tmp_path / "marker"
    members = _members(files["frozen"])
    members["constants/extra.pkl"] = pickle.dumps(PlantedPayload(marker))
    if listed:
        _fix_checksums(members)
    _write(tmp_path / "extra.rsm", members)
    with pytest.raises(LoadError, match="unexpected member"):
        load(tmp_path / "extra.rsm")
    assert not marker.exists()


def test_missing_member_is_refused(saved, tmp_path):
    members = _members(saved[0]["unfrozen"])
    del members[_first_array(members, "parameters")]
    _write(tmp_path / "missing.rsm", members)
    with pytest.raises(LoadError, match="missing"):
        load(tmp_path / "missing.rsm")


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_duplicate_member_is_refused(saved, tmp_path):
    members = _members(saved[0]["frozen"])
    _write(tmp_path / "dup.rsm", members, duplicate=_graph_member(members))
    with pytest.raises(LoadError, match="same name"):
        load(tmp_path / "dup.rsm")


def test_array_with_a_huge_claimed_shape_is_refused(saved, tmp_path):
    members = _members(saved[0]["frozen"])
    target = _first_array(members)
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (4000000000000,), }"
    members[target] = b"\x93NUMPY\x01\x00" + len(header + "\n").to_bytes(2, "little") + \
        header.encode() + b"\n" + b"\0" * 64
    _fix_checksums(members)
    _write(tmp_path / "huge.rsm", members)
    with pytest.raises(LoadError):
        load(tmp_path / "huge.rsm")


def test_wrong_member_types_are_refused(saved, tmp_path):
    """A graph member holding array bytes, and an array member holding IR text."""
    members = _members(saved[0]["frozen"])
    graph, array = _graph_member(members), _first_array(members)
    members[graph], members[array] = members[array], members[graph]
    _fix_checksums(members)
    _write(tmp_path / "swapped.rsm", members)
    with pytest.raises(LoadError):
        load(tmp_path / "swapped.rsm")


def test_not_a_zip_at_all(tmp_path):
    for data in (b"", b"PK\x03\x04", pickle.dumps({"a": 1}), b"\x93NUMPY"):
        (tmp_path / "x.rsm").write_bytes(data)
        with pytest.raises(LoadError):
            load(tmp_path / "x.rsm")
    with pytest.raises(LoadError, match="cannot load"):
        load(tmp_path / "does-not-exist.rsm")
