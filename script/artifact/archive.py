"""The saved-model file (``script.save``): its layout, and reading it back with every check.

The file is a zip archive. ``manifest.json`` describes everything else and lists every other
member with its SHA-256 and size; ``manifest.sha256`` holds the manifest's own SHA-256 (hex).
``read_archive`` opens a file and refuses, with a ``LoadError`` naming the reason, anything that
is not exactly such an archive: unreadable or truncated zips, damaged members, duplicate, missing,
unexpected or unused members, checksum and size mismatches, an unknown format or version, and
manifests with missing or ill-typed fields. ``read_npy`` reads the ``.npy`` array members as raw
numeric data: it never unpickles.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from ir.types import DTYPE_NAMES
from script._version import __version__
from script.errors import LoadError

FORMAT = "rnnscript.module"
FORMAT_VERSION = 1
"""The version this code writes and the only one it reads."""
MANIFEST = "manifest.json"
MANIFEST_DIGEST = "manifest.sha256"
"""The SHA-256 of ``manifest.json`` (hex), so that damage to the manifest is detected too."""
MAX_MANIFEST_BYTES = 64 << 20
MAX_DEFLATE_RATIO = 1100
"""Deflate cannot compress by more than about 1032:1; a member claiming more is corrupt (or a
decompression bomb)."""
ARRAY_ROLES = ("constants", "parameters", "buffers")

NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*")
FIELD_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def package_version() -> str:
    return __version__


def manifest_digest(manifest: bytes) -> bytes:
    return (hashlib.sha256(manifest).hexdigest() + "\n").encode("ascii")


def guarded(path: Any, fn: Any) -> Any:
    """Run ``fn``; any failure on a corrupted file becomes a LoadError (chained to its cause)."""
    where = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    try:
        return fn()
    except LoadError as e:
        if e.path is None and where is not None:
            raise LoadError(e.reason, where) from e.__cause__
        raise
    except Exception as e:  # noqa: BLE001 - the promise is LoadError for any bad file
        raise LoadError(f"the file is corrupted ({type(e).__name__}: {e})", where) from e


# -- reading the archive -------------------------------------------------------------------------
@dataclass
class Archive:
    """A saved model's validated contents: the manifest and every member's bytes."""

    manifest: dict[str, Any]
    members: dict[str, bytes]

    def text(self, member: str) -> str:
        try:
            return self.members[member].decode("utf-8")
        except UnicodeDecodeError as e:
            raise LoadError(f"member {member} is not UTF-8 text ({e.reason})") from None

    def array(self, role: str, name: str) -> np.ndarray:
        entry = self.manifest[role][name]
        array = read_npy(self.members[entry["member"]], entry["member"])
        if array.dtype.name != entry["dtype"] or list(array.shape) != entry["shape"]:
            raise LoadError(f"array {entry['member']} is {array.dtype.name}{list(array.shape)} "
                            f"but the manifest says {entry['dtype']}{entry['shape']}")
        return array


def read_archive(path: Any) -> Archive:
    """Open a saved model and check its structure, manifest and checksums (LoadError if not)."""
    return guarded(path, lambda: _read_archive(path))


def _read_archive(path: Any) -> Archive:
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, EOFError) as e:
        raise LoadError(f"not a readable model file ({type(e).__name__}: {e})") from None
    with zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        if len(set(names)) != len(names):
            raise LoadError("the archive holds two members with the same name")
        if MANIFEST not in names:
            raise LoadError(f"no {MANIFEST} in the archive (not a saved model?)")
        if MANIFEST_DIGEST not in names:
            raise LoadError(f"no {MANIFEST_DIGEST} in the archive")
        by_name = {i.filename: i for i in infos}
        text = _read_member(zf, by_name[MANIFEST], MAX_MANIFEST_BYTES)
        if _read_member(zf, by_name[MANIFEST_DIGEST], 1024) != manifest_digest(text):
            raise LoadError(f"checksum mismatch for {MANIFEST}")
        manifest = _parse_manifest(text)
        listed = manifest["members"]
        extra = sorted(set(names) - set(listed) - {MANIFEST, MANIFEST_DIGEST})
        missing = sorted(set(listed) - set(names))
        if extra:
            raise LoadError(f"unexpected member(s) not listed in the manifest: {extra}")
        if missing:
            raise LoadError(f"member(s) listed in the manifest are missing: {missing}")
        members = {}
        for name, entry in listed.items():
            data = _read_member(zf, by_name[name], entry["size"])
            if len(data) != entry["size"]:
                raise LoadError(f"member {name} has {len(data)} bytes, the manifest says "
                                f"{entry['size']}")
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise LoadError(f"checksum mismatch for member {name}")
            members[name] = data
    return Archive(manifest, members)


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    if info.file_size > limit:
        raise LoadError(f"member {info.filename} is larger ({info.file_size} bytes) than "
                        f"expected ({limit})")
    stored = info.compress_type == zipfile.ZIP_STORED
    if stored and info.compress_size != info.file_size or \
            info.file_size > MAX_DEFLATE_RATIO * info.compress_size + 4096:
        raise LoadError(f"member {info.filename} has inconsistent sizes in the archive")
    try:
        return zf.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError,
            NotImplementedError) as e:  # what zipfile raises on damaged data or headers
        raise LoadError(f"member {info.filename} is damaged ({type(e).__name__}: {e})"
                        ) from None


def read_npy(data: bytes, member: str) -> np.ndarray:
    """The array in ``.npy`` bytes: a numeric dtype, read as raw data (never unpickled)."""
    fp = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(fp)
        header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                  else np.lib.format.read_array_header_2_0)(fp)
    except ValueError as e:
        raise LoadError(f"array {member} has a bad .npy header ({e})") from None
    shape, fortran, dtype = header
    if dtype.hasobject or dtype.name not in DTYPE_NAMES or dtype.fields is not None:
        raise LoadError(f"array {member} has dtype {dtype}; only numeric arrays are accepted "
                        "(pickled objects never are)")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    body = data[fp.tell():]
    if len(body) != count * dtype.itemsize:
        raise LoadError(f"array {member} should hold {count * dtype.itemsize} bytes of data, "
                        f"found {len(body)}")
    flat = np.frombuffer(body, dtype=dtype, count=count)
    array = flat.reshape(shape[::-1]).T if fortran else flat.reshape(shape)
    return np.array(array, dtype=dtype.newbyteorder("="), order="C", copy=True)  # own, writable


# -- the manifest --------------------------------------------------------------------------------
def _parse_manifest(data: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise LoadError(f"{MANIFEST} is not valid JSON ({e})") from None
    _expect(manifest, dict, MANIFEST)
    if manifest.get("format") != FORMAT:
        raise LoadError(f"not a {FORMAT} file (format {manifest.get('format')!r})")
    version = manifest.get("format_version")
    if type(version) is not int or version != FORMAT_VERSION:
        raise LoadError(f"format version {version!r} is not supported (this rnnscript "
                        f"{package_version()} reads version {FORMAT_VERSION})")
    for key, kind in (("package_version", str), ("module", str), ("frozen", bool),
                      ("training", bool), ("methods", dict), ("classes", dict),
                      ("members", dict), *((role, dict) for role in ARRAY_ROLES)):
        _expect(manifest.get(key), kind, f"manifest field '{key}'")
    for name, entry in manifest["members"].items():
        _expect(entry, dict, f"member entry {name!r}")
        if type(entry.get("size")) is not int or entry["size"] < 0 or \
                not isinstance(entry.get("sha256"), str):
            raise LoadError(f"member entry {name!r} needs an integer size and a sha256")
    for role in ARRAY_ROLES:
        for name, entry in manifest[role].items():
            _check_array_entry(manifest, role, name, entry)
    for name, entry in manifest["methods"].items():
        _check_method_entry(manifest, name, entry)
    for name, entry in manifest["classes"].items():
        _check_class_entry(name, entry)
    used = {entry["graph"] for entry in manifest["methods"].values()}
    used |= {entry["member"] for role in ARRAY_ROLES for entry in manifest[role].values()}
    unused = sorted(set(manifest["members"]) - used)
    if unused:
        raise LoadError(f"unexpected member(s) that no method or array uses: {unused}")
    return manifest


def _expect(value: Any, kind: type, what: str) -> None:
    if type(value) is not kind:
        raise LoadError(f"{what} should be a {kind.__name__}, found {type(value).__name__}")


def _check_name(name: Any, what: str) -> None:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise LoadError(f"bad {what} name {name!r}")


def _check_member(manifest: dict[str, Any], member: Any, what: str) -> None:
    if not isinstance(member, str) or member not in manifest["members"]:
        raise LoadError(f"{what} refers to {member!r}, which is not a listed member")


def _check_array_entry(manifest: dict[str, Any], role: str, name: str, entry: Any) -> None:
    _check_name(name, role[:-1])
    _expect(entry, dict, f"{role[:-1]} {name!r}")
    _check_member(manifest, entry.get("member"), f"{role[:-1]} {name!r}")
    shape = entry.get("shape")
    if entry.get("dtype") not in DTYPE_NAMES or not isinstance(shape, list) or \
            not all(type(d) is int and d >= 0 for d in shape):
        raise LoadError(f"{role[:-1]} {name!r} needs a numeric dtype and a shape")


def _check_method_entry(manifest: dict[str, Any], name: str, entry: Any) -> None:
    _check_name(name, "method")
    if "." in name:
        raise LoadError(f"bad method name {name!r}")
    _expect(entry, dict, f"method {name!r}")
    _check_member(manifest, entry.get("graph"), f"method {name!r}")
    for key, kind in (("arg_names", list), ("arg_types", list), ("defaults", dict),
                      ("return_type", str), ("inputs", list)):
        _expect(entry.get(key), kind, f"field '{key}' of method {name!r}")
    if len(entry["arg_names"]) != len(entry["arg_types"]):
        raise LoadError(f"method {name!r}: {len(entry['arg_names'])} argument names but "
                        f"{len(entry['arg_types'])} types")
    for arg in entry["arg_names"]:
        if not isinstance(arg, str) or not FIELD_PATTERN.fullmatch(arg):
            raise LoadError(f"method {name!r}: bad argument name {arg!r}")
    for arg in entry["defaults"]:
        if arg not in entry["arg_names"]:
            raise LoadError(f"method {name!r}: a default for unknown argument {arg!r}")
    held = set(manifest["parameters"]) | set(manifest["buffers"])
    for ref in entry["inputs"]:
        if not isinstance(ref, str) or ref not in held:
            raise LoadError(f"method {name!r} reads {ref!r}, which is not a saved parameter "
                            "or buffer")


def _check_class_entry(name: str, entry: Any) -> None:
    _check_name(name, "class")
    _expect(entry, dict, f"class {name!r}")
    _expect(entry.get("named_tuple"), bool, f"field 'named_tuple' of class {name!r}")
    _expect(entry.get("fields"), list, f"field 'fields' of class {name!r}")
    for item in entry["fields"]:
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, str)
                                                                   for x in item)):
            raise LoadError(f"class {name!r}: each field is [name, type]")
        if not FIELD_PATTERN.fullmatch(item[0]) or item[0].startswith("_"):
            raise LoadError(f"class {name!r}: bad field name {item[0]!r}")
